// Kcas (lockfree/kcas.hpp): sequential semantics, payload fields, money transfer with a
// conserved total under 2 / 8 / 16 threads (oversubscribed on small machines), the stall test
// (a thread frozen inside its K-CAS while others complete thousands of operations), descriptor
// reclamation (including readers racing constant reclamation, and descriptor pools that outlive
// their threads or are drained at exit), and a happens-before edge that ThreadSanitizer checks.
#include "ccf/lockfree/kcas.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <latch>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "held_guard.hpp"

namespace {

using ccf::lockfree::Kcas;
using ccf::lockfree::KcasEntry;
using ccf::lockfree::KcasField;
using ccf::lockfree::KcasHookEvent;
using ccf::lockfree::KcasHookPoint;
using ccf::lockfree::KcasStats;
using ccf::lockfree::KcasStatus;
using ccf::lockfree::KcasWord;

using CountingKcas = Kcas<4, KcasStats>;

// ---------------------------------------------------------------------------------------------
// Sequential semantics

TEST(KcasSequential, ReadAndSingleWordCas) {
  CountingKcas kcas;
  KcasWord word(7);
  EXPECT_EQ(kcas.read(word), 7U);
  EXPECT_FALSE(kcas.cas(word, 8, 9));
  EXPECT_EQ(kcas.read(word), 7U);
  EXPECT_TRUE(kcas.cas(word, 7, KcasWord::kPayloadMask));
  EXPECT_EQ(kcas.read(word), KcasWord::kPayloadMask);
  EXPECT_TRUE(word.is_settled());
}

TEST(KcasSequential, SuccessChangesEveryWord) {
  CountingKcas kcas;
  std::array<KcasWord, 3> w{};
  // Entries in descending address order: the K-CAS sorts them itself.
  EXPECT_TRUE(kcas.compare_exchange({{&w[2], 0, 30}, {&w[1], 0, 20}, {&w[0], 0, 10}}));
  EXPECT_EQ(kcas.read(w[0]), 10U);
  EXPECT_EQ(kcas.read(w[1]), 20U);
  EXPECT_EQ(kcas.read(w[2]), 30U);
  EXPECT_EQ(kcas.stats().kcas_successes.load(), 1U);
}

TEST(KcasSequential, AnyMismatchChangesNothing) {
  for (std::size_t wrong = 0; wrong < 3; ++wrong) {
    CountingKcas kcas;
    std::array<KcasWord, 3> w{};
    ASSERT_TRUE(kcas.compare_exchange({{&w[0], 0, 1}, {&w[1], 0, 2}, {&w[2], 0, 3}}));
    std::array<KcasEntry, 3> entries{{{&w[0], 1, 100}, {&w[1], 2, 200}, {&w[2], 3, 300}}};
    entries[wrong].expected = 99;
    EXPECT_FALSE(kcas.compare_exchange(entries)) << "mismatch at word " << wrong;
    EXPECT_EQ(kcas.read(w[0]), 1U);
    EXPECT_EQ(kcas.read(w[1]), 2U);
    EXPECT_EQ(kcas.read(w[2]), 3U);
  }
}

// Changes word 2 between the pre-read and the install, from inside the hook.
struct Interfere {
  static constexpr bool kEnabled = true;
  Kcas<4, KcasStats, Interfere>* kcas = nullptr;
  KcasWord* target = nullptr;
  void operator()(const KcasHookEvent& event) {
    if (event.point == KcasHookPoint::kAfterInstall && event.index == 0 && target != nullptr) {
      KcasWord* t = target;
      target = nullptr;
      ASSERT_TRUE(kcas->cas(*t, 5, 6));
    }
  }
};

// A mismatch found only after some words were installed (the pre-read saw a match): the
// failed descriptor must leave the installed words with their old values.
TEST(KcasSequential, MismatchAfterInstallRestoresOldValues) {
  Kcas<4, KcasStats, Interfere> kcas;
  std::array<KcasWord, 3> w{};
  ASSERT_TRUE(kcas.compare_exchange({{&w[0], 0, 1}, {&w[1], 0, 2}, {&w[2], 0, 5}}));
  kcas.hook().kcas = &kcas;
  kcas.hook().target = &w[2];
  const std::uint64_t cleaned_before = kcas.stats().words_cleaned.load();
  EXPECT_FALSE(kcas.compare_exchange({{&w[0], 1, 10}, {&w[1], 2, 20}, {&w[2], 5, 50}}));
  EXPECT_EQ(kcas.read(w[0]), 1U);
  EXPECT_EQ(kcas.read(w[1]), 2U);
  EXPECT_EQ(kcas.read(w[2]), 6U);
  EXPECT_TRUE(w[0].is_settled() && w[1].is_settled() && w[2].is_settled())
      << "the failed K-CAS left its descriptor in a word it had installed";
  EXPECT_EQ(kcas.stats().words_cleaned.load() - cleaned_before, 2U)
      << "words 0 and 1 were installed, then restored";
}

TEST(KcasSequential, EdgeSizes) {
  CountingKcas kcas;
  std::array<KcasWord, 5> w{};
  EXPECT_TRUE(kcas.compare_exchange(std::span<const KcasEntry>{}));
  EXPECT_TRUE(kcas.compare_exchange({{&w[0], 0, 4}}));  // one word: a plain cas
  EXPECT_EQ(kcas.read(w[0]), 4U);
  EXPECT_EQ(kcas.stats().descriptors_allocated.load(), 0U);
  EXPECT_THROW(kcas.compare_exchange(
                   {{&w[0], 4, 0}, {&w[1], 0, 0}, {&w[2], 0, 0}, {&w[3], 0, 0}, {&w[4], 0, 0}}),
               std::invalid_argument);
  EXPECT_EQ(kcas.read(w[0]), 4U);
}

TEST(KcasSequential, RepeatedWords) {
  CountingKcas kcas;
  std::array<KcasWord, 2> w{};
  EXPECT_TRUE(kcas.compare_exchange({{&w[0], 0, 1}, {&w[1], 0, 2}, {&w[0], 0, 1}}));
  EXPECT_EQ(kcas.read(w[0]), 1U);
  EXPECT_EQ(kcas.read(w[1]), 2U);
  // A word cannot hold two values at once.
  EXPECT_FALSE(kcas.compare_exchange({{&w[0], 1, 5}, {&w[1], 2, 6}, {&w[0], 2, 5}}));
  EXPECT_EQ(kcas.read(w[0]), 1U);
  EXPECT_EQ(kcas.read(w[1]), 2U);
}

// The words of a K-CAS hold payloads again when it returns, succeeded or failed: reads after it
// follow no descriptor, and a later cas needs none.
TEST(KcasSequential, SuccessAndFailureLeavePayloads) {
  CountingKcas kcas;
  std::array<KcasWord, 4> w{};
  std::mt19937_64 rng(7);
  std::array<std::uint64_t, 4> model{};
  std::uint64_t successes = 0;
  for (int op = 0; op < 2000; ++op) {
    std::array<KcasEntry, 3> entries{};
    for (std::size_t j = 0; j < entries.size(); ++j) {
      const std::size_t at = (op + j) % w.size();  // three distinct words
      // Mostly the right expected value; one time in four a wrong one somewhere.
      const std::uint64_t expected = model[at] + (rng() % 12 == 0);
      entries[j] = {&w[at], expected, rng() % 1000};
    }
    const bool ok = kcas.compare_exchange(entries);
    bool should = true;
    for (const KcasEntry& e : entries) should &= model[e.word - w.data()] == e.expected;
    ASSERT_EQ(ok, should);
    if (ok) {
      ++successes;
      for (const KcasEntry& e : entries) model[e.word - w.data()] = e.desired;
    }
    for (std::size_t at = 0; at < w.size(); ++at) {
      ASSERT_TRUE(w[at].is_settled()) << "after operation " << op << ", word " << at;
      ASSERT_EQ(kcas.read(w[at]), model[at]);
    }
  }
  EXPECT_GT(successes, 500U);
  EXPECT_TRUE(kcas.cas(w[0], model[0], 5));
  EXPECT_EQ(kcas.stats().cas_over_descriptor.load(), 0U);
  EXPECT_EQ(kcas.stats().reads_through_descriptor.load(), 0U);
  EXPECT_EQ(kcas.stats().left_to_finalization.load(), 0U);
  EXPECT_EQ(kcas.stats().cleaned_at_once.load(), kcas.stats().descriptors_allocated.load());
  kcas.drain();
  EXPECT_EQ(kcas.stats().descriptors_allocated.load(), kcas.stats().descriptors_freed.load());
}

// Pauses one role's thread at one hook point until released.
struct Pause {
  KcasHookPoint point;
  unsigned index;
  bool helping;
  std::atomic<bool> armed{true};
  std::atomic<bool> reached{false};
  std::atomic<bool> open{false};
  void maybe_stop(const KcasHookEvent& event) {
    if (event.point != point || event.index != index || event.helping != helping ||
        !armed.exchange(false)) {
      return;
    }
    reached.store(true);
    while (!open.load()) std::this_thread::yield();
  }
  void wait_reached() const {
    while (!reached.load()) std::this_thread::yield();
  }
};

thread_local Pause* t_pause = nullptr;

struct PauseHook {
  static constexpr bool kEnabled = true;
  void operator()(const KcasHookEvent& event) const {
    if (t_pause != nullptr) t_pause->maybe_stop(event);
  }
};

using PausingKcas = Kcas<4, KcasStats, PauseHook>;

// Between the decision and the cleanup the descriptor is closed: reads see the new values
// through it, and a cas writes its payload over it at once (no descriptor of its own). The
// owner's cleanup then leaves that payload alone.
TEST(KcasCleanup, WritesBetweenDecisionAndCleanupNeedNoDescriptor) {
  PausingKcas kcas;
  std::array<KcasWord, 2> w{};
  Pause pause{KcasHookPoint::kBeforeCleanup, 0, false};
  std::thread owner([&] {
    t_pause = &pause;
    EXPECT_TRUE(kcas.compare_exchange({{&w[0], 0, 1}, {&w[1], 0, 2}}));
  });
  pause.wait_reached();
  EXPECT_FALSE(w[0].is_settled());
  EXPECT_EQ(kcas.read(w[0]), 1U);
  EXPECT_EQ(kcas.read(w[1]), 2U);
  EXPECT_TRUE(kcas.cas(w[0], 1, 9));
  EXPECT_TRUE(w[0].is_settled()) << "a payload replaces a closed descriptor directly";
  EXPECT_EQ(kcas.stats().cas_over_descriptor.load(), 0U);
  pause.open.store(true);
  owner.join();
  EXPECT_EQ(kcas.read(w[0]), 9U);
  EXPECT_EQ(kcas.read(w[1]), 2U);
  EXPECT_TRUE(w[0].is_settled() && w[1].is_settled());
  EXPECT_EQ(kcas.stats().words_cleaned.load(), 1U) << "word 1 only: word 0 had changed";
}

// An owner's K-CAS {w[0]: 0 -> 1, w[1]: 0 -> 2} stopped after its first install, and a helper (a
// cas that meets it in w[0]) stopped with both words installed, just before the decision.
struct HelpedKcas {
  PausingKcas kcas;
  std::array<KcasWord, 3> w{};
  Pause owner_pause{KcasHookPoint::kAfterInstall, 0, false};
  Pause helper_pause{KcasHookPoint::kBeforeDecide, 2, true};
  std::thread owner;
  std::thread helper;

  HelpedKcas() {
    owner = std::thread([this] {
      t_pause = &owner_pause;
      EXPECT_TRUE(kcas.compare_exchange({{&w[0], 0, 1}, {&w[1], 0, 2}}));
    });
    owner_pause.wait_reached();  // D in w[0], active
    helper = std::thread([this] {
      t_pause = &helper_pause;
      EXPECT_FALSE(kcas.cas(w[0], 0, 7));  // helps D (installs w[1]), then w[0] == 1
    });
    helper_pause.wait_reached();
  }
  HelpedKcas(const HelpedKcas&) = delete;
  HelpedKcas& operator=(const HelpedKcas&) = delete;
  ~HelpedKcas() {
    owner_pause.open.store(true);
    helper_pause.open.store(true);
    if (owner.joinable()) owner.join();
    if (helper.joinable()) helper.join();
  }
  // The owner decides D and leaves while the helper is still a member.
  void finish_owner() {
    owner_pause.open.store(true);
    owner.join();
  }
  void finish_helper() {
    helper_pause.open.store(true);
    helper.join();
  }
};

// A helper that is still inside the operation when the owner leaves: the owner hands the words
// to finalization, writes over them meanwhile install descriptors that wait for the helper's
// guard (a late install by the helper could otherwise strike a payload), and the helper
// restores the rest when it leaves. Every value is right throughout; drain() settles the
// waiting ones.
TEST(KcasCleanup, AHelperThatOutlivesTheOwnerRestoresTheWords) {
  HelpedKcas scene;
  PausingKcas& kcas = scene.kcas;
  auto& w = scene.w;
  scene.finish_owner();
  EXPECT_EQ(kcas.stats().left_to_finalization.load(), 1U);
  EXPECT_EQ(kcas.read(w[0]), 1U);
  EXPECT_EQ(kcas.read(w[1]), 2U);
  EXPECT_GT(kcas.stats().reads_through_descriptor.load(), 0U);
  // Over D (decided, open): a one-word descriptor for the cas, a waiting K-CAS for the pair;
  // the pinned helper keeps the epoch from moving two past them, so both wait.
  EXPECT_TRUE(kcas.cas(w[1], 2, 3));
  EXPECT_EQ(kcas.stats().cas_over_descriptor.load(), 1U);
  EXPECT_EQ(kcas.stats().left_to_finalization.load(), 2U) << "the cas's descriptor waits";
  EXPECT_TRUE(kcas.compare_exchange({{&w[0], 1, 4}, {&w[2], 0, 5}}));
  EXPECT_EQ(kcas.stats().left_to_finalization.load(), 3U) << "the pair's K-CAS waits";
  EXPECT_EQ(kcas.read(w[0]), 4U);
  EXPECT_EQ(kcas.read(w[1]), 3U);
  EXPECT_EQ(kcas.read(w[2]), 5U);
  scene.finish_helper();
  EXPECT_EQ(kcas.read(w[0]), 4U);
  EXPECT_EQ(kcas.read(w[1]), 3U);
  EXPECT_EQ(kcas.read(w[2]), 5U);
  kcas.drain();
  for (const KcasWord& word : w) EXPECT_TRUE(word.is_settled());
  EXPECT_EQ(kcas.read(w[0]), 4U);
  EXPECT_EQ(kcas.read(w[1]), 3U);
  EXPECT_EQ(kcas.read(w[2]), 5U);
  EXPECT_EQ(kcas.stats().descriptors_allocated.load(), kcas.stats().descriptors_freed.load());
}

// When the helper is the last to leave and nothing was written over the words meanwhile, it
// restores them itself: no word waits for a grace period.
TEST(KcasCleanup, TheLastHelperToLeaveRestoresTheWordsAtOnce) {
  HelpedKcas scene;
  scene.finish_owner();
  EXPECT_FALSE(scene.w[0].is_settled());
  scene.finish_helper();
  EXPECT_TRUE(scene.w[0].is_settled() && scene.w[1].is_settled())
      << "the last member restores the words";
  EXPECT_EQ(scene.kcas.read(scene.w[0]), 1U);
  EXPECT_EQ(scene.kcas.read(scene.w[1]), 2U);
}

TEST(KcasFields, PackAroundTheReservedBit) {
  using Fingerprints = KcasField<0, 48>;
  using Counter = KcasField<48, 15>;
  static_assert(Counter::kMask >> 63 == 0, "the counter must not touch the reserved bit");
  std::uint64_t payload = Fingerprints::set(0, 0xabc'def0'1234);
  payload = Counter::set(payload, Counter::kMax);
  EXPECT_TRUE(KcasWord::is_payload(payload));
  EXPECT_EQ(Fingerprints::get(payload), 0xabc'def0'1234U);
  EXPECT_EQ(Counter::get(payload), Counter::kMax);
  payload = Counter::set(payload, Counter::get(payload) + 1);  // wraps to 0
  EXPECT_EQ(Counter::get(payload), 0U);
  EXPECT_EQ(Fingerprints::get(payload), 0xabc'def0'1234U);
}

// ---------------------------------------------------------------------------------------------
// Money transfer: accounts in K-CAS words, a conserved total.

constexpr std::size_t kAccounts = 8;
constexpr std::uint64_t kInitialBalance = 1000;
constexpr std::uint64_t kTotal = kAccounts * kInitialBalance;

// Yields at a random quarter of the K-CAS steps, so that operations are preempted half-way
// and meet each other's descriptors even on few cores.
struct YieldHook {
  static constexpr bool kEnabled = true;
  void operator()(const KcasHookEvent&) const {
    thread_local std::minstd_rand rng(std::random_device{}());
    if (rng() % 4 == 0) std::this_thread::yield();
  }
};

template <class Hook>
struct Bank {
  // Up to 8 words per K-CAS: a validating snapshot covers every account.
  Kcas<kAccounts, KcasStats, Hook> kcas;
  std::array<KcasWord, kAccounts> accounts{};

  Bank() {
    for (KcasWord& a : accounts) EXPECT_TRUE(kcas.cas(a, 0, kInitialBalance));
  }

  // Moves money from one account to one or two others; false if a word changed meanwhile.
  bool transfer(std::mt19937_64& rng) {
    std::array<std::size_t, 3> who{};
    const std::size_t k = 2 + rng() % 2;
    for (std::size_t i = 0; i < k; ++i) {
      bool repeated = true;
      while (repeated) {
        who[i] = rng() % kAccounts;
        repeated = false;
        for (std::size_t j = 0; j < i; ++j) repeated |= who[j] == who[i];
      }
    }
    std::array<KcasEntry, 3> entries{};
    for (std::size_t i = 0; i < k; ++i) {
      const std::uint64_t balance = kcas.read(accounts[who[i]]);
      entries[i] = KcasEntry{&accounts[who[i]], balance, balance};
    }
    if (entries[0].expected == 0) return false;
    std::uint64_t amount = 1 + rng() % entries[0].expected;
    entries[0].desired -= amount;
    for (std::size_t i = 1; i < k; ++i) {
      const std::uint64_t share = i + 1 == k ? amount : amount / 2;
      entries[i].desired += share;
      amount -= share;
    }
    return kcas.compare_exchange(std::span<const KcasEntry>(entries.data(), k));
  }

  // A consistent snapshot: read every account, then K-CAS them all to the same values. On
  // success the values were all there at once (at the K-CAS's linearization point).
  bool snapshot(std::array<std::uint64_t, kAccounts>& values) {
    std::array<KcasEntry, kAccounts> entries{};
    for (std::size_t i = 0; i < kAccounts; ++i) {
      values[i] = kcas.read(accounts[i]);
      entries[i] = KcasEntry{&accounts[i], values[i], values[i]};
    }
    return kcas.compare_exchange(entries);
  }

  std::uint64_t total() const {
    std::uint64_t sum = 0;
    for (const KcasWord& a : accounts) sum += kcas.read(a);
    return sum;
  }
};

template <class Hook>
void run_money_transfer(int writers) {
  constexpr int kOpsInAll = 80'000;
  const int ops_per_writer = kOpsInAll / writers;

  Bank<Hook> bank;
  std::atomic<int> writers_left{writers};
  std::atomic<std::uint64_t> transfers{0};
  std::atomic<std::uint64_t> snapshots{0};
  std::atomic<std::uint64_t> bad_snapshots{0};
  std::atomic<std::uint64_t> bad_reads{0};
  std::latch start(writers + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919 + 1);
      start.arrive_and_wait();
      std::uint64_t done = 0;
      for (int i = 0; i < ops_per_writer; ++i) {
        if (i % 8 == 7) {
          // A single-word no-op rewrite: exercises cas() over in-flight and finished
          // descriptors without changing the total.
          KcasWord& a = bank.accounts[rng() % kAccounts];
          const std::uint64_t balance = bank.kcas.read(a);
          if (balance > kTotal) bad_reads.fetch_add(1);
          bank.kcas.cas(a, balance, balance);
        } else {
          done += bank.transfer(rng);
        }
      }
      transfers.fetch_add(done);
      writers_left.fetch_sub(1);
    });
  }
  // Snapshots while the writers run (how many succeed depends on the scheduling: with 16
  // writers on 2 cores it may be none), then one after they stopped, which must succeed: a
  // K-CAS fails only when one of its words changed.
  bool final_snapshot_failed = false;
  threads.emplace_back([&] {
    start.arrive_and_wait();
    std::array<std::uint64_t, kAccounts> values{};
    const auto check = [&] {
      std::uint64_t sum = 0;
      for (std::uint64_t v : values) {
        sum += v;
        if (v > kTotal) bad_snapshots.fetch_add(1);  // a negative balance wraps around
      }
      if (sum != kTotal) bad_snapshots.fetch_add(1);
    };
    do {
      if (!bank.snapshot(values)) continue;
      snapshots.fetch_add(1);
      check();
    } while (writers_left.load() > 0);
    final_snapshot_failed = !bank.snapshot(values);
    check();
  });
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(bad_snapshots.load(), 0U);
  EXPECT_EQ(bad_reads.load(), 0U);
  EXPECT_FALSE(final_snapshot_failed) << "a K-CAS over unchanged words failed";
  EXPECT_GT(transfers.load(), static_cast<std::uint64_t>(kOpsInAll) / 4);
  EXPECT_EQ(bank.total(), kTotal);
  for (const KcasWord& a : bank.accounts) EXPECT_LE(bank.kcas.read(a), kTotal);

  // Reclamation: descriptors were freed while the threads ran, and all of them after a drain.
  const auto& stats = bank.kcas.stats();
  EXPECT_GT(stats.descriptors_freed.load(), 0U);
  bank.kcas.drain();
  EXPECT_EQ(stats.descriptors_allocated.load(), stats.descriptors_freed.load());
  EXPECT_EQ(bank.kcas.domain().retired_count(), bank.kcas.domain().reclaimed_count());
  for (const KcasWord& a : bank.accounts) EXPECT_TRUE(a.is_settled());
  EXPECT_EQ(bank.total(), kTotal);
  std::printf(
      "[ info ] %d writers%s: %llu transfers, %llu snapshots under way, %llu helps, %llu "
      "descriptors\n",
      writers, Hook::kEnabled ? " (yielding)" : "",
      static_cast<unsigned long long>(transfers.load()),
      static_cast<unsigned long long>(snapshots.load()),
      static_cast<unsigned long long>(stats.helps.load()),
      static_cast<unsigned long long>(stats.descriptors_allocated.load()));
}

// (writers, whether K-CAS steps yield at random)
class MoneyTransfer : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(MoneyTransfer, TotalIsConservedAndNoAccountGoesNegative) {
  const auto [writers, yielding] = GetParam();
  if (yielding) {
    run_money_transfer<YieldHook>(writers);
  } else {
    run_money_transfer<ccf::lockfree::NoKcasHook>(writers);
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, MoneyTransfer,
                         ::testing::Combine(::testing::Values(2, 8, 16), ::testing::Bool()));

// ---------------------------------------------------------------------------------------------
// The stall test: the thread that starts a K-CAS is frozen at a hook point; the others must
// complete (help) its operation and keep completing their own.

struct StallControl {
  KcasHookPoint point = KcasHookPoint::kAfterInstall;
  unsigned index = 0;
  std::atomic<bool> armed{false};
  std::atomic<bool> stalled{false};
  std::atomic<bool> released{false};
  std::atomic<const std::atomic<KcasStatus>*> status{nullptr};
};

thread_local bool t_victim = false;

struct StallHook {
  static constexpr bool kEnabled = true;
  StallControl* control = nullptr;
  void operator()(const KcasHookEvent& event) const {
    if (!t_victim || event.helping || event.point != control->point ||
        event.index != control->index || !control->armed.exchange(false)) {
      return;
    }
    control->status.store(event.status);
    control->stalled.store(true);
    while (!control->released.load()) std::this_thread::yield();
  }
};

using StallKcas = Kcas<4, KcasStats, StallHook>;

class Stall : public ::testing::TestWithParam<KcasHookPoint> {};

TEST_P(Stall, OthersHelpAndKeepGoing) {
  constexpr std::size_t kWords = 4;
  constexpr int kWorkers = 3;
  constexpr int kOpsPerWorker = 3000;
  StallControl control;
  control.point = GetParam();
  // Stop where the descriptor is already published: after the first install, before the
  // second, with both installed, or decided before its first word is restored.
  control.index = control.point == KcasHookPoint::kAfterInstall    ? 0
                  : control.point == KcasHookPoint::kBeforeInstall ? 1
                  : control.point == KcasHookPoint::kBeforeDecide  ? 2
                                                                   : 0;
  StallKcas kcas(StallHook{&control});
  std::array<KcasWord, kWords> words{};
  for (KcasWord& w : words) ASSERT_TRUE(kcas.cas(w, 0, 100));

  control.armed.store(true);
  std::thread victim([&] {
    t_victim = true;
    const std::uint64_t a = kcas.read(words[0]);
    const std::uint64_t b = kcas.read(words[1]);
    kcas.compare_exchange({{&words[0], a, a - 1}, {&words[1], b, b + 1}});
  });
  while (!control.stalled.load()) std::this_thread::yield();

  // The workers move units between all four words, the victim's two included.
  std::atomic<int> finished{0};
  std::atomic<std::uint64_t> completed{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kWorkers; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 1);
      std::uint64_t done = 0;
      for (int i = 0; i < kOpsPerWorker; ++i) {
        KcasWord& from = words[rng() % kWords];
        KcasWord& to = words[rng() % kWords];
        if (&from == &to) {
          const std::uint64_t v = kcas.read(from);
          done += kcas.cas(from, v, v);
          continue;
        }
        const std::uint64_t f = kcas.read(from);
        const std::uint64_t g = kcas.read(to);
        if (f == 0) continue;
        done += kcas.compare_exchange({{&from, f, f - 1}, {&to, g, g + 1}});
      }
      completed.fetch_add(done);
      finished.fetch_add(1);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished.load() < kWorkers && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool workers_done = finished.load() == kWorkers;
  const KcasStatus while_stalled = control.status.load()->load();
  control.released.store(true);
  victim.join();
  for (std::thread& t : workers) t.join();

  ASSERT_TRUE(workers_done) << "the workers did not finish while one thread was stalled";
  EXPECT_NE(while_stalled, KcasStatus::kActive) << "nobody completed the stalled K-CAS";
  // Stalled before its cleanup, the victim had decided already: nobody needed to help it.
  if (control.point != KcasHookPoint::kBeforeCleanup) {
    EXPECT_GT(kcas.stats().helps.load(), 0U);
  }
  EXPECT_GT(completed.load(), static_cast<std::uint64_t>(kWorkers * kOpsPerWorker) / 4);
  std::uint64_t total = 0;
  for (const KcasWord& w : words) total += kcas.read(w);
  EXPECT_EQ(total, kWords * 100);
  kcas.drain();
  EXPECT_EQ(kcas.stats().descriptors_allocated.load(), kcas.stats().descriptors_freed.load());
}

INSTANTIATE_TEST_SUITE_P(HookPoints, Stall,
                         ::testing::Values(KcasHookPoint::kBeforeInstall,
                                           KcasHookPoint::kAfterInstall,
                                           KcasHookPoint::kBeforeDecide,
                                           KcasHookPoint::kBeforeCleanup));

// The hazard that rule (R) of kcas.hpp exists for, played step by step: a helper checks word b
// (value 0) and stops just before its install CAS; meanwhile the K-CAS completes (b = 1) and a
// cas sets b back to 0. The late helper's CAS must not re-install the decided descriptor,
// which would make b read 1 again. (Breaking (R), by letting cas() or an early finalization
// write a payload over a descriptor reference, fails this test.)
struct Gate {
  std::atomic<bool> armed{true};
  std::atomic<bool> reached{false};
  std::atomic<bool> open{false};
  void stop() {
    reached.store(true);
    while (!open.load()) std::this_thread::yield();
  }
  void wait_reached() const {
    while (!reached.load()) std::this_thread::yield();
  }
};

enum class Role { kNone, kOwner, kHelper };
thread_local Role t_role = Role::kNone;

struct LateHelperHook {
  static constexpr bool kEnabled = true;
  Gate* owner = nullptr;   // stops the owner after its first install
  Gate* helper = nullptr;  // stops a helper before it installs the second word
  void operator()(const KcasHookEvent& event) const {
    if (t_role == Role::kOwner && !event.helping && event.point == KcasHookPoint::kAfterInstall &&
        event.index == 0 && owner->armed.exchange(false)) {
      owner->stop();
    }
    if (t_role == Role::kHelper && event.helping && event.point == KcasHookPoint::kBeforeInstall &&
        event.index == 1 && helper->armed.exchange(false)) {
      helper->stop();
    }
  }
};

// The hazard's cast: the owner's K-CAS D = {a: 0 -> 1, b: 0 -> 1} stopped after installing a,
// and a helper (a cas that finds D active in a with the expected value) stopped just before its
// install CAS on b, having read b == 0 and seen D active.
struct LateHelperScene {
  Gate owner_gate;
  Gate helper_gate;
  Kcas<4, KcasStats, LateHelperHook> kcas{LateHelperHook{&owner_gate, &helper_gate}};
  std::array<KcasWord, 4> w{};  // a = w[0], b = w[1]; w[2], w[3] drive the epoch
  std::thread owner;
  std::thread helper;

  LateHelperScene() {
    owner = std::thread([this] {
      t_role = Role::kOwner;
      kcas.compare_exchange({{&w[0], 0, 1}, {&w[1], 0, 1}});
    });
    owner_gate.wait_reached();
    helper = std::thread([this] {
      t_role = Role::kHelper;
      kcas.cas(w[0], 0, 7);
    });
    helper_gate.wait_reached();
  }
  LateHelperScene(const LateHelperScene&) = delete;
  LateHelperScene& operator=(const LateHelperScene&) = delete;
  ~LateHelperScene() {
    release_owner();
    release_helper();
  }
  void release_owner() {
    owner_gate.open.store(true);
    if (owner.joinable()) owner.join();
  }
  void release_helper() {
    helper_gate.open.store(true);
    if (helper.joinable()) helper.join();
  }
};

// Parameter: whether the stalled owner completes D itself (then retires it at once, so an
// early finalization would strike) or the main thread completes it by helping.
class KcasLateHelper : public ::testing::TestWithParam<bool> {};

TEST_P(KcasLateHelper, CannotReinstallADecidedDescriptor) {
  const bool owner_completes = GetParam();
  LateHelperScene scene;
  auto& kcas = scene.kcas;
  auto& w = scene.w;
  if (owner_completes) {
    scene.release_owner();
  } else {
    EXPECT_FALSE(kcas.cas(w[0], 0, 5));  // helps D to success, then a == 1 != 0
  }
  EXPECT_EQ(kcas.read(w[1]), 1U);
  EXPECT_TRUE(kcas.cas(w[1], 1, 0));  // b back to 0
  for (std::uint64_t i = 0; i < 200; ++i) {
    EXPECT_TRUE(kcas.compare_exchange({{&w[2], i, i + 1}, {&w[3], i, i + 1}}));
  }
  scene.release_helper();
  EXPECT_EQ(kcas.read(w[1]), 0U) << "a late helper re-installed a decided K-CAS";
  scene.release_owner();
  EXPECT_EQ(kcas.read(w[0]), 1U);
  EXPECT_EQ(kcas.read(w[1]), 0U);
  kcas.drain();
  EXPECT_EQ(kcas.read(w[0]), 1U);
  EXPECT_EQ(kcas.read(w[1]), 0U);
}

INSTANTIATE_TEST_SUITE_P(WhoCompletes, KcasLateHelper, ::testing::Bool());

// The hazard one step removed: over the decided D that the late helper may still install, a
// K-CAS installs D2 (which must wait for the helper), and a cas writes over D2. If D2 counted
// as restorable -- closed, but not past its wait -- the cas would write a payload over it, b
// would be back at 0, and the helper's CAS would re-install D: b would read 1.
TEST(KcasLateHelperChain, AWaitingDescriptorIsNeverReplacedByAPayloadEarly) {
  LateHelperScene scene;
  auto& kcas = scene.kcas;
  auto& w = scene.w;
  scene.release_owner();                                               // D succeeded: b == 1
  EXPECT_TRUE(kcas.compare_exchange({{&w[1], 1, 2}, {&w[2], 0, 1}}));  // D2 over ref(D, b)
  EXPECT_TRUE(kcas.cas(w[1], 2, 0));                                   // over ref(D2, b)
  for (std::uint64_t i = 0; i < 200; ++i) {
    EXPECT_TRUE(kcas.compare_exchange({{&w[3], i, i + 1}, {&w[2], i + 1, i + 2}}));
  }
  scene.release_helper();
  EXPECT_EQ(kcas.read(w[1]), 0U) << "a late helper re-installed a decided K-CAS";
  kcas.drain();
  EXPECT_EQ(kcas.read(w[1]), 0U);
}

// Waiting does not spread for ever: once the guard it waits for is gone, the next K-CAS over
// the word pushes the epoch two on when it closes and restores its words at once; the word
// holds a payload again, and a cas over it is a plain one.
TEST(KcasLateHelperChain, TheWaitEndsWhenTheEpochMovesOn) {
  LateHelperScene scene;
  auto& kcas = scene.kcas;
  auto& w = scene.w;
  scene.release_owner();
  EXPECT_TRUE(kcas.compare_exchange({{&w[1], 1, 2}, {&w[2], 0, 1}}));  // waits for the helper
  EXPECT_FALSE(w[1].is_settled());
  scene.release_helper();  // the helper's guard is gone
  EXPECT_FALSE(w[1].is_settled()) << "nothing has restored the waiting descriptor's word yet";
  // Unpinned and alone, this thread's closes push the epoch on: the chain ends at once.
  EXPECT_TRUE(kcas.compare_exchange({{&w[1], 2, 3}, {&w[2], 1, 2}}));
  EXPECT_TRUE(w[1].is_settled() && w[2].is_settled());
  EXPECT_EQ(kcas.read(w[1]), 3U);
  EXPECT_TRUE(kcas.cas(w[1], 3, 4));
  EXPECT_TRUE(w[1].is_settled());
}

// ---------------------------------------------------------------------------------------------
// Reclamation and ordering

// A guard held by a stalled thread stops reclamation (memory is what a stall costs) but not
// operations; once it is gone, reclamation resumes.
TEST(KcasReclamation, StalledGuardDelaysOnlyMemory) {
  CountingKcas kcas;
  std::array<KcasWord, 2> w{};
  ccf::testing::while_a_guard_is_held(kcas.domain(), [&] {
    std::thread([&] {
      for (std::uint64_t i = 0; i < 2000; ++i) {
        ASSERT_TRUE(kcas.compare_exchange({{&w[0], i, i + 1}, {&w[1], i, i + 1}}));
      }
    }).join();
    EXPECT_EQ(kcas.stats().descriptors_freed.load(), 0U);
  });
  std::thread([&] {
    for (std::uint64_t i = 2000; i < 4000; ++i) {
      ASSERT_TRUE(kcas.compare_exchange({{&w[0], i, i + 1}, {&w[1], i, i + 1}}));
    }
  }).join();
  EXPECT_GT(kcas.stats().descriptors_freed.load(), 0U);
  EXPECT_EQ(kcas.read(w[0]), 4000U);
}

// Readers see through descriptors while writers K-CAS and cas a few words as fast as they can
// and another thread keeps advancing the epoch, so that reclamation runs constantly and the
// epoch often moves on by several steps while a thread runs deleters (finalize re-retires into
// whichever bag E then selects). A descriptor freed or recycled too early shows up as a
// ThreadSanitizer race or an AddressSanitizer use-after-free in read(), or here as a read that
// goes backwards (every word only counts up).
TEST(KcasReclamation, ReadersNeverFollowAReclaimedDescriptor) {
  constexpr int kWriters = 2;
  constexpr int kReaders = 2;
  constexpr std::uint64_t kOpsPerWriter = 20'000;
  constexpr std::size_t kWords = 4;
  Kcas<2, KcasStats> kcas;
  std::array<KcasWord, kWords> w{};
  std::atomic<int> writers_left{kWriters};
  std::atomic<std::uint64_t> backwards{0};
  std::latch start(kWriters + kReaders + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      std::minstd_rand rng(static_cast<unsigned>(t) + 1);
      for (std::uint64_t op = 0; op < kOpsPerWriter; ++op) {
        const std::size_t i = rng() % kWords;
        const std::size_t j = (i + 1 + rng() % (kWords - 1)) % kWords;
        const std::uint64_t a = kcas.read(w[i]);
        if (op % 4 == 0) {
          kcas.cas(w[i], a, a + 1);
        } else {
          const std::uint64_t b = kcas.read(w[j]);
          kcas.compare_exchange({{&w[i], a, a + 1}, {&w[j], b, b + 1}});
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      std::array<std::uint64_t, kWords> last{};
      while (writers_left.load() > 0) {
        for (std::size_t i = 0; i < kWords; ++i) {
          const std::uint64_t now = kcas.read(w[i]);
          if (now < last[i]) backwards.fetch_add(1);
          last[i] = now;
        }
      }
    });
  }
  threads.emplace_back([&] {
    start.arrive_and_wait();
    while (writers_left.load() > 0) {
      kcas.domain().try_advance();
      std::this_thread::yield();
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(backwards.load(), 0U);
  EXPECT_GT(kcas.stats().descriptors_freed.load(), 0U);
  kcas.drain();
  for (const KcasWord& word : w) EXPECT_TRUE(word.is_settled());
}

// Descriptor pools (one block per thread) outlive their threads while descriptors of theirs are
// in limbo: a thread that adopts a finished thread's record, or drain(), frees them into their
// block, and the last one frees the block. The stall beyond the pool mixes in descriptors from
// `new`. AddressSanitizer checks that every block is freed once and never used after.
TEST(KcasReclamation, PoolsOfFinishedThreadsAreFreedWithTheirLastDescriptor) {
  CountingKcas kcas;
  std::array<KcasWord, 2> w{};
  std::atomic<std::uint64_t> value{0};
  auto run = [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t v = value.fetch_add(1);
      ASSERT_TRUE(kcas.compare_exchange({{&w[0], v, v + 1}, {&w[1], v, v + 1}}));
    }
  };
  for (int round = 0; round < 4; ++round) std::thread([&] { run(300); }).join();
  ccf::testing::while_a_guard_is_held(kcas.domain(), [&] {
    std::thread([&] { run(CountingKcas::kPoolDescriptors + 100); }).join();
  });
  EXPECT_GT(kcas.stats().descriptors_beyond_pool.load(), 0U);
  std::thread([&] { run(1000); }).join();  // adopts a finished thread's record
  EXPECT_GT(kcas.stats().descriptors_freed.load(), 0U);
  kcas.drain();
  EXPECT_EQ(kcas.stats().descriptors_allocated.load(), kcas.stats().descriptors_freed.load());
  EXPECT_EQ(kcas.read(w[0]), value.load());
}

// A Kcas of static storage is destroyed after this thread's descriptor list (thread_local
// objects go first): its destructor, at exit, releases what is still in limbo straight into the
// blocks (FreeList::closed()), and the blocks are freed (AddressSanitizer's leak check runs
// after static destructors).
CountingKcas& static_kcas() {
  static CountingKcas kcas;
  return kcas;
}
constinit std::array<KcasWord, 2> static_words{};  // trivially destructible: outlives the Kcas

TEST(KcasReclamation, StaticKcasIsDrainedAfterThePoolsAreGone) {
  CountingKcas& kcas = static_kcas();
  auto run = [&] {
    for (std::uint64_t i = 0; i < 100; ++i) {
      const std::uint64_t v = kcas.read(static_words[0]);
      kcas.compare_exchange({{&static_words[0], v, v + 1}, {&static_words[1], v, v + 1}});
    }
  };
  run();
  std::thread(run).join();
  EXPECT_GT(kcas.domain().retired_count(), kcas.domain().reclaimed_count())
      << "nothing left in limbo for the exit to release";
}

// Data written before a successful K-CAS is visible to a thread whose read() returns the new
// value, whichever path the read takes (payload, finished descriptor). The values are checked
// here; the happens-before edge is checked by ThreadSanitizer.
TEST(KcasOrdering, SuccessfulKcasPublishesPriorWrites) {
  constexpr std::uint64_t kRounds = 5000;
  CountingKcas kcas;
  std::array<KcasWord, 2> w{};
  std::vector<std::uint64_t> data(kRounds + 1, 0);  // plain memory, written once per round
  std::atomic<std::uint64_t> mismatches{0};
  std::thread reader([&] {
    for (std::uint64_t seen = 0; seen < kRounds;) {
      const std::uint64_t now = kcas.read(w[seen % 2 == 0 ? 0 : 1]);
      for (; seen < now; ++seen) mismatches.fetch_add(data[seen + 1] != (seen + 1) * 3);
    }
  });
  bool all_succeeded = true;
  for (std::uint64_t i = 1; i <= kRounds; ++i) {
    data[i] = i * 3;
    if (i % 3 == 0) {
      all_succeeded &= kcas.cas(w[0], i - 1, i);
      all_succeeded &= kcas.cas(w[1], i - 1, i);
    } else {
      all_succeeded &= kcas.compare_exchange({{&w[0], i - 1, i}, {&w[1], i - 1, i}});
    }
  }
  reader.join();
  EXPECT_TRUE(all_succeeded);
  EXPECT_EQ(mismatches.load(), 0U);
}

}  // namespace
