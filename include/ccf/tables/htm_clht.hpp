// HTM-CLHT: the cache-line hash table (tables/basic_clht.hpp) with updates under hardware lock
// elision (Intel RTM; thesis ch. 4). Lookups are CLHT's in every variant: no lock, no store, no
// transaction.
//
//   HtmClht<Elision>   the whole table under ONE lock, elided by one of the schemes of
//                      sync/htm.hpp: updates of different chains commit in parallel as
//                      transactions, and a migration copies one head at a time under the lock
//                      itself (between heads, updates go on). The thesis's six global-lock
//                      schemes:
//
//     htm_clht::Mcs          MCS lock, no elision (the baseline)
//     htm_clht::SlrMcs       SLR (lazy subscription) over an MCS lock
//     htm_clht::HtmRetry     retry up to 10 times as Intel's manual advises, then the MCS lock
//     htm_clht::ScmTtasMcs   SCM over a TTAS lock: aborted threads retry one at a time behind
//                            an auxiliary MCS lock
//     htm_clht::SlrScmMcs    SLR and SCM together over an MCS lock (the thesis's best)
//     htm_clht::ScmTtasOpt   "optimistic SCM" over a TTAS lock. The thesis describes it only as
//                            SCM whose threads, after 10 failed attempts, acquire the lock; here
//                            it is SCM with lazy (optimistic) subscription over TTAS -- our
//                            reading, the scheme that differs from scm-ttas-mcs in that one
//                            respect.
//     htm_clht::Adaptive     beyond the thesis: retry over an MCS lock, its speculation
//                            adapting to the aborts it sees (sync/htm.hpp, SkipAdaptation)
//
//   HtmClhtFine        the fine-grained variant: each update first runs as a transaction that
//                      reads (subscribes to) its head bucket's lock word, retrying as
//                      `htm-retry` does; after 10 attempts, or an abort retrying cannot cure, it
//                      takes that bucket's lock (clht::BucketLocks), whose write aborts every
//                      transaction on the chain.
//
// Without RTM (no Intel TSX on the machine, disabled by microcode, or a ThreadSanitizer build:
// sync/rtm_backend.hpp), no transaction is attempted: the global variants ARE their fallback lock
// and HtmClhtFine is ClhtLb. speculative() says which; the benchmarks print
// describe(rtm_support()) then ("... lock fallback measured"), never speculative figures. The
// elision logic itself is tested with the simulated backend (tests/htm_clht_test.cpp,
// tests/sync_elision_test.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "ccf/sync/htm.hpp"
#include "ccf/sync/rtm_backend.hpp"
#include "ccf/sync/spin_locks.hpp"
#include "ccf/sync/spin_wait.hpp"
#include "ccf/sync/tx_status.hpp"
#include "ccf/tables/basic_clht.hpp"
#include "ccf/tables/clht_lb.hpp"

namespace ccf {

namespace clht {

// One lock for the table, elided by `Elision` (sync/htm.hpp: RetryElision, SlrElision, ...).
template <class Elision>
class GlobalElided {
 public:
  static constexpr std::string_view kName = "HtmClht";

  template <class Tables, class F>
  auto update(const Tables& tables, std::uint64_t h, F&& f) {
    return elision_.write([&] {
      // Under the lock, or in a transaction subscribed to it: no head is migrated meanwhile.
      // Acquire: as BucketLocks::update's, for the successor and its copied chains.
      auto* table = tables.current();
      while (table->head(h).lock.load(std::memory_order_acquire) == kMigrated) {
        table = table->successor();
      }
      return f(table->head(h), *table);
    });
  }

  // A run of heads (at most a chunk) under the lock, which aborts the transactions subscribed
  // to it: updates run between runs, and a fair lock is taken once per chunk, not per head.
  // Copies never throw (basic_clht.hpp, M2), and the guard frees the lock regardless.
  template <class F>
  void migrating(F&& f) {
    const std::lock_guard guard(elision_.mutex());
    f();
  }
  // Within migrating().
  template <class Bucket, class Copy>
  static clht::Migrate migrate(Bucket& head, Copy&& copy) {
    if (head.lock.load(std::memory_order_relaxed) == kMigrated) return clht::Migrate::kAlready;
    if (!copy(head)) return clht::Migrate::kNeedsMemory;
    head.lock.store(kMigrated, std::memory_order_release);  // for the lookups (M2, M4)
    return clht::Migrate::kNow;
  }

  bool speculative() const noexcept { return elision_.speculative(); }
  Elision& elision() noexcept { return elision_; }
  // The elision policy's counters (sync/elision_stats.hpp), when it keeps them.
  sync::ElisionCounters elision_stats() const noexcept requires Elision::kCountsEvents {
    return elision_.stats();
  }

 private:
  Elision elision_;
};

// The bucket locks of ClhtLb, each elided: see the header. Stats as the elision policies'
// (sync/elision_stats.hpp), for all bucket locks together.
template <class Backend = sync::RtmBackend, unsigned MaxRetries = sync::kDefaultMaxRetries,
          class Stats = sync::NoElisionStats>
class BucketElided {
 public:
  static constexpr std::string_view kName = "HtmClhtFine";

  template <class Tables, class F>
  auto update(const Tables& tables, std::uint64_t h, F&& f) {
    if (backend_.available()) {
      auto* table = tables.current();
      unsigned attempt = 0;
      while (attempt < MaxRetries) {
        auto& head = table->head(h);
        if (wait_while_locked(head) == kMigrated) {  // forwarded: try in the successor
          table = table->successor();
          continue;
        }
        ++attempt;
        stats_.record(sync::ElisionEvent::kStarted);
        sync::TxStatus status = backend_.begin();
        if (status.started()) {
          // Subscribed: a lock holder, or a migration, writes this word and aborts us.
          if (head.lock.load(std::memory_order_relaxed) == kFree) {
            auto result = f(head, *table);
            backend_.end();
            stats_.record(sync::ElisionEvent::kCommitted);
            return result;
          }
          status = backend_.template abort<sync::kAbortWasLocked>();  // hardware: at begin()
        }
        stats_.record(sync::abort_event(status));
        if (!sync::worth_retrying(status)) break;
      }
      if (attempt == MaxRetries) stats_.record(sync::ElisionEvent::kRetriesExhausted);
    }
    stats_.record(sync::ElisionEvent::kFallback);
    return locks_.update(tables, h, f);
  }

  template <class F>
  static void migrating(F&& f) {
    f();
  }
  template <class Bucket, class Copy>
  static clht::Migrate migrate(Bucket& head, Copy&& copy) {
    return BucketLocks::migrate(head, copy);  // its kMigrated write aborts the chain's transactions
  }

  bool speculative() const noexcept { return backend_.available(); }
  Backend& backend() noexcept { return backend_; }
  sync::ElisionCounters elision_stats() const noexcept requires Stats::kCounts {
    return stats_.snapshot();
  }

 private:
  // Waits while a thread holds the bucket (lemming avoidance: an attempt now would abort);
  // returns kFree, or kMigrated (acquire: then the successor is visible, as in BucketLocks).
  template <class Bucket>
  static std::uint64_t wait_while_locked(const Bucket& head) noexcept {
    sync::SpinWait wait;
    for (;;) {
      const std::uint64_t state = head.lock.load(std::memory_order_acquire);
      if (state != kLocked) return state;
      wait.wait();
    }
  }

  BucketLocks locks_;
  [[no_unique_address]] Backend backend_;
  [[no_unique_address]] Stats stats_;
};

}  // namespace clht

template <class Elision>
using HtmClht = BasicClht<clht::GlobalElided<Elision>>;
using HtmClhtFine = BasicClht<clht::BucketElided<>>;

// The thesis's six global-lock schemes (see the header).
namespace htm_clht {
using Mcs = HtmClht<sync::LockOnly<sync::McsLock>>;
using SlrMcs = HtmClht<sync::SlrElision<sync::McsLock>>;
using HtmRetry = HtmClht<sync::RetryElision<sync::McsLock>>;
using ScmTtasMcs = HtmClht<sync::ScmElision<sync::TtasLock>>;
using SlrScmMcs = HtmClht<sync::MixElision<sync::McsLock>>;
using ScmTtasOpt = HtmClht<sync::MixElision<sync::TtasLock>>;
// Beyond the thesis (see the header).
using Adaptive = HtmClht<sync::AdaptiveElision<sync::McsLock>>;
}  // namespace htm_clht

}  // namespace ccf
