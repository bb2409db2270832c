// HTM-CLHT (include/ccf/tables/htm_clht.hpp) without TSX: the elided update paths run on the
// scripted SimulatedBackend -- sections commit as transactions, retry retryable aborts, and fall
// back to the lock on the others -- and every outcome leaves the same table a model predicts.
// The concurrent contract (model, churn, linearizability) of every variant, on the machine's
// real backend, is in hash_table_contract_test.cpp.
#include "ccf/tables/htm_clht.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "ccf/sync/simulated_backend.hpp"

namespace {

using ccf::Status;
using ccf::sync::ElisionCounters;
using ccf::sync::ElisionStats;
using ccf::sync::SimulatedBackend;
using ccf::sync::TxStatus;

using FineSimulated = ccf::BasicClht<ccf::clht::BucketElided<SimulatedBackend>>;
using FineCounted = ccf::BasicClht<ccf::clht::BucketElided<SimulatedBackend, 10, ElisionStats>>;
using GlobalSimulated = ccf::HtmClht<ccf::sync::SlrElision<ccf::sync::McsLock, SimulatedBackend>>;

// Random updates and lookups against a map; returns how many updates ran a section: every
// insert_or_assign, and the erases of present keys (an erase of an absent key is answered from
// a lookup, writing nothing).
template <class Table>
std::uint64_t agree_with_a_map(Table& table, unsigned seed) {
  std::unordered_map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(seed);
  std::uint64_t updates = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t key = 1 + rng() % 300;
    switch (rng() % 3) {
      case 0:
        EXPECT_EQ(table.insert_or_assign(key, i),
                  model.contains(key) ? Status::kExists : Status::kOk);
        model[key] = static_cast<std::uint64_t>(i);
        ++updates;
        break;
      case 1: {
        const bool present = model.erase(key) != 0;
        EXPECT_EQ(table.erase(key), present ? Status::kOk : Status::kNotFound);
        updates += present;
        break;
      }
      default: {
        const auto it = model.find(key);
        EXPECT_EQ(table.find(key),
                  it == model.end() ? std::nullopt : std::optional<std::uint64_t>(it->second));
      }
    }
  }
  EXPECT_EQ(table.size(), model.size());
  return updates;
}

TEST(HtmClhtFine, EveryUpdateCommitsAsATransactionWhenNothingAborts) {
  FineSimulated table(4);  // small: resizes (under the bucket locks) happen too
  const std::uint64_t updates = agree_with_a_map(table, 1);
  SimulatedBackend& rtm = table.writers().backend();
  EXPECT_TRUE(table.speculative());
  EXPECT_EQ(rtm.begins(), updates);
  EXPECT_EQ(rtm.commits(), updates);
  EXPECT_GE(table.resizes(), 3u);
}

// ASCY's third pattern: an update that fails (an insert of a present key, an erase of an absent
// one) is answered from a lookup and runs no section.
TEST(HtmClhtFine, FailedUpdatesRunNoSection) {
  FineSimulated table(64);
  SimulatedBackend& rtm = table.writers().backend();
  ASSERT_EQ(table.insert(7, 70), Status::kOk);
  ASSERT_EQ(rtm.begins(), 1u);
  EXPECT_EQ(table.insert(7, 71), Status::kExists);
  EXPECT_EQ(table.erase(8), Status::kNotFound);
  EXPECT_EQ(rtm.begins(), 1u);
  EXPECT_EQ(table.find(7), 70u);
  // insert_or_assign of a present key writes: it runs a section.
  EXPECT_EQ(table.insert_or_assign(7, 72), Status::kExists);
  EXPECT_EQ(rtm.begins(), 2u);
  EXPECT_EQ(table.find(7), 72u);
}

TEST(HtmClhtFine, RetryableAbortsAreRetriedAndOthersFallBackToTheBucketLock) {
  FineCounted table(64);
  SimulatedBackend& rtm = table.writers().backend();
  // Three conflicts, then a commit: one insert, four attempts.
  rtm.script({TxStatus::aborted(TxStatus::kConflict | TxStatus::kRetry),
              TxStatus::aborted(TxStatus::kConflict), TxStatus::aborted(TxStatus::kRetry)});
  ASSERT_EQ(table.insert(7, 70), Status::kOk);
  EXPECT_EQ(rtm.begins(), 4u);
  EXPECT_EQ(rtm.commits(), 1u);
  // A capacity abort cannot be cured by retrying: straight to the lock, and the update holds.
  rtm.script({TxStatus::aborted(TxStatus::kCapacity)});
  ASSERT_EQ(table.insert(8, 80), Status::kOk);
  EXPECT_EQ(rtm.begins(), 5u);
  EXPECT_EQ(rtm.commits(), 1u);
  // Ten retryable aborts exhaust the attempts: the lock again.
  rtm.script({}, TxStatus::aborted(TxStatus::kConflict));
  ASSERT_EQ(table.erase(7), Status::kOk);
  EXPECT_EQ(rtm.begins(), 15u);
  EXPECT_EQ(table.find(7), std::nullopt);
  EXPECT_EQ(table.find(8), 80u);
  EXPECT_EQ(table.size(), 1u);
  // The counters say the same: a RETRY bit alone is no conflict (counted as "other").
  EXPECT_EQ(table.writers().elision_stats(), (ElisionCounters{.started = 15,
                                                              .committed = 1,
                                                              .aborts_capacity = 1,
                                                              .aborts_conflict = 12,
                                                              .aborts_other = 1,
                                                              .fallbacks = 2,
                                                              .retries_exhausted = 1}));
}

TEST(HtmClhtFine, WithoutRtmItIsTheBucketLockedTable) {
  FineSimulated table(4);
  table.writers().backend().set_available(false);
  agree_with_a_map(table, 2);
  EXPECT_FALSE(table.speculative());
  EXPECT_EQ(table.writers().backend().begins(), 0u);
}

TEST(HtmClht, GlobalLockElidedUpdatesAndResizesKeepTheTableRight) {
  GlobalSimulated table(4);
  const std::uint64_t updates = agree_with_a_map(table, 3);
  SimulatedBackend& rtm = table.writers().elision().backend();
  EXPECT_TRUE(table.speculative());
  // Every update's section committed; resizes took the lock (a table's copy fits no transaction).
  EXPECT_EQ(rtm.commits(), updates);
  EXPECT_EQ(rtm.begins(), updates);
  EXPECT_GE(table.resizes(), 3u);
}

TEST(HtmClht, AbortedSectionsFallBackToTheGlobalLock) {
  GlobalSimulated table(4);
  SimulatedBackend& rtm = table.writers().elision().backend();
  rtm.script({}, TxStatus::aborted(TxStatus::kCapacity));  // nothing ever commits
  agree_with_a_map(table, 4);
  EXPECT_EQ(rtm.commits(), 0u);
  EXPECT_GT(rtm.begins(), 0u);
}

// The adaptive policy: sections that skip speculation (after capacity aborts and exhausted
// budgets) run under the lock, and the table stays right.
TEST(HtmClht, AdaptivePolicyKeepsTheTableRight) {
  ccf::HtmClht<ccf::sync::AdaptiveElision<ccf::sync::McsLock, SimulatedBackend, 4, ElisionStats>>
      table(4);
  std::vector<TxStatus> script;
  for (int i = 0; i < 40; ++i) {  // 40 aborts: skip periods up to 256 sections, then commits
    script.push_back(i % 10 == 0 ? TxStatus::aborted(TxStatus::kCapacity)
                                 : TxStatus::aborted(TxStatus::kConflict));
  }
  table.writers().elision().backend().script(std::move(script));
  agree_with_a_map(table, 4);
  const ElisionCounters c = table.writers().elision_stats();
  EXPECT_GT(c.skipped, 0u);
  EXPECT_GT(c.retries_exhausted, 0u);
  EXPECT_GT(c.committed, 0u);  // after the script: every transaction commits
  EXPECT_EQ(c.started, c.committed + c.aborted());
}

}  // namespace
