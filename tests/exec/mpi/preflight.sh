#!/usr/bin/env bash
# fabtrain-exec preflight with two ranks on this machine: the same data on both passes with a
# table of both ranks and their VM pair's round trip and transfer rate (two ranks placed on a
# two-VM slice's VMs); a data file that differs between the ranks, or is missing, fails by name
# with a non-zero exit; a rank that stops answering (SIGSTOP) ends the check within its
# --timeout-s, named, non-zero. Three ranks on a three-site slice: every VM pair measured and
# compared with the slice; a pair whose slice rate is far above what it reaches fails, naming both
# VMs, while the others pass.
# Usage: preflight.sh FABTRAIN_EXEC SOURCE_DIR
set -euo pipefail
exe=$1 src=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$src/data/tiny_prose_train.txt"
timeout 60 mpirun -np 2 --oversubscribe "$exe" preflight --data "$data" --slice utah-amst \
  | tee "$work/ok.txt"
grep -q "preflight: all clear" "$work/ok.txt"
[ "$(grep -cE '^ +[01]  ' "$work/ok.txt")" -eq 2 ] || { echo "FAIL: not one row per rank"; exit 1; }
# The pair's row: a round trip and a transfer rate (MB/s, the last but one column), both above zero.
awk '/utah-vm - amst-vm/ { found = $(NF - 3) > 0 && $(NF - 1) > 0 } END { exit !found }' \
  "$work/ok.txt" || { echo "FAIL: the VM pair has no measured round trip and rate"; exit 1; }

# Three ranks, one per VM of a three-site slice (the file's order: the ranks share this host).
cat >"$work/three.yaml" <<'YAML'
name: three-sites
vms:
  - {name: utah-vm, site: UTAH, gpu: CPU_HOST, gpus: 1, nic: NIC_Basic}
  - {name: amst-vm, site: AMST, gpu: CPU_HOST, gpus: 1, nic: NIC_Basic}
  - {name: mass-vm, site: MASS, gpu: CPU_HOST, gpus: 1, nic: NIC_Basic}
networks:
  - {name: fabnet, kind: fabnetv4, vms: [utah-vm, amst-vm, mass-vm]}
YAML
timeout 60 mpirun -np 3 --oversubscribe "$exe" preflight --slice "$work/three.yaml" --samples 5 \
  | tee "$work/three.txt"
grep -q "3 links between VMs" "$work/three.txt"
for pair in "utah-vm - amst-vm" "utah-vm - mass-vm" "amst-vm - mass-vm"; do
  awk -v p="$pair" 'index($0, p) { found = $(NF - 1) > 0 && $NF > 0 } END { exit !found }' \
    "$work/three.txt" || { echo "FAIL: no measured row beside the slice's for $pair"; exit 1; }
done
grep -q "preflight: all clear" "$work/three.txt"
# The slice's round trips (tens of ms between the sites) far above loopback's: warnings only.
grep -q "^WARN .*far below the slice's" "$work/three.txt"
# A measured link that promises AMST-MASS 8000 Gbit/s on one stream: that pair fails by name.
cat "$work/three.yaml" - >"$work/fast.yaml" <<'YAML'
links:
  - {sites: [AMST, MASS], rtt_ms: 80, bandwidth_one_stream_gbit_s: 8000, source: "test: far above loopback"}
YAML
if timeout 60 mpirun -np 3 --oversubscribe "$exe" preflight --slice "$work/fast.yaml" \
  --samples 5 >"$work/fast.txt" 2>&1; then
  cat "$work/fast.txt"; echo "FAIL: a pair far below its slice rate passed"; exit 1
fi
grep -q "^FAIL amst-vm - mass-vm (ranks 1 and 2): a transfer ran at .* under half the slice's" \
  "$work/fast.txt" || { cat "$work/fast.txt"; echo "FAIL: the slow pair is not named"; exit 1; }
[ "$(grep -c '^FAIL' "$work/fast.txt")" -eq 1 ] || { cat "$work/fast.txt"; exit 1; }
# Rank 1 reads another file (MPMD: one program line per rank): named, non-zero exit.
printf 'other' >"$work/other.txt"
if timeout 60 mpirun --oversubscribe -np 1 "$exe" preflight --data "$data" : \
  -np 1 "$exe" preflight --data "$work/other.txt" >"$work/diff.txt" 2>&1; then
  cat "$work/diff.txt"; echo "FAIL: differing data passed"; exit 1
fi
grep -q "FAIL rank 1 .*differs from rank 0's" "$work/diff.txt" || { cat "$work/diff.txt"; exit 1; }
if timeout 60 mpirun -np 2 --oversubscribe "$exe" preflight --data "$work/none.bin" \
  >"$work/missing.txt" 2>&1; then
  echo "FAIL: a missing data file passed"; exit 1
fi
grep -qi "none.bin.*no such file" "$work/missing.txt" || { cat "$work/missing.txt"; exit 1; }

# A rank stuck mid-check (stopped while it answers round trips that would take minutes): rank 0
# names it once --timeout-s has passed and the job ends non-zero. Rank 1 is told apart by its
# extra --device cpu.
many="--samples 100000000 --timeout-s 4 --slice utah-amst"
mpirun --oversubscribe -np 1 "$exe" preflight $many : -np 1 "$exe" preflight $many --device cpu \
  >"$work/stuck.txt" 2>&1 &
launcher=$!
start=$(date +%s)
for _ in $(seq 50); do
  victim=$(pgrep -P "$launcher" -f -- "--device cpu" | head -1 || true)
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { echo "FAIL: rank 1's process not found"; kill "$launcher"; exit 1; }
sleep 1
kill -STOP "$victim"
for _ in $(seq 60); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: preflight still runs 30 s after rank 1 stopped"; kill -KILL "$victim" "$launcher"; exit 1
fi
rc=0; wait "$launcher" || rc=$?
kill -KILL "$victim" 2>/dev/null || true
elapsed=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] || { cat "$work/stuck.txt"; echo "FAIL: exit 0 with a stopped rank"; exit 1; }
grep -q "rank 1 did not answer within --timeout-s 4 while rank 0 measured its link with rank 1" \
  "$work/stuck.txt" || { cat "$work/stuck.txt"; echo "FAIL: the stopped rank is not named"; exit 1; }
echo "the stopped rank was named ${elapsed}s after the check began (limit 4 s)"
echo "preflight: ok"
