#!/usr/bin/env bash
# Builds the libFuzzer targets (the "fuzz" preset: clang, ASan + UBSan) and runs them, each
# for a bounded time, on a scratch copy of its seed corpus (fuzz/corpus/TARGET is not changed).
# Fails if any target reports a finding; the input that caused it is kept in
# build/fuzz/artifacts/TARGET/. See docs/fuzzing.md.
#
# Usage: scripts/fuzz.sh [TARGET|all [SECONDS]]      (default: all, FUZZ_SECONDS or 20 each)
# Environment: FUZZ_SECONDS   seconds per target when SECONDS is not given
#              FUZZ_WORK_DIR  keep the grown corpus here (TARGET/ under it) instead of a
#                             scratch directory that is removed afterwards
#              FUZZ_ARGS      extra libFuzzer flags, e.g. "-jobs=2 -workers=2"
#              FUZZ_PARALLEL  targets run at once (default: the number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-all}
seconds=${2:-${FUZZ_SECONDS:-20}}
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "fuzz: bad seconds '$seconds'" >&2; exit 2; }

scripts/configure.sh fuzz
cmake --build --preset fuzz -j "$(nproc)"

build=build/fuzz/fuzz
mapfile -t all_targets <"$build/targets.txt"
if [[ $target == all ]]; then
  targets=("${all_targets[@]}")
elif [[ " ${all_targets[*]} " == *" $target "* ]]; then
  targets=("$target")
else
  echo "fuzz: unknown target '$target' (targets: ${all_targets[*]})" >&2
  exit 2
fi

if [[ -n ${FUZZ_WORK_DIR:-} ]]; then
  work=$FUZZ_WORK_DIR
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# One target: run it on a scratch copy of its seed corpus; exit status 1 on a finding.
fuzz_one() {
  local name=$1 corpus=$work/$1 artifacts=build/fuzz/artifacts/$1
  mkdir -p "$corpus" "$artifacts"
  if [[ -d fuzz/corpus/$name ]]; then cp -n fuzz/corpus/"$name"/* "$corpus"/; fi
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
  "$build/fuzz_$name" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} \
    "$corpus" >"$artifacts/log.txt" 2>&1
}

# The targets are single-threaded: FUZZ_PARALLEL of them (default: one per core) run at once.
parallel=${FUZZ_PARALLEL:-$(nproc)}
[[ $parallel =~ ^[0-9]+$ && $parallel -gt 0 ]] || { echo "fuzz: bad FUZZ_PARALLEL '$parallel'" >&2; exit 2; }
for name in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do sleep 0.2; done
  echo "== fuzz: $name for ${seconds}s"
  (
    status=0
    fuzz_one "$name" || status=$?
    echo "$status" >"$work/$name.status"
  ) &
done
wait
failed=()
for name in "${targets[@]}"; do
  artifacts=build/fuzz/artifacts/$name
  if [[ $(cat "$work/$name.status" 2>/dev/null) != 0 ]]; then
    tail -n 40 "$artifacts/log.txt" >&2
    echo "fuzz: $name FAILED; reproduce with: $build/fuzz_$name $artifacts/<crash file>" >&2
    failed+=("$name")
  else
    echo -n "fuzz: $name: "
    grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$artifacts/log.txt" |
      tr '\n' ' '
    echo
  fi
done
echo "fuzz: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
