// `chtbench smart`: SmartCuckoo's evaluation (docs/smart_cuckoo.md): the YCSB-style mixes of
// the SmartCuckoo paper's Table 1 on one SmartCuckooTable per insertion policy -- the paper's
// pre-determination (smart), the textbook random walk with a kick bound (maxloop) and
// search-before-moving (bfs) -- under the same keys.
//
// A run: a fresh table of 2m one-slot buckets is preloaded with distinct keys to `preload` of
// its slots (one-slot cuckoo tables fail from load ~0.5 on), then runs `ops` operations of the
// mix: inserts of keys drawn from the key distribution over 8m ranks (a drawn rank that is
// present makes the insert report "exists", as YCSB's inserts of an existing record would),
// lookups, and updates (insert_or_assign of a drawn key that is present; an absent one is
// only looked up). The preload holds ranks 1, 2, ..., so
// under zipf the popular keys are present. Every insert's time is sampled one in
// kSampleEvery. Separately, "load at first failure" fills an empty table with distinct keys
// until the first refused insert.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keys.hpp"
#include "workload.hpp"

namespace chtbench {

struct SmartMix {
  unsigned insert_pct, lookup_pct, update_pct;
  std::string name() const;
  // "I/L/U" with I + L + U = 100; throws std::invalid_argument otherwise.
  static SmartMix parse(std::string_view text);
};

// The paper's Table 1 mixes.
const std::vector<SmartMix>& smart_paper_mixes();

struct SmartConfig {
  std::uint64_t buckets = std::uint64_t{1} << 20;  // m, per table
  std::vector<SmartMix> mixes = smart_paper_mixes();
  std::vector<std::string> insertions = {"smart", "maxloop", "bfs"};
  KeyDist dist{};
  double preload = 0.45;  // of the 2m slots, before the timed phase
  std::uint64_t ops = 0;  // 0 means 0.2 * 2m
  unsigned max_loop = 500;
  std::size_t stash = 0;
  unsigned repeat = 3;
  std::uint64_t seed = 1;
};

struct SmartResult {
  SmartMix mix;
  std::string insertion{};
  double mops = 0;                    // median over the repeats
  std::vector<double> repeat_mops{};  // in run order
  // Of the median repeat:
  std::uint64_t inserts = 0, inserted = 0, exists = 0, refused = 0, lookups = 0, hits = 0,
                updates = 0;
  std::uint64_t kicks = 0, futile_kicks = 0, refused_unkicked = 0;
  double load_after = 0;
  LatencyStats insert_latency{};
};

struct SmartReport {
  SmartConfig config;  // defaults resolved
  std::vector<SmartResult> runs{};
  // Per insertion policy: load (stored keys / 2m) when the first insert was refused.
  std::vector<std::pair<std::string, double>> load_at_first_failure{};
};

// Throws UsageError for bad parameters.
SmartReport run_smart_benchmark(SmartConfig config);

std::string smart_table(const SmartReport& report);
std::string smart_json(const SmartReport& report);

}  // namespace chtbench
