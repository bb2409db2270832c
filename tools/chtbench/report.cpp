#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ccf/sync/rtm_backend.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "topology.hpp"

namespace chtbench {

Format parse_format(std::string_view text) {
  if (text == "table") return Format::kTable;
  if (text == "csv") return Format::kCsv;
  if (text == "json") return Format::kJson;
  throw std::invalid_argument(fmt::format("bad format '{}': expected table, csv or json", text));
}

namespace {

// NaN (a metric that does not apply) becomes null.
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

double ratio(double rate, double limit) {
  return limit > 0 ? rate / limit : 0;
}

// An event count of the timed phase per successful insert (NaN without inserts).
double per_insert(const EventCount& e, const RunResult& r) {
  const std::uint64_t inserts = r.ops[OpClass::kPutSuc];
  return inserts == 0 ? std::numeric_limits<double>::quiet_NaN()
                      : static_cast<double>(e.value) / static_cast<double>(inserts);
}

// Of the critical sections an RTM-elided structure ran in the timed phase, the share that
// committed as transactions (adapters/elision_events.hpp); NaN for other structures.
double speculative_share(const RunResult& r) {
  const auto count = [&](std::string_view name) -> std::optional<std::uint64_t> {
    for (const EventCount& e : r.events) {
      if (e.name == name) return e.value;
    }
    return std::nullopt;
  };
  const auto committed = count("tx_committed"), fallbacks = count("lock_fallbacks");
  if (!committed || !fallbacks || *committed + *fallbacks == 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return static_cast<double>(*committed) / static_cast<double>(*committed + *fallbacks);
}

}  // namespace

nlohmann::json to_json(const RunResult& r) {
  const RunConfig& c = r.config;
  nlohmann::json j = {
      {"command", "run"},
      {"structure", c.structure},
      {"workload", r.workload},
      {"threads", c.threads},
      {"update_pct", c.update_pct},
      {"insert_pct", c.insert_pct ? double(*c.insert_pct) : c.update_pct / 2.0},
      {"initial", c.initial},
      {"range", c.range},
      {"capacity", c.capacity},
      {"duration_ms", c.duration_ms},
      {"dist", c.dist.to_string()},
      {"keys", c.scrambled_keys ? "scrambled" : "range"},
      {"pin", to_string(c.pin)},
      {"init_threads", c.init_all ? "all" : "one"},
      {"repeat", c.repeat},
      {"batch", c.batch},
      {"elision_stats", c.elision_stats},
      {"cpu", cpu_model()},
      {"rtm", ccf::sync::describe(ccf::sync::rtm_support())},
      {"seed", c.seed},
      {"fp_bits", c.fp_bits},
      {"growth", c.growth},
      {"throughput_mops", r.throughput_mops},
      {"repeat_mops", r.repeat_mops},
      {"seconds", r.seconds},
      {"ops", nlohmann::json::object()},
      {"false_negatives", r.false_negatives},
      {"initial_inserted", r.initial_inserted},
      {"fill_seconds", r.fill_seconds},
      {"size_after", r.size_after},
      {"memory_bytes", r.memory_bytes},
      {"rss_growth_bytes", r.rss_growth_bytes},
      {"bytes_per_item", r.size_after == 0 ? nlohmann::json()
                                           : nlohmann::json(static_cast<double>(r.memory_bytes) /
                                                            static_cast<double>(r.size_after))},
      {"limit_mops", r.limit_mops},
      {"ratio_to_limit", ratio(r.throughput_mops, r.limit_mops)},
      {"harness_ns_per_op", r.harness_ns_per_op},
      {"harness_share", r.harness_share},
  };
  for (std::size_t k = 0; k < kOpClasses; ++k) j["ops"][kCountNames[k]] = r.ops.n[k];
  for (const EventCount& e : r.events) {
    j["events"][e.name] = e.value;
    j["events_per_insert"][e.name] = number(per_insert(e, r));
  }
  if (const double share = speculative_share(r); !std::isnan(share)) {
    j["speculative_share"] = share;
  }
  if (r.latency) {
    j["tsc_ghz"] = r.tsc_ghz;
    j["timer_overhead_ns"] = r.timer_overhead_ns;
    auto& lat = j["latency_ns"];
    for (std::size_t k = 0; k < kOpClasses; ++k) {
      const LatencyStats& s = (*r.latency)[k];
      lat[kLatencyNames[k]] = {{"samples", s.samples}, {"p50", s.p50},   {"p90", s.p90},
                               {"p99", s.p99},         {"p999", s.p999}, {"max", s.max}};
    }
  }
  return j;
}

nlohmann::json to_json(const FilterResult& r) {
  const FilterBenchConfig& c = r.config;
  return {
      {"command", "filter"},
      {"structure", c.structure},
      {"fp_bits", c.fp_bits},
      {"capacity", c.capacity},
      {"threads", c.threads},
      {"pin", to_string(c.pin)},
      {"seed", c.seed},
      {"fill", c.fill},
      {"insert_batch", c.insert_batch},
      {"items", r.items},
      {"slots", r.slots},
      {"filled_to_failure", r.filled_to_failure},
      {"load_factor", number(r.load_factor)},
      {"bits_per_item", r.bits_per_item},
      {"memory_bytes", r.memory_bytes},
      {"fpr", r.fpr},
      {"positive_queries", r.positive_queries},
      {"negative_queries", r.negative_queries},
      {"false_positives", r.false_positives},
      {"false_negatives", r.false_negatives},
      {"construction_mops", r.construction_mops},
      {"construction_tail_mops", number(r.construction_tail_mops)},
      {"lookup_mops", r.lookup_mops()},
      {"lookup_positive_mops", r.positive_mops},
      {"lookup_negative_mops", r.negative_mops},
      {"lookup_positive_batched_mops", r.positive_batched_mops},
      {"lookup_negative_batched_mops", r.negative_batched_mops},
      {"limit_mops", r.limit_mops},
      {"ratio_to_limit",
       {{"construction", ratio(r.construction_mops, r.limit_mops)},
        {"lookup", ratio(r.lookup_mops(), r.limit_mops)},
        {"lookup_positive", ratio(r.positive_mops, r.limit_mops)},
        {"lookup_negative", ratio(r.negative_mops, r.limit_mops)},
        {"lookup_positive_batched", ratio(r.positive_batched_mops, r.limit_mops)},
        {"lookup_negative_batched", ratio(r.negative_batched_mops, r.limit_mops)}}},
  };
}

namespace {

void flatten(const nlohmann::json& j, const std::string& prefix, nlohmann::json& flat) {
  for (const auto& [key, value] : j.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      flatten(value, name, flat);
    } else if (value.is_array()) {
      std::string joined;
      for (const auto& v : value) {
        if (!joined.empty()) joined += ' ';
        joined += v.dump();
      }
      flat[name] = joined;
    } else {
      flat[name] = value;
    }
  }
}

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

std::string to_csv(std::span<const nlohmann::json> rows) {
  if (rows.empty()) return "";
  std::vector<nlohmann::json> flat(rows.size(), nlohmann::json::object());
  for (std::size_t i = 0; i < rows.size(); ++i) flatten(rows[i], "", flat[i]);
  // Columns in first-seen order (nlohmann::json sorts object keys; keep that order).
  std::vector<std::string> columns;
  for (const auto& f : flat) {
    for (const auto& [key, value] : f.items()) {
      if (std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    }
  }
  std::string out = fmt::format("{}\n", fmt::join(columns, ","));
  for (const auto& f : flat) {
    std::vector<std::string> cells;
    for (const auto& col : columns) cells.push_back(f.contains(col) ? csv_cell(f[col]) : "");
    out += fmt::format("{}\n", fmt::join(cells, ","));
  }
  return out;
}

std::string run_table(std::span<const RunResult> results) {
  std::string out = fmt::format(
      "{:<26} {:>3} {:>4} {:>10} {:>10} {:>13} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7} {:>6} {:>8}\n",
      "structure", "n", "u%", "i", "r", "dist", "Mops/s", "limit", "ratio", "MiB", "RSS MiB",
      "B/item", "fail%", "harness");
  for (const RunResult& r : results) {
    const RunConfig& c = r.config;
    const double fail = r.ops.total() == 0 ? 0
                                           : 100.0 *
                                                 static_cast<double>(r.ops[OpClass::kGetFail] +
                                                                     r.ops[OpClass::kPutFail] +
                                                                     r.ops[OpClass::kRemFail]) /
                                                 static_cast<double>(r.ops.total());
    out += fmt::format(
        "{:<26} {:>3} {:>4} {:>10} {:>10} {:>13} {:>9.2f} {:>9.2f} {:>7.3f} {:>9.2f} {:>9.2f} "
        "{:>7.1f} {:>6.1f} {:>7.0f}%\n",
        c.structure, c.threads, c.update_pct, c.initial, c.range,
        c.dist.to_string() + (c.scrambled_keys ? "/scr" : ""), r.throughput_mops, r.limit_mops,
        ratio(r.throughput_mops, r.limit_mops), static_cast<double>(r.memory_bytes) / (1 << 20),
        static_cast<double>(r.rss_growth_bytes) / (1 << 20),
        r.size_after == 0 ? 0.0
                          : static_cast<double>(r.memory_bytes) / static_cast<double>(r.size_after),
        fail, 100 * r.harness_share);
  }
  out +=
      "(harness: share of each operation's time spent in the harness itself, measured with "
      "the same workload over `null`)\n";
  for (const RunResult& r : results) {  // the structures' own event counts, if any
    if (r.events.empty()) continue;
    std::vector<std::string> parts;  // the events that happened (JSON and CSV carry every count)
    for (const EventCount& e : r.events) {
      if (e.value == 0) continue;
      parts.push_back(r.ops[OpClass::kPutSuc] == 0 ? fmt::format("{} {}", e.name, e.value)
                                                   : fmt::format("{} {} ({:.4f}/insert)", e.name,
                                                                 e.value, per_insert(e, r)));
    }
    if (const double share = speculative_share(r); !std::isnan(share)) {
      parts.push_back(fmt::format("speculative share {:.1f}%", 100 * share));
    }
    out += fmt::format("  {} n={} u={}: timed phase: {}\n", r.config.structure, r.config.threads,
                       r.config.update_pct, fmt::join(parts, ", "));
  }
  return out;
}

std::string latency_table(std::span<const RunResult> results) {
  std::string out = fmt::format("{:<26} {:>3} {:>4} {:<9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>11}\n",
                                "structure", "n", "u%", "class", "samples", "p50 ns", "p90 ns",
                                "p99 ns", "p99.9 ns", "max ns");
  for (const RunResult& r : results) {
    if (!r.latency) continue;
    for (std::size_t k = 0; k < kOpClasses; ++k) {
      const LatencyStats& s = (*r.latency)[k];
      if (s.samples == 0) continue;
      out += fmt::format(
          "{:<26} {:>3} {:>4} {:<9} {:>10} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>11.0f}\n",
          r.config.structure, r.config.threads, r.config.update_pct, kLatencyNames[k], s.samples,
          s.p50, s.p90, s.p99, s.p999, s.max);
    }
  }
  return out;
}

std::string filter_table(std::span<const FilterResult> results) {
  std::string out = fmt::format(
      "{:<26} {:>3} {:>10} {:>6} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}\n",
      "structure", "f", "items", "load", "bits/it", "fpr", "build", "tail", "pos", "neg", "pos-bat",
      "neg-bat", "limit", "bat/lim");
  for (const FilterResult& r : results) {
    out += fmt::format(
        "{:<26} {:>3} {:>10} {:>6} {:>8.2f} {:>9.5f} {:>8.2f} {:>8} {:>8.2f} {:>8.2f} {:>8.2f} "
        "{:>8.2f} {:>8.2f} {:>8.3f}\n",
        r.config.structure, r.config.fp_bits, r.items,
        std::isfinite(r.load_factor) ? fmt::format("{:.3f}", r.load_factor) : "-", r.bits_per_item,
        r.fpr, r.construction_mops,
        std::isfinite(r.construction_tail_mops) ? fmt::format("{:.2f}", r.construction_tail_mops)
                                                : "-",
        r.positive_mops, r.negative_mops, r.positive_batched_mops, r.negative_batched_mops,
        r.limit_mops, ratio(r.positive_batched_mops, r.limit_mops));
  }
  out += fmt::format(
      "(rates in M operations/s; tail = the inserts from {:.0f}% of the slots on; bat/lim = "
      "batched positive lookups / limit)\n",
      100 * kTailFrom);
  return out;
}

template <class Result>
std::string render(std::span<const Result> results, Format format) {
  std::vector<nlohmann::json> rows;
  for (const Result& r : results) rows.push_back(to_json(r));
  switch (format) {
    case Format::kJson:
      return (rows.size() == 1 ? rows.front() : nlohmann::json(rows)).dump(2) + "\n";
    case Format::kCsv:
      return to_csv(rows);
    case Format::kTable:
      if constexpr (std::is_same_v<Result, FilterResult>) {
        return filter_table(results);
      } else {
        const bool any_latency =
            std::ranges::any_of(results, [](const RunResult& r) { return r.latency.has_value(); });
        std::string text = run_table(results);
        if (any_latency) text.append("\n").append(latency_table(results));
        return text;
      }
  }
  return "";
}

template std::string render<RunResult>(std::span<const RunResult>, Format);
template std::string render<FilterResult>(std::span<const FilterResult>, Format);

void emit(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", path));
  out << text;
  if (!out) throw std::runtime_error(fmt::format("error writing '{}'", path));
}

}  // namespace chtbench
