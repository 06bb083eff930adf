#!/usr/bin/env bash
# README command 1: install what is missing, build, import the bundled real mainnet headers
# (era1 epoch 0, blocks 0..8191) into ./datadir, show what the node holds, and serve them to
# devp2p peers on 127.0.0.1:30303 (the enode URL is printed and written to datadir/enode), with
# Prometheus metrics on http://127.0.0.1:6060/metrics. Importing again is a no-op. Stop with Ctrl-C.
# It admits up to 200 peers (HEADERD_MAX_PEERS), room for README's `headerd load --clients 64`.
# HEADERD_DATADIR, HEADERD_LISTEN, HEADERD_METRICS and HEADERD_MAX_PEERS change the defaults.
# It installs and builds only what serving needs: the headerd binary, without the tests and
# benchmarks (a fresh ./build is configured without them, in unity batches; one that
# scripts/test.sh configured keeps them but builds only headerd here).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --build-only
build_dir=${HEADERD_BUILD_DIR:-build}
only_binary=()
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    # A first build compiles everything once: unity batches (cmake/headerd.cmake) save most of it.
    # scripts/test.sh turns them off again for a developer's incremental builds.
    only_binary=(-DHEADERD_BUILD_TESTS=OFF -DHEADERD_BUILD_BENCHMARKS=OFF -DHEADERD_UNITY=ON)
fi
HEADERD_BUILD_TARGETS=headerd ./scripts/build.sh "${only_binary[@]}"
datadir=${HEADERD_DATADIR:-datadir}
"$build_dir/node/headerd" import --datadir "$datadir" tests/data/mainnet-00000-5ec1ffb8.era1
"$build_dir/node/headerd" verify --datadir "$datadir"
"$build_dir/node/headerd" inspect --datadir "$datadir"
exec "$build_dir/node/headerd" serve --datadir "$datadir" --listen "${HEADERD_LISTEN:-127.0.0.1:30303}" \
    --metrics "${HEADERD_METRICS:-127.0.0.1:6060}" --max-peers "${HEADERD_MAX_PEERS:-200}"
