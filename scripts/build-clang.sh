#!/usr/bin/env bash
# Builds the whole project with clang++ 14 into build-clang/ (CI keeps it compiling with both
# compilers; libFuzzer needs clang). Usage: scripts/build-clang.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_C_COMPILER=clang-14 -DFABTRAIN_CUDA=OFF "$@" >/dev/null
cmake --build build-clang -j"$(nproc)"
