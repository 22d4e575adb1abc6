#!/usr/bin/env bash
# fabtrain-exec probe on the emulated two-site link (scripts/wan, 25 ms each way, 1 Gbit/s):
# one rank per site measures a round trip within [48, 60] ms (median and p90), TCP bandwidth
# with 4 streams above one stream's (a 4 MiB window over 50 ms allows about 0.67 Gbit/s) and at
# most the 1 Gbit/s rate, and writes them as a measured link that the slice then loads.
# Exits 77 (ctest: skipped) with a line saying why where namespaces cannot be made, or where the
# emulator could not carry the link on time twice (the run would measure the emulator).
# Environment (set by ctest): FABTRAIN_EXEC_BIN, FABTRAIN_SOURCE_DIR.
set -euo pipefail
repo=${FABTRAIN_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
source "$repo/scripts/wan/common.sh"
wan_skip_unless_namespaces ethtool mpirun flock unshare python3
[ -x "${FABTRAIN_EXEC_BIN:-}" ] || { echo "FAIL: FABTRAIN_EXEC_BIN must name fabtrain-exec"; exit 1; }
work=$(mktemp -d /tmp/fabtrain-probe-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$repo/platforms/data/slices/emulated-2site.yaml" "$work/slice.yaml"
# A run the emulator could not carry on time is tried again, then skipped (wan_test_run). The
# probe's burst leaves a handful of its few acknowledgements late: 5% late frames are allowed.
rc=0
wan_test_run "$work/out.txt" timeout -k 10 240 "$repo/scripts/wan/run.sh" \
  --emulator-args "--max-late-fraction 0.05" 25 1000 -- \
  "$repo/scripts/wan/mpirun-2site.sh" "$FABTRAIN_EXEC_BIN" probe --slice "$work/slice.yaml" --write \
  --samples 20 --tcp-mib 32 --streams 4 || rc=$?
cat "$work/out.txt"
[ "$rc" -eq 0 ] || { echo "FAIL: the probe over the emulated link exited $rc"; exit 1; }
python3 - "$work/slice.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
link = re.search(r"^  - \{sites: \[EMU_SITE_A, EMU_SITE_B\], (.*)\}$", text, re.M)
assert link, "no measured link written"
fields = dict(re.findall(r"(\w+): ([0-9.e+-]+)", link.group(1)))
rtt, p90 = float(fields["rtt_ms"]), float(fields["rtt_p90_ms"])
one, many = float(fields["bandwidth_one_stream_gbit_s"]), float(fields["bandwidth_gbit_s"])
checks = [(f"rtt median {rtt} ms within [48, 60]", 48 <= rtt <= 60),
          (f"rtt p90 {p90} ms within [median, 70]", rtt <= p90 <= 70),
          (f"one stream {one} Gbit/s at most 1.1 x window/RTT (0.67)", 0 < one <= 1.1 * 4 * 2**20 * 8 / (rtt / 1e3) / 1e9),
          (f"4 streams {many} Gbit/s above one stream, at most the 1 Gbit/s link", one < many <= 1.05)]
for what, ok in checks:
    print(("ok:   " if ok else "FAIL: ") + what)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
