#!/usr/bin/env bash
# Usage: prefetch_kept_test.sh OBJECT
# OBJECT is tests/prefetch_kept.cpp compiled at -O2. Every filter and map named below must have
# prefetch instructions in some function of its own (its batch pipeline, its staging): at -O2,
# GCC used to delete the calls of functions that only prefetch (detail/prefetch.hpp).
set -euo pipefail
object=$1
listing=$(objdump -d --no-show-raw-insn -C "$object")
status=0
for name in 'CuckooFilter<ccf::PackedTable<12u, 4u>' 'AtomicPackedTable<12u, 4u>' \
  'LockFreeCuckooFilter<12u' 'HopscotchMap<32u'; do
  count=$(awk -v name="$name" '
    /^[0-9a-f]+ <.*>:$/ { current = $0 }
    /prefetch/ && index(current, name) > 0 { n++ }
    END { print n + 0 }' <<<"$listing")
  echo "$name: $count prefetch instructions"
  if ((count == 0)); then
    echo "FAIL: no prefetch left in the code of $name at -O2" >&2
    status=1
  fi
done
exit $status
