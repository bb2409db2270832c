// What is particular to ClhtLf (include/ccf/tables/clht_lf.hpp): keys that all hash into one
// chain (a degenerate hash must neither livelock nor grow the table without end, as the
// reference design's single-bucket resize does, and a full chain must survive racing copies,
// L2/L6), the race between inserts of one key into one chain, and its reserved key. The
// contract it shares with every table (model, churn through resizes, linearizability) is
// tested in hash_table_contract_test.cpp, its cooperative resize in table_resize_test.cpp.
#include "ccf/tables/clht_lf.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sanitizer_scale.hpp"
#include "test_keys.hpp"

namespace {

using ccf::ClhtLf;
using ccf::Status;

// Keys whose hashes are 1, 2, 3, ...: their high bits are 0, so all land in head bucket 0.
std::uint64_t colliding_key(std::uint64_t i) {
  return ccf::testing::unmix64(i + 1);
}

TEST(ClhtLf, OneChainFillsToItsLimitThenRefusesWithoutGrowing) {
  ClhtLf table(1000);
  const std::size_t buckets = table.bucket_count();
  constexpr std::uint64_t kChainSlots = ClhtLf::kSlots * ClhtLf::kMaxChain;
  for (std::uint64_t i = 0; i < kChainSlots; ++i) {
    ASSERT_EQ(table.insert(colliding_key(i), i), Status::kOk) << i;
  }
  for (std::uint64_t i = kChainSlots; i < kChainSlots + 10; ++i) {
    EXPECT_EQ(table.insert(colliding_key(i), i), Status::kFull) << i;
    EXPECT_EQ(table.insert_or_assign(colliding_key(i), i), Status::kFull) << i;
  }
  EXPECT_EQ(table.insert(colliding_key(3), 99), Status::kExists);
  EXPECT_EQ(table.bucket_count(), buckets) << "one full chain must not resize the table";
  EXPECT_EQ(table.resizes(), 0u);
  EXPECT_EQ(table.size(), kChainSlots);
  for (std::uint64_t i = 0; i < kChainSlots; ++i) ASSERT_EQ(table.find(colliding_key(i)), i);
  // Erasing makes room in the chain again; an assign of a present key needs a free slot too.
  ASSERT_EQ(table.erase(colliding_key(5)), Status::kOk);
  EXPECT_EQ(table.insert_or_assign(colliding_key(7), 700), Status::kExists);
  EXPECT_EQ(table.find(colliding_key(7)), 700u);
  EXPECT_EQ(table.insert(colliding_key(kChainSlots), 1), Status::kOk);
  EXPECT_EQ(table.size(), kChainSlots);
}

// Threads insert, assign and erase the same few keys of one chain at once. A key valid in two
// slots would show as a size above the keys present, or survive its erase.
TEST(ClhtLf, RacingInsertsOfOneKeyNeverDuplicateIt) {
  constexpr unsigned kThreads = 8;  // on 2 cores
  constexpr std::uint64_t kKeys = 4;
  const std::uint64_t rounds = ccf::testing::scaled<std::uint64_t>(40'000, 10);
  ClhtLf table(64);
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < rounds; ++i) {
        const std::uint64_t key = colliding_key((i * 7 + t) % kKeys);
        switch ((i + t) % 4) {
          case 0:
            table.insert(key, key ^ i);
            break;
          case 1:
            table.insert_or_assign(key, key ^ i);
            break;
          case 2:
            table.erase(key);
            break;
          default:
            if (const auto value = table.find(key); value && (*value ^ key) >= rounds) {
              wrong.fetch_add(1);  // a value that no write of this key stored
            }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0u);
  std::size_t present = 0;
  for (std::uint64_t k = 0; k < kKeys; ++k) {
    const std::uint64_t key = colliding_key(k);
    if (!table.contains(key)) continue;
    ++present;
    ASSERT_EQ(table.erase(key), Status::kOk);
    EXPECT_FALSE(table.contains(key)) << "a second copy survived the erase";
  }
  EXPECT_EQ(table.size(), 0u) << present << " keys were present";
}

// One chain grown to its limit from a one-head table: each resize on the way is begun by an
// insert that found the pool used up. Then threads resize the table many times over while
// others look the keys up: every copy of the full chain (24 pairs into one new chain of 24
// slots) races other copiers, whose reservations may fill the new chain for a moment (L6).
TEST(ClhtLf, AFullChainSurvivesRacingResizes) {
  ClhtLf table(1);
  constexpr std::uint64_t kChainSlots = ClhtLf::kSlots * ClhtLf::kMaxChain;
  for (std::uint64_t i = 0; i < kChainSlots; ++i) {
    ASSERT_EQ(table.insert(colliding_key(i), i), Status::kOk) << i;
  }
  EXPECT_GE(table.resizes(), 1u) << "the pool was meant to run out";
  const std::size_t before = table.bucket_count();
  std::atomic<std::uint64_t> wrong{0};
  std::atomic<bool> resizing_done{false};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {  // 4 resizers and 4 readers on 2 cores
    threads.emplace_back([&] { table.reserve(3 * before << 10); });
    threads.emplace_back([&] {
      do {
        for (std::uint64_t i = 0; i < kChainSlots; ++i) {
          if (table.find(colliding_key(i)) != i) wrong.fetch_add(1);
        }
      } while (!resizing_done.load());
    });
  }
  for (unsigned t = 0; t < threads.size(); t += 2) threads[t].join();
  resizing_done.store(true);
  for (unsigned t = 1; t < threads.size(); t += 2) threads[t].join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_GE(table.bucket_count(), before << 10);
  EXPECT_EQ(table.size(), kChainSlots);
  for (std::uint64_t i = 0; i < kChainSlots; ++i) ASSERT_EQ(table.find(colliding_key(i)), i);
  EXPECT_EQ(table.insert(colliding_key(kChainSlots), 1), Status::kFull);
  ASSERT_EQ(table.erase(colliding_key(0)), Status::kOk);
  EXPECT_EQ(table.insert(colliding_key(kChainSlots), 1), Status::kOk);
}

TEST(ClhtLf, ZeroKeyIsRefused) {
  ClhtLf table(4);
  EXPECT_THROW(static_cast<void>(table.insert(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.find(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.erase(0)), std::invalid_argument);
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
