#!/usr/bin/env bash
# Builds and runs bench/peers/lf_paper_bench.cpp: the published code of "Lock-free concurrent
# cuckoo filter" (J. Software 2025) against ccf's lock-free and striped filters, same keys and
# table shape (docs/benchmarks.md, "The lock-free filter against the paper's code").
# Their code is not part of this repository: check it out anywhere and name it.
#   git clone https://github.com/wanghanchengchn/lock-free-concurrent-cuckoo-filter /tmp/lfcf
#   git -C /tmp/lfcf checkout 2eb10adea6dc83be3d37669d560ad6e80ca94d61
#   bench/peers/lf_paper.sh /tmp/lfcf               # 3 rounds, threads 1, 2, 8, L = 20 and 12
#   bench/peers/lf_paper.sh /tmp/lfcf --rounds 1    # arguments after the checkout go to the harness
set -euo pipefail
cd "$(dirname "$0")/../.."
theirs=${1:?usage: bench/peers/lf_paper.sh THEIRS_CHECKOUT [harness arguments]}
shift
header="$theirs/src/filters/lf_multislot_kcas_bfs_cuckoo.h"
[[ -f $header ]] || { echo "lf_paper.sh: $header not found: is $theirs their checkout?" >&2; exit 2; }
mkdir -p build/peers
${CXX:-g++} -std=c++20 -O3 -march=x86-64-v3 -DNDEBUG -pthread -Iinclude -I"$theirs/src" \
  bench/peers/lf_paper_bench.cpp -o build/peers/lf_paper_bench
echo "ccf $(git log -1 --format='%h %cd' --date=short); theirs $(git -C "$theirs" log -1 --format=%h 2>/dev/null || echo '?')"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cpus; $(date -u '+%F %T UTC')"
exec build/peers/lf_paper_bench "$@"
