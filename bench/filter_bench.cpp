// filter_bench: the sequential cuckoo filter against the memory system (docs/benchmarks.md).
//
// For each table size and fingerprint width: build a filter to 95% load with random 64-bit
// keys, then time -- per operation, plain and batched (hash ahead + prefetch) -- inserts over
// the whole build, positive lookups, negative lookups, and finally deletes; measure FPR and
// bits per item. In the same run, measure the memory limit: random 64-byte-line reads, two
// independent lines per operation, batched with prefetch, over a region the size of the
// filter (chtbench's MemoryProbe). Each lookup figure is reported as a fraction of that limit.
// The builds run on tables whose pages were committed first; the first touch is its own
// figure (commit ms). Every figure is the median of --repeat runs.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ccf/cuckoo_filter.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "memory_probe.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double insert_ns = 0, insert_batched_ns = 0;
  double positive_ns = 0, positive_batched_ns = 0;
  double negative_ns = 0, negative_batched_ns = 0;
  double erase_ns = 0;
  double limit_ns = 0;
  double commit_ms = 0;  // first touch of the batched build's table, before its inserts
  double load_factor = 0, bits_per_item = 0, fpr = 0;
  bool huge_pages = false;
};

template <class F>
double ns_per_op(std::size_t ops, F&& body) {
  const auto start = Clock::now();
  body();
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
         static_cast<double>(ops);
}

// Random 64-bit keys: mix64 of 2i (members) or 2i + 1 (non-members). mix64 is a bijection,
// so the two sets never share a key.
std::vector<std::uint64_t> random_keys(std::size_t count, bool members, std::uint64_t seed) {
  std::vector<std::uint64_t> keys(count);
  for (std::size_t i = 0; i < count; ++i) keys[i] = ccf::mix64(2 * i + (members ? 0 : 1), seed);
  return keys;
}

constexpr double kTargetLoad = 0.95;

template <class Filter>
Figures run_once(std::size_t items, unsigned repeat_index) {
  const auto members = random_keys(items, true, repeat_index + 1);
  const auto others = random_keys(items, false, repeat_index + 1);
  const std::span<const std::uint64_t> member_span(members), other_span(others);
  const ccf::FilterOptions options{.max_load = kTargetLoad};
  Figures out;
  volatile std::size_t sink = 0;  // keeps results observable

  // Each build's table has its pages committed (written once by clear()) before the inserts
  // are timed: the build figures are the inserts' own work, as the peers' benchmarks time
  // theirs (their constructors allocate and zero the table). The first touch is reported on
  // its own, as commit_ms: page faults, and in a VM the host's, that no insert algorithm
  // changes.
  {  // batched build on its own filter
    Filter filter(items, options);
    out.commit_ms = ns_per_op(1, [&] { filter.clear(); }) / 1e6;
    out.insert_batched_ns = ns_per_op(items, [&] { sink = filter.insert_many(member_span); });
    if (sink != items) throw std::runtime_error("batched build filled up before 95% load");
  }
  Filter filter(items, options);
  filter.clear();
  out.insert_ns = ns_per_op(items, [&] {
    std::size_t stored = 0;
    for (const std::uint64_t key : members) stored += filter.insert(key) == ccf::Status::kOk;
    sink = stored;
  });
  if (sink != items) throw std::runtime_error("build filled up before 95% load");
  out.load_factor = filter.load_factor();
  out.bits_per_item = filter.bits_per_item();
  out.huge_pages = filter.huge_pages_advised();

  const auto count_hits = [&](const std::vector<std::uint64_t>& keys) {
    std::size_t hits = 0;
    for (const std::uint64_t key : keys) hits += filter.contains(key);
    return hits;
  };
  std::size_t positives = 0, negatives = 0;
  out.positive_ns = ns_per_op(items, [&] { positives = count_hits(members); });
  out.negative_ns = ns_per_op(items, [&] { negatives = count_hits(others); });
  if (positives != items) throw std::runtime_error("false negative: a member was not found");
  out.fpr = static_cast<double>(negatives) / static_cast<double>(items);

  auto flags = std::make_unique<bool[]>(items);
  const std::span<bool> flag_span(flags.get(), items);
  out.positive_batched_ns =
      ns_per_op(items, [&] { sink = filter.contains_many(member_span, flag_span); });
  out.negative_batched_ns =
      ns_per_op(items, [&] { sink = filter.contains_many(other_span, flag_span); });

  out.erase_ns = ns_per_op(items, [&] {
    std::size_t erased = 0;
    for (const std::uint64_t key : members) erased += filter.erase(key) == ccf::Status::kOk;
    sink = erased;
  });
  if (sink != items || !filter.empty()) throw std::runtime_error("erase missed members");

  const chtbench::MemoryProbe probe(filter.memory_bytes());
  out.limit_ns = 1000.0 / chtbench::measure_limit_mops(probe, 1, std::chrono::milliseconds(400));
  return out;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <class Filter>
nlohmann::json run_config(std::size_t items, unsigned repeats, const std::string& name) {
  std::vector<Figures> runs;
  for (unsigned r = 0; r < repeats; ++r) {
    fmt::print(stderr, "  {} n={} run {}/{}...\n", name, items, r + 1, repeats);
    runs.push_back(run_once<Filter>(items, r));
  }
  const auto med = [&](double Figures::*field) {
    std::vector<double> values;
    for (const auto& run : runs) values.push_back(run.*field);
    return median(values);
  };
  nlohmann::json result = {
      {"filter", name},
      {"items", items},
      {"fp_bits", Filter::kFpBits},
      {"slots_per_bucket", Filter::kSlots},
      {"repeats", repeats},
      {"huge_pages_advised", runs.front().huge_pages},
      {"load_factor", med(&Figures::load_factor)},
      {"bits_per_item", med(&Figures::bits_per_item)},
      {"fpr", med(&Figures::fpr)},
      {"insert_ns", med(&Figures::insert_ns)},
      {"insert_batched_ns", med(&Figures::insert_batched_ns)},
      {"positive_lookup_ns", med(&Figures::positive_ns)},
      {"positive_lookup_batched_ns", med(&Figures::positive_batched_ns)},
      {"negative_lookup_ns", med(&Figures::negative_ns)},
      {"negative_lookup_batched_ns", med(&Figures::negative_batched_ns)},
      {"erase_ns", med(&Figures::erase_ns)},
      {"limit_ns", med(&Figures::limit_ns)},
      {"commit_ms", med(&Figures::commit_ms)},
  };
  return result;
}

nlohmann::json run_shape(std::size_t items, unsigned fp_bits, bool semi, unsigned repeats) {
  const std::string name = semi ? "semi-sorted" : "packed";
  if (semi) {
    if (fp_bits == 12)
      return run_config<ccf::CuckooFilter<ccf::SemiSortedTable<12>>>(items, repeats, name);
    if (fp_bits == 16)
      return run_config<ccf::CuckooFilter<ccf::SemiSortedTable<16>>>(items, repeats, name);
  } else {
    if (fp_bits == 12)
      return run_config<ccf::CuckooFilter<ccf::PackedTable<12, 4>>>(items, repeats, name);
    if (fp_bits == 16)
      return run_config<ccf::CuckooFilter<ccf::PackedTable<16, 4>>>(items, repeats, name);
  }
  throw CLI::ValidationError("--fp-bits", "filter_bench measures 12 and 16-bit fingerprints");
}

void print_row(const nlohmann::json& r) {
  const double limit = r["limit_ns"];
  const auto pct = [&](const char* key) { return 100.0 * limit / r[key].get<double>(); };
  fmt::print(
      "{:<11} {:>9} {:>3} {:>6.3f} {:>6.2f} {:>9.2e} | {:>6.1f} {:>6.1f} | {:>6.1f} {:>6.1f} "
      "({:>3.0f}%) | {:>6.1f} {:>6.1f} ({:>3.0f}%) | {:>6.1f} | {:>6.1f} | {:>6.1f}\n",
      r["filter"].get<std::string>(), r["items"].get<std::size_t>(), r["fp_bits"].get<unsigned>(),
      r["load_factor"].get<double>(), r["bits_per_item"].get<double>(), r["fpr"].get<double>(),
      r["insert_ns"].get<double>(), r["insert_batched_ns"].get<double>(),
      r["positive_lookup_ns"].get<double>(), r["positive_lookup_batched_ns"].get<double>(),
      pct("positive_lookup_batched_ns"), r["negative_lookup_ns"].get<double>(),
      r["negative_lookup_batched_ns"].get<double>(), pct("negative_lookup_batched_ns"),
      r["erase_ns"].get<double>(), limit, r["commit_ms"].get<double>());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "filter_bench: ns per operation of the sequential cuckoo filter (b = 4) built to 95% load,\n"
      "plain and batched, against the memory limit measured in the same run (random 64-byte\n"
      "line reads, two independent lines per operation, batched with prefetch, over a region\n"
      "the size of the filter). The builds are timed on tables whose pages were written once\n"
      "before; that first touch is reported apart, as commit (ms). Figures are medians of\n"
      "--repeat runs."};
  std::vector<unsigned> log2_items{20, 26};
  std::vector<unsigned> fp_bits{12, 16};
  bool semi_sorted = false;
  unsigned repeats = 3;
  std::string json_path;
  app.add_option("--log2-items", log2_items, "table sizes as powers of two (n = 2^k items)")
      ->check(CLI::Range(10u, 31u));
  app.add_option("--fp-bits", fp_bits, "fingerprint widths to measure (12 and/or 16)")
      ->check(CLI::IsMember({12u, 16u}));
  app.add_flag("--semi-sorted", semi_sorted, "also measure the semi-sorted layout");
  app.add_option("--repeat", repeats, "runs per configuration; the median is reported")
      ->check(CLI::Range(1u, 99u));
  app.add_option("--json", json_path, "also write the results as a JSON array to this file");
  CLI11_PARSE(app, argc, argv);

  nlohmann::json results = nlohmann::json::array();
  fmt::print(
      "{:<11} {:>9} {:>3} {:>6} {:>6} {:>9} | {:>13} | {:>21} | {:>21} | {:>6} | {:>6} | {:>6}\n",
      "layout", "items", "f", "load", "bits", "FPR", "insert ns", "positive ns (of limit)",
      "negative ns (of limit)", "erase", "limit", "commit");
  fmt::print(
      "{:<11} {:>9} {:>3} {:>6} {:>6} {:>9} | {:>6} {:>6} | {:>6} {:>6} {:>7} | {:>6} "
      "{:>6} {:>7} | {:>6} | {:>6} | {:>6}\n",
      "", "", "", "", "/item", "", "plain", "batch", "plain", "batch", "", "plain", "batch", "",
      "ns", "ns", "ms");
  for (const unsigned log2 : log2_items) {
    for (const unsigned bits : fp_bits) {
      for (const bool semi :
           semi_sorted ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
        const nlohmann::json row = run_shape(std::size_t{1} << log2, bits, semi, repeats);
        print_row(row);
        results.push_back(row);
      }
    }
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << results.dump(2) << '\n';
    if (!out) {
      fmt::print(stderr, "error: could not write {}\n", json_path);
      return 1;
    }
  }
  return 0;
}
