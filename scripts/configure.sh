#!/usr/bin/env bash
# Configures one CMake preset (release, asan, tsan, fuzz) in build/PRESET. A tree that an older
# checkout configured with another generator (the presets use Ninja) is removed first: CMake
# refuses to switch generators in place. Usage: scripts/configure.sh PRESET
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:?usage: scripts/configure.sh PRESET}
cache=build/$preset/CMakeCache.txt
if [[ -f $cache ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  echo "configure: build/$preset was made by another generator; starting it anew" >&2
  rm -rf "build/$preset"
fi
cmake --preset "$preset" >/dev/null
