// COP: the Algorithm 5.9 state machine, driven by the scripted SimulatedBackend (there is no
// RTM here), and the COP cuckoo filter both through simulated transactions and through its lock
// fallback (what runs on this machine), under concurrent churn.
#include <gtest/gtest.h>

#include <vector>

#include "batched_operations.hpp"
#include "ccf/concurrent/cop_cuckoo_filter.hpp"
#include "ccf/sync/cop.hpp"
#include "concurrent_churn.hpp"
#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

using ccf::Status;
using ccf::sync::Access;
using ccf::sync::kAbortBadRop;
using ccf::sync::kAbortWasLocked;
using ccf::sync::TxStatus;
using Simulated = ccf::sync::CopExecutor<ccf::sync::McsLock, ccf::sync::SimulatedBackend, 10,
                                         ccf::sync::ElisionStats>;

// Counts how often each part of an operation ran.
struct Calls {
  int prefix = 0, verify = 0, complete = 0, whole = 0;
};

int run(Simulated& cop, Calls& calls, int verify_failures = 0) {
  return cop.run<Access::kWrite>([&] { return ++calls.prefix; },
                                 [&](int) { return ++calls.verify > verify_failures; },
                                 [&](int out) {
                                   ++calls.complete;
                                   return out;
                                 },
                                 [&] {
                                   ++calls.whole;
                                   return -1;
                                 });
}

TEST(CopStateMachine, CommitsOnTheFirstTransaction) {
  Simulated cop;
  Calls calls;
  EXPECT_EQ(run(cop, calls), 1);
  EXPECT_EQ(calls.prefix, 1);
  EXPECT_EQ(calls.complete, 1);
  EXPECT_EQ(calls.whole, 0);
  EXPECT_EQ(cop.backend().commits(), 1u);
}

TEST(CopStateMachine, BadRopRecomputesThePrefix) {
  Simulated cop;
  Calls calls;
  EXPECT_EQ(run(cop, calls, 2), 3);  // the third prefix's output is the one completed
  EXPECT_EQ(calls.prefix, 3);
  EXPECT_EQ(calls.verify, 3);
  EXPECT_EQ(calls.complete, 1);
  EXPECT_EQ(cop.backend().explicit_aborts(), 2u);
  EXPECT_EQ(cop.stats().aborts_bad_rop, 2u);  // counted under their own code
  EXPECT_EQ(cop.stats().aborts_explicit, 0u);
}

TEST(CopStateMachine, WasLockedReusesTheOutputAndCostsNoRetry) {
  Simulated cop;
  // More WAS_LOCKED aborts than MaxRetries: still no fallback, prefix computed once.
  cop.backend().script(std::vector<TxStatus>(15, TxStatus::aborted_explicit(kAbortWasLocked)));
  Calls calls;
  EXPECT_EQ(run(cop, calls), 1);
  EXPECT_EQ(calls.prefix, 1);
  EXPECT_EQ(calls.whole, 0);
  EXPECT_EQ(cop.backend().begins(), 16u);
}

TEST(CopStateMachine, ConflictsReuseTheOutputUntilMaxRetriesThenFallBack) {
  Simulated cop;
  cop.backend().script({}, TxStatus::aborted(TxStatus::kConflict | TxStatus::kRetry));
  Calls calls;
  EXPECT_EQ(run(cop, calls), -1);
  EXPECT_EQ(calls.prefix, 1);
  EXPECT_EQ(calls.whole, 1);
  EXPECT_EQ(cop.backend().begins(), 10u);
  EXPECT_EQ(cop.stats().fallbacks, 1u);
  EXPECT_EQ(cop.stats().retries_exhausted, 1u);
}

TEST(CopStateMachine, CapacityAbortFallsBackAtOnce) {
  Simulated cop;
  cop.backend().script({TxStatus::aborted(TxStatus::kCapacity)});
  Calls calls;
  EXPECT_EQ(run(cop, calls), -1);
  EXPECT_EQ(cop.backend().begins(), 1u);
  EXPECT_EQ(calls.whole, 1);
  EXPECT_EQ(cop.stats().retries_exhausted, 0u);
}

TEST(CopStateMachine, WithoutRtmEverythingRunsUnderTheLock) {
  Simulated cop;
  cop.backend().set_available(false);
  Calls calls;
  EXPECT_EQ(run(cop, calls), -1);
  EXPECT_EQ(calls.prefix, 0);
  EXPECT_EQ(cop.backend().begins(), 0u);
  EXPECT_FALSE(cop.speculative());
}

template <class Filter>
void check_filter_operations(Filter& filter) {
  const auto keys = ccf::testing::member_keys(1 << 17, 61);
  std::size_t stored = 0;
  while (stored < keys.size() && filter.insert(keys[stored]) == Status::kOk) ++stored;
  EXPECT_GE(filter.load_factor(), 0.95);
  EXPECT_EQ(filter.size(), stored);
  for (std::size_t i = 0; i < stored; ++i) ASSERT_TRUE(filter.contains(keys[i]));
  for (std::size_t i = 0; i < stored; i += 2) ASSERT_EQ(filter.erase(keys[i]), Status::kOk);
  for (std::size_t i = 1; i < stored; i += 2) ASSERT_TRUE(filter.contains(keys[i]));
  EXPECT_EQ(filter.size(), stored / 2);
  std::vector<std::uint64_t> odd;  // the keys still stored first, then the erased ones
  for (std::size_t i = 1; i < stored; i += 2) odd.push_back(keys[i]);
  const std::size_t still = odd.size();
  for (std::size_t i = 0; i < stored; i += 2) odd.push_back(keys[i]);
  ccf::testing::expect_batched_lookups_agree(filter, odd, still);
}

TEST(CopFilter, BatchedInsertsFillAsFullAsSingleOnes) {
  ccf::CopCuckooFilter<12, 4, Simulated> filter(1 << 16);
  ccf::testing::expect_batched_inserts_fill(filter, ccf::testing::member_keys(1 << 17, 62));
}

TEST(CopFilter, SimulatedTransactionsCarryOutEveryOperation) {
  ccf::CopCuckooFilter<12, 4, Simulated> filter(1 << 16);
  check_filter_operations(filter);
  const auto stats = filter.policy().executor().stats();
  EXPECT_GT(stats.committed, 100'000u);
  EXPECT_EQ(stats.fallbacks, 0u);
}

TEST(CopFilter, LockFallbackCarriesOutEveryOperation) {
  ccf::CopCuckooFilter<12, 4> filter(1 << 16);
  EXPECT_EQ(filter.speculative(), ccf::sync::rtm_available());
  check_filter_operations(filter);
}

TEST(CopFilter, ChurnWithSixteenThreadsOnTwoCores) {
  ccf::CopCuckooFilter<16, 4> filter(1 << 13);
  // 16 threads on 2 cores spend most of the run waiting for a time slice: CI runs a quarter.
  ccf::testing::churn(filter, {1 << 13, 0.85, 0.12, 8, 8,
                               ccf::testing::bounded(ccf::testing::scaled(40'000, 10), 4)});
}

}  // namespace
