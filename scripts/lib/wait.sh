# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables it sets are for the script that sources it
# Waiting for a service to come up, with a deadline: the poll loop of scripts/monitor.sh (headerd's
# enode, /healthz and /metrics, Prometheus's readiness and first scrapes) and tests/compose_test.sh
# (the Docker daemon, healthy containers, Prometheus queries). Source it; it defines functions only.

# poll_until TIMEOUT INTERVAL [GUARD...] -- CONDITION...: runs CONDITION in this shell (so it may set
# variables) until it succeeds, then again every INTERVAL seconds (sleep's syntax: 0.2 works), for
# at most TIMEOUT seconds counted by bash's SECONDS (whole seconds: the wait ends TIMEOUT - 1 to
# TIMEOUT seconds after it began, plus the last try). After each failed try GUARD, when given (the
# words before "--"), must still succeed: a process or container the caller waits on is still up.
# Returns 0 once CONDITION succeeded; 2 as soon as GUARD failed, with what GUARD printed on stdout in
# POLL_REASON; 1 when TIMEOUT seconds have passed. CONDITION runs at least once. The "--" is
# required, so that a CONDITION may hold "--" itself.
poll_until() {
    local timeout=$1 interval=$2 deadline i
    local -a guard=()
    shift 2
    for ((i = 1; i <= $#; i++)); do
        [ "${!i}" != -- ] || break
    done
    if [ "$i" -gt $# ]; then
        echo "poll_until: no -- before the condition" >&2
        return 3
    fi
    guard=("${@:1:i-1}")
    shift "$i"
    deadline=$((SECONDS + timeout))
    POLL_REASON=
    until "$@"; do
        if [ ${#guard[@]} -gt 0 ] && ! POLL_REASON=$("${guard[@]}"); then
            return 2
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            POLL_REASON="not ready within $timeout s"
            return 1
        fi
        sleep "$interval"
    done
}

# pid_alive PID: the process is still running (a GUARD for poll_until).
pid_alive() { kill -0 "$1" 2>/dev/null; }
