#!/usr/bin/env bash
# Installs the Debian 12 packages headerd needs to build and test, only when some are missing.
# Uses sudo for apt-get when not root. Safe to run repeatedly.
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config clang-format clang libclang-rt-14-dev
    libboost1.81-dev libleveldb-dev libsnappy-dev libspdlog-dev libfmt-dev
    libsecp256k1-dev libssl-dev libcrypto++-dev prometheus-cpp-dev libtomlplusplus-dev
    libgtest-dev libgmock-dev libbenchmark-dev
    strace prometheus
)
# Node.js and npm run the interop tests' independent peer; any Node.js >= 18 will do, so a
# machine that already has one (from Debian or NodeSource) keeps it.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "setup: not root and sudo is not available; install as root: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
