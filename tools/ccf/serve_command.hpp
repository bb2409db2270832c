// `ccf serve`: the filter server (docs/server.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace ccf_tool {

// Adds `serve` to app. The returned function runs the server after parsing and returns the
// process's exit code, or -1 when `serve` was not chosen.
std::function<int()> add_serve_command(CLI::App& app);

}  // namespace ccf_tool
