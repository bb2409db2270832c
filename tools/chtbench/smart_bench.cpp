#include "smart_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ccf/tables/smart_cuckoo.hpp>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "timing.hpp"

namespace chtbench {
namespace {

using Table = ccf::SmartCuckooTable<>;
using ccf::smart_cuckoo::Insertion;

constexpr std::uint64_t kSampleEvery = 16;  // one insert in 16 is timed
constexpr std::uint64_t kPreloadStream = 11, kOpStream = 12, kFirstFailureStream = 13;

Insertion parse_insertion(const std::string& name) {
  if (name == "smart") return Insertion::kSmart;
  if (name == "maxloop") return Insertion::kMaxLoop;
  if (name == "bfs") return Insertion::kBfs;
  throw UsageError(fmt::format("--insertion: '{}' is not one of smart, maxloop, bfs", name));
}

// Distinct keys in drawing order: rank k of the key space is key mix64(k), so that a zipf
// draw's popular ranks are spread over the table like any other keys.
std::uint64_t key_of_rank(std::uint64_t rank) {
  return ccf::mix64(rank, 0x2545f4914f6cdd1dULL);
}

// A fresh table of the run's shape under one insertion policy.
Table make_table(const SmartConfig& c, const std::string& insertion) {
  return Table(c.buckets, {.insertion = parse_insertion(insertion),
                           .max_loop = c.max_loop,
                           .stash = c.stash,
                           .seed = c.seed});
}

// One repeat of one mix on one policy.
SmartResult run_once(const SmartConfig& c, const SmartMix& mix, const std::string& insertion,
                     unsigned repeat) {
  Table table = make_table(c, insertion);
  const std::uint64_t ranks = 8 * c.buckets;
  const auto preload = static_cast<std::uint64_t>(c.preload * 2.0 * static_cast<double>(c.buckets));
  // The preload: ranks 1, 2, ... (under zipf, the popular ones) until the load is reached.
  for (std::uint64_t rank = 1; table.size() < preload && rank <= ranks; ++rank) {
    table.insert(key_of_rank(rank), rank);
  }
  // The operations are drawn before the clock starts: the zipf draw costs as much as an
  // operation, and the figures are the table's.
  const KeyGenerator keys(c.dist, ranks);
  Rng rng(stream_seed(c.seed + repeat, kOpStream, 0));
  std::vector<std::uint8_t> draws(c.ops);
  std::vector<std::uint64_t> drawn_ranks(c.ops);
  for (std::uint64_t i = 0; i < c.ops; ++i) {
    draws[i] = static_cast<std::uint8_t>(rng.below(100));
    drawn_ranks[i] = keys(rng);
  }
  const ccf::smart_cuckoo::Stats before = table.stats();
  const std::uint64_t overhead = timer_overhead();
  LatencyHistogram latency;
  SmartResult r{.mix = mix, .insertion = insertion};
  std::uint64_t sample_clock = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < c.ops; ++i) {
    const std::uint64_t draw = draws[i];
    const std::uint64_t rank = drawn_ranks[i];
    const std::uint64_t key = key_of_rank(rank);
    if (draw < mix.insert_pct) {
      const bool sample = ++sample_clock % kSampleEvery == 0;
      const std::uint64_t t0 = sample ? cycles_begin() : 0;
      const ccf::Status s = table.insert(key, rank);
      const std::uint64_t t1 = sample ? cycles_end() : 0;
      if (sample) latency.record(t1 - t0 > overhead ? t1 - t0 - overhead : 0);
      ++r.inserts;
      r.inserted += s == ccf::Status::kOk;
      r.exists += s == ccf::Status::kExists;
      r.refused += s == ccf::Status::kFull;
    } else if (draw < mix.insert_pct + mix.lookup_pct) {
      ++r.lookups;
      r.hits += table.contains(key);
    } else if (table.contains(key)) {  // an update modifies an existing record (YCSB)
      ++r.updates;
      table.insert_or_assign(key, i);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.mops = static_cast<double>(c.ops) / seconds / 1e6;
  r.kicks = table.stats().kicks - before.kicks;
  r.futile_kicks = table.stats().futile_kicks - before.futile_kicks;
  r.refused_unkicked = table.stats().refused_unkicked - before.refused_unkicked;
  r.load_after = static_cast<double>(table.size()) / static_cast<double>(2 * c.buckets);
  r.insert_latency = summarize(latency, tsc_ghz());
  return r;
}

// Distinct uniform keys into an empty table until the first refusal.
double load_at_first_failure(const SmartConfig& c, const std::string& insertion) {
  Table table = make_table(c, insertion);
  Rng rng(stream_seed(c.seed, kFirstFailureStream, 0));
  while (table.insert(rng(), 0) != ccf::Status::kFull) {
  }
  return static_cast<double>(table.size()) / static_cast<double>(2 * c.buckets);
}

}  // namespace

std::string SmartMix::name() const {
  return fmt::format("{}/{}/{}", insert_pct, lookup_pct, update_pct);
}

SmartMix SmartMix::parse(std::string_view text) {
  SmartMix mix{};
  unsigned* const parts[3] = {&mix.insert_pct, &mix.lookup_pct, &mix.update_pct};
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  for (unsigned k = 0; k < 3; ++k) {
    const auto [next, ec] = std::from_chars(at, end, *parts[k]);
    if (ec != std::errc{} || (k < 2 ? next == end || *next != '/' : next != end)) {
      throw std::invalid_argument(
          fmt::format("'{}' is not INSERT/LOOKUP/UPDATE percentages, e.g. 50/50/0", text));
    }
    at = next + 1;
  }
  if (mix.insert_pct + mix.lookup_pct + mix.update_pct != 100) {
    throw std::invalid_argument(fmt::format("'{}' does not add up to 100", text));
  }
  return mix;
}

const std::vector<SmartMix>& smart_paper_mixes() {
  static const std::vector<SmartMix> mixes = {
      {100, 0, 0}, {75, 25, 0}, {50, 50, 0}, {25, 75, 0}, {0, 95, 5}};
  return mixes;
}

SmartReport run_smart_benchmark(SmartConfig c) {
  if (c.buckets == 0 || c.buckets > Table::kMaxBucketsPerTable) {
    throw UsageError(
        fmt::format("--buckets {} must lie in [1, {}]", c.buckets, Table::kMaxBucketsPerTable));
  }
  if (!(c.preload >= 0 && c.preload < 1)) {
    throw UsageError(fmt::format("--preload {} must lie in [0, 1)", c.preload));
  }
  if (c.mixes.empty() || c.insertions.empty()) {
    throw UsageError("--mix and --insertion need at least one value each");
  }
  for (const std::string& name : c.insertions) parse_insertion(name);
  if (c.max_loop == 0) throw UsageError("--max-loop must be at least 1");
  if (c.repeat == 0) throw UsageError("--repeat must be at least 1");
  if (c.ops == 0) c.ops = std::max<std::uint64_t>(1, 2 * c.buckets / 5);
  // A table's 2m buckets (key, value, flag and the accounting: about 40 bytes each) and the
  // drawn operations (9 bytes each).
  require_memory(static_cast<double>(c.buckets) * 2 * 40 + static_cast<double>(c.ops) * 9,
                 fmt::format("--buckets {} --ops {}", c.buckets, c.ops));

  SmartReport report{.config = c};
  for (const SmartMix& mix : c.mixes) {
    for (const std::string& insertion : c.insertions) {
      std::vector<SmartResult> repeats;
      for (unsigned k = 0; k < c.repeat; ++k) repeats.push_back(run_once(c, mix, insertion, k));
      std::vector<SmartResult> by_rate = repeats;
      std::ranges::sort(by_rate, {}, &SmartResult::mops);
      SmartResult median = by_rate[by_rate.size() / 2];
      for (const SmartResult& r : repeats) median.repeat_mops.push_back(r.mops);
      report.runs.push_back(std::move(median));
    }
  }
  for (const std::string& insertion : c.insertions) {
    report.load_at_first_failure.emplace_back(insertion, load_at_first_failure(c, insertion));
  }
  return report;
}

std::string smart_table(const SmartReport& report) {
  const SmartConfig& c = report.config;
  std::string out = fmt::format(
      "SmartCuckoo: m = {} buckets per table (2m slots), preload {:.2f}, {} ops per run, keys {} "
      "over {} ranks, max_loop {}, stash {}, medians of {}\n",
      c.buckets, c.preload, c.ops, c.dist.to_string(), 8 * c.buckets, c.max_loop, c.stash,
      c.repeat);
  out += fmt::format("{:<10} {:<8} {:>8} {:>9} {:>9} {:>9} {:>11} {:>11} {:>8} {:>8} {:>9} {:>6}\n",
                     "mix I/L/U", "insert", "Mops/s", "inserted", "refused", "kicks/ins",
                     "unkicked", "futile", "p50 ns", "p99 ns", "p99.9 ns", "load");
  for (const SmartResult& r : report.runs) {
    out += fmt::format(
        "{:<10} {:<8} {:>8.2f} {:>9} {:>9} {:>9.3f} {:>11} {:>11} {:>8.0f} {:>8.0f} {:>9.0f} "
        "{:>6.3f}\n",
        r.mix.name(), r.insertion, r.mops, r.inserted, r.refused,
        r.inserts == 0 ? 0.0 : static_cast<double>(r.kicks) / static_cast<double>(r.inserts),
        r.refused_unkicked, r.futile_kicks, r.insert_latency.p50, r.insert_latency.p99,
        r.insert_latency.p999, r.load_after);
  }
  out +=
      "(unkicked: inserts refused before any kick -- futile kick sequences avoided; futile: "
      "kicks spent, then undone, by refused inserts; latency: inserts, 1 in 16 timed)\n";
  out += "load at the first refused insert (distinct uniform keys into an empty table):";
  for (const auto& [insertion, load] : report.load_at_first_failure) {
    out += fmt::format(" {} {:.4f}", insertion, load);
  }
  return out + "\n";
}

std::string smart_json(const SmartReport& report) {
  const SmartConfig& c = report.config;
  nlohmann::json j = {{"command", "smart"},
                      {"buckets_per_table", c.buckets},
                      {"preload", c.preload},
                      {"ops", c.ops},
                      {"dist", c.dist.to_string()},
                      {"max_loop", c.max_loop},
                      {"stash", c.stash},
                      {"repeat", c.repeat},
                      {"seed", c.seed}};
  nlohmann::json runs = nlohmann::json::array();
  for (const SmartResult& r : report.runs) {
    runs.push_back({{"mix", r.mix.name()},
                    {"insertion", r.insertion},
                    {"mops", r.mops},
                    {"repeat_mops", r.repeat_mops},
                    {"inserts", r.inserts},
                    {"inserted", r.inserted},
                    {"exists", r.exists},
                    {"refused", r.refused},
                    {"lookups", r.lookups},
                    {"hits", r.hits},
                    {"updates", r.updates},
                    {"kicks", r.kicks},
                    {"futile_kicks", r.futile_kicks},
                    {"refused_unkicked", r.refused_unkicked},
                    {"load_after", r.load_after},
                    {"insert_latency_ns",
                     {{"samples", r.insert_latency.samples},
                      {"p50", r.insert_latency.p50},
                      {"p90", r.insert_latency.p90},
                      {"p99", r.insert_latency.p99},
                      {"p99.9", r.insert_latency.p999}}}});
  }
  j["runs"] = std::move(runs);
  nlohmann::json loads = nlohmann::json::object();
  for (const auto& [insertion, load] : report.load_at_first_failure) loads[insertion] = load;
  j["load_at_first_failure"] = std::move(loads);
  return j.dump(2) + "\n";
}

}  // namespace chtbench
