// The run workload: counters add up to the operations performed, the ~50% failure rate at
// r = 2i, the update split, Zipf skew reaching the structure, and the filter contract.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <ccf/hash.hpp>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "registry.hpp"
#include "workload.hpp"

namespace chtbench {
namespace {

// What a CountingSet saw: every call, every key it was asked about, and the CPUs it ran on.
struct Calls {
  std::mutex mutex;
  std::uint64_t calls = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> keys;
  std::set<int> cpus;

  void note(std::uint64_t key) {
    std::lock_guard lock(mutex);
    ++calls;
    ++keys[key];
    cpus.insert(sched_getcpu());
  }
};

// A thread-safe set that reports every call it receives to a Calls record. A `blind` one
// answers every lookup "absent" (a broken filter, for the false-negative check).
class CountingSet final : public StructureBase<CountingSet> {
 public:
  explicit CountingSet(std::shared_ptr<Calls> calls, bool blind = false)
      : calls_(std::move(calls)), blind_(blind) {}

  bool insert(std::uint64_t key) override {
    calls_->note(key);
    std::lock_guard lock(mutex_);
    return set_.insert(key).second;
  }
  bool contains(std::uint64_t key) const override {
    calls_->note(key);
    std::lock_guard lock(mutex_);
    return !blind_ && set_.contains(key);
  }
  bool erase(std::uint64_t key) override {
    calls_->note(key);
    std::lock_guard lock(mutex_);
    return set_.erase(key) != 0;
  }
  std::size_t size() const override { return set_.size(); }
  std::size_t capacity() const override { return 0; }
  std::size_t memory_bytes() const override { return 4096; }

 private:
  std::shared_ptr<Calls> calls_;
  bool blind_;
  mutable std::mutex mutex_;
  std::unordered_set<std::uint64_t> set_;
};

StructureInfo counting_set(bool filter, std::shared_ptr<Calls> calls, bool blind = false) {
  return {"counting-set",
          "test double",
          {.filter = filter, .thread_safe = true},
          [calls, blind](const StructureConfig&) {
            return std::make_unique<CountingSet>(calls, blind);
          }};
}

RunConfig small(unsigned threads, unsigned update) {
  return {.threads = threads, .update_pct = update, .initial = 1u << 12, .duration_ms = 50};
}

double fail_rate(const OpCounts& ops, OpClass ok, OpClass fail) {
  return static_cast<double>(ops[fail]) / static_cast<double>(ops[ok] + ops[fail]);
}

// Every counted operation is exactly one call on the structure; sizes balance.
TEST(Workload, CountersAddUpToOperationsPerformed) {
  for (const bool filter : {false, true}) {
    const auto calls = std::make_shared<Calls>();
    const RunResult r = run_benchmark(counting_set(filter, calls), small(2, 40));
    const std::uint64_t fill_calls = r.initial_inserted;
    EXPECT_EQ(r.ops.total() + fill_calls, calls->calls) << "filter " << filter;
    EXPECT_EQ(r.size_after, r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc]);
    EXPECT_EQ(r.initial_inserted, 1u << 12);
    EXPECT_GT(r.ops.total(), 1000u);
    EXPECT_GT(r.throughput_mops, 0);
  }
}

// --insert-pct splits u unevenly (the resize experiment's 35% insert / 5% erase): the drawn mix
// follows it, and the set grows by what the inserts and erases say.
TEST(Workload, InsertShareSplitsTheUpdates) {
  for (const bool filter : {false, true}) {
    const auto calls = std::make_shared<Calls>();
    RunConfig config = small(2, 40);
    config.insert_pct = 35;
    const RunResult r = run_benchmark(counting_set(filter, calls), config);
    const auto share = [&](OpClass ok, OpClass fail) {
      return static_cast<double>(r.ops[ok] + r.ops[fail]) / static_cast<double>(r.ops.total());
    };
    EXPECT_NEAR(share(OpClass::kPutSuc, OpClass::kPutFail), 0.35, 0.02) << "filter " << filter;
    EXPECT_NEAR(share(OpClass::kRemSuc, OpClass::kRemFail), 0.05, 0.01) << "filter " << filter;
    EXPECT_EQ(r.size_after, r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc]);
    EXPECT_GT(r.size_after, r.initial_inserted) << "filter " << filter;
  }
}

// --batch: lookups go to contains_many in runs; every operation is still one counted call, the
// mix and failure rates stay, and a concurrent filter keeps its contract.
TEST(Workload, BatchedLookupsCountEveryOperation) {
  RunConfig config = small(2, 40);
  config.batch = 16;
  for (const bool filter : {false, true}) {
    const auto calls = std::make_shared<Calls>();
    const RunResult r = run_benchmark(counting_set(filter, calls), config);
    EXPECT_EQ(r.ops.total() + r.initial_inserted, calls->calls) << "filter " << filter;
    EXPECT_EQ(r.size_after, r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc]);
    EXPECT_NEAR(fail_rate(r.ops, OpClass::kGetSuc, OpClass::kGetFail), 0.5, 0.05);
  }
  for (const char* name : {"ccf-striped", "lf-cuckoo-filter"}) {
    const RunResult r = run_benchmark(*registry().find(name), config);
    EXPECT_EQ(r.false_negatives, 0u) << name;
    EXPECT_EQ(r.size_after, r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc])
        << name;
    EXPECT_GT(r.ops.total(), 1000u) << name;
  }
}

// The false-negative check can fail: a filter whose lookups miss everything is caught, one call
// per lookup and batched alike (lookups verify a fixed one-in-16 sample of the keys).
TEST(Workload, FilterWorkloadCatchesFalseNegatives) {
  for (const unsigned batch : {1u, 16u}) {
    RunConfig config = small(2, 0);
    config.batch = batch;
    const RunResult r = run_benchmark(counting_set(true, std::make_shared<Calls>(), true), config);
    const auto lookups = static_cast<double>(r.ops.total());
    // One key in 16 is sampled, the looking thread owns half of them (n = 2), half of those are
    // present: about 1/64 of all lookups are caught.
    EXPECT_GT(static_cast<double>(r.false_negatives), lookups / 128) << "batch " << batch;
    EXPECT_LT(static_cast<double>(r.false_negatives), lookups / 32) << "batch " << batch;
  }
}

// The lock-free filter's own counts come back for the timed phase: K-CAS operations (at least
// one per migration step), migrations and restarts, near full where paths are long.
TEST(Workload, LockFreeFilterReportsItsKcasOperations) {
  RunConfig config = small(2, 40);
  config.capacity = config.initial;
  const RunResult r = run_benchmark(*registry().find("lf-cuckoo-filter"), config);
  std::unordered_map<std::string, std::uint64_t> events;
  for (const EventCount& e : r.events) events[e.name] = e.value;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_GT(events.at("migrations"), 0u);
  EXPECT_GE(events.at("kcas"), events.at("migrations"));
  EXPECT_TRUE(events.contains("restarts"));
  EXPECT_EQ(r.false_negatives, 0u);
}

// r = 2i: half the keys are present at any time, so about half of every class fails.
TEST(Workload, AboutHalfOfAllOperationsFailAtRangeTwiceInitial) {
  for (const char* name : {"std-set-rwlock", "cuckoo-filter"}) {
    const RunResult r = run_benchmark(*registry().find(name), small(1, 50));
    const OpCounts& ops = r.ops;
    EXPECT_NEAR(fail_rate(ops, OpClass::kGetSuc, OpClass::kGetFail), 0.5, 0.05) << name;
    EXPECT_NEAR(fail_rate(ops, OpClass::kPutSuc, OpClass::kPutFail), 0.5, 0.05) << name;
    EXPECT_NEAR(fail_rate(ops, OpClass::kRemSuc, OpClass::kRemFail), 0.5, 0.05) << name;
    // u = 50: a quarter inserts, a quarter erases.
    const double total = static_cast<double>(ops.total());
    EXPECT_NEAR(static_cast<double>(ops[OpClass::kPutSuc] + ops[OpClass::kPutFail]) / total, 0.25,
                0.02);
    EXPECT_NEAR(static_cast<double>(ops[OpClass::kRemSuc] + ops[OpClass::kRemFail]) / total, 0.25,
                0.02);
  }
}

TEST(Workload, ReadOnlyRunPerformsNoUpdates) {
  const RunResult r = run_benchmark(counting_set(false, std::make_shared<Calls>()), small(2, 0));
  EXPECT_EQ(r.ops[OpClass::kPutSuc] + r.ops[OpClass::kPutFail] + r.ops[OpClass::kRemSuc] +
                r.ops[OpClass::kRemFail],
            0u);
  EXPECT_EQ(r.size_after, r.initial_inserted);
}

TEST(Workload, FilterWorkloadKeepsTheContract) {
  const RunResult r = run_benchmark(*registry().find("cuckoo-filter"), small(1, 60));
  EXPECT_EQ(r.workload, "filter");
  EXPECT_EQ(r.false_negatives, 0u);
  EXPECT_EQ(r.size_after, r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc]);
}

TEST(Workload, ZipfSkewReachesTheStructure) {
  RunConfig c = small(1, 0);
  c.dist = KeyDist::parse("zipf:0.99");
  const auto calls = std::make_shared<Calls>();
  const RunResult r = run_benchmark(counting_set(false, calls), c);
  std::uint64_t hot = 0, all = 0;
  for (const auto& [key, count] : calls->keys) {
    all += count;
    if (key <= c.initial * 2 / 100) hot += count;  // the top 1% of ranks
  }
  ASSERT_GT(all, 0u);
  // Zipf(0.99) over 8192 keys puts ~55% of draws on the top 1%; uniform would give 1%
  // (plus the fill, which is uniform and small next to the run).
  EXPECT_GT(static_cast<double>(hot) / static_cast<double>(all), 0.3);
  EXPECT_EQ(r.config.dist.to_string(), "zipf:0.99");
}

// --keys scrambled: the structure sees fmix64 of the range's keys -- every key it is given is
// one of them, almost none is in [1, r] -- while the mix, the failure rates and (filters) the
// false-negative check stay what they are with the range's own keys.
TEST(Workload, ScrambledKeysReachTheStructureAndKeepTheWorkload) {
  for (const bool filter : {false, true}) {
    RunConfig c = small(2, 40);
    c.scrambled_keys = true;
    const auto calls = std::make_shared<Calls>();
    const RunResult r = run_benchmark(counting_set(filter, calls), c);
    std::unordered_set<std::uint64_t> scrambled;
    for (std::uint64_t k = 1; k <= 2 * c.initial; ++k) scrambled.insert(ccf::mix64(k, 0));
    std::uint64_t in_range = 0;
    for (const auto& [key, count] : calls->keys) {
      EXPECT_TRUE(scrambled.contains(key)) << key;
      in_range += key <= 2 * c.initial;
    }
    EXPECT_LT(in_range, 4u) << "filter " << filter;
    EXPECT_EQ(r.ops.total() + r.initial_inserted, calls->calls) << "filter " << filter;
    EXPECT_EQ(r.size_after, r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc]);
    EXPECT_NEAR(fail_rate(r.ops, OpClass::kGetSuc, OpClass::kGetFail), 0.5, 0.05);
    EXPECT_NEAR(fail_rate(r.ops, OpClass::kPutSuc, OpClass::kPutFail), 0.5, 0.05);
  }
  RunConfig c = small(2, 40);
  c.scrambled_keys = true;
  for (const unsigned batch : {1u, 16u}) {  // the check still catches a filter that misses
    c.batch = batch;
    const RunResult r = run_benchmark(counting_set(true, std::make_shared<Calls>(), true), c);
    EXPECT_GT(r.false_negatives, 0u) << "batch " << batch;
  }
  c.batch = 16;
  const RunResult r = run_benchmark(*registry().find("ccf-striped"), c);
  EXPECT_EQ(r.false_negatives, 0u);
  EXPECT_GT(r.ops.total(), 1000u);
  // The --latency loop (operations one by one) hands the structure scrambled keys too.
  c.batch = 1;
  c.latency = true;
  const auto calls = std::make_shared<Calls>();
  const RunResult timed = run_benchmark(counting_set(false, calls), c);
  EXPECT_EQ(timed.ops.total() + timed.initial_inserted, calls->calls);
  for (const auto& [key, count] : calls->keys) EXPECT_GT(key, 2 * c.initial) << key;
}

TEST(Workload, MedianOfRepeats) {
  RunConfig c = small(1, 10);
  c.repeat = 3;
  const RunResult r = run_benchmark(counting_set(false, std::make_shared<Calls>()), c);
  ASSERT_EQ(r.repeat_mops.size(), 3u);
  std::vector<double> sorted = r.repeat_mops;
  std::ranges::sort(sorted);
  EXPECT_DOUBLE_EQ(r.throughput_mops, sorted[1]);
}

TEST(Placement, OrdersArePermutationsOfTheProcessingUnits) {
  const Topology& topo = Topology::get();
  ASSERT_GE(topo.processing_units(), 1u);
  std::vector<unsigned> compact = topo.order(Pin::kCompact);
  std::vector<unsigned> balanced = topo.order(Pin::kBalanced);
  EXPECT_EQ(compact.size(), topo.processing_units());
  std::ranges::sort(compact);
  std::ranges::sort(balanced);
  EXPECT_EQ(compact, balanced);
  EXPECT_EQ(std::ranges::adjacent_find(compact), compact.end());  // no PU twice
}

// One pinned thread runs every operation (and the fill) on the first PU of the order.
TEST(Placement, PinnedThreadRunsOnItsProcessingUnit) {
  for (const Pin pin : {Pin::kCompact, Pin::kBalanced}) {
    const auto calls = std::make_shared<Calls>();
    RunConfig c = small(1, 10);
    c.pin = pin;
    const RunResult r = run_benchmark(counting_set(false, calls), c);
    EXPECT_GT(r.ops.total(), 0u);
    const std::set<int> expected = {static_cast<int>(Topology::get().order(pin).front())};
    EXPECT_EQ(calls->cpus, expected) << to_string(pin);
  }
  EXPECT_TRUE(Topology::get().pin_current_thread(Pin::kDefault, 0));
  EXPECT_EQ(parse_pin("balanced"), Pin::kBalanced);
  EXPECT_THROW(parse_pin("diagonal"), std::invalid_argument);
}

TEST(Workload, ResolveRejectsWhatAStructureCannotRun) {
  const StructureInfo& filter = *registry().find("cuckoo-filter");
  const StructureInfo& bloom = *registry().find("bloom");
  EXPECT_THROW(resolve(filter, {.threads = 2}), UsageError);     // sequential
  EXPECT_THROW(resolve(bloom, {.update_pct = 10}), UsageError);  // no erase
  EXPECT_THROW(resolve(filter, {.initial = 100, .range = 50}), UsageError);
  EXPECT_THROW(resolve(filter, {.update_pct = 101}), UsageError);
  EXPECT_THROW(resolve(filter, {.update_pct = 10, .insert_pct = 11}), UsageError);
  EXPECT_NO_THROW(resolve(bloom, {.update_pct = 10, .insert_pct = 10}));  // inserts only
  EXPECT_THROW(resolve(bloom, {.update_pct = 10, .insert_pct = 9}), UsageError);
  const RunConfig c = resolve(filter, {.initial = 100});
  EXPECT_EQ(c.range, 200u);     // r = 2i
  EXPECT_EQ(c.capacity, 200u);  // sized for r
}

}  // namespace
}  // namespace chtbench
