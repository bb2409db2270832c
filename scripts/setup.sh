#!/usr/bin/env bash
# Installs everything ccf needs on Debian 12 (idempotent), then configures and builds the
# Release preset. Usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake git pkg-config clang-format
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libxxhash-dev libtbb-dev liburcu-dev libcds-dev libabsl-dev libhwloc-dev libdivide-dev
  libcuckoo-dev libssl-dev wamerican
  libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev
  redis-server redis-tools python3-redis
  gnuplot-nox python3
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

if [[ ${1:-} != --no-build ]]; then
  cmake --preset release >/dev/null
  cmake --build --preset release -j "$(nproc)"
fi
