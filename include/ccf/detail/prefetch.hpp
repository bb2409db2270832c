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
#pragma once

namespace ccf::detail {

[[gnu::always_inline]] inline void prefetch_line(const void* p) noexcept {
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace ccf::detail
