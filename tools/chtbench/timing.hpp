// Cycle-counter latency sampling (the thesis used sspfd for the same purpose).
//
// A sampled operation is bracketed by cycles_begin() / cycles_end(); the difference goes into a
// log-linear histogram (32 sub-buckets per power of two: percentiles within ~3%). Cycles are
// converted to nanoseconds with a TSC frequency measured against steady_clock, once per
// process, after subtracting the cost of the bracket itself. Only one operation in `kSampleEvery`
// is timed, so the fences and reads cost little.
#pragma once

#include <x86intrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace chtbench {

// Opens a timed interval: earlier instructions have completed, the timed ones not started.
inline std::uint64_t cycles_begin() noexcept {
  _mm_lfence();
  const std::uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}
// Closes it: rdtscp waits for the timed instructions; later ones may overlap the read, which
// does not change the reading (and keeps the fence cost, i.e. the sampling distortion, low).
inline std::uint64_t cycles_end() noexcept {
  unsigned aux;
  return __rdtscp(&aux);
}

// TSC ticks per nanosecond, measured once (about 20 ms) on first call.
double tsc_ghz();

// Ticks an empty cycles_begin()-to-cycles_end() bracket takes (median of many), measured once;
// subtracted from every sample. (On the KVM development machines the TSC advances in steps
// of ~26 ticks: latencies are good to ~10 ns there.)
std::uint64_t timer_overhead();

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 5;

  void record(std::uint64_t value) noexcept {
    ++buckets_[index(value)];
    ++count_;
    max_ = std::max(max_, value);
  }
  void merge(const LatencyHistogram& other) noexcept {
    for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
    count_ += other.count_;
    max_ = std::max(max_, other.max_);
  }
  std::uint64_t count() const noexcept { return count_; }
  // The largest value recorded (exact, not a bucket's); 0 when empty.
  std::uint64_t max() const noexcept { return max_; }
  // The value at quantile q in [0, 1] (bucket midpoint); 0 when empty.
  double quantile(double q) const noexcept;

 private:
  static constexpr unsigned kSub = 1u << kSubBits;
  static std::size_t index(std::uint64_t v) noexcept {
    if (v < kSub) return v;
    const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(v));
    return (msb - kSubBits + 1) * kSub + ((v >> (msb - kSubBits)) & (kSub - 1));
  }
  static std::array<double, 2> bounds(std::size_t index) noexcept;

  std::array<std::uint64_t, (64 - kSubBits + 1) * kSub> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace chtbench
