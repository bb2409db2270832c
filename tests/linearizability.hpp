// A small linearizability checker (Wing & Gong) over recorded histories of a set-like
// structure, and a recorder that stamps invocations and responses from one global counter.
//
// A history is linearizable if its operations can be ordered so that (a) an operation that
// responded before another was invoked comes first, and (b) replaying that order on the
// sequential model gives every recorded result. The checker searches such an order depth
// first, always choosing among the operations that no pending operation must precede, and
// memoises (set of done operations, model state) pairs it has already refuted. Histories of
// a dozen or two operations check in microseconds.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "ccf/status.hpp"

namespace ccf::testing {

enum class OpKind : std::uint8_t { kInsert, kErase, kContains };

struct Operation {
  OpKind kind;
  int key;      // a small key index
  bool result;  // insert: stored; erase: removed; contains: found
  std::uint64_t invoked;
  std::uint64_t responded;
};

class HistoryClock {
 public:
  std::uint64_t tick() noexcept { return now_.fetch_add(1, std::memory_order_seq_cst); }

 private:
  std::atomic<std::uint64_t> now_{0};
};

// The sequential model: a multiset of keys (a filter stores copies; keys are chosen so that
// their fingerprints never collide, so membership is exact).
class MultisetModel {
 public:
  explicit MultisetModel(int keys) : counts_(static_cast<std::size_t>(keys)) {}
  bool apply(const Operation& op) {
    auto& count = counts_[static_cast<std::size_t>(op.key)];
    switch (op.kind) {
      case OpKind::kInsert:
        if (op.result) ++count;
        return true;  // a filter may refuse an insert when full
      case OpKind::kErase:
        if (op.result != (count > 0)) return false;
        if (op.result) --count;
        return true;
      case OpKind::kContains:
        return op.result == (count > 0);
    }
    return false;
  }
  bool operator<(const MultisetModel& other) const { return counts_ < other.counts_; }

 private:
  std::vector<int> counts_;
};

// The sequential model of a hash table used as a set: an insert succeeds exactly when the key
// is absent.
class SetModel {
 public:
  explicit SetModel(int keys) : present_(static_cast<std::size_t>(keys)) {}
  bool apply(const Operation& op) {
    auto present = present_[static_cast<std::size_t>(op.key)];  // a std::vector<bool> reference
    switch (op.kind) {
      case OpKind::kInsert:
        if (op.result == present) return false;
        present = true;
        return true;
      case OpKind::kErase:
        if (op.result != present) return false;
        present = false;
        return true;
      case OpKind::kContains:
        return op.result == present;
    }
    return false;
  }
  bool operator<(const SetModel& other) const { return present_ < other.present_; }

 private:
  std::vector<bool> present_;
};

template <class Model>
bool linearizable(const std::vector<Operation>& history, const Model& initial) {
  const std::size_t n = history.size();
  std::set<std::pair<std::vector<bool>, Model>> refuted;
  std::vector<bool> done(n, false);
  const auto search = [&](auto& self, const Model& model, std::size_t remaining) -> bool {
    if (remaining == 0) return true;
    if (refuted.count({done, model})) return false;
    // The earliest response among pending operations bounds which may go next.
    std::uint64_t horizon = UINT64_MAX;
    for (std::size_t i = 0; i < n; ++i) {
      if (!done[i]) horizon = std::min(horizon, history[i].responded);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i] || history[i].invoked > horizon) continue;
      Model next = model;
      if (!next.apply(history[i])) continue;
      done[i] = true;
      const bool ok = self(self, next, remaining - 1);
      done[i] = false;
      if (ok) return true;
    }
    refuted.insert({done, model});
    return false;
  };
  return search(search, initial, n);
}

// Many short rounds: a fresh filter from make_filter(), 3 threads x 4 random operations on 3
// keys, each history recorded and checked against Model (a filter: MultisetModel; a hash table
// used as a set: SetModel). The keys' fingerprints must not collide in the filter
// make_filter() builds, so that it has to answer exactly.
template <class Model = MultisetModel, class MakeFilter>
void check_small_histories(MakeFilter make_filter, int rounds) {
  constexpr int kKeys = 3, kThreads = 3, kOpsPerThread = 4;
  const std::uint64_t keys[kKeys] = {11, 22, 33};
  for (int round = 0; round < rounds; ++round) {
    auto filter = make_filter();
    HistoryClock clock;
    std::vector<std::vector<Operation>> logs(kThreads);
    std::barrier start(kThreads);
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          std::mt19937 rng(static_cast<unsigned>(round * kThreads + t));
          start.arrive_and_wait();
          for (int i = 0; i < kOpsPerThread; ++i) {
            Operation op{static_cast<OpKind>(rng() % 3), static_cast<int>(rng() % kKeys), false, 0,
                         0};
            const std::uint64_t key = keys[op.key];
            op.invoked = clock.tick();
            switch (op.kind) {
              case OpKind::kInsert:
                op.result = filter->insert(key) == Status::kOk;
                break;
              case OpKind::kErase:
                op.result = filter->erase(key) == Status::kOk;
                break;
              case OpKind::kContains:
                op.result = filter->contains(key);
                break;
            }
            op.responded = clock.tick();
            logs[static_cast<std::size_t>(t)].push_back(op);
          }
        });
      }
    }
    std::vector<Operation> history;
    for (const auto& log : logs) history.insert(history.end(), log.begin(), log.end());
    ASSERT_TRUE(linearizable(history, Model(kKeys))) << "round " << round;
  }
}

}  // namespace ccf::testing
