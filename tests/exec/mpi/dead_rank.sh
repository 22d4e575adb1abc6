#!/usr/bin/env bash
# A rank that dies (SIGKILL) or stops answering (SIGSTOP: only the watchdog can notice) makes the
# job end with a non-zero exit and a message within a bounded time, instead of hanging.
# Usage: dead_rank.sh FABTRAIN_EXEC SOURCE_DIR kill|stop [train|replay]
set -uo pipefail
exe=$1 src=$2 how=$3 command=${4:-train}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$command" = replay ]; then
  args=(replay --device-type CPU_HOST)
else
  args=(train --data "$src/data/tiny_prose_train.txt" --threads 1)
fi
mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" "${args[@]}" --model gpt2-nano --plan dp=2 \
  --batch 8 --seq 32 --steps 100000 --timeout-s 5 --print-every 1 > "$work/out.log" 2>&1 &
launcher=$!
for _ in $(seq 100); do grep -q "^step" "$work/out.log" && break; sleep 0.2; done
grep -q "^step" "$work/out.log" || { echo "training did not start"; cat "$work/out.log"; kill $launcher; exit 1; }
# The rank processes are the launcher's children running the executable; take one of them.
victim=$(pgrep -P "$launcher" -f fabtrain-exec | tail -1)
[ -n "$victim" ] || { echo "no rank process found"; kill $launcher; exit 1; }
start=$(date +%s)
if [ "$how" = kill ]; then kill -KILL "$victim"; else kill -STOP "$victim"; fi
for _ in $(seq 120); do kill -0 $launcher 2>/dev/null || break; sleep 0.5; done
if kill -0 $launcher 2>/dev/null; then
  echo "the job still runs 60 s after the rank was $([ "$how" = kill ] && echo killed || echo stopped): it hangs"
  kill -KILL "$victim" 2>/dev/null; kill $launcher; exit 1
fi
wait $launcher
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "job ended ${elapsed}s after one rank was $([ "$how" = kill ] && echo killed || echo stopped), exit code $rc"
grep -E "error|noticed|blocked" "$work/out.log" | head -5
[ "$rc" -ne 0 ] || { echo "exit code 0 after a rank was $([ "$how" = kill ] && echo killed || echo stopped)"; exit 1; }
if [ "$how" = stop ]; then
  grep -q "blocked for" "$work/out.log" || { echo "no watchdog message"; exit 1; }
else
  grep -qiE "exited on signal|killed|terminated|aborted|error" "$work/out.log" || { echo "no message"; exit 1; }
fi
