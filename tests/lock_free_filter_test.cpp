// The lock-free cuckoo filter: load factor, growth, the relocation hammer (readers must never
// miss a resident key while writers force migrations), a thread stalled in the middle of a
// migration K-CAS while the others keep completing operations, and linearizability.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "batched_operations.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "concurrent_churn.hpp"
#include "linearizability.hpp"
#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

using ccf::Status;
using ccf::testing::member_keys;
using Filter = ccf::LockFreeCuckooFilter<12>;

Filter::Options fixed_size() {
  return {.filter = {}, .grow = false};
}

TEST(LockFreeFilter, FillsAsFullAsTheSequentialFilter) {
  const std::size_t capacity = ccf::testing::scaled<std::size_t>(1 << 20, 16);
  Filter filter(capacity, fixed_size());
  const auto keys = member_keys(2 * capacity, 71);
  std::size_t stored = 0;
  while (filter.insert(keys[stored]) == Status::kOk) ++stored;
  EXPECT_GE(filter.load_factor(), 0.95);
  EXPECT_EQ(filter.size(), stored);
  EXPECT_EQ(filter.levels(), 1u);
  std::size_t missing = 0;
  for (std::size_t i = 0; i < stored; ++i) missing += !filter.contains(keys[i]);
  EXPECT_EQ(missing, 0u);
  for (std::size_t i = 0; i < stored; i += 2) ASSERT_EQ(filter.erase(keys[i]), Status::kOk);
  for (std::size_t i = 1; i < stored; i += 2) ASSERT_TRUE(filter.contains(keys[i]));
  EXPECT_EQ(filter.size(), stored - (stored + 1) / 2);
  EXPECT_GT(filter.migrations(), 0u);
}

TEST(LockFreeFilter, BatchedInsertsFillAsFullAsSingleOnes) {
  Filter filter(1 << 16, fixed_size());
  ccf::testing::expect_batched_inserts_fill(filter, member_keys(1 << 17, 72));
  EXPECT_EQ(filter.levels(), 1u);
}

TEST(LockFreeFilter, GrowsInsteadOfFilling) {
  Filter filter(1 << 12);
  const auto keys = member_keys(1 << 14, 73);
  // The first half one by one, the rest batched: batched inserts grow the filter too.
  const std::size_t half = keys.size() / 2;
  for (std::size_t i = 0; i < half; ++i) ASSERT_EQ(filter.insert(keys[i]), Status::kOk);
  const std::size_t levels_before = filter.levels();
  EXPECT_GE(levels_before, 2u);
  EXPECT_EQ(filter.insert_many(std::span<const std::uint64_t>(keys).subspan(half)), half);
  EXPECT_GT(filter.levels(), levels_before);
  EXPECT_GE(filter.levels(), 3u);
  for (const auto key : keys) ASSERT_TRUE(filter.contains(key));
  // Batched lookups consult the grown levels too.
  std::vector<std::uint64_t> probes = keys;
  const auto others = ccf::testing::non_member_keys(1 << 14, 73);
  probes.insert(probes.end(), others.begin(), others.end());
  ccf::testing::expect_batched_lookups_agree(filter, probes, keys.size());
  for (const auto key : keys) ASSERT_EQ(filter.erase(key), Status::kOk);
  EXPECT_EQ(filter.size(), 0u);
  EXPECT_EQ(filter.erase(keys[0]), Status::kNotFound);
}

TEST(LockFreeFilter, EraseOfAbsentKeyIsReported) {
  Filter filter(1000);
  EXPECT_EQ(filter.erase(std::uint64_t{5}), Status::kNotFound);
  ASSERT_EQ(filter.insert(std::uint64_t{5}), Status::kOk);
  ASSERT_EQ(filter.insert(std::uint64_t{5}), Status::kOk);  // two copies
  EXPECT_EQ(filter.erase(std::uint64_t{5}), Status::kOk);
  EXPECT_TRUE(filter.contains(std::uint64_t{5}));
  EXPECT_EQ(filter.erase(std::uint64_t{5}), Status::kOk);
  EXPECT_FALSE(filter.contains(std::uint64_t{5}));
}

// Fill to about 95% of the slots, then churn the last few percent: almost every insert needs a
// migration, and readers check the resident keys all along.
void hammer(unsigned readers, unsigned writers, std::uint64_t min_lookups) {
  constexpr std::size_t kCapacity = 1 << 14;
  Filter filter(kCapacity, {.filter = {.max_load = 1.0}, .grow = false});
  // Migrations of the churn, not of the fill before it: those ran while readers looked up.
  std::uint64_t migrations_before = 0;
  const std::uint64_t lookups = ccf::testing::churn(
      filter, {kCapacity, 0.90, 0.10, readers, writers, ccf::testing::scaled(400'000, 20),
               min_lookups, true, [&] { migrations_before = filter.migrations(); }});
  EXPECT_GT(filter.migrations() - migrations_before, 1000u);
  std::printf(
      "hammer: %u readers, %u writers: %llu lookups of resident keys during relocation, "
      "%llu migrations (%llu in the fill before), %llu restarts; misses counted as failures "
      "above\n",
      readers, writers, static_cast<unsigned long long>(lookups),
      static_cast<unsigned long long>(filter.migrations() - migrations_before),
      static_cast<unsigned long long>(migrations_before),
      static_cast<unsigned long long>(filter.restarts()));
}

constexpr std::uint64_t kHammerLookups = ccf::testing::scaled<std::uint64_t>(10'000'000, 50);
TEST(LockFreeHammer, TwoThreads) {
  hammer(1, 1, kHammerLookups);
}
TEST(LockFreeHammer, EightThreadsOnTwoCores) {
  hammer(4, 4, kHammerLookups);
}
// The soak run, not part of CI (docs/benchmarks.md reports one):
//   CCF_SOAK_LOOKUPS=2000000000 build/release/tests/lock_free_filter_test --gtest_filter='*Soak'
TEST(LockFreeHammer, Soak) {
  const char* lookups = std::getenv("CCF_SOAK_LOOKUPS");
  if (lookups == nullptr) GTEST_SKIP() << "set CCF_SOAK_LOOKUPS to the lookups to run";
  hammer(4, 4, std::stoull(lookups));
}

// A hook that parks the first K-CAS of one chosen thread right after it installed its
// descriptor in the first word, until released.
struct StallControl {
  std::atomic<std::thread::id> victim{};
  std::atomic<bool> stalled{false};
  std::atomic<bool> release{false};
};
struct StallHook {
  static constexpr bool kEnabled = true;
  StallControl* control = nullptr;
  void operator()(const ccf::lockfree::KcasHookEvent& event) const {
    if (event.point != ccf::lockfree::KcasHookPoint::kAfterInstall || event.helping) return;
    if (control->victim.load() != std::this_thread::get_id()) return;
    if (control->stalled.exchange(true)) return;  // only once
    while (!control->release.load()) std::this_thread::yield();
  }
};

TEST(LockFreeStall, OthersCompleteWhileAThreadIsStoppedInsideAMigration) {
  using Stallable = ccf::LockFreeCuckooFilter<12, ccf::lockfree::KcasStats, StallHook>;
  StallControl control;
  constexpr std::size_t kCapacity = 1 << 13;
  Stallable filter(kCapacity, {.filter = {.max_load = 1.0}, .grow = false}, StallHook{&control});
  const auto resident = member_keys(kCapacity * 9 / 10, 81);
  for (const auto key : resident) ASSERT_EQ(filter.insert(key), Status::kOk);

  // The victim inserts until one of its inserts migrates (and so stops in the hook); only a
  // migration's K-CAS reaches the hook (a plain insert is a single-word cas).
  std::vector<std::uint64_t> victim_stored;
  std::jthread victim([&] {
    control.victim.store(std::this_thread::get_id());
    const auto extra = member_keys(kCapacity, 82);
    for (const auto key : extra) {
      if (filter.insert(key) == Status::kFull) continue;
      victim_stored.push_back(key);
      if (control.release.load()) break;
    }
  });
  while (!control.stalled.load()) std::this_thread::yield();

  // While it is stopped, others complete operations, including ones that must help (or get
  // past) its half-installed K-CAS.
  std::atomic<std::uint64_t> completed{0}, inserted{0};
  {
    std::vector<std::jthread> others;
    for (unsigned t = 0; t < 3; ++t) {
      others.emplace_back([&, t] {
        const auto mine = member_keys(kCapacity / 20, 90 + t);
        for (int round = 0; round < 20; ++round) {
          for (const auto key : mine) {
            if (filter.insert(key) == Status::kOk) {
              inserted.fetch_add(1);
              ASSERT_TRUE(filter.contains(key));
              ASSERT_EQ(filter.erase(key), Status::kOk);
            }
            completed.fetch_add(2);
          }
          for (std::size_t i = t; i < resident.size(); i += 3) {
            ASSERT_TRUE(filter.contains(resident[i]));
            completed.fetch_add(1);
          }
        }
      });
    }
  }
  // The victim is still parked (release comes only below): every operation of the others ran
  // beside its half-installed K-CAS, and their inserts found room, not only kFull.
  EXPECT_GT(completed.load(), 100'000u);
  EXPECT_GT(inserted.load(), 0u);
  // Others met the half-installed descriptor and completed it for the stopped thread.
  EXPECT_GT(filter.kcas().stats().helps.load(), 0u);
  control.release.store(true);
  victim.join();
  // Nothing was lost: the resident keys and every key the victim stored are found, and the
  // count is exact (the others erased all they inserted).
  for (const auto key : resident) ASSERT_TRUE(filter.contains(key));
  ASSERT_FALSE(victim_stored.empty());
  for (const auto key : victim_stored) ASSERT_TRUE(filter.contains(key));
  EXPECT_EQ(filter.size(), resident.size() + victim_stored.size());
}

// Between operations the table holds plain values: a K-CAS's last member restores its words
// before it returns (lockfree/kcas.hpp). So a lookup of a table that writers churned and left
// reads no descriptor and runs no locked instruction (read() pins only on a reference) -- the
// case that ran at 0.25x the striped filter's lookups when words kept their descriptors until
// reclamation, which lookups alone never run.
TEST(LockFreeQuiescent, LookupsAfterAChurnByThreadsThatExitedReadNoDescriptor) {
  using Counted = ccf::LockFreeCuckooFilter<8, ccf::lockfree::KcasStats>;
  constexpr std::size_t kCapacity = 4 << 12;  // 2^12 buckets: the in-cache case
  Counted filter(kCapacity, {.filter = {}, .grow = false});
  const auto keys = member_keys(kCapacity, 77);
  std::size_t stored = 0;
  std::thread([&] {  // to 90%: every re-insert below then finds room
    while (filter.load_factor() < 0.9) ASSERT_EQ(filter.insert(keys[stored++]), Status::kOk);
  })
      .join();
  // Erase and re-insert half the keys, from two threads that then exit (disjoint halves).
  std::vector<std::thread> churn;
  for (std::size_t t = 0; t < 2; ++t) {
    churn.emplace_back([&, t] {
      for (std::size_t i = t; i < stored; i += 4) ASSERT_EQ(filter.erase(keys[i]), Status::kOk);
      for (std::size_t i = t; i < stored; i += 4) ASSERT_EQ(filter.insert(keys[i]), Status::kOk);
    });
  }
  for (std::thread& t : churn) t.join();
  const auto& stats = filter.kcas().stats();
  ASSERT_GT(stats.kcas_calls.load(), stored / 4) << "the churn ran erase K-CAS operations";
  ASSERT_GT(filter.migrations(), 0u) << "and migration K-CAS operations";
  // Two threads on disjoint keys still share stripe counters: one may write over a descriptor
  // of the other that is decided but not yet left (or that it is helping), and its descriptor
  // then waits; a wait not over when it closes (the other thread pinned) leaves its words to
  // finalization. Every other descriptor was restored by its last member.
  const std::uint64_t through_before = stats.reads_through_descriptor.load();
  std::size_t missing = 0;
  for (std::size_t i = 0; i < stored; ++i) missing += !filter.contains(keys[i]);
  EXPECT_EQ(missing, 0u);
  // Only the words of descriptors left to finalization may still hold one.
  if (stats.left_to_finalization.load() == 0) {
    EXPECT_EQ(stats.reads_through_descriptor.load(), through_before)
        << "a lookup of the quiescent table read through a descriptor";
  }
}

// One writer at a time: no descriptor is ever left behind, so no read ever meets one.
TEST(LockFreeQuiescent, ASingleWriterLeavesOnlyPayloads) {
  using Counted = ccf::LockFreeCuckooFilter<12, ccf::lockfree::KcasStats>;
  Counted filter(1 << 12);  // grows
  const auto keys = member_keys(1 << 14, 78);
  for (std::uint64_t key : keys) ASSERT_EQ(filter.insert(key), Status::kOk);
  ASSERT_GT(filter.levels(), 1u);
  for (std::size_t i = 0; i < keys.size(); i += 2) ASSERT_EQ(filter.erase(keys[i]), Status::kOk);
  for (std::size_t i = 1; i < keys.size(); i += 2) ASSERT_TRUE(filter.contains(keys[i]));
  const auto& stats = filter.kcas().stats();
  EXPECT_GT(stats.kcas_calls.load(), keys.size() / 2);
  EXPECT_EQ(stats.left_to_finalization.load(), 0u);
  EXPECT_EQ(stats.cas_over_descriptor.load(), 0u);
  EXPECT_EQ(stats.reads_through_descriptor.load(), 0u);
}

TEST(LockFreeLinearizability, SmallHistoriesAreLinearizable) {
  ccf::testing::check_small_histories([] { return std::make_unique<Filter>(64); },
                                      ccf::testing::scaled(2000, 5));
}

}  // namespace
