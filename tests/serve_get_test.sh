#!/usr/bin/env bash
# headerd get against headerd serve on loopback: the README acceptance (192 headers from 8000
# whose hashes match the mainnet list, also from 16 concurrent gets against 2 workers), JSON and
# RLP output, errors, a second process on the datadir, node key reuse, and a clean shutdown on
# SIGTERM, also when SIGTERM keeps coming while serve winds down.
source "$(dirname "$0")/lib.sh" "$@"

D=$WORK/d
"$HEADERD" import --datadir "$D" "$DATA/mainnet-00000-5ec1ffb8.era1" >/dev/null 2>&1
"$HEADERD" freeze --datadir "$D" --keep 1000 >/dev/null 2>&1

start_serve() {
    rm -f "$D/enode"
    "$HEADERD" serve --datadir "$D" --listen 127.0.0.1:0 --workers 2 >"$WORK/serve.out" 2>"$WORK/serve.err" &
    SERVE_PID=$!
    for _ in $(seq 100); do
        [ -s "$D/enode" ] && return 0
        kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.err" >&2; fail "serve exited"; }
        sleep 0.1
    done
    fail "serve did not write $D/enode within 10 s"
}
stop_serve() {
    kill -TERM "$SERVE_PID"
    for _ in $(seq 100); do
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$SERVE_PID" 2>/dev/null && fail "serve still running 10 s after SIGTERM"
    wait "$SERVE_PID" || fail "serve exited with $? after SIGTERM"
}
trap 'kill -9 "$SERVE_PID" 2>/dev/null || true; rm -rf "$WORK"' EXIT

start_serve
ENODE=$(cat "$D/enode")
[ "$(head -1 "$WORK/serve.out")" = "$ENODE" ] || fail "serve did not print its enode on stdout"
[ "$(stat -c %a "$D/nodekey")" = 600 ] || fail "nodekey is not mode 0600"

# The acceptance command: 192 headers from 8000, every hash as published.
"$HEADERD" get --peer "$ENODE" --origin 8000 --amount 192 --format json >"$WORK/get.json" 2>"$WORK/get.err"
[ "$(wc -l <"$WORK/get.json")" = 192 ] || fail "expected 192 headers"
# "NUMBER HASH" per header of a --format json output, as in the published hash list.
numbers_and_hashes() {
    grep -o '"number":[0-9]*,"hash":"0x[0-9a-f]*"' "$1" | sed 's/"number":\([0-9]*\),"hash":"\(0x[0-9a-f]*\)"/\1 \2/'
}
awk '$1 >= 8000' "$DATA/mainnet-headers-0-8191.hashes.txt" >"$WORK/want.txt"
numbers_and_hashes "$WORK/get.json" | cmp - "$WORK/want.txt" || fail "hashes differ"
grep -q "rtt=" "$WORK/get.err" || fail "get did not report the round-trip time on stderr"
echo "ok: get 8000+192 from serve: every hash matches the mainnet list"

# RLP output is the stored bytes: the concatenation equals the reference slice.
"$HEADERD" get --peer "$ENODE" --origin 7100 --amount 200 >"$WORK/get.rlp" 2>/dev/null
off=$(awk '$1 < 7100 {s += $4} END {print s}' "$DATA/mainnet-headers-0-8191.td.txt")
len=$(awk '$1 >= 7100 && $1 < 7300 {s += $4} END {print s}' "$DATA/mainnet-headers-0-8191.td.txt")
expected=$(dd if="$DATA/mainnet-headers-0-8191.rlp" iflag=skip_bytes,count_bytes skip="$off" count="$len" bs=64K status=none | od -An -v -tx1 | tr -d ' \n')
[ "$(sed 's/^0x//' "$WORK/get.rlp" | tr -d '\n')" = "$expected" ] || fail "RLP output differs across the boundary"
echo "ok: get 7100+200 (across the freezer boundary) prints the stored RLP byte for byte"

# The same from 16 concurrent gets, spread over serve's 2 workers.
pids=()
for i in $(seq 16); do
    "$HEADERD" get --peer "$ENODE" --origin 8000 --amount 192 --format json >"$WORK/par.$i" 2>"$WORK/par.$i.err" &
    pids+=($!)
done
for i in $(seq 16); do
    wait "${pids[$((i - 1))]}" || { cat "$WORK/par.$i.err" >&2; fail "concurrent get $i failed"; }
    numbers_and_hashes "$WORK/par.$i" | cmp -s - "$WORK/want.txt" ||
        fail "concurrent get $i: hashes differ from the mainnet list"
done
echo "ok: 16 concurrent gets against --workers 2: 192 headers each, every hash matches"

# A second process on the same datadir is refused with the holder named, and the datadir is intact.
expect_fail "a second process on the datadir" "is in use by process $SERVE_PID" "$HEADERD" inspect --datadir "$D"

# By hash, reverse, skip.
h100=$(awk '$1 == 100 {print $2}' "$DATA/mainnet-headers-0-8191.hashes.txt")
"$HEADERD" get --peer "$ENODE" --origin "$h100" --amount 3 --skip 9 --reverse --format json 2>/dev/null |
    grep -o '"number":[0-9]*' | tr '\n' ' ' >"$WORK/nums"
[ "$(cat "$WORK/nums")" = '"number":100 "number":90 "number":80 ' ] || fail "hash origin reverse skip: $(cat "$WORK/nums")"
echo "ok: get by hash, reverse, skip 9"

# Errors name the peer and exit non-zero.
expect_fail "get from a closed port" "127.0.0.1:1" \
    "$HEADERD" get --peer "${ENODE%@*}@127.0.0.1:1" --origin 0 --amount 1 --timeout 2
expect_fail "get with a bad enode" "bad enode URL" "$HEADERD" get --peer enode://xyz --origin 0 --amount 1
"$HEADERD" generate --datadir "$WORK/other" --count 10 >/dev/null 2>&1
expect_fail "serve on a busy port" "cannot listen on" \
    "$HEADERD" serve --datadir "$WORK/other" --listen "${ENODE##*@}"
expect_fail "serve of an empty datadir" "$WORK/nowhere" "$HEADERD" serve --datadir "$WORK/nowhere"

stop_serve
key_before=$(cat "$D/nodekey")
start_serve
[ "$(cat "$D/nodekey")" = "$key_before" ] || fail "nodekey changed across restarts"
[ "$(cat "$D/enode" | cut -d@ -f1)" = "$(echo "$ENODE" | cut -d@ -f1)" ] || fail "node id changed across restarts"
# An impatient supervisor: SIGTERM again and again, without a pause, until serve is gone (10 s at
# most). Every repeat must find the signal still handled; before StopSignals, one that came after
# asio's signal set was gone killed serve half way out (exit status 143).
kill -TERM "$SERVE_PID"
deadline=$((SECONDS + 10))
while kill -TERM "$SERVE_PID" 2>/dev/null && [ $SECONDS -lt $deadline ]; do :; done
kill -0 "$SERVE_PID" 2>/dev/null && fail "serve still running 10 s after SIGTERM"
wait "$SERVE_PID" || fail "serve exited with $? under repeated SIGTERM"
grep -q "Stopped" "$WORK/serve.err" || fail "no 'Stopped' after repeated SIGTERM: $(tail -3 "$WORK/serve.err")"
"$HEADERD" inspect --datadir "$D" >/dev/null 2>&1 || fail "datadir unreadable after repeated SIGTERM"
echo "ok: nodekey reused, SIGTERM stops serve cleanly, also when repeated"
echo PASS
