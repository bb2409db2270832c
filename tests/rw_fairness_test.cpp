// Phase fairness of PhaseFairLock, checked by handshakes rather than by counting operations in a
// time window (how many lookups a reader completes in 2 s depends on the scheduler, so on a busy
// machine a ratio of throughputs says nothing): a reader that waits for a writer enters before
// the next writer, and a writer that waits for readers enters before the next reader. Both hold
// whatever the scheduling, because the lock's own state says when the waiter has arrived. The
// throughput of one reader against one writer, for this lock and the writer-preferring one, is
// measured by bench/rw_fairness_bench.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>

#include "ccf/concurrent/coarse_cuckoo_filter.hpp"
#include "ccf/sync/htm.hpp"
#include "ccf/sync/phase_fair_lock.hpp"
#include "eventually.hpp"

namespace {

using ccf::sync::PhaseFairLock;

// Where readers and writers mix on one lock by default, the lock is phase-fair.
static_assert(std::is_same_v<ccf::CoarseCuckooFilter<ccf::PackedTable<12, 4>>::policy_type,
                             ccf::CoarseSync<ccf::sync::LockOnly<PhaseFairLock>>>);

using ccf::testing::eventually;

// A writer releases and at once asks again while a reader waits: the reader goes first.
TEST(PhaseFairness, AWaitingReaderEntersBeforeTheNextWriter) {
  for (int round = 0; round < 100; ++round) {
    PhaseFairLock lock;
    std::atomic<bool> reader_was_inside{false};
    lock.lock();
    std::thread reader([&] {
      lock.lock_shared();
      reader_was_inside.store(true);
      lock.unlock_shared();
    });
    // has_readers(): the reader has announced itself (P1) and waits for this writer's phase.
    ASSERT_TRUE(eventually([&] { return lock.has_readers(); }));
    lock.unlock();
    lock.lock();  // waits (P6) for the readers that arrived before it
    EXPECT_TRUE(reader_was_inside.load()) << "round " << round << ": the writer went first";
    lock.unlock();
    reader.join();
  }
}

// A reader releases and at once asks again while a writer waits: the writer goes first.
TEST(PhaseFairness, AWaitingWriterEntersBeforeTheNextReader) {
  for (int round = 0; round < 100; ++round) {
    PhaseFairLock lock;
    std::atomic<bool> writer_was_inside{false};
    lock.lock_shared();
    std::thread writer([&] {
      lock.lock();
      writer_was_inside.store(true);
      lock.unlock();
    });
    // try_lock_shared() refuses once the writer has closed the reader phase (P5) and waits for
    // us (P6); until then it admits us beside ourselves, and we leave again.
    ASSERT_TRUE(eventually([&] {
      if (!lock.try_lock_shared()) return true;
      lock.unlock_shared();
      return false;
    }));
    lock.unlock_shared();
    lock.lock_shared();  // waits (P2) for the writer that arrived before it
    EXPECT_TRUE(writer_was_inside.load()) << "round " << round << ": the reader went first";
    lock.unlock_shared();
    writer.join();
  }
}

}  // namespace
