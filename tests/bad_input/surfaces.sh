#!/usr/bin/env bash
# Hostile files and outputs at the programs' surfaces, as a user meets them: a saved slice nested
# a hundred thousand levels deep, -o onto a folder, a symbolic link, a named pipe or a device, a
# full standard output, a new training run into another run's checkpoints. Each must end with
# exit 1 and a message naming the file and the rule (or write in place), never a signal or a
# hang (60 s), and leave nothing half-written behind.
# Usage: surfaces.sh BUILD_BIN_DIR
set -uo pipefail
bin="$(cd "$1" && pwd)"
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect "MESSAGE PART" command...: exit 1 within 60 s, the part on standard error.
expect() {
  local want="$1"; shift
  local err rc
  err="$(cd "$tmp" && timeout 60 "$@" 2>&1 >/dev/null)"; rc=$?
  if [ "$rc" -ne 1 ] || [[ "$err" != *"$want"* ]]; then
    fail "(exit $rc) $*"; echo "  wanted: $want"; echo "  got:    ${err:0:300}"
  fi
}

fixture="$src/tests/platforms/fablib/fabnetv4.json"
python3 - "$fixture" "$tmp/deep.json" <<'PY'
import sys
text = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(text.replace('"default_ubuntu_22,qcow2"', "[" * 100000 + "]" * 100000, 1))
PY
expect "deep.json: the JSON nesting depth (line 15) is 257; fabtrain handles at most 256" \
  "$bin/fabtrain" slice import "$tmp/deep.json"

# -o: a folder is refused and nothing is left beside it; a symbolic link is written through.
mkdir "$tmp/out"
expect "is a directory" "$bin/fabtrain" slice import "$fixture" -o "$tmp/out"
left=("$tmp"/*.tmp*)
[ ! -e "${left[0]}" ] || fail "slice import -o FOLDER left ${left[*]}"
ln -s "$tmp/target.yaml" "$tmp/link.yaml" && touch "$tmp/target.yaml"
"$bin/fabtrain" slice import "$fixture" -o "$tmp/link.yaml" >/dev/null 2>&1 || fail "slice import -o LINK"
[ -L "$tmp/link.yaml" ] && grep -q "vms:" "$tmp/target.yaml" || fail "slice import -o LINK replaced the link"
# -o a named pipe or a device (a node of /dev/null's numbers, where one may be made) is written
# in place, never replaced by a regular file.
mkfifo "$tmp/pipe"
timeout 60 cat "$tmp/pipe" >"$tmp/from-pipe" &
reader=$!
timeout 60 "$bin/fabtrain" slice import "$fixture" -o "$tmp/pipe" >/dev/null 2>&1 || fail "slice import -o FIFO"
wait "$reader"
if ! { [ -p "$tmp/pipe" ] && grep -q "vms:" "$tmp/from-pipe"; }; then
  fail "slice import -o FIFO replaced the pipe or wrote nothing to it"
fi
if mknod "$tmp/null" c 1 3 2>/dev/null; then
  "$bin/fabtrain" slice import "$fixture" -o "$tmp/null" >/dev/null 2>&1 || fail "slice import -o DEVICE"
  [ -c "$tmp/null" ] || fail "slice import -o DEVICE replaced the device"
fi

# A full standard output is an error, not exit 0 with nothing written.
if [ -w /dev/full ]; then
  expect "standard output: write failed" sh -c "\"$bin/fabtrain\" slices >/dev/full"
  expect "standard output: write failed" sh -c "\"$bin/fabtrain\" slice import \"$fixture\" >/dev/full"
  slice="$src/platforms/data/slices/dgx-a100-8.yaml"
  expect "standard output: write failed" sh -c "\"$bin/fabtrain\" slices --json - >/dev/full"
  expect "standard output: write failed" sh -c "\"$bin/fabtrain\" slice show \"$slice\" >/dev/full"
  expect "standard output: write failed" sh -c \
    "\"$bin/fabtrain\" simulate --model gpt2-nano --slice \"$slice\" --plan dp=1 --json - >/dev/full"
fi

# A new training run into a folder of another run's checkpoints is refused (pruning by step
# number would remove its own first); the earlier run's files stay as they were.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
train=("$bin/fabtrain-exec" train --model gpt2-nano --plan dp=1 --data "$src/data/tiny_prose_train.txt"
  --batch 2 --seq 16 --checkpoint-dir "$tmp/ckpt" --checkpoint-every 1 --keep-checkpoints 3)
if (cd "$tmp" && timeout 120 "${train[@]}" --steps 6 >/dev/null 2>&1); then
  before="$(ls "$tmp/ckpt" | sort)"
  expect "holds the checkpoints of an earlier run (" "${train[@]}" --steps 2
  [ "$(ls "$tmp/ckpt" | sort)" = "$before" ] || fail "a refused run changed the earlier checkpoints"
  (cd "$tmp" && timeout 120 "${train[@]}" --steps 8 --resume >/dev/null 2>&1) || fail "--resume after the refusal"
else
  fail "train --steps 6 into $tmp/ckpt did not run"
fi

[ "$failures" -eq 0 ] && echo "all surfaces refuse cleanly" || { echo "$failures case(s) failed"; exit 1; }
