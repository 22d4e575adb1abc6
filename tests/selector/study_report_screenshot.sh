#!/usr/bin/env bash
# The study report renders in a browser: `fabtrain study` on one cluster and model, the page and
# one of its SVG figures shot with headless Chromium (Debian's `chromium`), and each shot must
# hold drawn pixels (not a blank page). Exits 77 (skipped) where chromium is not installed.
# Usage: study_report_screenshot.sh FABTRAIN
set -euo pipefail
fabtrain=$1
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: chromium is not installed (Debian: apt-get install chromium); the page was not rendered"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$fabtrain" study --clusters utah-amst --models gpt2-medium --workers 1 --html "$work/report.html" >"$work/study.log"
test -s "$work/report-utah-amst.svg"
for page in report.html report-utah-amst.svg; do
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,900 \
    --screenshot="$work/$page.png" "file://$work/$page" >"$work/chromium.log" 2>&1 || { cat "$work/chromium.log"; exit 1; }
  python3 - "$work/$page.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width, height, kind = 8, b"", 0, 0, 0
while pos < len(data):
    length, tag = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if tag == b"IHDR":
        width, height, depth, kind = struct.unpack(">IIBB", body[:10])
    elif tag == b"IDAT":
        idat += body
    pos += 12 + length
channels = {2: 3, 6: 4}[kind]
raw = zlib.decompress(idat)
stride = width * channels
# Undo the PNG row filters, then count pixels that are not near-white.
prev, drawn = bytearray(stride), 0
for row in range(height):
    f, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - channels] if i >= channels else 0
        b = prev[i]
        c = prev[i - channels] if i >= channels else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    drawn += sum(1 for x in range(0, stride, channels) if min(line[x:x + 3]) < 200)
    prev = line
share = drawn / (width * height)
assert share > 0.005, f"{sys.argv[1]}: only {share:.2%} of the pixels are drawn"
print(f"{sys.argv[1]}: {share:.1%} of the pixels drawn")
PY
done
echo "report rendered"
