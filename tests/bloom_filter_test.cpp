// Tests of the Bloom-family baselines: no false negatives, false-positive rates measured
// against theory with explicit statistical bounds, sizing rules, argument checking.
//
// Inserted keys are the member streams of test_keys.hpp (integers) or "user:<2i>" (strings);
// never-inserted keys are the non-member streams, or "user:<2i+1>": disjoint from the members by
// construction, so every hit on one is a genuine false positive.
#include "ccf/bloom_filter.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "test_keys.hpp"

namespace {

using ccf::BlockedBloomFilter;
using ccf::BloomFilter;
using ccf::CountingBloomFilter;
using ccf::Status;

constexpr std::uint64_t kItems = 1'000'000;
constexpr std::uint64_t kQueries = 2'000'000;

const std::vector<std::uint64_t>& members() {
  static const auto keys = ccf::testing::member_keys(kItems);
  return keys;
}
std::span<const std::uint64_t> members(std::size_t count) {
  return std::span(members()).first(count);
}
const std::vector<std::uint64_t>& non_members() {
  static const auto keys = ccf::testing::non_member_keys(kQueries);
  return keys;
}

std::vector<std::string> string_keys(std::size_t count, std::uint64_t parity) {
  std::vector<std::string> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = "user:" + std::to_string(2 * i + parity);
  return keys;
}

double ln2_rule(double bits_per_item) {
  return std::clamp(std::round(std::log(2.0) * bits_per_item), 1.0, 32.0);
}

// Inserts every key; returns how many inserts did not report kOk.
template <class Filter, class Keys>
std::uint64_t insert_all(Filter& filter, const Keys& keys) {
  std::uint64_t not_ok = 0;
  for (const auto& key : keys) not_ok += filter.insert(key) != Status::kOk;
  return not_ok;
}

template <class Filter, class Keys>
std::uint64_t count_missing(const Filter& filter, const Keys& keys) {
  std::uint64_t missing = 0;
  for (const auto& key : keys) missing += !filter.contains(key);
  return missing;
}

template <class Filter, class Keys>
double hit_rate(const Filter& filter, const Keys& keys) {
  std::uint64_t hits = 0;
  for (const auto& key : keys) hits += filter.contains(key);
  return static_cast<double>(hits) / static_cast<double>(std::size(keys));
}

// The acceptance band for a rate measured over `trials` Bernoulli(theory) queries: the theory
// +- `relative` (for what the formulas leave out: dependence among a key's probes, finite size;
// correct filters measure within 5%) +- 4 binomial standard deviations (for sampling). Hash
// positions that are correlated push the rate well outside it: double hashing inside the
// 512-bit block, tried first for the blocked filter, measured 1.18x its theory at 12 bits/item
// and 1.66x at 16.
void expect_rate_matches(double measured, double theory, double trials, double relative,
                         const std::string& label) {
  const double sigma = std::sqrt(theory * (1.0 - theory) / trials);
  std::printf("[   fpr    ] %-44s measured %.6f  theory %.6f  ratio %.3f  (sigma %.1e)\n",
              label.c_str(), measured, theory, measured / theory, sigma);
  EXPECT_GE(measured, theory * (1.0 - relative) - 4.0 * sigma) << label;
  EXPECT_LE(measured, theory * (1.0 + relative) + 4.0 * sigma) << label;
}

template <class Filter>
std::string filter_name() {
  if (std::is_same_v<Filter, BloomFilter>) return "BloomFilter";
  return std::is_same_v<Filter, BlockedBloomFilter> ? "BlockedBloomFilter" : "CountingBloomFilter";
}

template <class Filter>
std::uint64_t grain_bits() {
  return std::is_same_v<Filter, BlockedBloomFilter> ? 512 : 64;
}

// Bits per position: 1 (a bit), 4 (a counter).
template <class Filter>
double position_bits() {
  return std::is_same_v<Filter, CountingBloomFilter> ? 4.0 : 1.0;
}

template <class Filter>
void expect_invalid(const std::function<void()>& build, const std::string& mentions) {
  try {
    build();
    ADD_FAILURE() << filter_name<Filter>() << ": no exception; expected one about " << mentions;
  } catch (const std::invalid_argument& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find(mentions), std::string::npos) << what;
    EXPECT_NE(what.find(filter_name<Filter>()), std::string::npos) << what;
  }
}

// ---------------------------------------------------------------------------------------------
// Behaviour common to the three filters.

template <class Filter>
class BloomFamilyTest : public ::testing::Test {};

class FilterNames {
 public:
  template <class Filter>
  static std::string GetName(int) {
    return filter_name<Filter>();
  }
};

using Filters = ::testing::Types<BloomFilter, BlockedBloomFilter, CountingBloomFilter>;
TYPED_TEST_SUITE(BloomFamilyTest, Filters, FilterNames);

TYPED_TEST(BloomFamilyTest, NoFalseNegativesIntegerKeys) {
  TypeParam filter(kItems, 8.0);
  EXPECT_EQ(insert_all(filter, members()), 0u);
  EXPECT_EQ(filter.size(), kItems);
  EXPECT_EQ(count_missing(filter, members()), 0u);
}

TYPED_TEST(BloomFamilyTest, NoFalseNegativesPastCapacity) {
  TypeParam filter(kItems / 4, 6.0);  // four times overfull: accuracy degrades, recall does not
  EXPECT_EQ(insert_all(filter, members()), 0u);
  EXPECT_EQ(count_missing(filter, members()), 0u);
  EXPECT_GT(filter.expected_fpr(), 0.5);
}

TYPED_TEST(BloomFamilyTest, StringKeysNoFalseNegativesAndFprMatchesTheory) {
  TypeParam filter(kItems, 10.0);
  const auto inserted = string_keys(kItems, 0);
  EXPECT_EQ(insert_all(filter, inserted), 0u);
  EXPECT_EQ(count_missing(filter, inserted), 0u);
  expect_rate_matches(hit_rate(filter, string_keys(kQueries, 1)), filter.expected_fpr(),
                      static_cast<double>(kQueries), 0.10,
                      filter_name<TypeParam>() + " strings, 10 bits/item");
}

// The measured rate against the filter's own theory: (1 - e^{-kn/m})^k for the standard
// filter, the block-load average of the same for the blocked one.
TYPED_TEST(BloomFamilyTest, FprMatchesTheory) {
  for (const double bits_per_item : {8.0, 10.0, 12.0, 16.0}) {
    TypeParam filter(kItems, bits_per_item);
    insert_all(filter, members());
    const std::string label = filter_name<TypeParam>() + ", " +
                              std::to_string(static_cast<int>(bits_per_item)) +
                              " bits/item, k=" + std::to_string(filter.hash_count());
    expect_rate_matches(hit_rate(filter, non_members()), filter.expected_fpr(),
                        static_cast<double>(kQueries), 0.10, label);
  }
}

TYPED_TEST(BloomFamilyTest, ForFprUsesOptimalBitsPerItem) {
  for (const double target : {0.1, 0.01, 1e-3, 1e-4, 1e-6}) {
    // 1 / ln 2 = 1.4427 positions per item per halving of the rate.
    const double want = 1.4426950408889634 * std::log2(1.0 / target) * position_bits<TypeParam>();
    if (want > 64.0) continue;  // beyond the limit of 64 bits per item (BadArgumentsThrow)
    const auto filter = TypeParam::for_fpr(kItems, target);
    // Rounding up to a whole word / block adds less than one grain over the whole filter.
    EXPECT_GE(filter.bits_per_item(), want * (1.0 - 1e-12)) << target;
    EXPECT_LE(filter.bits_per_item(),
              want + static_cast<double>(grain_bits<TypeParam>() + 1) / static_cast<double>(kItems))
        << target;
  }
}

TYPED_TEST(BloomFamilyTest, AccessorsReportSizing) {
  const std::size_t capacity = 100'000;
  TypeParam filter(capacity, 9.5, /*seed=*/42);
  EXPECT_EQ(filter.capacity(), capacity);
  EXPECT_EQ(filter.seed(), 42u);
  EXPECT_EQ(filter.size(), 0u);
  EXPECT_EQ(filter.bit_count() % grain_bits<TypeParam>(), 0u);
  EXPECT_GE(filter.bit_count(), capacity * 95 / 10);
  EXPECT_LT(filter.bit_count(), capacity * 95 / 10 + grain_bits<TypeParam>());
  EXPECT_EQ(filter.memory_bytes() * 8, filter.bit_count());
  EXPECT_DOUBLE_EQ(filter.bits_per_item(), static_cast<double>(filter.bit_count()) / capacity);
  EXPECT_EQ(filter.expected_fpr(), 0.0);

  // size() counts inserts, duplicates included; bits_per_item() then divides by it.
  for (std::size_t i = 0; i < 1000; ++i) filter.insert(members()[i % 500]);
  EXPECT_EQ(filter.size(), 1000u);
  EXPECT_DOUBLE_EQ(filter.bits_per_item(), static_cast<double>(filter.bit_count()) / 1000.0);
  EXPECT_GT(filter.expected_fpr(), 0.0);
}

TYPED_TEST(BloomFamilyTest, ClearEmpties) {
  TypeParam filter(100'000, 10.0);
  insert_all(filter, members(100'000));
  filter.insert(std::string_view("a string"));
  const std::size_t bytes = filter.memory_bytes();
  filter.clear();
  EXPECT_EQ(filter.size(), 0u);
  EXPECT_EQ(filter.memory_bytes(), bytes);
  EXPECT_EQ(filter.expected_fpr(), 0.0);
  // Every bit is clear again, so nothing at all is reported present.
  EXPECT_EQ(count_missing(filter, members(100'000)), 100'000u);
  EXPECT_FALSE(filter.contains(std::string_view("a string")));
  // And the filter works as new.
  insert_all(filter, members(1000));
  EXPECT_EQ(count_missing(filter, members(1000)), 0u);
}

TYPED_TEST(BloomFamilyTest, SeedSelectsIndependentHashing) {
  TypeParam one(100'000, 8.0, /*seed=*/1);
  TypeParam two(100'000, 8.0, /*seed=*/2);
  insert_all(one, members(100'000));
  insert_all(two, members(100'000));
  std::uint64_t hits_one = 0;
  std::uint64_t hits_both = 0;
  for (const std::uint64_t key : non_members()) {
    const bool a = one.contains(key);
    const bool b = two.contains(key);
    hits_one += a;
    hits_both += a && b;
  }
  // Independent hashing: the false positives of the two coincide about fpr^2 of the time
  // (identical hashing: fpr of the time).
  ASSERT_GT(hits_one, 20'000u);
  const double rate = static_cast<double>(hits_one) / static_cast<double>(non_members().size());
  EXPECT_LT(static_cast<double>(hits_both), 1.5 * rate * static_cast<double>(hits_one) + 100.0);
}

TYPED_TEST(BloomFamilyTest, MovePreservesContents) {
  auto filter = TypeParam::for_fpr(10'000, 0.01);
  insert_all(filter, members(10'000));
  TypeParam moved = std::move(filter);
  EXPECT_EQ(moved.size(), 10'000u);
  EXPECT_EQ(count_missing(moved, members(10'000)), 0u);
  TypeParam assigned(1);
  assigned = std::move(moved);
  EXPECT_EQ(count_missing(assigned, members(10'000)), 0u);
}

TYPED_TEST(BloomFamilyTest, BadArgumentsThrow) {
  using F = TypeParam;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  expect_invalid<F>([] { static_cast<void>(F(0)); }, "capacity");
  for (const double bits : {0.0, -1.0, nan, inf, -inf, 64.5, 1e300}) {
    expect_invalid<F>([bits] { static_cast<void>(F(1000, bits)); }, "bits_per_item");
  }
  // More than 2^46 bytes, refused before any memory is touched.
  expect_invalid<F>([] { static_cast<void>(F(std::numeric_limits<std::size_t>::max())); }, "2^46");
  expect_invalid<F>([] { static_cast<void>(F(std::size_t{1} << 46, 8.01)); }, "2^46");
  for (const double target : {0.0, 1.0, -0.5, 1.5, nan, inf, 1e-20}) {
    expect_invalid<F>([target] { static_cast<void>(F::for_fpr(1000, target)); }, "target_fpr");
  }
  expect_invalid<F>([] { static_cast<void>(F::for_fpr(0, 0.01)); }, "capacity");
  // The extremes of the accepted range work.
  EXPECT_EQ(F(1, 64.0).hash_count(), static_cast<unsigned>(ln2_rule(64.0 / position_bits<F>())));
  EXPECT_EQ(F(1000, 0.01).hash_count(), 1u);
}

// ---------------------------------------------------------------------------------------------
// The standard filter.

TEST(BloomFilterTest, HashCountFollowsLn2Rule) {
  const std::size_t capacity = std::size_t{1} << 16;
  for (const double bits :
       {0.5, 1.0, 2.0, 4.0, 5.0, 8.0, 9.585, 10.0, 12.0, 16.0, 20.0, 32.0, 46.0, 64.0}) {
    const BloomFilter filter(capacity, bits);
    const double exact = static_cast<double>(filter.bit_count()) / capacity;
    EXPECT_EQ(filter.hash_count(), static_cast<unsigned>(ln2_rule(exact))) << bits;
  }
  EXPECT_EQ(BloomFilter(capacity, 8.0).hash_count(), 6u);
  EXPECT_EQ(BloomFilter(capacity, 10.0).hash_count(), 7u);
  EXPECT_EQ(BloomFilter(capacity, 12.0).hash_count(), 8u);
}

TEST(BloomFilterTest, ExpectedFprIsTheClosedForm) {
  BloomFilter filter(kItems, 10.0);
  insert_all(filter, members());
  const double m = static_cast<double>(filter.bit_count());
  const double k = filter.hash_count();
  EXPECT_NEAR(filter.expected_fpr(), std::pow(1.0 - std::exp(-k * kItems / m), k), 1e-12);
  EXPECT_NEAR(filter.expected_fpr(), 0.00819, 5e-5);  // the textbook 0.82% at 10 bits, k = 7
}

TEST(BloomFilterTest, ForFprReachesTarget) {
  for (const double target : {0.1, 0.01, 1e-3, 1e-4}) {
    auto filter = BloomFilter::for_fpr(kItems, target);
    insert_all(filter, members());
    // Rounding k to an integer costs at most a few percent over the target.
    EXPECT_GE(filter.expected_fpr(), 0.99 * target);
    EXPECT_LE(filter.expected_fpr(), 1.05 * target);
    expect_rate_matches(hit_rate(filter, non_members()), target, static_cast<double>(kQueries),
                        0.10, "BloomFilter::for_fpr(" + std::to_string(target) + ")");
  }
}

// ---------------------------------------------------------------------------------------------
// The blocked filter: one cache line per key, paid for with a somewhat higher FPR.

TEST(BlockedBloomFilterTest, HashCountMinimizesBlockedFpr) {
  const std::size_t capacity = std::size_t{1} << 16;
  for (const double bits : {2.0, 4.0, 8.0, 10.0, 12.0, 16.0, 20.0, 32.0}) {
    const BlockedBloomFilter filter(capacity, bits);
    const unsigned k = filter.hash_count();
    using Layout = ccf::detail::BlockedBloomLayout;
    const double at_k = Layout::fpr(filter.bit_count(), k, capacity);
    if (k > 1) {
      EXPECT_LE(at_k, Layout::fpr(filter.bit_count(), k - 1, capacity)) << bits;
    }
    if (k < 32) {
      EXPECT_LE(at_k, Layout::fpr(filter.bit_count(), k + 1, capacity)) << bits;
    }
    // Block-load variance favours slightly fewer hashes than the ln2 rule.
    EXPECT_LE(k, static_cast<unsigned>(ln2_rule(bits))) << bits;
    if (bits <= 12.0) {
      EXPECT_GE(k + 1, static_cast<unsigned>(ln2_rule(bits))) << bits;
    }
  }
}

TEST(BlockedBloomFilterTest, PenaltyOverStandardIsBounded) {
  // The measured rate over the STANDARD filter's theory at the same bits/item and its k:
  // blocking costs accuracy (ratio > 1 from 10 bits/item, where the effect is many sigma), and
  // the cost stays within about 12% of the ratios documented in bloom_filter.hpp (1.07x,
  // 1.17x, 1.3x, 1.8x).
  const std::pair<double, double> cases[] = {{8.0, 1.2}, {10.0, 1.3}, {12.0, 1.45}, {16.0, 2.0}};
  for (const auto& [bits, limit] : cases) {
    BlockedBloomFilter filter(kItems, bits);
    insert_all(filter, members());
    const double k = ln2_rule(bits);
    const double standard = std::pow(1.0 - std::exp(-k / bits), k);
    const double measured = hit_rate(filter, non_members());
    std::printf("[  blocked ] %2.0f bits/item: measured %.6f, standard theory %.6f, ratio %.3f\n",
                bits, measured, standard, measured / standard);
    EXPECT_LE(measured, limit * standard) << bits;
    if (bits >= 10.0) {
      EXPECT_GT(measured, standard) << bits;
    }
  }
}

TEST(BlockedBloomFilterTest, BlocksAreWholeCacheLines) {
  const BlockedBloomFilter filter(1000, 10.0);
  EXPECT_EQ(filter.bit_count(), 10'240u);  // 10,000 bits rounded up to 20 blocks of 512
  EXPECT_EQ(filter.memory_bytes(), 20u * 64u);
}

// ---------------------------------------------------------------------------------------------
// The counting filter: deletion.

// Random inserts and erases against a multiset, on a tiny filter over a small universe: keys
// repeat (so counters saturate), positions collide, and every key inserted and not erased must
// be found at every step.
TEST(CountingBloomFilterTest, AgreesWithAMultisetAndNeverMissesAnInsertedKey) {
  for (const double bits_per_item : {8.0, 16.0, 32.0}) {
    CountingBloomFilter filter(64, bits_per_item, /*seed=*/7);
    std::vector<std::uint64_t> copies(200, 0);  // key -> inserts not yet erased
    std::uint64_t live = 0;
    std::uint64_t state = 12345;
    const auto next = [&state] {  // splitmix64
      state += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    };
    for (int op = 0; op < 200'000; ++op) {
      const std::uint64_t key = next() % copies.size();
      if (next() % 3 != 0) {
        ASSERT_EQ(filter.insert(key), Status::kOk);
        ++copies[key];
        ++live;
      } else if (copies[key] > 0) {  // erase only what was inserted
        ASSERT_EQ(filter.erase(key), Status::kOk) << key;
        --copies[key];
        --live;
      }
      if (op % 97 == 0) {
        for (std::uint64_t k = 0; k < copies.size(); ++k) {
          ASSERT_TRUE(copies[k] == 0 || filter.contains(k)) << k << " after " << op;
        }
      }
    }
    EXPECT_EQ(filter.size(), live);
    EXPECT_GT(filter.saturations(), 0u) << bits_per_item;  // the universe is small: it happens
    for (std::uint64_t k = 0; k < copies.size(); ++k) {
      EXPECT_TRUE(copies[k] == 0 || filter.contains(k)) << k;
    }
  }
}

// Erasing every key returns an unsaturated filter to empty, and its rate follows the keys left.
TEST(CountingBloomFilterTest, ErasingRestoresTheRateOfTheKeysLeft) {
  CountingBloomFilter filter(kItems / 2, 40.0);  // 10 counters per item at kItems / 2
  EXPECT_EQ(insert_all(filter, members()), 0u);
  for (const std::uint64_t key : std::span(members()).subspan(kItems / 2)) {
    ASSERT_EQ(filter.erase(key), Status::kOk);
  }
  EXPECT_EQ(filter.saturations(), 0u);
  EXPECT_EQ(filter.size(), kItems / 2);
  EXPECT_EQ(count_missing(filter, members(kItems / 2)), 0u);
  expect_rate_matches(hit_rate(filter, non_members()), filter.expected_fpr(),
                      static_cast<double>(kQueries), 0.10,
                      "CountingBloomFilter, 40 bits/item, half the keys erased");
  for (const std::uint64_t key : members(kItems / 2)) ASSERT_EQ(filter.erase(key), Status::kOk);
  EXPECT_EQ(filter.size(), 0u);
  EXPECT_EQ(hit_rate(filter, non_members()), 0.0);  // every counter is back at 0
  EXPECT_EQ(count_missing(filter, members(1000)), 1000u);
}

// A saturated counter stays at 15: a key inserted more often than that is still found after as
// many erases, and its counters stay set.
TEST(CountingBloomFilterTest, SaturatedCountersStickAndAreCounted) {
  CountingBloomFilter filter(1000, 16.0);
  const unsigned k = filter.hash_count();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(filter.insert(std::string_view("hot")), Status::kOk);
  EXPECT_EQ(filter.saturations(), 5u * k);  // inserts 16 to 20 met a 15 at each position
  for (int i = 0; i < 20; ++i) ASSERT_EQ(filter.erase(std::string_view("hot")), Status::kOk);
  EXPECT_TRUE(filter.contains(std::string_view("hot")));
  EXPECT_EQ(filter.size(), 0u);
  filter.clear();
  EXPECT_EQ(filter.saturations(), 0u);
  EXPECT_FALSE(filter.contains(std::string_view("hot")));
}

// An erase of a key that is certainly absent (a counter of its below what it would have put
// there) answers kNotFound and changes nothing.
TEST(CountingBloomFilterTest, EraseOfAnAbsentKeyChangesNothing) {
  CountingBloomFilter filter(10'000, 16.0);
  insert_all(filter, members(5000));
  std::uint64_t absent = 0;
  for (const std::uint64_t key : non_members()) {
    if (!filter.contains(key)) {
      absent = key;
      break;
    }
  }
  ASSERT_FALSE(filter.contains(absent));
  EXPECT_EQ(filter.erase(absent), Status::kNotFound);
  EXPECT_EQ(filter.size(), 5000u);
  EXPECT_EQ(count_missing(filter, members(5000)), 0u);
}

}  // namespace
