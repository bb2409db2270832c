#!/usr/bin/env bash
# Usage: prefetch_kept_test.sh OBJECT
# OBJECT is tests/prefetch_kept.cpp compiled at -O2. Every filter and map named below must have
# prefetch instructions in some function of its own (its batch pipeline, its staging): at -O2,
# GCC used to delete the calls of functions that only prefetch (detail/prefetch.hpp). The
# concurrent filters' must also have write-intent prefetches (PREFETCHW).
set -euo pipefail
object=$1
listing=$(objdump -d --no-show-raw-insn -C "$object")
status=0
# expect INSTRUCTION NAME...: every NAME has INSTRUCTION in the code of some function of its own.
expect() {
  local instruction=$1 name count
  shift
  for name in "$@"; do
    count=$(awk -v name="$name" -v instruction="$instruction" '
      /^[0-9a-f]+ <.*>:$/ { current = $0 }
      $2 ~ "^" instruction && index(current, name) > 0 { n++ }
      END { print n + 0 }' <<<"$listing")
    echo "$name: $count $instruction instructions"
    if ((count == 0)); then
      echo "FAIL: no $instruction left in the code of $name at -O2" >&2
      status=1
    fi
  done
}
expect prefetch 'CuckooFilter<ccf::PackedTable<12u, 4u>' 'AtomicPackedTable<12u, 4u>' \
  'LockFreeCuckooFilter<12u' 'HopscotchMap<32u'
# The concurrent filters' inserts stage their buckets (and the striped filter its stripes) for
# writing; the instruction is in the code whether or not this processor runs it.
expect prefetchw 'AtomicPackedTable<12u, 4u>' 'LockFreeCuckooFilter<12u'
exit $status
