// The JSON schema of docs/chtbench.md, the CSV view of it, and the latency histogram.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "plots.hpp"
#include "registry.hpp"
#include "report.hpp"
#include "timing.hpp"

namespace chtbench {
namespace {

TEST(Report, RunJsonHasTheSchemaFields) {
  const RunConfig c{.update_pct = 20, .initial = 1u << 10, .duration_ms = 20, .latency = true};
  const nlohmann::json j = to_json(run_benchmark(*registry().find("std-set-rwlock"), c));
  for (const char* key : {"structure",
                          "threads",
                          "update_pct",
                          "initial",
                          "range",
                          "duration_ms",
                          "dist",
                          "keys",
                          "pin",
                          "throughput_mops",
                          "ops",
                          "memory_bytes",
                          "rss_growth_bytes",
                          "limit_mops",
                          "ratio_to_limit",
                          "latency_ns",
                          "tsc_ghz",
                          "repeat_mops",
                          "cpu",
                          "rtm",
                          "elision_stats"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["structure"], "std-set-rwlock");
  EXPECT_EQ(j["range"], 2048);
  EXPECT_EQ(j["dist"], "uniform");
  EXPECT_EQ(j["keys"], "range");
  EXPECT_EQ(j["pin"], "default");
  std::uint64_t total = 0;
  for (const char* key :
       {"lookup_hit", "lookup_miss", "insert_ok", "insert_fail", "erase_ok", "erase_fail"}) {
    ASSERT_TRUE(j["ops"].contains(key)) << key;
    total += j["ops"][key].get<std::uint64_t>();
  }
  EXPECT_GT(total, 0u);
  EXPECT_GT(j["throughput_mops"].get<double>(), 0);
  EXPECT_GT(j["limit_mops"].get<double>(), 0);
  for (const char* cls : {"get_suc", "get_fail", "put_suc", "put_fail", "rem_suc", "rem_fail"}) {
    ASSERT_TRUE(j["latency_ns"].contains(cls)) << cls;
    const auto& lat = j["latency_ns"][cls];
    for (const char* p : {"p50", "p90", "p99", "p999", "max"}) {
      EXPECT_TRUE(lat.contains(p)) << cls << p;
    }
    EXPECT_LE(lat["p50"].get<double>(), lat["p999"].get<double>()) << cls;
    // The max is exact, p99.9 a bucket's midpoint (at most 1/64 above the bucket's values).
    EXPECT_LE(lat["p999"].get<double>(), lat["max"].get<double>() * (1 + 1.0 / 32)) << cls;
  }
  EXPECT_GT(j["latency_ns"]["get_suc"]["samples"].get<std::uint64_t>(), 0u);
}

TEST(Report, RunJsonOmitsLatencyUnlessAsked) {
  const RunConfig c{.initial = 1u << 10, .duration_ms = 10};
  EXPECT_FALSE(
      to_json(run_benchmark(*registry().find("std-set-rwlock"), c)).contains("latency_ns"));
}

TEST(Report, FilterJsonHasTheSchemaFields) {
  const FilterBenchConfig c{.capacity = 1u << 12, .negative_queries = 1u << 14, .probe_ms = 10};
  const nlohmann::json j = to_json(run_filter_benchmark(*registry().find("cuckoo-filter"), c));
  for (const char* key : {"structure", "fp_bits", "capacity", "items", "load_factor",
                          "bits_per_item", "fpr", "construction_mops", "construction_tail_mops",
                          "lookup_mops", "limit_mops", "ratio_to_limit"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["fp_bits"], 12);
  EXPECT_GT(j["items"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["load_factor"].get<double>(), 0.5);
  EXPECT_TRUE(j["lookup_mops"].is_number());
  EXPECT_EQ(j["false_negatives"], 0);
}

TEST(Report, BloomLoadFactorIsNull) {
  const FilterBenchConfig c{.capacity = 1u << 12, .negative_queries = 1u << 12, .probe_ms = 10};
  EXPECT_TRUE(to_json(run_filter_benchmark(*registry().find("bloom"), c))["load_factor"].is_null());
}

TEST(Report, CsvFlattensTheJson) {
  const std::vector<nlohmann::json> rows = {{{"a", 1}, {"ops", {{"x", 2}, {"y", 3}}}, {"s", "t"}},
                                            {{"a", 4}, {"ops", {{"x", 5}, {"y", 6}}}, {"s", "u"}}};
  EXPECT_EQ(to_csv(rows), "a,ops.x,ops.y,s\n1,2,3,t\n4,5,6,u\n");
}

TEST(Report, ParseFormat) {
  EXPECT_EQ(parse_format("json"), Format::kJson);
  EXPECT_THROW(parse_format("xml"), std::invalid_argument);
}

TEST(Plots, RendersAPngWithGnuplot) {
  if (std::system("gnuplot --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  const auto dir = std::filesystem::temp_directory_path() / "chtbench_plot_test";
  std::filesystem::create_directories(dir);
  const Figure figure{
      .name = "lines",
      .panels = {{.title = "t_1",
                  .xlabel = "x",
                  .ylabel = "y",
                  .logx = true,
                  .series = {{"a", {1, 2, 4}, {3, 2, 1}}, {"b", {1, 2, 4}, {1, 2, 3}}}}}};
  ASSERT_TRUE(render(figure, dir));
  EXPECT_GT(std::filesystem::file_size(dir / "lines.png"), 1000u);
  EXPECT_TRUE(std::filesystem::exists(dir / "lines.gp"));
  std::filesystem::remove_all(dir);
}

// A panel with nothing to draw (no structure of its family was chosen, or bars without
// categories) says so instead of making gnuplot fail the whole figure.
TEST(Plots, AnEmptyPanelSaysNoData) {
  if (std::system("gnuplot --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  const auto dir = std::filesystem::temp_directory_path() / "chtbench_plot_empty_test";
  std::filesystem::create_directories(dir);
  const Figure figure{.name = "empty",
                      .cols = 3,
                      .legend_per_panel = true,
                      .panels = {{.title = "lines, none", .logy = true, .series = {{"a", {}, {}}}},
                                 {.title = "bars, none", .series = {{"b", {}, {}}}},
                                 {.title = "lines", .series = {{"c", {1, 2}, {2, 1}}}}}};
  ASSERT_TRUE(render(figure, dir));
  EXPECT_GT(std::filesystem::file_size(dir / "empty.png"), 1000u);
  std::ifstream script(dir / "empty.gp");
  const std::string text{std::istreambuf_iterator<char>(script), {}};
  std::size_t placeholders = 0;
  for (std::size_t at = 0; (at = text.find("'no data'", at)) != std::string::npos; ++at) {
    ++placeholders;
  }
  EXPECT_EQ(placeholders, 2u);
  std::filesystem::remove_all(dir);
}

TEST(Latency, HistogramQuantilesWithinBucketPrecision) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100000u);
  for (const double q : {0.5, 0.9, 0.99, 0.999}) {
    EXPECT_NEAR(h.quantile(q), q * 100000, q * 100000 * 0.04) << q;
  }
  LatencyHistogram small;
  for (int i = 0; i < 10; ++i) small.record(7);
  EXPECT_NEAR(small.quantile(0.5), 7.5, 0.5);  // exact below 32
  LatencyHistogram merged;
  merged.merge(h);
  merged.merge(small);
  EXPECT_EQ(merged.count(), 100010u);
  EXPECT_EQ(h.max(), 100000u);  // exact, not a bucket's midpoint
  EXPECT_EQ(small.max(), 7u);
  EXPECT_EQ(merged.max(), 100000u);
  EXPECT_EQ(LatencyHistogram().max(), 0u);
}

TEST(Latency, TscFrequencyIsPlausible) {
  EXPECT_GT(tsc_ghz(), 0.1);
  EXPECT_LT(tsc_ghz(), 10.0);
  EXPECT_LT(timer_overhead(), 10000u);
}

}  // namespace
}  // namespace chtbench
