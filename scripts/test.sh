#!/usr/bin/env bash
# The whole test suite: format check, then build and run every test three ways -- Release,
# AddressSanitizer + UndefinedBehaviorSanitizer, ThreadSanitizer. Installs what is missing
# first. Usage: scripts/test.sh [release|asan|tsan ...]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build

echo "== format check (clang-format)"
mapfile -t sources < <(git ls-files '*.hpp' '*.cpp')
clang-format --dry-run --Werror "${sources[@]}"

presets=("$@")
((${#presets[@]})) || presets=(release asan tsan)
jobs=$(nproc)
for preset in "${presets[@]}"; do
  echo "== ${preset}: build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  echo "== ${preset}: test"
  ctest --preset "$preset" -j "$jobs"
done
