// Key streams: determinism, ranges, and the Zipf skew against its exact probabilities.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "keys.hpp"

namespace chtbench {
namespace {

TEST(Keys, SameSeedSameStream) {
  Rng a(stream_seed(7, 2, 1)), b(stream_seed(7, 2, 1)), c(stream_seed(7, 2, 2));
  const KeyGenerator gen(KeyDist::parse("zipf:0.99"), 1000);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t ka = gen(a);
    EXPECT_EQ(ka, gen(b));
    differ += ka != gen(c);
  }
  EXPECT_GT(differ, 500);  // another thread's stream is a different stream
}

TEST(Keys, UniformCoversRangeEvenly) {
  constexpr std::uint64_t kN = 64;
  const KeyGenerator gen(KeyDist{}, kN);
  Rng rng(1);
  std::vector<int> hits(kN + 1, 0);
  constexpr int kDraws = 640000;
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t k = gen(rng);
    ASSERT_GE(k, 1u);
    ASSERT_LE(k, kN);
    ++hits[k];
  }
  // Each count is Binomial(640000, 1/64): mean 10000, sd ~99; 6 sd bounds.
  for (std::uint64_t k = 1; k <= kN; ++k) EXPECT_NEAR(hits[k], 10000, 600) << "key " << k;
}

// Rank k has probability k^-theta / H(n, theta); check the head and the tail mass.
void check_zipf(double theta, std::uint64_t n) {
  const KeyGenerator gen(KeyDist{KeyDist::Kind::kZipf, theta}, n);
  double harmonic = 0;
  for (std::uint64_t k = 1; k <= n; ++k) harmonic += std::pow(static_cast<double>(k), -theta);
  Rng rng(42);
  constexpr int kDraws = 1000000;
  std::vector<int> hits(n + 1, 0);
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t k = gen(rng);
    ASSERT_GE(k, 1u);
    ASSERT_LE(k, n);
    ++hits[k];
  }
  for (std::uint64_t k : {1u, 2u, 10u, 100u}) {
    const double p = std::pow(static_cast<double>(k), -theta) / harmonic;
    const double sd = std::sqrt(kDraws * p * (1 - p));
    EXPECT_NEAR(hits[k], kDraws * p, 6 * sd + 1) << "theta " << theta << " rank " << k;
  }
  // The top 1% of ranks gets the Zipf share of the draws (skew, not uniformity).
  double top_p = 0;
  int top_hits = 0;
  for (std::uint64_t k = 1; k <= n / 100; ++k) {
    top_p += std::pow(static_cast<double>(k), -theta) / harmonic;
    top_hits += hits[k];
  }
  EXPECT_NEAR(top_hits, kDraws * top_p, 6 * std::sqrt(kDraws * top_p) + 1);
  EXPECT_GT(top_hits, 5 * kDraws / 100);  // far above the 1% a uniform stream gives
}

TEST(Keys, ZipfMatchesTheory) {
  check_zipf(0.99, 10000);
  check_zipf(0.5, 10000);
  check_zipf(1.5, 10000);
}

TEST(Keys, ParseRejectsBadDistributions) {
  EXPECT_EQ(KeyDist::parse("uniform").kind, KeyDist::Kind::kUniform);
  EXPECT_DOUBLE_EQ(KeyDist::parse("zipf:0.99").theta, 0.99);
  EXPECT_EQ(KeyDist::parse("zipf:1.2").to_string(), "zipf:1.2");
  for (const char* bad :
       {"", "zipf", "zipf:", "zipf:abc", "zipf:0", "zipf:-1", "zipf:0.5x", "normal"}) {
    EXPECT_THROW(KeyDist::parse(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace chtbench
