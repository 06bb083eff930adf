# Shared helpers of the shell integration tests. Usage: source tests/lib.sh HEADERD_BINARY
set -euo pipefail
HEADERD=${1:?usage: $0 HEADERD_BINARY}
DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/data" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/headerd-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# shellcheck source=scripts/lib/wait.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/wait.sh"

# wait_nonempty FILE PID SECONDS WHAT LOG: waits until FILE is non-empty (an enode URL, a port) while
# process PID runs; fails naming WHAT, with the end of LOG, when PID exits first or SECONDS pass.
wait_nonempty() {
    local rc=0
    poll_until "$3" 0.1 pid_alive "$2" -- test -s "$1" || rc=$?
    [[ $rc -ne 2 ]] || fail "$4 exited before writing $1: $(tail -5 "$5")"
    [[ $rc -eq 0 ]] || fail "$4 wrote no $1 within $3 s: $(tail -5 "$5")"
}

# json_field JSON NAME -> the scalar value of "NAME" in a one-line JSON object (strings unquoted).
json_field() {
    local v
    v=$(printf '%s' "$1" | grep -o "\"$2\":\(\"[^\"]*\"\|[0-9a-z]*\)" | head -1 | cut -d: -f2-) || true
    v=${v#\"}
    printf '%s' "${v%\"}"
}

# expect_fail "what" "expected message part" cmd... : the command must exit non-zero and print the part.
expect_fail() {
    local what=$1 part=$2
    shift 2
    local out
    if out=$("$@" 2>&1); then fail "$what: succeeded but should have failed"; fi
    printf '%s' "$out" | grep -qF -- "$part" || fail "$what: error does not mention '$part': $out"
    echo "ok: $what -> $(printf '%s' "$out" | grep -F -- "$part" | head -1)"
}

# chain_digest DATADIR -> a digest of what the datadir holds: every ancient file byte for byte, the
# inspect summary (without on-disk sizes, which LevelDB changes by merely opening) and every header.
# LevelDB files themselves are not compared: opening a LevelDB rewrites its log and manifest.
chain_digest() {
    local d=$1 json head
    json=$("$HEADERD" inspect --datadir "$d" --json)
    head=$(json_field "$json" head_number)
    "$HEADERD" export --datadir "$d" --from 0 --count $((head + 1)) --out "$WORK/digest.rlp" >/dev/null 2>&1
    {
        (cd "$d/chaindata/ancient" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
        # Sizes change as LevelDB compacts, and the node record is no chain data.
        printf '%s\n' "$json" | sed 's/"bytes":{[^}]*}//; s/,"enr":[^,]*,"enr_seq":[^,}]*//'
        sha256sum <"$WORK/digest.rlp"
    } | sha256sum
}

# seed_random VAR: seeds bash's RANDOM from the environment variable VAR, or from /dev/urandom when it
# is unset, and prints the seed, so that a failing run's random choices can be replayed with VAR=seed
# (the timing of the machine still varies).
seed_random() {
    local seed=${!1:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
    RANDOM=$seed
    echo "seed $seed (replay with $1=$seed)"
}

# timed_ms LOG CMD...: runs CMD to its end (stdout and stderr to LOG) and sets TIMED_MS to its
# wall-clock time in milliseconds; fails when it fails. Kill windows are fitted to the machine with it.
timed_ms() {
    local log=$1 t0
    shift
    t0=$(date +%s%N)
    "$@" >"$log" 2>&1 || fail "$*: $(tail -5 "$log")"
    TIMED_MS=$((($(date +%s%N) - t0) / 1000000))
}

# random_kill MIN_MS MAX_MS LOG CMD...: runs CMD in the background (stdout and stderr to LOG),
# SIGKILLs it after a random MIN_MS..MAX_MS milliseconds and waits for it. Sets KILL_MS to the delay
# and KILL_RC to the exit code: 137 when the kill hit the running process (one that had already
# exited is a zombie until waited for, so its own exit code counts). KILL_PID is the running
# process, for an EXIT trap to stop.
KILL_PID=
random_kill() {
    local min=$1 max=$2 log=$3
    shift 3
    KILL_MS=$((min + (RANDOM * 32768 + RANDOM) % (max - min + 1)))
    "$@" >"$log" 2>&1 &
    KILL_PID=$!
    sleep "$((KILL_MS / 1000)).$(printf '%03d' $((KILL_MS % 1000)))"
    kill -9 "$KILL_PID" 2>/dev/null || true
    KILL_RC=0
    wait "$KILL_PID" 2>/dev/null || KILL_RC=$?  # (no "Killed" notice)
    KILL_PID=
}

# verify_unit UNIT HEADERD MANPAGE_GZ: `systemd-analyze verify` on the unit file UNIT as systemd
# would load it once installed: a --root under $WORK holds it as
# /usr/lib/systemd/system/headerd.service, HEADERD as /usr/bin/headerd (ExecStart's binary must be
# executable), the host's units (the targets of the default dependencies) and MANPAGE_GZ as
# headerd(1), which the unit's Documentation= names and verify looks up with the host's man (through
# MANPATH). Without a man program that look-up is left out, with a line saying so. Fails on an
# error or any warning. Needs systemd-analyze and /usr/lib/systemd/system.
verify_unit() {
    local unit=$1 bin=$2 manpage=$3 v=$WORK/verify-root out
    rm -rf "$v"
    mkdir -p "$v/usr/lib/systemd" "$v/usr/bin" "$v/usr/share/man/man1" "$v/etc"
    [ -d /usr/lib/systemd/system ] || fail "no /usr/lib/systemd/system on this host"
    cp -a /usr/lib/systemd/system "$v/usr/lib/systemd/"
    cat "$unit" >"$v/usr/lib/systemd/system/headerd.service"
    cat "$bin" >"$v/usr/bin/headerd" && chmod 0755 "$v/usr/bin/headerd"
    cat "$manpage" >"$v/usr/share/man/man1/headerd.1.gz"
    local man_opt=()
    if ! command -v man >/dev/null; then
        echo "note: no man program on this host; systemd-analyze verify does not look up man:headerd(1)"
        man_opt=(--man=no)
    fi
    out=$(MANPATH=$v/usr/share/man systemd-analyze verify "${man_opt[@]}" --root="$v" \
        /usr/lib/systemd/system/headerd.service 2>&1) || fail "systemd-analyze verify: $out"
    [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
}
