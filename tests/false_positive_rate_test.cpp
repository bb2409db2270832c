// The false-positive rate of every cuckoo filter -- sequential, coarse, striped, COP and
// lock-free (one level, and grown to several) -- measured with >= 10^6 keys that were never
// inserted, against the rate the shape promises at the load reached, with binomial bounds.
// Every filter is filled to its first refusal (the concurrent ones by two threads at once) and
// must reach a load of at least 0.95 first.
//
// Expectation: a query probes 2 buckets of b slots in each level; each occupied slot matches its
// f-bit fingerprint with probability 2^-f, so
//   FPR = 1 - prod over levels k of (1 - 2^-f)^(2 b load_k),
// and the shape's bound is the same at load 1 in every level probed.
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

// Compares the rate measured over kQueries non-members with the expectation at the levels'
// loads: within 4 binomial standard deviations of the expectation (plus 15% for the
// approximation that the slots' fingerprints are independent), and under the shape's bound.
template <class Filter>
void expect_fpr(const Filter& filter, const std::vector<double>& level_loads,
                const std::string& what) {
  double expected_miss = 1.0, bound_miss = 1.0;
  for (const double load : level_loads) {
    expected_miss *= miss_probability(Filter::kFpBits, Filter::kSlots, load);
    bound_miss *= miss_probability(Filter::kFpBits, Filter::kSlots, 1.0);
  }
  const double expected = 1 - expected_miss, bound = 1 - bound_miss;
  std::size_t positives = 0;
  for (const std::uint64_t key : non_member_keys(kQueries, 29)) positives += filter.contains(key);
  const double n = static_cast<double>(kQueries);
  const double measured = static_cast<double>(positives) / n;
  const double sigma = std::sqrt(expected * (1 - expected) / n);
  ::testing::Test::RecordProperty("fpr", std::to_string(measured));
  std::printf("[   fpr    ] %-58s %zu level(s), FPR %.5f, expected %.5f, bound %.5f\n",
              what.c_str(), level_loads.size(), measured, expected, bound);
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
  expect_fpr(filter, {filter.load_factor()}, what);
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
  expect_fpr(filter, {filter.load_factor()}, filter.shape());
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
  std::vector<double> loads;
  for (unsigned k = 0; k < filter.levels(); ++k) {
    loads.push_back(static_cast<double>(filter.level_occupied(k)) /
                    static_cast<double>(filter.level_capacity(k)));
  }
  if (grow) {
    ASSERT_GE(filter.levels(), 2u) << "the filter did not grow";
    ASSERT_EQ(stored, keys) << "a growing filter refused an insert";
  }
  // Every level but the newest was filled to its first refusal.
  for (unsigned k = 0; k + (grow ? 1 : 0) < loads.size(); ++k) {
    ASSERT_GE(loads[k], kMinLoad) << "level " << k;
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

}  // namespace
