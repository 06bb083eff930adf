#!/usr/bin/env bash
# Faults of the disk and the datadir, for each writing command (import, freeze, sync, serve --follow),
# on the real mainnet headers 0..8191:
#   1. a second process on the same datadir (a headerd serve holding it);
#   2. missing permissions (the datadir belongs to root and headerd runs as nobody, or, for a
#      non-root user, the datadir is made read-only with chmod);
#   3. a read-only datadir (a read-only bind mount) and a full disk (a small tmpfs), both mounted
#      in a private mount namespace (unshare -m as root, unshare -rm for a user where user namespaces
#      are allowed; skipped, saying so, where neither works).
# Each command gives one error that names the path and exits non-zero; the datadir is left as it was
# (or, on a full disk, holds a verified byte-exact prefix of what it was given) and a rerun once the
# fault is gone completes. serve --follow keeps serving what it has when a follow write fails.
source "$(dirname "$0")/lib.sh" "$@"
RLP=$DATA/mainnet-headers-0-8191.rlp
HEAD=0xa6860fefa339c963e1bb622526cc8dd4344eedd2a9b969e74de5cccc445fbed4
HASHES=$DATA/mainnet-headers-0-8191.hashes.txt

source "$(dirname "$0")/node_lib.sh"
FRESH_LOG=1
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; for m in ${MOUNTS:-}; do umount -l "$m" 2>/dev/null; done; rm -rf "$WORK"' EXIT
MOUNTS=

# run NAME CMD...: runs CMD (at most 60 s) with its output in $WORK/NAME.log; RC is its exit code.
run() {
    local name=$1
    shift
    RC=0
    timeout -k 5 60 "$@" >"$WORK/$name.log" 2>&1 || RC=$?
}

# one_error NAME PATH: the command run as NAME failed with exactly one ERROR line, naming PATH.
one_error() {
    local log=$WORK/$1.log n
    [ "$RC" != 0 ] || fail "$1: exited 0: $(tail -5 "$log")"
    [ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "$1: did not end within 60 s: $(tail -5 "$log")"
    n=$(grep -c '^ERROR' "$log" || true)
    [ "$n" = 1 ] || fail "$1: $n ERROR lines, not one: $(cat "$log")"
    grep '^ERROR' "$log" | grep -qF -- "$2" || fail "$1: the error does not name $2: $(grep '^ERROR' "$log")"
    echo "ok: $1: exit $RC, $(grep '^ERROR' "$log" | sed 's/^ERROR *\[[^]]*\] *//' | sed "s|$WORK|\$WORK|g")"
}

# exact DATADIR WHAT [MIN_HEAD]: the datadir opens, verify passes, the head is at least MIN_HEAD (8191
# when not given) and blocks 0..head are a byte-exact prefix of the epoch. Sets HEAD_NOW.
exact() {
    local d=$1 what=$2 min=${3:-8191} json size
    json=$("$HEADERD" inspect --datadir "$d" --json 2>"$WORK/inspect.err") ||
        fail "$what: the datadir does not open: $(cat "$WORK/inspect.err")"
    HEAD_NOW=$(json_field "$json" head_number)
    [ "$HEAD_NOW" != null ] && [ "$HEAD_NOW" -ge "$min" ] || fail "$what: the head is $HEAD_NOW, below $min"
    "$HEADERD" verify --datadir "$d" >"$WORK/verify.log" 2>&1 || fail "$what: verify failed: $(cat "$WORK/verify.log")"
    rm -f "$WORK/export.rlp"
    "$HEADERD" export --datadir "$d" --from 0 --count $((HEAD_NOW + 1)) --out "$WORK/export.rlp" \
        >"$WORK/export.log" 2>&1 || fail "$what: export failed: $(cat "$WORK/export.log")"
    size=$(stat -c %s "$WORK/export.rlp")
    cmp -s -n "$size" "$WORK/export.rlp" "$RLP" || fail "$what: blocks 0..$HEAD_NOW differ from the epoch"
}

# unchanged DATADIR DIGEST WHAT: the datadir holds what it held (chain_digest of tests/lib.sh), verified.
unchanged() {
    [ "$(chain_digest "$1")" = "$2" ] || fail "$3: the datadir changed"
    exact "$1" "$3" "$(json_field "$("$HEADERD" inspect --datadir "$1" --json)" head_number)"
}

# The epoch, and its 32 parts of 256 headers.
"$HEADERD" import --datadir "$WORK/epoch" "$RLP" >"$WORK/import.log" 2>&1 || fail "import: $(cat "$WORK/import.log")"
PARTS=()
for i in $(seq 0 31); do
    "$HEADERD" export --datadir "$WORK/epoch" --from $((i * 256)) --count 256 --out "$WORK/part$i.rlp" \
        >/dev/null 2>&1 || fail "export of part $i"
    PARTS+=("$WORK/part$i.rlp")
done
# The datadir the faults are tried on: blocks 0..4095, 0..2047 of them frozen.
"$HEADERD" import --datadir "$WORK/half" "${PARTS[@]:0:16}" >/dev/null 2>&1 || fail "import of 0..4095"
"$HEADERD" freeze --datadir "$WORK/half" --keep 2048 >/dev/null 2>&1 || fail "freeze of 0..2047"
for d in a b; do cp -a "$WORK/epoch" "$WORK/up_$d"; done
serve_dir up_a "$WORK/up_a" 0
serve_dir up_b "$WORK/up_b" 0
EA=$(cat "$WORK/up_a/enode")
EB=$(cat "$WORK/up_b/enode")
FOLLOW=(--follow "$EA" --follow "$EB" --follow-interval 0.3 --follow-reconnect 0.2 --keep 1000)

# try_all PREFIX DATADIR PATH [RUNNER...]: import, freeze, sync and serve --follow on DATADIR, each
# run by RUNNER (e.g. setpriv ...); each must fail with one error naming PATH.
try_all() {
    local p=$1 d=$2 path=$3
    shift 3
    run "$p-import" "$@" "$HEADERD" import --datadir "$d" "${PARTS[@]:16}"
    one_error "$p-import" "$path"
    run "$p-freeze" "$@" "$HEADERD" freeze --datadir "$d" --keep 100
    one_error "$p-freeze" "$path"
    run "$p-sync" "$@" "$HEADERD" sync --datadir "$d" --peer "$EA" --head "$HEAD" --keep 1000
    one_error "$p-sync" "$path"
    run "$p-follow" "$@" "$HEADERD" serve --datadir "$d" --listen 127.0.0.1:0 "${FOLLOW[@]}"
    one_error "$p-follow" "$path"
}

if [ "${HEADERD_FAULT_NS:-}" != 1 ]; then  # (parts 1 and 2 run outside the mount namespace)
# --- 1. A second process on the same datadir ---------------------------------------------------
D=$WORK/second
cp -a "$WORK/half" "$D"
before=$(chain_digest "$D")
serve_dir holder "$D" 0
try_all second "$D" "datadir $D is in use by process ${PIDS[holder]}"
stop holder
unchanged "$D" "$before" "after the second processes"
echo "ok: a second process on a datadir held by a serve: one error naming the datadir and the holder, nothing changed"

# --- 2. Missing permissions --------------------------------------------------------------------
D=$WORK/perm
cp -a "$WORK/half" "$D"
before=$(chain_digest "$D")
if [ "$(id -u)" = 0 ]; then
    # chmod does not stop root: headerd runs as nobody on root's datadir (files 0644, dirs 0755).
    command -v setpriv >/dev/null || fail "setpriv is missing (util-linux)"
    chmod 755 "$WORK"
    chmod 644 "${PARTS[@]}"
    AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    what="headerd as nobody on root's datadir"
else
    chmod -R a-w "$D"
    AS=()
    what="a datadir without write permission (chmod -R a-w)"
fi
try_all perm "$D" "$D/chaindata" "${AS[@]}"
[ "$(id -u)" = 0 ] || chmod -R u+w "$D"
unchanged "$D" "$before" "after the permission errors"
echo "ok: $what: one error naming the path, nothing changed"
# Reading needs no write permission anywhere... but LevelDB takes its lock file read-write even to
# read, so a read as nobody fails the same way, naming the path.
if [ "$(id -u)" = 0 ]; then
    run perm-verify "${AS[@]}" "$HEADERD" verify --datadir "$D"
    one_error perm-verify "$D/chaindata"
    chmod 700 "$D"
    run perm-hidden "${AS[@]}" "$HEADERD" verify --datadir "$D"
    one_error perm-hidden "$D/chaindata"
    chmod 755 "$D"
fi

fi

# --- 3. Mounts: a read-only datadir, a full disk ------------------------------------------------
if [ "${HEADERD_FAULT_NS:-}" != 1 ]; then
    ns=()
    if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
        ns=(unshare -m)
    elif unshare -rm true 2>/dev/null; then
        ns=(unshare -rm)
    fi
    if [ ${#ns[@]} = 0 ]; then
        echo "SKIP: read-only mount and full disk: no private mount namespace here (unshare -m needs root, unshare -rm user namespaces)"
    else
        # This script again, in a private mount namespace, where it runs part 3 only.
        "${ns[@]}" env HEADERD_FAULT_NS=1 "$0" "$HEADERD" || fail "the read-only and full-disk part failed"
    fi
    echo "ok: every fault check passed in ${SECONDS} s"
    exit 0
fi

# 3a. A read-only bind mount of the datadir.
D=$WORK/ro
cp -a "$WORK/half" "$D"
before=$(chain_digest "$D")
mount --bind "$D" "$D" && mount -o remount,bind,ro "$D" || fail "cannot mount $D read-only"
MOUNTS=$D
try_all ro "$D" "$D/chaindata"
# LevelDB writes (its lock, log and manifest) even to read: reads fail too, naming the path.
run ro-verify "$HEADERD" verify --datadir "$D"
one_error ro-verify "$D/chaindata"
umount "$D"
MOUNTS=
unchanged "$D" "$before" "after the read-only mount"
echo "ok: a read-only datadir: one error naming the path, nothing changed"

# 3b. A full disk: a 16 MB tmpfs, filled up to a few hundred KB before each command.
SMALL=$WORK/small
mkdir "$SMALL"
mount -t tmpfs -o size=16m tmpfs "$SMALL" || fail "cannot mount a tmpfs on $SMALL"
MOUNTS=$SMALL
# leave KB: fills the tmpfs so that about KB kilobytes stay free.
leave() {
    rm -f "$SMALL/fill"
    local avail
    avail=$(df -k --output=avail "$SMALL" | tail -1)
    fallocate -l $(((avail - $1) * 1024)) "$SMALL/fill" || fail "fallocate on the tmpfs"
}

D=$SMALL/import
cp -a "$WORK/half" "$D"
leave 300
run full-import "$HEADERD" import --datadir "$D" "${PARTS[@]:16}"
one_error full-import "$D/chaindata"
rm "$SMALL/fill"
exact "$D" "import on a full disk" 4095
stored=$HEAD_NOW
"$HEADERD" import --datadir "$D" "${PARTS[@]:16}" >"$WORK/rerun.log" 2>&1 || fail "import rerun: $(tail -5 "$WORK/rerun.log")"
exact "$D" "import rerun after the full disk"
echo "ok: import on a full disk: one error, blocks 0..$stored stored byte-exact and verified, the rerun completed"

D=$SMALL/freeze
rm -rf "$SMALL"/import
cp -a "$WORK/epoch" "$D"
leave 500
run full-freeze "$HEADERD" freeze --datadir "$D" --keep 100
one_error full-freeze "$D/chaindata"
rm "$SMALL/fill"
exact "$D" "freeze on a full disk"
"$HEADERD" freeze --datadir "$D" --keep 100 >"$WORK/rerun.log" 2>&1 || fail "freeze rerun: $(tail -5 "$WORK/rerun.log")"
exact "$D" "freeze rerun after the full disk"
[ "$(json_field "$("$HEADERD" inspect --datadir "$D" --json)" ancient_items)" = 8092 ] || fail "freeze rerun: not 8092 ancient items"
echo "ok: freeze on a full disk: one error, the epoch byte-exact and verified, the rerun completed"

D=$SMALL/sync
rm -rf "$SMALL"/freeze
cp -a "$WORK/half" "$D"
leave 300
run full-sync "$HEADERD" sync --datadir "$D" --peer "$EA" --head "$HEAD" --keep 1000
one_error full-sync "$D/chaindata"
rm "$SMALL/fill"
exact "$D" "sync on a full disk" 4095
"$HEADERD" sync --datadir "$D" --peer "$EA" --head "$HEAD" --keep 1000 >"$WORK/rerun.log" 2>&1 ||
    fail "sync rerun: $(tail -5 "$WORK/rerun.log")"
exact "$D" "sync rerun after the full disk"
echo "ok: sync on a full disk: one error, blocks 0..4095 byte-exact and verified, the rerun completed"

# serve --follow: the follow write fails, the node goes on serving what it has. The upstreams first
# serve blocks 0..6143 (restarted on their ports and node keys); once the disk has room again they
# serve 0..8191, a new head the follower tries at once, in the same process: that write must be
# refused too (LevelDB's log may end in the failed write's partial record, and a write behind it
# would keep the datadir from opening), and the datadir must still open and verify.
# upstream NAME DATADIR: serves DATADIR on NAME's port with NAME's node key, until stop NAME.
upstream() {
    local port
    port=$(grep -o ':[0-9]*$' "$WORK/$1.enode")
    stop "$1"
    [ "$2" = "$WORK/up_$1" ] || cp "$WORK/up_$1/nodekey" "$2/nodekey"
    serve_dir "$1" "$2" "${port#:}"
    [ "$(cat "$2/enode")" = "$(cat "$WORK/$1.enode")" ] || fail "upstream $1 did not come back: $(tail -3 "$WORK/$1.log")"
}
PIDS[a]=${PIDS[up_a]}
PIDS[b]=${PIDS[up_b]}
unset "PIDS[up_a]" "PIDS[up_b]"
cp "$WORK/up_a/enode" "$WORK/a.enode"
cp "$WORK/up_b/enode" "$WORK/b.enode"
for x in a b; do
    "$HEADERD" import --datadir "$WORK/short_$x" "${PARTS[@]:0:24}" >/dev/null 2>&1 || fail "import of 0..6143"
    upstream "$x" "$WORK/short_$x"
done
D=$SMALL/follow
rm -rf "$SMALL"/sync
cp -a "$WORK/half" "$D"
leave 300
serve_dir follower "$D" 0 "${FOLLOW[@]}"
# wait_log PATTERN: the follower logs PATTERN within 20 s.
wait_log() {
    for _ in $(seq 200); do
        grep -q "$1" "$WORK/follower.log" && return 0
        sleep 0.1
    done
    fail "serve --follow: no '$1' within 20 s: $(tail -5 "$WORK/follower.log")"
}
wait_log "Following head failed .*number=6143 "
grep "Following head failed .*number=6143 " "$WORK/follower.log" | grep -qF "$D/chaindata" ||
    fail "serve --follow on a full disk: the failure does not name $D/chaindata: $(grep 'Following head failed' "$WORK/follower.log")"
served() {
    kill -0 "${PIDS[follower]}" || fail "serve --follow on a full disk exited: $(tail -5 "$WORK/follower.log")"
    got=$("$HEADERD" get --peer "$(cat "$D/enode")" --origin 4095 --amount 1 --format json --timeout 5 2>&1 |
        grep -o '"hash":"0x[0-9a-f]*"' | cut -d'"' -f4) || true
    [ "$got" = "$(awk '$1 == 4095 {print $2}' "$HASHES")" ] || fail "serve --follow on a full disk: block 4095 not served ($got)"
}
served
echo "ok: serve --follow on a full disk: $(grep -o 'Following head failed.*' "$WORK/follower.log" | head -1 | sed "s|$WORK|\$WORK|g"); still serving block 4095"
rm "$SMALL/fill"
upstream a "$WORK/up_a"
upstream b "$WORK/up_b"
wait_log "Following head failed .*number=8191 "
grep "Following head failed .*number=8191 " "$WORK/follower.log" | grep -qF "an earlier write failed" ||
    fail "serve --follow after the full disk: a new head was written: $(grep 'Following head failed\|Followed head' "$WORK/follower.log")"
served
echo "ok: serve --follow with room again: $(grep -o 'Following head failed .*number=8191.*' "$WORK/follower.log" | head -1 | sed "s|$WORK|\$WORK|g" | cut -c1-300); still serving"
stop follower
! grep -q '^ERROR' "$WORK/follower.log" || fail "serve --follow on a full disk logged errors: $(grep '^ERROR' "$WORK/follower.log")"
exact "$D" "serve --follow on a full disk" 4095
serve_dir follower "$D" 0 "${FOLLOW[@]}"
for _ in $(seq 200); do
    grep -q "Followed head .*number=8191 " "$WORK/follower.log" && break
    sleep 0.1
done
stop follower
grep -q "Followed head .*number=8191 " "$WORK/follower.log" ||
    fail "serve --follow rerun did not follow to 8191: $(tail -5 "$WORK/follower.log")"
exact "$D" "serve --follow rerun after the full disk"
echo "ok: serve --follow restarted after the full disk followed to 8191, byte-exact"
umount "$SMALL"
MOUNTS=
echo "ok: the read-only and full-disk checks passed"
