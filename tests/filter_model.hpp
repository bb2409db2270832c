// Model-based tests for every cuckoo filter: random inserts, erases and lookups checked against
// an exact multiset model (std::unordered_map<key, copies>), on tiny tables with short
// fingerprints so that fingerprint collisions, relocations, kFull and growth are frequent.
//
// check_model             one thread, one filter; exact size() after every operation, optional
//                         save/load round trips.
// check_concurrent_model  T threads share one filter; each owns a disjoint key space and its own
//                         model and checks its own keys while the others' operations (on
//                         colliding fingerprints) run; exact size() and contents at the end.
// Both can run in epochs (restart_every + a factory): a new, empty filter and model every so
// many operations, for what happens early in a filter's life (growth) to happen all along.
//
// Operations (seeded, reproducible in the single-threaded case):
//   insert   a fresh key, or another copy of a live key (multiset; at most max_copies copies);
//   erase    a live key (the contract: only inserted keys are erased) -- must return kOk. A
//            quarter of the keys are long-lived: an erase that picks one picks again 15 times in
//            16, so some keys outlive many fill / drain cycles (in a growing filter they stay in
//            old levels while the newer levels churn);
//   contains a live key (must be true) or a never-inserted key (no assertion: any answer is
//            a legal false positive; counted).
// Invariants checked:
//   - every live key is contained: the key just touched after every operation, `sample` random
//     live keys after every operation, and all of them in a sweep at least every
//     max(sweep_every, live keys) operations (so sweeps cost at most one lookup per operation);
//   - size() equals the model's number of copies (single thread: after every operation;
//     concurrent: at the end);
//   - an insert that returns kFull changes nothing: size() unchanged (single thread) and a full
//     sweep of the live keys right after it;
//   - erase of a live key returns kOk.
// The mix of operations runs in phases so that tables hover near full:
//   fixed-size filters  fill (80% inserts) until kFull, then mixed (44% inserts / 41% erases)
//                       for 1-2 table sizes of operations, then drain (80% erases) to a random
//                       load below half (sometimes empty), and again;
//   growing filters     fill until the filter has grown to `first_levels`, drain to 10-35% of
//                       the live keys, re-grow by one more level, ... up to `max_levels`; then
//                       fill cycles stop at grown_fill of capacity() (no endless doubling).
// Coverage is asserted too (a test that never saw kFull, or never re-grew after a drain, did not
// test what it is named after).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "ccf/hash.hpp"
#include "ccf/status.hpp"

namespace ccf::testing {

// ThreadSanitizer slows these tests about 4x more than AddressSanitizer does (both are
// kSanitized): tests divide their counts further by kThreadSanitizerExtra.
#if defined(__SANITIZE_THREAD__)
inline constexpr std::uint64_t kThreadSanitizerExtra = 4;
#else
inline constexpr std::uint64_t kThreadSanitizerExtra = 1;
#endif

// Filters that grow (report how many sub-filters they have).
template <class Filter>
concept GrowingFilter = requires(const Filter& f) {
  { f.levels() } -> std::convertible_to<std::size_t>;
};

template <class Filter>
std::size_t levels_of(const Filter& filter) {
  if constexpr (GrowingFilter<Filter>) {
    return filter.levels();
  } else {
    return 1;
  }
}

struct ModelConfig {
  std::uint64_t operations = 1'000'000;  // in all (shared by the threads of a concurrent run)
  std::uint64_t seed = 1;
  bool grows = false;               // the filter grows instead of reporting kFull
  unsigned sample = 2;              // random live keys checked after every operation
  std::uint64_t sweep_every = 256;  // full sweep at least every max(this, live keys) operations
  unsigned max_copies = 4;          // copies of one key (the contract allows 2b)
  std::size_t first_levels = 3;     // growing: the first fill phase grows to this many levels
  std::size_t max_levels = 8;       // growing: re-grow one level per cycle up to this many
  double grown_fill = 0.3;          // growing, at max_levels: fill up to this of capacity()
  std::uint64_t reload_every = 0;   // single thread: save + load every this many operations
  std::uint64_t restart_every = 0;  // with a factory: a new, empty filter every this many
};

struct ModelReport {
  std::uint64_t operations = 0;
  std::uint64_t inserts = 0;       // returned kOk (copies included)
  std::uint64_t copies = 0;        // inserts of a key already live
  std::uint64_t full = 0;          // inserts that returned kFull
  std::uint64_t batches = 0;       // insert_many calls
  std::uint64_t batches_full = 0;  // ... that stopped at kFull
  std::uint64_t erases = 0;
  std::uint64_t lookups = 0;         // of live keys, as operations
  std::uint64_t random_lookups = 0;  // of never-inserted keys
  std::uint64_t random_hits = 0;     // ... that were (legally) reported present
  std::uint64_t checks = 0;          // lookups of live keys made by the checker
  std::uint64_t sweeps = 0;
  std::uint64_t drains = 0;  // drain phases begun
  std::uint64_t reloads = 0;
  std::size_t levels = 1;           // the most levels seen
  std::size_t levels_at_drain = 0;  // levels when the first drain began (growing filters)
  std::size_t peak_live = 0;        // most copies the model held at once (summed over threads)
  std::uint64_t failed_at = 0;      // operation (1-based) at which an invariant failed; 0: none
  std::string failure;

  void merge(const ModelReport& other) {
    operations += other.operations;
    inserts += other.inserts;
    copies += other.copies;
    full += other.full;
    batches += other.batches;
    batches_full += other.batches_full;
    erases += other.erases;
    lookups += other.lookups;
    random_lookups += other.random_lookups;
    random_hits += other.random_hits;
    checks += other.checks;
    sweeps += other.sweeps;
    drains += other.drains;
    reloads += other.reloads;
    levels = std::max(levels, other.levels);
    if (levels_at_drain == 0 ||
        (other.levels_at_drain != 0 && other.levels_at_drain < levels_at_drain)) {
      levels_at_drain = other.levels_at_drain;
    }
    peak_live += other.peak_live;
    if (failure.empty() && !other.failure.empty()) {
      failed_at = other.failed_at;
      failure = other.failure;
    }
  }
};

// One model and its random operations against a filter (one per thread in a concurrent run).
template <class Filter>
class ModelDriver {
 public:
  // Keys are mix64 of (key_space << 40 | n): distinct, and disjoint between key spaces. `share`
  // is how many drivers share the filter (each plans its phases on capacity() / share).
  ModelDriver(const ModelConfig& config, std::uint64_t key_space, unsigned share)
      : config_(config),
        key_space_(key_space),
        share_(share),
        rng_(config.seed),
        target_levels_(config.first_levels) {}

  const ModelReport& report() const noexcept { return report_; }
  std::uint64_t total() const noexcept { return total_; }

  // One random operation and the checks after it. False once an invariant failed
  // (report().failure says which); the driver must not be used after that.
  bool step(Filter& filter, bool exact_size) {
    ++report_.operations;
    const Mix mix = mix_of(phase_);
    const unsigned roll = static_cast<unsigned>(rng_() % 100);
    bool ok;
    if (roll < mix.insert || live_.empty()) {
      ok = insert(filter, exact_size);
    } else if (roll < mix.insert + mix.erase) {
      ok = erase(filter);
    } else {
      ok = lookup(filter);
    }
    if (!ok) return false;
    for (unsigned s = 0; s < config_.sample && !live_.empty(); ++s) {
      if (!check(filter, live_[rng_() % live_.size()], "a sampled live key")) return false;
    }
    if (exact_size && !check_size(filter, "after the operation")) return false;
    if (++since_sweep_ >= std::max<std::uint64_t>(config_.sweep_every, live_.size()) &&
        !sweep(filter, "periodic sweep")) {
      return false;
    }
    advance_phase(filter);
    return true;
  }

  // Every live key contained.
  bool sweep(const Filter& filter, const char* when) {
    since_sweep_ = 0;
    ++report_.sweeps;
    for (const std::uint64_t key : live_) {
      if (!check(filter, key, when)) return false;
    }
    return true;
  }

  bool check_size(const Filter& filter, const char* when) {
    const std::size_t size = filter.size();
    if (size == total_) return true;
    return fail(filter, "size() is " + std::to_string(size) + ", the model holds " +
                            std::to_string(total_) + " copies (" + when + ")");
  }

  // After the filter was replaced by a save/load round trip.
  bool after_reload(const Filter& filter) {
    ++report_.reloads;
    return check_size(filter, "after save + load") && sweep(filter, "sweep after save + load");
  }

 private:
  enum class Phase { kFill, kMixed, kDrain };
  struct Mix {
    unsigned insert, erase;  // percent; lookups get the rest
  };
  struct Entry {
    std::uint32_t copies;
    std::uint32_t index;  // in live_
    bool long_lived;
  };

  static Mix mix_of(Phase phase) {
    switch (phase) {
      case Phase::kFill:
        return {80, 10};
      case Phase::kMixed:
        return {44, 41};
      case Phase::kDrain:
        return {10, 80};
    }
    return {44, 41};
  }
  static const char* name_of(Phase phase) {
    return phase == Phase::kFill ? "fill" : phase == Phase::kMixed ? "mixed" : "drain";
  }

  std::uint64_t key(std::uint64_t space, std::uint64_t n) const noexcept {
    return mix64(space << 40 | n, 0x243f6a8885a308d3ULL);
  }

  bool insert(Filter& filter, bool exact_size) {
    if constexpr (requires(std::span<const std::uint64_t> keys) { filter.insert_many(keys); }) {
      if (rng_() % 4 == 0) return insert_batch(filter, exact_size);
    }
    std::uint64_t k;
    bool copy = false;
    if (!live_.empty() && rng_() % 10 == 0) {
      k = live_[rng_() % live_.size()];
      copy = model_.at(k).copies < config_.max_copies;
    }
    if (!copy) k = key(key_space_, next_fresh_++);
    const std::size_t size_before = exact_size ? filter.size() : 0;
    const Status status = filter.insert(k);
    if (status == Status::kOk) {
      ++report_.inserts;
      report_.copies += copy;
      add(k);
      return check(filter, k, "the key just inserted");
    }
    if (status != Status::kFull) {
      return fail(filter, "insert returned " + std::string(to_string(status)));
    }
    ++report_.full;
    saw_full_ = true;
    // kFull changed nothing: the count, and every live key (the one we tried too if live).
    if (exact_size && filter.size() != size_before) {
      return fail(filter, "an insert that returned kFull changed size() from " +
                              std::to_string(size_before) + " to " + std::to_string(filter.size()));
    }
    return sweep(filter, "sweep right after kFull");
  }

  // insert_many of 1-24 keys, fresh ones and copies of live ones (a key may repeat in the
  // batch): the leading `stored` of them are in, the rest are not (exact size), and a batch
  // cut short by kFull changed nothing else.
  bool insert_batch(Filter& filter, bool exact_size) {
    std::vector<std::uint64_t> batch(1 + rng_() % 24);
    std::unordered_map<std::uint64_t, std::uint32_t> planned;  // copies after the batch
    for (std::uint64_t& k : batch) {
      k = key(key_space_, next_fresh_++);
      if (!live_.empty() && rng_() % 10 == 0) {
        const std::uint64_t copy = live_[rng_() % live_.size()];
        auto [at, fresh] = planned.try_emplace(copy, model_.at(copy).copies);
        if (at->second < config_.max_copies) {
          ++at->second;
          k = copy;
        }
      }
    }
    ++report_.batches;
    const std::size_t size_before = exact_size ? filter.size() : 0;
    const std::size_t stored = filter.insert_many(std::span<const std::uint64_t>(batch));
    if (stored > batch.size()) return fail(filter, "insert_many stored more keys than given");
    for (std::size_t i = 0; i < stored; ++i) {
      report_.copies += model_.contains(batch[i]);
      add(batch[i]);
      ++report_.inserts;
    }
    for (std::size_t i = 0; i < stored; ++i) {
      if (!check(filter, batch[i], "a key insert_many stored")) return false;
    }
    if (exact_size && filter.size() != size_before + stored) {
      return fail(filter, "insert_many stored " + std::to_string(stored) +
                              " keys but size() went from " + std::to_string(size_before) + " to " +
                              std::to_string(filter.size()));
    }
    if (stored == batch.size()) return true;
    ++report_.full;
    ++report_.batches_full;
    saw_full_ = true;
    return sweep(filter, "sweep right after a batch stopped at kFull");
  }

  bool erase(Filter& filter) {
    std::uint64_t k = live_[rng_() % live_.size()];
    if (model_.at(k).long_lived && rng_() % 16 != 0) k = live_[rng_() % live_.size()];
    const std::uint32_t copies = model_.at(k).copies;
    const Status status = filter.erase(k);
    if (status != Status::kOk) {
      return fail(filter, "erase of a live key (" + std::to_string(copies) + " copies) returned " +
                              std::string(to_string(status)));
    }
    ++report_.erases;
    remove_one(k);
    return copies == 1 || check(filter, k, "a key erased once of several copies");
  }

  bool lookup(const Filter& filter) {
    if (rng_() % 2 == 0) {
      ++report_.lookups;
      return check(filter, live_[rng_() % live_.size()], "a live key looked up");
    }
    // Never inserted: key space 2^24 - 1 is nobody's.
    ++report_.random_lookups;
    report_.random_hits += filter.contains(key((1 << 24) - 1, rng_() >> 24));
    return true;
  }

  bool check(const Filter& filter, std::uint64_t k, const char* what) {
    ++report_.checks;
    if (filter.contains(k)) return true;
    const auto at = model_.find(k);
    return fail(filter, std::string("false negative: ") + what + " (" +
                            std::to_string(at == model_.end() ? 0 : at->second.copies) +
                            " copies live) is not contained");
  }

  bool fail(const Filter& filter, const std::string& what) {
    report_.failed_at = report_.operations;
    report_.failure = "operation " + std::to_string(report_.operations) + " (phase " +
                      name_of(phase_) + ", " + std::to_string(levels_of(filter)) +
                      " level(s), model " + std::to_string(total_) + " copies of " +
                      std::to_string(live_.size()) + " keys): " + what;
    return false;
  }

  void add(std::uint64_t k) {
    const auto [at, fresh] =
        model_.try_emplace(k, Entry{0, static_cast<std::uint32_t>(live_.size()), rng_() % 4 == 0});
    if (fresh) live_.push_back(k);
    ++at->second.copies;
    ++total_;
    report_.peak_live = std::max<std::size_t>(report_.peak_live, total_);
  }

  void remove_one(std::uint64_t k) {
    const auto at = model_.find(k);
    --total_;
    if (--at->second.copies > 0) return;
    const std::uint32_t index = at->second.index;
    live_[index] = live_.back();
    model_.at(live_[index]).index = index;
    live_.pop_back();
    model_.erase(at);
  }

  void advance_phase(const Filter& filter) {
    const std::size_t levels = levels_of(filter);
    report_.levels = std::max(report_.levels, levels);
    const double share_of_capacity = static_cast<double>(filter.capacity()) / share_;
    if (config_.grows) {
      if (phase_ == Phase::kFill) {
        const bool grown =
            target_levels_ <= config_.max_levels
                ? levels >= target_levels_
                : static_cast<double>(total_) >= config_.grown_fill * share_of_capacity;
        if (grown)
          begin_drain(levels, static_cast<std::uint64_t>(total_ * (10 + rng_() % 26) / 100));
      } else if (total_ <= drain_to_) {
        phase_ = Phase::kFill;
        target_levels_ = levels + 1;
      }
      return;
    }
    switch (phase_) {
      case Phase::kFill:
        if (saw_full_) {
          phase_ = Phase::kMixed;
          mixed_left_ = static_cast<std::uint64_t>(share_of_capacity) * (1 + rng_() % 2);
        }
        break;
      case Phase::kMixed:
        if (mixed_left_-- == 0) {
          const auto half = static_cast<std::uint64_t>(share_of_capacity / 2);
          begin_drain(levels, rng_() % 8 == 0 ? 0 : rng_() % (half + 1));
        }
        break;
      case Phase::kDrain:
        if (total_ <= drain_to_) {
          phase_ = Phase::kFill;
          saw_full_ = false;
        }
        break;
    }
  }

  void begin_drain(std::size_t levels, std::uint64_t to) {
    phase_ = Phase::kDrain;
    drain_to_ = to;
    ++report_.drains;
    if (report_.levels_at_drain == 0) report_.levels_at_drain = levels;
  }

  const ModelConfig config_;
  const std::uint64_t key_space_;
  const unsigned share_;
  std::mt19937_64 rng_;
  std::unordered_map<std::uint64_t, Entry> model_;
  std::vector<std::uint64_t> live_;  // the distinct live keys, for uniform sampling
  std::uint64_t total_ = 0;          // copies
  std::uint64_t next_fresh_ = 0;
  std::uint64_t since_sweep_ = 0;
  Phase phase_ = Phase::kFill;
  bool saw_full_ = false;
  std::uint64_t mixed_left_ = 0;
  std::uint64_t drain_to_ = 0;
  std::size_t target_levels_;
  ModelReport report_;
};

inline std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return "?";
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  if (info->type_param() != nullptr) name += std::string(" [") + info->type_param() + "]";
  return name;
}

inline void print_report(const ModelReport& r, unsigned threads) {
  std::printf(
      "[ model ] %s, %u thread(s): %llu ops (%llu inserts incl. %llu copies, %llu kFull, %llu "
      "insert_many calls of which %llu stopped at kFull, %llu "
      "erases, %llu live lookups, %llu other lookups with %llu hits), %llu checks, %llu sweeps, "
      "%llu drains, %llu reloads, levels <= %zu, peak %zu copies: %s%s\n",
      current_test_name().c_str(), threads, static_cast<unsigned long long>(r.operations),
      static_cast<unsigned long long>(r.inserts), static_cast<unsigned long long>(r.copies),
      static_cast<unsigned long long>(r.full), static_cast<unsigned long long>(r.batches),
      static_cast<unsigned long long>(r.batches_full), static_cast<unsigned long long>(r.erases),
      static_cast<unsigned long long>(r.lookups), static_cast<unsigned long long>(r.random_lookups),
      static_cast<unsigned long long>(r.random_hits), static_cast<unsigned long long>(r.checks),
      static_cast<unsigned long long>(r.sweeps), static_cast<unsigned long long>(r.drains),
      static_cast<unsigned long long>(r.reloads), r.levels, r.peak_live,
      r.failure.empty() ? "ok" : "FAILED at ", r.failure.c_str());
  std::fflush(stdout);
}

// The run did what it is named after: fixed-size filters hit kFull and drained; growing ones
// grew to first_levels and re-grew after a drain.
inline void expect_coverage(const ModelConfig& config, const ModelReport& r) {
  if (!r.failure.empty()) return;  // the run stopped early; the failure says why
  if (config.grows) {
    EXPECT_GE(r.levels, config.first_levels) << "the filter never grew to first_levels";
    EXPECT_GT(r.levels, r.levels_at_drain) << "the filter never re-grew after a drain";
  } else {
    EXPECT_GT(r.full, 0u) << "no insert ever returned kFull";
    EXPECT_GT(r.batches_full, 0u) << "no insert_many ever stopped at kFull";
    EXPECT_GT(r.drains, 0u) << "never drained after a full phase";
  }
}

// Replaces the filter by a save/load round trip of itself; false if it skipped (e.g. a filter
// that cannot be saved in its current state).
template <class Filter>
using Reload = std::function<bool(std::unique_ptr<Filter>&)>;
// Builds a new, empty filter (for runs in epochs: config.restart_every).
template <class Filter>
using Factory = std::function<std::unique_ptr<Filter>()>;

namespace detail {

// Prefixes a failure of epoch `epoch` (which began after `before` operations) with where it was.
inline void locate_failure(ModelReport& r, unsigned epoch, std::uint64_t before) {
  if (r.failure.empty() || epoch == 0) return;
  r.failed_at += before;
  r.failure = "epoch " + std::to_string(epoch) + " (after " + std::to_string(before) +
              " operations in earlier epochs), " + r.failure;
}

// One epoch of the single-threaded test: `operations` on `filter`, from an empty model.
template <class Filter>
ModelReport model_epoch(std::unique_ptr<Filter>& filter, const ModelConfig& config,
                        std::uint64_t operations, const Reload<Filter>& reload) {
  ModelDriver<Filter> driver(config, 1, 1);
  bool ok = driver.check_size(*filter, "before the first operation");
  for (std::uint64_t op = 1; ok && op <= operations; ++op) {
    ok = driver.step(*filter, true);
    if (ok && reload && config.reload_every != 0 && op % config.reload_every == 0 &&
        reload(filter)) {
      ok = driver.after_reload(*filter);
    }
  }
  if (ok) driver.sweep(*filter, "final sweep");
  return driver.report();
}

// One epoch of the concurrent test: `threads` drivers share `operations` on `filter`.
template <class Filter>
ModelReport concurrent_epoch(Filter& filter, const ModelConfig& config, std::uint64_t operations,
                             unsigned threads) {
  std::vector<std::unique_ptr<ModelDriver<Filter>>> drivers;
  for (unsigned t = 0; t < threads; ++t) {
    ModelConfig mine = config;
    mine.seed = config.seed * 1000 + t;
    drivers.push_back(std::make_unique<ModelDriver<Filter>>(mine, t + 1, threads));
  }
  std::atomic<bool> stop{false};
  std::barrier start(static_cast<std::ptrdiff_t>(threads));
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ModelDriver<Filter>& driver = *drivers[t];
        start.arrive_and_wait();
        for (std::uint64_t op = 0; op < operations / threads; ++op) {
          if (stop.load(std::memory_order_relaxed)) return;
          if (!driver.step(filter, false)) {
            stop.store(true, std::memory_order_relaxed);
            return;
          }
        }
      });
    }
  }
  ModelReport report;
  std::uint64_t total = 0;
  for (unsigned t = 0; t < threads; ++t) {
    ModelReport mine = drivers[t]->report();
    if (!mine.failure.empty()) mine.failure = "thread " + std::to_string(t) + ": " + mine.failure;
    report.merge(mine);
    total += drivers[t]->total();
  }
  // Quiescent: every thread's keys all present, and size() exact.
  for (unsigned t = 0; t < threads && report.failure.empty(); ++t) {
    if (!drivers[t]->sweep(filter, "final sweep")) {
      report.failure = "thread " + std::to_string(t) + ": " + drivers[t]->report().failure;
    }
  }
  if (report.failure.empty() && filter.size() != total) {
    report.failure = "at the end: size() is " + std::to_string(filter.size()) +
                     ", the models hold " + std::to_string(total) + " copies";
  }
  return report;
}

}  // namespace detail

// The single-threaded model test of A. The filter is held by unique_ptr so that a reload may
// replace it. With `fresh` and config.restart_every, the run is cut into epochs of that many
// operations, each on a new filter from `fresh` with an empty model (so that growth, which
// happens early in a filter's life, happens all along the run). Returns the report (also
// printed); failures are reported as test failures.
template <class Filter>
ModelReport check_model(std::unique_ptr<Filter>& filter, const ModelConfig& config,
                        const std::type_identity_t<Reload<Filter>>& reload = {},
                        const std::type_identity_t<Factory<Filter>>& fresh = {}) {
  const std::uint64_t epoch_length =
      fresh && config.restart_every != 0 ? config.restart_every : config.operations;
  ModelReport report;
  std::uint64_t done = 0;
  for (unsigned epoch = 0; done < config.operations && report.failure.empty(); ++epoch) {
    if (epoch > 0) filter = fresh();
    ModelConfig mine = config;
    mine.seed = config.seed + 7919 * epoch;
    const std::uint64_t operations = std::min(epoch_length, config.operations - done);
    ModelReport r = detail::model_epoch(filter, mine, operations, reload);
    detail::locate_failure(r, epoch, done);
    const std::size_t peak = std::max(report.peak_live, r.peak_live);  // epochs: the largest
    report.merge(r);
    report.peak_live = peak;
    done += operations;
  }
  print_report(report, 1);
  EXPECT_TRUE(report.failure.empty()) << report.failure;
  expect_coverage(config, report);
  // A run given a reload did save and load (a reload that always skips tests nothing).
  if (report.failure.empty() && reload && config.reload_every != 0 &&
      std::min(epoch_length, config.operations) >= config.reload_every) {
    EXPECT_GT(report.reloads, 0u) << "the filter was never saved and loaded";
  }
  return report;
}

// The concurrent model test of B: `threads` drivers, each with its own key space, model and
// share of the operations, on one filter. Each checks its own keys after each of its operations;
// at the end every live key of every thread is contained and size() is the models' total.
template <class Filter>
ModelReport check_concurrent_model(Filter& filter, const ModelConfig& config, unsigned threads) {
  const ModelReport report = detail::concurrent_epoch(filter, config, config.operations, threads);
  print_report(report, threads);
  EXPECT_TRUE(report.failure.empty()) << report.failure;
  expect_coverage(config, report);
  return report;
}

// The same in epochs of config.restart_every operations, each on a new filter from `fresh`.
template <class Filter>
ModelReport check_concurrent_model(const std::type_identity_t<Factory<Filter>>& fresh,
                                   const ModelConfig& config, unsigned threads) {
  const std::uint64_t epoch_length =
      config.restart_every != 0 ? config.restart_every : config.operations;
  ModelReport report;
  std::uint64_t done = 0;
  for (unsigned epoch = 0; done < config.operations && report.failure.empty(); ++epoch) {
    const std::unique_ptr<Filter> filter = fresh();
    ModelConfig mine = config;
    mine.seed = config.seed + 7919 * epoch;
    const std::uint64_t operations = std::min(epoch_length, config.operations - done);
    ModelReport r = detail::concurrent_epoch(*filter, mine, operations, threads);
    detail::locate_failure(r, epoch, done);
    const std::size_t peak = std::max(report.peak_live, r.peak_live);  // epochs: the largest
    report.merge(r);
    report.peak_live = peak;
    done += operations;
  }
  print_report(report, threads);
  EXPECT_TRUE(report.failure.empty()) << report.failure;
  expect_coverage(config, report);
  return report;
}

}  // namespace ccf::testing
