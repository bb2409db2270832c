// equal_words: which of four 64-bit atomic words -- a 32-byte-aligned block that writers change
// concurrently -- equal a value, read with two 16-byte vector loads instead of four loads.
//
// Why: a lookup that compares several words of one cache line pays for every load in the
// out-of-order window, which is what overlaps one lookup's cache miss with the next ones'.
// ClhtLb's one-call lookups (2 threads, read-only) ran 1.34x as fast with its three keys
// compared this way, and its key check inlined, as with a loop of three scalar loads
// (docs/benchmarks.md).
//
// Why it is sound on x86: Intel (SDM vol. 3A, "Guaranteed Atomic Operations") and AMD (APM
// vol. 2, 7.3.2 "Access Atomicity") guarantee that on a processor with AVX an aligned 16-byte
// load by MOVDQA / VMOVDQA (VEX.128) of cacheable memory is a single atomic access, so each word
// is read whole -- as an atomic load would read it -- and x86 keeps loads in order with other
// loads (TSO), which is the acquire ordering the callers need. C++ does not know this (to its
// memory model the vector load is a racy read), so the vector path is used only where AVX is
// compiled in and no ThreadSanitizer build would flag it; elsewhere callers read the words with
// acquire loads, with the same result.
#pragma once

#include <cstdint>

// CCF_DETAIL_VECTOR_WORD_LOADS: 1 where equal_words exists (AVX compiled in, no ThreadSanitizer);
// callers keep their scalar loads otherwise.
#if defined(__SANITIZE_THREAD__)
#define CCF_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CCF_DETAIL_TSAN 1
#endif
#endif
#if defined(__AVX__) && !defined(CCF_DETAIL_TSAN)
#define CCF_DETAIL_VECTOR_WORD_LOADS 1
#else
#define CCF_DETAIL_VECTOR_WORD_LOADS 0
#endif
#undef CCF_DETAIL_TSAN

#if CCF_DETAIL_VECTOR_WORD_LOADS
#include <immintrin.h>

namespace ccf::detail {

// Bit i of the result is set iff the i-th 64-bit word of the 32-byte-aligned `block` equals
// `value` (i < 4).
inline unsigned equal_words(const void* block, std::uint64_t value) noexcept {
  // VMOVDQA itself, as the guarantee names it: from an intrinsic the compiler may instead fold
  // the load into the compare's memory operand.
  const auto load = [](const __m128i* half) {
    __m128i words;
    asm("vmovdqa %1, %0" : "=x"(words) : "m"(*half));
    return words;
  };
  const __m128i wanted = _mm_set1_epi64x(static_cast<long long>(value));
  const auto* halves = static_cast<const __m128i*>(block);
  const __m128i low = _mm_cmpeq_epi64(load(halves), wanted);
  const __m128i high = _mm_cmpeq_epi64(load(halves + 1), wanted);
  return static_cast<unsigned>(_mm_movemask_pd(_mm_castsi128_pd(low)) |
                               _mm_movemask_pd(_mm_castsi128_pd(high)) << 2);
}

}  // namespace ccf::detail
#endif
