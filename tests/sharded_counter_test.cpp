// ShardedCounter: threads own their slots (plain load + store adds), hand them back at exit,
// and threads beyond the owned slots share one slot; the sum is exact once they are joined.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <ccf/detail/sharded_counter.hpp>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "sanitizer_scale.hpp"

namespace {

using ccf::detail::CounterSlots;
using ccf::detail::ShardedCounter;

TEST(ShardedCounter, SumsAddsOfMoreThreadsThanOwnedSlotsExactly) {
  // More threads alive at once than owned slots: some must share the shared slot.
  constexpr unsigned kThreads = CounterSlots::kOwnedSlots + 16;
  const std::int64_t adds = ccf::testing::scaled<std::int64_t>(20000, 20);
  ShardedCounter counter;
  std::atomic<unsigned> started{0};
  std::vector<unsigned> slots(kThreads);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      slots[t] = CounterSlots::mine();
      started.fetch_add(1);
      while (started.load() < kThreads) std::this_thread::yield();  // all alive together
      for (std::int64_t i = 0; i < adds; ++i) counter.add(i % 3 == 2 ? -1 : 1);
    });
  }
  for (std::thread& t : threads) t.join();
  std::int64_t expected_per_thread = 0;
  for (std::int64_t i = 0; i < adds; ++i) expected_per_thread += i % 3 == 2 ? -1 : 1;
  EXPECT_EQ(counter.value(), expected_per_thread * kThreads);

  // Owned slots were never given to two live threads at once.
  std::multiset<unsigned> owned;
  for (const unsigned s : slots) {
    if (s != CounterSlots::kSharedSlot) owned.insert(s);
  }
  for (const unsigned s : owned) EXPECT_EQ(owned.count(s), 1u) << "slot " << s;
  EXPECT_GE(std::count(slots.begin(), slots.end(), CounterSlots::kSharedSlot), 16);
}

TEST(ShardedCounter, SlotsHandedBackAtThreadExitCarryTheirCountsOn) {
  // Waves of short-lived threads: each wave reuses the slots the previous one handed back and
  // continues their values with plain stores; nothing is lost between owners.
  ShardedCounter counter;
  const int waves = static_cast<int>(ccf::testing::scaled(200, 10));
  for (int wave = 0; wave < waves; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 100; ++i) counter.add(1);
        EXPECT_NE(CounterSlots::mine(), CounterSlots::kSharedSlot);  // few threads: all own one
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(counter.value(), static_cast<std::int64_t>(wave + 1) * 400);
  }
}

}  // namespace
