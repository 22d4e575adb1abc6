#!/usr/bin/env bash
# A rank that dies (SIGKILL) or stops answering (SIGSTOP: only the watchdog can notice) makes the
# job end with a non-zero exit and a message within a bounded time, instead of hanging. With
# "checkpoint", every step writes a checkpoint, so the survivor waits in the checkpoint's
# gathers and barriers, which the watchdog times as well.
# Usage: dead_rank.sh FABTRAIN_EXEC SOURCE_DIR kill|stop [train|replay] [checkpoint]
set -uo pipefail
exe=$1 src=$2 how=$3 command=${4:-train} checkpoint=${5:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$command" = replay ]; then
  args=(replay --device-type CPU_HOST)
else
  args=(train --data "$src/data/tiny_prose_train.txt" --threads 1)
fi
[ "$checkpoint" = checkpoint ] && args+=(--checkpoint-dir "$work/ck" --checkpoint-every 1 --keep-checkpoints 2)
timeout -k 5 150 mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" "${args[@]}" --model gpt2-nano --plan dp=2 \
  --batch 8 --seq 32 --steps 100000 --timeout-s 5 --print-every 1 > "$work/out.log" 2>&1 &
launcher=$!
for _ in $(seq 100); do grep -q "^step" "$work/out.log" && break; sleep 0.2; done
grep -q "^step" "$work/out.log" || { echo "training did not start"; cat "$work/out.log"; kill $launcher; exit 1; }
# The rank processes are mpirun's children running the executable (mpirun is the child of
# timeout); take one of them.
victim=$(pgrep -P "$(pgrep -P "$launcher" | head -1)" -f fabtrain-exec | tail -1)
[ -n "$victim" ] || { echo "no rank process found"; kill $launcher; exit 1; }
start=$(date +%s)
if [ "$checkpoint" = checkpoint ]; then
  # Stop the rank while it writes a checkpoint file (a file of the folder open in it), so that
  # the other waits in the checkpoint's barrier, not in a step.
  python3 - "$victim" "$work/ck" <<'PY' || { echo "the rank never held a checkpoint file open"; kill $launcher; exit 1; }
import os, signal, sys, time
pid, folder = int(sys.argv[1]), sys.argv[2]
end = time.time() + 60
while time.time() < end:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        if any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith(folder) for fd in fds):
            os.kill(pid, signal.SIGSTOP)
            sys.exit(0)
    except (FileNotFoundError, ProcessLookupError):
        pass
sys.exit(1)
PY
elif [ "$how" = kill ]; then kill -KILL "$victim"; else kill -STOP "$victim"; fi
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
  if [ "$checkpoint" = checkpoint ]; then
    grep -q "blocked for.*checkpoint\|checkpoint.*blocked for" "$work/out.log" ||
      { echo "the watchdog did not name the checkpoint's wait"; exit 1; }
  fi
  # --timeout-s 5, a poll of the watchdog and mpirun ending the other rank, on a busy machine.
  [ "$elapsed" -le 30 ] || { echo "the stopped rank was noticed after ${elapsed}s (timeout 5 s)"; exit 1; }
else
  grep -qiE "exited on signal|killed|terminated|aborted|error" "$work/out.log" || { echo "no message"; exit 1; }
fi
