#!/usr/bin/env bash
# The server's own CPU time per request: `ccf serve` answering BF.EXISTS, BF.ADD, CF.EXISTS,
# CF.ADD and ECHO beside Debian's redis-server answering GET and SET, in one run
# (docs/server.md, "CPU per request"). On two cores the single-threaded redis-benchmark client
# bounds the throughput of both servers, so the rate alone cannot tell them apart; the CPU
# each server spends per request (utime + stime from /proc/PID/stat across one redis-benchmark
# run, divided by its requests) can. Rates and p50/p99 latencies are printed as well.
#
# Each round: FLUSHALL both; BF.RESERVE b 0.01 20000000 and CF.RESERVE c 20000000 (no growth
# during the round); then, interleaved, BF.ADD / SET / BF.EXISTS / GET / CF.ADD / CF.EXISTS /
# ECHO, each `redis-benchmark -c 50 -P 16 -n REQUESTS -r 10000000`. The last lines: medians of
# the per-round ratios, then the memory of a Bloom key filled near its capacity (BF.INFO's Size,
# which is the library filter's memory_bytes(), against the growth of the server's RSS).
# ccf serve runs one I/O thread without busy polling, so that every CPU tick it spends is work.
# Usage: bench/serve_cpu_bench.sh [ROUNDS (3)] [REQUESTS (1000000)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
requests=${2:-1000000}
bench=serve_cpu_bench
source bench/serve_servers.sh
start_servers 1 0
ticks_per_second=$(getconf CLK_TCK)

# CPU ticks (user + system) the process has used so far.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# One redis-benchmark run against PORT while measuring PID: prints "rps p50_ms p99_ms cpu_us".
run() {
  local port=$1 pid=$2 before after line
  shift 2
  before=$(ticks "$pid")
  line=$(redis-benchmark -p "$port" -c 50 -P 16 -n "$requests" -r 10000000 --csv "$@" 2>/dev/null |
    tail -1 | tr -d '"')
  after=$(ticks "$pid")
  awk -F, -v t=$((after - before)) -v hz="$ticks_per_second" -v n="$requests" \
    '{printf "%s %s %s %.3f\n", $2, $5, $7, t / hz * 1e6 / n}' <<<"$line"
}

cpu_model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "# ccf serve (--threads 1 --busy-poll 0) vs redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), $(date -u +%F), $(nproc) cores, $cpu_model"
echo "# redis-benchmark -c 50 -P 16 -n $requests -r 10000000; each round: FLUSHALL, BF.RESERVE b 0.01 20000000, CF.RESERVE c 20000000"
echo "# round server:command rps p50_ms p99_ms cpu_us_per_request"
declare -A cpu
declare -a bf_exists_get bf_add_set cf_exists_get cf_add_set
for round in $(seq "$rounds"); do
  redis-cli -p "$ccf_port" FLUSHALL >/dev/null
  redis-cli -p "$ccf_port" BF.RESERVE b 0.01 20000000 >/dev/null
  redis-cli -p "$ccf_port" CF.RESERVE c 20000000 >/dev/null
  redis-cli -p "$redis_port" FLUSHALL >/dev/null
  for step in "ccf BF.ADD b" "redis SET" "ccf BF.EXISTS b" "redis GET" "ccf CF.ADD c" \
              "ccf CF.EXISTS c" "ccf ECHO"; do
    read -r server command key <<<"$step"
    if [[ $server == ccf ]]; then
      result=$(run "$ccf_port" "$ccf_pid" "$command" ${key:+"$key"} __rand_int__)
    elif [[ $command == SET ]]; then
      result=$(run "$redis_port" "$redis_pid" SET __rand_int__ xxx)
    else
      result=$(run "$redis_port" "$redis_pid" GET __rand_int__)
    fi
    echo "$round $server:$command $result"
    cpu[$command]=$(awk '{print $4}' <<<"$result")
  done
  ratio() { awk -v a="${cpu[$1]}" -v b="${cpu[$2]}" 'BEGIN{printf "%.2f", a / b}'; }
  bf_exists_get+=("$(ratio BF.EXISTS GET)")
  bf_add_set+=("$(ratio BF.ADD SET)")
  cf_exists_get+=("$(ratio CF.EXISTS GET)")
  cf_add_set+=("$(ratio CF.ADD SET)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "# CPU per request, ccf over redis (per round; median): BF.EXISTS/GET ${bf_exists_get[*]} ($(median "${bf_exists_get[@]}")), BF.ADD/SET ${bf_add_set[*]} ($(median "${bf_add_set[@]}")), CF.EXISTS/GET ${cf_exists_get[*]} ($(median "${cf_exists_get[@]}")), CF.ADD/SET ${cf_add_set[*]} ($(median "${cf_add_set[@]}"))"

# Memory: a large non-scaling Bloom key (about 48 MB, so that rounding its mapping to whole huge
# pages weighs under 5%) given 2M random items, enough to touch every page of its bit array.
# The same clients' lookups of a missing key run first, so that what their buffers cost is in
# the RSS before.
rss() { redis-cli -p "$ccf_port" INFO memory | tr -d '\r' | sed -n 's/^used_memory_rss://p'; }
info() { redis-cli -p "$ccf_port" BF.INFO m "$1" | tail -1; }
redis-cli -p "$ccf_port" FLUSHALL >/dev/null
redis-benchmark -p "$ccf_port" -c 50 -P 16 -n 1000000 -r 1000000000 -q BF.EXISTS m __rand_int__ >/dev/null 2>&1
rss_before=$(rss)
redis-cli -p "$ccf_port" BF.RESERVE m 0.01 40000000 NONSCALING >/dev/null
redis-benchmark -p "$ccf_port" -c 50 -P 16 -n 2000000 -r 1000000000 -q BF.ADD m __rand_int__ >/dev/null 2>&1
rss_after=$(rss)
items=$(info ITEMS)
size=$(info SIZE)
capacity=$(info CAPACITY)
bits() { awk -v b="$1" -v n="$capacity" 'BEGIN{printf "%.2f", 8 * b / n}'; }
echo "# memory: BF.RESERVE m 0.01 40000000 NONSCALING, $items items added: BF.INFO Size $size bytes = $(bits "$size") bits per item of capacity; server RSS grew $((rss_after - rss_before)) bytes = $(bits $((rss_after - rss_before))) bits per item of capacity ($(awk -v r=$((rss_after - rss_before)) -v s="$size" 'BEGIN{printf "%.3f", r / s}') x Size)"
