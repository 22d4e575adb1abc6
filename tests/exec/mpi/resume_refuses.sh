#!/usr/bin/env bash
# Resume end to end (one rank): --resume refuses changed settings by name and
# a copied-over model file, --steps at or below the steps done, and training from NaN weights;
# old checkpoints are pruned to --keep-checkpoints. Usage: resume_refuses.sh FABTRAIN_EXEC SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--model gpt2-nano --plan dp=1 --batch 4 --threads 1 --timeout-s 60 --checkpoint-dir "$work/ck")
train=(--data "$src/data/tiny_prose_train.txt")
failures=0
expect() {  # expect "MESSAGE PART" args...: exit 1 and the part on stderr
  local want="$1"; shift
  local err rc
  err="$(timeout 60 "$exe" train "$@" 2>&1 >/dev/null)"; rc=$?
  if [ "$rc" -ne 1 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL (exit $rc): $*"; echo "  wanted: $want"; echo "  got: ${err:0:400}"; failures=$((failures + 1))
  fi
}
"$exe" train "${args[@]}" "${train[@]}" --seq 16 --steps 6 --checkpoint-every 1 --keep-checkpoints 2 > "$work/first.log" 2>&1 ||
  { cat "$work/first.log"; exit 1; }
models=$(ls "$work/ck" | grep -c '^model_')
[ "$models" = 2 ] || { echo "FAIL: $models model files kept, --keep-checkpoints 2"; ls "$work/ck"; failures=$((failures + 1)); }
expect "seq=16 in the checkpoint, seq=32 now" "${args[@]}" "${train[@]}" --steps 8 --resume --seq 32
expect "data=" "${args[@]}" --seq 16 --steps 8 --resume --data "$src/data/tiny_prose_val.txt"
expect "holds 6 steps done and --steps is 2" "${args[@]}" "${train[@]}" --seq 16 --steps 2 --resume
cp "$work/ck/model_00000005.bin" "$work/ck/model_00000006.bin"
expect "written at step 5, but it stands for step 6" "${args[@]}" "${train[@]}" --seq 16 --steps 8 --resume
printf '6abc\n' > "$work/ck/latest"
expect "'6abc' is not an integer" "${args[@]}" "${train[@]}" --seq 16 --steps 8 --resume
# NaN weights: a checkpoint whose parameter 0 is NaN (llm.c header left without our checksum).
python3 - "$work/ck/model_00000005.bin" "$work/nan.bin" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
data[8 * 4:13 * 4] = bytes(20)                      # no checksum: an llm.c file
data[1024:1028] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(data)
PY
expect "parameter 0 of" --model gpt2-nano --plan dp=1 --data "$src/data/tiny_prose_train.txt" --steps 1 --init-from "$work/nan.bin"
[ "$failures" -eq 0 ] && echo "resume refusals ok" || exit 1
