#!/usr/bin/env bash
# Sets everything up, builds only the four programs it runs (scripts/setup.sh), and runs the main
# job: chtbench's quick side-by-side evaluation of every filter and hash table (a table on
# stdout, progress on stderr, JSON and PNG plots in out/evaluation), then SmartCuckoo's own
# comparison (`chtbench smart`, a few seconds, in out/evaluation/smart_cuckoo.txt), the log
# store's figures (`log_bench` on 200,000 entries, out/evaluation/log_store.txt), `ccf serve`
# against Debian's redis-server (redis-benchmark, 3 interleaved rounds, out/evaluation/serve.txt)
# and the Redis module ccf-redis.so against `ccf serve` (out/evaluation/module.txt). Under 10
# minutes on 2 cores (docs/ci.md). Extra arguments go to `chtbench suite quick` (e.g.
# --structures ccf-striped,lf-cuckoo-filter); `suite full` is the long version.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p out/evaluation
build/release/tools/chtbench/chtbench suite quick --out out/evaluation "$@"
build/release/tools/chtbench/chtbench smart --buckets 1048576 -k 1 --out out/evaluation/smart_cuckoo.txt
cat out/evaluation/smart_cuckoo.txt
build/release/bench/log_bench --dir out/evaluation/log_bench.tmp --entries 200000 \
  --lookups 500000 --import-mib 64 | tee out/evaluation/log_store.txt
bench/serve_bench.sh 3 1000000 | tee out/evaluation/serve.txt
bench/module_bench.sh 3 1000000 | tee out/evaluation/module.txt
echo "results and plots: out/evaluation/" >&2
