// The false-positive rate of every cuckoo filter -- sequential, coarse, striped, COP and
// lock-free (one level, and grown to several) -- measured with >= 10^6 keys that were never
// inserted, against the rate the shape promises at the load reached, with binomial bounds.
// Every filter is filled to its first refusal (the concurrent ones by two threads at once) and
// must reach a load of at least 0.95 first.
//
// Expectation: a query probes 2 buckets of b slots in each level; each occupied slot matches its
// f_k-bit fingerprint with probability 2^-f_k, so
//   FPR = 1 - prod over levels k of (1 - 2^-f_k)^(2 b load_k),
// and the shape's bound is the same at load 1 in every level probed. (A lock-free filter's
// levels after the first store wider fingerprints than level 0: f_k = F' for k >= 1.)
//
// And the bound the lock-free filter's wider levels are for: grown from a small capacity to 8
// levels, its rate is at most 2x an ungrown filter's at the same load, for at most 1.6x the
// bits per item.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ccf/concurrent/coarse_cuckoo_filter.hpp"
#include "ccf/concurrent/cop_cuckoo_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/phase_fair_lock.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "test_keys.hpp"

namespace {

using ccf::PackedTable;
using ccf::Status;
using ccf::testing::member_keys;
using ccf::testing::non_member_keys;

constexpr std::size_t kCapacity = std::size_t{1} << 18;
constexpr std::size_t kQueries = std::size_t{1} << 20;  // >= 10^6 negatives per filter
constexpr double kMinLoad = 0.95;

// Probability that a query misses every occupied slot of one level at `load`.
double miss_probability(unsigned fp_bits, unsigned slots, double load) {
  return std::pow(1 - std::ldexp(1.0, -static_cast<int>(fp_bits)), 2 * slots * load);
}

// A level's load and fingerprint width.
struct LevelShape {
  double load;
  unsigned fp_bits;
};

// Compares the rate measured over kQueries non-members with the expectation at the levels'
// loads and widths: within 4 binomial standard deviations of the expectation (plus 15% for the
// approximation that the slots' fingerprints are independent), and under the shape's bound.
template <class Filter>
void expect_fpr(const Filter& filter, const std::vector<LevelShape>& levels,
                const std::string& what) {
  double expected_miss = 1.0, bound_miss = 1.0;
  for (const LevelShape& level : levels) {
    expected_miss *= miss_probability(level.fp_bits, Filter::kSlots, level.load);
    bound_miss *= miss_probability(level.fp_bits, Filter::kSlots, 1.0);
  }
  const double expected = 1 - expected_miss, bound = 1 - bound_miss;
  std::size_t positives = 0;
  for (const std::uint64_t key : non_member_keys(kQueries, 29)) positives += filter.contains(key);
  const double n = static_cast<double>(kQueries);
  const double measured = static_cast<double>(positives) / n;
  const double sigma = std::sqrt(expected * (1 - expected) / n);
  ::testing::Test::RecordProperty("fpr", std::to_string(measured));
  std::printf("[   fpr    ] %-58s %zu level(s), FPR %.5f, expected %.5f, bound %.5f\n",
              what.c_str(), levels.size(), measured, expected, bound);
  EXPECT_LE(measured, bound + 4 * sigma) << what;
  EXPECT_LE(measured, 1.15 * expected + 4 * sigma) << what;
  EXPECT_GE(measured, 0.85 * expected - 4 * sigma) << what;
}

// Two threads insert disjoint halves of `keys` until each meets its first refusal. Returns the
// keys stored, after checking that every one of them is found.
template <class Filter>
std::size_t fill_concurrently(Filter& filter, const std::vector<std::uint64_t>& keys) {
  constexpr unsigned kThreads = 2;
  std::vector<std::size_t> stored(kThreads, 0);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = t; i < keys.size(); i += kThreads) {
        if (filter.insert(keys[i]) != Status::kOk) break;
        ++stored[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (unsigned t = 0; t < kThreads; ++t) {
    for (std::size_t k = 0; k < stored[t]; ++k) {
      EXPECT_TRUE(filter.contains(keys[t + k * kThreads])) << "false negative";
    }
  }
  return stored[0] + stored[1];
}

template <class Filter>
void check_one_level(Filter& filter, const std::string& what) {
  const std::size_t stored = fill_concurrently(filter, member_keys(2 * filter.capacity(), 17));
  EXPECT_EQ(filter.size(), stored);
  ASSERT_GE(filter.load_factor(), kMinLoad) << what;
  expect_fpr(filter, {{filter.load_factor(), Filter::kFpBits}}, what);
}

TEST(FalsePositiveRate, Sequential12Bits) {
  ccf::CuckooFilter<PackedTable<12, 4>> filter(kCapacity);
  std::size_t stored = 0;
  for (const std::uint64_t key : member_keys(2 * kCapacity, 17)) {
    if (filter.insert(key) != Status::kOk) break;
    ++stored;
  }
  EXPECT_EQ(filter.size(), stored);
  ASSERT_GE(filter.load_factor(), kMinLoad);
  expect_fpr(filter, {{filter.load_factor(), 12}}, filter.shape());
}

TEST(FalsePositiveRate, Coarse12Bits) {
  ccf::CoarseCuckooFilter<PackedTable<12, 4>,
                          ccf::sync::LockOnly<ccf::sync::ReaderWriterLock<ccf::sync::TtasLock>>>
      filter(kCapacity);
  check_one_level(filter, filter.shape());
}

TEST(FalsePositiveRate, CoarsePhaseFair8Bits) {
  ccf::CoarseCuckooFilter<PackedTable<8, 4>, ccf::sync::LockOnly<ccf::sync::PhaseFairLock>> filter(
      kCapacity);
  check_one_level(filter, filter.shape());
}

TEST(FalsePositiveRate, Striped12Bits) {
  ccf::StripedCuckooFilter<12> filter(kCapacity);
  check_one_level(filter, filter.shape());
}

TEST(FalsePositiveRate, Striped8Bits) {
  ccf::StripedCuckooFilter<8> filter(kCapacity);
  check_one_level(filter, filter.shape());
}

TEST(FalsePositiveRate, Cop12Bits) {
  ccf::CopCuckooFilter<12> filter(kCapacity);
  check_one_level(filter, filter.shape());
}

template <unsigned F>
void check_lock_free(bool grow) {
  using Filter = ccf::LockFreeCuckooFilter<F>;
  typename Filter::Options options;
  options.grow = grow;
  // Grown: twice as many keys as level 0 holds, so that the filter grows past it.
  Filter filter(kCapacity, options);
  const std::size_t keys = grow ? 3 * kCapacity : 2 * kCapacity;
  const std::size_t stored = fill_concurrently(filter, member_keys(keys, 17));
  EXPECT_EQ(filter.size(), stored);
  std::vector<LevelShape> loads;
  for (unsigned k = 0; k < filter.levels(); ++k) {
    loads.push_back({static_cast<double>(filter.level_occupied(k)) /
                         static_cast<double>(filter.level_capacity(k)),
                     filter.level_fp_bits(k)});
  }
  if (grow) {
    ASSERT_GE(filter.levels(), 2u) << "the filter did not grow";
    ASSERT_EQ(stored, keys) << "a growing filter refused an insert";
  }
  // Every level but the newest was filled to its first refusal.
  for (unsigned k = 0; k + (grow ? 1 : 0) < loads.size(); ++k) {
    ASSERT_GE(loads[k].load, kMinLoad) << "level " << k;
  }
  expect_fpr(filter, loads, filter.shape());
}

TEST(FalsePositiveRate, LockFree12Bits) {
  check_lock_free<12>(false);
}
TEST(FalsePositiveRate, LockFree8Bits) {
  check_lock_free<8>(false);
}
TEST(FalsePositiveRate, LockFreeGrown12Bits) {
  check_lock_free<12>(true);
}
TEST(FalsePositiveRate, LockFreeGrown8Bits) {
  check_lock_free<8>(true);
}

// Grown from capacity 1,024 to 8 levels (filled single-threaded until the first refusal) against
// an ungrown filter with as many slots, given the same keys until all are in or its first
// refusal. Its load is then at most the grown filter's (equal within 0.2% at F = 8 and 12; at
// F = 4 an ungrown filter refuses at 0.86), which only lowers its rate: the rate comparison is
// conservative. Space is compared at equal load: bits per slot (both have the same slots), the
// bits per item each would have holding the same items.
//
// Level 0 stores F bits, levels 1..7 F' >= F + 3 (lock_free_cuckoo_filter.hpp): each later
// level adds at most 2^-3 of level 0's rate at equal load, so the expected ratio is about
// 1 + 7/8 = 1.875 at F = 12 (measured 1.86), 1 + 7/16 at F = 8 (1.44) and less at F = 4, where
// the rate saturates (1.63); before the levels were widened, 7-8x at F = 8 and 12.
//
// kGrownQueries = 2^22 absent keys: at F = 12 the ungrown filter answers about 8,000 of them
// "maybe" and the grown one 15,000, so the measured ratio's standard deviation is about 0.025
// and 2.0 lies more than 5 of them above the expected 1.875: the check is statistically safe (and
// deterministic: the keys and the hash are fixed).
constexpr std::size_t kGrownQueries = std::size_t{1} << 22;

template <unsigned F>
void check_grown_against_ungrown() {
#if defined(__SANITIZE_THREAD__)
  // One thread: ThreadSanitizer has nothing to find, and its 20x slower lookups would cost
  // 40 s a width. The Release and ASan builds run it.
  GTEST_SKIP() << "single-threaded statistics: run in the Release and ASan builds";
#endif
  using Filter = ccf::LockFreeCuckooFilter<F>;
  Filter grown(1024);
  const auto keys = member_keys(1 << 19, 31);
  std::size_t stored = 0;
  while (stored < keys.size() && grown.insert(keys[stored]) == Status::kOk) ++stored;
  ASSERT_LT(stored, keys.size()) << "the filter never refused an insert";
  ASSERT_EQ(grown.levels(), Filter::kMaxLevels);
  Filter ungrown(grown.capacity(), {.filter = {.max_load = 1.0}, .grow = false});
  ASSERT_EQ(ungrown.capacity(), grown.capacity());
  std::size_t ungrown_stored = 0;
  while (ungrown_stored < stored && ungrown.insert(keys[ungrown_stored]) == Status::kOk) {
    ++ungrown_stored;
  }
  ASSERT_LE(ungrown.load_factor(), grown.load_factor());
  std::size_t grown_positives = 0, ungrown_positives = 0;
  for (const std::uint64_t key : non_member_keys(kGrownQueries, 37)) {
    grown_positives += grown.contains(key);
    ungrown_positives += ungrown.contains(key);
  }
  ASSERT_GT(ungrown_positives, 0u);
  const double n = static_cast<double>(kGrownQueries);
  const double fpr_ratio =
      static_cast<double>(grown_positives) / static_cast<double>(ungrown_positives);
  const double bits_ratio = (grown.bits_per_item() * grown.load_factor()) /
                            (ungrown.bits_per_item() * ungrown.load_factor());
  std::printf(
      "[   fpr    ] F = %2u: grown to %zu levels, load %.4f, %.2f bits/item, FPR %.6f; ungrown "
      "load %.4f, %.2f bits/item, FPR %.6f; ratios: FPR %.3f, bits/item at equal load %.3f\n",
      F, grown.levels(), grown.load_factor(), grown.bits_per_item(),
      static_cast<double>(grown_positives) / n, ungrown.load_factor(), ungrown.bits_per_item(),
      static_cast<double>(ungrown_positives) / n, fpr_ratio, bits_ratio);
  ::testing::Test::RecordProperty("fpr_ratio", std::to_string(fpr_ratio));
  ::testing::Test::RecordProperty("bits_ratio", std::to_string(bits_ratio));
  EXPECT_LE(fpr_ratio, 2.0);
  // At F = 4 later levels pack 9 slots of 7 bits per word where level 0 packs 15 of 4: 15/9 =
  // 1.67x the bits per slot, 1.65x overall (docs/lockfree.md, "Space").
  EXPECT_LE(bits_ratio, F == 4 ? 1.7 : 1.6);
}

TEST(FalsePositiveRate, LockFreeGrownToEightLevelsAtMostTwiceUngrown12Bits) {
  check_grown_against_ungrown<12>();
}
TEST(FalsePositiveRate, LockFreeGrownToEightLevelsAtMostTwiceUngrown8Bits) {
  check_grown_against_ungrown<8>();
}
TEST(FalsePositiveRate, LockFreeGrownToEightLevelsAtMostTwiceUngrown4Bits) {
  check_grown_against_ungrown<4>();
}

}  // namespace
