# Sourced by a bundle's run-gpu-check.sh (and the bundle's self-containment test): points the
# loader at the bundle's libraries and at the CUDA libraries this machine has (the toolkit's, else
# the Python wheels' nvidia/*/lib), and Open MPI and PMIx at the bundle's plugins and help texts
# (a one-host job over shared memory and TCP, launched without ssh). Sets BUNDLE, BUNDLE_LIBS (the
# bundle's library directories) and CUDA_LIBS.
BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cuda_dirs=()
for d in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda/lib \
  /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && cuda_dirs+=("$(readlink -f "$d")")
done
while read -r d; do cuda_dirs+=("$d"); done < <(python3 - 2>/dev/null <<'PY'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for base in nvidia.__path__:
    for d in sorted(glob.glob(os.path.join(base, "*", "lib")) + glob.glob(os.path.join(base, "*", "lib64"))):
        print(d)
PY
)
CUDA_LIBS=$(printf '%s\n' "${cuda_dirs[@]}" | awk 'NF && !seen[$0]++' | paste -sd:)
# Libraries shipped compressed (xz) are unpacked once, outside the bundle (which may be read-only).
BUNDLE_LIBS=$BUNDLE/lib
if ls "$BUNDLE"/lib/*.xz >/dev/null 2>&1; then
  unpacked=${TMPDIR:-/tmp}/fabtrain-bundle-$(id -u)-$(cat "$BUNDLE/COMMIT" | cut -c1-12)
  mkdir -p "$unpacked"
  for packed in "$BUNDLE"/lib/*.xz; do
    lib=$unpacked/$(basename "${packed%.xz}")
    [ -s "$lib" ] && continue
    python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o: shutil.copyfileobj(i, o)' \
      "$packed" "$lib.part" && mv "$lib.part" "$lib"
  done
  BUNDLE_LIBS=$BUNDLE/lib:$unpacked
fi
export LD_LIBRARY_PATH=$BUNDLE_LIBS${CUDA_LIBS:+:$CUDA_LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$BUNDLE/bin:$PATH
export FABTRAIN_SOURCE_DIR=$BUNDLE/share/fabtrain
export OPAL_PREFIX=$BUNDLE/openmpi PMIX_INSTALL_PREFIX=$BUNDLE/openmpi
export OMPI_MCA_mca_base_component_path=$BUNDLE/openmpi/plugins
export PMIX_MCA_mca_base_component_path=$BUNDLE/openmpi/pmix
export OMPI_MCA_plm=isolated OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_mca_base_component_show_load_errors=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
