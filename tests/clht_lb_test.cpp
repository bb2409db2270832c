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

// Over-aligned allocations (a bucket is alignas(64)) fail once when armed: an allocation failure
// inside an insert, without exhausting the heap.
namespace {
std::atomic<bool> fail_next_aligned_new{false};
}  // namespace

void* operator new(std::size_t size, std::align_val_t alignment) {
  if (fail_next_aligned_new.exchange(false)) throw std::bad_alloc();
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

// An insert that must chain a bucket and cannot allocate it throws std::bad_alloc, changes
// nothing, and leaves the chain's lock free: the bucket is allocated outside the section.
TEST(ClhtLb, AFailedAllocationLeavesNoLockHeld) {
  ClhtLb table(3);  // one head bucket
  ASSERT_EQ(table.bucket_count(), 1u);
  for (std::uint64_t key = 1; key <= 3; ++key) ASSERT_EQ(table.insert(key, key), Status::kOk);
  fail_next_aligned_new.store(true);
  EXPECT_THROW(static_cast<void>(table.insert(4, 40)), std::bad_alloc);
  fail_next_aligned_new.store(false);
  EXPECT_EQ(table.find(4), std::nullopt);
  EXPECT_EQ(table.size(), 3u);
  // Were the head's lock still held, this insert would spin for good: bounded wait.
  std::atomic<bool> done{false};
  std::thread inserter([&] {
    EXPECT_EQ(table.insert(4, 40), Status::kOk);
    done.store(true);
  });
  for (int i = 0; i < 500 && !done.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!done.load()) {
    inserter.detach();
    FAIL() << "the insert after the failed one did not finish: the head's lock was left held";
  }
  inserter.join();
  EXPECT_EQ(table.find(4), 40u);
  EXPECT_EQ(table.size(), 4u);
}

}  // namespace
