// The suite builds a list of jobs from the plan and the registry, runs them one after another
// (progress on stderr), then writes every result and draws the figures from them.
//
// Experiments (the thesis's CHTBench), each over every structure that can run it:
//   threads  throughput vs n            (u = 10, i = plan.initial)
//   update   throughput vs u            (n = all hardware threads; sequential structures n = 1)
//   initial  throughput vs i, r = 2i    (cache-size sweep; u = 10)
//   latency  percentiles per class      (n as in `update`, u = 10)
//   resize   growth under load: the hash tables start 90% full (capacity i / 0.9) and run
//            35% inserts, 5% erases (u = 40), beside the same run sized for r (no growth
//            needed); n as in `update`, i = plan.initial
//   filter   bits/item, FPR, rates      (every filter x every fingerprint width)
// The memory figure uses the largest point of the `initial` sweep.
#include "suite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <tuple>
#include <variant>

#include "filter_bench.hpp"
#include "plots.hpp"
#include "registry.hpp"
#include "report.hpp"
#include "workload.hpp"

namespace chtbench {
namespace {

// The resize experiment's mix and starting density (the thesis's: 90% full, 35% insert, 5%
// erase, so the tables keep growing).
constexpr unsigned kResizeUpdate = 40, kResizeInsert = 35;
constexpr std::uint64_t kResizeFillPercent = 90;

struct Plan {
  std::vector<unsigned> threads;
  std::vector<unsigned> updates;
  std::vector<std::uint64_t> initials;
  std::uint64_t initial;
  unsigned update;
  unsigned duration_ms;
  unsigned repeat;
  std::vector<unsigned> fp_bits;
  std::uint64_t filter_capacity;
};

Plan make_plan(const std::string& name) {
  const unsigned hw = std::max(1u, Topology::get().processing_units());
  constexpr std::uint64_t kOne = 1;
  if (name == "quick") {
    std::vector<unsigned> threads{1};
    if (hw > 1) threads.push_back(hw);
    return {.threads = threads,
            .updates = {0, 10, 40, 80},
            .initials = {kOne << 10, kOne << 15, kOne << 21},
            .initial = kOne << 18,
            .update = 10,
            .duration_ms = 200,
            .repeat = 1,
            .fp_bits = {8, 12, 16},
            .filter_capacity = kOne << 20};
  }
  // full: powers of two up to the hardware threads, then oversubscribed 2x.
  std::vector<unsigned> threads;
  for (unsigned n = 1; n < hw; n *= 2) threads.push_back(n);
  threads.push_back(hw);
  threads.push_back(2 * hw);
  return {.threads = threads,
          .updates = {0, 10, 20, 40, 60, 80},
          .initials = {kOne << 10, kOne << 13, kOne << 16, kOne << 19, kOne << 22, kOne << 25},
          .initial = kOne << 22,
          .update = 10,
          .duration_ms = 1000,
          .repeat = 3,
          .fp_bits = {4, 8, 12, 16},
          .filter_capacity = kOne << 24};
}

struct Job {
  std::string experiment;
  std::string series;  // the structure, marked when it runs with fewer threads than the rest
  const StructureInfo* info;
  int style;  // the structure's place in the registry: its colour and marker in every figure
  std::variant<RunConfig, FilterBenchConfig> config;
};

struct Done {
  const Job* job;
  std::variant<RunResult, FilterResult> result;
};

std::vector<Job> make_jobs(const Plan& plan, const std::vector<std::string>& only) {
  for (const std::string& name : only) {
    if (registry().find(name) == nullptr) {
      throw UsageError(
          fmt::format("unknown structure '{}'; `chtbench --list` shows the names", name));
    }
  }
  const unsigned hw = std::max(1u, Topology::get().processing_units());
  std::vector<Job> jobs;
  for (const StructureInfo& info : registry().all()) {
    if (!only.empty() && std::ranges::find(only, info.name) == only.end()) continue;
    const int style = static_cast<int>(&info - registry().all().data());
    const unsigned n_main = info.traits.thread_safe ? hw : 1;
    const std::string series = n_main < hw ? fmt::format("{} (1 thread)", info.name) : info.name;
    const auto add = [&](std::string experiment, std::string title, RunConfig c) {
      c.duration_ms = plan.duration_ms;
      c.repeat = plan.repeat;
      c.init_all = true;  // the fill is not measured here; all threads make it quicker
      try {
        resolve(info, c);  // only what the structure can run
      } catch (const UsageError&) {
        return;
      }
      jobs.push_back({std::move(experiment), std::move(title), &info, style, c});
    };
    for (const unsigned n : plan.threads) {
      add("threads", info.name, {.threads = n, .update_pct = plan.update, .initial = plan.initial});
    }
    for (const unsigned u : plan.updates) {
      add("update", series, {.threads = n_main, .update_pct = u, .initial = plan.initial});
    }
    for (const std::uint64_t i : plan.initials) {
      add("initial", series, {.threads = n_main, .update_pct = plan.update, .initial = i});
    }
    add("latency", series,
        {.threads = n_main, .update_pct = plan.update, .initial = plan.initial, .latency = true});
    if (!info.traits.filter && info.traits.stores) {
      for (const std::uint64_t capacity :
           {plan.initial * 100 / kResizeFillPercent, std::uint64_t{0}}) {  // 0: sized for r
        add("resize", series,
            {.threads = n_main,
             .update_pct = kResizeUpdate,
             .insert_pct = kResizeInsert,
             .initial = plan.initial,
             .capacity = capacity});
      }
    }
    if (info.traits.filter) {
      for (const unsigned f : plan.fp_bits) {
        jobs.push_back({"filter", info.name, &info, style,
                        FilterBenchConfig{.fp_bits = f, .capacity = plan.filter_capacity}});
      }
    }
  }
  return jobs;
}

std::string describe(const Job& job) {
  if (const auto* c = std::get_if<RunConfig>(&job.config)) {
    return fmt::format("{:<8} {:<26} n={} u={} i={}{}", job.experiment, job.info->name, c->threads,
                       c->update_pct, c->initial,
                       c->capacity != 0 ? fmt::format(" capacity={}", c->capacity) : "");
  }
  const auto& f = std::get<FilterBenchConfig>(job.config);
  return fmt::format("{:<8} {:<26} f={} capacity={}", job.experiment, job.info->name, f.fp_bits,
                     f.capacity);
}

std::string outcome(const Done& d) {
  if (const auto* r = std::get_if<RunResult>(&d.result)) {
    return fmt::format("{:.2f} Mops/s ({:.2f} of limit)", r->throughput_mops,
                       r->throughput_mops / r->limit_mops);
  }
  const auto& f = std::get<FilterResult>(d.result);
  return fmt::format("{:.2f} bits/item, fpr {:.5f}", f.bits_per_item, f.fpr);
}

template <class Result>
std::vector<Result> results_of(const std::vector<Done>& done, const std::string& experiment) {
  std::vector<Result> out;
  for (const Done& d : done) {
    if (d.job->experiment == experiment) out.push_back(std::get<Result>(d.result));
  }
  return out;
}

// The families the sweep figures give a panel each, so that no panel holds forty lines. The
// `null` structure is left out of them (its cost is in every result as harness_ns_per_op, and
// its rate would flatten every other line).
enum class Family { kFilters, kTables, kPeers };
constexpr std::array<std::pair<Family, const char*>, 3> kFamilies{
    {{Family::kFilters, "filters"},
     {Family::kTables, "ccf hash tables"},
     {Family::kPeers, "peer hash tables"}}};
std::optional<Family> family_of(const StructureInfo& info) {
  if (!info.traits.stores) return std::nullopt;
  if (info.traits.filter) return Family::kFilters;
  return info.traits.peer ? Family::kPeers : Family::kTables;
}

// One line series per structure (series title) over a numeric x, for the structures of
// `family` (every structure if none).
template <class X, class Y>
std::vector<Series> line_series(const std::vector<Done>& done, const std::string& experiment,
                                X x_of, Y y_of, std::optional<Family> family = std::nullopt) {
  std::map<std::string, Series> by_title;
  std::vector<std::string> order;
  for (const Done& d : done) {
    if (d.job->experiment != experiment) continue;
    if (family && family_of(*d.job->info) != family) continue;
    const auto& r = std::get<RunResult>(d.result);
    auto [it, fresh] =
        by_title.try_emplace(d.job->series, Series{d.job->series, {}, {}, d.job->style});
    if (fresh) order.push_back(d.job->series);
    it->second.x.push_back(x_of(r));
    it->second.y.push_back(y_of(r));
  }
  std::vector<Series> out;
  for (const auto& title : order) out.push_back(by_title[title]);
  return out;
}

// A sweep figure: one panel per family, side by side, each with its own legend.
Figure family_figure(std::string name, std::string title) {
  return {.name = std::move(name),
          .title = std::move(title),
          .rows = 1,
          .cols = static_cast<int>(kFamilies.size()),
          .width = 2400,
          .height = 1100,
          .legend_per_panel = true};
}

// Throughput against threads, update ratio and initial size: one figure per sweep.
std::vector<Figure> sweep_figures(const std::vector<Done>& done, const Plan& plan) {
  std::vector<Figure> figures;
  const auto mops = [](const RunResult& r) { return r.throughput_mops; };
  const auto threads_x = [](const RunResult& r) { return static_cast<double>(r.config.threads); };
  const auto update_x = [](const RunResult& r) { return static_cast<double>(r.config.update_pct); };
  Figure threads = family_figure(
      "throughput_vs_threads",
      fmt::format("Throughput vs threads (u = {}%, i = {}, r = 2i)", plan.update, plan.initial));
  Figure update =
      family_figure("throughput_vs_update",
                    fmt::format("Throughput vs update ratio (i = {}, r = 2i)", plan.initial));
  for (const auto& [family, name] : kFamilies) {
    Panel by_threads{.title = name,
                     .xlabel = "threads (n)",
                     .ylabel = "throughput (Mops/s)",
                     .logx = plan.threads.size() > 2,
                     .series = line_series(done, "threads", threads_x, mops, family)};
    for (const unsigned n : plan.threads) by_threads.xtics.emplace_back(n, fmt::format("{}", n));
    threads.panels.push_back(std::move(by_threads));
    update.panels.push_back({.title = name,
                             .xlabel = "updates (u, %): half insert, half erase",
                             .ylabel = "throughput (Mops/s)",
                             .series = line_series(done, "update", update_x, mops, family)});
  }
  figures.push_back(std::move(threads));
  figures.push_back(std::move(update));

  const auto initial_x = [](const RunResult& r) { return static_cast<double>(r.config.initial); };
  const auto to_limit = [](const RunResult& r) { return r.throughput_mops / r.limit_mops; };
  for (const bool ratio : {false, true}) {
    Figure initial = family_figure(
        ratio ? "throughput_to_limit_vs_initial" : "throughput_vs_initial",
        ratio ? fmt::format("Cache-size sweep (u = {}%, r = 2i): throughput / memory limit "
                            "(2 random lines per op)",
                            plan.update)
              : fmt::format("Cache-size sweep (u = {}%, r = 2i)", plan.update));
    for (const auto& [family, name] : kFamilies) {
      initial.panels.push_back(
          {.title = name,
           .xlabel = "initial items (i)",
           .ylabel = ratio ? "ratio to limit_mops" : "throughput (Mops/s)",
           .logx = true,
           .series = ratio ? line_series(done, "initial", initial_x, to_limit, family)
                           : line_series(done, "initial", initial_x, mops, family)});
    }
    figures.push_back(std::move(initial));
  }

  return figures;
}

// Latency: one panel per operation class, percentiles on x, one line per structure.
Figure latency_figure(const std::vector<Done>& done, const Plan& plan) {
  Figure latency{.name = "latency",
                 .title = fmt::format("Latency percentiles per operation class (u = {}%, i = {})",
                                      plan.update, plan.initial),
                 .rows = 2,
                 .cols = 3,
                 .width = 1700,
                 .height = 900};
  for (std::size_t k = 0; k < kOpClasses; ++k) {
    Panel p{.title = std::string(kLatencyNames[k]),
            .xlabel = "percentile",
            .ylabel = "latency (ns)",
            .logy = true,
            .xtics = {{1, "p50"}, {2, "p90"}, {3, "p99"}, {4, "p99.9"}}};
    for (const Done& d : done) {
      if (d.job->experiment != "latency") continue;
      const LatencyStats& s = (*std::get<RunResult>(d.result).latency)[k];
      Series ser{.title = d.job->series, .style = d.job->style};
      if (s.samples != 0) {  // 1 ns floor: the log scale cannot show 0
        ser.x = {1, 2, 3, 4};
        ser.y = {std::max(s.p50, 1.0), std::max(s.p90, 1.0), std::max(s.p99, 1.0),
                 std::max(s.p999, 1.0)};
      }
      p.series.push_back(ser);
    }
    latency.panels.push_back(p);
  }
  return latency;
}

// Memory per item at the largest size of the cache-size sweep.
Figure memory_figure(const std::vector<Done>& done, const Plan& plan) {
  Panel memory{.title = fmt::format("Memory per item at i = {} (r = 2i, u = {}%)",
                                    plan.initials.back(), plan.update),
               .xlabel = "",
               .ylabel = "bytes per stored item",
               .series = {{"own accounting", {}, {}}, {"RSS growth", {}, {}}}};
  for (const RunResult& r : results_of<RunResult>(done, "initial")) {
    if (r.config.initial != plan.initials.back() || r.size_after == 0) continue;
    const auto items = static_cast<double>(r.size_after);
    memory.categories.push_back(r.config.structure);
    memory.series[0].y.push_back(static_cast<double>(r.memory_bytes) / items);
    memory.series[1].y.push_back(static_cast<double>(r.rss_growth_bytes) / items);
  }
  return {.name = "memory", .panels = {memory}};
}

// Filters: space against false-positive rate.
Figure filter_fpr_figure(const std::vector<Done>& done, const Plan& plan) {
  Panel fpr{.title = fmt::format("Filters: space vs false-positive rate (filled to the first "
                                 "failure, capacity {})",
                                 plan.filter_capacity),
            .xlabel = "bits per item",
            .ylabel = "false-positive rate",
            .logy = true,
            .functions = {"2**(-x) with lines dt 2 lw 1 lc rgb '#555555' title 'lower bound "
                          "2^-bits'",
                          "0.6185**x with lines dt 3 lw 1 lc rgb '#999999' title 'Bloom, "
                          "optimal k'"}};
  std::map<std::string, Series> by_filter;
  for (const Done& d : done) {
    if (d.job->experiment != "filter") continue;
    const auto& f = std::get<FilterResult>(d.result);
    if (f.false_positives == 0) continue;  // not measurable on a log scale
    auto& ser = by_filter[f.config.structure];
    ser.title = f.config.structure;
    ser.style = d.job->style;
    ser.x.push_back(f.bits_per_item);
    ser.y.push_back(f.fpr);
  }
  for (auto& [name, ser] :
       by_filter) {  // points in order of space, so the lines read left to right
    std::vector<std::pair<double, double>> points;
    for (std::size_t i = 0; i < ser.x.size(); ++i) points.emplace_back(ser.x[i], ser.y[i]);
    std::ranges::sort(points);
    for (std::size_t i = 0; i < points.size(); ++i) std::tie(ser.x[i], ser.y[i]) = points[i];
    fpr.series.push_back(ser);
  }
  return {.name = "filter_bits_vs_fpr", .panels = {fpr}};
}

// Whether a resize run started 90% full (else it was sized for r and never needs to grow).
bool starts_nearly_full(const RunConfig& c) {
  return c.capacity < c.range;
}

// The resize experiment: each table's throughput sized for r beside starting 90% full.
Figure resize_figure(const std::vector<Done>& done, const Plan& plan) {
  Panel resize{
      .title = fmt::format("Resize: u = {}% ({}% insert, {}% erase), i = {}, r = 2i", kResizeUpdate,
                           kResizeInsert, kResizeUpdate - kResizeInsert, plan.initial),
      .xlabel = "",
      .ylabel = "throughput (Mops/s)",
      .series = {{"sized for r (no growth needed)", {}, {}},
                 {fmt::format("starts {}% full (grows)", kResizeFillPercent), {}, {}}}};
  std::map<std::string, std::array<double, 2>> by_table;
  std::vector<std::string> order;
  for (const Done& d : done) {
    if (d.job->experiment != "resize") continue;
    const auto& r = std::get<RunResult>(d.result);
    auto [it, fresh] = by_table.try_emplace(d.job->series, std::array<double, 2>{0, 0});
    if (fresh) order.push_back(d.job->series);
    it->second[starts_nearly_full(r.config) ? 1 : 0] = r.throughput_mops;
  }
  for (const std::string& table : order) {
    resize.categories.push_back(table);
    for (std::size_t k = 0; k < 2; ++k) resize.series[k].y.push_back(by_table[table][k]);
  }
  return {.name = "resize", .width = 1700, .panels = {resize}};
}

// One row per table: both runs' throughput, their ratio, and the growth the nearly full run
// went through (the structure's own resize count where it reports one, and its size).
std::string resize_table(const std::vector<Done>& done) {
  struct Row {
    const RunResult* presized = nullptr;
    const RunResult* grows = nullptr;
  };
  std::map<std::string, Row> rows;
  std::vector<std::string> order;
  for (const Done& d : done) {
    if (d.job->experiment != "resize") continue;
    const auto& r = std::get<RunResult>(d.result);
    auto [it, fresh] = rows.try_emplace(d.job->series);
    if (fresh) order.push_back(d.job->series);
    (starts_nearly_full(r.config) ? it->second.grows : it->second.presized) = &r;
  }
  std::string out =
      fmt::format("{:<26} {:>12} {:>12} {:>7} {:>8} {:>11} {:>11}\n", "structure", "sized for r",
                  "from 90%", "ratio", "resizes", "items after", "B/item");
  const auto mops = [](const RunResult* r) {
    return r != nullptr ? fmt::format("{:.2f}", r->throughput_mops) : std::string("-");
  };
  for (const std::string& table : order) {
    const Row& row = rows[table];
    std::string resizes = "-", items = "-", bytes = "-", ratio = "-";
    if (row.grows != nullptr) {
      for (const EventCount& e : row.grows->events) {
        if (e.name == "resizes") resizes = fmt::format("{}", e.value);
      }
      items = fmt::format("{}", row.grows->size_after);
      if (row.grows->size_after != 0) {
        bytes = fmt::format("{:.1f}", static_cast<double>(row.grows->memory_bytes) /
                                          static_cast<double>(row.grows->size_after));
      }
      if (row.presized != nullptr) {
        ratio = fmt::format("{:.2f}", row.grows->throughput_mops / row.presized->throughput_mops);
      }
    }
    out += fmt::format("{:<26} {:>12} {:>12} {:>7} {:>8} {:>11} {:>11}\n", table,
                       mops(row.presized), mops(row.grows), ratio, resizes, items, bytes);
  }
  out +=
      "(Mops/s; ratio = from 90% / sized for r; resizes: the structure's own count in the "
      "timed phase, where it reports one; items and B/item after the nearly full run)\n";
  return out;
}

std::vector<Figure> make_figures(const std::vector<Done>& done, const Plan& plan) {
  std::vector<Figure> figures = sweep_figures(done, plan);
  figures.push_back(latency_figure(done, plan));
  figures.push_back(memory_figure(done, plan));
  figures.push_back(resize_figure(done, plan));
  figures.push_back(filter_fpr_figure(done, plan));
  return figures;
}

// One row per structure: throughput (Mops/s) at every point of the thread and update sweeps,
// the ratio to the limit and the latency at the plan's base point, memory at the largest size.
std::string side_by_side(const std::vector<Done>& done, const Plan& plan) {
  std::string out = fmt::format("{:<26}", "structure");
  for (const unsigned n : plan.threads) out += fmt::format(" {:>7}", fmt::format("n={}", n));
  for (const unsigned u : plan.updates) out += fmt::format(" {:>7}", fmt::format("u={}%", u));
  out += fmt::format(" {:>7} {:>8} {:>8} {:>8}\n", "/limit", "get p50", "get p99", "B/item");
  for (const StructureInfo& info : registry().all()) {
    std::string row = fmt::format("{:<26}", info.name);
    const auto find = [&](const std::string& experiment, auto match) -> const RunResult* {
      for (const Done& d : done) {
        if (d.job->info != &info || d.job->experiment != experiment) continue;
        const auto& r = std::get<RunResult>(d.result);
        if (match(r.config)) return &r;
      }
      return nullptr;
    };
    bool any = false;
    const auto cell = [&](const RunResult* r) {
      any = any || r != nullptr;
      row +=
          r != nullptr ? fmt::format(" {:>7.2f}", r->throughput_mops) : fmt::format(" {:>7}", "-");
    };
    for (const unsigned n : plan.threads) {
      cell(find("threads", [&](const RunConfig& c) { return c.threads == n; }));
    }
    for (const unsigned u : plan.updates) {
      cell(find("update", [&](const RunConfig& c) { return c.update_pct == u; }));
    }
    const RunResult* lat = find("latency", [](const RunConfig&) { return true; });
    const RunResult* big =
        find("initial", [&](const RunConfig& c) { return c.initial == plan.initials.back(); });
    if (!any && lat == nullptr && big == nullptr) continue;  // nothing but filter metrics
    const auto get_suc = [&](double LatencyStats::*p) {
      return lat != nullptr
                 ? fmt::format(" {:>8.0f}",
                               (*lat->latency)[static_cast<std::size_t>(OpClass::kGetSuc)].*p)
                 : fmt::format(" {:>8}", "-");
    };
    row += lat != nullptr ? fmt::format(" {:>7.3f}", lat->throughput_mops / lat->limit_mops)
                          : fmt::format(" {:>7}", "-");
    row += get_suc(&LatencyStats::p50) + get_suc(&LatencyStats::p99);
    row += big != nullptr && big->size_after != 0
               ? fmt::format(" {:>8.1f}", static_cast<double>(big->memory_bytes) /
                                              static_cast<double>(big->size_after))
               : fmt::format(" {:>8}", "-");
    out += row + "\n";
  }
  out += fmt::format(
      "(Mops/s; n-columns: u = {}%; u-columns: all hardware threads, sequential structures 1;\n"
      " /limit, latency: the latency run; B/item: own accounting at i = {})\n",
      plan.update, plan.initials.back());
  return out;
}

std::string summary(const std::vector<Done>& done, const Plan& plan) {
  std::string out;
  const auto section = [&](const std::string& title, const std::string& body) {
    if (body.empty()) return;
    out += fmt::format("== {} ==\n{}\n", title, body);
  };
  section("Side by side", side_by_side(done, plan));
  for (const auto& [experiment, title] :
       {std::pair{"threads", "Throughput vs threads"},
        {"update", "Throughput vs update ratio"},
        {"initial", "Throughput vs initial size (cache-size sweep)"}}) {
    const auto runs = results_of<RunResult>(done, experiment);
    if (!runs.empty()) section(title, run_table(runs));
  }
  const auto resized = results_of<RunResult>(done, "resize");
  if (!resized.empty()) {
    section(fmt::format("Resize: {}% insert, {}% erase; capacity i / {:.2f} (starts {}% full) "
                        "beside capacity r",
                        kResizeInsert, kResizeUpdate - kResizeInsert, kResizeFillPercent / 100.0,
                        kResizeFillPercent),
            resize_table(done));
  }
  const auto lat = results_of<RunResult>(done, "latency");
  if (!lat.empty()) section("Latency per operation class", latency_table(lat));
  const auto filters = results_of<FilterResult>(done, "filter");
  if (!filters.empty()) section("Filters: fill to the first failure", filter_table(filters));
  return out;
}

}  // namespace

void run_suite(const SuiteOptions& options) {
  const Plan plan = make_plan(options.plan);
  const std::vector<Job> jobs = make_jobs(plan, options.structures);
  const std::filesystem::path dir(options.out_dir);
  std::filesystem::create_directories(dir);

  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    const auto s =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0)
            .count();
    return fmt::format("{}:{:02}", s / 60, s % 60);
  };
  fmt::print(stderr, "chtbench suite {}: {} jobs, results in {}\n", options.plan, jobs.size(),
             dir.string());
  std::vector<Done> done;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    fmt::print(stderr, "[{:>3}/{} {:>5}] {} ... ", i + 1, jobs.size(), elapsed(), describe(job));
    try {
      if (const auto* c = std::get_if<RunConfig>(&job.config)) {
        done.push_back({&job, run_benchmark(*job.info, *c)});
      } else {
        done.push_back(
            {&job, run_filter_benchmark(*job.info, std::get<FilterBenchConfig>(job.config))});
      }
      fmt::print(stderr, "{}\n", outcome(done.back()));
    } catch (const UsageError& e) {
      fmt::print(stderr, "skipped: {}\n", e.what());
    }
  }

  const std::string text = summary(done, plan);
  fmt::print("{}", text);
  emit(text, (dir / "summary.txt").string());

  nlohmann::json all = nlohmann::json::array();
  std::vector<nlohmann::json> run_rows, filter_rows;
  for (const Done& d : done) {
    nlohmann::json j = std::visit([](const auto& r) { return to_json(r); }, d.result);
    j["experiment"] = d.job->experiment;
    (std::holds_alternative<RunResult>(d.result) ? run_rows : filter_rows).push_back(j);
    all.push_back(std::move(j));
  }
  emit(all.dump(2) + "\n", (dir / "results.json").string());
  emit(to_csv(run_rows), (dir / "results.csv").string());
  emit(to_csv(filter_rows), (dir / "filters.csv").string());

  for (const Figure& figure : make_figures(done, plan)) {
    if (!render(figure, dir)) {
      fmt::print(stderr, "could not draw {}.png (is gnuplot installed?); script kept in {}\n",
                 figure.name, dir.string());
    }
  }
  fmt::print(stderr, "done in {}: {} results, figures and data in {}\n", elapsed(), done.size(),
             dir.string());
}

}  // namespace chtbench
