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
#include "ccf/cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "concurrent_churn.hpp"
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

constexpr int kRounds = ccf::testing::scaled(200'000, 10);

TYPED_TEST(CoarseFilter, TwoReadersTwoWriters) {
  TypeParam filter(1 << 14);
  ccf::testing::churn(filter, {1 << 14, 0.45, 0.45, 2, 2, kRounds});
}

TYPED_TEST(CoarseFilter, SixteenThreadsOnTwoCoresNearFull) {
  TypeParam filter(1 << 13);
  ccf::testing::churn(filter, {1 << 13, 0.85, 0.12, 8, 8, kRounds / 8});
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
  const auto sequential = ccf::CuckooFilter<ccf::PackedTable<12, 4>>::load(bytes);
  EXPECT_EQ(sequential->size(), stored);
  for (std::size_t i = 0; i < stored; ++i) ASSERT_TRUE(sequential->contains(keys[i]));
}

TEST(CoarseFilter, ElisionFallsBackWithoutRtm) {
  Elided<sync::RetryElision> filter(100);
  EXPECT_EQ(filter.speculative(), sync::rtm_available());
}

}  // namespace
