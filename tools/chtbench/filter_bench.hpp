// `chtbench filter`: the filter metrics of the thesis (002 §5.5.1).
//
// Fills the filter with random 64-bit keys until the first insert fails (or, for filters that
// never fail, such as Bloom filters, until their design capacity; or until a chosen fraction
// of the slots), one key per call or in batches, then measures lookups of
// inserted keys (positive) and of never-inserted keys (negative), one at a time and batched,
// and the false-positive rate on the negatives. Every rate is also given as a ratio to
// limit_mops, the two-random-lines memory probe over a region of the filter's size.
#pragma once

#include <cstdint>
#include <string>

#include "structure.hpp"
#include "topology.hpp"

namespace chtbench {

struct FilterBenchConfig {
  std::string structure{};
  unsigned fp_bits = 12;
  std::uint64_t capacity = std::uint64_t{1} << 20;
  unsigned threads = 1;
  Pin pin = Pin::kDefault;
  std::uint64_t seed = 1;
  // Construction stops at this fraction of the filter's slots if no insert fails before.
  double fill = 1.0;
  // Construction inserts in batches of this many keys through insert_many (hash ahead and
  // prefetch); 0: one insert() per key.
  std::size_t insert_batch = 0;
  std::uint64_t negative_queries = 0;  // 0 means max(items, 2^20)
  unsigned probe_ms = 300;             // duration of the limit_mops measurement
};

// Where construction_tail_mops starts: the share of the slots filled before it.
inline constexpr double kTailFrom = 0.9;

struct FilterResult {
  FilterBenchConfig config;
  std::size_t items = 0;  // stored before the first failure
  std::size_t slots = 0;  // the structure's capacity()
  bool filled_to_failure = false;
  std::size_t memory_bytes = 0;
  double load_factor = 0;  // NaN where it does not apply
  double bits_per_item = 0;
  std::uint64_t positive_queries = 0;  // every stored key once
  std::uint64_t negative_queries = 0;
  std::uint64_t false_positives = 0;
  std::uint64_t false_negatives = 0;  // must be 0
  double fpr = 0;
  double construction_mops = 0;
  // Inserts from kTailFrom of the slots to --fill; NaN when the build did not get that far.
  double construction_tail_mops = 0;
  double positive_mops = 0;
  double negative_mops = 0;
  double positive_batched_mops = 0;
  double negative_batched_mops = 0;
  double limit_mops = 0;

  // Positive and negative plain lookups together: all queries / all time.
  double lookup_mops() const;
};

// Throws UsageError for bad parameters.
FilterResult run_filter_benchmark(const StructureInfo& info, FilterBenchConfig config);

}  // namespace chtbench
