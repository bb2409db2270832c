// Spin locks for the lock-based concurrent filters (thesis §5.3.1): TAS, TTAS, MCS and CLH.
//
// Each lock is a BasicLockable + Lockable type (lock / unlock / try_lock, so std::lock_guard,
// std::unique_lock and std::scoped_lock work) plus is_locked(), the read-only probe that HTM lock
// elision uses to subscribe to the lock (htm.hpp): a transaction reads the lock word, so a thread
// that later acquires the lock for real aborts it.
//
//   lock       waiting threads spin on               handoff   fairness   uncontended cost
//   TasLock    the lock word, with exchanges (RFOs)   none      none       1 exchange
//   TtasLock   the lock word, with loads              none      none       1 load + 1 exchange
//   McsLock    their own queue node                   FIFO      FIFO       1 exchange + 1 CAS
//   ClhLock    their predecessor's queue node         FIFO      FIFO       1 exchange + 1 CAS
//
// Memory layout: every lock is alignas(64), its state alone on one cache line:
//
//   TasLock/TtasLock: [ atomic<bool> locked | padding ............................. ]  64 B
//   McsLock/ClhLock:  [ atomic<QueueNode*> tail | QueueNode* holder | padding ...... ]  64 B
//   QueueNode:        [ atomic<QueueNode*> next | atomic<bool> locked | free-list link ]  64 B
//
// Queue nodes. MCS and CLH waiters need a queue node that outlives the lock() call, while the
// lock()/unlock() interface (std::lock_guard) has nowhere to keep it. Each thread therefore owns a
// pool of nodes (a thread_local free list, grown on demand, freed at thread exit); lock() takes a
// node from the calling thread's pool and records it in the lock's `holder` field, which only the
// current holder reads or writes (the handoff orders one holder's accesses before the next's);
// unlock() finds its node there. Any number of threads works, and a thread may hold any number of
// queue locks at once and release them in any order. In MCS a node is back in its owner's pool as
// soon as unlock() returns. In CLH the successor spins on its predecessor's node, so ownership of
// a released node passes to the successor, which puts it into ITS pool once it holds the lock
// (nodes migrate between threads' pools; every node is at any time in exactly one pool or in one
// queue). Both locks keep tail == nullptr when free (CLH borrows this from MCS instead of the
// classic dummy node), which makes is_locked() and try_lock() a single word access that never
// dereferences another thread's node.
//
// Oversubscription: waiters spin through SpinWait (spin_wait.hpp), which yields after a few
// microseconds, so a queue lock handed to a descheduled successor costs a context switch, not a
// time slice.
//
// Progress: blocking. A lock must be released by the thread that acquired it; locks are not
// recursive; a thread must not acquire a queue lock from a thread_local destructor that runs after
// its pool was destroyed.
#pragma once

#include <atomic>
#include <utility>

#include "ccf/sync/spin_wait.hpp"

namespace ccf::sync {

namespace detail {

// What the TAS and TTAS locks share: one flag, taken by an exchange. They differ in how they
// wait for it.
class FlagLockBase {
 public:
  bool try_lock() noexcept {
    // (T1) acquire: pairs with (T2) of the previous holder.
    return !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept {
    // (T2) release: publishes the critical section to the next (T1) / (T3).
    locked_.store(false, std::memory_order_release);
  }
  bool is_locked() const noexcept {
    // (T3) acquire: pairs with (T2); a hint outside a transaction, a subscription inside one.
    return locked_.load(std::memory_order_acquire);
  }

 protected:
  std::atomic<bool> locked_{false};
};

}  // namespace detail

// Test-and-set: every attempt is an exchange, so waiters keep pulling the line in exclusive
// state. The baseline the other locks improve on.
class alignas(kCacheLine) TasLock : public detail::FlagLockBase {
 public:
  void lock() noexcept {
    SpinWait wait;
    while (!try_lock()) wait.wait();
  }
};

// Test-and-test-and-set with exponential backoff: waiters spin on loads (the line stays shared
// in their caches) and try the exchange only when the lock looks free; a failed exchange backs
// off exponentially before looking again.
class alignas(kCacheLine) TtasLock : public detail::FlagLockBase {
 public:
  void lock() noexcept {
    SpinWait wait;
    for (;;) {
      // (T4) relaxed: only a hint that an exchange may succeed; (T1) orders the acquisition.
      if (!locked_.load(std::memory_order_relaxed) && try_lock()) return;
      wait.wait();
    }
  }
};

namespace detail {

struct alignas(kCacheLine) QueueNode {
  std::atomic<QueueNode*> next{nullptr};  // MCS: the successor, linked by the successor
  std::atomic<bool> locked{false};        // MCS: "wait", cleared by the predecessor;
                                          // CLH: "held", cleared by this node's releaser
  QueueNode* free_next = nullptr;         // NodePool free list; touched only by the pool's owner
};

// A thread's free queue nodes. Not shared: only the owning thread calls take() and give().
class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() {
    while (head_ != nullptr) delete std::exchange(head_, head_->free_next);
  }

  static NodePool& local() noexcept {
    thread_local NodePool pool;
    return pool;
  }

  QueueNode* take() {
    if (head_ == nullptr) return new QueueNode;
    return std::exchange(head_, head_->free_next);
  }
  void give(QueueNode* node) noexcept { node->free_next = std::exchange(head_, node); }

 private:
  QueueNode* head_ = nullptr;
};

// What the MCS and CLH locks share: the queue's tail (nullptr: free), the holder's node, and
// the two operations that look only at the tail.
class QueueLockBase {
 public:
  bool try_lock() {
    QueueNode* me = prepare();
    QueueNode* expected = nullptr;
    // (Q1) acq_rel on success, as the lock's exchange on the tail; relaxed on failure: nothing
    // was acquired.
    if (tail_.compare_exchange_strong(expected, me, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
      holder_ = me;
      return true;
    }
    NodePool::local().give(me);
    return false;
  }

  bool is_locked() const noexcept {
    // (Q2) acquire: pairs with the release of a holder that emptied the queue and with a
    // locker's exchange; a hint outside a transaction.
    return tail_.load(std::memory_order_acquire) != nullptr;
  }

 protected:
  static QueueNode* prepare() {
    QueueNode* me = NodePool::local().take();
    // Relaxed: the node is private until the exchange or (Q1) publishes it.
    me->next.store(nullptr, std::memory_order_relaxed);
    me->locked.store(true, std::memory_order_relaxed);
    return me;
  }

  std::atomic<QueueNode*> tail_{nullptr};
  QueueNode* holder_ = nullptr;  // the holder's node; accessed only by the holder
};

}  // namespace detail

// Mellor-Crummey & Scott queue lock: waiters form a FIFO linked list and each spins on the
// `locked` flag of its OWN node; the holder hands the lock to its successor with one store.
class alignas(kCacheLine) McsLock : public detail::QueueLockBase {
 public:
  void lock() {
    detail::QueueNode* me = prepare();
    // (M1) acq_rel: release publishes prepare()'s initialisation of `me` to the successor that
    // reads `me` here (it then writes me->next); acquire pairs with (M4) of a holder that
    // emptied the queue, or with (M1) of the predecessor whose node we link to.
    detail::QueueNode* pred = tail_.exchange(me, std::memory_order_acq_rel);
    if (pred != nullptr) {
      // (M2) release: pairs with (M5): the predecessor sees an initialised node.
      pred->next.store(me, std::memory_order_release);
      SpinWait wait;
      // (M3) acquire: pairs with (M6), the predecessor's handoff.
      while (me->locked.load(std::memory_order_acquire)) wait.wait();
    }
    holder_ = me;
  }

  void unlock() noexcept {
    detail::QueueNode* me = holder_;
    // (M5) acquire: pairs with (M2), the successor's link.
    detail::QueueNode* succ = me->next.load(std::memory_order_acquire);
    if (succ == nullptr) {
      detail::QueueNode* expected = me;
      // (M4) release: publishes the critical section to the next (M1) / (Q1) / (Q2).
      if (tail_.compare_exchange_strong(expected, nullptr, std::memory_order_release,
                                        std::memory_order_relaxed)) {
        detail::NodePool::local().give(me);
        return;
      }
      // A successor swapped itself in at (M1) but has not linked itself yet (M2).
      SpinWait wait;
      while ((succ = me->next.load(std::memory_order_acquire)) == nullptr) wait.wait();  // (M5)
    }
    // (M6) release: hands the lock over; pairs with the successor's (M3).
    succ->locked.store(false, std::memory_order_release);
    detail::NodePool::local().give(me);  // nobody references `me` any more
  }
};

// Craig, Landin & Hagersten queue lock: the queue is implicit; each waiter remembers only its
// predecessor's node (returned by the exchange on the tail) and spins on THAT node's `locked`
// flag. Unlike MCS no `next` pointer is written, so release is a single store when a successor
// exists. A free lock has tail == nullptr (see the essay above).
class alignas(kCacheLine) ClhLock : public detail::QueueLockBase {
 public:
  void lock() {
    detail::QueueNode* me = prepare();
    // (C1) acq_rel: release publishes me->locked == true to the successor that will spin on it;
    // acquire pairs with (C3) of a holder that emptied the queue.
    detail::QueueNode* pred = tail_.exchange(me, std::memory_order_acq_rel);
    if (pred != nullptr) {
      SpinWait wait;
      // (C2) acquire: pairs with (C4), the predecessor's release.
      while (pred->locked.load(std::memory_order_acquire)) wait.wait();
      detail::NodePool::local().give(pred);  // the predecessor's node is ours now
    }
    holder_ = me;
  }

  void unlock() noexcept {
    detail::QueueNode* me = holder_;
    detail::QueueNode* expected = me;
    // (C3) release: no successor: empty the queue, publishing the critical section to the next
    // (C1) / (Q1) / (Q2).
    if (tail_.compare_exchange_strong(expected, nullptr, std::memory_order_release,
                                      std::memory_order_relaxed)) {
      detail::NodePool::local().give(me);
      return;
    }
    // (C4) release: a successor spins on `me`; pairs with its (C2). `me` now belongs to it.
    me->locked.store(false, std::memory_order_release);
  }
};

}  // namespace ccf::sync
