// PhaseFairLock: the phase-fair reader-writer ticket lock (PF-T) of Brandenburg and Anderson,
// "Spin-Based Reader-Writer Synchronization for Multiprocessor Real-Time Systems" (Real-Time
// Systems 46(1), 2010). Readers and writers take turns by phase: a reader that arrives while a
// writer holds or waits for the lock enters right after that one writer, with every other
// reader that arrived meanwhile; a writer waits only for the readers already inside and for the
// writers ahead of it in ticket order. So neither side starves, and a reader waits for at most
// one writer's critical section. ReaderWriterLock (writer-preferring) lets a stream of writers
// keep readers out indefinitely; this lock is the default where readers and writers mix.
//
//   rin   [ readers entered (units of kReader) | PRES | PHID ]   a writer's bits in the low byte
//   rout  [ readers left    (units of kReader) | 0 ]
//   win, wout                                                     writer tickets
//
// Protocol (all RMWs and spin loads seq_cst unless marked; every field on its own line):
//   reader:  w = fetch_add(rin, kReader) & kWriterBits (P1); if w != 0, spin until rin's writer
//            bits differ from w (P2): that writer has left. unlock: fetch_add(rout, kReader) (P3).
//   writer:  t = fetch_add(win, 1); spin until wout == t (P4); r = fetch_add(rin, PRES | (t & 1))
//            (P5): new readers now wait; spin until rout == r, masked to the reader count (P6):
//            the readers that entered before P5 have left. unlock: fetch_and(rin, ~kWriterBits)
//            (P7) lets the waiting readers in; wout = t + 1 (P8) admits the next writer.
// The phase bit (PHID) makes consecutive writers' bits differ, so a reader blocked by one
// writer is released even if the next writer sets its bits before the reader looks again.
// Counters wrap harmlessly: only equality of values taken mod 2^32 is ever tested, and at most
// 2^24 readers are inside or waiting at once.
//
// is_locked() and has_readers() are the subscriptions of HTM lock elision (htm.hpp), as for
// ReaderWriterLock. Progress: blocking (a spin lock), FIFO among writers. Not recursive.
#pragma once

#include <atomic>
#include <cstdint>

#include "ccf/sync/spin_wait.hpp"

namespace ccf::sync {

class PhaseFairLock {
 public:
  void lock_shared() noexcept {
    const std::uint32_t w = rin_.value.fetch_add(kReader) & kWriterBits;  // (P1)
    if (w == 0) return;
    SpinWait wait;
    while ((rin_.value.load() & kWriterBits) == w) wait.wait();  // (P2)
  }

  // Enters only if no writer holds or waits for the lock (a CAS, so that a refusal leaves no
  // trace a writer could count).
  bool try_lock_shared() noexcept {
    std::uint32_t r = rin_.value.load();
    while ((r & kWriterBits) == 0) {
      if (rin_.value.compare_exchange_weak(r, r + kReader)) return true;  // (P1)
    }
    return false;
  }

  void unlock_shared() noexcept { rout_.value.fetch_add(kReader); }  // (P3)

  void lock() noexcept {
    const std::uint32_t ticket = win_.value.fetch_add(1);
    SpinWait wait;
    while (wout_.value.load() != ticket) wait.wait();  // (P4)
    enter_as_writer(ticket);
  }

  // Succeeds only if the lock is free: no writer holds or waits, no reader is inside.
  bool try_lock() noexcept {
    std::uint32_t ticket = wout_.value.load();
    if (!win_.value.compare_exchange_strong(ticket, ticket + 1)) return false;  // not our turn
    const std::uint32_t entered = rin_.value.fetch_add(writer_bits(ticket));    // (P5)
    if (((rout_.value.load() ^ entered) & kReaderMask) == 0) return true;       // (P6)
    unlock();  // readers inside: give the turn back as if we had held the lock
    return false;
  }

  void unlock() noexcept {
    rin_.value.fetch_and(~kWriterBits);  // (P7) the readers that waited for us go in
    // (P8) release: the critical section happens-before the next writer's (P4).
    wout_.value.store(wout_.value.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // A writer holds the lock or waits for it.
  bool is_locked() const noexcept {
    return (rin_.value.load() & kWriterBits) != 0 || win_.value.load() != wout_.value.load();
  }

  // A reader is inside (or waits for a writer's phase to end).
  bool has_readers() const noexcept {
    return ((rin_.value.load() ^ rout_.value.load()) & kReaderMask) != 0;
  }

 private:
  static constexpr std::uint32_t kPhase = 0x1;    // PHID: the writer's ticket parity
  static constexpr std::uint32_t kPresent = 0x2;  // PRES: a writer holds or drains readers
  static constexpr std::uint32_t kWriterBits = kPhase | kPresent;
  static constexpr std::uint32_t kReader = 0x100;
  static constexpr std::uint32_t kReaderMask = ~std::uint32_t{0xff};

  static constexpr std::uint32_t writer_bits(std::uint32_t ticket) noexcept {
    return kPresent | (ticket & kPhase);
  }

  void enter_as_writer(std::uint32_t ticket) noexcept {
    const std::uint32_t entered = rin_.value.fetch_add(writer_bits(ticket));  // (P5)
    SpinWait wait;
    while (((rout_.value.load() ^ entered) & kReaderMask) != 0) wait.wait();  // (P6)
  }

  CacheLinePadded<std::atomic<std::uint32_t>> rin_;
  CacheLinePadded<std::atomic<std::uint32_t>> rout_;
  CacheLinePadded<std::atomic<std::uint32_t>> win_;
  CacheLinePadded<std::atomic<std::uint32_t>> wout_;
};

}  // namespace ccf::sync
