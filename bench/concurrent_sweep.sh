#!/usr/bin/env bash
# The concurrent-filter sweep (lock-based and lock-free filters, docs/benchmarks.md): chtbench
# run over structures x initial size x update percent x threads, median of 3 repeats each, all
# rows in one CSV.
# Usage: bench/concurrent_sweep.sh OUT.csv [chtbench]   (environment: SIZES, UPDATES, THREADS,
# STRUCTURES, DURATION_MS, REPEAT, BATCH, INIT override the defaults below). Runs are saved as
# JSON and merged into OUT.csv by sweep_report.py (structures report different event columns);
# `bench/sweep_report.py table OUT.csv` and `... plot OUT.csv OUT.png` present it.
set -euo pipefail
out=${1:?usage: bench/concurrent_sweep.sh OUT.csv [path/to/chtbench]}
chtbench=${2:-build/release/tools/chtbench/chtbench}
sizes=${SIZES:-"4194304 33554432"}
updates=${UPDATES:-"0 10 40"}
threads=${THREADS:-"1 2 8"}
structures=${STRUCTURES:-"ccf-global-tas ccf-global-ttas ccf-global-mcs ccf-global-clh ccf-rtm-retry ccf-rtm-slr ccf-rtm-scm ccf-rtm-mix ccf-cop ccf-striped ccf-striped-locking lf-cuckoo-filter tbb-hash-map urcu-hash-table std-set-rwlock absl-set-rwlock"}
duration=${DURATION_MS:-500}
repeat=${REPEAT:-3}
batch=${BATCH:-1}   # chtbench run --batch: lookups in runs through contains_many
init=${INIT:-one}   # chtbench run --init-threads

: >"$out"
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
total=$(($(wc -w <<<"$sizes") * $(wc -w <<<"$updates") * $(wc -w <<<"$threads") * $(wc -w <<<"$structures")))
done_runs=0
for size in $sizes; do
  for update in $updates; do
    for n in $threads; do
      for structure in $structures; do
        done_runs=$((done_runs + 1))
        echo "[$done_runs/$total] $structure i=$size u=$update n=$n batch=$batch" >&2
        "$chtbench" run -s "$structure" -n "$n" -u "$update" -i "$size" -d "$duration" \
          -k "$repeat" --batch "$batch" --init-threads "$init" --format json \
          --out "$runs/$(printf %04d "$done_runs").json"
        # Rewritten after every run, so that an interrupted sweep keeps what it measured.
        "$(dirname "$0")/sweep_report.py" csv "$runs"/*.json >"$out"
      done
    done
  done
done
