#!/usr/bin/env python3
"""Reads fabtrain-exec run records (JSON lines) for the GPU check (run-gpu-check.sh).

  gpu-losses.py compare REFERENCE.jsonl OTHER.jsonl MAX_RELATIVE
      every step's loss of OTHER within MAX_RELATIVE (relative) of REFERENCE's; prints both and
      the worst difference; exit 1 when over, or when the records differ in length or are empty.
  gpu-losses.py speed RECORD.jsonl PARAMETERS LAYERS CHANNELS SEQ [PEAK_TFLOPS]
      mean tokens/s over the steps after the first (warm-up), the achieved TFLOP/s by llm.c's
      estimate (6N + 12 L C T FLOPs per token) and, with a peak, the MFU; exit 1 when no steps.
  gpu-losses.py peak CATALOG.yaml GPU_NAME PRECISION
      the dense peak TFLOP/s at PRECISION (fp32, tf32, bf16, fp16) of the catalog's GPU type
      that nvidia-smi's GPU_NAME names (every part of the type's key, GPU_ dropped, in the
      name; the longest match wins), then the entry, its description and its source; exit 1
      when no type matches or the type has no peak at that precision.
"""
import json
import re
import sys


def steps(path):
    try:
        with open(path) as f:
            return [r for r in map(json.loads, f) if r.get("type", "step") == "step" and "loss" in r]
    except (OSError, ValueError):
        return []


def compare(reference, other, limit):
    a, b = [r["loss"] for r in steps(reference)], [r["loss"] for r in steps(other)]
    if not a or len(a) != len(b):
        print(f"  cannot compare: {len(a)} steps in {reference}, {len(b)} in {other}")
        return 1
    worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    print(f"  reference {' '.join('%.5f' % x for x in a)}")
    print(f"  other     {' '.join('%.5f' % x for x in b)}")
    verdict = "ok" if worst <= limit else "OVER"
    print(f"  worst relative difference {worst:.2e} (limit {limit:g}): {verdict}")
    return 0 if worst <= limit else 1


def speed(path, parameters, layers, channels, seq, peak):
    rows = steps(path)[1:]
    if not rows:
        print(f"  {path}: no steps after the first")
        return 1
    tps = sum(r["tokens_per_s"] for r in rows) / len(rows)
    tflops = tps * (6 * parameters + 12 * layers * channels * seq) / 1e12
    mfu = f", MFU {100 * tflops / peak:.1f}% of {peak:g} TFLOP/s" if peak else ""
    print(f"  {tps:,.0f} tokens/s, {tflops:.1f} TFLOP/s achieved{mfu}")
    return 0


def catalog_gpus(path):
    """The catalog's gpus: block as {key: {field: text}} (its entries are one field a line)."""
    gpus, key, inside = {}, None, False
    with open(path) as f:
        for line in f:
            if re.match(r"^\S", line):
                inside = line.startswith("gpus:")
                continue
            entry = re.match(r"^  (GPU_\w+):", line)
            field = re.match(r"^    (\w+):\s*(.*)$", line)
            if inside and entry:
                key = entry.group(1)
                gpus[key] = {}
            elif inside and key and field:
                value = re.sub(r"\s+#.*$", "", field.group(2)).strip()
                gpus[key][field.group(1)] = value.strip('"')
    return gpus


def catalog_peak(catalog, gpu_name, precision):
    name = re.sub(r"[^a-z0-9]", "", gpu_name.lower())
    best, best_length = None, 0
    for key in catalog_gpus(catalog):
        parts = key[len("GPU_"):].lower().split("_")
        if all(p in name for p in parts) and sum(map(len, parts)) > best_length:
            best, best_length = key, sum(map(len, parts))
    if not best:
        print(f"  no GPU type of {catalog} matches '{gpu_name}'")
        return 1
    entry = catalog_gpus(catalog)[best]
    tflops = float(entry.get(f"peak_{precision}_tflops", "0") or 0)
    if tflops <= 0:
        print(f"  {best} has no {precision} peak in {catalog}")
        return 1
    print(f"{tflops:g} {best} ({entry.get('description', '')}); source: {entry.get('source', '')}")
    return 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "compare":
        return compare(argv[2], argv[3], float(argv[4]))
    if len(argv) >= 7 and argv[1] == "speed":
        peak = float(argv[7]) if len(argv) > 7 and argv[7] else 0.0
        return speed(argv[2], float(argv[3]), int(argv[4]), int(argv[5]), int(argv[6]), peak)
    if len(argv) == 5 and argv[1] == "peak":
        return catalog_peak(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
