// Real hardware transactions through the RTM backend and every elision scheme (ccf/sync/htm.hpp):
// commits, an explicit abort, a capacity abort from a write set larger than L1, conflict aborts
// between two threads, WAS_LOCKED under lazy subscription, and the lock fallback -- each checked
// in the policy's counters and in the result. Runs where rtm_available() (an Intel CPU whose RTM
// commits, outside ThreadSanitizer: htm.hpp, "Under ThreadSanitizer"); elsewhere every test
// skips and says why (RtmSupportProbe runs everywhere), and the same state machines are covered by
// tests/sync_elision_test.cpp on the simulated backend.
//
// Hardware transactions also abort for reasons no test controls (an interrupt, a page fault), so
// each scenario is repeated, a bounded number of times, until the outcome it provokes is seen;
// the invariants (exact results, counter identities) are checked on every repetition.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "ccf/sync/htm.hpp"
#include "ccf/sync/rtm_backend.hpp"
#include "ccf/sync/spin_locks.hpp"

namespace {

using namespace ccf::sync;

constexpr int kTries = 1000;  // repetitions of a scenario until its outcome shows

#define SKIP_WITHOUT_RTM() \
  if (!rtm_available()) GTEST_SKIP() << describe(rtm_support())

// 4 MiB, written one byte per cache line: far more lines than any L1 (or L2) can track.
std::vector<unsigned char> touched_buffer() {
  return std::vector<unsigned char>(std::size_t{4} << 20, 0);  // zeroed: every page committed
}

// Written inside raw transactions: at namespace scope, so that the compiler keeps every access in
// memory around XBEGIN / XEND (their "memory" clobber), where the hardware commits or discards it.
std::uint64_t g_word = 0;

void write_every_line(std::vector<unsigned char>& buffer, unsigned char value) {
  for (std::size_t i = 0; i < buffer.size(); i += 64) buffer[i] = value;
}

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

// On every host: what the probe answers follows from the CPU and the build.
TEST(RtmSupportProbe, FollowsFromTheCpuAndTheBuild) {
  const RtmSupport support = rtm_support();
  EXPECT_EQ(rtm_available(), support == RtmSupport::kAvailable);
  EXPECT_EQ(RtmBackend::available(), rtm_available());
  if (kThreadSanitizer) {
    EXPECT_NE(support, RtmSupport::kAvailable) << "TSan cannot check hardware transactions";
  }
  if (support == RtmSupport::kOffUnderTsan) {
    EXPECT_TRUE(kThreadSanitizer);
  }
  std::cout << "this host: " << describe(support) << "\n";
}

TEST(RtmSupportProbe, OnlyTheSpeculativeAnswerSaysSpeculative) {
  for (const RtmSupport s : {RtmSupport::kAbsent, RtmSupport::kAlwaysAborts,
                             RtmSupport::kOffUnderTsan, RtmSupport::kAvailable}) {
    const std::string text(describe(s));
    const bool speculative = text.find("speculative") != std::string::npos;
    EXPECT_EQ(speculative, s == RtmSupport::kAvailable) << text;
    EXPECT_EQ(text.find("lock fallback measured") != std::string::npos, !speculative) << text;
  }
}

TEST(RtmHardware, ProbeAgreesWithTheBackend) {
  SKIP_WITHOUT_RTM();
  EXPECT_EQ(rtm_support(), RtmSupport::kAvailable);
  EXPECT_TRUE(RtmBackend::available());
  EXPECT_FALSE(RtmBackend().in_transaction());
}

TEST(RtmHardware, ACommittedTransactionsStoresAreVisible) {
  SKIP_WITHOUT_RTM();
  RtmBackend rtm;
  g_word = 0;
  bool inside = false;
  int committed = 0;
  for (int i = 0; i < kTries && committed == 0; ++i) {
    if (rtm.begin().started()) {
      inside = rtm.in_transaction();
      g_word = 42;
      rtm.end();
      ++committed;
    }
  }
  ASSERT_EQ(committed, 1) << "no transaction committed in " << kTries << " tries";
  EXPECT_TRUE(inside);
  EXPECT_EQ(g_word, 42u);
  EXPECT_FALSE(rtm.in_transaction());
}

TEST(RtmHardware, AnExplicitAbortRollsBackAndCarriesItsCode) {
  SKIP_WITHOUT_RTM();
  RtmBackend rtm;
  g_word = 0;
  bool seen = false;
  for (int i = 0; i < kTries && !seen; ++i) {
    const TxStatus status = rtm.begin();
    if (status.started()) {
      g_word = 7;
      rtm.abort<0x42>();  // resumes at begin() with the explicit status
      rtm.end();          // not reached on the hardware
      FAIL() << "XABORT returned inside a transaction";
    }
    if (status.explicit_abort()) {
      EXPECT_EQ(status.code(), 0x42);
      EXPECT_FALSE(status.was_locked());
      seen = true;
    }
  }
  EXPECT_TRUE(seen) << "no explicit abort in " << kTries << " tries";
  EXPECT_EQ(g_word, 0u) << "the aborted store was not rolled back";
}

TEST(RtmHardware, AWriteSetLargerThanTheCacheAbortsForCapacity) {
  SKIP_WITHOUT_RTM();
  RtmBackend rtm;
  std::vector<unsigned char> buffer = touched_buffer();
  bool seen = false;
  for (int i = 0; i < kTries && !seen; ++i) {
    const TxStatus status = rtm.begin();
    if (status.started()) {
      write_every_line(buffer, 1);
      rtm.end();
      FAIL() << "a 4 MiB write set committed";
    }
    seen = status.capacity();
  }
  EXPECT_TRUE(seen) << "no capacity abort in " << kTries << " tries";
  EXPECT_EQ(buffer[0], 0) << "the aborted stores were not rolled back";
}

// ---- Each elision scheme on the hardware ------------------------------------------------------

template <class Policy>
class RtmSchemeTest : public ::testing::Test {};

using Retry = RetryElision<McsLock, RtmBackend, 10, ElisionStats>;
using Slr = SlrElision<McsLock, RtmBackend, 10, ElisionStats>;
using Scm = ScmElision<TtasLock, RtmBackend, 10, ElisionStats>;
using Mix = MixElision<McsLock, RtmBackend, 10, ElisionStats>;
using Schemes = ::testing::Types<Retry, Slr, Scm, Mix>;
TYPED_TEST_SUITE(RtmSchemeTest, Schemes);

template <class Policy>
constexpr bool kLazySubscription = std::is_same_v<Policy, Slr> || std::is_same_v<Policy, Mix>;

// started == committed + aborted, and each section ran exactly once to completion (committed or
// under the lock).
void expect_balanced(const ElisionCounters& c, std::uint64_t sections) {
  EXPECT_EQ(c.started, c.committed + c.aborted());
  EXPECT_EQ(c.committed + c.fallbacks, sections);
}

TYPED_TEST(RtmSchemeTest, UncontendedSectionsCommit) {
  SKIP_WITHOUT_RTM();
  TypeParam policy;
  ASSERT_TRUE(policy.speculative());
  constexpr int kSections = 10'000;
  std::uint64_t count = 0;  // plain: written inside the sections only
  for (int i = 0; i < kSections; ++i) {
    EXPECT_EQ(policy.write([&] { return ++count; }), static_cast<std::uint64_t>(i) + 1);
  }
  EXPECT_EQ(count, std::uint64_t{kSections});
  const ElisionCounters c = policy.stats();
  expect_balanced(c, kSections);
  EXPECT_GT(c.committed, std::uint64_t{kSections} / 2) << "most uncontended sections commit";
  EXPECT_EQ(c.aborts_was_locked, 0u) << "nobody held the lock";
}

TYPED_TEST(RtmSchemeTest, ACapacityAbortFallsBackToTheLock) {
  SKIP_WITHOUT_RTM();
  TypeParam policy;
  std::vector<unsigned char> buffer = touched_buffer();
  std::uint64_t sections = 0;
  for (int i = 0; i < kTries && policy.stats().aborts_capacity == 0; ++i) {
    const auto value = static_cast<unsigned char>(i % 255 + 1);
    policy.write([&] { write_every_line(buffer, value); });
    ++sections;
    EXPECT_EQ(buffer[0], value);
    EXPECT_EQ(buffer[buffer.size() - 64], value);
  }
  const ElisionCounters c = policy.stats();
  EXPECT_GE(c.aborts_capacity, 1u) << "no capacity abort in " << kTries << " sections";
  EXPECT_EQ(c.committed, 0u) << "a 4 MiB write set committed";
  EXPECT_EQ(c.fallbacks, sections) << "every section ended under the lock";
  expect_balanced(c, sections);
}

TYPED_TEST(RtmSchemeTest, AnExplicitAbortFallsBackAtOnce) {
  SKIP_WITHOUT_RTM();
  TypeParam policy;
  std::uint64_t runs = 0, sections = 0;
  for (int i = 0; i < kTries && policy.stats().aborts_explicit == 0; ++i) {
    // Inside a transaction the abort resumes at XBEGIN; under the lock XABORT is a no-op.
    policy.write([&] {
      ++runs;
      policy.backend().template abort<0x42>();
    });
    ++sections;
  }
  const ElisionCounters c = policy.stats();
  EXPECT_GE(c.aborts_explicit, 1u) << "no explicit abort in " << kTries << " sections";
  EXPECT_GE(c.started, sections);
  EXPECT_EQ(c.committed, 0u);
  EXPECT_EQ(c.fallbacks, sections);
  EXPECT_EQ(runs, sections) << "only the runs under the lock count: the aborted ones rolled back";
  EXPECT_EQ(c.aborts_was_locked, 0u) << "nobody held the lock";
  expect_balanced(c, sections);
}

// Thread A's sections read one cache line many times; thread B writes that line without pause
// until A is done. B's writes abort A's transactions with CONFLICT; each section still completes
// exactly once.
TYPED_TEST(RtmSchemeTest, ConflictsBetweenTwoThreadsAbortAndAreRetried) {
  SKIP_WITHOUT_RTM();
  TypeParam policy;
  alignas(64) std::atomic<std::uint64_t> line{0};
  std::atomic<bool> done{false};
  std::thread writer([&] {
    // Relaxed: only the cache line's ownership matters, not the value.
    for (std::uint64_t i = 0; !done.load(std::memory_order_relaxed); ++i) {
      line.store(i, std::memory_order_relaxed);
    }
  });
  std::uint64_t completed = 0, sections = 0;
  for (int i = 0; i < kTries && policy.stats().aborts_conflict == 0; ++i) {
    policy.write([&] {
      std::uint64_t sum = 0;
      for (int r = 0; r < 20'000; ++r) sum += line.load(std::memory_order_relaxed);
      ++completed;
      return sum;
    });
    ++sections;
  }
  done.store(true);
  writer.join();
  const ElisionCounters c = policy.stats();
  EXPECT_GE(c.aborts_conflict, 1u) << "no conflict abort in " << kTries << " sections";
  EXPECT_EQ(completed, sections);
  expect_balanced(c, sections);
  if constexpr (requires { policy.aux_mutex(); }) {
    EXPECT_GE(c.aux_acquisitions, 1u) << "SCM serializes after a conflict";
  }
}

// Lazy subscription runs the section while the lock is held and reads the lock only before
// XEND: WAS_LOCKED, then (S3) a wait for the holder, then a commit or the fallback. Eager
// subscription waits before XBEGIN instead. Either way the section takes effect after the
// holder's critical section, whole. A round whose transaction aborted for another reason first
// (an interrupt) shows no WAS_LOCKED; rounds repeat until one does, at most 20.
TYPED_TEST(RtmSchemeTest, ALockHolderDelaysTheSectionUntilItLeaves) {
  SKIP_WITHOUT_RTM();
  constexpr bool kLazy = kLazySubscription<TypeParam>;
  bool saw_was_locked = false;
  for (int round = 0; round < 20 && !saw_was_locked; ++round) {
    TypeParam policy;
    std::uint64_t value = 0;  // plain: written inside sections or under the lock only
    policy.mutex().lock();
    value = 1;
    std::atomic<bool> finished{false};
    std::thread section([&] {
      policy.write([&] { value *= 10; });  // must see the holder's stores: 2 * 10
      finished.store(true);
    });
    // Hold the lock until the section has aborted for it (lazy, at most 1 s), or 50 ms (eager).
    for (int i = 0; i < (kLazy ? 2000 : 100); ++i) {
      if (kLazy && policy.stats().aborts_was_locked > 0) break;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    EXPECT_FALSE(finished.load()) << "the section ran while the lock was held";
    value += 1;
    policy.mutex().unlock();
    section.join();
    EXPECT_EQ(value, 20u) << "round " << round;
    const ElisionCounters c = policy.stats();
    expect_balanced(c, 1);
    saw_was_locked = !kLazy || c.aborts_was_locked > 0;
  }
  EXPECT_TRUE(saw_was_locked) << "lazy subscription never aborted for the held lock";
}

}  // namespace
