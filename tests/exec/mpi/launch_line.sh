#!/usr/bin/env bash
# The launch line runs as printed: `fabtrain plan` on a CPU slice whose one VM is this machine
# (localhost, two CPU devices) prints "recommended: mpirun ..." and writes the hostfile it names
# beside the slice; that line, with only the data
# placeholder filled in, the program's path, and what a 2-core test machine needs
# (--allow-run-as-root --oversubscribe, --steps 1 --threads 1) added, trains one step.
# Usage: launch_line.sh FABTRAIN FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
fabtrain=$1 exe=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/local.yaml" <<'EOF'
name: local-cpu
description: This machine's CPU as two devices of one VM named localhost (a test slice).
vms:
  - {name: localhost, site: ONPREM, gpu: CPU_HOST, gpus: 2, nic: NIC_Basic}
networks: []
EOF
"$fabtrain" plan --model gpt2-nano --slice "$work/local.yaml" --break-even off --top 3 \
  --workers 1 > "$work/plan.txt"
line=$(sed -n 's/^recommended: //p' "$work/plan.txt")
[ -n "$line" ] || { cat "$work/plan.txt"; echo "no 'recommended:' line"; exit 1; }
echo "printed: $line"
np=$(sed -n 's/^mpirun -np \([0-9]*\) .*/\1/p' <<<"$line")
[[ "$line" == *"--hostfile $work/local.hosts "* ]] || { echo "the line names no hostfile beside the slice"; exit 1; }
grep -qx "localhost slots=$np" "$work/local.hosts" || { cat "$work/local.hosts"; echo "ranks are not placed on the slice's VM"; exit 1; }
[[ "$line" == *"--model gpt2-nano "* ]] || { echo "the model is not as given"; exit 1; }
[[ "$line" != *"--device"* ]] || { echo "a CPU slice needs no --device"; exit 1; }
run=${line/#mpirun /mpirun --allow-run-as-root --oversubscribe }
run=${run/ fabtrain-exec / $exe }
run=${run/TRAIN_TOKENS.bin/$src/data/tiny_prose_train.txt}
eval "$run --steps 1 --threads 1 --record $work/run.jsonl"
steps=$(grep -c '"type": *"step"' "$work/run.jsonl" || true)
[ "$steps" -ge 1 ] || { echo "the run recorded no step"; exit 1; }
echo "the printed line trained $np rank(s) for one step"
