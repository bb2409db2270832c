// A very short `run` (and, for filters, `filter`) of every registered structure, with the
// invariants every run must satisfy. Structures registered later are covered automatically.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>

#include "filter_bench.hpp"
#include "registry.hpp"
#include "workload.hpp"

namespace chtbench {
namespace {

class Smoke : public testing::TestWithParam<std::string> {
 protected:
  const StructureInfo& info() const { return *registry().find(GetParam()); }
};
using SmokeRun = Smoke;
using SmokeFilter = Smoke;

// A short run of what the structure can do: 2 threads if it is thread-safe, updates if it can
// erase.
RunConfig small_run(const StructureTraits& t) {
  return {.threads = t.thread_safe ? 2u : 1u,
          .update_pct = t.erase ? 20u : 0u,
          .initial = 1u << 10,
          .duration_ms = 20,
          .init_all = t.thread_safe};
}

TEST_P(SmokeRun, Run) {
  const StructureTraits t = info().traits;
  RunConfig c = small_run(t);
  c.latency = true;
  const RunResult r = run_benchmark(info(), c);
  EXPECT_GT(r.ops.total(), 0u);
  EXPECT_GT(r.throughput_mops, 0);
  EXPECT_GT(r.limit_mops, 0);
  EXPECT_GT(r.memory_bytes, 0u);
  if (t.stores) {
    EXPECT_EQ(r.initial_inserted, c.initial);
    EXPECT_EQ(r.size_after, r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc]);
  }
  // Every result says what the harness alone cost per operation in the same workload.
  EXPECT_GT(r.harness_ns_per_op, 0);
  EXPECT_GT(r.harness_share, 0);
  EXPECT_EQ(r.false_negatives, 0u);
  ASSERT_TRUE(r.latency.has_value());
  // A thread that runs does whole rounds of 64 operations and times the 64th of each, so there
  // are samples, never more in a class than it had operations; which classes get them is
  // chance (a short run on a busy machine may time no successful lookup).
  std::uint64_t samples = 0;
  for (std::size_t k = 0; k < kOpClasses; ++k) {
    EXPECT_LE((*r.latency)[k].samples, r.ops.n[k]) << k;
    samples += (*r.latency)[k].samples;
  }
  EXPECT_GT(samples, 0u);
  EXPECT_LE(samples, r.ops.total() / 64);
}

// The timed loop without latency sampling: operations drawn a chunk at a time, runs of lookups
// in a tight loop of one call each, or through contains_many.
TEST_P(SmokeRun, ChunkedLoopOneCallAndBatched) {
  const StructureTraits t = info().traits;
  for (const unsigned batch : {1u, 16u}) {
    SCOPED_TRACE(batch);
    RunConfig c = small_run(t);
    c.batch = batch;
    const RunResult r = run_benchmark(info(), c);
    EXPECT_GT(r.ops[OpClass::kGetSuc] + r.ops[OpClass::kGetFail], 0u);
    if (t.erase) {
      EXPECT_GT(r.ops[OpClass::kPutSuc] + r.ops[OpClass::kPutFail], 0u);
    }
    if (t.stores) {
      EXPECT_EQ(r.size_after,
                r.initial_inserted + r.ops[OpClass::kPutSuc] - r.ops[OpClass::kRemSuc]);
    }
    EXPECT_EQ(r.false_negatives, 0u);
  }
}

TEST_P(SmokeFilter, Filter) {
  const FilterBenchConfig c{.capacity = 1u << 12, .negative_queries = 1u << 14, .probe_ms = 10};
  const FilterResult r = run_filter_benchmark(info(), c);
  EXPECT_GT(r.items, c.capacity * 9 / 10);
  EXPECT_EQ(r.false_negatives, 0u);
  EXPECT_GT(r.fpr, 0);
  // 12 bits: ~0.2% for cuckoo, ~0.3-0.5% for Bloom; 24% for the counting Bloom filter, whose
  // 4-bit counters leave it 3 positions per item (k = 2).
  EXPECT_LT(r.fpr, info().name == "counting-bloom" ? 0.3 : 0.05);
  // At this tiny size fixed overheads (lock stripes, counters) may dominate: check the
  // accounting, and that no filter stores 12-bit fingerprints in less than 10 bits.
  EXPECT_DOUBLE_EQ(r.bits_per_item,
                   8.0 * static_cast<double>(r.memory_bytes) / static_cast<double>(r.items));
  EXPECT_GT(r.bits_per_item, 10);
  EXPECT_GT(r.construction_mops, 0);
  // Filled to 1 (the default --fill): the stretch from 90% of the slots was timed on its own
  // if the build got past it.
  if (r.items > r.slots * 9 / 10) {
    EXPECT_GT(r.construction_tail_mops, 0);
  } else {
    EXPECT_TRUE(std::isnan(r.construction_tail_mops));
  }
  EXPECT_GT(r.positive_batched_mops, 0);
}

std::vector<std::string> names(bool filters_only) {
  std::vector<std::string> out;
  for (const StructureInfo& s : registry().all()) {
    if (!filters_only || s.traits.filter) out.push_back(s.name);
  }
  return out;
}

std::string test_name(const testing::TestParamInfo<std::string>& p) {
  std::string name = p.param;
  for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) != 0 ? ch : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryStructure, SmokeRun, testing::ValuesIn(names(false)), test_name);
INSTANTIATE_TEST_SUITE_P(EveryFilter, SmokeFilter, testing::ValuesIn(names(true)), test_name);

}  // namespace
}  // namespace chtbench
