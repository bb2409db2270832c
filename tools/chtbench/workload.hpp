// `chtbench run`: the timed mixed workload of the thesis's CHTBench (docs/chtbench.md).
//
// Parameters carry the thesis's names: n threads, u update percent (half insert, half erase,
// the rest lookups; `insert_pct` splits u otherwise, as the resize experiment's 35/5 does), i
// initial items, keys from [1, r] (r = 2i by default, so about half of all operations fail), d
// milliseconds. Every structure is sized for r items unless `capacity` says otherwise.
//
// Two workloads share one engine:
//  - hash tables (sets): every operation draws its key from [1, r];
//  - filters: a filter is not a set -- a second insert stores a second copy, and erasing a
//    never-inserted key can remove another key's fingerprint. So each thread owns the keys
//    k with (k - 1) mod n == thread and keeps a bitmap of which of them are present; updates
//    draw from the thread's own keys, lookups from the whole range. An insert of a present
//    key or an erase of an absent one is not sent to the filter: the thread runs the search a
//    set would run (contains) and counts the update as failed, so the operation mix, the
//    failure rates and the steady state (about r/2 items) are those of the hash-table
//    workload. A filter insert that reports "full" is a failed insert; an erase of a present
//    key that is not found, or a lookup that misses a key its own thread holds, counts as a
//    false negative (a bug).
// Both start from the same initial set: i distinct keys chosen uniformly, split across the
// owners, inserted by one thread or by all n behind a barrier.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "keys.hpp"
#include "structure.hpp"
#include "timing.hpp"
#include "topology.hpp"

namespace chtbench {

// Invalid parameters; the CLI prints the message and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Operation classes, as the thesis's latency plots name them.
enum class OpClass : std::uint8_t { kGetSuc, kGetFail, kPutSuc, kPutFail, kRemSuc, kRemFail };
inline constexpr std::size_t kOpClasses = 6;
inline constexpr std::array<std::string_view, kOpClasses> kLatencyNames = {
    "get_suc", "get_fail", "put_suc", "put_fail", "rem_suc", "rem_fail"};
inline constexpr std::array<std::string_view, kOpClasses> kCountNames = {
    "lookup_hit", "lookup_miss", "insert_ok", "insert_fail", "erase_ok", "erase_fail"};

struct OpCounts {
  std::array<std::uint64_t, kOpClasses> n{};

  std::uint64_t& operator[](OpClass c) { return n[static_cast<std::size_t>(c)]; }
  std::uint64_t operator[](OpClass c) const { return n[static_cast<std::size_t>(c)]; }
  std::uint64_t total() const;
  OpCounts& operator+=(const OpCounts& other);
};

struct LatencyStats {
  std::uint64_t samples = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0;  // nanoseconds
  double max = 0;                              // the longest sample, nanoseconds
};

// Percentiles of a histogram of cycle counts, in nanoseconds at `ghz` cycles per ns.
LatencyStats summarize(const LatencyHistogram& h, double ghz);

struct RunConfig {
  std::string structure{};
  unsigned threads = 1;     // n
  unsigned update_pct = 0;  // u
  // Inserts, in percent of all operations; the rest of u are erases. Unset: u/2 each.
  std::optional<unsigned> insert_pct{};
  std::uint64_t initial = 1u << 16;  // i
  std::uint64_t range = 0;           // r; 0 means 2i (at most 2^64 - 1)
  unsigned duration_ms = 1000;       // d
  KeyDist dist{};
  // --keys scrambled: the structure sees fmix64(k) for every harness key k of [1, r] -- a
  // bijection, so the same sets and failure rates, with random-looking 64-bit keys instead of a
  // dense range (which a multiplicative hash spreads more evenly than a random one).
  bool scrambled_keys = false;
  Pin pin = Pin::kDefault;
  bool init_all = false;  // initial fill by all n threads (else by one)
  bool latency = false;
  unsigned repeat = 1;
  std::uint64_t capacity = 0;  // 0 means r
  std::uint64_t seed = 1;
  unsigned fp_bits = 12;
  double growth = 0;  // a growable table's growth factor; 0 means the table's default
  // Lookups in batches: each thread draws this many operations at a time and hands every run
  // of consecutive lookups to contains_many (hash ahead + prefetch where the structure has a
  // native batch API). 1 = one call per operation. Not combined with --latency.
  unsigned batch = 1;
  // The elided structures count their transactions, aborts and fallbacks
  // (ccf::sync::ElisionStats); off, to measure what the counting costs.
  bool elision_stats = true;
};

struct RunResult {
  RunConfig config;                   // defaults resolved
  std::string workload;               // "set" or "filter"
  double throughput_mops = 0;         // median over the repeats
  std::vector<double> repeat_mops;    // every repeat, in run order
  double seconds = 0;                 // measured duration of the median repeat
  OpCounts ops;                       // of the median repeat, summed over threads
  std::uint64_t false_negatives = 0;  // filter workload only; must be 0
  std::uint64_t initial_inserted = 0;
  double fill_seconds = 0;
  std::size_t size_after = 0;
  std::size_t memory_bytes = 0;       // the structure's own accounting, after the run
  std::vector<EventCount> events;     // Structure::event_counts() growth in the timed phase
  std::int64_t rss_growth_bytes = 0;  // resident set growth from construction to the end
  double limit_mops = 0;
  // What the harness alone costs per operation and thread in this workload (the same loop over
  // the `null` structure, measured after the repeats), and its share of the structure's time
  // per operation and thread.
  double harness_ns_per_op = 0;
  double harness_share = 0;
  double tsc_ghz = 0;            // latency runs: measured TSC frequency
  double timer_overhead_ns = 0;  // latency runs: cost of the timing bracket, subtracted
  std::optional<std::array<LatencyStats, kOpClasses>> latency;
};

// This machine's physical memory, bytes.
double physical_memory_bytes();

// Throws UsageError "SIZES: needs X GiB, this machine has Y GiB" if `bytes` exceed the physical
// memory: a size the machine cannot hold is refused before anything is allocated.
void require_memory(double bytes, const std::string& sizes);

// Checks `config` against the structure (throws UsageError) and fills in the defaults.
RunConfig resolve(const StructureInfo& info, RunConfig config);

// Throws UsageError if the resolved `config` needs more memory than the machine has: a lower
// bound, the presence bitmaps (r bits) and the structure's items (fp_bits or 64 bits each).
void require_memory(const StructureInfo& info, const RunConfig& config);

// Runs config.repeat repeats (a fresh structure each) plus the memory-limit probe.
// `on_repeat(k)` is called before repeat k (progress display).
RunResult run_benchmark(const StructureInfo& info, const RunConfig& config,
                        const std::function<void(unsigned)>& on_repeat = {});

}  // namespace chtbench
