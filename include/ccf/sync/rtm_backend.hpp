// The hardware backend of lock elision (htm.hpp): Intel RTM's XBEGIN / XEND / XABORT, and
// rtm_support(), the run-time probe (CPUID, then a few empty transactions) that decides whether
// it is used at all. See htm.hpp, "Without RTM" and "Under ThreadSanitizer".
//
// A Backend has: bool available() const; TxStatus begin(); void end();
// template <std::uint8_t Code> TxStatus abort(); bool in_transaction() const.
#pragma once

#include <cstdint>
#include <string_view>

#include "ccf/sync/tx_status.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CCF_SYNC_X86 1
#else
#define CCF_SYNC_X86 0
#endif

// ThreadSanitizer does not model hardware transactions (htm.hpp, "Under ThreadSanitizer").
#if defined(__SANITIZE_THREAD__)
#define CCF_SYNC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CCF_SYNC_TSAN 1
#endif
#endif
#ifndef CCF_SYNC_TSAN
#define CCF_SYNC_TSAN 0
#endif

namespace ccf::sync {

// What this process does with RTM, and why.
enum class RtmSupport {
  kAbsent,        // the CPU does not report RTM (or reports RTM_ALWAYS_ABORT)
  kAlwaysAborts,  // CPUID reports RTM, but no probe transaction commits (firmware)
  kOffUnderTsan,  // RTM works, but this is a ThreadSanitizer build: not used
  kAvailable,     // RTM works and the elision policies speculate
};

inline RtmSupport rtm_support() noexcept;

// Whether the elision policies run hardware transactions in this process.
inline bool rtm_available() noexcept {
  return rtm_support() == RtmSupport::kAvailable;
}

// One line for tools and benchmark reports: whether their figures are speculative.
constexpr std::string_view describe(RtmSupport support) noexcept {
  switch (support) {
    case RtmSupport::kAvailable:
      return "Intel RTM present: speculative";
    case RtmSupport::kOffUnderTsan:
      return "Intel RTM present but not used under ThreadSanitizer: lock fallback measured";
    case RtmSupport::kAlwaysAborts:
      return "Intel RTM reported but every transaction aborts: lock fallback measured";
    case RtmSupport::kAbsent:
      break;
  }
  return "RTM absent on this CPU: lock fallback measured";
}

// The hardware. The instructions are emitted by inline assembly, so this header compiles without
// -mrtm; they execute only when rtm_available() (the policies check available() first), or in
// the probe of rtm_support().
class RtmBackend {
 public:
  static bool available() noexcept { return rtm_available(); }

  TxStatus begin() noexcept {
#if CCF_SYNC_X86
    std::uint32_t status = TxStatus::kStartedRaw;
    // XBEGIN with the fallback address right after it: started => EAX unchanged; aborted =>
    // registers restored, EAX = status, execution resumes at 1:.
    asm volatile("xbegin 1f\n1:" : "+a"(status) : : "memory");
    return TxStatus(status);
#else
    return TxStatus::aborted(0);
#endif
  }

  void end() noexcept {
#if CCF_SYNC_X86
    asm volatile("xend" : : : "memory");
#endif
  }

  // Inside a transaction: never returns (the transaction resumes at begin() with the explicit
  // status). Outside one XABORT is a no-op and the status is returned all the same.
  template <std::uint8_t Code>
  TxStatus abort() noexcept {
#if CCF_SYNC_X86
    asm volatile("xabort %0" : : "i"(Code) : "memory");
#endif
    return TxStatus::aborted_explicit(Code);
  }

  bool in_transaction() const noexcept {
#if CCF_SYNC_X86
    if (!available()) return false;
    bool inside;
    asm volatile("xtest" : "=@ccnz"(inside));  // ZF = 0 inside a transaction
    return inside;
#else
    return false;
#endif
  }
};

namespace detail {
// CPUID leaf 7, sub-leaf 0: EBX bit 11 = RTM, EDX bit 11 = RTM_ALWAYS_ABORT.
inline bool cpu_reports_rtm() noexcept {
#if CCF_SYNC_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ebx >> 11 & 1u) != 0 && (edx >> 11 & 1u) == 0;
#else
  return false;
#endif
}

// Some firmware (TSX_FORCE_ABORT) aborts every transaction while CPUID still reports RTM.
inline bool rtm_commits() noexcept {
  constexpr int kProbes = 16;
  RtmBackend rtm;
  for (int i = 0; i < kProbes; ++i) {
    if (rtm.begin().started()) {
      rtm.end();
      return true;
    }
  }
  return false;
}
}  // namespace detail

// Computed once per process.
inline RtmSupport rtm_support() noexcept {
  static const RtmSupport support = [] {
    if (!detail::cpu_reports_rtm()) return RtmSupport::kAbsent;
    if (!detail::rtm_commits()) return RtmSupport::kAlwaysAborts;
    return CCF_SYNC_TSAN ? RtmSupport::kOffUnderTsan : RtmSupport::kAvailable;
  }();
  return support;
}

}  // namespace ccf::sync

#undef CCF_SYNC_X86  // used above only: no project macro leaves a public header
#undef CCF_SYNC_TSAN
