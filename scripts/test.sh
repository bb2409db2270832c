#!/usr/bin/env bash
# The whole test suite: format check, then build and run every test three ways -- Release,
# AddressSanitizer + UndefinedBehaviorSanitizer, ThreadSanitizer -- and run every libFuzzer
# target for FUZZ_SECONDS (default 20) each under ASan + UBSan (scripts/fuzz.sh). Installs what
# is missing first. Prints the seconds of every phase at the end (docs/ci.md has the figures).
# Usage: scripts/test.sh [release|asan|tsan|fuzz ...]   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."

phases=()
timed() {  # timed NAME COMMAND...: runs the command and records its wall-clock seconds
  local name=$1 start=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-16s %5d s' "$name" $((SECONDS - start)))")
}

timed setup scripts/setup.sh --no-build

echo "== format check (clang-format)"
mapfile -t sources < <(git ls-files '*.hpp' '*.cpp')
timed format clang-format --dry-run --Werror "${sources[@]}"

presets=("$@")
((${#presets[@]})) || presets=(release asan tsan fuzz)
jobs=$(nproc)
for preset in "${presets[@]}"; do
  if [[ $preset == fuzz ]]; then
    echo "== fuzz: build and run every target"
    timed "fuzz" scripts/fuzz.sh all "${FUZZ_SECONDS:-20}"
    continue
  fi
  echo "== ${preset}: build"
  timed "$preset build" bash -c "scripts/configure.sh $preset && cmake --build --preset $preset -j $jobs"
  echo "== ${preset}: test"
  timed "$preset test" ctest --preset "$preset" -j "$jobs"
done

echo "== phases (wall-clock)"
printf '%s\n' "${phases[@]}" "$(printf '%-16s %5d s' total "$SECONDS")"
