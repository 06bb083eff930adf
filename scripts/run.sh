#!/usr/bin/env bash
# README command 1: install what is missing, build, import the bundled real mainnet headers
# (era1 epoch 0, blocks 0..8191) into ./datadir and show what the node holds.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
datadir=${HEADERD_DATADIR:-datadir}
./build/node/headerd import --datadir "$datadir" tests/data/mainnet-00000-5ec1ffb8.era1
./build/node/headerd verify --datadir "$datadir"
./build/node/headerd inspect --datadir "$datadir"
