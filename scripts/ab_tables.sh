#!/usr/bin/env bash
# A/B comparison of hash tables between two chtbench binaries, interleaved round by round so
# that both see the same machine noise (as scripts/ab_filters.sh does for the filters):
#
#   scripts/ab_tables.sh OLD_CHTBENCH NEW_CHTBENCH [ROUNDS] [ITEMS] 2>&1 > results.txt
#
# Per table and update ratio: `chtbench run -n 2 -u U -i ITEMS -r 2*ITEMS` (keys of the
# hash-table workload, capacity = range: half full). AB_STRUCTURES narrows the tables (default:
# clht-lb cuckoo-map tbb-hash-map, the last unchanged by any ccf change: a control), AB_UPDATES
# the update percentages (default: 0 10); AB_ARGS adds run options (e.g. "--keys scrambled").
set -euo pipefail
old=$1 new=$2 rounds=${3:-5} items=${4:-8388608}
read -r -a structures <<<"${AB_STRUCTURES:-clht-lb cuckoo-map tbb-hash-map}"
read -r -a updates <<<"${AB_UPDATES:-0 10}"
read -r -a extra <<<"${AB_ARGS:-}"

echo "# scripts/ab_tables.sh $old $new $rounds $items   (AB_ARGS: ${AB_ARGS:-none})"
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), date: $(date -u +%F)"
for ((round = 1; round <= rounds; round++)); do
  for s in "${structures[@]}"; do
    for u in "${updates[@]}"; do
      sides=(old new)
      ((round % 2)) || sides=(new old)  # neither side always meets the machine in one state
      for side in "${sides[@]}"; do
        bin=${!side}
        mops=$("$bin" run -s "$s" -n 2 -u "$u" -i "$items" -r $((2 * items)) -d 1000 \
                 ${extra[@]+"${extra[@]}"} --format csv | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "throughput_mops") c = i }
                                         NR == 2 { print $c }')
        echo "$side $s u${u}_2threads_mops $mops"
      done
    done
  done
done | tee /dev/stderr | awk -f "$(dirname "$0")/ab_summary.awk"
