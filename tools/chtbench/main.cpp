#include "cli.hpp"

int main(int argc, char** argv) {
  return chtbench::run_cli(argc, argv);
}
