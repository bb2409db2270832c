#!/usr/bin/env bash
# The whole test suite: format check, then build and run every test three ways -- Release,
# AddressSanitizer + UndefinedBehaviorSanitizer, ThreadSanitizer -- and run every libFuzzer
# target for FUZZ_SECONDS (default 20) each under ASan + UBSan (scripts/fuzz.sh). Installs what
# is missing first. Usage: scripts/test.sh [release|asan|tsan|fuzz ...]   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build

echo "== format check (clang-format)"
mapfile -t sources < <(git ls-files '*.hpp' '*.cpp')
clang-format --dry-run --Werror "${sources[@]}"

presets=("$@")
((${#presets[@]})) || presets=(release asan tsan fuzz)
jobs=$(nproc)
for preset in "${presets[@]}"; do
  if [[ $preset == fuzz ]]; then
    echo "== fuzz: build and run every target"
    scripts/fuzz.sh all "${FUZZ_SECONDS:-20}"
    continue
  fi
  echo "== ${preset}: build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  echo "== ${preset}: test"
  ctest --preset "$preset" -j "$jobs"
done
