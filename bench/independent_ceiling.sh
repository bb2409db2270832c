#!/usr/bin/env bash
# The per-thread ceiling of a concurrent filter's construction on this machine: N independent
# copies of the sequential filter (`cuckoo-filter`, no synchronization, each its own table of
# CAPACITY slots, one process per core) built at the same time, beside each concurrent filter
# built by N threads into one shared table, in the same rounds. The copies run the same work
# per core as the concurrent filters without any lock, atomic instruction or shared line (their
# tables take N times the memory of the shared one, which if anything favours the shared
# table). A per-thread rate above theirs would need a faster algorithm, not cheaper
# synchronization; a concurrent filter's ratio to them is what its synchronization costs.
#
#   bench/independent_ceiling.sh [N] [ROUNDS] [CAPACITY] [chtbench] > results.txt
#
# Per round (the order of the runs rotates from round to round): the N copies at once, then
# each of STRUCTURES (default: ccf-striped lf-cuckoo-filter) with N threads. Every run is
# `chtbench filter --fill 0.95 --insert-batch 1024`; the figures are construction_mops (0 ->
# 95% load) and construction_tail_mops (90% -> 95%). The raw lines come first (also on stderr,
# to watch); the summary gives, per structure, the median over rounds of M inserts/s per
# thread and of its ratio to the copies' (per round: the mean of the copies' rates).
set -euo pipefail
n=${1:-2} rounds=${2:-3} capacity=${3:-33554432}
chtbench=${4:-build/release/tools/chtbench/chtbench}
read -r -a structures <<<"${STRUCTURES:-ccf-striped lf-cuckoo-filter}"
[[ $n =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ && $capacity =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: bench/independent_ceiling.sh [N >= 1] [ROUNDS >= 1] [CAPACITY >= 1] [chtbench]" >&2
  exit 2
}
run() {  # run STRUCTURE THREADS: one CSV line "construction_mops construction_tail_mops"
  "$chtbench" filter -s "$1" -n "$2" --capacity "$capacity" --fill 0.95 --insert-batch 1024 \
    --format csv | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
                            NR == 2 { print $c["construction_mops"], $c["construction_tail_mops"] }'
}
copies() {  # N sequential filters at once, one line per copy; fails if one of them did
  local dir pids=() i status=0
  dir=$(mktemp -d)
  for ((i = 0; i < n; i++)); do
    run cuckoo-filter 1 >"$dir/$i" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || status=$?; done
  cat "$dir"/*
  rm -rf "$dir"
  return "$status"
}
{
  echo "# bench/independent_ceiling.sh $n $rounds $capacity   (structures: ${structures[*]})"
  echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), date: $(date -u '+%F %H:%M') UTC"
  echo "# round kind threads construction_mops construction_tail_mops   (per thread: divide by threads)"
  for ((round = 1; round <= rounds; round++)); do
    kinds=(copies "${structures[@]}")
    shift_by=$(((round - 1) % ${#kinds[@]}))
    kinds=("${kinds[@]:shift_by}" "${kinds[@]:0:shift_by}")
    for kind in "${kinds[@]}"; do
      if [ "$kind" = copies ]; then
        lines=$(copies)
        while read -r build tail; do echo "$round copy 1 $build $tail"; done <<<"$lines"
      else
        line=$(run "$kind" "$n")
        echo "$round $kind $n $line"
      fi
    done
  done
} | tee /dev/stderr | awk '
  { print }
  /^#/ { next }
  { per_build = $4 / $3; per_tail = $5 / $3 }
  $2 == "copy" { cb[$1] += per_build; ct[$1] += per_tail; cn[$1]++; next }
  { kinds[$2]; b[$2, $1] = per_build; t[$2, $1] = per_tail; r[$2] = r[$2] " " $1 }
  function median(list, n,   i, j, x) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && list[j - 1] > list[j]; j--) {
      x = list[j]; list[j] = list[j - 1]; list[j - 1] = x
    }
    return n % 2 ? list[(n + 1) / 2] : (list[n / 2] + list[n / 2 + 1]) / 2
  }
  END {
    print "# summary: medians over rounds, M inserts/s per thread (ratio to the copies in its round)"
    m = 0
    for (round in cn) { m++; lb[m] = cb[round] / cn[round]; lt[m] = ct[round] / cn[round] }
    printf "%-20s build %6.2f          tail %6.2f\n", "copies (no sync)", median(lb, m), median(lt, m)
    for (k in kinds) {
      m = split(substr(r[k], 2), rs, " ")
      for (i = 1; i <= m; i++) {
        q = rs[i]; vb[i] = b[k, q]; vt[i] = t[k, q]
        xb[i] = b[k, q] / (cb[q] / cn[q]); xt[i] = t[k, q] / (ct[q] / cn[q])
      }
      printf "%-20s build %6.2f (%.2f)   tail %6.2f (%.2f)\n", k, median(vb, m), median(xb, m),
             median(vt, m), median(xt, m)
    }
  }'
