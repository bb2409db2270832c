#!/usr/bin/env bash
# Concurrent construction of the filters (the aim: >= 19 M inserts/s with 2 threads): chtbench
# filter over structures x threads x fill (stop at that fraction of the slots; 1 = to the first
# refusal) x insert batch (0 = one insert() per key, B = insert_many of B keys), REPEAT runs
# each, all rows in one CSV (medians: take them per group of repeats).
# Usage: bench/insert_sweep.sh OUT.csv [chtbench]   (environment: CAPACITY, STRUCTURES, THREADS,
# FILLS, BATCHES, REPEAT override the defaults below).
set -euo pipefail
out=${1:?usage: bench/insert_sweep.sh OUT.csv [path/to/chtbench]}
chtbench=${2:-build/release/tools/chtbench/chtbench}
capacity=${CAPACITY:-33554432}
structures=${STRUCTURES:-"ccf-striped lf-cuckoo-filter ccf-cop cuckoo-filter"}
threads=${THREADS:-"1 2"}
fills=${FILLS:-"0.95 1"}
batches=${BATCHES:-"0 1024"}
repeat=${REPEAT:-3}

: >"$out"
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
done_runs=0
for rep in $(seq "$repeat"); do
  for structure in $structures; do
    for n in $threads; do
      for fill in $fills; do
        for batch in $batches; do
          if [ "$n" -gt 1 ] && "$chtbench" --list | grep -q "^$structure .*(sequential"; then
            continue  # chtbench runs a sequential filter with one thread only
          fi
          done_runs=$((done_runs + 1))
          echo "[$done_runs] repeat $rep: $structure n=$n fill=$fill insert-batch=$batch" >&2
          "$chtbench" filter -s "$structure" -n "$n" --capacity "$capacity" --fill "$fill" \
            --insert-batch "$batch" --format json --out "$runs/$(printf %04d "$done_runs").json"
          "$(dirname "$0")/sweep_report.py" csv "$runs"/*.json >"$out"
        done
      done
    done
  done
done
