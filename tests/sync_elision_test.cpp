// The HTM lock-elision state machines of ccf/sync/htm.hpp, run deterministically in one thread
// on SimulatedBackend (scripted transaction outcomes), plus the real backend selection: on a CPU
// without RTM (these AMD machines) every policy runs its lock fallback and says so, and every
// policy gives mutual exclusion with 8 threads.
//
// A TracingBackend and a ScriptedLock write one event log, so the tests assert the ORDER of
// begin / lock reads / f / commit, e.g. that SLR reads the lock only after f.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <latch>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "ccf/sync/htm.hpp"
#include "ccf/sync/rw_lock.hpp"
#include "ccf/sync/spin_locks.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

#include <cstring>
#endif

namespace {

using namespace ccf::sync;
using Log = std::vector<std::string>;

// An exclusive lock whose is_locked() answers from a script: answer_polls({...}) gives the answers
// to the next reads (true: as if another thread held the lock then); once they are used up the
// lock's real state answers. Every read is logged.
class ScriptedLock {
 public:
  void lock() {
    log.push_back("lock");
    held_ = true;
  }
  void unlock() {
    log.push_back("unlock");
    held_ = false;
  }
  bool is_locked() const {
    const bool held = next_answer_ < answers_.size() ? answers_[next_answer_++] : held_;
    log.push_back(held ? "poll:held" : "poll:free");
    return held;
  }
  void answer_polls(std::initializer_list<bool> answers) {
    answers_.assign(answers);
    next_answer_ = 0;
  }
  bool held() const { return held_; }

  mutable Log log;

 private:
  bool held_ = false;
  std::vector<bool> answers_;
  mutable std::size_t next_answer_ = 0;
};

// SimulatedBackend that logs into the lock's log.
class TracingBackend : public SimulatedBackend {
 public:
  TxStatus begin() {
    const TxStatus status = SimulatedBackend::begin();
    log_->push_back(status.started() ? "begin" : "begin:aborted");
    return status;
  }
  void end() {
    SimulatedBackend::end();
    log_->push_back("end");
  }
  template <std::uint8_t Code>
  TxStatus abort() {
    log_->push_back("abort:" + std::to_string(Code));
    return SimulatedBackend::abort<Code>();
  }
  void trace_into(Log& log) { log_ = &log; }

 private:
  Log* log_ = nullptr;
};

constexpr TxStatus kConflict = TxStatus::aborted(TxStatus::kConflict | TxStatus::kRetry);
constexpr TxStatus kCapacity = TxStatus::aborted(TxStatus::kCapacity);

template <template <class, class, unsigned, class> class Policy, unsigned MaxRetries = 10>
struct Traced {
  Policy<ScriptedLock, TracingBackend, MaxRetries, ElisionStats> policy;
  Log& log = policy.mutex().log;
  unsigned runs = 0;  // runs of the critical section

  Traced() { policy.backend().trace_into(log); }

  // A write section that logs, counts its runs and returns the run number.
  unsigned write() {
    return policy.write([&] {
      log.push_back("f");
      return ++runs;
    });
  }
};

// ---- Status decoding and the retry rule -------------------------------------------------------

TEST(TxStatus, DecodesTheXbeginStatusWord) {
  EXPECT_TRUE(TxStatus::begun().started());
  EXPECT_EQ(TxStatus::begun().raw(), 0xFFFFFFFFu);
  EXPECT_FALSE(TxStatus::begun().conflict());  // all bits set, but not an abort

  const TxStatus locked = TxStatus::aborted_explicit(kAbortWasLocked);
  EXPECT_EQ(locked.raw(), 0xFF000001u);
  EXPECT_TRUE(locked.explicit_abort());
  EXPECT_EQ(locked.code(), 0xFF);
  EXPECT_TRUE(locked.was_locked());

  const TxStatus other = TxStatus::aborted(0x42000001u);
  EXPECT_TRUE(other.explicit_abort());
  EXPECT_EQ(other.code(), 0x42);
  EXPECT_FALSE(other.was_locked());

  EXPECT_TRUE(kConflict.conflict());
  EXPECT_TRUE(kConflict.retry());
  EXPECT_FALSE(kConflict.explicit_abort());
  EXPECT_EQ(kConflict.code(), 0);
  EXPECT_TRUE(kCapacity.capacity());
  EXPECT_FALSE(kCapacity.retry());
  EXPECT_TRUE(TxStatus::aborted(TxStatus::kDebug).debug());
  EXPECT_TRUE(TxStatus::aborted(TxStatus::kNested).nested());
}

TEST(TxStatus, ReasonsAndRetryRule) {
  EXPECT_EQ(abort_reason(TxStatus::aborted_explicit(kAbortWasLocked)), AbortReason::kWasLocked);
  EXPECT_EQ(abort_reason(TxStatus::aborted_explicit(kAbortBadRop)), AbortReason::kBadRop);
  EXPECT_EQ(abort_reason(TxStatus::aborted_explicit(7)), AbortReason::kExplicit);
  EXPECT_EQ(abort_reason(kCapacity), AbortReason::kCapacity);
  EXPECT_EQ(abort_reason(TxStatus::aborted(TxStatus::kCapacity | TxStatus::kConflict)),
            AbortReason::kCapacity);
  EXPECT_EQ(abort_reason(kConflict), AbortReason::kConflict);
  EXPECT_EQ(abort_reason(TxStatus::aborted(0)), AbortReason::kOther);

  EXPECT_TRUE(worth_retrying(TxStatus::aborted_explicit(kAbortWasLocked)));
  EXPECT_TRUE(worth_retrying(kConflict));
  EXPECT_TRUE(worth_retrying(TxStatus::aborted(TxStatus::kConflict)));
  EXPECT_TRUE(worth_retrying(TxStatus::aborted(TxStatus::kRetry)));
  EXPECT_TRUE(worth_retrying(TxStatus::aborted(TxStatus::kCapacity | TxStatus::kRetry)));
  EXPECT_FALSE(worth_retrying(kCapacity));
  EXPECT_FALSE(worth_retrying(TxStatus::aborted_explicit(7)));
  EXPECT_FALSE(worth_retrying(TxStatus::aborted(0)));
  EXPECT_FALSE(worth_retrying(TxStatus::aborted(TxStatus::kDebug)));
  EXPECT_FALSE(worth_retrying(TxStatus::aborted(TxStatus::kNested)));
}

// ---- Retry budget, for every scheme and MaxRetries 5 / 10 / 20 --------------------------------

template <template <class, class, unsigned, class> class Policy, unsigned MaxRetries>
void expect_fallback_after_exhaustion() {
  SCOPED_TRACE("MaxRetries " + std::to_string(MaxRetries));
  Traced<Policy, MaxRetries> t;
  t.policy.backend().script({}, kConflict);  // every attempt aborts with a conflict
  EXPECT_EQ(t.write(), 1u);                  // f ran once: under the lock
  EXPECT_EQ(t.policy.backend().begins(), MaxRetries);
  EXPECT_EQ(t.policy.backend().commits(), 0u);
  EXPECT_FALSE(t.policy.mutex().held());
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "lock"), 1);
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.started, MaxRetries);
  EXPECT_EQ(c.aborts_conflict, MaxRetries);
  EXPECT_EQ(c.committed, 0u);
  EXPECT_EQ(c.fallbacks, 1u);
}

template <template <class, class, unsigned, class> class Policy>
void expect_retry_budgets() {
  expect_fallback_after_exhaustion<Policy, 5>();
  expect_fallback_after_exhaustion<Policy, 10>();
  expect_fallback_after_exhaustion<Policy, 20>();
}

TEST(ElisionRetryBudget, RetryFallsBackAfterMaxRetries) {
  expect_retry_budgets<RetryElision>();
}
TEST(ElisionRetryBudget, SlrFallsBackAfterMaxRetries) {
  expect_retry_budgets<SlrElision>();
}
TEST(ElisionRetryBudget, ScmFallsBackAfterMaxRetries) {
  expect_retry_budgets<ScmElision>();
}
TEST(ElisionRetryBudget, MixFallsBackAfterMaxRetries) {
  expect_retry_budgets<MixElision>();
}

TEST(ElisionRetryBudget, DefaultIsTen) {
  EXPECT_EQ(RetryElision<>::kMaxRetries, 10u);
  EXPECT_EQ(MixElision<>::kMaxRetries, 10u);
}

TEST(ElisionRetryBudget, CommitsWithinTheBudget) {
  Traced<RetryElision, 5> t;
  t.policy.backend().script({kConflict, kConflict, kConflict, kConflict});  // the 5th commits
  EXPECT_EQ(t.write(), 1u);
  EXPECT_EQ(t.policy.backend().begins(), 5u);
  EXPECT_EQ(t.policy.backend().commits(), 1u);
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "lock"), 0);
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.committed, 1u);
  EXPECT_EQ(c.aborts_conflict, 4u);
  EXPECT_EQ(c.fallbacks, 0u);
}

// ---- Aborts that retrying cannot cure --------------------------------------------------------

TEST(ElisionAbortRule, CapacityWithoutRetryBitFallsBackAtOnce) {
  Traced<RetryElision> t;
  t.policy.backend().script({kCapacity});
  t.write();
  EXPECT_EQ(t.policy.backend().begins(), 1u);
  EXPECT_EQ(t.policy.stats().aborts_capacity, 1u);
  EXPECT_EQ(t.policy.stats().fallbacks, 1u);
}

TEST(ElisionAbortRule, CapacityWithRetryBitIsRetried) {
  Traced<SlrElision> t;
  t.policy.backend().script({TxStatus::aborted(TxStatus::kCapacity | TxStatus::kRetry)});
  t.write();
  EXPECT_EQ(t.policy.backend().begins(), 2u);
  EXPECT_EQ(t.policy.stats().aborts_capacity, 1u);
  EXPECT_EQ(t.policy.stats().committed, 1u);
  EXPECT_EQ(t.policy.stats().fallbacks, 0u);
}

TEST(ElisionAbortRule, ForeignExplicitDebugNestedAndZeroFallBackAtOnce) {
  for (const TxStatus status : {TxStatus::aborted_explicit(7), TxStatus::aborted(TxStatus::kDebug),
                                TxStatus::aborted(TxStatus::kNested), TxStatus::aborted(0)}) {
    SCOPED_TRACE(status.raw());
    Traced<MixElision> t;
    t.policy.backend().script({status});
    EXPECT_EQ(t.write(), 1u);
    EXPECT_EQ(t.policy.backend().begins(), 1u);
    const ElisionCounters c = t.policy.stats();
    EXPECT_EQ(c.aborts_explicit + c.aborts_other, 1u);
    EXPECT_EQ(c.fallbacks, 1u);
    EXPECT_EQ(c.aux_acquisitions, 0u);  // falling back directly, nothing to serialize
  }
}

// ---- Subscription: eager (retry, SCM) and lazy (SLR, MIX) -----------------------------------

TEST(ElisionSubscription, RetryWaitsForTheLockThenSubscribesBeforeF) {
  Traced<RetryElision> t;
  t.policy.mutex().answer_polls({true, true});  // another thread holds the lock for two reads
  EXPECT_EQ(t.write(), 1u);
  const Log expected{"poll:held", "poll:held", "poll:free",  // (S3) wait before the attempt
                     "begin",     "poll:free",               // (S1) subscribe
                     "f",         "end"};
  EXPECT_EQ(t.log, expected);
  EXPECT_EQ(t.policy.stats().aborts_was_locked, 0u);
}

// The lock is taken between the wait and the transaction's read (S1): explicit WAS_LOCKED abort,
// wait until the lock is free (S3), retry.
TEST(ElisionSubscription, RetryAbortsWasLockedWaitsAndRetries) {
  Traced<RetryElision> t;
  t.policy.mutex().answer_polls({false, true, true, true});
  EXPECT_EQ(t.write(), 1u);
  const Log expected{"poll:free", "begin", "poll:held", "abort:255", "poll:held", "poll:held",
                     "poll:free", "begin", "poll:free", "f",         "end"};
  EXPECT_EQ(t.log, expected);
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.started, 2u);
  EXPECT_EQ(c.aborts_was_locked, 1u);
  EXPECT_EQ(c.committed, 1u);
  EXPECT_EQ(c.fallbacks, 0u);
  EXPECT_EQ(t.policy.backend().explicit_aborts(), 1u);
}

// SLR starts at once, runs f, and reads the lock only just before committing (S2); held there =>
// WAS_LOCKED abort, wait, run f again.
TEST(ElisionSubscription, SlrReadsTheLockOnlyAtCommit) {
  Traced<SlrElision> t;
  t.policy.mutex().answer_polls({true, true});
  EXPECT_EQ(t.write(), 2u);  // the second run committed
  const Log expected{"begin",     "f",     "poll:held", "abort:255", "poll:held",
                     "poll:free", "begin", "f",         "poll:free", "end"};
  EXPECT_EQ(t.log, expected);
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.started, 2u);
  EXPECT_EQ(c.aborts_was_locked, 1u);
  EXPECT_EQ(c.committed, 1u);
}

TEST(ElisionSubscription, SlrDoesNotWaitAfterAConflict) {
  Traced<SlrElision> t;
  t.policy.backend().script({kConflict});
  EXPECT_EQ(t.write(), 1u);
  const Log expected{"begin:aborted", "begin", "f", "poll:free", "end"};
  EXPECT_EQ(t.log, expected);
}

// ---- SCM: the auxiliary lock ------------------------------------------------------------------

TEST(ElisionScm, AbortedThreadTakesTheAuxLockRetriesAndReleasesIt) {
  Traced<ScmElision> t;
  t.policy.backend().script({kConflict, kConflict});
  std::vector<bool> aux_held_in_f, in_tx_in_f;
  t.policy.write([&] {
    aux_held_in_f.push_back(t.policy.aux_mutex().is_locked());
    in_tx_in_f.push_back(t.policy.backend().in_transaction());
  });
  EXPECT_EQ(aux_held_in_f, std::vector<bool>{true});  // speculating again, serialized by aux
  EXPECT_EQ(in_tx_in_f, std::vector<bool>{true});
  EXPECT_FALSE(t.policy.aux_mutex().is_locked());
  const Log expected{"poll:free", "begin:aborted", "poll:free", "begin:aborted",
                     "poll:free", "begin",         "poll:free", "end"};
  EXPECT_EQ(t.log, expected);
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.aux_acquisitions, 1u);  // once, not once per abort
  EXPECT_EQ(c.started, 3u);
  EXPECT_EQ(c.committed, 1u);
}

TEST(ElisionScm, FallbackRunsWithAuxAndMainLockHeld) {
  Traced<ScmElision, 5> t;
  t.policy.backend().script({}, kConflict);
  bool aux_held = false, main_held = false, in_tx = true;
  t.policy.write([&] {
    aux_held = t.policy.aux_mutex().is_locked();
    main_held = t.policy.mutex().held();
    in_tx = t.policy.backend().in_transaction();
  });
  EXPECT_TRUE(aux_held);
  EXPECT_TRUE(main_held);
  EXPECT_FALSE(in_tx);
  EXPECT_FALSE(t.policy.aux_mutex().is_locked());
  EXPECT_FALSE(t.policy.mutex().held());
  EXPECT_EQ(t.policy.stats().fallbacks, 1u);
  EXPECT_EQ(t.policy.stats().aux_acquisitions, 1u);
}

// A WAS_LOCKED abort is the lock holder's doing, not a conflict among speculating threads:
// waiting for the lock cures it; the aux lock is not taken.
TEST(ElisionScm, WasLockedAbortDoesNotTakeTheAuxLock) {
  Traced<ScmElision> t;
  t.policy.mutex().answer_polls({false, true});
  bool aux_held = true;
  t.policy.write([&] { aux_held = t.policy.aux_mutex().is_locked(); });
  EXPECT_FALSE(aux_held);
  EXPECT_EQ(t.policy.stats().aborts_was_locked, 1u);
  EXPECT_EQ(t.policy.stats().aux_acquisitions, 0u);
  EXPECT_EQ(t.policy.stats().committed, 1u);
}

// MIX: SLR's lazy subscription and SCM's aux lock together.
TEST(ElisionMix, LazySubscriptionAndAuxLock) {
  Traced<MixElision> t;
  t.policy.backend().script({kConflict});
  t.policy.mutex().answer_polls({true});
  std::vector<bool> aux_held_in_f;
  const unsigned run = t.policy.write([&] {
    t.log.push_back("f");
    aux_held_in_f.push_back(t.policy.aux_mutex().is_locked());
    return ++t.runs;
  });
  EXPECT_EQ(run, 2u);
  const Log expected{"begin:aborted", "begin", "f", "poll:held", "abort:255",
                     "poll:free",     "begin", "f", "poll:free", "end"};
  EXPECT_EQ(t.log, expected);
  EXPECT_EQ(aux_held_in_f, (std::vector<bool>{true, true}));
  EXPECT_FALSE(t.policy.aux_mutex().is_locked());
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.aux_acquisitions, 1u);
  EXPECT_EQ(c.aborts_conflict, 1u);
  EXPECT_EQ(c.aborts_was_locked, 1u);
  EXPECT_EQ(c.committed, 1u);
}

// ---- Statistics --------------------------------------------------------------------------------

// Random scripts: whatever happens, every attempt ends in exactly one commit or one counted abort,
// and every operation ends in exactly one commit or one fallback.
template <template <class, class, unsigned, class> class Policy>
void expect_stats_add_up() {
  Traced<Policy, 5> t;
  std::mt19937 rng(42);
  const TxStatus outcomes[] = {TxStatus::begun(),
                               kConflict,
                               kCapacity,
                               TxStatus::aborted(TxStatus::kCapacity | TxStatus::kRetry),
                               TxStatus::aborted_explicit(9),
                               TxStatus::aborted(0)};
  constexpr unsigned kOps = 300;
  for (unsigned op = 0; op < kOps; ++op) {
    std::vector<TxStatus> script;
    for (unsigned i = rng() % 8; i > 0; --i)
      script.push_back(outcomes[rng() % std::size(outcomes)]);
    t.policy.backend().script(std::move(script));
    t.policy.mutex().answer_polls({rng() % 2 == 0, rng() % 3 == 0});
    t.write();
  }
  const ElisionCounters c = t.policy.stats();
  const SimulatedBackend& backend = t.policy.backend();
  EXPECT_EQ(c.started, backend.begins());
  EXPECT_EQ(c.committed, backend.commits());
  EXPECT_EQ(c.started, c.committed + c.aborted());
  EXPECT_EQ(c.aborts_was_locked, backend.explicit_aborts());
  EXPECT_EQ(c.committed + c.fallbacks, kOps);
  EXPECT_EQ(static_cast<std::uint64_t>(std::count(t.log.begin(), t.log.end(), "lock")),
            c.fallbacks);
  EXPECT_GT(c.committed, 0u);
  EXPECT_GT(c.fallbacks, 0u);
  EXPECT_GT(c.aborts_was_locked, 0u);
  EXPECT_GT(c.aborts_capacity, 0u);
  EXPECT_GT(c.aborts_conflict, 0u);
  EXPECT_GT(c.aborts_explicit, 0u);
  EXPECT_GT(c.aborts_other, 0u);

  t.policy.reset_stats();
  const ElisionCounters zero = t.policy.stats();
  EXPECT_EQ(zero.started + zero.committed + zero.aborted() + zero.fallbacks + zero.aux_acquisitions,
            0u);
}

TEST(ElisionStatistics, AddUpForRetry) {
  expect_stats_add_up<RetryElision>();
}
TEST(ElisionStatistics, AddUpForSlr) {
  expect_stats_add_up<SlrElision>();
}
TEST(ElisionStatistics, AddUpForScm) {
  expect_stats_add_up<ScmElision>();
}
TEST(ElisionStatistics, AddUpForMix) {
  expect_stats_add_up<MixElision>();
}

TEST(ElisionStatistics, OffByDefault) {
  RetryElision<ScriptedLock, SimulatedBackend> policy;
  policy.backend().script({kConflict});
  policy.write([] {});
  EXPECT_EQ(policy.stats().started, 0u);  // NoElisionStats records nothing
  EXPECT_EQ(policy.backend().begins(), 2u);
}

TEST(ElisionStatistics, ExhaustedBudgetsAreCountedAsSuch) {
  Traced<RetryElision, 3> t;
  t.policy.backend().script({kConflict, kConflict, kConflict, kCapacity});
  t.write();  // three conflicts: the budget is spent
  t.write();  // a capacity abort: a fallback, but not an exhausted budget
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.fallbacks, 2u);
  EXPECT_EQ(c.retries_exhausted, 1u);
  EXPECT_EQ(c.skipped, 0u);
  EXPECT_DOUBLE_EQ(c.speculative_share(), 0.0);
}

TEST(ElisionStatistics, CountingCanBeTurnedOffAtRunTime) {
  Traced<RetryElision> t;
  ElisionStats::set_counting(false);
  t.write();
  ElisionStats::set_counting(true);
  EXPECT_EQ(t.policy.stats().started, 0u);
  EXPECT_EQ(t.policy.stats().committed, 0u);
  t.write();
  EXPECT_EQ(t.policy.stats().committed, 1u);
  EXPECT_DOUBLE_EQ(t.policy.stats().speculative_share(), 1.0);
}

// ---- The adaptive policy (SkipAdaptation) ---------------------------------------------------

// Runs `sections` write sections of t and returns how many transactions they began.
template <class T>
unsigned begins_over(T& t, unsigned sections) {
  const unsigned before = t.policy.backend().begins();
  for (unsigned i = 0; i < sections; ++i) t.write();
  return t.policy.backend().begins() - before;
}

TEST(ElisionAdaptive, CommitsSpeculateEverySection) {
  Traced<AdaptiveElision> t;
  EXPECT_EQ(begins_over(t, 50), 50u);
  EXPECT_EQ(t.policy.stats().committed, 50u);
  EXPECT_EQ(t.policy.stats().skipped, 0u);
  EXPECT_EQ(t.policy.adaptation().backoff(), 1u);
}

TEST(ElisionAdaptive, AHardAbortSkipsTheNextFewSectionsThenProbesAgain) {
  Traced<AdaptiveElision> t;
  t.policy.backend().script({kCapacity});
  EXPECT_EQ(t.write(), 1u);  // aborted for capacity: under the lock
  EXPECT_EQ(t.policy.adaptation().skip_count(), SkipAdaptation::kSkipAfterHardAbort);
  t.log.clear();
  EXPECT_EQ(begins_over(t, SkipAdaptation::kSkipAfterHardAbort), 0u);  // straight to the lock
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "lock"),
            static_cast<std::ptrdiff_t>(SkipAdaptation::kSkipAfterHardAbort));
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "poll:free"), 0);  // nor waited for it
  EXPECT_EQ(begins_over(t, 1), 1u);                                   // probes again, commits
  const ElisionCounters c = t.policy.stats();
  EXPECT_EQ(c.skipped, SkipAdaptation::kSkipAfterHardAbort);
  EXPECT_EQ(c.fallbacks, SkipAdaptation::kSkipAfterHardAbort + 1);
  EXPECT_EQ(c.committed, 1u);
  EXPECT_EQ(t.runs, SkipAdaptation::kSkipAfterHardAbort + 2);  // every section ran once
}

TEST(ElisionAdaptive, ExhaustedBudgetsBackOffExponentiallyAndACommitResets) {
  Traced<AdaptiveElision, 2> t;
  t.policy.backend().script({}, kConflict);  // every transaction aborts
  // Exhaustion k skips the next 2^(k-1) sections: speculation is tried ever more rarely.
  for (std::uint32_t backoff = 1; backoff <= 16; backoff *= 2) {
    EXPECT_EQ(begins_over(t, 1), 2u) << "backoff " << backoff;  // one budget, spent
    EXPECT_EQ(t.policy.adaptation().skip_count(), backoff);
    EXPECT_EQ(begins_over(t, backoff), 0u) << "backoff " << backoff;
  }
  EXPECT_EQ(t.policy.adaptation().backoff(), 32u);
  const ElisionCounters spent = t.policy.stats();
  EXPECT_EQ(spent.retries_exhausted, 5u);
  EXPECT_EQ(spent.skipped, 1u + 2 + 4 + 8 + 16);
  EXPECT_EQ(spent.committed, 0u);
  t.policy.backend().script({});  // transactions commit again
  EXPECT_EQ(begins_over(t, 1), 1u);
  EXPECT_EQ(t.policy.adaptation().backoff(), 1u);
  EXPECT_EQ(begins_over(t, 10), 10u);
}

TEST(ElisionAdaptive, TheBackoffIsBounded) {
  Traced<AdaptiveElision, 1> t;
  t.policy.backend().script({}, kConflict);
  for (int i = 0; i < 2000; ++i) t.write();
  EXPECT_EQ(t.policy.adaptation().backoff(), SkipAdaptation::kMaxBackoff);
  EXPECT_LE(t.policy.adaptation().skip_count(), SkipAdaptation::kMaxBackoff);
  // At the bound, one section in kMaxBackoff + 1 still probes.
  EXPECT_EQ(begins_over(t, 10 * (SkipAdaptation::kMaxBackoff + 1)), 10u);
}

TEST(ElisionAdaptive, StateLivesOffTheLockLine) {
  AdaptiveElision<McsLock, SimulatedBackend> policy;
  const auto* lock = reinterpret_cast<const char*>(&policy.mutex());
  const auto* state = reinterpret_cast<const char*>(&policy.adaptation());
  EXPECT_GE(static_cast<std::size_t>(std::abs(state - lock)), kCacheLine);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(state) % kCacheLine, 0u);
}

// ---- Results of f ------------------------------------------------------------------------------

TEST(ElisionResults, ValuesReferencesMoveOnlyAndVoidSurviveRetries) {
  SlrElision<ScriptedLock, SimulatedBackend> policy;
  policy.backend().script({kConflict});
  auto owned = policy.write([] { return std::make_unique<int>(5); });
  ASSERT_NE(owned, nullptr);
  EXPECT_EQ(*owned, 5);

  int target = 0;
  policy.backend().script({kConflict});
  int& ref = policy.read([&]() -> int& { return target; });
  EXPECT_EQ(&ref, &target);

  policy.backend().script({}, kConflict);  // under the lock
  int& locked_ref = policy.write([&]() -> int& { return target; });
  EXPECT_EQ(&locked_ref, &target);

  unsigned runs = 0;
  policy.backend().script({kConflict});
  policy.write([&] { ++runs; });
  EXPECT_EQ(runs, 1u);  // the aborted attempt never reached f
}

// ---- Without a transaction backend --------------------------------------------------------------

template <template <class, class, unsigned, class> class Policy>
void expect_lock_only_when_unavailable() {
  Traced<Policy> t;
  t.policy.backend().set_available(false);
  EXPECT_FALSE(t.policy.speculative());
  EXPECT_EQ(t.write(), 1u);
  EXPECT_EQ(t.log, (Log{"lock", "f", "unlock"}));
  EXPECT_EQ(t.policy.backend().begins(), 0u);
  EXPECT_EQ(t.policy.stats().started, 0u);
  EXPECT_EQ(t.policy.stats().fallbacks, 1u);
}

TEST(ElisionUnavailable, EveryPolicyGoesStraightToTheLock) {
  expect_lock_only_when_unavailable<RetryElision>();
  expect_lock_only_when_unavailable<SlrElision>();
  expect_lock_only_when_unavailable<ScmElision>();
  expect_lock_only_when_unavailable<MixElision>();
  expect_lock_only_when_unavailable<AdaptiveElision>();
  EXPECT_FALSE(LockOnly<>::speculative());
}

// ---- Reader-writer locks: what read() and write() subscribe to --------------------------------

TEST(ElisionReaderWriter, ReadsIgnoreReadersWritesWaitForThem) {
  RetryElision<ReaderWriterLock<TtasLock>, SimulatedBackend, 10, ElisionStats> policy;
  auto& lock = policy.mutex();
  std::atomic<bool> reading{false}, released{false}, may_leave{false};
  std::thread reader([&] {
    std::shared_lock guard(lock);
    reading.store(true);
    while (!may_leave.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    released.store(true);
  });
  while (!reading.load()) std::this_thread::yield();
  EXPECT_EQ(policy.read([] { return 7; }), 7);  // speculates beside the reader
  EXPECT_EQ(policy.stats().committed, 1u);
  may_leave.store(true);
  const bool writer_saw_release = policy.write([&] { return released.load(); });
  reader.join();
  EXPECT_TRUE(writer_saw_release);  // write() waited for the reader to leave
  EXPECT_EQ(policy.stats().committed, 2u);
}

TEST(ElisionReaderWriter, FallbackReadTakesTheSharedSide) {
  LockOnly<ReaderWriterLock<McsLock>> policy;
  auto& lock = policy.mutex();
  policy.read([&] {
    EXPECT_TRUE(lock.has_readers());
    EXPECT_FALSE(lock.is_locked());
    EXPECT_TRUE(lock.try_lock_shared());  // other readers are admitted meanwhile
    lock.unlock_shared();
  });
  policy.write([&] {
    EXPECT_TRUE(lock.is_locked());
    EXPECT_FALSE(lock.has_readers());
  });
}

// ---- The real backend on this machine ---------------------------------------------------------

#if defined(__x86_64__) || defined(__i386__)
std::string cpu_vendor() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __get_cpuid(0, &eax, &ebx, &ecx, &edx);
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  return vendor;
}

TEST(RtmDetection, AmdHasNoRtm) {
  if (cpu_vendor() != "AuthenticAMD") GTEST_SKIP() << "not an AMD CPU";
  EXPECT_FALSE(rtm_available());
  EXPECT_FALSE(RtmBackend::available());
  EXPECT_FALSE(RtmBackend().in_transaction());
}
#endif

template <class Policy>
class RealBackendTest : public ::testing::Test {};

using RealPolicies =
    ::testing::Types<RetryElision<TtasLock, RtmBackend, 10, ElisionStats>,
                     SlrElision<McsLock, RtmBackend, 5, ElisionStats>,
                     ScmElision<ClhLock, RtmBackend, 20, ElisionStats>,
                     MixElision<TasLock, RtmBackend, 10, ElisionStats>,
                     MixElision<ReaderWriterLock<McsLock>, RtmBackend, 10, ElisionStats>,
                     AdaptiveElision<McsLock, RtmBackend, 10, ElisionStats>,
                     LockOnly<McsLock, ElisionStats>,
                     LockOnly<ReaderWriterLock<TtasLock>, ElisionStats>>;
TYPED_TEST_SUITE(RealBackendTest, RealPolicies);

// Each policy with the hardware backend: mutual exclusion among writers, readers never see a
// half-done write, every operation commits or falls back, and without RTM all fall back.
TYPED_TEST(RealBackendTest, MutualExclusionWithEightThreads) {
  TypeParam policy;
  if constexpr (requires { TypeParam::kMaxRetries; }) {
    EXPECT_EQ(policy.speculative(), rtm_available());
  } else {
    EXPECT_FALSE(policy.speculative());
  }
  constexpr unsigned kThreads = 8, kOps = 8000;
  std::uint64_t first = 0, second = 0;  // plain: protected by the policy alone
  std::atomic<bool> writer_inside{false};
  std::atomic<unsigned> violations{0};
  std::atomic<std::uint64_t> writes{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (unsigned i = 0; i < kOps; ++i) {
        if ((i + t) % 4 == 0) {
          policy.write([&] {
            // Relaxed: must add no ordering of its own (see sync_locks_test.cpp).
            if (writer_inside.exchange(true, std::memory_order_relaxed)) violations++;
            ++first;
            ++second;
            writer_inside.store(false, std::memory_order_relaxed);
          });
          writes.fetch_add(1, std::memory_order_relaxed);
        } else {
          const bool consistent = policy.read([&] { return first == second; });
          if (!consistent) violations++;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(violations.load(), 0u);
  EXPECT_EQ(first, writes.load());
  EXPECT_EQ(second, writes.load());

  const ElisionCounters c = policy.stats();
  EXPECT_EQ(c.committed + c.fallbacks, std::uint64_t{kThreads} * kOps);
  EXPECT_EQ(c.started, c.committed + c.aborted());
  EXPECT_LE(c.retries_exhausted + c.skipped, c.fallbacks);
  if (!policy.speculative()) {
    EXPECT_EQ(c.started, 0u);  // RTM absent: lock fallback was measured
    EXPECT_EQ(c.fallbacks, std::uint64_t{kThreads} * kOps);
  }
}

}  // namespace
