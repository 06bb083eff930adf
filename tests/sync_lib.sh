# shellcheck shell=bash
# shellcheck disable=SC2034 # ERA1 and INTEROP are for the script that sources it
# Helpers of the shell tests that sync the real mainnet epoch (blocks 0..8191) and check the result
# byte for byte (tests/sync_test.sh, tests/discovery_sync_test.sh). Source it after lib.sh (it uses
# HEADERD, DATA, WORK, fail and json_field). A peer started as NAME has its enode in $WORK/NAME.enode.
ERA1=$DATA/mainnet-00000-5ec1ffb8.era1
RLP=$DATA/mainnet-headers-0-8191.rlp
HEAD=0xa6860fefa339c963e1bb622526cc8dd4344eedd2a9b969e74de5cccc445fbed4
INTEROP=$(cd "$(dirname "${BASH_SOURCE[0]}")/interop" && pwd)
[ "$(tail -1 "$DATA/mainnet-headers-0-8191.hashes.txt" | awk '{print $2}')" = "$HEAD" ] ||
    fail "the hash of block 8191 is not $HEAD in mainnet-headers-0-8191.hashes.txt"

# The forged chain (tests/interop/forge_chain.js) needs node and the harness's node_modules.
command -v node >/dev/null || fail "node is missing (scripts/setup.sh installs it)"
[ -d "$INTEROP/node_modules/@ethereumjs/devp2p" ] ||
    fail "tests/interop/node_modules is missing: run npm ci in tests/interop (scripts/setup.sh does)"

enode() { cat "$WORK/$1.enode"; }
address() { local e; e=$(enode "$1"); printf '%s' "${e#*@}"; }

# py JSON_FILE EXPR: evaluates a Python expression over the summary `s`, where peer(NAME) is the
# summary of the peer started as NAME; fails the test, showing the summary, when falsy.
# py_print JSON_FILE EXPR: prints the expression's value.
cat >"$WORK/summary.py" <<'PY'
import json, re, sys
mode, path, expr, work = sys.argv[1:5]
s = json.load(open(path))
def peer(name):
    address = open(f"{work}/{name}.enode").read().strip().split("@")[1]
    found = [p for p in s["peers"] if p["address"] == address]
    assert len(found) == 1, f"{address} ({name}) is not in the summary"
    return found[0]
v = eval(expr)
if mode == "print":
    print(v)
sys.exit(0 if v or mode == "print" else 1)
PY
py() { python3 "$WORK/summary.py" check "$1" "$2" "$WORK" || fail "$2 (summary $1: $(cat "$1" 2>/dev/null))"; }
py_print() { python3 "$WORK/summary.py" print "$1" "$2" "$WORK"; }

# hsync ARGS...: headerd sync ARGS, stopped (exit code 124, or 137 if SIGTERM does not end it) when
# it has not ended within 30 s: no run here needs more than a few seconds.
hsync() { timeout -k 5 30 "$HEADERD" sync "$@"; }

# sync NAME DATADIR ARGS...: runs headerd sync with --summary $WORK/NAME.json, output in
# $WORK/NAME.log; sets RC to its exit code.
sync() {
    local name=$1 d=$2
    shift 2
    rm -f "$WORK/$name.json"
    RC=0
    hsync --datadir "$d" --summary "$WORK/$name.json" "$@" >"$WORK/$name.log" 2>&1 || RC=$?
    if [ "$RC" = 124 ] || [ "$RC" = 137 ]; then
        fail "sync $name did not end within 30 s$([ "$RC" = 137 ] && echo ', nor on SIGTERM') (hung):" \
            "$(tail -20 "$WORK/$name.log")"
    fi
}

# sync_ok NAME DATADIR ARGS...: the sync must succeed.
sync_ok() {
    sync "$@"
    [ "$RC" = 0 ] || fail "sync $1 exited $RC: $(tail -20 "$WORK/$1.log")"
    py "$WORK/$1.json" 's["ok"] is True and s["head"] == 8191 and s["head_hash"] == "'"$HEAD"'"'
}

# exact DATADIR WHAT: the datadir's chain is blocks 0..8191 byte for byte, and verify passes.
exact() {
    local d=$1 what=$2 json
    json=$("$HEADERD" inspect --datadir "$d" --json) || fail "$what: inspect failed"
    [ "$(json_field "$json" head_number)" = 8191 ] || fail "$what: head is not 8191: $json"
    [ "$(json_field "$json" head_hash)" = "$HEAD" ] || fail "$what: head hash is not $HEAD: $json"
    rm -f "$WORK/export.rlp"
    "$HEADERD" export --datadir "$d" --from 0 --count 8192 --out "$WORK/export.rlp" >"$WORK/export.log" 2>&1 ||
        fail "$what: export failed: $(cat "$WORK/export.log")"
    cmp -s "$WORK/export.rlp" "$RLP" ||
        fail "$what: the export differs from mainnet-headers-0-8191.rlp: $(cmp "$WORK/export.rlp" "$RLP" 2>&1)"
    "$HEADERD" verify --datadir "$d" >"$WORK/verify.log" 2>&1 || fail "$what: verify failed: $(cat "$WORK/verify.log")"
}

# forge_side_chain DATADIR: the mainnet epoch with a side chain from block 5000 (the same genesis and
# fork id; block 5000 differs in one byte of its extra-data, and so on up), made by forge_chain.js
# into $WORK/forged.rlp and imported into DATADIR; FORGED_HEAD is the hash of its block 8191.
forge_side_chain() {
    local d=$1
    node "$INTEROP/forge_chain.js" --in "$RLP" --out "$WORK/forged.rlp" --fork 5000 >"$WORK/forge.log" 2>&1 ||
        fail "forge_chain.js: $(cat "$WORK/forge.log")"
    FORGED_HEAD=$(awk '/^forged 5000..8191 head 0x/ {print $4}' "$WORK/forge.log")
    if [ -z "$FORGED_HEAD" ] || [ "$FORGED_HEAD" = "$HEAD" ]; then fail "forge_chain.js: $(cat "$WORK/forge.log")"; fi
    "$HEADERD" import --datadir "$d" "$WORK/forged.rlp" >"$WORK/import.log" 2>&1 ||
        fail "import of the forged chain: $(cat "$WORK/import.log")"
    [ "$(json_field "$("$HEADERD" inspect --datadir "$d" --json)" head_hash)" = "$FORGED_HEAD" ] ||
        fail "the forged datadir's head is not $FORGED_HEAD"
}
