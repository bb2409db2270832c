#!/usr/bin/env bash
# bench/independent_ceiling.sh on a tiny table: every run it announces is there, the summary
# has a positive rate for the copies and each structure, and bad arguments are refused.
#   bench/independent_ceiling_test.sh path/to/chtbench
set -euo pipefail
chtbench=${1:?usage: bench/independent_ceiling_test.sh path/to/chtbench}
script="$(dirname "$0")/independent_ceiling.sh"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

out=$(bash "$script" 2 2 65536 "$chtbench" 2>/dev/null)
echo "$out"
[ "$(grep -c '^[12] copy 1 ' <<<"$out")" -eq 4 ] || fail "expected 2 copies in each of 2 rounds"
for s in ccf-striped lf-cuckoo-filter; do
  [ "$(grep -c "^[12] $s 2 " <<<"$out")" -eq 2 ] || fail "expected 2 rounds of $s"
done
for row in "copies (no sync)" ccf-striped lf-cuckoo-filter; do
  line=$(grep -F "$row" <<<"$out" | grep ' build ') || fail "no summary row for $row"
  awk '{ for (i = 1; i <= NF; i++) if ($i == "build" || $i == "tail") { v = $(i + 1) + 0; if (v <= 0) exit 1 } }' \
    <<<"$line" || fail "a rate is not positive: $line"
done

for bad in "0 1 65536" "2 0 65536" "2 1 12x"; do
  status=0
  # shellcheck disable=SC2086  # the arguments are meant to split
  bash "$script" $bad "$chtbench" >/dev/null 2>&1 || status=$?
  [ "$status" -eq 2 ] || fail "'$bad' exited $status, not 2 (refused)"
done
# A chtbench run that fails fails the script, whether a copy's or a structure's.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for broken in cuckoo-filter lf-cuckoo-filter; do
  # shellcheck disable=SC2016  # $3 and $@ belong to the wrapper, not to this script
  printf '#!/bin/sh\n[ "$3" = %s ] && exit 3\nexec "%s" "$@"\n' "$broken" "$chtbench" >"$scratch/chtbench"
  chmod +x "$scratch/chtbench"
  if bash "$script" 2 1 65536 "$scratch/chtbench" >/dev/null 2>&1; then
    fail "a failed $broken run went unnoticed"
  fi
done
echo "independent_ceiling: ok"
