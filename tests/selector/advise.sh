#!/usr/bin/env bash
# fabtrain advise: on fablib's site list and on a plain YAML it writes slice.yaml (a valid slice)
# and reserve.py (valid Python naming every VM, GPU model, NIC and the network of the slice);
# sites not Active or without room for a GPU VM are left out with the reason, a new GPU model is
# listed; bad availability files are refused by name with exit 1.
set -euo pipefail
fabtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$fabtrain" advise --availability "$here/availability/five-sites.json" --model gpt2 -o "$work/a" \
  >"$work/a.txt"
grep -q "left out: MAX: state is Maint" "$work/a.txt" || fail "a site in maintenance was not left out"
grep -q "unknown: TACC: h100_available" "$work/a.txt" || fail "the new GPU model was not listed"
"$fabtrain" slice show "$work/a/slice.yaml" >/dev/null || fail "slice.yaml does not load"
python3 -m py_compile "$work/a/reserve.py" || fail "reserve.py is not valid Python"
python3 - "$work/a/slice.yaml" "$work/a/reserve.py" <<'PY' || fail "reserve.py does not name the slice"
import re, sys
slice_text, script = open(sys.argv[1]).read(), open(sys.argv[2]).read()
vms = re.findall(r"\{name: ([\w-]+), site: (\w+), gpu: (\w+), gpus: (\d+), nic: (\w+)", slice_text)
assert vms, "no VM in slice.yaml"
for name, site, gpu, gpus, nic in vms:
    row = f'("{name}", "{site}", "{gpu}", {gpus}, "{nic}"'
    assert row in script, f"reserve.py lacks {row}"
kind = re.search(r"kind: (\w+)", slice_text)
assert len(vms) == 1 or (kind and f'NETWORK = "{kind.group(1)}"' in script), "network differs"
PY

"$fabtrain" advise --availability "$here/availability/plain.yaml" --model gpt2 --max-gpus 2 \
  -o "$work/b" >"$work/b.txt"
grep -q "GPU_RTX6000" "$work/b/slice.yaml" || fail "the plain YAML's GPUs are not in the slice"
python3 -m py_compile "$work/b/reserve.py"

refused() {  # file, expected words
  if "$fabtrain" advise --availability "$1" --model gpt2 -o "$work/x" >"$work/x.txt" 2>&1; then
    fail "$1 was accepted"
  fi
  grep -q "$2" "$work/x.txt" || { cat "$work/x.txt"; fail "$1: the message lacks '$2'"; }
}
echo '[{"name": "UTAH", "state": "Active", "rtx6000_available": -2}]' >"$work/neg.json"
refused "$work/neg.json" "rtx6000_available must be a whole number"
echo '{"UTAH": {"rtx6000": "lots"}}' >"$work/word.yaml"
refused "$work/word.yaml" "rtx6000 must be a whole number"
echo '[]' >"$work/empty.json"
refused "$work/empty.json" "no site can host a GPU VM"
echo '[{"state": "Active"}]' >"$work/noname.json"
refused "$work/noname.json" "string 'name'"
echo '- just a list' >"$work/list.yaml"
refused "$work/list.yaml" "site -> {GPU: free count}"
refused "$work/missing.json" "cannot read the availability file"
echo "advise: all cases passed"
