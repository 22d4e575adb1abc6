#!/usr/bin/env bash
# Builds, on this machine, a self-contained directory that runs the GPU check on a machine with
# nothing but the NVIDIA driver, CUDA 13's cuBLAS and NCCL (the toolkit, or the Python wheels
# nvidia-cublas and nvidia-nccl-cu13): the programs and the test binaries that need a GPU, every
# non-CUDA shared library they load (fmt, libfyaml, OpenBLAS, OpenMP, the C++ runtime, Open MPI
# with its plugins and mpirun), the data files the checks read and run-gpu-check.sh, which finds
# the CUDA libraries there and runs the check (docs/gpu-check.md).
#
# Not bundled: glibc (the GPU machine's must be at least this machine's), the driver (libcuda),
# cuBLAS and NCCL (hundreds of MiB; the GPU machine has them). The CUDA runtime (libcudart) is.
# Usage: scripts/gpu-bundle.sh OUT_DIR
#   env: BUILD_DIR (default build-bundle; configured and built here for CUDA architectures
#        75;80;86;90 unless SKIP_BUILD=1, which packages BUILD_DIR as it is), JOBS (2),
#        MAX_MIB (48: the bundle's size limit)
set -euo pipefail
out=${1:?usage: gpu-bundle.sh OUT_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$src/build-bundle}
max_mib=${MAX_MIB:-48}
programs=(fabtrain-exec test_exec test_exec_cuda)

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="75;80;86;90" \
    >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target "${programs[@]}"
fi
for p in "${programs[@]}"; do
  [ -x "$build/bin/$p" ] || {
    echo "gpu-bundle: $build/bin/$p is missing (a build with CUDA and NCCL found builds it)" >&2
    exit 1
  }
done

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/openmpi" "$out/share/fabtrain"
out=$(cd "$out" && pwd)
for p in "${programs[@]}"; do cp "$build/bin/$p" "$out/bin/"; done

# Open MPI: mpirun and its daemon, the plugins a one-host TCP/shared-memory job loads (not the
# fabrics': UCX, OFI, verbs, PSM, ...), PMIx's plugins and the help texts. run-gpu-check.sh points
# OPAL_PREFIX and the plugin paths here.
ompi_lib=$(dirname "$(readlink -f "$(ldconfig -p | awk '/libmpi\.so\.[0-9]+ .*x86-64/{print $NF; exit}')")")
ompi_plugins=$(ls -d "$ompi_lib"/openmpi/lib/openmpi3 2>/dev/null || true)
pmix_plugins=$(ls -d "$ompi_lib"/pmix2/lib/pmix 2>/dev/null || true)
[ -n "$ompi_plugins" ] && [ -n "$pmix_plugins" ] || {
  echo "gpu-bundle: Open MPI's or PMIx's plugin directory is not under $ompi_lib" >&2
  exit 1
}
cp "$(readlink -f "$(command -v orterun)")" "$out/bin/mpirun"
# A singleton (a rank started without mpirun) starts orted from Open MPI's bindir: OPAL_PREFIX/bin.
mkdir -p "$out/openmpi/bin"
cp "$(readlink -f "$(command -v orted)")" "$out/openmpi/bin/orted"
skip='ucx|ofi|openib|verbs|psm|portals|usnic|hcoll|cuda|lustre|gpfs|ime|knem|xpmem|atomic_|memheap|scoll|spml|sshmem|fcoll|fbtl|fs_|io_|sharedfp|monitoring'
mkdir -p "$out/openmpi/plugins" "$out/openmpi/pmix" "$out/openmpi/share"
for f in "$ompi_plugins"/*.so; do
  [[ $(basename "$f") =~ $skip ]] || cp "$f" "$out/openmpi/plugins/"
done
cp "$pmix_plugins"/*.so "$out/openmpi/pmix/"
cp -r /usr/share/openmpi "$out/openmpi/share/" 2>/dev/null || true
cp -r /usr/share/pmix "$out/openmpi/share/" 2>/dev/null || true
rm -rf "$out/openmpi/share/openmpi/"{amca-param-sets,*wrapper-data*} 2>/dev/null || true

# Every library the binaries and plugins load, but glibc's and the GPU machine's CUDA ones.
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
machine='^(libcuda|libcublas|libcublasLt|libnccl|libnvidia-)'
mapfile -t elves < <(ls "$out"/bin/* "$out"/openmpi/bin/* "$out"/openmpi/plugins/*.so \
  "$out"/openmpi/pmix/*.so)
ldd "${elves[@]}" 2>/dev/null | awk '/=> \//{print $1, $3}' | sort -u | while read -r name path; do
  [[ $name =~ $system || $name =~ $machine ]] && continue
  [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
done
# OpenBLAS's library holds every CPU's kernels of all of BLAS and LAPACK (36 MiB): shipped
# compressed (4 MiB), env.sh unpacks it on the GPU machine.
for big in "$out"/lib/libopenblas.so.*; do
  [ -e "$big" ] && xz -T0 -6 "$big"
done
strip --strip-unneeded "$out"/bin/* "$out"/openmpi/bin/* "$out"/lib/* "$out"/openmpi/plugins/*.so \
  "$out"/openmpi/pmix/*.so 2>/dev/null || true

# What the checks read (FABTRAIN_SOURCE_DIR points here).
share=$out/share/fabtrain
mkdir -p "$share/data" "$share/tests/exec" "$share/tests/models" "$share/platforms"
cp "$src"/data/tiny_prose_*.txt "$share/data/"
cp -r "$src/data/gpt2-bpe-mini" "$share/data/"
cp -r "$src/tests/exec/reference" "$share/tests/exec/"
cp -r "$src/tests/models/configs" "$share/tests/models/"
cp -r "$src/platforms/data" "$share/platforms/"
cp "$src/scripts/run-gpu-check.sh" "$out/"
cp "$src/scripts/gpu-losses.py" "$src/scripts/gpt2-reference.py" "$out/"
cp "$src/scripts/gpu-bundle-env.sh" "$out/env.sh"
git -C "$src" rev-parse HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"

size=$(du -sb "$out" | cut -f1)
mib=$(( (size + (1 << 20) - 1) >> 20 ))
echo "gpu-bundle: $out: $mib MiB ($(ls "$out/lib" | wc -l) libraries)"
if [ "$mib" -gt "$max_mib" ]; then
  echo "gpu-bundle: $mib MiB is over the limit of $max_mib MiB" >&2
  exit 1
fi
