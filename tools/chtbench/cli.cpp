#include "cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>
#include <span>
#include <string>
#include <type_traits>

#include "filter_bench.hpp"
#include "registry.hpp"
#include "report.hpp"
#include "smart_bench.hpp"
#include "suite.hpp"
#include "workload.hpp"

namespace chtbench {
namespace {

const StructureInfo& find_structure(const std::string& name) {
  const StructureInfo* info = registry().find(name);
  if (info == nullptr) {
    throw UsageError(
        fmt::format("unknown structure '{}'; `chtbench --list` shows the names", name));
  }
  return *info;
}

void list_structures() {
  for (const StructureInfo& s : registry().all()) {
    fmt::print("{:<26} {}\n", s.name, s.description);
  }
}

// A CLI11 validator from a parse function that throws std::invalid_argument.
template <class Parse>
CLI::Validator parsed_by(Parse parse, std::string description) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      std::move(description));
}

// from_chars over the whole text: errc{} when it is a number of type T, result_out_of_range when
// it is one too large for T, invalid_argument otherwise.
template <class T>
std::errc parse_all(const std::string& text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ptr == end ? ec : std::errc::invalid_argument;
}

// A numeric option's valid range (a transform: it runs on the text before CLI11 converts it).
// Plain decimal only: no sign on unsigned options, no 0x, no exponent for integers. The text is
// rewritten in canonical form, so that CLI11's own strtoull (base 0) cannot read 010 as octal.
template <class T>
CLI::Validator in_range(T lo, T hi, bool open_low = false) {
  const std::string range = fmt::format("{}{}, {}]", open_low ? '(' : '[', lo, hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        T value{};
        const std::errc parsed = parse_all(text, value);
        if (parsed == std::errc::invalid_argument) {
          double real = 0;
          if (parse_all(text, real) == std::errc::invalid_argument) {
            return fmt::format("'{}' is not a number; the valid range is {}", text, range);
          }
          if (real >= static_cast<double>(lo) && real <= static_cast<double>(hi)) {
            return fmt::format("'{}' is not a decimal integer; the valid range is {}", text, range);
          }
        }
        if (parsed != std::errc{} || !(open_low ? value > lo : value >= lo) || !(value <= hi)) {
          return fmt::format("{} is outside the valid range {}", text, range);
        }
        text = fmt::format("{}", value);
        return {};
      },
      range);
}

std::string memory_note() {
  return fmt::format(
      "Sizes must also fit in memory: a benchmark that needs more than this machine's {:.1f} GiB "
      "is refused before it starts.",
      physical_memory_bytes() / (1024.0 * 1024 * 1024));
}

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr unsigned kMaxThreads = 4096;

struct Output {
  std::string format = "table";
  std::string path;

  void add_to(CLI::App& app) {
    app.add_option("--format", format, "output format")
        ->check(CLI::IsMember({"table", "csv", "json"}))
        ->capture_default_str();
    app.add_option("--out", path, "write the results to FILE instead of stdout");
  }
  template <class Result>
  void write(const Result& result) const {
    emit(render(std::span<const Result>(&result, 1), parse_format(format)), path);
  }
};

// The arguments of each subcommand, as CLI11 fills them, and the subcommand itself.
struct RunArgs {
  RunConfig config;
  std::string dist = "uniform", keys = "range", pin = "default", init = "one";
  std::string elision_stats = "on";
  Output out;
  CLI::App* command = nullptr;
};
struct FilterArgs {
  FilterBenchConfig config;
  std::string pin = "default";
  Output out;
  CLI::App* command = nullptr;
};
struct SuiteArgs {
  SuiteOptions options;
  CLI::App* command = nullptr;
};
struct SmartArgs {
  SmartConfig config;
  std::vector<std::string> mixes;
  std::string dist = "uniform", format = "table", path;
  CLI::App* command = nullptr;
};

// chtbench run: the timed mixed workload.
void add_run_command(CLI::App& app, RunArgs& a) {
  CLI::App* run =
      app.add_subcommand("run", "timed mixed workload on one structure (the thesis's CHTBench)");
  run->add_option("-s,--structure", a.config.structure, "structure name (see --list)")->required();
  run->add_option("-n,--threads", a.config.threads, "n: benchmark threads")
      ->transform(in_range(1u, kMaxThreads))
      ->capture_default_str();
  run->add_option("-u,--update", a.config.update_pct,
                  "u: update percent, half inserts and half erases; the rest are lookups")
      ->transform(in_range(0u, 100u))
      ->capture_default_str();
  run->add_option("--insert-pct", a.config.insert_pct,
                  "inserts in percent of all operations, the rest of u erases (default u/2); "
                  "e.g. -u 40 --insert-pct 35 grows the structure (the resize experiment)")
      ->transform(in_range(0u, 100u));
  run->add_option("-i,--initial", a.config.initial,
                  "i: initial items, distinct keys of [1, r] chosen uniformly; at most r")
      ->transform(in_range(std::uint64_t{0}, kU64Max))
      ->capture_default_str();
  run->add_option("-r,--range", a.config.range,
                  "r: keys are drawn from [1, r]; default 2i (at most 2^64 - 1), so about half "
                  "of all operations fail")
      ->transform(in_range(std::uint64_t{1}, kU64Max));
  run->add_option("-d,--duration-ms", a.config.duration_ms, "d: length of the timed phase, ms")
      ->transform(in_range(1u, 3600000u))
      ->capture_default_str();
  run->add_option("--dist", a.dist,
                  "key distribution: uniform, or zipf:THETA (key k drawn with probability "
                  "proportional to k^-THETA, e.g. zipf:0.99)")
      ->check(parsed_by(KeyDist::parse, "uniform|zipf:THETA"))
      ->capture_default_str();
  run->add_option("--keys", a.keys,
                  "keys as the structure sees them: range (the integers of [1, r]) or "
                  "scrambled (fmix64 of each, a bijection: random-looking 64-bit keys, the same "
                  "sets and failure rates)")
      ->check(CLI::IsMember({"range", "scrambled"}))
      ->capture_default_str();
  run->add_option("--pin", a.pin,
                  "thread placement from the hwloc topology: default (the OS), compact (fill "
                  "one package, core by core), balanced (spread, hyperthreads last)")
      ->check(CLI::IsMember({"default", "compact", "balanced"}))
      ->capture_default_str();
  run->add_option("--init-threads", a.init,
                  "initial fill by one thread or by all n threads behind a barrier")
      ->check(CLI::IsMember({"one", "all"}))
      ->capture_default_str();
  run->add_flag("--latency", a.config.latency,
                "time 1 in 64 operations with the cycle counter; report p50/p90/p99/p99.9/max ns "
                "per class (get/put/rem, suc/fail)");
  run->add_option("-k,--repeat", a.config.repeat,
                  "K: repeat with a fresh structure K times; report the median")
      ->transform(in_range(1u, 1000u))
      ->capture_default_str();
  CLI::Option* batch =
      run->add_option(
             "--batch", a.config.batch,
             "lookups in batches: draw B operations at a time and pass each run of "
             "consecutive lookups to the structure's batched lookup (hash ahead and "
             "prefetch, where it has one); updates still run one by one, in order. 1 = one "
             "call per operation; not with --latency")
          ->transform(in_range(1u, 4096u))
          ->capture_default_str();
  batch->excludes("--latency");
  run->add_option(
         "--capacity", a.config.capacity,
         "items every structure is sized for (default r); at least i for a filter, any for "
         "a hash table, which grows (e.g. --capacity 1: built from empty)")
      ->transform(in_range(std::uint64_t{1}, kU64Max));
  run->add_option("--growth", a.config.growth,
                  "hash tables: the factor a table grows by when it fills (cuckoo-map: any in "
                  "[1.125, 2]; hopscotch, hopscotch-64: any in [1.25, 2]; the others only "
                  "double); default: the table's own (2)")
      ->transform(in_range(1.0, 2.0));
  run->add_option("--fp-bits", a.config.fp_bits,
                  "filters: fingerprint bits (Bloom filters: bits per item); each filter "
                  "supports some widths")
      ->transform(in_range(1u, 64u))
      ->capture_default_str();
  run->add_option("--seed", a.config.seed, "seed of every key stream")
      ->transform(in_range(std::uint64_t{0}, kU64Max))
      ->capture_default_str();
  run->add_option("--elision-stats", a.elision_stats,
                  "RTM-elided structures count transactions, aborts by cause and fallbacks "
                  "(on), or not (off: what counting costs)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  a.out.add_to(*run);
  run->footer(memory_note());
  a.command = run;
}

// chtbench filter: the filter metrics.
void add_filter_command(CLI::App& app, FilterArgs& a) {
  CLI::App* filter = app.add_subcommand(
      "filter",
      "filter metrics: fill to the first failure; load factor, bits/item, false-positive rate, "
      "construction and lookup rates");
  filter->add_option("-s,--structure", a.config.structure, "filter name (see --list)")->required();
  filter
      ->add_option("--fp-bits", a.config.fp_bits,
                   "fingerprint bits (Bloom filters: bits per item); each filter supports some "
                   "widths")
      ->transform(in_range(1u, 64u))
      ->capture_default_str();
  filter->add_option("--capacity", a.config.capacity, "items the filter is sized for")
      ->transform(in_range(std::uint64_t{1}, kU64Max))
      ->capture_default_str();
  filter->add_option("-n,--threads", a.config.threads, "n: threads (thread-safe filters only)")
      ->transform(in_range(1u, kMaxThreads))
      ->capture_default_str();
  filter->add_option("--pin", a.pin, "thread placement: default, compact or balanced")
      ->check(CLI::IsMember({"default", "compact", "balanced"}))
      ->capture_default_str();
  filter
      ->add_option("--fill", a.config.fill,
                   "stop construction at this fraction of the slots (1: until the first "
                   "insert fails)")
      ->transform(in_range(0.0, 1.0, /*open_low=*/true))
      ->capture_default_str();
  filter
      ->add_option("--insert-batch", a.config.insert_batch,
                   "construction inserts B keys per call through the filter's batched insert "
                   "(hash ahead and prefetch); 0: one insert per call")
      ->transform(in_range(std::size_t{0}, std::size_t{1} << 24))
      ->capture_default_str();
  filter->add_option("--seed", a.config.seed, "seed of the key streams")
      ->transform(in_range(std::uint64_t{0}, kU64Max))
      ->capture_default_str();
  a.out.add_to(*filter);
  filter->footer(memory_note());
  a.command = filter;
}

// chtbench suite: the side-by-side evaluation.
void add_suite_command(CLI::App& app, SuiteArgs& a) {
  CLI::App* suite = app.add_subcommand(
      "suite", "the side-by-side evaluation of every structure: table on stdout, plots in DIR");
  suite->add_option("plan", a.options.plan, "quick (a few minutes on 2 cores) or full")
      ->required()
      ->check(CLI::IsMember({"quick", "full"}));
  suite
      ->add_option("--out", a.options.out_dir,
                   "directory for results.json, results.csv and the PNGs")
      ->capture_default_str();
  suite
      ->add_option("--structures", a.options.structures,
                   "only these structures (comma-separated names; default: all)")
      ->delimiter(',');
  a.command = suite;
}

// chtbench smart: SmartCuckoo against its baselines.
void add_smart_command(CLI::App& app, SmartArgs& a) {
  CLI::App* smart = app.add_subcommand(
      "smart",
      "SmartCuckoo (d = 2, one-slot buckets): the paper's YCSB mixes under pre-determined "
      "insertion, the textbook kick bound and search-first insertion");
  smart->add_option("--buckets", a.config.buckets, "m: buckets per table (2m slots in all)")
      ->transform(in_range(std::uint64_t{1}, std::uint64_t{1} << 31))
      ->capture_default_str();
  smart
      ->add_option("--mix", a.mixes,
                   "INSERT/LOOKUP/UPDATE percentages, comma-separated (default: the paper's "
                   "100/0/0, 75/25/0, 50/50/0, 25/75/0, 0/95/5)")
      ->delimiter(',')
      ->check(parsed_by(SmartMix::parse, "I/L/U adding up to 100"));
  smart->add_option("--insertion", a.config.insertions, "policies, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"smart", "maxloop", "bfs"}))
      ->capture_default_str();
  smart->add_option("--dist", a.dist, "key distribution: uniform or zipf:THETA")
      ->check(parsed_by(KeyDist::parse, "uniform|zipf:THETA"))
      ->capture_default_str();
  smart->add_option("--preload", a.config.preload, "fraction of the 2m slots filled first")
      ->transform(in_range(0.0, 0.99))
      ->capture_default_str();
  smart
      ->add_option("--ops", a.config.ops,
                   "operations per run, drawn before it starts (default 0.4 m)")
      ->transform(in_range(std::uint64_t{1}, std::uint64_t{1} << 28));
  smart
      ->add_option("--max-loop", a.config.max_loop,
                   "maxloop: kicks per insert; bfs: steps per chain")
      ->transform(in_range(1u, 1u << 20))
      ->capture_default_str();
  smart->add_option("--stash", a.config.stash, "stash slots")
      ->transform(in_range(std::size_t{0}, std::size_t{1} << 16))
      ->capture_default_str();
  smart->add_option("-k,--repeat", a.config.repeat, "repeats per run; the median is reported")
      ->transform(in_range(1u, 1000u))
      ->capture_default_str();
  smart->add_option("--seed", a.config.seed, "seed of the key streams and the tables' hashes")
      ->transform(in_range(std::uint64_t{0}, kU64Max))
      ->capture_default_str();
  smart->add_option("--format", a.format, "output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  smart->add_option("--out", a.path, "write the results to FILE instead of stdout");
  smart->footer(memory_note());
  a.command = smart;
}

// Runs what the parsed command line asks for. Throws UsageError for a bad combination.
int dispatch(const CLI::App& app, bool list, RunArgs& run, FilterArgs& filter,
             const SuiteArgs& suite, SmartArgs& smart) {
  if (list) {
    list_structures();
  } else if (run.command->parsed()) {
    run.config.dist = KeyDist::parse(run.dist);
    run.config.scrambled_keys = run.keys == "scrambled";
    run.config.pin = parse_pin(run.pin);
    run.config.init_all = run.init == "all";
    run.config.elision_stats = run.elision_stats == "on";
    run.out.write(run_benchmark(find_structure(run.config.structure), run.config));
  } else if (filter.command->parsed()) {
    filter.config.pin = parse_pin(filter.pin);
    filter.out.write(run_filter_benchmark(find_structure(filter.config.structure), filter.config));
  } else if (suite.command->parsed()) {
    run_suite(suite.options);
  } else if (smart.command->parsed()) {
    if (!smart.mixes.empty()) {
      smart.config.mixes.clear();
      for (const std::string& mix : smart.mixes) smart.config.mixes.push_back(SmartMix::parse(mix));
    }
    smart.config.dist = KeyDist::parse(smart.dist);
    const SmartReport report = run_smart_benchmark(smart.config);
    emit(smart.format == "json" ? smart_json(report) : smart_table(report), smart.path);
  } else {
    std::cerr << app.help() << "\nchtbench: nothing to do: give --list or a subcommand\n";
    return 2;
  }
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "chtbench: the unified, fair benchmark for concurrent hash tables and filters.\n"
      "Every structure runs through one adapter interface under identical keys, threads and\n"
      "allocator. See docs/chtbench.md."};
  app.name("chtbench");
  bool list = false;
  app.add_flag("--list", list, "list every structure: name and a one-line description");
  RunArgs run;
  FilterArgs filter;
  SuiteArgs suite;
  SmartArgs smart;
  add_run_command(app, run);
  add_filter_command(app, filter);
  add_suite_command(app, suite);
  add_smart_command(app, smart);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is a ParseError with status 0
  }
  try {
    return dispatch(app, list, run, filter, suite, smart);
  } catch (const UsageError& e) {
    std::cerr << "chtbench: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "chtbench: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace chtbench
