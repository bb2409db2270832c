#!/usr/bin/env bash
# Builds and runs bench/peers/tables_bench.cpp: ccf's concurrent hash maps (ClhtLb, ClhtLf,
# CuckooMap, HopscotchMap<32>) beside the peers named on the command line, the same workloads in
# one run, interleaved by rounds (the .cpp's header describes them).
# Their code is not part of this repository: check it out anywhere and name it. Each peer is
# optional; the Debian ones need their packages (apt-get install -y libtbb-dev libxxhash-dev
# libcuckoo-dev).
#   growt (needs its utils submodule and Debian's xxhash):
#     git clone https://github.com/TooBiased/growt /tmp/peers/growt
#     git -C /tmp/peers/growt checkout 0c1148ebcdfd4c04803be79706533ad09cc81d37
#     git clone https://github.com/TooBiased/utils_tm /tmp/peers/growt/utils
#     git -C /tmp/peers/growt/utils checkout ada7276d8fec43f463a50c86909535976ca005aa
#     (the commit growt pins: git -C /tmp/peers/growt submodule update --init utils does the same)
#   Boost.Unordered's concurrent_flat_map (Debian 12's Boost 1.74 is too old): boostorg/unordered
#   and the libraries its headers use, all at tag boost-1.85.0
#     for r in unordered assert config container_hash core describe mp11 predef static_assert \
#         throw_exception; do
#       git clone https://github.com/boostorg/$r /tmp/peers/boost/$r
#       git -C /tmp/peers/boost/$r checkout boost-1.85.0
#     done
#   ParlayHash (its include/ carries the ParlayLib headers it builds with; the current
#   cmuparlay/parlaylib headers do not compile with it, so no ParlayLib checkout):
#     git clone https://github.com/cmuparlay/parlayhash /tmp/peers/parlayhash
#     git -C /tmp/peers/parlayhash checkout 081408ba6111ce78b5add9129f8d902fa2fea58f
#   libcuckoo and TBB: Debian's libcuckoo-dev (0.3.1) and libtbb-dev (oneTBB 2021.8).
# Run (options naming peers come first; the rest go to the harness):
#   bench/peers/tables.sh --growt /tmp/peers/growt \
#     --boost-include "$(printf '%s:' /tmp/peers/boost/*/include)" \
#     --parlay /tmp/peers/parlayhash --libcuckoo --tbb          # i = 2^23, 2000 ms, 3 rounds
#   bench/peers/tables.sh --tbb --items 65536 --ms 200 --rounds 1   # smoke test, ccf and TBB
set -euo pipefail
cd "$(dirname "$0")/../.."
die() { echo "tables.sh: $*" >&2; exit 2; }
flags=() libs=() versions=()
commit() { git -C "$1" log -1 --format=%h 2>/dev/null || echo '?'; }
while (($#)); do
  case $1 in
    --growt)
      dir=${2:?--growt needs a directory}; shift 2
      [[ -f $dir/data-structures/table_config.hpp ]] || die "$dir/data-structures/table_config.hpp not found: is $dir a growt checkout?"
      [[ -f $dir/utils/default_hash.hpp ]] || die "$dir/utils/default_hash.hpp not found: check out growt's utils submodule (TooBiased/utils_tm) into $dir/utils"
      [[ -f /usr/include/xxh3.h ]] || die "/usr/include/xxh3.h not found: apt-get install -y libxxhash-dev"
      flags+=(-DHAVE_GROWT -isystem "$dir")
      versions+=("growt $(commit "$dir") (utils $(commit "$dir/utils"))") ;;
    --boost-include)
      dirs=${2:?--boost-include needs DIR1:DIR2:...}; shift 2
      found=
      IFS=: read -ra list <<< "$dirs"
      for d in "${list[@]}"; do
        [[ -n $d ]] || continue
        [[ -d $d ]] || die "--boost-include: $d is not a directory"
        flags+=(-isystem "$d")
        [[ -f $d/boost/unordered/concurrent_flat_map.hpp ]] && found=$d
      done
      [[ -n $found ]] || die "boost/unordered/concurrent_flat_map.hpp not found under --boost-include $dirs"
      versions+=("boost.unordered $(git -C "$found" describe --tags 2>/dev/null || commit "$found")")
      flags+=(-DHAVE_BOOST) ;;
    --parlay)
      dir=${2:?--parlay needs a directory}; shift 2
      [[ -f $dir/include/parlay_hash/unordered_map.h ]] || die "$dir/include/parlay_hash/unordered_map.h not found: is $dir a ParlayHash checkout?"
      flags+=(-DHAVE_PARLAY -isystem "$dir/include")
      versions+=("parlayhash $(commit "$dir")") ;;
    --libcuckoo)
      shift
      [[ -f /usr/include/libcuckoo/cuckoohash_map.hh ]] || die "/usr/include/libcuckoo/cuckoohash_map.hh not found: apt-get install -y libcuckoo-dev"
      flags+=(-DHAVE_LIBCUCKOO)
      versions+=("libcuckoo $(dpkg-query -W -f='${Version}' libcuckoo-dev 2>/dev/null || echo '?')") ;;
    --tbb)
      shift
      [[ -f /usr/include/tbb/concurrent_hash_map.h ]] || die "/usr/include/tbb/concurrent_hash_map.h not found: apt-get install -y libtbb-dev"
      flags+=(-DHAVE_TBB) libs+=(-ltbb)
      versions+=("tbb $(dpkg-query -W -f='${Version}' libtbb-dev 2>/dev/null || echo '?')") ;;
    --) shift; break ;;
    *) break ;;
  esac
done
mkdir -p build/peers
${CXX:-g++} -std=c++20 -O3 -march=native -DNDEBUG -pthread -Iinclude "${flags[@]}" \
  bench/peers/tables_bench.cpp -o build/peers/tables_bench "${libs[@]}"
line="ccf $(git log -1 --format='%h %cd' --date=short)"
for v in "${versions[@]}"; do line+="; $v"; done
echo "$line"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cpus; $(date -u '+%F %T UTC')"
exec build/peers/tables_bench "$@"
