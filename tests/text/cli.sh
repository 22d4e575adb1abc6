#!/usr/bin/env bash
# The text commands as a user runs them: sample gives the same text for the same seed (and other
# text for another), and refuses a checkpoint of another shape, a model of another vocabulary and
# a prompt longer than the context; tokenize names the file and line of bad JSONL, exits
# non-zero and leaves no shard, and so does an interrupt; a missing vocabulary says how to fetch it;
# text without cut points takes bounded memory and time.
# Usage: cli.sh FABTRAIN_EXEC SOURCE_DIR. Exit 77 (skipped) without the vocabulary.
set -uo pipefail
exe=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
check() {  # check NAME EXPECTED-RC PATTERN COMMAND...: rc and a line of the output
  local name=$1 want=$2 pattern=$3; shift 3
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $name (exit $rc, want $want; /$pattern/ in:)"; echo "$out" | tail -5; fails=$((fails + 1))
  else
    echo "ok: $name"
  fi
}
if ! "$exe" tokenize "$src/data/tiny_prose_val.txt" -o "$work/tok" > "$work/tok.log" 2>&1; then
  if grep -q "not found" "$work/tok.log"; then echo "SKIPPED: $(cat "$work/tok.log")"; exit 77; fi
  cat "$work/tok.log"; exit 1
fi
model="$src/data/gpt2-bpe-mini/config.json"
"$exe" train --model "$model" --data "$work/tok/corpus_train_000001.bin" --batch 4 --seq 32 --steps 3 \
  --threads 1 --checkpoint-dir "$work/ckpt" > /dev/null || exit 1
ckpt="$work/ckpt/model_00000003.bin"
s() { "$exe" sample --model "$model" --checkpoint "$ckpt" --prompt "The baker" --max-tokens 30 "$@" 2>/dev/null; }
a=$(s --seed 7); b=$(s --seed 7); c=$(s --seed 8)
if [ "$a" = "$b" ] && [ "$a" != "$c" ] && [ ${#a} -gt 20 ]; then echo "ok: same seed, same text"; else
  echo "FAIL: same seed, same text:"; printf '%s\n---\n%s\n---\n%s\n' "$a" "$b" "$c"; fails=$((fails + 1)); fi
cat > "$work/wide.json" <<'J'
{"n_layer": 2, "n_embd": 128, "n_head": 4, "n_positions": 128, "vocab_size": 50257}
J
check "sample: a checkpoint of another shape" 1 "C \(channels\) is 64 in the file but 128" \
  "$exe" sample --model "$work/wide.json" --checkpoint "$ckpt"
check "sample: a model of another vocabulary" 1 "vocabulary of 256 tokens" \
  "$exe" sample --model gpt2-nano --checkpoint "$ckpt"
check "sample: a prompt longer than the context" 1 "do not fit the context of 128" \
  "$exe" sample --model "$model" --checkpoint "$ckpt" --prompt "$(printf 'word %.0s' {1..200})"
printf '{"text": "fine"}\n{"title": "no text"}\n' > "$work/bad.jsonl"
check "tokenize: a JSONL line without the text field" 1 "bad.jsonl:2: no string field \"text\"" \
  "$exe" tokenize "$work/bad.jsonl" -o "$work/bad-out"
[ -z "$(ls -A "$work/bad-out" 2>/dev/null)" ] && echo "ok: nothing written" || { echo "FAIL: files left"; fails=$((fails + 1)); }
check "a missing vocabulary says how to fetch it" 1 "encoder.json not found. Fetch it with scripts/install-deps.sh" \
  "$exe" tokenize "$work/bad.jsonl" --vocab "$work/none"
# Ctrl-C in the middle of a 90 MB document: exit non-zero within 5 s (the interrupt is seen per
# work unit, not per document), no shard under a final name, no temporary left.
for i in $(seq 300); do cat "$src/data/tiny_prose_train.txt"; done > "$work/big.txt"  # 90 MB
"$exe" tokenize "$work/big.txt" "$work/big.txt" --val-fraction 0 --shard-tokens 1000000 -o "$work/int" \
  > "$work/int.log" 2>&1 &
pid=$!
# The output folder appears once the handler is set (a background job starts with SIGINT ignored).
for i in $(seq 300); do [ -d "$work/int" ] && break; sleep 0.1; done
sleep 0.2
kill -INT $pid
interrupted_at=$(date +%s%N)
wait $pid; rc=$?
took_ms=$((($(date +%s%N) - interrupted_at) / 1000000))
if [ $rc -eq 0 ]; then
  echo "note: tokenize finished before the interrupt; nothing to check"
elif [ "$took_ms" -gt 5000 ]; then
  echo "FAIL: tokenize ended $took_ms ms after the interrupt (within a document: at most 5 s)"
  fails=$((fails + 1))
elif grep -q "interrupted" "$work/int.log" && [ -z "$(ls -A "$work/int" 2>/dev/null)" ]; then
  echo "ok: an interrupted tokenize leaves the folder empty (exit $rc, $took_ms ms after the signal)"
else
  echo "FAIL: interrupted tokenize (exit $rc):"; cat "$work/int.log"; ls -la "$work/int"; fails=$((fails + 1))
fi
# Memory and time stay bounded whatever the text: 64 MB of NUL bytes (no cut point, one token per
# byte) within 512 MiB more than tokenizing one line takes (ulimit -v; OpenBLAS's own threads
# would spin on a failed map, so it runs one), and 4 MB of letters without a space (one piece
# of the pre-tokenizer) within 120 s.
export OPENBLAS_NUM_THREADS=1
echo "one line" > "$work/line.txt"
base=0
for mib in $(seq 768 128 4096); do
  if (ulimit -v $((mib << 10)) && timeout 60 "$exe" tokenize "$work/line.txt" -o "$work/base" --threads 2) >/dev/null 2>&1; then
    base=$mib; break
  fi
done
head -c 64000000 /dev/zero > "$work/nul.txt"
check "tokenize: 64 MB of NUL bytes within $((base + 512)) MiB" 0 "wrote .*corpus_train_000001.bin" \
  bash -c "ulimit -v $(((base + 512) << 10)) && timeout 120 '$exe' tokenize '$work/nul.txt' -o '$work/nul' --threads 2"
LC_ALL=C tr -dc '[:lower:]' < /dev/urandom | head -c 4000000 > "$work/letters.txt"
check "tokenize: 4 MB of letters without a space within 120 s" 0 "wrote .*corpus_train_000001.bin" \
  timeout 120 "$exe" tokenize "$work/letters.txt" -o "$work/letters" --threads 2
exit $((fails > 0))
