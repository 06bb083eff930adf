#!/usr/bin/env bash
# The serving component from outside the tree (docs/embedding.md): `cmake --install --component dev`
# into a fresh prefix, examples/embed configured against it with find_package(headerd) and built,
# then run on mainnet epoch 0: its self-check (its own tracked requests, every reply compared),
# `headerd get` (192 headers from 8000, every hash as published) and `headerd load` with every
# reply compared to the era1 file (thresholds verified and errors==0). SIGTERM ends it with 0.
# Usage: tests/embed_test.sh HEADERD_BINARY BUILD_DIR
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/../scripts/lib/wait.sh"
BUILD=${2:?usage: $0 HEADERD_BINARY BUILD_DIR}
SRC=$(cd "$(dirname "$0")/.." && pwd)
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1
PID=
trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

cmake --install "$BUILD" --prefix "$WORK/prefix" --component dev >"$WORK/install.log" ||
    fail "install of the dev component: $(tail -5 "$WORK/install.log")"
[ -f "$WORK/prefix/lib/cmake/headerd/headerdConfig.cmake" ] || fail "no headerdConfig.cmake installed"
[ ! -e "$WORK/prefix/bin/headerd" ] || fail "the dev component installed the program"
echo "ok: installed $(find "$WORK/prefix" -type f | wc -l) files ($(du -sh "$WORK/prefix" | cut -f1))"

# The same compiler and launcher (ccache) as the build tree, so CI compiles little.
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
launcher=$(sed -n 's/^CMAKE_CXX_COMPILER_LAUNCHER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
cmake -S "$SRC/examples/embed" -B "$WORK/embed" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$compiler" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} \
    >"$WORK/configure.log" 2>&1 || fail "configure examples/embed: $(tail -20 "$WORK/configure.log")"
cmake --build "$WORK/embed" >"$WORK/build.log" 2>&1 || fail "build examples/embed: $(tail -30 "$WORK/build.log")"
echo "ok: examples/embed configured with find_package(headerd) and built"

"$WORK/embed/embed" "$ERA1" >"$WORK/embed.out" 2>"$WORK/embed.err" &
PID=$!
embed_ready() { [ -s "$WORK/embed.out" ] || ! kill -0 "$PID" 2>/dev/null; }
poll_until 10 0.05 -- embed_ready || true
ENODE=$(head -1 "$WORK/embed.out")
[[ $ENODE == enode://* ]] || fail "embed printed no enode URL in 10 s: $(cat "$WORK/embed.err")"
grep -q "16 requests to ourselves, 16 verified replies" "$WORK/embed.err" || fail "self-check: $(cat "$WORK/embed.err")"
echo "ok: $(grep 'requests to ourselves' "$WORK/embed.err")"

"$HEADERD" get --peer "$ENODE" --origin 8000 --amount 192 --format json >"$WORK/get.json" 2>"$WORK/get.err" ||
    fail "get: $(cat "$WORK/get.err")"
grep -o '"number":[0-9]*,"hash":"0x[0-9a-f]*"' "$WORK/get.json" | sed 's/"number":\([0-9]*\),"hash":"\(0x[0-9a-f]*\)"/\1 \2/' >"$WORK/got"
awk '$1 >= 8000 && $1 < 8192' "$DATA/mainnet-headers-0-8191.hashes.txt" | diff - "$WORK/got" >/dev/null ||
    fail "get: the hashes differ from the published ones ($(wc -l <"$WORK/got") lines)"
echo "ok: get 8000+192 from embed, every hash as published"

"$HEADERD" load --peer "$ENODE" --clients 8 --duration 5 --chain "$ERA1" --threshold verified \
    --threshold 'errors==0' --json "$WORK/load.json" >"$WORK/load.out" 2>&1 || fail "load: $(tail -20 "$WORK/load.out")"
requests=$(grep -o '"requests":[0-9]*' "$WORK/load.json" | head -1 | cut -d: -f2)
[ "${requests:-0}" -gt 100 ] || fail "load: only ${requests:-0} requests"
echo "ok: load, 8 clients for 5 s: $requests requests, every reply compared with the era1 file"

kill -TERM "$PID"
wait "$PID" || fail "embed exited $? after SIGTERM: $(cat "$WORK/embed.err")"
PID=
echo PASS
