// The command line: --list, output files, and a clear message with a non-zero exit for every
// kind of bad argument.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.hpp"
#include "registry.hpp"

namespace chtbench {
namespace {

struct Outcome {
  int status;
  std::string out, err;
};

Outcome run(std::vector<std::string> args) {
  args.insert(args.begin(), "chtbench");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int status = run_cli(static_cast<int>(argv.size()), argv.data());
  std::string out = testing::internal::GetCapturedStdout();
  return {status, std::move(out), testing::internal::GetCapturedStderr()};
}

TEST(Cli, ListsEveryStructureOnePerLine) {
  const Outcome o = run({"--list"});
  EXPECT_EQ(o.status, 0);
  for (const StructureInfo& s : registry().all()) {
    EXPECT_NE(o.out.find(s.name + " "), std::string::npos) << s.name;
  }
  for (const char* name :
       {"cuckoo-filter", "cuckoo-filter-semisorted", "bloom", "blocked-bloom", "tbb-hash-map",
        "urcu-hash-table", "std-set-rwlock", "absl-set-rwlock"}) {
    EXPECT_NE(registry().find(name), nullptr) << name;
  }
  EXPECT_EQ(static_cast<std::size_t>(std::count(o.out.begin(), o.out.end(), '\n')),
            registry().all().size());
}

TEST(Cli, HelpNamesTheThesisParameters) {
  const Outcome o = run({"run", "--help"});
  EXPECT_EQ(o.status, 0);
  for (const char* p : {"n: ", "u: ", "i: ", "r: ", "d: "}) {
    EXPECT_NE(o.out.find(p), std::string::npos) << p;
  }
}

TEST(Cli, BadArgumentsGetAMessageAndExitStatus2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--structure", "no-such-thing"}, "unknown structure 'no-such-thing'"},
      {{"run", "--structure", "cuckoo-filter", "--threads", "2"}, "sequential"},
      {{"run", "--structure", "bloom", "--update", "10"}, "cannot erase"},
      {{"run", "--structure", "std-set-rwlock", "--threads", "0"}, "--threads"},
      {{"run", "--structure", "std-set-rwlock", "--update", "101"}, "--update"},
      {{"run", "--structure", "std-set-rwlock", "--dist", "zipf:abc"}, "zipf:THETA"},
      {{"run", "--structure", "std-set-rwlock", "--pin", "sideways"}, "--pin"},
      {{"run", "--structure", "std-set-rwlock", "--initial", "10", "--range", "5"},
       "must not exceed --range"},
      {{"run", "--structure", "std-set-rwlock", "--format", "xml"}, "--format"},
      {{"run"}, "--structure is required"},
      {{"filter", "--structure", "std-set-rwlock"}, "not a filter"},
      {{"filter", "--structure", "cuckoo-filter", "--fp-bits", "7"}, "cannot build"},
      {{"filter", "--structure", "cuckoo-filter", "--fill", "0"}, "--fill"},
      {{"filter", "--structure", "cuckoo-filter", "--fill", "1.5"}, "--fill"},
      {{"filter", "--structure", "cuckoo-filter", "--insert-batch", "99999999999"},
       "--insert-batch"},
      {{"suite", "medium"}, "plan"},
      {{"suite", "quick", "--structures", "tbb-hash-map,nope"}, "unknown structure 'nope'"},
      {{"frobnicate"}, "frobnicate"},
      {{}, "nothing to do"},
  };
  for (const auto& [args, message] : cases) {
    const Outcome o = run(args);
    EXPECT_EQ(o.status, 2) << args.size() << " " << message;
    EXPECT_NE(o.err.find(message), std::string::npos) << "expected '" << message << "' in:\n"
                                                      << o.err;
  }
}

TEST(Cli, WritesJsonToTheOutputFile) {
  const auto path = std::filesystem::temp_directory_path() / "chtbench_cli_test.json";
  const Outcome o = run({"run", "-s", "std-set-rwlock", "-i", "1024", "-d", "10", "-u", "10",
                         "--dist", "zipf:0.8", "--format", "json", "--out", path.string()});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["structure"], "std-set-rwlock");
  EXPECT_EQ(j["dist"], "zipf:0.8");
  EXPECT_EQ(j["update_pct"], 10);
  std::filesystem::remove(path);
}

// --fill stops construction part way; --insert-batch builds through insert_many.
TEST(Cli, FilterBuildsToTheRequestedFillInBatches) {
  const Outcome o = run({"filter", "-s", "ccf-striped", "-n", "2", "--capacity", "65536", "--fill",
                         "0.5", "--insert-batch", "100", "--format", "json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["insert_batch"], 100);
  EXPECT_DOUBLE_EQ(j["fill"].get<double>(), 0.5);
  EXPECT_FALSE(j["filled_to_failure"].get<bool>());
  EXPECT_EQ(j["items"].get<std::size_t>(), j["slots"].get<std::size_t>() / 2);
  EXPECT_EQ(j["false_negatives"], 0);
}

TEST(Cli, CsvHasHeaderAndOneRow) {
  const Outcome o = run({"filter", "-s", "blocked-bloom", "--capacity", "4096", "--format", "csv"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 2);
  EXPECT_EQ(o.out.rfind("bits_per_item,", 0), 0u);  // columns sorted by name
}

}  // namespace
}  // namespace chtbench
