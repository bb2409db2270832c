#!/usr/bin/env bash
# Runs each test executable given under strace and fails if any of them starts a thread (a
# clone or clone3 system call): tests/CMakeLists.txt leaves these executables out of the
# ThreadSanitizer build because they are single-threaded, and this keeps that claim true.
# Usage: single_threaded_check.sh TEST_EXECUTABLE...
set -euo pipefail
command -v strace >/dev/null || { echo "single_threaded_check: strace is not installed" >&2; exit 1; }
status=0
for test in "$@"; do
  trace=$(mktemp)
  if ! strace -f -qq -e trace=clone,clone3 -o "$trace" "$test" >/dev/null 2>&1; then
    echo "FAIL: $test failed under strace" >&2
    status=1
  elif grep -q 'clone' "$trace"; then
    echo "FAIL: $test started a thread; remove it from ccf_single_threaded_tests:" >&2
    head -n 3 "$trace" >&2
    status=1
  else
    echo "ok: $(basename "$test") starts no thread"
  fi
  rm -f "$trace"
done
exit "$status"
