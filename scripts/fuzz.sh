#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in ./build-fuzz and runs each for
# HEADERD_FUZZ_SECONDS (default 30) from the seed corpus made of the real test data.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${HEADERD_FUZZ_SECONDS:-30}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEADERD_FUZZ=ON \
    -DHEADERD_BUILD_TESTS=OFF -DHEADERD_BUILD_BENCHMARKS=OFF -DHEADERD_WERROR=OFF >/dev/null
cmake --build build-fuzz --target core_fuzz rlpx_fuzz eth_fuzz --parallel "$(nproc)"

corpus=build-fuzz/corpus/core
mkdir -p "$corpus"
# Seeds: one input per decoder (selector byte + real bytes).
{ printf '\x01'; head -c 540 tests/data/mainnet-headers-0-8191.rlp; } >"$corpus/header"
{ printf '\x00'; head -c 2000 tests/data/mainnet-headers-0-8191.rlp; } >"$corpus/rlp"
{ printf '\x04'; head -c 200000 tests/data/mainnet-00000-5ec1ffb8.era1; } >"$corpus/era1"
printf '\x03\xc6\x84\xfc\x64\xec\x04\x83\x11\x8c\x30' >"$corpus/forkid"
run() {
    local target=$1 dir=$2
    shift 2
    echo "== $target ($seconds s)"
    "./build-fuzz/fuzz/$target" "$dir" -max_total_time="$seconds" -print_final_stats=1 "$@" 2>&1 | tail -6
}
run core_fuzz "$corpus" -max_len=300000

# RLPx: an EIP-8 size prefix (selector 0) and a frame stream (selector 1), seeded with fixed bytes of the test data.
rcorpus=build-fuzz/corpus/rlpx
mkdir -p "$rcorpus"
{ printf '\x00\x01\xb3'; tail -c 435 tests/data/mainnet-headers-0-8191.rlp; } >"$rcorpus/auth"
{ printf '\x01'; tail -c 256 tests/data/mainnet-00000-5ec1ffb8.era1; } >"$rcorpus/frames"
run rlpx_fuzz "$rcorpus" -max_len=4096

# eth: a GetBlockHeaders request (selector 5) and a Status (selector 3) from the spec's vectors.
ecorpus=build-fuzz/corpus/eth
mkdir -p "$ecorpus"
printf '\x05\xca\x82\x04\xd2\xc6\x83\x01\xe2\x40\x0a\x05\x80' >"$ecorpus/get_headers"
printf '\x01\xc1\x04' >"$ecorpus/disconnect"
run eth_fuzz "$ecorpus" -max_len=4096
