#include "ccf/hash.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

#include "ccf/detail/addressing.hpp"

namespace {

TEST(Hash, IntegerMixerIsInjectiveOnASample) {
  std::unordered_set<std::uint64_t> seen;
  for (std::uint64_t key = 0; key < 1'000'000; ++key) seen.insert(ccf::hash_key(key));
  EXPECT_EQ(seen.size(), 1'000'000u);
}

TEST(Hash, IntegerMixerAvalanches) {
  // Flipping one input bit flips each output bit with probability ~1/2: 32 bits on average.
  double total = 0;
  int samples = 0;
  for (std::uint64_t key = 1; key < 20'000; key += 7) {
    for (int bit = 0; bit < 64; ++bit) {
      total += std::popcount(ccf::hash_key(key) ^ ccf::hash_key(key ^ (std::uint64_t{1} << bit)));
      ++samples;
    }
  }
  EXPECT_NEAR(total / samples, 32.0, 0.5);
}

TEST(Hash, SeedsAndKeyTypesDiffer) {
  EXPECT_NE(ccf::hash_key(std::uint64_t{42}, 1), ccf::hash_key(std::uint64_t{42}, 2));
  EXPECT_NE(ccf::hash_key(std::string_view("abc"), 1), ccf::hash_key(std::string_view("abc"), 2));
  EXPECT_EQ(ccf::hash_key(std::string_view("abc")), ccf::hash_key(std::string("abc")));
  EXPECT_NE(ccf::hash_key(std::string_view("abc")), ccf::hash_key(std::string_view("abd")));
}

TEST(Hash, ReduceRangeIsInRangeAndUniform) {
  constexpr std::uint64_t kBins = 1000;
  constexpr int kSamples = 1'000'000;
  std::vector<int> counts(kBins);
  for (int i = 0; i < kSamples; ++i) {
    const std::uint64_t bin = ccf::reduce_range(ccf::hash_key(std::uint64_t(i)), kBins);
    ASSERT_LT(bin, kBins);
    ++counts[bin];
  }
  // Chi-square with 999 degrees of freedom: mean 999, sd ~44.7; 6 sd is a generous bound.
  const double expected = double(kSamples) / kBins;
  double chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 999 + 6 * 44.7);
  EXPECT_GT(chi2, 999 - 6 * 44.7);
}

TEST(Addressing, AlternateIsAnInvolutionForAnyBucketCount) {
  for (std::uint64_t buckets :
       {1ull, 2ull, 3ull, 7ull, 1000ull, 1024ull, 999'983ull, (1ull << 33) + 17}) {
    const ccf::detail::Addressing<12> addressing(buckets);
    for (std::uint64_t key = 0; key < 20'000; ++key) {
      const std::uint64_t hash = ccf::hash_key(key);
      const std::uint64_t i1 = addressing.index(hash);
      const std::uint32_t fp = addressing.fingerprint(hash);
      ASSERT_LT(i1, buckets);
      ASSERT_NE(fp, 0u);
      ASSERT_LE(fp, 0xfffu);
      const std::uint64_t i2 = addressing.alternate(i1, fp);
      ASSERT_LT(i2, buckets);
      ASSERT_EQ(addressing.alternate(i2, fp), i1) << "buckets=" << buckets << " key=" << key;
    }
  }
}

TEST(Addressing, AlternateBucketsAreSpreadOut) {
  // The alternate of bucket 0 over all 4095 fingerprints should cover many distinct buckets.
  const ccf::detail::Addressing<12> addressing(1'000'003);
  std::unordered_set<std::uint64_t> targets;
  for (std::uint32_t fp = 1; fp < 4096; ++fp) targets.insert(addressing.alternate(0, fp));
  EXPECT_GT(targets.size(), 4000u);
}

TEST(Addressing, FingerprintNeverZeroAndCoversAllValues) {
  std::vector<int> seen(256);
  for (std::uint64_t hash = 0; hash < 4096; ++hash) {
    const std::uint32_t fp = ccf::detail::Addressing<8>::fingerprint(hash);
    ASSERT_GE(fp, 1u);
    ASSERT_LE(fp, 255u);
    ++seen[fp];
  }
  EXPECT_EQ(seen[0], 0);
  for (int fp = 2; fp < 256; ++fp) EXPECT_EQ(seen[fp], 16) << fp;
  EXPECT_EQ(seen[1], 32);  // 0 is remapped to 1
}

}  // namespace
