#!/usr/bin/env bash
# headerd + Prometheus (+ the load generator with --load) without Docker: the docker-compose.yml
# topology (minus Grafana) on 127.0.0.1. Run with --help for the options. Needs a built headerd
# (scripts/build.sh) and Debian's prometheus package (scripts/setup.sh installs it). Only bash and
# coreutils are used besides those two.
# shellcheck disable=SC2317 # functions run from traps and wait_for look unreachable to shellcheck 0.9
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/monitor.sh [OPTIONS] [-- COMMAND [ARG...]]

Starts `headerd serve --metrics 127.0.0.1:PORT` and Debian's prometheus scraping it with
deploy/prometheus.yml, waits until headerd answers /healthz, Prometheus answers /-/ready and has
scraped headerd once (up{job="headerd"} == 1), and prints the URLs.
With --load it also runs `headerd load --peer ENODE --clients N --duration 0 --profile P --metrics
127.0.0.1:LOAD_PORT` against that headerd, as docker-compose.yml's load service does, and waits
until Prometheus has scraped it too (up{job="headerd_load"} == 1).
Without COMMAND it runs until Ctrl-C or SIGTERM, or until headerd, Prometheus or the load
generator exits.
With COMMAND it runs the command while both are up, with HEADERD_ENODE, HEADERD_METRICS_URL,
PROMETHEUS_URL (and the other keys of --state-file) in its environment, then stops both and exits
with the command's status.

Options (environment variable in brackets):
  --headerd PATH          headerd binary [HEADERD_BIN; default: build/node/headerd]
  --datadir DIR           datadir to serve; a missing or empty one first gets the bundled mainnet
                          epoch 0 (tests/data/mainnet-00000-*.era1) imported
                          [HEADERD_DATADIR; default: a fresh one in the work directory]
  --listen HOST:PORT      devp2p address of headerd [HEADERD_LISTEN; default: 127.0.0.1:30303]
  --metrics-port PORT     port of headerd's /metrics on 127.0.0.1; 0 picks a free port
                          [HEADERD_METRICS_PORT; default: 6060]
  --prometheus-port PORT  port of Prometheus on 127.0.0.1; 0 picks a free port
                          [PROMETHEUS_PORT; default: 9090]
  --prometheus PATH       prometheus binary [PROMETHEUS_BIN; default: prometheus on PATH]
  --load                  also run the load generator, scraped as job headerd_load
                          [MONITOR_LOAD=1; default: off]
  --load-clients N        synthetic clients of the load generator [HEADERD_LOAD_CLIENTS; default: 16]
  --load-profile NAME     their profile [HEADERD_LOAD_PROFILE; default: mix]
  --load-metrics-port PORT  port of the load generator's /metrics on 127.0.0.1; 0 picks a free
                          port [HEADERD_LOAD_METRICS_PORT; default: 6061]
  --workdir DIR           Prometheus config copy, targets file, TSDB and logs; kept on exit
                          [MONITOR_WORKDIR; default: a temporary directory removed on exit]
  --state-file FILE       once healthy, write KEY=VALUE lines (shell-quoted: source it) with the
                          pids, ports, URLs and the enode; removed again on exit
  --timeout SECONDS       bounded wait for each start-up step [default: 60]
  -h, --help              show this help

A port given explicitly that is already in use is an error before anything starts. Exit codes:
1 on any start-up failure or when headerd, Prometheus or the load generator exits on its own,
130/143 after Ctrl-C or SIGTERM, the command's status with COMMAND.
EOF
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
headerd=${HEADERD_BIN:-$root/build/node/headerd}
datadir=${HEADERD_DATADIR:-}
listen=${HEADERD_LISTEN:-127.0.0.1:30303}
metrics_port=${HEADERD_METRICS_PORT:-6060}
prom_port=${PROMETHEUS_PORT:-9090}
prometheus=${PROMETHEUS_BIN:-prometheus}
workdir=${MONITOR_WORKDIR:-}
load=${MONITOR_LOAD:-}
[ "$load" != 0 ] || load=
load_clients=${HEADERD_LOAD_CLIENTS:-16}
load_profile=${HEADERD_LOAD_PROFILE:-mix}
load_port=${HEADERD_LOAD_METRICS_PORT:-6061}
state_file=
timeout_s=60
command=()

die() {
    echo "monitor: error: $*" >&2
    exit 1
}
need_value() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }

while [ $# -gt 0 ]; do
    case $1 in
        --headerd) need_value "$@"; headerd=$2; shift 2 ;;
        --datadir) need_value "$@"; datadir=$2; shift 2 ;;
        --listen) need_value "$@"; listen=$2; shift 2 ;;
        --metrics-port) need_value "$@"; metrics_port=$2; shift 2 ;;
        --prometheus-port) need_value "$@"; prom_port=$2; shift 2 ;;
        --prometheus) need_value "$@"; prometheus=$2; shift 2 ;;
        --workdir) need_value "$@"; workdir=$2; shift 2 ;;
        --load) load=1; shift ;;
        --load-clients) need_value "$@"; load_clients=$2; shift 2 ;;
        --load-profile) need_value "$@"; load_profile=$2; shift 2 ;;
        --load-metrics-port) need_value "$@"; load_port=$2; shift 2 ;;
        --state-file) need_value "$@"; state_file=$2; shift 2 ;;
        --timeout) need_value "$@"; timeout_s=$2; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        --) shift; command=("$@"); break ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done

for v in metrics_port prom_port load_port load_clients timeout_s; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "${v//_/ } must be a number, got '${!v}'"
done
[ -x "$headerd" ] || die "headerd binary '$headerd' not found or not executable; build it with scripts/build.sh"
if [[ $prometheus != */* ]]; then
    prometheus_path=$(command -v "$prometheus" || true)
    [ -n "$prometheus_path" ] ||
        die "'$prometheus' not found on PATH; install Debian's prometheus package (scripts/setup.sh does)"
    prometheus=$prometheus_path
fi
[ -x "$prometheus" ] || die "prometheus binary '$prometheus' not found or not executable"
[ -f "$root/deploy/prometheus.yml" ] || die "$root/deploy/prometheus.yml is missing"
# `headerd load` is newer than `serve`: say so plainly when this binary predates it.
if [ -n "$load" ] && ! "$headerd" load --help >/dev/null 2>&1; then
    die "--load: '$headerd' has no 'load' command (headerd load --help fails); rebuild it, or run without --load"
fi

serve_pid=
prom_pid=
load_pid=
command_pid=
own_workdir=
state_written=

# stop PID NAME: SIGTERM, up to 10 s for a clean exit, then SIGKILL; always reaps the child.
stop() {
    local pid=$1 name=$2
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "monitor: $name (pid $pid) still running 10 s after SIGTERM; killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop "$command_pid" "${command[0]:-command}"
    stop "$load_pid" "headerd load"
    stop "$prom_pid" prometheus
    stop "$serve_pid" headerd
    [ -z "$state_written" ] || rm -f "$state_file"
    [ -z "$own_workdir" ] || rm -rf "$own_workdir"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "$workdir" ]; then
    workdir=$(mktemp -d "${TMPDIR:-/tmp}/headerd-monitor.XXXXXX")
    own_workdir=$workdir
fi
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
[ -n "$datadir" ] || datadir=$workdir/datadir

# free_port
# shellcheck source=scripts/lib/ports.sh
source "$root/scripts/lib/ports.sh"
# listening PORT: true when something listens on TCP port PORT on this machine.
listening() {
    local hex
    printf -v hex '%04X' "$1"
    awk -v hex="$hex" 'NR > 1 && $4 == "0A" { split($2, a, ":"); if (a[2] == hex) found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
if [ "$metrics_port" = 0 ]; then
    free_port metrics_port
elif listening "$metrics_port"; then
    die "port $metrics_port is already in use; choose another with --metrics-port (0: any free port)"
fi
if [ "$prom_port" = 0 ]; then
    free_port prom_port
elif listening "$prom_port"; then
    die "port $prom_port is already in use (a system prometheus service?); choose another with --prometheus-port (0: any free port)"
fi
[ "$metrics_port" != "$prom_port" ] || die "headerd metrics and Prometheus cannot share port $prom_port"
if [ -n "$load" ]; then
    if [ "$load_port" = 0 ]; then
        free_port load_port
    elif listening "$load_port"; then
        die "port $load_port is already in use; choose another with --load-metrics-port (0: any free port)"
    fi
    if [ "$load_port" = "$metrics_port" ] || [ "$load_port" = "$prom_port" ]; then
        die "the load generator's metrics port $load_port is taken by headerd or Prometheus"
    fi
fi

# http_get PORT PATH: body of http://127.0.0.1:PORT/PATH on stdout; fails unless the status is 200.
# HTTP/1.0 over bash's /dev/tcp: no curl needed, and the server closes the connection after the reply.
http_get() {
    local reply
    reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" &&
        printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$2" "$1" >&3 &&
        timeout 5 cat <&3) 2>/dev/null) || return 1
    [[ ${reply%%$'\n'*} =~ ^HTTP/1\.[01]\ 200 ]] || return 1
    printf '%s' "${reply#*$'\r\n\r\n'}"
}

# poll_until, pid_alive
# shellcheck source=scripts/lib/wait.sh
source "$root/scripts/lib/wait.sh"
# wait_for WHAT PID LOG CONDITION...: polls CONDITION every 0.2 s for at most --timeout seconds;
# fails with the tail of the child's log when the child exits first or time runs out.
wait_for() {
    local what=$1 pid=$2 log=$3 rc=0
    shift 3
    poll_until "$timeout_s" 0.2 pid_alive "$pid" -- "$@" || rc=$?
    [ "$rc" != 0 ] || return 0
    tail -n 20 "$log" >&2 || true
    [ "$rc" != 2 ] || die "$what: the process exited (log: $log)"
    die "$what: not ready within $timeout_s s (log: $log)"
}

# 1. The datadir: serve an existing one, or import the bundled epoch into a missing or empty one.
if [ ! -d "$datadir" ] || [ -z "$(ls -A "$datadir")" ]; then
    era1=$(compgen -G "$root/tests/data/mainnet-00000-*.era1" | head -1) || true
    [ -n "$era1" ] || die "the bundled era1 archive (tests/data/mainnet-00000-*.era1) is missing"
    echo "monitor: importing $(basename "$era1") into $datadir" >&2
    "$headerd" import --datadir "$datadir" "$era1" >"$workdir/import.log" 2>&1 ||
        { tail -n 20 "$workdir/import.log" >&2; die "import into $datadir failed (log: $workdir/import.log)"; }
fi

# 2. headerd serve with metrics on loopback. Its first stdout line is the enode URL.
"$headerd" serve --datadir "$datadir" --listen "$listen" --metrics "127.0.0.1:$metrics_port" \
    >"$workdir/headerd.out" 2>"$workdir/headerd.log" &
serve_pid=$!
wait_for "headerd serve" "$serve_pid" "$workdir/headerd.log" grep -q '^enode://' "$workdir/headerd.out"
enode=$(grep -m1 '^enode://' "$workdir/headerd.out")
wait_for "headerd /healthz on 127.0.0.1:$metrics_port" "$serve_pid" "$workdir/headerd.log" \
    http_get "$metrics_port" /healthz >/dev/null

# 3. With --load: the load generator against headerd until stopped, metrics on loopback.
load_metrics_url=
if [ -n "$load" ]; then
    "$headerd" load --peer "$enode" --clients "$load_clients" --duration 0 --profile "$load_profile" \
        --metrics "127.0.0.1:$load_port" >"$workdir/load.out" 2>"$workdir/load.log" &
    load_pid=$!
    wait_for "headerd load /metrics on 127.0.0.1:$load_port" "$load_pid" "$workdir/load.log" \
        http_get "$load_port" /metrics >/dev/null
    load_metrics_url=http://127.0.0.1:$load_port/metrics
fi

# 4. Prometheus with the shared deploy/prometheus.yml, copied unchanged next to its targets files
#    (file_sd paths are relative to the configuration file). Without --load the load job has an
#    empty target list.
mkdir -p "$workdir/prometheus/targets" "$workdir/prometheus/data"
cp "$root/deploy/prometheus.yml" "$workdir/prometheus/prometheus.yml"
printf '[{"targets": ["127.0.0.1:%s"], "labels": {}}]\n' "$metrics_port" \
    >"$workdir/prometheus/targets/headerd.json"
if [ -n "$load" ]; then
    printf '[{"targets": ["127.0.0.1:%s"], "labels": {}}]\n' "$load_port" >"$workdir/prometheus/targets/load.json"
else
    printf '[]\n' >"$workdir/prometheus/targets/load.json"
fi
"$prometheus" --config.file="$workdir/prometheus/prometheus.yml" \
    --storage.tsdb.path="$workdir/prometheus/data" --storage.tsdb.retention.time=1d \
    --web.listen-address="127.0.0.1:$prom_port" \
    >"$workdir/prometheus.log" 2>&1 &
prom_pid=$!
wait_for "prometheus on 127.0.0.1:$prom_port" "$prom_pid" "$workdir/prometheus.log" \
    http_get "$prom_port" /-/ready >/dev/null
# scraped_up JOB: Prometheus's last scrape of JOB succeeded (up{job="JOB"} == 1).
scraped_up() {
    http_get "$prom_port" "/api/v1/query?query=up%7Bjob%3D%22$1%22%7D" |
        grep -q '"value":\[[0-9.e+]*,"1"\]'
}
wait_for "first scrape of headerd by prometheus (up{job=\"headerd\"} == 1)" "$prom_pid" \
    "$workdir/prometheus.log" scraped_up headerd
if [ -n "$load" ]; then
    wait_for "first scrape of the load generator by prometheus (up{job=\"headerd_load\"} == 1)" "$prom_pid" \
        "$workdir/prometheus.log" scraped_up headerd_load
fi

metrics_url=http://127.0.0.1:$metrics_port/metrics
prom_url=http://127.0.0.1:$prom_port
export HEADERD_ENODE=$enode HEADERD_METRICS_URL=$metrics_url HEADERD_METRICS_PORT=$metrics_port \
    HEADERD_PID=$serve_pid HEADERD_DATADIR=$datadir PROMETHEUS_URL=$prom_url PROMETHEUS_PORT=$prom_port \
    PROMETHEUS_PID=$prom_pid MONITOR_WORKDIR=$workdir MONITOR_PID=$$
# Empty without --load.
export LOAD_PID=$load_pid LOAD_METRICS_URL=$load_metrics_url LOAD_METRICS_PORT=${load:+$load_port}
if [ -n "$state_file" ]; then
    for k in HEADERD_ENODE HEADERD_METRICS_URL HEADERD_METRICS_PORT HEADERD_PID HEADERD_DATADIR \
        PROMETHEUS_URL PROMETHEUS_PORT PROMETHEUS_PID MONITOR_WORKDIR MONITOR_PID \
        LOAD_PID LOAD_METRICS_URL LOAD_METRICS_PORT; do
        printf '%s=%q\n' "$k" "${!k}"
    done >"$state_file.tmp"
    mv "$state_file.tmp" "$state_file"
    state_written=1
fi

cat >&2 <<EOF
monitor: headerd     $enode
monitor: metrics     $metrics_url  (health: http://127.0.0.1:$metrics_port/healthz)
monitor: prometheus  $prom_url  (targets: $prom_url/targets)
monitor: logs        $workdir/headerd.log, $workdir/prometheus.log${load:+, $workdir/load.log}
EOF
if [ -n "$load" ]; then
    echo "monitor: load        $load_clients clients, profile $load_profile; metrics $load_metrics_url" >&2
fi

if [ ${#command[@]} -gt 0 ]; then
    # In the background so that SIGTERM/SIGINT reach the trap at once, with this script's stdin.
    "${command[@]}" <&0 &
    command_pid=$!
    rc=0
    wait "$command_pid" || rc=$?
    command_pid=
    exit "$rc"
fi

echo "monitor: running; Ctrl-C stops headerd, prometheus${load:+ and the load generator}" >&2
# shellcheck disable=SC2086 # load_pid is empty or one pid
wait -n "$serve_pid" "$prom_pid" $load_pid || true
kill -0 "$serve_pid" 2>/dev/null || die "headerd exited (log: $workdir/headerd.log)"
[ -z "$load_pid" ] || kill -0 "$load_pid" 2>/dev/null || die "headerd load exited (log: $workdir/load.log)"
die "prometheus exited (log: $workdir/prometheus.log)"
