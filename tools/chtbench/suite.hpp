// `chtbench suite quick|full`: the side-by-side evaluation of every registered structure.
#pragma once

#include <string>
#include <vector>

namespace chtbench {

struct SuiteOptions {
  std::string plan = "quick";  // quick | full
  std::string out_dir = "out/chtbench";
  std::vector<std::string> structures{};  // empty: every registered structure
};

// Runs the plan; prints the summary tables on stdout and progress on stderr; writes
// results.json, results.csv, summary.txt and the plots to out_dir. Throws UsageError for an
// unknown structure name.
void run_suite(const SuiteOptions& options);

}  // namespace chtbench
