#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in ./build-fuzz and runs each for
# HEADERD_FUZZ_SECONDS (default 30) from the seed corpus made of the real test data.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${HEADERD_FUZZ_SECONDS:-30}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEADERD_FUZZ=ON \
    -DHEADERD_BUILD_TESTS=OFF -DHEADERD_BUILD_BENCHMARKS=OFF -DHEADERD_WERROR=OFF >/dev/null
cmake --build build-fuzz --target core_fuzz --parallel "$(nproc)"

corpus=build-fuzz/corpus/core
mkdir -p "$corpus"
# Seeds: one input per decoder (selector byte + real bytes).
{ printf '\x01'; head -c 540 tests/data/mainnet-headers-0-8191.rlp; } >"$corpus/header"
{ printf '\x00'; head -c 2000 tests/data/mainnet-headers-0-8191.rlp; } >"$corpus/rlp"
{ printf '\x04'; head -c 200000 tests/data/mainnet-00000-5ec1ffb8.era1; } >"$corpus/era1"
printf '\x03\xc6\x84\xfc\x64\xec\x04\x83\x11\x8c\x30' >"$corpus/forkid"
./build-fuzz/fuzz/core_fuzz "$corpus" -max_total_time="$seconds" -max_len=300000 -print_final_stats=1 2>&1 | tail -12
