// sync::SeqStripes' guards: a RangeGuard that does not wait takes its stripes only when each is
// free and holds none when it fails; one that waits excludes every Guard of its stripes; a read
// that overlaps a writer retries.
#include "ccf/sync/seq_stripes.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using ccf::sync::SeqStripes;

// One attempt at bucket b's stripe alone.
bool free_now(const SeqStripes& stripes, std::uint64_t b) {
  return SeqStripes::RangeGuard(stripes, b, 1, /*wait=*/false).owns();
}

TEST(SeqStripes, RangeGuardOfOneStripeTakesItOnlyWhenFree) {
  SeqStripes stripes(64);
  {
    const SeqStripes::RangeGuard first(stripes, 5, 1, /*wait=*/false);
    ASSERT_TRUE(first.owns());
    EXPECT_FALSE(free_now(stripes, 5 + 64));  // bucket 69: stripe 5 again
    EXPECT_TRUE(free_now(stripes, 6));
  }
  EXPECT_TRUE(free_now(stripes, 5));  // released by the guard's end
}

TEST(SeqStripes, RangeGuardThatCannotTakeEveryStripeHoldsNone) {
  SeqStripes stripes(64);
  {
    const SeqStripes::Guard held(stripes, 20);
    const SeqStripes::RangeGuard range(stripes, 16, 16, /*wait=*/false);
    EXPECT_FALSE(range.owns());
    // Stripes 16..19, taken before 20 was found held, were given back.
    for (std::uint64_t b = 16; b < 20; ++b) EXPECT_TRUE(free_now(stripes, b));
  }
  const SeqStripes::RangeGuard range(stripes, 64 + 16, 16, /*wait=*/false);  // stripes 16..31
  ASSERT_TRUE(range.owns());
  for (std::uint64_t b = 16; b < 32; ++b) EXPECT_FALSE(free_now(stripes, b));
  EXPECT_TRUE(free_now(stripes, 15));
  EXPECT_TRUE(free_now(stripes, 32));
}

// A run that wraps around the stripes holds both ends, taking the start of the array first (the
// address order every guard keeps): a busy stripe there is found before any at the end is taken.
TEST(SeqStripes, ARangeGuardThatWrapsAroundHoldsBothEndsInAddressOrder) {
  SeqStripes stripes(64);
  {
    const SeqStripes::RangeGuard range(stripes, 62, 4, /*wait=*/false);  // 62, 63, 0, 1
    ASSERT_TRUE(range.owns());
    for (const std::uint64_t b : {62, 63, 64, 65}) EXPECT_FALSE(free_now(stripes, b)) << b;
    EXPECT_TRUE(free_now(stripes, 61));
    EXPECT_TRUE(free_now(stripes, 66));
  }
  {
    const SeqStripes::Guard held(stripes, 1);
    const SeqStripes::RangeGuard range(stripes, 62, 4, /*wait=*/false);
    EXPECT_FALSE(range.owns());
    for (const std::uint64_t b : {62, 63, 64}) EXPECT_TRUE(free_now(stripes, b)) << b;
  }
  // Waiting wrapped guards and pair guards over the same stripes, 6 threads on 2 cores: guards
  // taken in one order never deadlock, and each excludes the others (no increment lost).
  std::uint64_t counter = 0;  // under stripes 63 and 0
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5'000; ++i) {
        if (t % 2 == 0) {
          const SeqStripes::RangeGuard range(stripes, 63 - i % 3, 3, /*wait=*/true);
          ++counter;
        } else {
          const SeqStripes::Guard pair(stripes, 0, 63);
          ++counter;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter, 6u * 5'000);
}

// Writers increment two counters of a stripe pair under a Guard or under a waiting RangeGuard
// covering both; readers see them equal (an optimistic read validates or retries), and no
// increment is lost. 6 threads on 2 cores.
TEST(SeqStripes, RangeGuardsAndGuardsExcludeEachOther) {
  SeqStripes stripes(64);
  std::atomic<std::uint64_t> a{0}, b{0};  // under the stripes of buckets 16 and 17
  constexpr int kWrites = 20'000;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> torn{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        const auto bump = [&] {
          // Release stores inside the section (SeqStripes' point (2)).
          a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_release);
          b.store(b.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        };
        if ((t + i) % 2 == 0) {
          const SeqStripes::Guard guard(stripes, 16, 17);
          bump();
        } else {
          const SeqStripes::RangeGuard guard(stripes, 16, 16, /*wait=*/true);
          bump();
        }
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        const bool equal = stripes.read(16, 17, [&] {
          const std::uint64_t x = a.load(std::memory_order_acquire);
          return x == b.load(std::memory_order_acquire);
        });
        if (!equal) torn.fetch_add(1);
      }
    });
  }
  for (int t = 0; t < 4; ++t) threads[static_cast<std::size_t>(t)].join();
  stop.store(true);
  for (std::size_t t = 4; t < threads.size(); ++t) threads[t].join();
  EXPECT_EQ(a.load(), 4u * kWrites);
  EXPECT_EQ(b.load(), 4u * kWrites);
  EXPECT_EQ(torn.load(), 0u);
}

}  // namespace
