// ccf: the command-line tool. Exit codes (also in `ccf --help`):
//   0 success; 1 not found (a store key or file; `query`: no key hit; `erase`: some key had no
//   fingerprint); 2 bad usage; 3 a store, filter file or input cannot be used (missing,
//   foreign, corrupt, in use, full, I/O error).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>

#include "filter_commands.hpp"
#include "log_command.hpp"
#include "serve_command.hpp"

namespace {

// A command's exit code, or 3 when what it wrote to standard output did not all get there (a
// full disk, a device error: std::cout and fmt::print both write through stdout).
int checked_stdout(int code) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  const int error = errno;
  fmt::print(stderr, "ccf: writing standard output failed{}{}\n", error != 0 ? ": " : "",
             error != 0 ? std::strerror(error) : "");
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "ccf: concurrent cuckoo filters, the cuckoo-indexed log store and the filter server.\n"
      "Exit codes: 0 success, 1 not found (query: no hit), 2 bad usage, 3 store, file or input "
      "unusable."};
  app.require_subcommand(1);
  const std::function<int()> run_filters = ccf_tool::add_filter_commands(app);
  const std::function<int()> run_log = ccf_tool::add_log_command(app);
  const std::function<int()> run_serve = ccf_tool::add_serve_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }
  try {
    for (const auto& run : {run_filters, run_log, run_serve}) {
      if (const int code = run(); code >= 0) return checked_stdout(code);
    }
    return 2;
  } catch (const CLI::Error& error) {  // an argument found bad only when it is used
    fmt::print(stderr, "ccf: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "ccf: {}\n", error.what());
    return 3;
  }
}
