#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job: the filter benchmark (issue 2), whose
# table is printed and whose JSON lands in out/. Extra arguments go to filter_bench
# (see build/release/bench/filter_bench --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out
build/release/bench/filter_bench --json out/filter_bench.json "$@"
echo "results: out/filter_bench.json" >&2
