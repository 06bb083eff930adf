#!/usr/bin/env bash
# The safety rule of docs/discovery.md, checked on the system calls: with its defaults headerd sends
# nothing beyond this machine. Under strace -f -e trace=network:
#   1. headerd serve with the defaults (a fresh generated datadir and --listen 127.0.0.1:PORT, a
#      free port, as the README's run command; discovery stays off) for 3 s, then SIGTERM;
#   2. headerd discover with the defaults (no --bootnodes, --listen 0.0.0.0:0, --duration 30): it
#      must exit 0 within 60 s (the default 30 s once crawled for ever) and say there was nobody to
#      ask;
#   3. positive control: headerd serve --discovery v4 --bootnodes <a headerd serve on 127.0.0.1>.
# In 1 and 2 every connect, sendto, sendmsg and sendmmsg with an AF_INET or AF_INET6 address must
# target 127.0.0.0/8 or ::1 (or ::ffff:127.x.y.z); AF_UNIX, AF_NETLINK and AF_UNSPEC are fine. A
# call whose address the parser cannot read fails the test rather than pass unread. In 3 the
# trace must show sendto to 127.0.0.1 (so the trace does record discovery's packets), and the
# parser must flag a line with a public address (so it can fail).
#
# Usage: discovery_safety_test.sh HEADERD. Exits 77 when strace is missing or cannot trace here
# (ptrace not permitted). Takes about 42 s (30 of them discover's default duration).
set -euo pipefail
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
# shellcheck source=tests/node_lib.sh
source "$(dirname "$0")/node_lib.sh"
# shellcheck source=tests/disc_lib.sh
source "$(dirname "$0")/disc_lib.sh"

if ! command -v strace >/dev/null || ! strace -f -e trace=network -o /dev/null true 2>/dev/null; then
    echo "SKIP: strace missing or not permitted to trace (scripts/setup.sh installs it)" >&2
    exit 77
fi

# LeakSanitizer cannot run under ptrace: in an ASan build (scripts/sanitize.sh) it would end every
# traced headerd with "LeakSanitizer has encountered a fatal error". The traced processes check
# memory errors without the leak check (later options win); the untraced bootnode keeps it.
TRACED_ASAN_OPTIONS="${ASAN_OPTIONS:-} detect_leaks=0"

# offending_calls TRACE: prints every network call of TRACE that has an IP address outside loopback,
# or an AF_INET/AF_INET6 address it cannot read; prints nothing when all are loopback.
offending_calls() {
    local line addrs a bad
    while IFS= read -r line; do
        [[ $line =~ (connect|sendto|sendmsg|sendmmsg)\( ]] || continue
        [[ $line == *AF_INET* ]] || continue # AF_UNIX, AF_NETLINK, AF_UNSPEC, NULL (connected socket)
        addrs=$(grep -oE 'inet_addr\("[^"]*"\)|inet_pton\(AF_INET6?, "[^"]*"' <<<"$line" | grep -oE '"[^"]*"' | tr -d '"') || true
        if [[ -z $addrs ]]; then
            echo "unreadable: $line"
            continue
        fi
        bad=
        for a in $addrs; do
            [[ $a =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ || $a == ::1 || $a =~ ^::ffff:127\.[0-9.]+$ ]] || bad=1
        done
        [[ -z $bad ]] || echo "outside loopback: $line"
    done <"$1"
}

# check_loopback_only WHAT TRACE
check_loopback_only() {
    local bad calls
    bad=$(offending_calls "$2")
    calls=$(grep -cE '(connect|sendto|sendmsg|sendmmsg)\(' "$2" || true)
    [[ -z $bad ]] || fail "$1 sent beyond loopback:"$'\n'"$bad"
    echo "ok: $1: $calls connect/send calls, none to an address outside 127.0.0.0/8 or ::1"
}

# The parser itself: a public address and an unreadable AF_INET address must be flagged.
printf '%s\n' \
    '1 sendto(7, "x", 98, 0, {sa_family=AF_INET, sin_port=htons(30303), sin_addr=inet_addr("8.8.8.8")}, 16) = 98' \
    '1 connect(5, {sa_family=AF_INET6, sin6_port=htons(53), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28) = 0' \
    '1 sendmsg(3, {msg_name={sa_family=AF_INET, sin_port=htons(1), sin_addr=0x1}, msg_namelen=16}, 0) = 1' \
    '1 sendto(7, "x", 98, 0, {sa_family=AF_INET, sin_port=htons(30303), sin_addr=inet_addr("127.0.0.1")}, 16) = 98' \
    '1 connect(4, {sa_family=AF_UNIX, sun_path="/run/x"}, 110) = 0' >"$WORK/fake.trace"
[[ $(offending_calls "$WORK/fake.trace" | wc -l) -eq 3 ]] || fail "the trace parser missed a bad call: $(offending_calls "$WORK/fake.trace")"
echo "ok: the parser flags a public IPv4, a public IPv6 and an unreadable address, and passes loopback and AF_UNIX"

"$HEADERD" generate --datadir "$WORK/chain" --count 64 >/dev/null 2>&1 || fail "generate"

# traced_serve NAME DATADIR ARGS...: headerd serve under strace for 3 s, then SIGTERM to headerd
# (not to strace, which would detach); the trace is $WORK/NAME.trace.
traced_serve() {
    local name=$1 d=$2 pid port
    shift 2
    cp -r "$WORK/chain" "$d"
    disc_port port
    ASAN_OPTIONS=$TRACED_ASAN_OPTIONS strace -f -e trace=network -o "$WORK/$name.trace" \
        "$HEADERD" serve --datadir "$d" --listen "127.0.0.1:$port" "$@" >"$WORK/$name.log" 2>&1 &
    PIDS[$name]=$!
    wait_file "$d/enode" "$name" $((20 * SCALE))
    sleep 3
    pid=$(pgrep -P "${PIDS[$name]}" -x headerd || true)
    [[ -n $pid ]] || fail "no headerd process under strace: $(tail -3 "$WORK/$name.log")"
    kill -TERM "$pid"
    poll_until $((10 * SCALE)) 0.1 -- pid_gone "${PIDS[$name]}" || fail "$name still running 10 s after SIGTERM"
    wait "${PIDS[$name]}" || fail "$name exited $?: $(tail -3 "$WORK/$name.log")"
    unset "PIDS[$name]"
}

echo "== 1. headerd serve with the defaults"
traced_serve serve "$WORK/serve"
if grep -q "Discovery started" "$WORK/serve.log"; then fail "discovery started without being asked for"; fi
check_loopback_only "serve (defaults)" "$WORK/serve.trace"

echo "== 2. headerd discover with the defaults (no bootnodes)"
rc=0
ASAN_OPTIONS=$TRACED_ASAN_OPTIONS timeout -s KILL $((60 * SCALE)) strace -f -e trace=network -o "$WORK/discover.trace" \
    "$HEADERD" discover >"$WORK/discover.out" 2>"$WORK/discover.log" || rc=$?
[[ $rc -ne 137 ]] || fail "headerd discover (default --duration 30) still running after $((60 * SCALE)) s"
[[ $rc -eq 0 ]] || fail "headerd discover without bootnodes exited $rc: $(tail -3 "$WORK/discover.log")"
grep -q "nobody to ask" "$WORK/discover.log" || fail "discover did not say there was nobody to ask: $(cat "$WORK/discover.log")"
[[ ! -s $WORK/discover.out ]] || fail "discover without bootnodes found nodes: $(cat "$WORK/discover.out")"
check_loopback_only "discover (defaults)" "$WORK/discover.trace"

echo "== 3. positive control: serve --discovery v4 --bootnodes <headerd on 127.0.0.1>"
cp -r "$WORK/chain" "$WORK/boot"
disc_serve boot "$WORK/boot"
traced_serve control "$WORK/control" --discovery v4 --bootnodes "$(head -1 "$WORK/boot/enode")"
boot_port=$(head -1 "$WORK/boot/enode" | sed 's/.*://')
grep -qE "sendto\(.*sin_port=htons\($boot_port\), sin_addr=inet_addr\(\"127\.0\.0\.1\"\)" "$WORK/control.trace" ||
    fail "the trace shows no sendto to the bootnode 127.0.0.1:$boot_port: $(grep -c sendto "$WORK/control.trace") sendto calls"
echo "ok: the control's trace shows $(grep -cE 'sendto\(.*inet_addr\("127\.0\.0\.1"\)' "$WORK/control.trace") sendto calls to 127.0.0.1, the bootnode's port among them"
check_loopback_only "serve --bootnodes <loopback>" "$WORK/control.trace"
stop_within boot 10
echo "PASS"
