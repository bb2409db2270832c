// What is particular to ClhtLb (include/ccf/tables/clht_lb.hpp): its reserved key, and an
// allocation failure inside an insert. The contract it shares with every table (model, churn
// through resizes, linearizability) is tested in hash_table_contract_test.cpp.
#include "ccf/tables/clht_lb.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>

// Over-aligned allocations (a bucket is alignas(64)) fail when armed: an allocation failure
// inside an insert or a resize, without exhausting the heap. aligned_news_allowed: that many more
// succeed, then every one fails until it is reset to kUnlimited.
namespace {
constexpr long kUnlimited = -1;
std::atomic<long> aligned_news_allowed{kUnlimited};

bool aligned_new_fails() {
  long allowed = aligned_news_allowed.load();
  while (allowed != kUnlimited) {
    if (allowed == 0) return true;
    if (aligned_news_allowed.compare_exchange_weak(allowed, allowed - 1)) return false;
  }
  return false;
}
}  // namespace

void* operator new(std::size_t size, std::align_val_t alignment) {
  if (aligned_new_fails()) throw std::bad_alloc();
  const auto align = static_cast<std::size_t>(alignment);
  if (void* p = std::aligned_alloc(align, (size + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

using ccf::ClhtLb;
using ccf::Status;

TEST(ClhtLb, ZeroKeyIsRefused) {
  ClhtLb table(4);
  EXPECT_THROW(static_cast<void>(table.insert(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.insert_or_assign(0, 1)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.find(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.contains(0)), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(table.erase(0)), std::invalid_argument);
  EXPECT_EQ(table.size(), 0u);
}

// Runs `work` on another thread and waits up to 5 s for it to finish. One that does not (an
// update spinning on a lock left held) is detached: the test has failed.
template <class Work>
bool finishes_in_time(Work&& work) {
  std::atomic<bool> done{false};
  std::thread worker([&] {
    work();
    done.store(true);
  });
  for (int i = 0; i < 500 && !done.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!done.load()) {
    worker.detach();
    return false;
  }
  worker.join();
  return true;
}

// An insert that must chain a bucket and cannot allocate it throws std::bad_alloc, changes
// nothing, and leaves the chain's lock free: the bucket is allocated outside the section.
TEST(ClhtLb, AFailedAllocationLeavesNoLockHeld) {
  ClhtLb table(3);  // one head bucket
  ASSERT_EQ(table.bucket_count(), 1u);
  for (std::uint64_t key = 1; key <= 3; ++key) ASSERT_EQ(table.insert(key, key), Status::kOk);
  aligned_news_allowed.store(0);
  EXPECT_THROW(static_cast<void>(table.insert(4, 40)), std::bad_alloc);
  aligned_news_allowed.store(kUnlimited);
  EXPECT_EQ(table.find(4), std::nullopt);
  EXPECT_EQ(table.size(), 3u);
  // Were the head's lock still held, this insert would spin for good.
  ASSERT_TRUE(finishes_in_time([&] { EXPECT_EQ(table.insert(4, 40), Status::kOk); }))
      << "the insert after the failed one did not finish: the head's lock was left held";
  EXPECT_EQ(table.find(4), 40u);
  EXPECT_EQ(table.size(), 4u);
}

// Whether every key of [1, n] maps to its value (key * 7) and an erase and re-insert of each
// finishes in bounded time, on another thread: a head left migrated would hold its chain's
// updates for good.
void expect_every_key_updatable(ClhtLb& table, std::uint64_t n) {
  for (std::uint64_t key = 1; key <= n; ++key) ASSERT_EQ(table.find(key), key * 7) << key;
  ASSERT_TRUE(finishes_in_time([&] {
    for (std::uint64_t key = 1; key <= n; ++key) {
      EXPECT_EQ(table.erase(key), Status::kOk);
      EXPECT_EQ(table.insert(key, key * 7), Status::kOk);
    }
  })) << "updates after a failed resize did not finish: a head was left migrated";
  EXPECT_EQ(table.size(), n);
}

// A resize whose copy cannot allocate an overflow bucket (reserve() here) throws std::bad_alloc
// and leaves the table as it was: same buckets, every item, and every chain open to updates.
TEST(ClhtLb, AResizeThatCannotAllocateChangesNothing) {
  constexpr std::uint64_t kItems = 600;
  ClhtLb table(kItems);  // 200 heads: no resize while filling; doubled, some heads overflow
  for (std::uint64_t key = 1; key <= kItems; ++key) {
    ASSERT_EQ(table.insert(key, key * 7), Status::kOk);
  }
  const std::size_t buckets = table.bucket_count();
  const std::uint64_t resizes = table.resizes();
  aligned_news_allowed.store(0);
  EXPECT_THROW(table.reserve(2 * kItems), std::bad_alloc);
  aligned_news_allowed.store(kUnlimited);
  EXPECT_EQ(table.bucket_count(), buckets);
  EXPECT_EQ(table.resizes(), resizes);
  expect_every_key_updatable(table, kItems);
  table.reserve(2 * kItems);  // with memory, the same resize succeeds
  EXPECT_GT(table.bucket_count(), buckets);
  expect_every_key_updatable(table, kItems);
}

// An insert whose bucket is allocated but whose resize then cannot allocate is kOk: the item is
// stored and the table stays as it was, its chains growing, until a later resize finds memory.
TEST(ClhtLb, AnInsertWhoseResizeCannotAllocateStillStoresItsItem) {
  constexpr std::uint64_t kItems = 900;
  ClhtLb table(300);  // 100 heads: resizes once past 300 items
  const std::size_t buckets = table.bucket_count();
  for (std::uint64_t key = 1; key <= kItems; ++key) {
    aligned_news_allowed.store(1);  // the insert's own bucket, if it needs one; not its resize's
    ASSERT_EQ(table.insert(key, key * 7), Status::kOk) << key;
  }
  aligned_news_allowed.store(kUnlimited);
  EXPECT_EQ(table.bucket_count(), buckets);
  EXPECT_EQ(table.resizes(), 0u);
  EXPECT_EQ(table.size(), kItems);
  expect_every_key_updatable(table, kItems);
  for (std::uint64_t key = kItems + 1; key <= 2 * kItems; ++key) {
    ASSERT_EQ(table.insert(key, key * 7), Status::kOk);
  }
  EXPECT_GT(table.bucket_count(), buckets);  // these inserts' resizes found memory
  expect_every_key_updatable(table, 2 * kItems);
}

}  // namespace
