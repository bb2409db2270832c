#!/usr/bin/env bash
# Builds and runs bench/peers/fastfilter_bloom_bench.cpp: fastfilter_cpp's blocked Bloom filter
# (SimdBlockFilterFixed) beside ccf's blocked Bloom filters at the same memory, one thread
# (docs/benchmarks.md, peers). Their code is not part of this repository: check it out anywhere
# and name it.
#   git clone https://github.com/FastFilter/fastfilter_cpp /tmp/fastfilter
#   git -C /tmp/fastfilter checkout 924e5608fb15566bc15913f7cddfeb4a095445b2
#   bench/peers/fastfilter_bloom.sh /tmp/fastfilter          # 2^26 items, 3 rounds
#   bench/peers/fastfilter_bloom.sh /tmp/fastfilter 20 1     # arguments go to the harness
set -euo pipefail
cd "$(dirname "$0")/../.."
theirs=${1:?usage: bench/peers/fastfilter_bloom.sh THEIRS_CHECKOUT [log2 items] [rounds]}
shift
header="$theirs/src/bloom/simd-block-fixed-fpp.h"
[[ -f $header ]] || { echo "fastfilter_bloom.sh: $header not found: is $theirs their checkout?" >&2; exit 2; }
mkdir -p build/peers
# Their headers ask for -fno-strict-aliasing (their SIMD casts).
${CXX:-g++} -std=c++20 -O3 -march=x86-64-v3 -DNDEBUG -fno-strict-aliasing -Iinclude -I"$theirs/src" \
  bench/peers/fastfilter_bloom_bench.cpp -o build/peers/fastfilter_bloom_bench
echo "ccf $(git log -1 --format='%h %cd' --date=short); theirs $(git -C "$theirs" log -1 --format=%h 2>/dev/null || echo '?')"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cpus; $(date -u '+%F %T UTC')"
exec build/peers/fastfilter_bloom_bench "$@"
