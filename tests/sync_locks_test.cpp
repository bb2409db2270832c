// The spin locks and the reader-writer lock of ccf/sync: mutual exclusion under contention with
// more threads than cores, try_lock semantics, queue-node handling (nested holds released out of
// order, threads that come and go), and the reader-writer invariants.
//
// The flags that detect overlap are relaxed atomics on purpose: they must not add any ordering,
// so that the plain (non-atomic) counters are protected by the lock alone and ThreadSanitizer
// reports a data race if the lock fails to order two critical sections.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <latch>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "ccf/sync/phase_fair_lock.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "eventually.hpp"

namespace {

using namespace std::chrono_literals;
using ccf::sync::ClhLock;
using ccf::sync::McsLock;
using ccf::sync::PhaseFairLock;
using ccf::sync::ReaderWriterLock;
using ccf::sync::TasLock;
using ccf::sync::TtasLock;

// Starts `threads` threads at once (a latch) and joins them.
void run_threads(unsigned threads, const std::function<void(unsigned)>& body) {
  std::latch start(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (auto& thread : pool) thread.join();
}

using ccf::testing::eventually;

// Section state: a plain counter and a relaxed "inside" flag (see the file comment).
struct Section {
  std::uint64_t count = 0;
  std::atomic<bool> inside{false};
  std::atomic<unsigned> overlaps{0};

  void enter_and_leave() {
    if (inside.exchange(true, std::memory_order_relaxed)) {
      overlaps.fetch_add(1, std::memory_order_relaxed);
    }
    ++count;
    inside.store(false, std::memory_order_relaxed);
  }
};

template <class Lock>
class ExclusiveLockTest : public ::testing::Test {};

using ExclusiveLocks =
    ::testing::Types<TasLock, TtasLock, McsLock, ClhLock, ReaderWriterLock<TtasLock>,
                     ReaderWriterLock<McsLock>, PhaseFairLock>;
TYPED_TEST_SUITE(ExclusiveLockTest, ExclusiveLocks);

TYPED_TEST(ExclusiveLockTest, StateIsAloneOnItsCacheLines) {
  EXPECT_EQ(alignof(TypeParam) % ccf::sync::kCacheLine, 0u);
}

TYPED_TEST(ExclusiveLockTest, MutualExclusionOversubscribed) {
  for (const unsigned threads : {8u, 16u}) {
    TypeParam lock;
    Section section;
    const unsigned iterations = 24000 / threads;
    run_threads(threads, [&](unsigned) {
      for (unsigned i = 0; i < iterations; ++i) {
        std::lock_guard guard(lock);
        section.enter_and_leave();
      }
    });
    EXPECT_EQ(section.count, std::uint64_t{threads} * iterations) << threads << " threads";
    EXPECT_EQ(section.overlaps.load(), 0u) << threads << " threads";
    EXPECT_FALSE(lock.is_locked());
  }
}

TYPED_TEST(ExclusiveLockTest, TryLockUnderContentionExcludes) {
  TypeParam lock;
  Section section;
  constexpr unsigned kThreads = 8, kIterations = 1000;
  run_threads(kThreads, [&](unsigned t) {
    for (unsigned i = 0; i < kIterations; ++i) {
      if ((i + t) % 2 == 0) {
        while (!lock.try_lock()) std::this_thread::yield();
      } else {
        lock.lock();
      }
      section.enter_and_leave();
      lock.unlock();
    }
  });
  EXPECT_EQ(section.count, std::uint64_t{kThreads} * kIterations);
  EXPECT_EQ(section.overlaps.load(), 0u);
}

TYPED_TEST(ExclusiveLockTest, TryLockFailsWhileHeldAndSucceedsWhenFree) {
  TypeParam lock;
  EXPECT_FALSE(lock.is_locked());
  ASSERT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.is_locked());
  bool other_got_it = true;
  std::thread([&] { other_got_it = lock.try_lock(); }).join();
  EXPECT_FALSE(other_got_it);
  lock.unlock();
  EXPECT_FALSE(lock.is_locked());
  std::thread([&] {
    other_got_it = lock.try_lock();
    if (other_got_it) lock.unlock();
  }).join();
  EXPECT_TRUE(other_got_it);
  std::unique_lock guard(lock, std::try_to_lock);
  EXPECT_TRUE(guard.owns_lock());
}

TYPED_TEST(ExclusiveLockTest, LockWaitsForTheHolder) {
  TypeParam lock;
  std::atomic<bool> acquired{false};
  lock.lock();
  std::thread waiter([&] {
    std::lock_guard guard(lock);
    acquired.store(true);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(acquired.load());
  lock.unlock();
  waiter.join();
  EXPECT_TRUE(acquired.load());
}

// Two locks held at once and released in acquisition order (not LIFO): for the queue locks each
// hold needs its own node, and the node of the first release must not be the second's.
TYPED_TEST(ExclusiveLockTest, NestedHoldsReleasedOutOfOrder) {
  TypeParam outer, inner;
  Section outer_section, inner_section;
  constexpr unsigned kThreads = 8, kIterations = 500;
  run_threads(kThreads, [&](unsigned) {
    for (unsigned i = 0; i < kIterations; ++i) {
      outer.lock();
      outer_section.enter_and_leave();
      inner.lock();
      outer.unlock();
      inner_section.enter_and_leave();
      inner.unlock();
    }
  });
  EXPECT_EQ(outer_section.count, std::uint64_t{kThreads} * kIterations);
  EXPECT_EQ(inner_section.count, std::uint64_t{kThreads} * kIterations);
  EXPECT_EQ(outer_section.overlaps.load() + inner_section.overlaps.load(), 0u);
}

// Short-lived threads: queue nodes migrate between threads (CLH) and are freed with the pools
// of exiting threads while the lock lives on (AddressSanitizer checks the lifetimes).
TYPED_TEST(ExclusiveLockTest, ThreadsComeAndGo) {
  TypeParam lock;
  Section section;
  constexpr unsigned kRounds = 6, kThreads = 4, kIterations = 200;
  for (unsigned round = 0; round < kRounds; ++round) {
    run_threads(kThreads, [&](unsigned) {
      for (unsigned i = 0; i < kIterations; ++i) {
        std::lock_guard guard(lock);
        section.enter_and_leave();
      }
    });
  }
  EXPECT_EQ(section.count, std::uint64_t{kRounds} * kThreads * kIterations);
  EXPECT_EQ(section.overlaps.load(), 0u);
}

// ---- ReaderWriterLock ------------------------------------------------------------------------

template <class Lock>
class ReaderWriterLockTest : public ::testing::Test {};

using RwLocks = ::testing::Types<ReaderWriterLock<TtasLock>, ReaderWriterLock<McsLock>,
                                 ReaderWriterLock<ClhLock>, PhaseFairLock>;
TYPED_TEST_SUITE(ReaderWriterLockTest, RwLocks);

// A writer never sees a reader inside, a reader never sees a writer inside, and readers always
// see the two halves of the writers' pair equal.
TYPED_TEST(ReaderWriterLockTest, WritersExcludeReadersAndEachOther) {
  for (const unsigned threads : {8u, 16u}) {
    TypeParam lock;
    std::uint64_t first = 0, second = 0;  // plain: protected by the lock alone
    std::atomic<int> readers_inside{0};
    std::atomic<bool> writer_inside{false};
    std::atomic<unsigned> violations{0};
    const unsigned writers = threads / 4, iterations = 24000 / threads;
    run_threads(threads, [&](unsigned t) {
      for (unsigned i = 0; i < iterations; ++i) {
        if (t < writers) {
          std::unique_lock guard(lock);
          if (writer_inside.exchange(true, std::memory_order_relaxed)) violations++;
          if (readers_inside.load(std::memory_order_relaxed) != 0) violations++;
          ++first;
          ++second;
          writer_inside.store(false, std::memory_order_relaxed);
        } else {
          std::shared_lock guard(lock);
          readers_inside.fetch_add(1, std::memory_order_relaxed);
          if (writer_inside.load(std::memory_order_relaxed)) violations++;
          if (first != second) violations++;
          readers_inside.fetch_sub(1, std::memory_order_relaxed);
        }
      }
    });
    EXPECT_EQ(violations.load(), 0u) << threads << " threads";
    EXPECT_EQ(first, std::uint64_t{writers} * iterations);
    EXPECT_EQ(second, first);
    EXPECT_FALSE(lock.is_locked());
    EXPECT_FALSE(lock.has_readers());
  }
}

// Readers share: two readers meet inside the lock (with an exclusive lock this would hang until
// the deadline and fail).
TYPED_TEST(ReaderWriterLockTest, ReadersShare) {
  TypeParam lock;
  std::atomic<unsigned> inside{0};
  std::atomic<unsigned> met{0};
  run_threads(2, [&](unsigned) {
    std::shared_lock guard(lock);
    inside.fetch_add(1);
    if (eventually([&] { return inside.load() == 2; })) met.fetch_add(1);
  });
  EXPECT_EQ(met.load(), 2u);
}

TYPED_TEST(ReaderWriterLockTest, TryLockSemantics) {
  TypeParam lock;
  ASSERT_TRUE(lock.try_lock_shared());
  EXPECT_TRUE(lock.has_readers());
  EXPECT_FALSE(lock.is_locked());
  bool exclusive = true, shared = false;
  std::thread([&] {
    exclusive = lock.try_lock();
    shared = lock.try_lock_shared();
    if (shared) lock.unlock_shared();
  }).join();
  EXPECT_FALSE(exclusive);  // a reader is inside
  EXPECT_TRUE(shared);      // readers share
  lock.unlock_shared();

  ASSERT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.is_locked());
  std::thread([&] {
    exclusive = lock.try_lock();
    shared = lock.try_lock_shared();
  }).join();
  EXPECT_FALSE(exclusive);
  EXPECT_FALSE(shared);
  lock.unlock();
  EXPECT_FALSE(lock.is_locked());
  EXPECT_FALSE(lock.has_readers());
}

// Once a writer waits for the readers inside to drain, new readers stay out (writer preference,
// or the writer's phase of a phase-fair lock); the writer gets the lock as soon as the old
// readers leave.
TYPED_TEST(ReaderWriterLockTest, WaitingWriterKeepsNewReadersOut) {
  TypeParam lock;
  lock.lock_shared();
  std::atomic<bool> wrote{false};
  std::thread writer([&] {
    std::lock_guard guard(lock);
    wrote.store(true);
  });
  ASSERT_TRUE(eventually([&] { return lock.is_locked(); }));  // the writer announced itself
  bool reader_got_in = true;
  std::thread([&] {
    reader_got_in = lock.try_lock_shared();
    if (reader_got_in) lock.unlock_shared();
  }).join();
  EXPECT_FALSE(reader_got_in);
  EXPECT_FALSE(wrote.load());  // still waiting for the reader inside
  lock.unlock_shared();
  writer.join();
  EXPECT_TRUE(wrote.load());
  EXPECT_TRUE(lock.try_lock_shared());  // readers are welcome again
  lock.unlock_shared();
}

}  // namespace
