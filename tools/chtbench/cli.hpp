// The command line (CLI11): `chtbench --list | run | filter | suite | smart`.
#pragma once

namespace chtbench {

// Parses argv and runs the command. Returns the process exit status: 0 on success, 2 for bad
// arguments (with a message on stderr), 1 for other failures.
int run_cli(int argc, char** argv);

}  // namespace chtbench
