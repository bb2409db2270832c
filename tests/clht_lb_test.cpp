// What is particular to ClhtLb (include/ccf/tables/clht_lb.hpp): its reserved key, and an
// allocation failure inside an insert. The contract it shares with every table (model, churn
// through resizes, linearizability) is tested in hash_table_contract_test.cpp, its resize in
// table_resize_test.cpp.
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

// Allocations fail when armed, without exhausting the heap: over-aligned ones (an overflow
// bucket from the heap, alignas(64), once the table's pool is used up) and the others (among
// them a resize's new table). An allowance of n: that many more succeed, then every one fails
// until it is reset to kUnlimited.
namespace {
constexpr long kUnlimited = -1;
std::atomic<long> aligned_news_allowed{kUnlimited};
std::atomic<long> plain_news_allowed{kUnlimited};

bool fails(std::atomic<long>& allowance) {
  long allowed = allowance.load();
  while (allowed != kUnlimited) {
    if (allowed == 0) return true;
    if (allowance.compare_exchange_weak(allowed, allowed - 1)) return false;
  }
  return false;
}

// Arms both allowances for its lifetime.
class FailingAllocations {
 public:
  FailingAllocations(long plain, long aligned) {
    plain_news_allowed.store(plain);
    aligned_news_allowed.store(aligned);
  }
  ~FailingAllocations() {
    plain_news_allowed.store(kUnlimited);
    aligned_news_allowed.store(kUnlimited);
  }
  FailingAllocations(const FailingAllocations&) = delete;
  FailingAllocations& operator=(const FailingAllocations&) = delete;
};
}  // namespace

void* operator new(std::size_t size) {
  if (fails(plain_news_allowed)) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Out of line, so that GCC does not see free() inlined into a delete of new's memory and take
// it for a mismatched pair (-Wmismatched-new-delete): the pairs here are malloc and free (and
// aligned_alloc and free).
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  if (fails(aligned_news_allowed)) throw std::bad_alloc();
  const auto align = static_cast<std::size_t>(alignment);
  if (void* p = std::aligned_alloc(align, (size + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
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

// Inserts of keys [first, last] (value key * 7), all kOk, with every resize failing: chains
// grow instead (a resize's new table cannot be allocated; heap buckets can).
void insert_without_resizes(ClhtLb& table, std::uint64_t first, std::uint64_t last) {
  for (std::uint64_t key = first; key <= last; ++key) {
    Status status;
    {
      const FailingAllocations no_new_tables(0, kUnlimited);
      status = table.insert(key, key * 7);
    }
    ASSERT_EQ(status, Status::kOk) << key;
  }
}

// An insert that must chain a bucket once the table's overflow pool is used up, and cannot
// allocate it, throws std::bad_alloc, changes nothing, and leaves the chain's lock free: the
// heap bucket is allocated outside the section.
TEST(ClhtLb, AFailedAllocationLeavesNoLockHeld) {
  ClhtLb table(3);  // one head bucket, a pool of one overflow bucket
  ASSERT_EQ(table.bucket_count(), 1u);
  insert_without_resizes(table, 1, 6);  // the head and the pool's bucket
  ASSERT_EQ(table.bucket_count(), 1u);
  bool threw = false;
  {
    const FailingAllocations none(0, 0);
    try {
      static_cast<void>(table.insert(7, 49));
    } catch (const std::bad_alloc&) {
      threw = true;
    }
  }
  EXPECT_TRUE(threw);
  EXPECT_EQ(table.find(7), std::nullopt);
  EXPECT_EQ(table.size(), 6u);
  // Were the head's lock still held, this insert would spin for good.
  ASSERT_TRUE(finishes_in_time([&] { EXPECT_EQ(table.insert(7, 49), Status::kOk); }))
      << "the insert after the failed one did not finish: the head's lock was left held";
  EXPECT_EQ(table.find(7), 49u);
  EXPECT_EQ(table.size(), 7u);
}

// Whether every key of [1, n] maps to its value (key * 7) and an erase and re-insert of each
// finishes in bounded time, on another thread: a head left locked would hold its chain's
// updates for good.
void expect_every_key_updatable(ClhtLb& table, std::uint64_t n) {
  for (std::uint64_t key = 1; key <= n; ++key) ASSERT_EQ(table.find(key), key * 7) << key;
  ASSERT_TRUE(finishes_in_time([&] {
    for (std::uint64_t key = 1; key <= n; ++key) {
      EXPECT_EQ(table.erase(key), Status::kOk);
      EXPECT_EQ(table.insert(key, key * 7), Status::kOk);
    }
  })) << "updates after a failed resize did not finish: a head was left locked";
  EXPECT_EQ(table.size(), n);
}

// A resize whose copy cannot allocate an overflow bucket (reserve() here) throws std::bad_alloc
// and loses nothing: the table stays current (same buckets, no resize counted) with every item
// and every chain open to updates; the migration it began goes on with those updates, and a
// later reserve() completes it. The copy needs heap buckets: 600 items in 20 heads need about
// 180 overflow buckets, and the new table's pool has 20.
TEST(ClhtLb, AResizeThatCannotAllocateLosesNothing) {
  constexpr std::uint64_t kItems = 600;
  ClhtLb table(30);  // 10 heads
  insert_without_resizes(table, 1, kItems);
  const std::size_t buckets = table.bucket_count();
  ASSERT_EQ(buckets, 10u);
  const std::uint64_t resizes = table.resizes();
  bool threw = false;
  {
    const FailingAllocations copy_fails(kUnlimited, 5);  // the migration, then 4 heap buckets
    try {
      table.reserve(60);  // 20 heads
    } catch (const std::bad_alloc&) {
      threw = true;
    }
  }
  EXPECT_TRUE(threw);
  EXPECT_EQ(table.bucket_count(), buckets);
  EXPECT_EQ(table.resizes(), resizes);
  EXPECT_TRUE(table.resizing());
  expect_every_key_updatable(table, kItems);
  table.reserve(60);  // with memory, the same resize completes
  EXPECT_GT(table.bucket_count(), buckets);
  EXPECT_FALSE(table.resizing());
  expect_every_key_updatable(table, kItems);
}

// An insert whose resize cannot allocate is kOk: the item is stored and the table stays as it
// was, its chains growing, until a later resize finds memory.
TEST(ClhtLb, AnInsertWhoseResizeCannotAllocateStillStoresItsItem) {
  constexpr std::uint64_t kItems = 900;
  ClhtLb table(300);  // 100 heads: resizes once past 300 items
  const std::size_t buckets = table.bucket_count();
  insert_without_resizes(table, 1, kItems);
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
