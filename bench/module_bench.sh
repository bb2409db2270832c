#!/usr/bin/env bash
# ccf-redis.so inside Debian's redis-server against `ccf serve`, in one run on this machine
# (docs/scale_out.md). redis-benchmark -c 50 -P 16 -r 10000000 runs, on one filter reserved for
# 20M items on each server: CF.ADD and CF.EXISTS (-n N), CF.MEXISTS and CF.INSERT with 16 items
# a command (-n N/16: as many items as the single-item runs). ROUNDS rounds, the servers
# interleaved within each. Prints every run's rate and latencies, the per-round ratios and
# their medians, and the memory per item: Redis's MEMORY USAGE and CF.INFO's Size of a filter
# filled near its capacity.
#
# BASELINE_MODULE=path/to/other/ccf-redis.so adds a third server with that module (e.g. one
# built before a change) and the ratios module / baseline.
# Usage: bench/module_bench.sh [ROUNDS (3)] [REQUESTS (2000000)]
# Every server listens on a loopback port and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
requests=${2:-2000000}
ccf=build/release/tools/ccf/ccf
module=$(pwd)/build/release/tools/redis_module/ccf-redis.so
baseline=${BASELINE_MODULE:-}
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "module_bench: $tool is missing (scripts/setup.sh)" >&2; exit 2; }
done
[[ -x $ccf && -f $module ]] || { echo "module_bench: build first (cmake --build --preset release)" >&2; exit 2; }

work=$(mktemp -d)
ccf_pid=""
redis_ports=()
cleanup() {
  [[ -n $ccf_pid ]] && kill "$ccf_pid" 2>/dev/null && wait "$ccf_pid" 2>/dev/null
  for port in "${redis_ports[@]}"; do redis-cli -p "$port" shutdown nosave >/dev/null 2>&1; done
  rm -rf "$work"
}
trap cleanup EXIT

"$ccf" serve --bind 127.0.0.1 --port 0 --threads 2 >"$work/ccf.out" 2>&1 &
ccf_pid=$!
for _ in $(seq 100); do grep -qs listening "$work/ccf.out" && break; sleep 0.05; done
ccf_port=$(sed -n 's/^listening 127.0.0.1://p' "$work/ccf.out")
[[ -n $ccf_port ]] || { echo "module_bench: ccf serve did not start" >&2; exit 3; }

# Starts redis-server with module $1 on a free port from $2 on; prints the port.
start_redis() {
  for port in $(seq "$2" $(($2 + 100))); do
    if redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
        --dir "$work" --logfile "$work/redis-$port.log" --loadmodule "$1" >/dev/null 2>&1; then
      for _ in $(seq 50); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && { echo "$port"; return; }
        sleep 0.1
      done
    fi
  done
  echo "module_bench: redis-server with $1 did not start" >&2
  exit 3
}
module_port=$(start_redis "$module" 16579)
redis_ports+=("$module_port")
servers=("ccf:$ccf_port" "module:$module_port")
if [[ -n $baseline ]]; then
  baseline_port=$(start_redis "$baseline" 16779)
  redis_ports+=("$baseline_port")
  servers+=("baseline:$baseline_port")
fi
for server in "${servers[@]}"; do redis-cli -p "${server#*:}" CF.RESERVE f 20000000 >/dev/null; done

# One redis-benchmark run: prints "rps p50 p99" (ms).
run() {
  redis-benchmark -p "$1" -c 50 -P 16 -n "$2" -r 10000000 --csv "${@:3}" 2>/dev/null |
    tail -1 | tr -d '"' | awk -F, '{print $2, $5, $7}'
}
sixteen=$(printf ' __rand_int__%.0s' $(seq 16))
commands=("CF.ADD f __rand_int__" "CF.EXISTS f __rand_int__" "CF.MEXISTS f$sixteen"
          "CF.INSERT f ITEMS$sixteen")

echo "# ccf-redis.so in redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') vs ccf serve --threads 2, $(date -u +%F), $(nproc) cores, $(uname -m)"
echo "# redis-benchmark -c 50 -P 16 -r 10000000, -n $requests (16-item commands: -n $((requests / 16))); CF.RESERVE f 20000000${baseline:+; baseline module $baseline}"
echo "# round server command rps p50_ms p99_ms"
declare -A rate
for round in $(seq "$rounds"); do
  for command in "${commands[@]}"; do
    name=${command%% *}
    n=$requests
    [[ $command == *"$sixteen"* ]] && n=$((requests / 16))
    # The servers' order alternates round by round.
    order=("${servers[@]}")
    ((round % 2 == 0)) && order=($(printf '%s\n' "${servers[@]}" | tac))
    for server in "${order[@]}"; do
      # shellcheck disable=SC2086  # the command's words are separate arguments
      read -r rps p50 p99 < <(run "${server#*:}" "$n" $command)
      echo "$round ${server%%:*} $name $rps $p50 $p99"
      rate[$round.${server%%:*}.$name]=$rps
    done
  done
done

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ratios() {  # $1 over $2 for command $3, per round
  local out=()
  for round in $(seq "$rounds"); do
    out+=("$(awk -v a="${rate[$round.$1.$3]}" -v b="${rate[$round.$2.$3]}" 'BEGIN{printf "%.2f", a / b}')")
  done
  echo "# $1/$2 $3: ${out[*]} (median $(median "${out[@]}"))"
}
for command in "${commands[@]}"; do ratios module ccf "${command%% *}"; done
if [[ -n $baseline ]]; then
  for command in "${commands[@]}"; do ratios module baseline "${command%% *}"; done
fi

# Memory: a filter filled near its capacity in the module. MEMORY USAGE is what Redis reports
# for the key (the module's mem_usage, CF.INFO's Size, plus the key's own bytes).
cli() { redis-cli -p "$module_port" "$@"; }
field() { cli CF.INFO "$1" | awk -v name="$2" 'prev == name {print; exit} {prev = $0}'; }
cli CF.RESERVE m 4000000 BUCKETSIZE 4 EXPANSION 0 >/dev/null
redis-benchmark -p "$module_port" -c 50 -P 16 -n 3800000 -r 1000000000 -q CF.ADD m __rand_int__ >/dev/null 2>&1
items=$(field m "Number of items inserted")
size=$(field m Size)
usage=$(cli MEMORY USAGE m)
slots=$(($(field m "Number of buckets") * 4))
bits() { awk -v b="$1" -v n="$items" 'BEGIN{printf "%.2f", 8 * b / n}'; }
echo "# memory: CF.RESERVE m 4000000 BUCKETSIZE 4 EXPANSION 0, $items items in $slots slots (load $(awk -v n="$items" -v s="$slots" 'BEGIN{printf "%.3f", n / s}'))"
echo "# memory: MEMORY USAGE $usage bytes = $(bits "$usage") bits/item; CF.INFO Size $size bytes = $(bits "$size") bits/item"
