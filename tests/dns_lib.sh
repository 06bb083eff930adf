# shellcheck shell=bash
# dnsmasq serving DNS node lists (EIP-1459) on 127.0.0.1, for the tests of DNS discovery
# (tests/dns_discovery_test.sh, tests/dns_sync_test.sh). Source it after lib.sh (it uses WORK and
# fail). It exits 77 (skip) when dnsmasq is not installed; scripts/setup.sh installs dnsmasq-base.
# dnsmasq has no upstream server (--no-resolv, --no-hosts) and listens on 127.0.0.1 only, so no
# query leaves the machine; its log is $WORK/dnsmasq.log.

DNSMASQ=$(PATH=$PATH:/usr/sbin:/sbin command -v dnsmasq || true)
if [ -z "$DNSMASQ" ]; then
    echo "SKIP: dnsmasq not found (install Debian's dnsmasq-base; scripts/setup.sh does)"
    exit 77
fi
DNSMASQ_PID=

# start_dnsmasq TOOL CONF URL: serves the txt-record lines of CONF on a random port of 127.0.0.1
# until stop_dnsmasq; ready when `TOOL sync` (tests/dns_tree_tool) reads the tree at URL from it.
# Sets DNSMASQ_PID and DNS_SERVER (127.0.0.1:PORT). A port taken (dnsmasq binds UDP and TCP, and
# exits at once when either is) makes it try another, five times at most.
start_dnsmasq() {
    local tool=$1 conf=$2 url=$3 try port
    for try in 1 2 3 4 5; do
        port=$((20000 + RANDOM % 12000))
        "$DNSMASQ" --keep-in-foreground --conf-file="$conf" --port="$port" \
            --listen-address=127.0.0.1 --bind-interfaces --no-resolv --no-hosts --no-negcache \
            --pid-file="$WORK/dnsmasq.pid" --user="$(id -un)" --group="$(id -gn)" \
            --log-queries --log-facility="$WORK/dnsmasq.log" &
        DNSMASQ_PID=$!
        for _ in $(seq 50); do
            if ! kill -0 "$DNSMASQ_PID" 2>/dev/null; then break; fi
            if "$tool" sync "127.0.0.1:$port" "$url" >"$WORK/sync.txt" 2>"$WORK/sync.err"; then
                DNS_SERVER=127.0.0.1:$port
                return 0
            fi
            sleep 0.1
        done
        stop_dnsmasq
        echo "dnsmasq on port $port did not answer (try $try): $(tail -3 "$WORK/dnsmasq.log" 2>/dev/null)"
    done
    fail "dnsmasq did not start: $(cat "$WORK/sync.err" 2>/dev/null)"
}

stop_dnsmasq() {
    if [ -n "$DNSMASQ_PID" ]; then
        kill "$DNSMASQ_PID" 2>/dev/null || true
        wait "$DNSMASQ_PID" 2>/dev/null || true
    fi
    DNSMASQ_PID=
}

# dnsmasq_queries_only DOMAIN: every query dnsmasq logged was for a name under DOMAIN and came from
# 127.0.0.1; prints how many TXT queries it answered. Its failure (fail) ends only a command
# substitution: call it as `n=$(dnsmasq_queries_only D) || exit 1`.
dnsmasq_queries_only() {
    local escaped=${1//./\\.}
    grep -q 'query\[TXT\]' "$WORK/dnsmasq.log" || fail "dnsmasq logged no TXT query"
    if grep 'query\[' "$WORK/dnsmasq.log" | grep -v "$escaped from 127\.0\.0\.1" | grep -q .; then
        fail "a query for another name or from elsewhere: $(grep 'query\[' "$WORK/dnsmasq.log" | grep -v "$escaped" | head -3)"
    fi
    grep -c 'query\[TXT\]' "$WORK/dnsmasq.log"
}
