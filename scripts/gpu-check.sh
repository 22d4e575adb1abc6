#!/usr/bin/env bash
# The GPU check on a machine that has everything fabtrain builds with plus a GPU: packs the
# bundle (scripts/gpu-bundle.sh, a Release build for architectures 75;80;86;90) and runs its
# run-gpu-check.sh (docs/gpu-check.md). On a GPU machine that has only the driver, cuBLAS and
# NCCL, make the bundle elsewhere and run OUT/bundle/run-gpu-check.sh there instead.
# Usage: scripts/gpu-check.sh OUT_DIR   (env: as gpu-bundle.sh and run-gpu-check.sh)
set -euo pipefail
out=${1:?usage: gpu-check.sh OUT_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
"$src/scripts/gpu-bundle.sh" "$out/bundle"
exec "$out/bundle/run-gpu-check.sh" "$out"
