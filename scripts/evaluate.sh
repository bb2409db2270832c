#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job: chtbench's quick side-by-side evaluation of
# every filter and hash table (a table on stdout, progress on stderr, JSON and PNG plots in
# out/evaluation). A few minutes on 2 cores. Extra arguments go to `chtbench suite quick`
# (e.g. --structures ccf-striped,lf-cuckoo-filter); `suite full` is the long version.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out/evaluation
build/release/tools/chtbench/chtbench suite quick --out out/evaluation "$@"
echo "results and plots: out/evaluation/" >&2
