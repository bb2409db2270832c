#!/usr/bin/env bash
# Installs everything ccf needs on Debian 12 (idempotent), then configures the Release preset and
# builds what the evaluation runs (scripts/evaluate.sh): chtbench, log_bench, the ccf tool and the
# Redis module. `--all` builds every target of the preset (tests included); `--no-build` nothing.
# Usage: scripts/setup.sh [--no-build | --all]
set -euo pipefail
cd "$(dirname "$0")/.."

build=yes targets=(--target chtbench log_bench ccf_tool ccf_redis)
case ${1:-} in
  --no-build) build=no ;;
  --all) targets=() ;;
  "") ;;
  *) echo "setup: unknown option '$1' (--no-build or --all)" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build ccache git pkg-config clang-format
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libxxhash-dev libtbb-dev liburcu-dev libcds-dev libabsl-dev libhwloc-dev libdivide-dev
  libcuckoo-dev libssl-dev wamerican
  libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev
  redis-server redis-tools python3-redis
  gnuplot-nox python3 strace
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-hypothesis
  python3-setuptools python3-pip python3-venv python3-flor
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[[ $build == no ]] && exit 0
scripts/configure.sh release
cmake --build --preset release -j "$(nproc)" "${targets[@]}"
