#!/usr/bin/env bash
# A local discv4 network of 30 nodes on 127.0.0.1: 20 headerd serve processes (--workers 1, one
# small synthetic chain generated once and copied, --discovery.refresh 5 so they keep looking) and
# 10 @ethereumjs/devp2p DPT nodes (tests/interop/dpt_node.js), every one bootstrapping from the
# same headerd node h0. Each node must come to know at least 90% of the 29 others (27):
#   - a DPT node: its table (--peers file, without itself), polled every 0.5 s until all DPT
#     nodes reach 27 or the deadline passes (30 s after the last node started);
#   - a headerd node: its node database, saved on SIGTERM, which is sent to all headerd nodes once
#     the DPT nodes are done (and no earlier than 10 s after the last start).
# Why: one bootnode, two implementations and a few lookups must be enough for a network to find
# itself, which the 3-node tests cannot show (buckets, Neighbors split across packets, refresh).
# Measured on a 2-core machine (8 runs): the 30 nodes start in about 3 s; every DPT node knows >= 27
# (in fact 29) 3-6 s after the last start; every headerd node knows 29 of 29 when stopped 5, 6 or
# 11-12 s after it (DISC_NET_STOP_AFTER=2, 4, 10); the whole test takes 17-20 s. Mid-run the 20
# headerd processes hold about 305 MB RSS together, the 10 DPT (Node.js) processes about 740 MB.
#
# Keys are fixed (tests/interop/disc_util.js keys: half of the public keys start with a 0 bit):
# the library's table holds only 16 nodes in the half of the key space opposite its own, so with
# random keys a DPT node sometimes could not hold 27 (tests/interop/README.md, discovery quirk 3).
#
# Usage: discovery_net_test.sh HEADERD. DISC_NET_HEADERD / DISC_NET_DPT change the node counts,
# DISC_NET_STOP_AFTER (default 10) the seconds after the last start the headerd nodes are stopped.
# Exits 77 when node or tests/interop/node_modules is missing.
set -euo pipefail
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/lib.sh" "$@"
# shellcheck source=tests/node_lib.sh
source "$(dirname "$0")/node_lib.sh"
# shellcheck source=tests/disc_lib.sh
source "$(dirname "$0")/disc_lib.sh"
need_dpt

NH=${DISC_NET_HEADERD:-20}
ND=${DISC_NET_DPT:-10}
TOTAL=$((NH + ND))
WANT=$(((TOTAL - 1) * 9 / 10 + ((TOTAL - 1) * 9 % 10 > 0))) # 90% of the others, rounded up
DEADLINE=$((30 * SCALE))
MIN_WAIT=$((${DISC_NET_STOP_AFTER:-10} * SCALE)) # when the headerd nodes are stopped and checked, at the earliest

mapfile -t KEYS < <(node "$INTEROP/disc_util.js" keys "$TOTAL")
HNAMES=() DNAMES=()
for ((i = 0; i < NH; i++)); do HNAMES+=("h$i"); done
for ((i = 0; i < ND; i++)); do DNAMES+=("d$i"); done
ALL_IDS=$(for k in "${KEYS[@]}"; do echo "${k#* }"; done | sort)
[[ $(sort -u <<<"$ALL_IDS" | wc -l) -eq $TOTAL ]] || fail "disc_util.js keys gave repeated keys"

"$HEADERD" generate --datadir "$WORK/chain" --count 64 >/dev/null 2>&1 || fail "generate"
t0=$SECONDS
for ((i = 0; i < NH; i++)); do
    cp -r "$WORK/chain" "$WORK/h$i"
    (umask 077 && echo "${KEYS[i]%% *}" >"$WORK/h$i/nodekey")
done
disc_serve h0 "$WORK/h0" --discovery.refresh 5
BOOT=$(head -1 "$WORK/h0/enode")
# The others all at once, then wait for each.
for ((i = 1; i < NH; i++)); do NO_WAIT=1 disc_serve "h$i" "$WORK/h$i" --discovery.refresh 5 --bootnodes "$BOOT"; done
for ((i = 0; i < ND; i++)); do NO_WAIT=1 dpt "d$i" --key "${KEYS[NH + i]%% *}" --bootnode "$BOOT"; done
wait_started "${HNAMES[@]}" "${DNAMES[@]}"
for ((i = 0; i < NH; i++)); do
    grep -q "^enode://${KEYS[i]#* }@" "$WORK/h$i/enode" || fail "h$i did not take the node key written for it"
done
started=$SECONDS
echo "started $NH headerd and $ND DPT nodes in $((started - t0)) s; each must know >= $WANT of the $((TOTAL - 1)) others"

# file_of NAME: where NAME's knowledge is (DPT: its table; headerd: its database, saved on SIGTERM).
file_of() { if [[ $1 == h* ]]; then echo "$WORK/$1/nodes"; else echo "$WORK/$1.peers"; fi; }
own_id() { if [[ $1 == h* ]]; then echo "${KEYS[${1#h}]#* }"; else echo "${KEYS[NH + ${1#d}]#* }"; fi; }
# count NAME...: sets COUNT[NAME] to how many of the other nodes of the network NAME knows (one
# node process for all the files).
declare -A COUNT=()
count() {
    local n pairs
    pairs=$(for n in "$@"; do file_of "$n"; done | xargs node "$INTEROP/disc_util.js" ids-each)
    for n in "$@"; do
        COUNT[$n]=$(awk -v f="$(file_of "$n")" -v own="$(own_id "$n")" 'NR == FNR { all[$1] = 1; next }
            $1 == f && $2 != own && ($2 in all) { c++ } END { print c + 0 }' <(echo "$ALL_IDS") - <<<"$pairs")
    done
}
dpt_done() {
    local n
    count "${DNAMES[@]}"
    for n in "${DNAMES[@]}"; do [[ ${COUNT[$n]} -ge $WANT ]] || return 1; done
}
until dpt_done; do
    [[ $((SECONDS - started)) -lt $DEADLINE ]] || break
    sleep 0.5
done
dpt_time=$((SECONDS - started))
while [[ $((SECONDS - started)) -lt $MIN_WAIT ]]; do sleep 0.5; done
dpt_done || true
stop_time=$((SECONDS - started))
stop_all_within $((20 * SCALE)) "${HNAMES[@]}"
count "${HNAMES[@]}"

table() {
    local n
    printf '%-5s %-8s %s\n' node kind "knows (of $((TOTAL - 1)))"
    for n in "${HNAMES[@]}" "${DNAMES[@]}"; do
        printf '%-5s %-8s %s\n' "$n" "$([[ $n == h* ]] && echo headerd || echo dpt)" "${COUNT[$n]}"
    done
}
bad=()
for n in "${HNAMES[@]}" "${DNAMES[@]}"; do [[ ${COUNT[$n]} -ge $WANT ]] || bad+=("$n"); done
table
echo "DPT nodes done after $dpt_time s; headerd nodes stopped after $stop_time s (times from the last start)"
if [[ ${#bad[@]} -gt 0 ]]; then
    for n in "${bad[@]}"; do
        echo "--- $n" >&2
        if [[ $n == h* ]]; then tail -3 "$WORK/$n.log" >&2; else grep -c 'error' "$WORK/$n.log" >&2 || true; fi
    done
    fail "${#bad[@]} node(s) know fewer than $WANT of the $((TOTAL - 1)) others: ${bad[*]}"
fi
for n in "${DNAMES[@]}"; do kill -0 "${PIDS[$n]}" 2>/dev/null || fail "DPT node $n died: $(tail -3 "$WORK/$n.log")"; done
stop_all_within 5 "${DNAMES[@]}"
echo "ok: all $TOTAL nodes know >= $WANT of the $((TOTAL - 1)) others"
echo "PASS"
