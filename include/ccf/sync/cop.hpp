// Consistency-oblivious programming (COP) on hardware transactions: the template of thesis
// Algorithm 5.9 (after Avni et al.), which the COP cuckoo filter instantiates (Algorithm 5.10).
//
// An operation is split into
//   prefix()          its longest read-only prefix, run WITHOUT synchronization; its output may
//                     be inconsistent (it raced with writers) -- it is only a plan;
//   verify(out)       inside a short transaction: does the plan still hold?
//   complete(out)     inside the same transaction: carry out the plan's updates;
//   whole()           the entire operation, run under the lock (the fallback path).
// The transaction's read and write sets are only what verify and complete touch, not what the
// prefix searched through, so transactions abort less (fewer conflicts, no capacity aborts).
//
// The state machine (line numbers of Algorithm 5.9):
//   out = prefix()                                                   (2)
//   wait until the lock is free                                      (3-5)
//   XBEGIN                                                           (6)
//     verify fails      -> XABORT(BAD_ROP)                           (9)
//     complete(out); lock held -> XABORT(WAS_LOCKED); XEND           (10-16)
//   on abort:
//     WAS_LOCKED        -> back to (3), reuse out, no retry counted  (18-19)
//     otherwise retries += 1; unless CAPACITY or retries == MaxRetries:
//       BAD_ROP         -> back to (2): recompute the prefix         (24-25)
//       retryable abort -> back to (3): reuse out                    (26-27)
//       (other aborts fall back, as Algorithm 5.10's can_retry() says)
//   fallback: whole() under the lock                                 (30-32)
// Without RTM (Backend::available() false) every operation takes the fallback at once.
//
// Progress: blocking (the lock). Tested with SimulatedBackend (aborts delivered at begin()).
#pragma once

#include <cstdint>
#include <type_traits>

#include "ccf/sync/htm.hpp"
#include "ccf/sync/spin_locks.hpp"

namespace ccf::sync {

template <class Lock = McsLock, class Backend = RtmBackend,
          unsigned MaxRetries = kDefaultMaxRetries, class Stats = NoElisionStats>
class CopExecutor {
  static_assert(ElidableLock<Lock>, "the lock must provide lock(), unlock() and is_locked()");

 public:
  static constexpr bool kCountsEvents = Stats::kCounts;

  template <Access A, class Prefix, class Verify, class Complete, class Whole>
  std::invoke_result_t<Whole&> run(Prefix&& prefix, Verify&& verify, Complete&& complete,
                                   Whole&& whole) {
    using R = std::invoke_result_t<Whole&>;
    if (backend_.available()) {
      unsigned retries = 0;
      auto out = prefix();
      for (;;) {
        SpinWait wait;
        while (detail::lock_busy<A>(lock_)) wait.wait();
        stats_.record(ElisionEvent::kStarted);
        TxStatus status = backend_.begin();
        if (status.started()) {
          if (!verify(out)) {
            status = backend_.template abort<kAbortBadRop>();  // hardware: resumes at begin()
          } else {
            auto finish = [&]() -> R { return complete(out); };
            detail::Captured<R> result(finish);
            if (!detail::lock_busy<A>(lock_)) {  // lazy subscription, just before XEND
              backend_.end();
              stats_.record(ElisionEvent::kCommitted);
              return std::move(result).get();
            }
            status = backend_.template abort<kAbortWasLocked>();
          }
        }
        stats_.record(abort_event(status));
        if (status.was_locked()) continue;
        if (status.capacity()) break;
        if (++retries >= MaxRetries) {
          stats_.record(ElisionEvent::kRetriesExhausted);
          break;
        }
        if (status.bad_rop()) {
          out = prefix();
        } else if (!worth_retrying(status)) {
          break;  // Algorithm 5.10's can_retry(): e.g. an interrupt or an unknown explicit code
        }
      }
    }
    stats_.record(ElisionEvent::kFallback);
    return detail::run_locked<A>(lock_, whole);
  }

  bool speculative() const noexcept { return backend_.available(); }
  Lock& mutex() noexcept { return lock_; }
  Backend& backend() noexcept { return backend_; }
  ElisionCounters stats() const noexcept { return stats_.snapshot(); }

 private:
  Lock lock_;
  [[no_unique_address]] Backend backend_;
  [[no_unique_address]] Stats stats_;
};

}  // namespace ccf::sync
