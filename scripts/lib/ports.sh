# shellcheck shell=bash
# Picking TCP ports for services a script starts on this machine (scripts/monitor.sh,
# tests/compose_test.sh). Source it; it defines functions only.

# The ports free_port handed out in this shell, so that two calls never give the same one.
FREE_PORTS_PICKED=" "

# free_port VAR: sets VAR to a TCP port nothing on this machine listens on or uses, below the
# kernel's ephemeral range (so no port the kernel hands out for port-0 listeners or outgoing
# connections, of other tests or of headerd get, can take it before the service binds it) and from
# 20000 up. Returns 1, saying so on stderr, when 500 random tries found none.
free_port() {
    # (Locals with a prefix: VAR may be any other name, p or port included.)
    local fp_low fp_used fp_port fp_hex
    read -r fp_low _ </proc/sys/net/ipv4/ip_local_port_range || fp_low=32768
    [ "$fp_low" -gt 20000 ] || fp_low=32768
    fp_used=$(awk 'NR > 1 { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null || true)
    for _ in $(seq 500); do
        fp_port=$((20000 + RANDOM % (fp_low - 20000)))
        printf -v fp_hex '%04X' "$fp_port"
        if ! grep -qx "$fp_hex" <<<"$fp_used" && [[ $FREE_PORTS_PICKED != *" $fp_port "* ]]; then
            FREE_PORTS_PICKED+="$fp_port "
            printf -v "$1" '%s' "$fp_port"
            return 0
        fi
    done
    echo "free_port: no free TCP port found between 20000 and $fp_low" >&2
    return 1
}
