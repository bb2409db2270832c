// The status of a hardware transaction (Intel RTM): what XBEGIN returns, decoded (Intel SDM
// vol. 1 §16.3.5), and which aborts a retry can cure. Shared by the backends (rtm_backend.hpp,
// simulated_backend.hpp) and the elision policies (htm.hpp).
#pragma once

#include <cstdint>

namespace ccf::sync {

// The explicit abort code of the subscriptions (S1)/(S2): the lock was held.
inline constexpr std::uint8_t kAbortWasLocked = 0xFF;
// The explicit abort code of a failed COP verification: the read-only prefix is stale (cop.hpp).
inline constexpr std::uint8_t kAbortBadRop = 0xFE;

class TxStatus {
 public:
  static constexpr std::uint32_t kStartedRaw = ~0u;    // _XBEGIN_STARTED
  static constexpr std::uint32_t kExplicit = 1u << 0;  // _XABORT_EXPLICIT: XABORT, code in 31:24
  static constexpr std::uint32_t kRetry = 1u << 1;     // _XABORT_RETRY: may succeed on retry
  static constexpr std::uint32_t kConflict = 1u << 2;  // _XABORT_CONFLICT: another core's access
  static constexpr std::uint32_t kCapacity = 1u << 3;  // _XABORT_CAPACITY: read/write set overflow
  static constexpr std::uint32_t kDebug = 1u << 4;     // _XABORT_DEBUG: debug breakpoint
  static constexpr std::uint32_t kNested = 1u << 5;    // _XABORT_NESTED: abort in a nested tx

  constexpr explicit TxStatus(std::uint32_t raw) noexcept : raw_(raw) {}

  static constexpr TxStatus begun() noexcept { return TxStatus(kStartedRaw); }
  static constexpr TxStatus aborted(std::uint32_t bits) noexcept { return TxStatus(bits); }
  static constexpr TxStatus aborted_explicit(std::uint8_t code) noexcept {
    return TxStatus(kExplicit | std::uint32_t{code} << 24);
  }

  constexpr bool started() const noexcept { return raw_ == kStartedRaw; }
  constexpr bool explicit_abort() const noexcept { return !started() && (raw_ & kExplicit); }
  constexpr bool retry() const noexcept { return !started() && (raw_ & kRetry); }
  constexpr bool conflict() const noexcept { return !started() && (raw_ & kConflict); }
  constexpr bool capacity() const noexcept { return !started() && (raw_ & kCapacity); }
  constexpr bool debug() const noexcept { return !started() && (raw_ & kDebug); }
  constexpr bool nested() const noexcept { return !started() && (raw_ & kNested); }
  constexpr std::uint8_t code() const noexcept {
    return explicit_abort() ? static_cast<std::uint8_t>(raw_ >> 24) : 0;
  }
  constexpr bool was_locked() const noexcept {
    return explicit_abort() && code() == kAbortWasLocked;
  }
  constexpr bool bad_rop() const noexcept { return explicit_abort() && code() == kAbortBadRop; }
  constexpr std::uint32_t raw() const noexcept { return raw_; }

  friend constexpr bool operator==(TxStatus, TxStatus) = default;

 private:
  std::uint32_t raw_;
};

// One reason per abort, for statistics; the first that applies, in this order. kExplicit: an
// explicit abort with a code other than the two named ones.
enum class AbortReason : unsigned { kWasLocked, kBadRop, kExplicit, kCapacity, kConflict, kOther };

constexpr AbortReason abort_reason(TxStatus s) noexcept {
  if (s.was_locked()) return AbortReason::kWasLocked;
  if (s.bad_rop()) return AbortReason::kBadRop;
  if (s.explicit_abort()) return AbortReason::kExplicit;
  if (s.capacity()) return AbortReason::kCapacity;
  if (s.conflict()) return AbortReason::kConflict;
  return AbortReason::kOther;
}

// The retry rule (htm.hpp, "Retry rule").
constexpr bool worth_retrying(TxStatus s) noexcept {
  return s.was_locked() || s.retry() || s.conflict();
}

}  // namespace ccf::sync
