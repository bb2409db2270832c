// ccf: the command-line tool. Exit codes (also in `ccf --help`):
//   0 success; 1 the key or file asked for is not in the store; 2 bad usage;
//   3 the store or an input file cannot be used (missing, foreign, corrupt, in use, I/O error).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <functional>

#include "log_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "ccf: concurrent cuckoo filters and the cuckoo-indexed log store.\n"
      "Exit codes: 0 success, 1 not found, 2 bad usage, 3 store or file unusable."};
  app.require_subcommand(1);
  const std::function<int()> run_log = ccf_tool::add_log_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }
  try {
    return run_log();
  } catch (const CLI::Error& error) {  // an argument found bad only when it is used
    fmt::print(stderr, "ccf: {}\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    fmt::print(stderr, "ccf: {}\n", error.what());
    return 3;
  }
}
