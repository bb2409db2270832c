// ReaderWriterLock<Mutex>: a writer-preferring reader-writer lock built from any exclusive lock
// and a scalable reader indicator; the "mode 0 / mode 1" lock of the coarse concurrent filter
// (thesis §5.3): lookups are readers, inserts and erases are writers.
//
// Readers never touch a shared line while no writer is around. Each reader registers in ONE of
// kThreadSlots counters, each on its own cache line, chosen by thread_slot(); readers on
// different cores therefore write different lines, and a read-mostly workload scales instead of
// bouncing one reader-count line between cores. Writers pay for this: a writer scans all slots.
//
//   writers_  [ atomic<uint32_t> writers holding or waiting | padding ]        64 B
//   mutex_    [ Mutex (its own line when Mutex is one of spin_locks.hpp) ]
//   readers_  [ slot 0 count | pad ][ slot 1 count | pad ] ... [ slot 63 ]   64 x 64 B
//
// Protocol (a Dekker handshake between writers_ and the reader slots, all four accesses
// seq_cst so that a reader and a writer that race cannot both miss each other):
//   reader: slot += 1 (R1); if writers_ != 0 (R2): slot -= 1, wait until writers_ == 0, retry.
//   writer: writers_ += 1 (W1); Mutex.lock(); wait until every slot == 0 (W2).
//   unlock_shared: slot -= 1 (R3).  unlock: Mutex.unlock(); writers_ -= 1 (W3).
// Writer preference: a writer announces itself (W1) BEFORE queueing on the mutex, so while any
// writer holds or waits for the lock new readers stay out; writers never starve (they wait only
// for the readers already inside), readers can (under a continuous stream of writers).
//
// is_locked() is true while a writer holds or waits for the lock and has_readers() while a reader
// is registered: the subscriptions of HTM lock elision (a speculative reader must conflict with
// writers, a speculative writer with both).
//
// Progress: blocking. Not recursive; a thread must not upgrade a shared hold to exclusive; a
// shared hold must be released by the thread that took it (its count lives in that thread's slot).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "ccf/sync/spin_wait.hpp"

namespace ccf::sync {

template <class Mutex>
class ReaderWriterLock {
 public:
  using mutex_type = Mutex;

  void lock() {
    writers_.value.fetch_add(1, std::memory_order_seq_cst);  // (W1) seq_cst: Dekker with (R2)
    mutex_.lock();
    wait_for_readers();
  }

  bool try_lock() {
    if (writers_.value.load(std::memory_order_relaxed) != 0) return false;  // a hint only
    if (!mutex_.try_lock()) return false;
    writers_.value.fetch_add(1, std::memory_order_seq_cst);  // (W1)
    if (has_readers()) {
      unlock();
      return false;
    }
    return true;
  }

  void unlock() {
    mutex_.unlock();
    // (W3) release: publishes the critical section to readers whose (R2) reads the new count.
    writers_.value.fetch_sub(1, std::memory_order_release);
  }

  // The uncontended case inline (a filter's lookup is a few dozen instructions around it);
  // waiting for a writer out of line.
  [[gnu::always_inline]] void lock_shared() noexcept {
    auto& slot = readers_[thread_slot()].value;
    if (try_register(slot)) [[likely]] {
      return;
    }
    lock_shared_waiting(slot);
  }

  bool try_lock_shared() noexcept { return try_register(readers_[thread_slot()].value); }

  void unlock_shared() noexcept {
    // (R3) release: pairs with a writer's (W2): the reader's reads happen before its writes.
    readers_[thread_slot()].value.fetch_sub(1, std::memory_order_release);
  }

  // A writer holds the lock or waits for it.
  bool is_locked() const noexcept {
    // (W4) acquire: pairs with (W3); a hint outside a transaction, a subscription inside one.
    return writers_.value.load(std::memory_order_acquire) != 0;
  }

  // Some reader holds the lock (or is about to find out that it must back off).
  bool has_readers() const noexcept {
    for (const auto& slot : readers_) {
      // (W2) seq_cst: Dekker with (R1): after (W1), a reader that (R2) missed is seen here.
      if (slot.value.load(std::memory_order_seq_cst) != 0) return true;
    }
    return false;
  }

 private:
  template <class Slot>
  [[gnu::noinline]] void lock_shared_waiting(Slot& slot) noexcept {
    do {
      SpinWait wait;
      // (R4) acquire: pairs with (W3); the loop is only a wait, (R2) decides.
      while (writers_.value.load(std::memory_order_acquire) != 0) wait.wait();
    } while (!try_register(slot));
  }

  using Slot = CacheLinePadded<std::atomic<std::uint32_t>>;

  bool try_register(std::atomic<std::uint32_t>& slot) noexcept {
    slot.fetch_add(1, std::memory_order_seq_cst);  // (R1) seq_cst: Dekker with (W2)
    // (R2) seq_cst: Dekker with (W1); as an acquire it also pairs with (W3).
    if (writers_.value.load(std::memory_order_seq_cst) == 0) return true;
    // Back off: relaxed, nothing was read under the registration.
    slot.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }

  void wait_for_readers() const noexcept {
    SpinWait wait;
    while (has_readers()) wait.wait();
  }

  CacheLinePadded<std::atomic<std::uint32_t>> writers_;
  Mutex mutex_;
  std::array<Slot, kThreadSlots> readers_{};
};

}  // namespace ccf::sync
