#!/usr/bin/env bash
# Two embeds into one output folder: the second, started while the first holds the folder's lock
# (the first is stopped with SIGSTOP once its staging folder exists), exits non-zero with the
# lock's message naming the folder and the holding process; the first, continued, completes.
# Usage: second_embed_lock.sh FABTRAIN_EXEC SOURCE_DIR. Exit 77 (skipped): no vocabulary.
set -uo pipefail
exe=$1 src=$2
work=$(mktemp -d)
first=""
cleanup() { [ -n "$first" ] && kill -CONT "$first" 2>/dev/null && kill "$first" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
if ! "$exe" tokenize "$src/data/tiny_prose_val.txt" --val-fraction 0 -o "$work/tok" > "$work/tok.log" 2>&1; then
  if grep -q "not found" "$work/tok.log"; then echo "SKIPPED: $(cat "$work/tok.log")"; exit 77; fi
  cat "$work/tok.log"; exit 1
fi
model="$src/data/gpt2-bpe-mini/config.json"
"$exe" train --model "$model" --data "$work/tok/corpus_train_000001.bin" --batch 4 --seq 32 \
  --steps 1 --threads 1 --checkpoint-dir "$work/ck" > "$work/train.log" 2>&1 ||
  { cat "$work/train.log"; fail "training the checkpoint failed"; }
for i in $(seq 10); do cat "$src/data/tiny_prose_docs.jsonl"; done > "$work/docs.jsonl"
embed=("$exe" embed "$work/docs.jsonl" --model "$model" --checkpoint "$work/ck/model_00000001.bin"
  -o "$work/emb")
"${embed[@]}" > "$work/first.log" 2>&1 &
first=$!
for _ in $(seq 400); do [ -d "$work/emb.tmp-$first" ] && break; sleep 0.01; done
kill -STOP "$first" 2>/dev/null || fail "the first embed ended before it could be stopped"
[ -d "$work/emb.tmp-$first" ] || fail "the first embed did not stage its folder"

rc=0
timeout 60 "${embed[@]}" > "$work/second.log" 2>&1 || rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then cat "$work/second.log"; fail "second embed: exit $rc"; fi
grep -q -- "--output-dir $work/emb: in use by another job (process $first); wait for it to end" \
  "$work/second.log" || { cat "$work/second.log"; fail "the second embed did not print the lock's message"; }
kill -CONT "$first"
wait "$first" || { cat "$work/first.log"; fail "the first embed failed"; }
first=""
[ -s "$work/emb/embed.json" ] || fail "the first embed wrote no embed.json"
echo "the second embed was refused by the folder lock (rc $rc); the first completed"
