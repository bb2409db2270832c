#!/usr/bin/env bash
# Shell-level tests of `ccf build | query | info | erase | merge`: every built key is found (no
# false negatives, also after erasing other keys, after a merge, and on every shape), the
# measured false-positive rate is near the one `info` expects, repeated keys are dropped,
# binary keys work, and bad input (missing, foreign, truncated or padded files, a grown
# lock-free filter's file, unsupported shapes, empty or closed input, too small or
# unallocatable a capacity, filters that cannot be merged) gets a clear error and its exit
# code, writing nothing. Files are written safely
# (planted links, non-regular targets, failed writes, permissions, concurrent erases) and a
# standard output that cannot be written is an error.
# Usage: filter_cli_test.sh PATH/TO/ccf
ccf=$(realpath "$1")
corpus=$(realpath "$(dirname "$0")/../../../fuzz/corpus")
source "$(dirname "$0")/checks.sh"

# Keys: Debian's word list when installed, else generated words.
if [[ -f /usr/share/dict/words ]]; then cp /usr/share/dict/words keys.txt; else seq 1 100000 | sed 's/^/word/' >keys.txt; fi
n=$(sort -u keys.txt | wc -l)
seq 1 200000 | sed 's/^/absent-/' >absent.txt

# Every shape: built, every key found.
for shape in "--fp-bits 8 --bucket 4" "--fp-bits 12 --bucket 4" "--fp-bits 16 --bucket 2" \
             "--fp-bits 32 --bucket 2" "--fp-bits 12 --bucket 8" "--fp-bits 16 --semi-sorted"; do
  # shellcheck disable=SC2086
  check "build $shape" "$ccf" build keys.txt -o f.ccf $shape --threads 3
  check "every key found ($shape)" test "$("$ccf" query f.ccf keys.txt --count)" -eq "$n"
done

check "build 12x4" "$ccf" build keys.txt -o w.ccf
"$ccf" info w.ccf --json >info.json
# items FILE: the item count `info --json` reports.
items() { "$ccf" info "$1" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["items"])'; }
check "info counts the distinct keys" test "$(items w.ccf)" -eq "$n"
# The measured false-positive rate lies within a factor 2 of the expected one.
hits=$("$ccf" query w.ccf absent.txt --count || true)
check "false-positive rate near the expected one" python3 - "$hits" info.json <<'PY'
import json, sys
hits = int(sys.argv[1]); expected = json.load(open(sys.argv[2]))["expected_fpr"]
measured = hits / 200000
print(f"false positives: {hits} of 200000 = {measured:.5f}, expected {expected:.5f}")
sys.exit(0 if expected / 2 <= measured <= expected * 2 else 1)
PY
check "query prints the hits" bash -c "printf 'apple\nabsent-x1\n' | '$ccf' query w.ccf | grep -qx apple"
expect_exit 1 "" bash -c "printf 'absent-1\nabsent-2\n' | '$ccf' query w.ccf --count"

# Repeated keys are dropped; the same file built from keys listed twice.
check "build with repeats" "$ccf" build keys.txt keys.txt -o twice.ccf
check "repeats are not stored" test "$(items twice.ccf)" -eq "$n"

# Erase half the keys: the other half are all still found.
awk 'NR % 2' keys.txt | sort -u >odd.txt
awk 'NR % 2 == 0' keys.txt | sort -u | comm -23 - odd.txt >even.txt
check "erase half" "$ccf" erase w.ccf odd.txt
check "the kept half is all found" test "$("$ccf" query w.ccf even.txt --count)" -eq "$(wc -l <even.txt)"
check "items after erase" test "$(items w.ccf)" -eq "$(wc -l <even.txt)"

# Merge: two halves built with one capacity hold every key together; mismatches are refused.
awk 'NR % 2' keys.txt >a.txt
awk 'NR % 2 == 0' keys.txt >b.txt
cap=$((n + 1000))
check "build half a" "$ccf" build a.txt -o a.ccf --capacity "$cap"
check "build half b" "$ccf" build b.txt -o b.ccf --capacity "$cap"
check "merge" "$ccf" merge a.ccf b.ccf -o ab.ccf
check "every key found in the merge" test "$("$ccf" query ab.ccf keys.txt --count)" -eq "$n"
check "build b sized otherwise" "$ccf" build b.txt -o b-small.ccf
expect_exit 3 "cannot be merged.*bucket count" "$ccf" merge a.ccf b-small.ccf -o m1.ccf
check "build b in another shape" "$ccf" build b.txt -o b16.ccf --capacity "$cap" --fp-bits 16
expect_exit 3 "cannot be merged.*shape" "$ccf" merge a.ccf b16.ccf -o m2.ccf
half=$(((n + 1) / 2 + 10))
check "build a nearly full half" "$ccf" build a.txt -o a-full.ccf --capacity "$half"
check "build b nearly full half" "$ccf" build b.txt -o b-full.ccf --capacity "$half"
expect_exit 3 "would not hold every item.*nothing was written" "$ccf" merge a-full.ccf b-full.ccf -o m3.ccf
check "failed merges write nothing" test ! -e m1.ccf -a ! -e m2.ccf -a ! -e m3.ccf

# Binary keys.
python3 -c "import struct,sys; sys.stdout.buffer.write(b''.join(struct.pack('<Q', i * 7919) for i in range(1, 50001)))" >keys.u64
check "binary build" "$ccf" build --binary-u64 keys.u64 -o b.ccf
check "binary keys found" test "$("$ccf" query --binary-u64 b.ccf keys.u64 --count)" -eq 50000
head -c 12 keys.u64 >ragged.u64
expect_exit 3 "whole number of 8-byte keys" "$ccf" build --binary-u64 ragged.u64 -o r.ccf

# Bad input: clear errors, nothing written.
expect_exit 3 "cannot open for reading" "$ccf" build missing.txt -o m.ccf
expect_exit 3 "cannot open for reading" "$ccf" info missing.ccf
expect_exit 3 "not a usable ccf filter file" "$ccf" info keys.txt
head -c 100 f.ccf >truncated.ccf
expect_exit 3 "not a usable ccf filter file" "$ccf" query truncated.ccf keys.txt
# A lock-free filter grown to 3 levels (format version 2; the fuzz corpus holds one): the tool
# loads files of one table and names the filter that loads this one.
expect_exit 3 "grown to 3 levels.*load it with LockFreeCuckooFilter<12>" \
  "$ccf" info "$corpus/lock_free_filter/grown-12.ccf"
: >empty.txt
expect_exit 3 "no keys in the input" "$ccf" build empty.txt -o e.ccf
expect_exit 3 "filled up.*nothing was written" "$ccf" build keys.txt -o small.ccf --capacity 1000
expect_exit 2 "unsupported cuckoo filter shape" "$ccf" build keys.txt -o s.ccf --fp-bits 13
expect_exit 2 "" "$ccf" build keys.txt
check "nothing written by failed builds" test ! -e m.ccf -a ! -e r.ccf -a ! -e e.ccf -a ! -e small.ccf -a ! -e s.ccf
check "no temporary left by failed builds" test -z "$(find . -name '.ccf-*.tmp')"

# Output files (output_file.hpp). A link planted at the old fixed temporary name is not
# followed: the file it points to keeps its bytes.
echo secret >victim
ln -s victim out.ccf.tmp
check "build beside a planted link" "$ccf" build keys.txt -o out.ccf
check "the planted link's target is untouched" test "$(cat victim)" = secret
check "the output is a regular file" test -f out.ccf -a ! -L out.ccf
# Targets that exist and are not regular files are refused (exit 2) and left as they were.
ln -s victim link.ccf
mkfifo fifo.ccf
mkdir dir.ccf
for target in link.ccf fifo.ccf dir.ccf /dev/null; do
  expect_exit 2 "exists and is .*ccf writes only regular files" "$ccf" build keys.txt -o "$target"
  expect_exit 2 "exists and is" "$ccf" merge a.ccf b.ccf -o "$target"
done
check "refused targets unchanged" test -L link.ccf -a -p fifo.ccf -a -d dir.ccf -a -c /dev/null
check "their link's target unchanged" test "$(cat victim)" = secret
expect_exit 2 "symbolic link" "$ccf" erase link.ccf odd.txt
# A write that fails (here: past the file size limit, as a full disk would) names the file and
# the system's reason, and leaves no temporary.
expect_exit 3 "big.ccf: writing failed: File too large; nothing was written" \
  bash -c "ulimit -f 8; trap '' XFSZ; exec '$ccf' build keys.txt -o big.ccf --capacity 1000000"
check "no file or temporary after the failed write" test ! -e big.ccf -a -z "$(find . -name '.ccf-*.tmp')"
# A new file gets 0666 less the umask (the temporary is 0600 while written); erase keeps the
# file's permissions.
cp w.ccf mode.ccf
chmod 640 mode.ccf
check "erase of a 0640 file" "$ccf" erase mode.ccf even.txt
check "it stays 0640" test "$(stat -c %a mode.ccf)" = 640
check "build under umask 027" bash -c "umask 027; exec '$ccf' build keys.txt -o umask.ccf 2>/dev/null"
check "the new file is 0640" test "$(stat -c %a umask.ccf)" = 640

# Two erases of one file at once are both applied (the file is locked for each).
cp keys.txt all.txt
check "build for concurrent erases" "$ccf" build all.txt -o both.ccf --capacity $((n + 1000))
sort -u keys.txt | awk 'NR % 4 == 0' >q0.txt
sort -u keys.txt | awk 'NR % 4 == 1' >q1.txt
sort -u keys.txt | awk 'NR % 4 == 2' >q2.txt
"$ccf" erase both.ccf q0.txt 2>/dev/null & e0=$!
"$ccf" erase both.ccf q1.txt 2>/dev/null & e1=$!
"$ccf" erase both.ccf q2.txt 2>/dev/null & e2=$!
rc=0
wait $e0 || rc=1
wait $e1 || rc=1
wait $e2 || rc=1
check "concurrent erases succeed" test $rc -eq 0
check "every erase is in the file" test "$(items both.ccf)" -eq $((n - $(cat q0.txt q1.txt q2.txt | wc -l)))

# Standard output that cannot be written is an I/O error (exit 3), not a success.
if [[ -w /dev/full ]]; then
  expect_exit 3 "writing standard output failed: No space left on device" bash -c "'$ccf' query w.ccf even.txt >/dev/full"
  expect_exit 3 "writing standard output failed" bash -c "'$ccf' info w.ccf >/dev/full"
  expect_exit 3 "writing standard output failed" bash -c "'$ccf' info w.ccf --json >/dev/full"
fi

# info --json is JSON for any file name.
cp w.ccf 'quote"back\slash.ccf'
check "info --json escapes the file name" python3 -c '
import json, subprocess, sys
name = "quote\"back\\slash.ccf"
report = json.loads(subprocess.run([sys.argv[1], "info", name, "--json"], check=True,
                                   capture_output=True).stdout)
sys.exit(0 if report["file"] == name else 1)' "$ccf"

# A capacity in range that cannot be allocated names the capacity and the bytes it needs (the
# system must refuse the mapping: not under overcommit_memory=1, which would grant it).
if [[ $(cat /proc/sys/vm/overcommit_memory 2>/dev/null) != 1 ]]; then
  expect_exit 3 "capacity 1099511627776: the filter's table needs at least 1649267441664 bytes" \
    "$ccf" build keys.txt -o huge.ccf --capacity 1099511627776
fi

# Standard input: closed is an error; empty says that no key was read.
expect_exit 3 "standard input is closed" bash -c "exec '$ccf' query w.ccf <&-"
expect_exit 1 "no keys read" bash -c "'$ccf' query w.ccf </dev/null"

# Bytes after a filter's payload: the file is refused, not half-read.
cat w.ccf keys.txt >trailing.ccf
expect_exit 3 "bytes after the filter's payload" "$ccf" info trailing.ccf

finish
