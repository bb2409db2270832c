#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace chtbench {

double tsc_ghz() {
  static const double ghz = [] {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const std::uint64_t c0 = cycles_begin();
    while (Clock::now() - t0 < std::chrono::milliseconds(20)) {
    }
    const std::uint64_t c1 = cycles_end();
    const auto t1 = Clock::now();
    return static_cast<double>(c1 - c0) /
           static_cast<double>(
               std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  }();
  return ghz;
}

std::uint64_t timer_overhead() {
  static const std::uint64_t overhead = [] {
    std::array<std::uint64_t, 10001> samples;
    for (auto& s : samples) {
      const std::uint64_t t0 = cycles_begin();
      s = cycles_end() - t0;
    }
    std::ranges::nth_element(samples, samples.begin() + samples.size() / 2);
    return samples[samples.size() / 2];
  }();
  return overhead;
}

std::array<double, 2> LatencyHistogram::bounds(std::size_t index) noexcept {
  if (index < kSub) return {static_cast<double>(index), static_cast<double>(index) + 1};
  const std::size_t exponent = index / kSub + kSubBits - 1;  // the msb of the bucket's values
  const double width = std::ldexp(1.0, static_cast<int>(exponent - kSubBits));
  const double low =
      std::ldexp(1.0, static_cast<int>(exponent)) + static_cast<double>(index % kSub) * width;
  return {low, low + width};
}

double LatencyHistogram::quantile(double q) const noexcept {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank && buckets_[i] != 0) {
      const auto [low, high] = bounds(i);
      return (low + high) / 2;
    }
  }
  return bounds(buckets_.size() - 1)[1];
}

}  // namespace chtbench
