// `ccf log`: the log store's command group (docs/log_store.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace ccf_tool {

// Adds `log` and its subcommands to app. The returned function runs the chosen subcommand
// after parsing and returns the process's exit code, or -1 when `log` was not chosen.
std::function<int()> add_log_command(CLI::App& app);

}  // namespace ccf_tool
