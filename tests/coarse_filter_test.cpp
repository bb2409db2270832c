// The coarse concurrent cuckoo filter under every lock and elision policy: writers insert and
// erase disjoint keys while readers check a resident set (zero false negatives), with more
// threads than cores, near full; at the end every key that should be present is, and the
// counts match.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "ccf/concurrent/coarse_cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

using ccf::Status;
using ccf::testing::member_keys;
namespace sync = ccf::sync;

template <class Lock>
using Global =
    ccf::CoarseCuckooFilter<ccf::PackedTable<12, 4>, sync::LockOnly<sync::ReaderWriterLock<Lock>>>;
template <template <class, class, unsigned, class> class Elision>
using Elided = ccf::CoarseCuckooFilter<
    ccf::PackedTable<12, 4>,
    Elision<sync::ReaderWriterLock<sync::McsLock>, sync::RtmBackend, 10, sync::NoElisionStats>>;

template <class Filter>
class CoarseFilter : public ::testing::Test {};
using Filters =
    ::testing::Types<Global<sync::TasLock>, Global<sync::TtasLock>, Global<sync::McsLock>,
                     Global<sync::ClhLock>, Elided<sync::RetryElision>, Elided<sync::SlrElision>,
                     Elided<sync::ScmElision>, Elided<sync::MixElision>>;
TYPED_TEST_SUITE(CoarseFilter, Filters);

template <class Filter>
void churn(Filter& filter, std::size_t capacity, unsigned readers, unsigned writers, int rounds) {
  const auto resident = member_keys(capacity * 45 / 100, 41);
  for (const auto key : resident) ASSERT_EQ(filter.insert(key), Status::kOk);
  const std::size_t per_writer = capacity * 45 / 100 / writers;
  std::atomic<std::uint64_t> misses{0};
  std::atomic<unsigned> writers_done{0};
  std::vector<std::vector<std::uint64_t>> left_in(writers);
  std::barrier start(readers + writers);
  {
    std::vector<std::jthread> threads;
    for (unsigned w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        const auto mine = member_keys(per_writer, 2000 + w);
        std::vector<bool> present(per_writer);
        std::mt19937_64 rng(w);
        start.arrive_and_wait();
        for (int op = 0; op < rounds; ++op) {
          const std::size_t i = rng() % per_writer;
          if (present[i]) {
            ASSERT_EQ(filter.erase(mine[i]), Status::kOk);
            present[i] = false;
          } else {
            present[i] = filter.insert(mine[i]) == Status::kOk;
          }
        }
        for (std::size_t i = 0; i < per_writer; ++i) {
          if (present[i]) left_in[w].push_back(mine[i]);
        }
        writers_done.fetch_add(1);
      });
    }
    for (unsigned r = 0; r < readers; ++r) {
      threads.emplace_back([&, r] {
        std::size_t i = r, lookups = 0;
        start.arrive_and_wait();
        while (writers_done.load() < writers || lookups < resident.size()) {
          misses += !filter.contains(resident[i]);
          ++lookups;
          i = (i + 7919) % resident.size();
        }
      });
    }
  }
  EXPECT_EQ(misses.load(), 0u);
  std::size_t expected = resident.size();
  for (const auto& keys : left_in) {
    expected += keys.size();
    for (const auto key : keys) ASSERT_TRUE(filter.contains(key));
  }
  EXPECT_EQ(filter.size(), expected);
}

constexpr int kRounds = ccf::testing::scaled(200'000, 10);

TYPED_TEST(CoarseFilter, TwoReadersTwoWriters) {
  TypeParam filter(1 << 14);
  churn(filter, 1 << 14, 2, 2, kRounds);
}

TYPED_TEST(CoarseFilter, SixteenThreadsOnTwoCoresNearFull) {
  TypeParam filter(1 << 13);
  churn(filter, 1 << 13, 8, 8, kRounds / 8);
  EXPECT_GT(filter.load_factor(), 0.5);
}

TYPED_TEST(CoarseFilter, ReachesTheSequentialLoadFactorAndSavesTheSameFormat) {
  TypeParam filter(1 << 16);
  const auto keys = member_keys(1 << 17, 43);
  std::size_t stored = 0;
  while (filter.insert(keys[stored]) == Status::kOk) ++stored;
  EXPECT_GE(filter.load_factor(), 0.95);
  std::stringstream bytes;
  filter.save(bytes);
  ccf::CuckooFilter<ccf::PackedTable<12, 4>> sequential(1);
  sequential.load(bytes);
  EXPECT_EQ(sequential.size(), stored);
  for (std::size_t i = 0; i < stored; ++i) ASSERT_TRUE(sequential.contains(keys[i]));
}

TEST(CoarseFilter, ElisionFallsBackWithoutRtm) {
  Elided<sync::RetryElision> filter(100);
  EXPECT_EQ(filter.speculative(), sync::rtm_available());
}

}  // namespace
