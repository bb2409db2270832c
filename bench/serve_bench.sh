#!/usr/bin/env bash
# `ccf serve` against Debian's redis-server, in one run on this machine (docs/server.md):
# redis-benchmark -c 50 -P 16 -n N -r 10000000 runs CF.ADD then CF.EXISTS on one filter
# reserved for 20M items (a fresh one each round), and SET then GET on redis-server (emptied
# each round), ROUNDS times interleaved. Prints
# every round's rates and latencies (and ECHO on ccf serve: the set-up's ceiling, no filter
# touched), the per-round ratios and their medians, and the memory
# per item (CF.INFO and the server's RSS against the library filter's table).
# Usage: bench/serve_bench.sh [ROUNDS (3)] [REQUESTS (2000000)] [THREADS] [BUSY_POLL_US (50)]
# THREADS, ccf serve's I/O threads, defaults to the cores redis-benchmark (one thread) leaves:
# nproc - 1, at least 1. On 2 cores a second I/O thread only takes turns with the client.
# BUSY_POLL_US is ccf serve's --busy-poll: its threads poll for work that long before they
# sleep, so the client's writes need not wake them (docs/server.md, "Busy polling"); 0: off.
# Both servers listen on loopback ports and are stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
requests=${2:-2000000}
threads=${3:-$(($(nproc) > 1 ? $(nproc) - 1 : 1))}
busy_poll=${4:-50}
bench=serve_bench
source bench/serve_servers.sh
start_servers "$threads" "$busy_poll"

# One redis-benchmark run: prints "rps p50 p99" (ms).
run() {
  redis-benchmark -p "$1" -c 50 -P 16 -n "$requests" -r 10000000 --csv "${@:2}" 2>/dev/null |
    tail -1 | tr -d '"' | awk -F, '{print $2, $5, $7}'
}

# A field of CF.INFO KEY: field KEY NAME.
field() { redis-cli -p "$ccf_port" CF.INFO "$1" | awk -v name="$2" 'prev == name {print; exit} {prev = $0}'; }

echo "# ccf serve vs redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), $(date -u +%F), $(nproc) cores, $(uname -m)"
echo "# redis-benchmark -c 50 -P 16 -n $requests -r 10000000; ccf serve --threads $threads --busy-poll $busy_poll; each round: FLUSHALL, CF.RESERVE f 20000000"
echo "# round structure rps p50_ms p99_ms"
declare -a add_ratio exists_ratio
for round in $(seq "$rounds"); do
  # Every round starts from empty servers. CF.ADD adds a copy of an item already present (as
  # RedisBloom's does), and an item added more than 2 x BUCKETSIZE times fills its bucket pair:
  # the filter grows by a sub-filter, which later adds fill (a copy that finds its pair full
  # there takes a free slot of the older one's). 2M random adds of 10M keys bring a few items
  # to 5 copies, so a round ends with 1 or 2 sub-filters; rounds of adds on one filter would
  # keep adding sub-filters, each searched by every negative CF.EXISTS.
  redis-cli -p "$ccf_port" FLUSHALL >/dev/null
  redis-cli -p "$ccf_port" CF.RESERVE f 20000000 >/dev/null
  redis-cli -p "$redis_port" FLUSHALL >/dev/null
  read -r add p50a p99a < <(run "$ccf_port" CF.ADD f __rand_int__)
  read -r set p50s p99s < <(run "$redis_port" SET __rand_int__ xxx)
  read -r exists p50e p99e < <(run "$ccf_port" CF.EXISTS f __rand_int__)
  # A negative CF.EXISTS searches every sub-filter: how many the round's adds made.
  subs=$(field f "Number of filters")
  read -r get p50g p99g < <(run "$redis_port" GET __rand_int__)
  # The ceiling of this set-up: ECHO touches no filter, so its rate is what redis-benchmark and
  # the server's request path reach on these cores (client and servers share them).
  read -r echo_rps p50c p99c < <(run "$ccf_port" ECHO __rand_int__)
  echo "$round ccf:CF.ADD $add $p50a $p99a"
  echo "$round redis:SET $set $p50s $p99s"
  echo "$round ccf:CF.EXISTS $exists $p50e $p99e sub-filters=$subs"
  echo "$round redis:GET $get $p50g $p99g"
  echo "$round ccf:ECHO $echo_rps $p50c $p99c"
  add_ratio+=("$(awk -v a="$add" -v b="$set" 'BEGIN{printf "%.2f", a / b}')")
  exists_ratio+=("$(awk -v a="$exists" -v b="$get" 'BEGIN{printf "%.2f", a / b}')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo "# per-round CF.ADD/SET: ${add_ratio[*]} (median $(median "${add_ratio[@]}"))"
echo "# per-round CF.EXISTS/GET: ${exists_ratio[*]} (median $(median "${exists_ratio[@]}"))"

# Memory: a filter filled near its capacity. CF.INFO's Size is the sub-filters' own
# memory_bytes() (the library's striped filter: table and stripes) plus the key's object; the
# server's RSS grows by what the filter's pages cost.
rss() { redis-cli -p "$ccf_port" INFO memory | tr -d '\r' | sed -n 's/^used_memory_rss://p'; }
rss_before=$(rss)
redis-cli -p "$ccf_port" CF.RESERVE m 4000000 BUCKETSIZE 4 EXPANSION 0 >/dev/null
redis-benchmark -p "$ccf_port" -c 50 -P 16 -n 3800000 -r 1000000000 -q CF.ADD m __rand_int__ >/dev/null 2>&1
rss_after=$(rss)
items=$(field m "Number of items inserted")
size=$(field m Size)
slots=$(($(field m "Number of buckets") * 4))
bits() { awk -v b="$1" -v n="$items" 'BEGIN{printf "%.2f", 8 * b / n}'; }
echo "# memory: CF.RESERVE m 4000000 BUCKETSIZE 4 EXPANSION 0, $items items in $slots slots (load $(awk -v n="$items" -v s="$slots" 'BEGIN{printf "%.3f", n / s}'))"
echo "# memory: CF.INFO Size $size bytes = $(bits "$size") bits/item; server RSS grew $((rss_after - rss_before)) bytes = $(bits $((rss_after - rss_before))) bits/item"
