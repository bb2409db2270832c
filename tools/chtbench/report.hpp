// Results as JSON (the machine-readable schema of docs/chtbench.md), CSV (the same fields,
// flattened) and aligned text tables for people.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filter_bench.hpp"
#include "workload.hpp"

namespace chtbench {

enum class Format { kTable, kCsv, kJson };
Format parse_format(std::string_view text);  // throws std::invalid_argument

nlohmann::json to_json(const RunResult& r);
nlohmann::json to_json(const FilterResult& r);

// One header line and one row per object; nested objects become "outer.inner" columns.
std::string to_csv(std::span<const nlohmann::json> rows);

std::string run_table(std::span<const RunResult> results);
std::string latency_table(std::span<const RunResult> results);  // runs with latency only
std::string filter_table(std::span<const FilterResult> results);

// The text of `results` in `format`: one JSON object for a single result, an array otherwise.
template <class Result>
std::string render(std::span<const Result> results, Format format);

// Writes `text` to `path`, or to stdout when `path` is empty. Throws std::runtime_error.
void emit(const std::string& text, const std::string& path);

}  // namespace chtbench
