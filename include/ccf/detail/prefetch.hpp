// prefetch_line(p): start loading the cache line holding p, so that a later access hits.
//
// Why not __builtin_prefetch alone: GCC treats it as free of side effects, so a function whose
// body only prefetches (a table's prefetch(bucket), prefetch_both) is deduced const at -O2 and
// every call to it is deleted, prefetch and all. At -O3 such functions happen to be inlined
// first and the prefetches survive; at -O2 (the usual flags of release packages and of CMake's
// RelWithDebInfo) the lock-free and striped filters lost every prefetch this way, and their
// batched operations ran no faster than one at a time. On x86 (with SSE, which has the
// instruction) an asm volatile statement issues it instead, which no optimizer deletes
// (tests/prefetch_kept_test.sh checks the -O2 machine code); elsewhere the builtin remains, with
// the -O2 caveat above. Callers pass addresses inside their buffers.
//
// prefetch_line_for_write(p): the same for a line the caller is about to write (a lock it will
// take): PREFETCHW fetches the line exclusive, invalidating other cores' copies at once, so the
// later atomic RMW does not wait for a second, ownership transfer. Only for lines that will be
// written: a reader's write-intent prefetch would take the line from every other reader. Not in
// x86-64-v3, so it is issued only where CPUID reports it (PRFCHW, AMD's 3DNowPrefetch); elsewhere
// a read prefetch stands in.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ccf::detail {

[[gnu::always_inline]] inline void prefetch_line(const void* p) noexcept {
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
// Read once, at static initialization (a filter used before then reads false: a read prefetch).
inline const bool kCpuHasPrefetchW = [] {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_PRFCHW) != 0;
}();
#endif

[[gnu::always_inline]] inline void prefetch_line_for_write(const void* p) noexcept {
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
  if (kCpuHasPrefetchW) {
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
  } else {
    asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
  }
#else
  __builtin_prefetch(p, 1);
#endif
}

}  // namespace ccf::detail
