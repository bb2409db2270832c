// `ccf build`, `query`, `info`, `erase`, `merge`: cuckoo filter files from the shell.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace ccf_tool {

// Adds the filter subcommands to app. The returned function runs the one chosen after parsing
// and returns the exit code, or -1 when none of them was chosen.
std::function<int()> add_filter_commands(CLI::App& app);

}  // namespace ccf_tool
