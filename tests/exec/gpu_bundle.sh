#!/usr/bin/env bash
# The GPU bundle is self-contained: packs the build under test (scripts/gpu-bundle.sh with
# SKIP_BUILD=1) and checks, with the bundle's environment (env.sh: the bundle's libraries and this
# machine's CUDA ones only), that
#   - ldd finds every library of every binary and plugin, each in the bundle, in the CUDA
#     directories, or glibc's (the driver's libcuda aside);
#   - the bundle fits its size limit;
#   - fabtrain-exec --version runs, the backend op table runs (its CPU rows; the CUDA rows say
#     why they are skipped) and the CUDA tests skip with their reason (no GPU here);
#   - run-gpu-check.sh runs up to the CUDA tests, then stops with exit status 77 and the reason;
#   - where a private mount namespace is allowed (root): with every system copy of the bundled
#     libraries and Open MPI's own plugin and help directories hidden, fabtrain-exec runs one
#     CPU step alone (an MPI singleton) and two ranks of a dp=2 step under the bundle's mpirun.
# Usage: gpu_bundle.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bundle=$work/bundle
SKIP_BUILD=1 BUILD_DIR=$build "$src/scripts/gpu-bundle.sh" "$bundle"

source "$bundle/env.sh"
glibc='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
bad=0
mapfile -t elves < <(ls "$bundle"/bin/* "$bundle"/openmpi/bin/* "$bundle"/lib/*.so* \
  "$bundle"/openmpi/plugins/*.so \
  "$bundle"/openmpi/pmix/*.so | grep -v '\.xz$')
for f in "${elves[@]}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then
      echo "FAIL: $f: $name not found"
      bad=1
      continue
    fi
    dir=$(dirname "$(readlink -f "$path")")
    case ":$BUNDLE_LIBS:$CUDA_LIBS:" in *":$dir:"*) continue ;; esac
    [[ $name =~ $glibc || $name =~ ^libcuda\.so ]] && continue
    echo "FAIL: $f: $name comes from $path, outside the bundle and the CUDA libraries"
    bad=1
  done < <(ldd "$f")
done
[ $bad -eq 0 ] || exit 1
echo "ldd: ${#elves[@]} binaries and plugins find all their libraries in the bundle, CUDA or glibc"

"$bundle/bin/fabtrain-exec" --version
# skips_without_gpu LOG PATTERN WHAT COMMAND...: COMMAND exits 77 and PATTERN is in LOG (its reason).
skips_without_gpu() {
  local log=$1 pattern=$2 what=$3 rc=0
  shift 3
  "$@" >"$work/run.log" 2>&1 || rc=$?
  if [ $rc -ne 77 ] || ! grep -q "$pattern" "$log"; then
    echo "FAIL: $what without a GPU: rc=$rc (want 77 and '$pattern' in $log):"
    cat "$work/run.log"
    exit 1
  fi
  echo "$what without a GPU: $(grep -m1 "$pattern" "$log")"
}
skips_without_gpu "$work/run.log" SKIP test_exec_cuda "$bundle/bin/test_exec_cuda"
if ! "$bundle/bin/test_exec" --test-case='backend ops:*' >"$work/ops.log" 2>&1; then
  echo "FAIL: the backend op table from the bundle:"
  cat "$work/ops.log"
  exit 1
fi
echo "the backend op table runs from the bundle: $(grep -m1 'test cases:' "$work/ops.log")"
skips_without_gpu "$work/check/summary.txt" "^no GPU here: SKIP" run-gpu-check.sh \
  "$bundle/run-gpu-check.sh" "$work/check"

# Two ranks through the bundle's Open MPI with the system's copies hidden.
if ! unshare -m true 2>/dev/null; then
  echo "note: no private mount namespace here (unshare -m): the run with the system's copies hidden is left out"
  exit 0
fi
cat >"$work/hidden.sh" <<EOF
set -e
for lib in "$bundle"/lib/*; do
  name=\$(basename "\${lib%.xz}")
  for sys in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
    [ -e "\$sys/\$name" ] && mount --bind /dev/null "\$sys/\$name"
  done
done
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
  /usr/share/pmix; do
  [ -d "\$d" ] && mount -t tmpfs none "\$d"
done
cd "$work"
timeout 60 "$bundle/bin/fabtrain-exec" train --device cpu --model gpt2-nano --steps 1 \
  --data "$bundle/share/fabtrain/data/tiny_prose_train.txt" --batch 2 --seq 16 --threads 1
timeout 120 mpirun -np 2 --oversubscribe "$bundle/bin/fabtrain-exec" train --device cpu \
  --plan dp=2 --model gpt2-nano --data "$bundle/share/fabtrain/data/tiny_prose_train.txt" \
  --batch 4 --seq 32 --steps 2 --threads 1 --print-every 1
EOF
unshare -m bash "$work/hidden.sh"
echo "one rank alone and dp=2 under the bundle's mpirun ran with the system's copies hidden"
