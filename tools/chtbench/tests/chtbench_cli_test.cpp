// The command line: --list, output files, and a clear message with a non-zero exit for every
// kind of bad argument.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
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
       {"cuckoo-filter", "cuckoo-filter-semisorted", "bloom", "blocked-bloom", "counting-bloom",
        "tbb-hash-map", "urcu-hash-table", "std-set-rwlock", "absl-set-rwlock"}) {
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
      {{"run", "--structure", "std-set-rwlock", "--update", "10", "--insert-pct", "20"},
       "--insert-pct 20 exceeds --update (u) 10"},
      {{"run", "--structure", "std-set-rwlock", "--dist", "zipf:abc"}, "zipf:THETA"},
      {{"run", "--structure", "std-set-rwlock", "--pin", "sideways"}, "--pin"},
      {{"run", "--structure", "std-set-rwlock", "--keys", "shuffled"}, "--keys"},
      {{"run", "--structure", "std-set-rwlock", "--initial", "10", "--range", "5"},
       "exceeds --range (r) 5"},
      {{"run", "--structure", "std-set-rwlock", "--format", "xml"}, "--format"},
      {{"run"}, "--structure is required"},
      {{"filter", "--structure", "std-set-rwlock"}, "not a filter"},
      {{"filter", "--structure", "cuckoo-filter", "--fp-bits", "7"}, "cannot build"},
      {{"filter", "--structure", "cuckoo-filter", "--fill", "0"}, "--fill"},
      {{"filter", "--structure", "cuckoo-filter", "--fill", "1.5"}, "--fill"},
      {{"filter", "--structure", "cuckoo-filter", "--insert-batch", "99999999999"},
       "--insert-batch"},
      {{"suite", "medium"}, "plan"},
      {{"smart", "--mix", "50/40/5"}, "does not add up to 100"},
      {{"smart", "--mix", "50-50-0"}, "INSERT/LOOKUP/UPDATE"},
      {{"smart", "--insertion", "random"}, "--insertion"},
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

// Every numeric option of every subcommand, its valid range as --help and the messages print
// it, and values outside it: zero where zero is invalid, negative, too large for the range or
// the type, not a number, not a whole number, and forms strtoull would read (0x10).
struct NumericOption {
  std::string command, name, range;
  std::vector<std::string> bad;
};

const std::string kMax = "18446744073709551615";
const std::string kTooBig = "18446744073709551616";

const std::vector<NumericOption> kNumericOptions = {
    {"run", "--threads", "[1, 4096]", {"0", "-1", "4097", "4294967296", kTooBig, "two", "1.5", ""}},
    {"run", "--update", "[0, 100]", {"-1", "101", "4294967296", "ten", "0.5"}},
    {"run", "--insert-pct", "[0, 100]", {"-1", "101", "4294967296", "half", "0.5"}},
    {"run", "--initial", "[0, " + kMax + "]", {"-1", kTooBig, "many", "1e3"}},
    {"run", "--range", "[1, " + kMax + "]", {"0", "-1", kTooBig, "big", "0x10"}},
    {"run", "--duration-ms", "[1, 3600000]", {"0", "-5", "3600001", "1s"}},
    {"run", "--repeat", "[1, 1000]", {"0", "-1", "1001", "three"}},
    {"run", "--batch", "[1, 4096]", {"0", "-1", "4097", "x"}},
    {"run", "--capacity", "[1, " + kMax + "]", {"0", "-1", kTooBig, "lots"}},
    {"run", "--fp-bits", "[1, 64]", {"0", "-12", "65", "twelve"}},
    {"run", "--seed", "[0, " + kMax + "]", {"-1", kTooBig, "seed", "1.0"}},
    {"run", "--growth", "[1, 2]", {"0", "0.5", "2.5", "nan", "inf", "fast"}},
    {"filter", "--fp-bits", "[1, 64]", {"0", "-12", "65", "4294967308", "twelve"}},
    {"filter", "--capacity", "[1, " + kMax + "]", {"0", "-1", kTooBig, "lots", "1e6"}},
    {"filter", "--threads", "[1, 4096]", {"0", "-1", "4097", "two"}},
    {"filter", "--fill", "(0, 1]", {"0", "-0.5", "1.5", "nan", "inf", "half"}},
    {"filter", "--insert-batch", "[0, 16777216]", {"-1", "16777217", kTooBig, "many"}},
    {"filter", "--seed", "[0, " + kMax + "]", {"-1", kTooBig, "seed"}},
    {"smart", "--buckets", "[1, 2147483648]", {"0", "-1", "2147483649", "many"}},
    {"smart", "--preload", "[0, 0.99]", {"-0.1", "1", "nan", "most"}},
    {"smart", "--ops", "[1, 268435456]", {"0", "268435457", "lots"}},
    {"smart", "--max-loop", "[1, 1048576]", {"0", "1048577", "x"}},
    {"smart", "--stash", "[0, 65536]", {"-1", "65537", "some"}},
    {"smart", "--repeat", "[1, 1000]", {"0", "1001", "three"}},
    {"smart", "--seed", "[0, " + kMax + "]", {"-1", kTooBig, "seed"}},
};

// A valid command line of the subcommand. `run` asks for a minute's timed phase, so that a
// benchmark that started would show in the elapsed time.
std::vector<std::string> base(const std::string& command) {
  if (command == "run") return {"run", "-s", "ccf-striped", "-d", "60000"};
  if (command == "smart") return {"smart", "--mix", "100/0/0"};
  return {"filter", "-s", "ccf-striped"};
}

// Runs a command line that must be refused: status 2, every expected piece in the message, and
// nothing run: no output file, nothing on stdout, no time spent.
void expect_refused(std::vector<std::string> args, const std::vector<std::string>& expected) {
  const auto out = std::filesystem::temp_directory_path() / "chtbench_cli_refused.json";
  std::filesystem::remove(out);
  args.insert(args.end(), {"--format", "json", "--out", out.string()});
  std::string line;
  for (const auto& a : args) line += " " + a;
  const auto start = std::chrono::steady_clock::now();
  const Outcome o = run(args);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(o.status, 2) << line << "\n" << o.err;
  for (const auto& piece : expected) {
    EXPECT_NE(o.err.find(piece), std::string::npos) << line << ": expected '" << piece << "' in:\n"
                                                    << o.err;
  }
  EXPECT_TRUE(o.out.empty()) << line;
  EXPECT_FALSE(std::filesystem::exists(out)) << line;
  // Far below the base run's minute, and far above a refusal's start-up even under a sanitizer
  // on an oversubscribed machine.
  EXPECT_LT(elapsed, std::chrono::seconds(30)) << line;
}

TEST(Cli, NumericOptionsOutsideTheirRangeAreRefusedWithTheRange) {
  for (const NumericOption& option : kNumericOptions) {
    for (const std::string& value : option.bad) {
      std::vector<std::string> args = base(option.command);
      args.insert(args.end(), {option.name, value});
      expect_refused(args, {option.name + ": ", option.range, value});
    }
  }
}

TEST(Cli, SizesBeyondMemoryAreRefusedBeforeAllocating) {
  const std::string in_memory = "GiB, this machine has ";
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"run", "-s", "ccf-striped", "-r", kMax}, {"--range " + kMax, in_memory}},
      {{"run", "-s", "std-set-rwlock", "-r", kMax}, {"--range " + kMax, in_memory}},
      {{"run", "-s", "ccf-striped", "-r", "9223372036854775808"},
       {"--range 9223372036854775808", in_memory}},
      {{"run", "-s", "std-set-rwlock", "-i", "9223372036854775808"},
       {"--initial 9223372036854775808", "--range " + kMax, in_memory}},
      {{"run", "-s", "tbb-hash-map", "-i", "10", "-r", "100", "--capacity", "1152921504606846976"},
       {"--capacity 1152921504606846976", in_memory}},
      {{"filter", "-s", "cuckoo-filter", "--capacity", "4294967296000"},
       {"--capacity 4294967296000", in_memory}},
      {{"filter", "-s", "bloom", "--capacity", kMax, "--fp-bits", "64", "--fill", "0.001"},
       {"--capacity " + kMax, "--fp-bits 64", in_memory}},
      {{"smart", "--buckets", "2147483648"}, {"--buckets 2147483648", in_memory}},
  };
  for (const auto& [args, expected] : cases) expect_refused(args, expected);
}

TEST(Cli, ConflictingValuesAreRefusedWithTheRange) {
  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> cases = {
      {{"run", "-s", "ccf-striped", "-i", "10", "-r", "5"},
       {"--initial (i) 10", "--range (r) 5", "[0, 5]"}},
      {{"run", "-s", "ccf-striped", "-i", "100", "-r", "1000", "--capacity", "50"},
       {"--capacity 50", "[100, " + kMax + "]"}},
      {{"run", "-s", "ccf-striped", "-n", "4", "-i", "1", "-r", "2"},
       {"--threads (n) 4", "[1, 2]"}},
      {{"run", "-s", "cuckoo-filter", "-n", "2"}, {"--threads (n) must be 1, not 2"}},
      {{"filter", "-s", "cuckoo-filter", "-n", "2"}, {"--threads (n) must be 1, not 2"}},
      {{"run", "-s", "bloom", "-u", "10"}, {"--update (u) must be 0, not 10"}},
      {{"run", "-s", "ccf-striped", "-i", "0"}, {"--range (r) must be set", "--initial (i) is 0"}},
      {{"run", "-s", "ccf-striped", "--batch", "4", "--latency"}, {"--batch", "--latency"}},
      {{"run", "-s", "ccf-striped", "-n", "1", "-n", "2"}, {"--threads"}},
      {{"run", "-s", "cuckoo-filter", "--fp-bits", "7"},
       {"--fp-bits 7", "supports --fp-bits 4, 8, 12, 16, 32, not 7"}},
      {{"filter", "-s", "cuckoo-filter", "--fp-bits", "7"},
       {"--fp-bits 7", "supports --fp-bits 4, 8, 12, 16, 32, not 7"}},
      {{"filter", "-s", "ccf-striped", "--fp-bits", "8"}, {"--fp-bits 8", "supports --fp-bits"}},
      {{"run", "-s", "clht-lb", "--growth", "1.5"}, {"--growth 1.5", "only doubles"}},
      {{"run", "-s", "cuckoo-map", "--growth", "1.1"},
       {"--growth 1.1", "growth factor must lie in [1.125, 2], not 1.1"}},
  };
  for (const auto& [args, expected] : cases) expect_refused(args, expected);
}

// The subcommands --help lists: the first word of each line under "Subcommands:".
std::set<std::string> listed_subcommands(const std::string& help) {
  std::set<std::string> commands;
  std::istringstream lines(help.substr(help.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);  // the heading
  while (std::getline(lines, line) && line.starts_with("  ")) {
    const std::size_t begin = line.find_first_not_of(' ');
    commands.insert(line.substr(begin, line.find(' ', begin) - begin));
  }
  return commands;
}

// Every numeric option in a --help text, "--name" -> its stated range ("" when none is
// stated): lines of the form "  [-x,]--name UINT|INT|FLOAT[:RANGE] ...", RANGE from '[' or
// '(' to the first ']'.
std::map<std::string, std::string> numeric_options(const std::string& help) {
  std::map<std::string, std::string> options;
  std::istringstream lines(help);
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t name = line.find("--");
    if (name == std::string::npos) continue;
    const std::size_t space = line.find(' ', name);
    if (space == std::string::npos) continue;
    const std::string type =
        line.substr(space + 1, line.find_first_of(" :", space + 1) - space - 1);
    if (type != "UINT" && type != "INT" && type != "FLOAT") continue;
    std::string range;
    const std::size_t colon = space + 1 + type.size();
    if (colon + 1 < line.size() && line[colon] == ':' &&
        (line[colon + 1] == '[' || line[colon + 1] == '(')) {
      range = line.substr(colon + 1, line.find(']', colon) - colon);
    }
    options[line.substr(name, space - name)] = range;
  }
  return options;
}

// --help of every subcommand states the range of every numeric option, and the table above
// covers every one of them.
TEST(Cli, HelpStatesTheRangeOfEveryNumericOption) {
  std::map<std::pair<std::string, std::string>, std::string> table;
  for (const NumericOption& option : kNumericOptions) {
    table[{option.command, option.name}] = option.range;
  }
  const std::set<std::string> commands = listed_subcommands(run({"--help"}).out);
  EXPECT_EQ(commands, (std::set<std::string>{"run", "filter", "suite", "smart"}));

  std::size_t seen = 0;
  for (const std::string& command : commands) {
    const Outcome o = run({command, "--help"});
    ASSERT_EQ(o.status, 0) << command;
    for (const auto& [name, range] : numeric_options(o.out)) {
      const auto it = table.find({command, name});
      ASSERT_NE(it, table.end()) << command << " " << name << " is not in kNumericOptions";
      EXPECT_EQ(range, it->second) << command << " " << name;
      ++seen;
    }
    if (command != "suite") {
      EXPECT_NE(o.out.find("fit in memory"), std::string::npos) << command;
    }
  }
  EXPECT_EQ(seen, table.size());
}

// chtbench smart runs the paper's five mixes on the three policies; the smart table refuses only
// without kicking, and finds room exactly where search-first insertion does.
TEST(Cli, SmartRunsThePapersMixesOnEveryPolicy) {
  const Outcome o = run({"smart", "--buckets", "4096", "-k", "1", "--format", "json"});
  ASSERT_EQ(o.status, 0) << o.err;
  const auto j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["runs"].size(), 15u);
  std::map<std::string, std::map<std::string, std::uint64_t>> refused;
  for (const auto& r : j["runs"]) {
    const std::string policy = r["insertion"], mix = r["mix"];
    refused[mix][policy] = r["refused"];
    EXPECT_GT(r["mops"].get<double>(), 0) << mix << " " << policy;
    if (policy == "smart") {
      EXPECT_EQ(r["refused_unkicked"], r["refused"]) << mix;
      EXPECT_EQ(r["futile_kicks"], 0) << mix;
    }
  }
  EXPECT_GT(refused["100/0/0"]["smart"], 0u);  // the insert-only mix runs the table full
  for (const auto& [mix, by_policy] : refused)
    EXPECT_EQ(by_policy.at("smart"), by_policy.at("bfs"));
  EXPECT_EQ(j["load_at_first_failure"]["smart"], j["load_at_first_failure"]["bfs"]);
  EXPECT_GT(j["load_at_first_failure"]["smart"].get<double>(), 0.3);
}

// Leading zeros are decimal (CLI11 alone would read 010 as octal 8).
TEST(Cli, NumbersAreDecimal) {
  const Outcome o = run({"filter", "-s", "blocked-bloom", "--capacity", "04096", "--fill", "0.5",
                         "--format", "json"});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(o.out)["capacity"], 4096);
}

TEST(Cli, WritesJsonToTheOutputFile) {
  const auto path = std::filesystem::temp_directory_path() / "chtbench_cli_test.json";
  const Outcome o =
      run({"run", "-s", "std-set-rwlock", "-i", "1024", "-d", "10", "-u", "10", "--dist",
           "zipf:0.8", "--keys", "scrambled", "--format", "json", "--out", path.string()});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["structure"], "std-set-rwlock");
  EXPECT_EQ(j["dist"], "zipf:0.8");
  EXPECT_EQ(j["keys"], "scrambled");
  EXPECT_EQ(j["update_pct"], 10);
  EXPECT_EQ(j["insert_pct"], 5.0);  // u/2 unless --insert-pct says otherwise
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
