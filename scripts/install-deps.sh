#!/usr/bin/env bash
# Installs the Debian packages fabtrain needs. Idempotent: quiet and quick when all are there.
set -euo pipefail
packages=(
  g++ cmake make pkg-config git
  libsimgrid-dev libopenmpi-dev openmpi-bin libopenblas-dev
  libfmt-dev doctest-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libboost-dev
  python3 iproute2 ethtool iputils-ping
  clang-14 libclang-rt-14-dev libomp-14-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
