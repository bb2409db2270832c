#!/usr/bin/env bash
# A/B comparison of every cuckoo filter between two chtbench binaries, interleaved round by
# round so that both see the same machine noise; prints one line per measurement and, at the
# end, medians and new/old ratios (the raw lines go to stderr as well, to watch progress).
#
#   scripts/ab_filters.sh OLD_CHTBENCH NEW_CHTBENCH [ROUNDS] [CAPACITY] 2>&1 > results.txt
#
# Per structure: `chtbench filter` (fill to 95%: construction, its tail from 90% to 95%,
# positive / negative lookups, batched positive lookups) and `chtbench run -u 10` (5% inserts, 5% erases, 90% lookups on a
# filter half full). Sequential filters run on one thread, concurrent ones on two. AB_STRUCTURES
# (a space-separated list) narrows the set; AB_FILTER_ARGS adds `chtbench filter` options (e.g.
# "--insert-batch 1024": construction through insert_many, whose path searches run in groups).
set -euo pipefail
old=$1 new=$2 rounds=${3:-3} capacity=${4:-16777216}
read -r -a structures <<<"${AB_STRUCTURES:-cuckoo-filter cuckoo-filter-semisorted ccf-global-pf \
ccf-striped ccf-striped-locking ccf-cop lf-cuckoo-filter}"
read -r -a filter_args <<<"${AB_FILTER_ARGS:-}"
threads_of() { case $1 in cuckoo-filter*) echo 1 ;; *) echo 2 ;; esac; }
column() {  # column NAME CSV: the value of column NAME in a two-line CSV
  awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
                         NR == 2 { print $c }' <<<"$2"
}

echo "# scripts/ab_filters.sh $old $new $rounds $capacity   (AB_FILTER_ARGS: ${AB_FILTER_ARGS:-none})"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), date: $(date -u +%F)"
for ((round = 1; round <= rounds; round++)); do
  for s in "${structures[@]}"; do
    n=$(threads_of "$s")
    # Alternate which side runs first, so that neither always meets the machine in one state.
    sides=(old new)
    ((round % 2)) || sides=(new old)
    for side in "${sides[@]}"; do
      bin=${!side}
      f=$("$bin" filter -s "$s" --capacity "$capacity" --fill 0.95 -n "$n" \
            ${filter_args[@]+"${filter_args[@]}"} --format csv)
      r=$("$bin" run -s "$s" -n "$n" -u 10 -i $((capacity / 2)) --capacity "$capacity" \
            -d 1000 --format csv)
      for metric in construction_mops construction_tail_mops lookup_positive_mops lookup_negative_mops \
                    lookup_positive_batched_mops; do
        echo "$side $s $metric $(column "$metric" "$f")"
      done
      echo "$side $s mixed_u10_mops $(column throughput_mops "$r")"
    done
  done
done | tee /dev/stderr | awk -f "$(dirname "$0")/ab_summary.awk"
