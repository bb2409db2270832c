// Linearizability of Kcas on small histories. Each round, 3 threads run 4 operations each
// (read, single-word cas, 2- and 3-word K-CAS) on 3 words holding values 0..3; every
// operation records its invocation and response on a global logical clock. A brute-force
// checker (Wing & Gong, with memoization on (operations done, state)) then searches for a
// sequential order that respects real time, reproduces every result and ends in the final
// state of the words. A hook yields at random inside K-CAS steps so that operations overlap
// and threads meet each other's descriptors and help them.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "ccf/lockfree/kcas.hpp"

namespace {

using ccf::lockfree::Kcas;
using ccf::lockfree::KcasEntry;
using ccf::lockfree::KcasHookEvent;
using ccf::lockfree::KcasStats;
using ccf::lockfree::KcasWord;

constexpr unsigned kWords = 3;
constexpr unsigned kValues = 4;  // word values are 0..3
constexpr unsigned kStates = kValues * kValues * kValues;

using State = std::array<std::uint64_t, kWords>;

unsigned encode(const State& s) {
  return static_cast<unsigned>(s[0] + kValues * (s[1] + kValues * s[2]));
}

struct Op {
  enum class Kind : std::uint8_t { kRead, kCas, kKcas };
  Kind kind = Kind::kRead;
  unsigned size = 1;  // words touched
  std::array<unsigned, kWords> word{};
  std::array<std::uint64_t, kWords> expected{};
  std::array<std::uint64_t, kWords> desired{};
  std::uint64_t result = 0;  // read: the value; cas / K-CAS: 1 if it succeeded
  std::uint64_t invoked = 0;
  std::uint64_t responded = 0;

  // Applies the operation to `s` sequentially; false if it would not return `result`.
  bool apply(State& s) const {
    if (kind == Kind::kRead) return s[word[0]] == result;
    bool match = true;
    for (unsigned i = 0; i < size; ++i) match &= s[word[i]] == expected[i];
    if (match != (result != 0)) return false;
    if (match) {
      for (unsigned i = 0; i < size; ++i) s[word[i]] = desired[i];
    }
    return true;
  }
};

// Wing & Gong: repeatedly pick an operation that no remaining operation precedes in real
// time, apply it, recurse; memoize (done set, state) pairs that lead nowhere.
class Checker {
 public:
  Checker(const std::vector<Op>& ops, const State& initial, const State& final_state)
      : ops_(ops),
        initial_(initial),
        final_(final_state),
        dead_((std::size_t{1} << ops.size()) * kStates) {}

  bool linearizable() { return search(0, initial_); }

 private:
  bool search(std::uint32_t done, const State& state) {
    const std::uint32_t all = (std::uint32_t{1} << ops_.size()) - 1;
    if (done == all) return state == final_;
    const std::size_t key = std::size_t{done} * kStates + encode(state);
    if (dead_[key]) return false;
    dead_[key] = true;
    std::uint64_t first_response = UINT64_MAX;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if ((done >> i & 1) == 0) first_response = std::min(first_response, ops_[i].responded);
    }
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if ((done >> i & 1) != 0 || ops_[i].invoked > first_response) continue;
      State next = state;
      if (ops_[i].apply(next) && search(done | std::uint32_t{1} << i, next)) return true;
    }
    return false;
  }

  const std::vector<Op>& ops_;
  State initial_;
  State final_;
  std::vector<bool> dead_;
};

Op make_read(unsigned w, std::uint64_t value, std::uint64_t at, std::uint64_t until) {
  Op op;
  op.word[0] = w;
  op.result = value;
  op.invoked = at;
  op.responded = until;
  return op;
}

Op make_cas(unsigned w, std::uint64_t e, std::uint64_t d, bool ok, std::uint64_t at,
            std::uint64_t until) {
  Op op;
  op.kind = Op::Kind::kCas;
  op.word[0] = w;
  op.expected[0] = e;
  op.desired[0] = d;
  op.result = ok;
  op.invoked = at;
  op.responded = until;
  return op;
}

TEST(LinearizabilityChecker, AcceptsOverlapRejectsStaleRead) {
  const State zero{0, 0, 0};
  // cas(w0: 0 -> 1) completes, then a read of w0 starts and returns 0: not linearizable.
  std::vector<Op> stale{make_cas(0, 0, 1, true, 0, 1), make_read(0, 0, 2, 3)};
  EXPECT_FALSE(Checker(stale, zero, State{1, 0, 0}).linearizable());
  // The same read overlapping the cas may take effect before it.
  std::vector<Op> overlapping{make_cas(0, 0, 1, true, 0, 2), make_read(0, 0, 1, 3)};
  EXPECT_TRUE(Checker(overlapping, zero, State{1, 0, 0}).linearizable());
  // Two overlapping successful cas(0 -> 1) cannot both succeed.
  std::vector<Op> twice{make_cas(0, 0, 1, true, 0, 3), make_cas(0, 0, 1, true, 1, 2)};
  EXPECT_FALSE(Checker(twice, zero, State{1, 0, 0}).linearizable());
  // A lost update: the history is fine but the final state disagrees.
  std::vector<Op> lost{make_cas(0, 0, 2, true, 0, 1)};
  EXPECT_FALSE(Checker(lost, zero, State{0, 0, 0}).linearizable());
}

// Yields at a random third of the K-CAS steps, in owners and helpers.
struct YieldHook {
  static constexpr bool kEnabled = true;
  void operator()(const KcasHookEvent&) const {
    thread_local std::minstd_rand rng(std::random_device{}());
    if (rng() % 3 == 0) std::this_thread::yield();
  }
};

TEST(KcasLinearizability, RandomSmallHistories) {
  constexpr unsigned kThreads = 3;
  constexpr unsigned kOpsPerThread = 4;
  constexpr int kRounds = 40'000;

  Kcas<kWords, KcasStats, YieldHook> kcas;
  std::array<KcasWord, kWords> words{};
  std::atomic<std::uint64_t> clock{0};
  std::array<std::array<Op, kOpsPerThread>, kThreads> history{};
  std::barrier sync(kThreads + 1);

  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      for (int round = 0; round < kRounds; ++round) {
        sync.arrive_and_wait();  // round starts
        State known{};
        for (unsigned w = 0; w < kWords; ++w) known[w] = rng() % kValues;
        for (Op& op : history[t]) {
          op = Op{};
          const auto pick = static_cast<unsigned>(rng() % 10);
          op.kind = pick < 3 ? Op::Kind::kRead : pick < 5 ? Op::Kind::kCas : Op::Kind::kKcas;
          op.size = op.kind == Op::Kind::kKcas ? 2 + (pick == 9) : 1;
          const auto first = static_cast<unsigned>(rng() % kWords);
          for (unsigned i = 0; i < op.size; ++i) {
            op.word[i] = (first + i) % kWords;
            op.expected[i] = rng() % 4 == 0 ? rng() % kValues : known[op.word[i]];
            op.desired[i] = rng() % kValues;
          }
          for (unsigned spin = rng() % 64; spin > 0; --spin)
            std::atomic_signal_fence(std::memory_order_seq_cst);
          op.invoked = clock.fetch_add(1);
          if (op.kind == Op::Kind::kRead) {
            op.result = kcas.read(words[op.word[0]]);
          } else if (op.kind == Op::Kind::kCas) {
            op.result = kcas.cas(words[op.word[0]], op.expected[0], op.desired[0]);
          } else {
            std::array<KcasEntry, kWords> entries{};
            for (unsigned i = 0; i < op.size; ++i) {
              entries[i] = KcasEntry{&words[op.word[i]], op.expected[i], op.desired[i]};
            }
            op.result = kcas.compare_exchange(std::span<const KcasEntry>(entries.data(), op.size));
          }
          op.responded = clock.fetch_add(1);
          if (op.kind == Op::Kind::kRead) known[op.word[0]] = op.result;
          if (op.kind != Op::Kind::kRead && op.result != 0) {
            for (unsigned i = 0; i < op.size; ++i) known[op.word[i]] = op.desired[i];
          }
        }
        sync.arrive_and_wait();  // round ends
      }
    });
  }

  int failures = 0;
  int overlapping_rounds = 0;
  State initial{};
  for (int round = 0; round < kRounds; ++round) {
    for (unsigned w = 0; w < kWords; ++w) initial[w] = kcas.read(words[w]);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    State final_state{};
    for (unsigned w = 0; w < kWords; ++w) final_state[w] = kcas.read(words[w]);
    std::vector<Op> ops;
    for (const auto& per_thread : history)
      ops.insert(ops.end(), per_thread.begin(), per_thread.end());
    bool overlap = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      for (std::size_t j = i + 1; j < ops.size(); ++j) {
        overlap |= ops[i].invoked < ops[j].responded && ops[j].invoked < ops[i].responded;
      }
    }
    overlapping_rounds += overlap;
    if (!Checker(ops, initial, final_state).linearizable() && ++failures <= 3) {
      ADD_FAILURE() << "round " << round << ": history not linearizable";
    }
  }
  EXPECT_EQ(failures, 0);
  for (std::thread& t : threads) t.join();
  std::printf("[ info ] %d rounds, %d with overlapping operations, %llu helps\n", kRounds,
              overlapping_rounds, static_cast<unsigned long long>(kcas.stats().helps.load()));
  EXPECT_GT(overlapping_rounds, kRounds / 10) << "too little concurrency to test anything";
  EXPECT_GT(kcas.stats().helps.load(), 0U) << "no operation ever helped another";
}

}  // namespace
