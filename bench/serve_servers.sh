# Sourced by the server benchmarks (serve_bench.sh, serve_cpu_bench.sh): checks the tools,
# then start_servers THREADS BUSY_POLL_US starts `ccf serve` and Debian's redis-server on free
# loopback ports, setting ccf_pid, ccf_port, redis_pid and redis_port; both are stopped, and
# their scratch folder $work removed, when the calling script exits. $bench names the caller.
ccf=build/release/tools/ccf/ccf
for tool in redis-server redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "$bench: $tool is missing (scripts/setup.sh)" >&2; exit 2; }
done
[[ -x $ccf ]] || { echo "$bench: build $ccf first (cmake --build --preset release)" >&2; exit 2; }

work=$(mktemp -d)
ccf_pid=""
redis_port=""
cleanup() {
  [[ -n $ccf_pid ]] && kill "$ccf_pid" 2>/dev/null && wait "$ccf_pid" 2>/dev/null
  [[ -n $redis_port ]] && redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

start_servers() {
  "$ccf" serve --bind 127.0.0.1 --port 0 --threads "$1" --busy-poll "$2" >"$work/ccf.out" 2>&1 &
  ccf_pid=$!
  for _ in $(seq 100); do grep -qs listening "$work/ccf.out" && break; sleep 0.05; done
  ccf_port=$(sed -n 's/^listening 127.0.0.1://p' "$work/ccf.out")
  [[ -n $ccf_port ]] || { echo "$bench: ccf serve did not start" >&2; exit 3; }
  local port
  for port in $(seq 16379 16479); do
    if redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
        --dir "$work" --logfile "$work/redis.log" --pidfile "$work/redis.pid" >/dev/null 2>&1; then
      sleep 0.3
      redis-cli -p "$port" ping >/dev/null 2>&1 && { redis_port=$port; break; }
    fi
  done
  [[ -n $redis_port ]] || { echo "$bench: redis-server did not start" >&2; exit 3; }
  redis_pid=$(cat "$work/redis.pid")
}
