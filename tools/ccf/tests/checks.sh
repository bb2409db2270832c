# Sourced by the ccf shell tests: a scratch directory to work in (removed on exit), and the two
# checks every test is made of, counted; `finish` prints the counts and fails if any check did.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
passed=0
failed=0

check() {  # check DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  if "$@"; then passed=$((passed + 1)); else echo "FAIL: $what" >&2; failed=$((failed + 1)); fi
}

# expect_exit CODE PATTERN COMMAND...: exits with CODE and, unless PATTERN is empty, says
# something matching PATTERN on standard error.
expect_exit() {
  local code=$1 pattern=$2
  shift 2
  local rc=0
  "$@" >out.txt 2>err.txt || rc=$?
  if [[ $rc -eq $code ]] && { [[ -z $pattern ]] || grep -qE "$pattern" err.txt; }; then
    passed=$((passed + 1))
  else
    echo "FAIL: '$*' exited $rc (want $code), stderr: $(cat err.txt)" >&2
    failed=$((failed + 1))
  fi
}

finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
