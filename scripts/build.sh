#!/usr/bin/env bash
# Configures and builds headerd in ./build (Release with debug info), through ccache when it is
# installed (scripts/ccache.sh). Extra arguments go to CMake. HEADERD_BUILD_TARGETS (space
# separated) builds only those targets (scripts/run.sh: the headerd binary alone).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HEADERD_BUILD_DIR:-build}
. scripts/ccache.sh
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${headerd_launcher[@]}" "$@" >/dev/null
targets=()
for t in ${HEADERD_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" --parallel "$(nproc)" "${targets[@]}"
