#!/usr/bin/env bash
# Shell-level tests of `ccf log`: export is byte-identical to what was imported (Debian's word
# list and licence texts, a generated multi-megabyte binary file with repeated blocks), get /
# delete / stats / compact, a writer killed mid-import, and the errors for a missing, foreign
# or truncated log, with their exit codes. Usage: log_cli_test.sh PATH/TO/ccf
ccf=$(realpath "$1")
source "$(dirname "$0")/checks.sh"

# Round trips, byte for byte.
inputs=(/usr/share/common-licenses/GPL-3 /usr/share/common-licenses/Apache-2.0)
[[ -f /usr/share/dict/words ]] && inputs+=(/usr/share/dict/words)
python3 - <<'PY'
import random
random.seed(5)
block = bytes(random.getrandbits(8) for _ in range(1 << 16))
parts = [bytes(random.getrandbits(8) for _ in range(1 << 16)) if i % 3 else block for i in range(80)]
open("binary.bin", "wb").write(b"".join(parts) + b"tail without a full chunk")
PY
inputs+=("$work/binary.bin")
for input in "${inputs[@]}"; do
  name=$(basename "$input")
  check "import $name" "$ccf" log --log store import "$input" --fsync 1000 >/dev/null
  check "export $name" "$ccf" log --log store export "$name" -o "$name.out"
  check "$name is byte-identical" cmp -s "$input" "$name.out"
done
# Repeated 64 KiB blocks are stored once: binary.bin has 27 copies of one block.
"$ccf" log --log dedup import binary.bin --chunk 65536 >import.txt
check "repeated chunks are stored once" grep -q "already stored" import.txt
check "dedup export" "$ccf" log --log dedup export -o dedup.out
check "dedup export is byte-identical" cmp -s binary.bin dedup.out
# An empty file round-trips too.
: >empty.txt
check "import empty" "$ccf" log --log empty import empty.txt >/dev/null
check "export empty" "$ccf" log --log empty export -o empty.out
check "empty is byte-identical" cmp -s empty.txt empty.out

# get / delete / stats / compact.
key=$(sha1sum <(head -c 4096 /usr/share/common-licenses/GPL-3) | cut -c1-40)
check "get a chunk by its SHA-1" cmp -s <("$ccf" log --log store get "$key") <(head -c 4096 /usr/share/common-licenses/GPL-3)
expect_exit 2 "not a content key" "$ccf" log --log store get nothex
expect_exit 1 "not found" "$ccf" log --log store get 0000000000000000000000000000000000000000
"$ccf" log --log store stats --json >stats.json
check "stats counts four imported files" grep -q '"imported_files": 4' stats.json
check "delete the manifest" "$ccf" log --log store delete --user file:GPL-3
expect_exit 1 "not found" "$ccf" log --log store delete --user file:GPL-3
expect_exit 1 "no imported file named 'GPL-3'" "$ccf" log --log store export GPL-3 -o x
check "delete a chunk" "$ccf" log --log store delete "$key"
before=$(stat -c %s store/ccf.log)
"$ccf" log --log store compact >compact.txt
check "compaction shrinks the log" test "$(stat -c %s store/ccf.log)" -lt "$before"
check "export after compaction" "$ccf" log --log store export binary.bin -o after.out
check "export after compaction is byte-identical" cmp -s binary.bin after.out
expect_exit 3 "imported already" "$ccf" log --log store import binary.bin

# A writer killed in the middle of an import leaves a log that opens, and the import can be
# made again.
head -c 30000000 /dev/urandom >big.bin
"$ccf" log --log killed import big.bin --fsync none >/dev/null &
# Killed once the log has its first bytes (at most 10 s on): a fixed delay killed sanitizer
# builds, which start slower, before they had created the store.
for _ in $(seq 200); do
  [[ -s killed/ccf.log ]] && break
  sleep 0.05
done
kill -9 $! 2>/dev/null || true
wait $! 2>/dev/null || true
check "killed store opens" "$ccf" log --log killed stats >/dev/null
check "import again after the kill" "$ccf" log --log killed import big.bin --name again >/dev/null
check "export after the kill" "$ccf" log --log killed export again -o big.out
check "big is byte-identical" cmp -s big.bin big.out

# Errors: missing, foreign, truncated.
expect_exit 3 "no log store here" "$ccf" log --log nowhere stats
expect_exit 3 "no log store here" "$ccf" log --log nowhere export -o x
mkdir foreign && echo "just text" >foreign/ccf.log
expect_exit 3 "not a ccf log" "$ccf" log --log foreign stats
cp -r dedup truncated
size=$(stat -c %s truncated/ccf.log)
truncate -s $((size - 10)) truncated/ccf.log  # tears the manifest, the last entry
"$ccf" log --log truncated stats >trunc.txt
check "a torn tail is reported" grep -qE "torn tail [1-9][0-9]* bytes" trunc.txt
expect_exit 1 "no imported file" "$ccf" log --log truncated export binary.bin -o x
truncate -s 7 truncated/ccf.log
expect_exit 3 "too short|incomplete" "$ccf" log --log truncated stats
cp -r dedup corrupt
printf 'X' | dd of=corrupt/ccf.log bs=1 seek=40 conv=notrunc status=none
expect_exit 3 "corrupt entry at offset 16" "$ccf" log --log corrupt stats
expect_exit 3 "cannot open for reading" "$ccf" log --log store import missing.txt
expect_exit 2 "fsync" "$ccf" log --log store import binary.bin --fsync 0
expect_exit 2 "required" "$ccf" log stats
check "--help shows examples" bash -c "'$ccf' log --help | grep -q Examples"

# Output files are written as the filter commands write them (output_file.hpp): a symbolic link
# or other non-regular target is refused, a failed write names the reason and leaves nothing.
echo secret >victim
ln -s victim link.out
expect_exit 2 "symbolic link" "$ccf" log --log store export binary.bin -o link.out
expect_exit 2 "symbolic link" "$ccf" log --log store get --user file:binary.bin -o link.out
check "the link's target is untouched" test "$(cat victim)" = secret
expect_exit 3 "small.out: writing failed: File too large" \
  bash -c "ulimit -f 8; trap '' XFSZ; exec '$ccf' log --log store export binary.bin -o small.out"
check "no file or temporary after the failed export" test ! -e small.out -a -z "$(find . -name '.ccf-*.tmp')"
if [[ -w /dev/full ]]; then
  expect_exit 3 "writing standard output failed" bash -c "'$ccf' log --log store get --user file:binary.bin >/dev/full"
fi

finish
