#!/usr/bin/env bash
# kill -9 at random moments of every writing command, on the real mainnet headers 0..8191:
#   1. import (32 files of 256 headers, each reported when stored) into an empty datadir;
#   2. freeze --keep K of the imported epoch;
#   3. sync --keep K from a headerd that waits before each reply;
#   4. serve --follow --keep K of two upstream headerd nodes, from a random prefix of the epoch.
# After each kill: the datadir opens, verify passes, every header the command reported stored is
# there and the whole canonical chain is a byte-exact prefix of mainnet-headers-0-8191.rlp; then a
# rerun of the same command completes, byte-exact. HEADERD_CRASH_KILLS (default 20) is the number
# of kills in all, shared by the four commands; HEADERD_CRASH_SEED replays a run's random choices.
source "$(dirname "$0")/lib.sh" "$@"
RLP=$DATA/mainnet-headers-0-8191.rlp
HEAD=0xa6860fefa339c963e1bb622526cc8dd4344eedd2a9b969e74de5cccc445fbed4
KILLS=${HEADERD_CRASH_KILLS:-20}
PER=$(((KILLS + 3) / 4))
seed_random HEADERD_CRASH_SEED
echo "kills: $PER per command, $((PER * 4)) in all"

source "$(dirname "$0")/node_lib.sh"
FRESH_LOG=1
trap 'for p in "${PIDS[@]}" ${KILL_PID:-}; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

# stored DATADIR REPORTED WHAT: after a kill. The datadir opens; if it has a head, verify passes, the
# head is at least REPORTED (-1: nothing reported) and the chain 0..head exports as a byte-exact
# prefix of the epoch. A datadir killed before it had a chain may have no head (or no database
# yet) only if nothing was reported. Sets STORED_HEAD (-1 without a head), STORED_ANCIENT and
# STORED_BYTES (the size of the export).
stored() {
    local d=$1 reported=$2 what=$3 json
    STORED_HEAD=-1
    STORED_ANCIENT=0
    if [ ! -e "$d/chaindata/CURRENT" ]; then
        # Killed before LevelDB had created its database: nothing stored, and commands say so.
        [ "$reported" -lt 0 ] || fail "$what: block $reported was reported stored but $d has no chaindata/CURRENT"
        [ ! -d "$d" ] || expect_fail "$what: inspect of a datadir without a database" "holds no chain database" \
            "$HEADERD" inspect --datadir "$d" >/dev/null
        return 0
    fi
    json=$("$HEADERD" inspect --datadir "$d" --json 2>"$WORK/inspect.err") ||
        fail "$what: the datadir does not open: $(cat "$WORK/inspect.err")"
    STORED_ANCIENT=$(json_field "$json" ancient_items)
    if [ "$(json_field "$json" head_number)" = null ]; then
        [ "$reported" -lt 0 ] || fail "$what: block $reported was reported stored but the datadir has no head: $json"
        return 0
    fi
    STORED_HEAD=$(json_field "$json" head_number)
    [ "$STORED_HEAD" -ge "$reported" ] || fail "$what: block $reported was reported stored, the head is $STORED_HEAD"
    "$HEADERD" verify --datadir "$d" >"$WORK/verify.log" 2>&1 || fail "$what: verify failed: $(cat "$WORK/verify.log")"
    rm -f "$WORK/export.rlp"
    "$HEADERD" export --datadir "$d" --from 0 --count $((STORED_HEAD + 1)) --out "$WORK/export.rlp" \
        >"$WORK/export.log" 2>&1 || fail "$what: export of 0..$STORED_HEAD failed: $(cat "$WORK/export.log")"
    STORED_BYTES=$(stat -c %s "$WORK/export.rlp")
    cmp -s -n "$STORED_BYTES" "$WORK/export.rlp" "$RLP" ||
        fail "$what: blocks 0..$STORED_HEAD differ from mainnet-headers-0-8191.rlp: $(cmp -n "$STORED_BYTES" "$WORK/export.rlp" "$RLP" 2>&1)"
}

# whole DATADIR WHAT: after a rerun: blocks 0..8191, byte-exact, verify passes.
whole() {
    stored "$1" 8191 "$2"
    [ "$STORED_HEAD" = 8191 ] || fail "$2: the head is $STORED_HEAD, not 8191"
    [ "$STORED_BYTES" = "$(stat -c %s "$RLP")" ] || fail "$2: the export has $STORED_BYTES bytes"
}

# last_reported LOG PATTERN FIELD: the largest FIELD=N on the log lines matching PATTERN, -1 if none.
last_reported() {
    { grep "$2" "$1" | grep -o " $3=[0-9]*" | cut -d= -f2; echo -1; } | sort -n | tail -1
}

# kill_one NAME N WHAT: counts a kill that hit the running command (KILL_RC 137), else fails unless
# the command finished (exit 0, which the calibration makes rare).
KILLED=0
FINISHED=0
kill_one() {
    case $KILL_RC in
        137) KILLED=$((KILLED + 1)) ;;
        0) FINISHED=$((FINISHED + 1)) ;;
        *) fail "$3: exited $KILL_RC after $KILL_MS ms: $(tail -5 "$WORK/$1.$2.log")" ;;
    esac
}

# The epoch in 32 files of 256 headers.
"$HEADERD" import --datadir "$WORK/epoch" "$RLP" >"$WORK/import.log" 2>&1 || fail "import: $(cat "$WORK/import.log")"
PARTS=()
for i in $(seq 0 31); do
    "$HEADERD" export --datadir "$WORK/epoch" --from $((i * 256)) --count 256 --out "$WORK/part$i.rlp" \
        >/dev/null 2>&1 || fail "export of part $i"
    PARTS+=("$WORK/part$i.rlp")
done
cat "${PARTS[@]}" | cmp -s - "$RLP" || fail "the 32 parts are not the epoch"

# Kill windows fit this machine: a whole import and a whole freeze are timed (the faster of two
# runs), and kills fall within that time, so that most of them hit a running command however fast
# the machine is. window MS -> 90% of MS, at least 20.
window() { local w=$(($1 * 9 / 10)); echo $((w < 20 ? 20 : w)); }
fastest() {
    local best=
    for i in 1 2; do
        rm -rf "$WORK/calibrate"
        [ "$1" = import ] || cp -a "$WORK/epoch" "$WORK/calibrate"
        timed_ms "$WORK/calibrate.log" "$HEADERD" "$@"
        [ -n "$best" ] && [ "$best" -le "$TIMED_MS" ] || best=$TIMED_MS
    done
    rm -rf "$WORK/calibrate"
    echo "$best"
}
IMPORT_MS=$(fastest import --datadir "$WORK/calibrate" "${PARTS[@]}")
FREEZE_MS=$(fastest freeze --datadir "$WORK/calibrate" --keep 0)
echo "a whole import takes $IMPORT_MS ms, a whole freeze $FREEZE_MS ms"

# --- 1. import ---------------------------------------------------------------------------------
start=$SECONDS
KILLED=0
FINISHED=0
n=0
while [ "$KILLED" -lt "$PER" ]; do
    n=$((n + 1))
    [ "$n" -le $((PER * 4)) ] || fail "import: only $KILLED of $n runs were killed while running"
    D=$WORK/import.$n
    random_kill 0 "$(window "$IMPORT_MS")" "$WORK/import.$n.log" "$HEADERD" import --datadir "$D" "${PARTS[@]}"
    kill_one import "$n" "import run $n"
    reported=$(last_reported "$WORK/import.$n.log" "Imported headers" last)
    stored "$D" "$reported" "import killed after $KILL_MS ms"
    echo "import run $n: killed after $KILL_MS ms (exit $KILL_RC), reported up to $reported, stored up to $STORED_HEAD"
    "$HEADERD" import --datadir "$D" "${PARTS[@]}" >"$WORK/import.$n.rerun.log" 2>&1 ||
        fail "import rerun $n: $(tail -5 "$WORK/import.$n.rerun.log")"
    whole "$D" "import rerun $n"
    rm -rf "$D"
done
echo "ok: import killed $KILLED times ($FINISHED runs finished first): each datadir opened, verified, held what was reported, byte-exact; each rerun completed ($((SECONDS - start)) s)"
TOTAL=$KILLED

# --- 2. freeze ---------------------------------------------------------------------------------
start=$SECONDS
KILLED=0
FINISHED=0
n=0
while [ "$KILLED" -lt "$PER" ]; do
    n=$((n + 1))
    [ "$n" -le $((PER * 4)) ] || fail "freeze: only $KILLED of $n runs were killed while running"
    D=$WORK/freeze.$n
    cp -a "$WORK/epoch" "$D"
    # Half the runs start from a freezer that already holds part of the epoch.
    if [ $((RANDOM % 2)) = 1 ]; then
        "$HEADERD" freeze --datadir "$D" --keep $((4096 + RANDOM % 4096)) >/dev/null 2>&1 || fail "freeze"
    fi
    keep=$((RANDOM % 4096))
    # The window shrinks with the headers left to freeze.
    frozen=$(json_field "$("$HEADERD" inspect --datadir "$D" --json)" ancient_items)
    random_kill 0 "$(window $((FREEZE_MS * (8192 - keep - frozen) / 8192)))" "$WORK/freeze.$n.log" "$HEADERD" freeze --datadir "$D" --keep "$keep"
    kill_one freeze "$n" "freeze run $n"
    stored "$D" 8191 "freeze --keep $keep killed after $KILL_MS ms"
    reported=$(last_reported "$WORK/freeze.$n.log" "Freezer updated" ancient_items)
    [ "$STORED_ANCIENT" -ge "$reported" ] ||
        fail "freeze run $n: ancient_items=$reported was reported, the datadir has $STORED_ANCIENT"
    echo "freeze run $n: --keep $keep killed after $KILL_MS ms (exit $KILL_RC), ancient items $STORED_ANCIENT"
    "$HEADERD" freeze --datadir "$D" --keep "$keep" >"$WORK/freeze.$n.rerun.log" 2>&1 ||
        fail "freeze rerun $n: $(tail -5 "$WORK/freeze.$n.rerun.log")"
    whole "$D" "freeze rerun $n"
    [ "$STORED_ANCIENT" = $((8192 - keep)) ] || fail "freeze rerun $n: $STORED_ANCIENT ancient items, not $((8192 - keep))"
    rm -rf "$D"
done
echo "ok: freeze killed $KILLED times ($FINISHED runs finished first): each datadir opened, verified, byte-exact, ancient items never below the reported; each rerun completed ($((SECONDS - start)) s)"
TOTAL=$((TOTAL + KILLED))

# --- 3. sync -----------------------------------------------------------------------------------
# One peer that waits 5 ms before each reply, 128 headers a request, one at a time: a whole sync
# (fetching, linking, freezing) takes about a second, timed here to fit the kill window.
cp -a "$WORK/epoch" "$WORK/upstream"
serve_dir upstream "$WORK/upstream" 0 --reply-delay 5
E=$(cat "$WORK/upstream/enode")
rm -rf "$WORK/calibrate"
timed_ms "$WORK/calibrate.log" "$HEADERD" sync --datadir "$WORK/calibrate" --peer "$E" --head "$HEAD" --max-request 128 \
    --max-peers-in-flight 1 --keep 2000
rm -rf "$WORK/calibrate"
SYNC_MS=$TIMED_MS
echo "a whole sync takes $SYNC_MS ms"
start=$SECONDS
KILLED=0
FINISHED=0
n=0
while [ "$KILLED" -lt "$PER" ]; do
    n=$((n + 1))
    [ "$n" -le $((PER * 4)) ] || fail "sync: only $KILLED of $n runs were killed while running"
    D=$WORK/sync.$n
    # Half the runs sync onto a stored prefix of the epoch.
    prefix=-1
    if [ $((RANDOM % 2)) = 1 ]; then
        parts=$((1 + RANDOM % 24))
        "$HEADERD" import --datadir "$D" "${PARTS[@]:0:parts}" >/dev/null 2>&1 || fail "import of $parts parts"
        prefix=$((parts * 256 - 1))
    fi
    keep=$((100 + RANDOM % 4000))
    args=(--datadir "$D" --peer "$E" --head "$HEAD" --max-request 128 --max-peers-in-flight 1 --keep "$keep"
        --verbosity 4)
    random_kill 0 "$(window "$SYNC_MS")" "$WORK/sync.$n.log" "$HEADERD" sync "${args[@]}"
    kill_one sync "$n" "sync run $n"
    reported=$prefix
    grep -q "Synced \|Already synced" "$WORK/sync.$n.log" && reported=8191
    stored "$D" "$reported" "sync killed after $KILL_MS ms"
    echo "sync run $n: onto $prefix, --keep $keep, killed after $KILL_MS ms (exit $KILL_RC): head $STORED_HEAD, $(grep -c "Requesting headers" "$WORK/sync.$n.log") requests made"
    timeout -k 5 60 "$HEADERD" sync "${args[@]}" --summary "$WORK/sync.$n.json" >"$WORK/sync.$n.rerun.log" 2>&1 ||
        fail "sync rerun $n: $(tail -5 "$WORK/sync.$n.rerun.log")"
    whole "$D" "sync rerun $n"
    # What the killed run stored stays stored: the rerun asks only for blocks below it.
    python3 - "$WORK/sync.$n.json" <<'PY' || fail "sync rerun $n asked for stored headers again: $(cat "$WORK/sync.$n.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["ok"] and s["head"] == 8191
if s["resumed"]:  # (the head header itself is asked for by hash, not counted here)
    assert s["fetched"] <= s["resumed_tail"], s
    assert s["fetched"] == 0 or s["highest_requested"] < s["resumed_tail"], s
PY
    rm -rf "$D"
done
stop upstream
echo "ok: sync killed $KILLED times ($FINISHED runs finished first): each datadir opened, verified, byte-exact; each rerun completed and asked for nothing stored ($((SECONDS - start)) s)"
TOTAL=$((TOTAL + KILLED))

# --- 4. serve --follow -------------------------------------------------------------------------
# Two upstreams serve the epoch; the follower starts from a random prefix (parts of it frozen) and
# follows with a small --keep, so each adoption fetches, links and freezes.
cp -a "$WORK/epoch" "$WORK/up_a"
cp -a "$WORK/epoch" "$WORK/up_b"
serve_dir up_a "$WORK/up_a" 0
serve_dir up_b "$WORK/up_b" 0
FOLLOW=(--follow "$(cat "$WORK/up_a/enode")" --follow "$(cat "$WORK/up_b/enode")" --follow-interval 0.3
    --follow-reconnect 0.2)
start=$SECONDS
KILLED=0
FINISHED=0
n=0
while [ "$KILLED" -lt "$PER" ]; do
    n=$((n + 1))
    [ "$n" -le $((PER * 4)) ] || fail "serve --follow: only $KILLED of $n runs were killed while running"
    D=$WORK/follow.$n
    parts=$((1 + RANDOM % 24))
    "$HEADERD" import --datadir "$D" "${PARTS[@]:0:parts}" >/dev/null 2>&1 || fail "import of $parts parts"
    [ $((RANDOM % 2)) = 0 ] || "$HEADERD" freeze --datadir "$D" --keep $((RANDOM % 256)) >/dev/null 2>&1 ||
        fail "freeze of the prefix"
    keep=$((100 + RANDOM % 2000))
    random_kill 50 500 "$WORK/follow.$n.log" "$HEADERD" serve --datadir "$D" --listen 127.0.0.1:0 --workers 1 \
        "${FOLLOW[@]}" --keep "$keep"
    # A server runs until stopped: every run counts as killed.
    kill_one follow "$n" "serve --follow run $n"
    reported=$(last_reported "$WORK/follow.$n.log" "Followed head" number)
    [ "$reported" -ge 0 ] || reported=$((parts * 256 - 1))
    ancient=$(last_reported "$WORK/follow.$n.log" "Followed head" ancient)
    stored "$D" "$reported" "serve --follow killed after $KILL_MS ms"
    [ "$STORED_ANCIENT" -ge "$ancient" ] ||
        fail "serve --follow run $n: ancient=$ancient was reported, the datadir has $STORED_ANCIENT"
    echo "serve --follow run $n: from $((parts * 256 - 1)), --keep $keep, killed after $KILL_MS ms: head $STORED_HEAD, ancient items $STORED_ANCIENT"
    serve_dir follower "$D" 0 "${FOLLOW[@]}" --keep "$keep"
    if [ "$STORED_HEAD" != 8191 ]; then
        for _ in $(seq 200); do
            grep -q "Followed head .*number=8191 " "$WORK/follower.log" && break
            sleep 0.1
        done
        grep -q "Followed head .*number=8191 " "$WORK/follower.log" ||
            fail "serve --follow rerun $n did not follow to 8191 within 20 s: $(tail -5 "$WORK/follower.log")"
    fi
    stop follower
    whole "$D" "serve --follow rerun $n"
    [ "$STORED_HEAD" = 8191 ] && grep -q "Followed head .*number=8191 " "$WORK/follower.log" &&
        { [ "$STORED_ANCIENT" = $((8192 - keep)) ] || fail "serve --follow rerun $n: $STORED_ANCIENT ancient items, not $((8192 - keep))"; }
    rm -rf "$D"
done
stop up_a
stop up_b
echo "ok: serve --follow killed $KILLED times: each datadir opened, verified, held every followed head, byte-exact; each rerun followed to 8191 ($((SECONDS - start)) s)"
TOTAL=$((TOTAL + KILLED))

echo "ok: $TOTAL kills in all, every check passed in ${SECONDS} s"
