// Hardware lock elision on Intel RTM (thesis ch. 4 and §5.3.2), usable and testable on machines
// without it: the elision policies and LockOnly. Their parts are one file each: the transaction
// status (tx_status.hpp), the hardware and its run-time probe (rtm_backend.hpp), the scripted
// stand-in for tests (simulated_backend.hpp), the statistics (elision_stats.hpp).
//
// What. An elision policy guards critical sections with a lock, but first tries to run each one
// as a hardware transaction that only READS the lock word ("subscribes" to it): threads whose
// sections touch disjoint data then run in parallel, and a thread that really takes the lock
// writes the lock word and so aborts every transaction that read it. After an abort the policy
// retries; after MaxRetries attempts, or after an abort that retrying cannot cure, it takes the
// lock. The critical section f may run several times (every aborted run is rolled back by the
// hardware); the result of the run that committed, or of the run under the lock, is returned.
//
//   RetryElision  `retry`: wait until the lock is free, XBEGIN, read the lock (abort if held),
//                 run f, XEND.
//   SlrElision    SLR, software-assisted lock removal: XBEGIN, run f, read the lock only just
//                 before XEND. A transaction may overlap a lock holder and still commit if the
//                 holder left before it finished; the hardware sandboxes the zombie runs.
//   ScmElision    SCM, software-assisted conflict management: as `retry`, but a thread whose
//                 transaction aborted takes an auxiliary MCS lock (which no transaction reads)
//                 before retrying, so conflicting threads retry one at a time while the others
//                 keep speculating; the main lock only after MaxRetries attempts.
//   MixElision    MIX = SLR + SCM (thesis Algorithms 4.6/4.7): lazy subscription and aux lock.
//   AdaptiveElision  `retry` whose speculation adapts per lock to the aborts it sees
//                 (SkipAdaptation, below): after an abort retrying cannot cure, or a budget
//                 spent on aborts, the lock's next sections skip speculation for a while.
//   LockOnly      no speculation: the lock, in shared mode for read() when it has one.
//
// The elision policies are one skeleton, BasicElision<Scheme, ..., Adapt>; a Scheme says when the
// lock is read (before f: eager; after f: lazy) and whether aborted threads serialize, an Adapt
// policy whether a section speculates at all (NoAdaptation: always).
//
// Synchronization points of the skeleton (the lock's own orders are in spin_locks.hpp):
//   (S1) eager subscription: inside the transaction, before f, read the lock; held => abort.
//   (S2) lazy subscription: inside the transaction, after f, just before XEND; held => abort.
//   (S3) lemming avoidance: outside any transaction, wait until the lock is free before the next
//        attempt (eager schemes: before every attempt; lazy schemes: after a WAS_LOCKED abort),
//        so that threads do not burn their attempts against a lock holder.
//   (S4) SCM: the aux lock is taken after the first retryable abort not caused by the main lock,
//        held across the remaining attempts and the fallback, released on every exit (RAII).
//   Read or write: read() subscribes to "a writer holds the lock" (is_locked()); write() also to
//   "readers hold it" (has_readers()) when the lock is a reader-writer lock, whose shared side
//   the fallback of read() takes.
//
// Retry rule. An abort is retried when it can succeed on retry: the explicit WAS_LOCKED abort of
// (S1)/(S2) (after waiting, S3), and aborts with the RETRY or CONFLICT bit (data conflicts).
// Everything else falls back at once: CAPACITY without RETRY (the section does not fit in the
// cache and will not next time), other explicit codes, DEBUG, NESTED, and status 0 (interrupts,
// system calls, unfriendly instructions), as glibc's elision does. MaxRetries counts attempts
// (calls to XBEGIN), aborts of every kind included: MaxRetries = 10 means at most 10
// transactions, then the lock.
//
// Without RTM. rtm_support() checks CPUID (leaf 7: EBX bit 11 RTM, and EDX bit 11
// RTM_ALWAYS_ABORT, which microcode updates set when they disable TSX) and then runs a few empty
// transactions (some firmware makes every transaction abort without changing CPUID). When
// rtm_available() is false every elision policy goes straight to its lock; speculative() says so,
// and tools print describe(rtm_support()) ("RTM absent on this CPU: lock fallback measured", ...)
// beside such numbers, never passing them off as speculative results.
//
// Plain accesses inside transactions. The critical sections f are ordinary code: a committed
// transaction's stores are plain stores, and the fallback's critical section reads them with plain
// loads under the lock (or, in structures with lock-free readers, with their own atomic loads).
// The C++ memory model knows no transactions, so it sees no happens-before edge there; the
// program is correct on the hardware, for these reasons:
//   (T1) A transaction that commits has seen the lock free at its subscription (S1 or S2) and the
//        lock word stayed in its read set until XEND: a lock acquisition writes the lock word, so
//        one between the subscription and XEND aborts the transaction (Intel SDM vol. 1 §16.3.1:
//        a conflicting write to the read set aborts it). Every committed transaction therefore
//        lies, in the commit order, wholly between two lock holders' critical sections (for lazy
//        subscription: every run that overlapped a holder read data the holder then wrote, or
//        read the lock after the holder left -- the former aborts, the latter is serialized after
//        it).
//   (T2) A committed transaction's stores become visible at once, all of them, and RTM's commit
//        orders like a LOCK-prefixed instruction (SDM vol. 1 §16.3.6): the next lock holder,
//        whose acquisition is a locked read-modify-write of the lock word ordered after the
//        commit, sees every store of the transaction; a transaction that begins after a holder's
//        release store and reads the lock free sees every store of the holder (x86-TSO: a load
//        that sees a store sees every store before it in program order).
//   (T3) An aborted run leaves no store behind (the hardware discards them), so a run of f that
//        read inconsistent data (lazy subscription's zombie) writes nothing anyone reads.
//   (T4) The compiler keeps f's accesses inside the transaction: XBEGIN, XEND and XABORT are
//        `asm volatile` with a "memory" clobber (rtm_backend.hpp), a compiler barrier on both
//        sides.
//
// Under ThreadSanitizer. TSan models neither XBEGIN's isolation nor XEND's ordering: it would
// report every pair of (T1)/(T2) as a race. Annotating the edges (__tsan_release on the lock's
// address after XEND, __tsan_acquire after taking the lock) cannot be made exact: the annotation
// after XEND is a separate step, and a holder that takes the lock between the commit and the
// annotation reads the transaction's stores with no annotated edge (a false report); an
// annotation inside the transaction writes TSan's own state for the lock's address from every
// transaction, which makes all of them conflict. So a ThreadSanitizer build does not use RTM:
// rtm_support() answers kOffUnderTsan there, and every policy runs its lock fallback, exactly as
// on a CPU without RTM. TSan then checks the lock fallback of every policy, the lock-free readers
// against lock holders, and (single-threaded) the whole state machine on SimulatedBackend. It
// does not check interleavings of real transactions: the Release and ASan builds do, on RTM hosts,
// with the stress tests that run the real backend and check their invariants
// (tests/sync_elision_test.cpp, RtmHardware and RealBackendTest; the coarse, COP and HTM-CLHT
// tests with their default backend).
//
// Testing without RTM. SimulatedBackend replaces the hardware: begin() returns a scripted
// sequence of outcomes (started, or an abort status with any reason bits), end() commits, and
// abort<Code>() RETURNS the status that XBEGIN would have returned after the abort, which the
// skeleton handles exactly as if begin() had returned it (on hardware abort() never returns:
// control resumes at XBEGIN with that status, and the skeleton takes the same path). So all of
// the state machine runs, deterministically, in one thread, without longjmp or exceptions.
// Aborts are delivered at begin() or by the policies' own abort<Code>(); there is no rollback:
// side effects of a run of f that the simulation aborts remain (tests count runs of f).
// A SimulatedBackend is single-threaded: it gives no isolation, so never share it between threads.
//
// Statistics (opt-in, Stats = ElisionStats): attempts started, committed, aborts by reason,
// fallbacks to the lock (and of those: budgets exhausted, sections that skipped speculation),
// aux-lock acquisitions; per-thread padded counters, relaxed, written only outside transactions.
// started == committed + aborted() holds for every snapshot taken while no operation runs.
// NoElisionStats (the default) compiles to nothing; ElisionStats::set_counting(false) turns
// counting off at run time (the benchmarks measure its cost so).
//
// Progress: blocking (that of the fallback lock). Speculation adds no waiting of its own except
// (S3), which waits for a lock holder. Do not nest elided sections; f must not throw inside a
// transaction (an exception aborts it on hardware; the simulation would leave it open).
//
// Usage, in a filter guarded by one policy:
//   ccf::sync::RetryElision<ccf::sync::McsLock> guard;
//   bool found = guard.read([&] { return table.contains(key); });
//   Status st = guard.write([&] { return table.insert(key); });
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

#include "ccf/sync/access.hpp"
#include "ccf/sync/elision_stats.hpp"
#include "ccf/sync/rtm_backend.hpp"
#include "ccf/sync/simulated_backend.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "ccf/sync/spin_wait.hpp"
#include "ccf/sync/tx_status.hpp"

namespace ccf::sync {

// ---------------------------------------------------------------------------------------------
// Policies.

inline constexpr unsigned kDefaultMaxRetries = 10;

template <class L>
concept SharedLockable = requires(L& lock) {
  lock.lock_shared();
  lock.unlock_shared();
};

template <class L>
concept ElidableLock = requires(L& lock, const L& clock) {
  lock.lock();
  lock.unlock();
  { clock.is_locked() } -> std::convertible_to<bool>;
};

namespace scheme {
// When the transaction reads the lock, and whether aborted threads serialize on an aux lock.
template <bool LazySubscription, bool SerializeAborts>
struct ElisionScheme {
  static constexpr bool kLazySubscription = LazySubscription;
  static constexpr bool kSerializeAborts = SerializeAborts;
};
using Retry = ElisionScheme<false, false>;
using Slr = ElisionScheme<true, false>;
using Scm = ElisionScheme<false, true>;
using Mix = ElisionScheme<true, true>;
}  // namespace scheme

namespace detail {

// Would a critical section with access A conflict with the lock's current holders?
template <Access A, class Lock>
bool lock_busy(const Lock& lock) noexcept {
  if constexpr (A == Access::kWrite && requires { lock.has_readers(); }) {
    return lock.is_locked() || lock.has_readers();
  } else {
    return lock.is_locked();
  }
}

// The fallback: f under the lock, shared for reads when the lock has a shared side.
template <Access A, class Lock, class F>
decltype(auto) run_locked(Lock& lock, F& f) {
  if constexpr (A == Access::kRead && SharedLockable<Lock>) {
    std::shared_lock guard(lock);
    return f();
  } else {
    std::lock_guard guard(lock);
    return f();
  }
}

// The result of one run of f, kept until the transaction commits (R may be void or a reference).
template <class R>
class Captured {
 public:
  template <class F>
  explicit Captured(F& f) : value_(f()) {}
  R get() && { return std::forward<R>(value_); }

 private:
  R value_;
};

template <>
class Captured<void> {
 public:
  template <class F>
  explicit Captured(F& f) {
    f();
  }
  void get() && {}
};

// The aux lock of schemes that do not serialize: never locked (no member is ever called).
struct NoAuxLock {
  void lock() noexcept {}
  void unlock() noexcept {}
};

}  // namespace detail

// Adapt policies: whether a section speculates, learned from what the lock's sections saw.
// The skeleton calls skip() before a section's first attempt (true: straight to the lock),
// hard_abort() after an abort retrying cannot cure, exhausted() after a budget spent on
// retryable aborts, committed() after a commit -- all outside transactions.
struct NoAdaptation {
  static constexpr bool skip() noexcept { return false; }
  static constexpr void hard_abort() noexcept {}
  static constexpr void exhausted() noexcept {}
  static constexpr void committed() noexcept {}
};

// Adaptation per lock, after glibc's adaptive lock elision (its adapt_count and
// skip_lock_internal_abort / skip_lock_out_of_tbegin_retries, 3 each) with the backoff the thesis's
// hand-tuned retry counts stand in for:
//   (A1) while the lock's skip count is positive a section decrements it and takes the lock at
//        once: no transaction, no wait;
//   (A2) an abort retrying cannot cure (CAPACITY, an interrupt, a foreign explicit code) sets the
//        skip count to kSkipAfterHardAbort: that section did not fit, and the next few of the
//        lock are likely alike (a resize, a long cuckoo path);
//   (A3) a budget exhausted by retryable aborts (conflicts, a lock held at every attempt) sets it
//        to the current backoff, which then doubles up to kMaxBackoff: speculation that keeps
//        failing is tried ever more rarely, and probed again after each skip period;
//   (A4) a commit resets the backoff to 1 (a store only when it changed).
// Its state sits on its own cache line, never beside the lock word that transactions read: its
// stores (all outside transactions) abort no transaction. Two threads updating it at once may lose
// an update, which only lengthens or shortens one skip period.
class SkipAdaptation {
 public:
  static constexpr std::uint32_t kSkipAfterHardAbort = 3;
  static constexpr std::uint32_t kMaxBackoff = 256;

  bool skip() noexcept {
    // Relaxed, here and below: a hint, not a synchronization; the lock orders the sections.
    const std::uint32_t left = skip_.load(std::memory_order_relaxed);
    if (left == 0) return false;
    skip_.store(left - 1, std::memory_order_relaxed);
    return true;
  }
  void hard_abort() noexcept { skip_.store(kSkipAfterHardAbort, std::memory_order_relaxed); }
  void exhausted() noexcept {
    const std::uint32_t backoff = backoff_.load(std::memory_order_relaxed);
    skip_.store(backoff, std::memory_order_relaxed);
    backoff_.store(std::min(2 * backoff, kMaxBackoff), std::memory_order_relaxed);
  }
  void committed() noexcept {
    if (backoff_.load(std::memory_order_relaxed) != 1) {
      backoff_.store(1, std::memory_order_relaxed);
    }
  }

  std::uint32_t skip_count() const noexcept { return skip_.load(std::memory_order_relaxed); }
  std::uint32_t backoff() const noexcept { return backoff_.load(std::memory_order_relaxed); }

 private:
  alignas(kCacheLine) std::atomic<std::uint32_t> skip_{0};
  std::atomic<std::uint32_t> backoff_{1};
};

template <class Scheme, class Lock, class Backend, unsigned MaxRetries, class Stats,
          class Adapt = NoAdaptation>
class BasicElision {
  static_assert(ElidableLock<Lock>, "the lock must provide lock(), unlock() and is_locked()");
  static constexpr bool kLazy = Scheme::kLazySubscription;
  static constexpr bool kSerialize = Scheme::kSerializeAborts;
  using AuxLock = std::conditional_t<kSerialize, McsLock, detail::NoAuxLock>;

 public:
  using lock_type = Lock;
  using backend_type = Backend;
  static constexpr unsigned kMaxRetries = MaxRetries;
  static constexpr bool kCountsEvents = Stats::kCounts;

  // Runs f as a reader / a writer; returns f's result. f may run several times.
  template <class F>
  std::invoke_result_t<F&> read(F&& f) {
    return run<Access::kRead>(f);
  }
  template <class F>
  std::invoke_result_t<F&> write(F&& f) {
    return run<Access::kWrite>(f);
  }

  // False: no transaction is ever attempted; every section runs under the lock.
  bool speculative() const noexcept { return backend_.available(); }

  Lock& mutex() noexcept { return lock_; }
  McsLock& aux_mutex() noexcept requires kSerialize { return aux_; }
  Backend& backend() noexcept { return backend_; }
  const Adapt& adaptation() const noexcept { return adapt_; }
  ElisionCounters stats() const noexcept { return stats_.snapshot(); }
  void reset_stats() noexcept { stats_.reset(); }

 private:
  template <Access A, class F>
  std::invoke_result_t<F&> run(F& f) {
    using R = std::invoke_result_t<F&>;
    std::unique_lock<AuxLock> aux(aux_, std::defer_lock);  // (S4): released on every exit
    if (backend_.available() && !skip_speculation()) {
      bool wait_first = !kLazy;
      unsigned attempt = 0;
      for (; attempt < MaxRetries; ++attempt) {
        if (wait_first) wait_until_free<A>();  // (S3)
        stats_.record(ElisionEvent::kStarted);
        TxStatus status = backend_.begin();
        if (status.started()) {
          if (kLazy || !detail::lock_busy<A>(lock_)) {  // (S1)
            detail::Captured<R> result(f);
            if (!kLazy || !detail::lock_busy<A>(lock_)) {  // (S2)
              backend_.end();
              stats_.record(ElisionEvent::kCommitted);
              adapt_.committed();
              return std::move(result).get();
            }
          }
          status = backend_.template abort<kAbortWasLocked>();  // hardware: resumes at begin()
        }
        stats_.record(abort_event(status));
        if (!worth_retrying(status)) {
          adapt_.hard_abort();
          break;
        }
        wait_first = !kLazy || status.was_locked();
        if constexpr (kSerialize) {
          if (!status.was_locked() && !aux.owns_lock()) {  // (S4)
            aux.lock();
            stats_.record(ElisionEvent::kAuxAcquired);
          }
        }
      }
      if (attempt == MaxRetries) {
        stats_.record(ElisionEvent::kRetriesExhausted);
        adapt_.exhausted();
      }
    }
    stats_.record(ElisionEvent::kFallback);
    return detail::run_locked<A>(lock_, f);
  }

  bool skip_speculation() noexcept {
    if (!adapt_.skip()) return false;
    stats_.record(ElisionEvent::kSkipped);
    return true;
  }

  template <Access A>
  void wait_until_free() const noexcept {
    SpinWait wait;
    while (detail::lock_busy<A>(lock_)) wait.wait();
  }

  Lock lock_;
  [[no_unique_address]] AuxLock aux_;
  [[no_unique_address]] Backend backend_;
  [[no_unique_address]] Stats stats_;
  [[no_unique_address]] Adapt adapt_;
};

template <class Lock = McsLock, class Backend = RtmBackend,
          unsigned MaxRetries = kDefaultMaxRetries, class Stats = NoElisionStats>
using RetryElision = BasicElision<scheme::Retry, Lock, Backend, MaxRetries, Stats>;

template <class Lock = McsLock, class Backend = RtmBackend,
          unsigned MaxRetries = kDefaultMaxRetries, class Stats = NoElisionStats>
using SlrElision = BasicElision<scheme::Slr, Lock, Backend, MaxRetries, Stats>;

template <class Lock = McsLock, class Backend = RtmBackend,
          unsigned MaxRetries = kDefaultMaxRetries, class Stats = NoElisionStats>
using ScmElision = BasicElision<scheme::Scm, Lock, Backend, MaxRetries, Stats>;

template <class Lock = McsLock, class Backend = RtmBackend,
          unsigned MaxRetries = kDefaultMaxRetries, class Stats = NoElisionStats>
using MixElision = BasicElision<scheme::Mix, Lock, Backend, MaxRetries, Stats>;

template <class Lock = McsLock, class Backend = RtmBackend,
          unsigned MaxRetries = kDefaultMaxRetries, class Stats = NoElisionStats>
using AdaptiveElision =
    BasicElision<scheme::Retry, Lock, Backend, MaxRetries, Stats, SkipAdaptation>;

// No elision: every section under the lock (shared for read() when the lock has a shared side).
template <class Lock = McsLock, class Stats = NoElisionStats>
class LockOnly {
 public:
  using lock_type = Lock;
  static constexpr bool kCountsEvents = Stats::kCounts;

  template <class F>
  std::invoke_result_t<F&> read(F&& f) {
    stats_.record(ElisionEvent::kFallback);
    return detail::run_locked<Access::kRead>(lock_, f);
  }
  template <class F>
  std::invoke_result_t<F&> write(F&& f) {
    stats_.record(ElisionEvent::kFallback);
    return detail::run_locked<Access::kWrite>(lock_, f);
  }

  static constexpr bool speculative() noexcept { return false; }

  Lock& mutex() noexcept { return lock_; }
  ElisionCounters stats() const noexcept { return stats_.snapshot(); }
  void reset_stats() noexcept { stats_.reset(); }

 private:
  Lock lock_;
  [[no_unique_address]] Stats stats_;
};

}  // namespace ccf::sync
