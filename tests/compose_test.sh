#!/usr/bin/env bash
# docker-compose.yml for real, on a machine that reaches a Debian mirror but no image registry.
# Slow (debootstrap on the first run, a C++ build in the image): not part of scripts/test.sh or
# .ci/run; run it by hand or as a CI job of its own. Run with --help for the options.
#
#  1. installs what is missing (docker.io, docker-compose unless Compose v2 is there, debootstrap
#     when the base image must be made) and starts the Docker daemon if none runs (stopped again
#     at the end);
#  2. makes the base image headerd-test/debian:bookworm with debootstrap (Debian 12 minbase) and
#     `docker import`, or reuses it when it exists;
#  3. builds headerd-test/headerd:local from deploy/Dockerfile (BASE_IMAGE = that base; its build
#     stage tagged headerd-test/headerd-build:local) and headerd-test/prometheus:bookworm from
#     deploy/prometheus.Dockerfile (Debian's package), all with --network host, from a snapshot of
#     the working tree (or of --ref REV); the images a tag had before are removed; the headerd
#     image must hold the Debian package (dpkg knows it, /usr/bin/headerd is its file and names its
#     version);
#  4. brings up headerd, load (the load generator, one replica, until stopped) and prometheus with
#     docker-compose.yml + deploy/compose.test.yml (no Grafana), every port on 127.0.0.1 on free
#     ports;
#  5. checks: headerd and the load generator healthy, /healthz, a `headerd get` and the load
#     generator's /metrics through the published ports, Prometheus scraping headerd and the load
#     generator (up == 1), client RTT quantiles per profile through PromQL, headerd's own series,
#     every Grafana dashboard expression accepted (the client RTT panel with data);
#  6. stops the services (each must exit 0 on SIGTERM), tears down containers, networks and
#     volumes (the images stay cached) and checks that nothing of the project is left;
#  7. the scaled run (--scale N, default 3): `--profile merge up -d --scale load=N` with a finite
#     HEADERD_LOAD_DURATION; checks N replicas healthy, Prometheus scraping each of them (N targets
#     up, instance labels the replicas' addresses, one run label on all their series), the
#     dashboard's expressions accepted with the generators counted and the client RTT summed, every
#     replica ending with exit code 0 and one start time, the merge service's exit code 0, and the
#     merged report: merged.json and merged.html exist and merged.json's totals.requests is the sum
#     of the replica reports'; then tears that stack down as in 6.
# On failure it prints the services' state and the logs of every container.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: tests/compose_test.sh [OPTIONS]

Runs docker-compose.yml (headerd, the load generator, Prometheus) for real with images built
here from Debian packages, checks it end to end and tears it down; then runs it again with the
load service scaled to N replicas for a finite run and checks their merged report. Needs root or
sudo.

Options (environment variable in brackets):
  --ref REV          build and run commit REV (git archive) instead of the working tree
  --rebuild-base     debootstrap the base image again even if headerd-test/debian:bookworm exists
  --keep             leave the last stack (and a daemon the test started) running at the end;
                     prints how to take it down
  --scale N          load replicas of the scaled run (default 3); 0 skips the scaled run
  --scale-duration S seconds each replica of the scaled run measures (default 60)
  --timeout SECONDS  bound of each wait for the stack (default 300); builds have their own bounds
                     (debootstrap 30 min, each image 60 min)
  -h, --help         show this help

Environment:
  HEADERD_COMPOSE         compose command, "docker compose" or "docker-compose" (default: Compose
                          v2 when `docker compose` works, else docker-compose)
  HEADERD_DEBIAN_MIRROR   Debian mirror of the base image [http://deb.debian.org/debian]
  HEADERD_DEBIAN_SECURITY security mirror [http://deb.debian.org/debian-security]
  HEADERD_BUILD_NICE      nice increment of the compiler in the image build and of debootstrap [10]
  CI                      when "true", sudo never prompts (sudo -n)

Exit code 0 when every check passed, 1 otherwise.
EOF
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# poll_until
# shellcheck source=scripts/lib/wait.sh
source "$ROOT/scripts/lib/wait.sh"
# free_port
# shellcheck source=scripts/lib/ports.sh
source "$ROOT/scripts/lib/ports.sh"
PROJECT=headerd-compose-test
BASE_IMAGE=headerd-test/debian:bookworm
HEADERD_IMAGE=headerd-test/headerd:local
HEADERD_BUILD_STAGE=headerd-test/headerd-build:local
PROMETHEUS_IMAGE=headerd-test/prometheus:bookworm
MIRROR=${HEADERD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${HEADERD_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
NICE=${HEADERD_BUILD_NICE:-10}
ref=
rebuild_base=
keep=
timeout_s=300
scale=3
scale_duration=60

say() { echo "compose_test: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}
need_value() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }

while [ $# -gt 0 ]; do
    case $1 in
        --ref) need_value "$@"; ref=$2; shift 2 ;;
        --rebuild-base) rebuild_base=1; shift ;;
        --keep) keep=1; shift ;;
        --timeout) need_value "$@"; timeout_s=$2; shift 2 ;;
        --scale) need_value "$@"; scale=$2; shift 2 ;;
        --scale-duration) need_value "$@"; scale_duration=$2; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds, got '$timeout_s'"
[[ $NICE =~ ^[0-9]+$ ]] || die "HEADERD_BUILD_NICE must be a number, got '$NICE'"
[[ $scale =~ ^[0-9]+$ ]] || die "--scale must be a number of replicas, got '$scale'"
[[ $scale_duration =~ ^[1-9][0-9]*$ ]] || die "--scale-duration must be a positive number of seconds, got '$scale_duration'"

t_total=$SECONDS
# phase NAME: remembers when the phase began; done_phase prints its duration.
phase_name=
phase_start=0
durations=()
phase() {
    phase_name=$1
    phase_start=$SECONDS
    say "--- $1"
}
done_phase() {
    durations+=("$phase_name $((SECONDS - phase_start)) s")
    say "ok: $phase_name ($((SECONDS - phase_start)) s)"
}

# --- privileges ---------------------------------------------------------------------------------

# SUDO runs a command as root (apt-get, dockerd, debootstrap, root-owned files): nothing when
# root, sudo otherwise (never prompting under CI=true). DPRIV is the prefix of docker and compose:
# nothing when this user may use the daemon, SUDO otherwise.
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo is not available; run as root"
    if [ "${CI:-}" = true ]; then
        SUDO=(sudo -n)
        sudo -n true 2>/dev/null || die "CI=true: sudo needs a password; allow passwordless sudo or run as root"
    else
        SUDO=(sudo)
        sudo -v || die "sudo failed"
    fi
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/headerd-compose-test.XXXXXX")
SRC=$WORK/src
DPRIV=()
DOCKER=(docker)
COMPOSE=()
compose_env=()
dockerd_started=
stack_up=
up_bg_pid=
export DEBIAN_FRONTEND=noninteractive

# compose_t SECONDS ARG...: the compose command on the project, from the source snapshot, bounded.
compose_t() {
    local t=$1
    shift
    (cd "$SRC" && "${DPRIV[@]}" env "${compose_env[@]}" timeout "$t" "${COMPOSE[@]}" -p "$PROJECT" \
        -f docker-compose.yml -f deploy/compose.test.yml "$@")
}
compose() { compose_t 120 "$@"; }
# compose_bg SECONDS NAME ARG...: compose_t in the background, its output in WORK/NAME.log, its exit
# code in WORK/NAME.rc once it has ended; up_bg_pid is the bounded compose process (`timeout`, or
# the sudo running it), which cleanup stops when it still runs.
compose_bg() {
    local t=$1 name=$2
    shift 2
    rm -f "$WORK/$name.rc" "$WORK/$name.pid"
    (
        cd "$SRC" || exit 1
        "${DPRIV[@]}" env "${compose_env[@]}" timeout "$t" "${COMPOSE[@]}" -p "$PROJECT" \
            -f docker-compose.yml -f deploy/compose.test.yml "$@" &
        echo $! >"$WORK/$name.pid"
        rc=0
        wait $! || rc=$?
        echo "$rc" >"$WORK/$name.rc"
    ) >"$WORK/$name.log" 2>&1 &
    poll_until 10 0.1 -- test -s "$WORK/$name.pid" || die "the background compose command did not start"
    up_bg_pid=$(cat "$WORK/$name.pid")
}

# --- teardown -----------------------------------------------------------------------------------

stop_daemon() {
    [ -n "$dockerd_started" ] || return 0
    if [ "$dockerd_started" = systemd ]; then
        say "stopping the Docker daemon this test started (systemctl stop docker)"
        "${SUDO[@]}" timeout 60 systemctl stop docker.socket docker.service || say "warning: systemctl stop docker failed"
    else
        local pid
        pid=$("${SUDO[@]}" cat "$WORK/dockerd.pid" 2>/dev/null || true)
        if [ -n "$pid" ]; then
            say "stopping the Docker daemon this test started (pid $pid)"
            "${SUDO[@]}" kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 300); do
                "${SUDO[@]}" kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            if "${SUDO[@]}" kill -0 "$pid" 2>/dev/null; then
                say "warning: dockerd (pid $pid) still running 30 s after SIGTERM; killing it"
                "${SUDO[@]}" kill -KILL "$pid" 2>/dev/null || true
            fi
        fi
        wait 2>/dev/null || true
    fi
    dockerd_started=
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$up_bg_pid" ] && "${SUDO[@]}" kill -0 "$up_bg_pid" 2>/dev/null; then
        "${SUDO[@]}" kill -TERM "$up_bg_pid" 2>/dev/null || true
        wait 2>/dev/null || true
    fi
    if [ -n "$keep" ] && [ "$rc" = 0 ]; then
        say "--keep: the stack stays up (project $PROJECT, sources in $SRC); take it down with:"
        say "  cd $SRC && ${DPRIV[*]} env ${compose_env[*]} ${COMPOSE[*]} -p $PROJECT -f docker-compose.yml -f deploy/compose.test.yml --profile merge down -v"
        [ -z "$dockerd_started" ] || say "  and stop the Docker daemon the test started ($dockerd_started${dockerd_pid:+, pid $dockerd_pid})"
        exit 0
    fi
    if [ -n "$stack_up" ]; then
        say "tearing down project $PROJECT"
        compose_t 180 --profile merge down -v --remove-orphans -t 20 >"$WORK/down.log" 2>&1 ||
            { cat "$WORK/down.log" >&2; say "warning: compose down failed"; rc=1; }
        stack_up=
    fi
    stop_daemon
    "${SUDO[@]}" rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- 1. packages, daemon, compose ----------------------------------------------------------------

apt_updated=
apt_install() {
    say "installing $*"
    if [ -z "$apt_updated" ]; then
        "${SUDO[@]}" timeout 600 apt-get update -q >"$WORK/apt.log" 2>&1 ||
            { tail -n 20 "$WORK/apt.log" >&2; die "apt-get update failed"; }
        apt_updated=1
    fi
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive timeout 1200 \
        apt-get install -y -q --no-install-recommends "$@" >>"$WORK/apt.log" 2>&1 ||
        { tail -n 20 "$WORK/apt.log" >&2; die "apt-get install $* failed"; }
}
# sbin_tool NAME: the path of NAME, also where a normal user's PATH lacks /usr/sbin; empty if none.
sbin_tool() { command -v "$1" 2>/dev/null || { [ ! -x "/usr/sbin/$1" ] || echo "/usr/sbin/$1"; }; }

phase "docker daemon and compose"
if ! command -v docker >/dev/null 2>&1 || [ -z "$(sbin_tool dockerd)" ]; then
    apt_install docker.io
fi

# docker_ok PREFIX...: the daemon answers `PREFIX docker info`.
docker_ok() { timeout 20 "$@" docker info >/dev/null 2>&1; }
pick_docker() {
    if docker_ok; then
        DPRIV=()
    elif [ ${#SUDO[@]} -gt 0 ] && docker_ok "${SUDO[@]}"; then
        DPRIV=("${SUDO[@]}")
    else
        return 1
    fi
    DOCKER=("${DPRIV[@]}" docker)
}
dockerd_pid=
if ! pick_docker; then
    if [ -d /run/systemd/system ] && "${SUDO[@]}" systemctl cat docker.service >/dev/null 2>&1; then
        say "starting the Docker daemon (systemctl start docker)"
        "${SUDO[@]}" timeout 120 systemctl start docker.service || die "systemctl start docker failed"
        dockerd_started=systemd
    else
        say "starting the Docker daemon ($(sbin_tool dockerd); log in the work directory)"
        "${SUDO[@]}" "$(sbin_tool dockerd)" --pidfile "$WORK/dockerd.pid" >"$WORK/dockerd.log" 2>&1 &
        dockerd_started=dockerd
    fi
    if ! poll_until 90 1 -- pick_docker; then
        [ ! -f "$WORK/dockerd.log" ] || tail -n 30 "$WORK/dockerd.log" >&2
        die "the Docker daemon did not answer within 90 s"
    fi
    [ "$dockerd_started" != dockerd ] || dockerd_pid=$("${SUDO[@]}" cat "$WORK/dockerd.pid" 2>/dev/null || true)
fi
client_version=$("${DOCKER[@]}" version --format '{{.Client.Version}}' 2>/dev/null || echo '?')
say "docker: client $client_version, daemon $("${DOCKER[@]}" version --format '{{.Server.Version}}' 2>/dev/null || echo '?')"

if [ -n "${HEADERD_COMPOSE:-}" ]; then
    read -r -a COMPOSE <<<"$HEADERD_COMPOSE"
elif timeout 20 "${DOCKER[@]}" compose version >/dev/null 2>&1; then
    COMPOSE=(docker compose)
else
    command -v docker-compose >/dev/null 2>&1 || apt_install docker-compose
    COMPOSE=(docker-compose)
fi
# (All of the output, then its first line: `| head -n 1` could end the command with SIGPIPE.)
compose_version=$(timeout 60 "${DPRIV[@]}" "${COMPOSE[@]}" version 2>/dev/null) ||
    die "'${COMPOSE[*]} version' failed; install docker-compose or the Compose v2 plugin"
say "compose: ${COMPOSE[*]} (${compose_version%%$'\n'*})"

# BuildKit when the client has it (built into docker.io 20.10; the buildx plugin from 23 on), the
# legacy builder otherwise: deploy/Dockerfile works with both.
client_major=${client_version%%.*}
if [[ $client_major =~ ^[0-9]+$ ]] && [ "$client_major" -lt 23 ]; then
    buildkit=1
elif timeout 20 "${DOCKER[@]}" buildx version >/dev/null 2>&1; then
    buildkit=1
else
    buildkit=0
fi
say "image builds use $([ "$buildkit" = 1 ] && echo BuildKit || echo 'the legacy builder')"
done_phase

# --- 2. the base image ---------------------------------------------------------------------------

phase "base image $BASE_IMAGE"
old_base=$("${DOCKER[@]}" image inspect -f '{{.Id}}' "$BASE_IMAGE" 2>/dev/null || true)
if [ -z "$rebuild_base" ] && [ -n "$old_base" ]; then
    say "reusing $BASE_IMAGE (created $("${DOCKER[@]}" image inspect -f '{{.Created}}' "$BASE_IMAGE"); --rebuild-base makes it again)"
else
    [ -n "$(sbin_tool debootstrap)" ] || apt_install debootstrap
    rootfs=$WORK/rootfs
    say "debootstrap --variant=minbase bookworm from $MIRROR (log in the work directory)"
    "${SUDO[@]}" nice -n "$NICE" timeout 1800 "$(sbin_tool debootstrap)" --variant=minbase bookworm "$rootfs" "$MIRROR" \
        >"$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
    # What debian:bookworm-slim has as well: the updates and security suites, and no service
    # starting inside a build (policy-rc.d). Nothing of this machine stays in the image: no apt
    # lists or caches, no resolv.conf, no host name.
    # shellcheck disable=SC2016 # expanded by the inner bash
    "${SUDO[@]}" bash -euo pipefail -c '
        r=$1
        rm -f "$r/etc/apt/sources.list"
        printf "%s\n" "Types: deb" "URIs: $2" "Suites: bookworm bookworm-updates" "Components: main" \
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" "" \
            "Types: deb" "URIs: $3" "Suites: bookworm-security" "Components: main" \
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >"$r/etc/apt/sources.list.d/debian.sources"
        printf "#!/bin/sh\nexit 101\n" >"$r/usr/sbin/policy-rc.d"
        chmod 0755 "$r/usr/sbin/policy-rc.d"
        rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/*.bin "$r"/var/cache/apt/archives/*.deb "$r"/var/log/*.log
        : >"$r/etc/resolv.conf"
        : >"$r/etc/hostname"
    ' _ "$rootfs" "$MIRROR" "$SECURITY_MIRROR"
    "${SUDO[@]}" tar -C "$rootfs" -c . |
        "${DOCKER[@]}" import --change 'CMD ["bash"]' \
            --message "Debian 12 minbase (debootstrap) for tests/compose_test.sh" - "$BASE_IMAGE" >/dev/null ||
        die "docker import of the debootstrapped tree failed"
    "${SUDO[@]}" rm -rf "$rootfs"
    # The image it replaces goes, unless images built on it still hold it.
    [ -z "$old_base" ] || "${DOCKER[@]}" image rm "$old_base" >/dev/null 2>&1 || true
    say "made $BASE_IMAGE ($("${DOCKER[@]}" image inspect -f '{{.Size}}' "$BASE_IMAGE") bytes)"
fi
done_phase

# --- 3. the images -------------------------------------------------------------------------------

phase "images $HEADERD_IMAGE and $PROMETHEUS_IMAGE"
# A snapshot of the sources: the tracked and untracked-but-not-ignored files of the working tree
# (what a checkout with your changes holds; no build trees), or commit --ref. The stack runs from
# it too, so edits made meanwhile do not mix into the run.
mkdir -p "$SRC"
if [ -n "$ref" ]; then
    commit=$(git -C "$ROOT" rev-parse --short=12 "$ref^{commit}") || die "--ref $ref is not a commit"
    git -C "$ROOT" archive --format=tar "$commit" | tar -C "$SRC" -xf - || die "git archive $commit failed"
    say "sources: commit $commit"
else
    commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ ! -e "$f" ] || printf '%s\0' "$f"; done |
        tar --null -T - -cf -) | tar -C "$SRC" -xf - || die "copying the working tree failed"
    say "sources: working tree at $commit$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' with local changes')"
fi
for f in deploy/Dockerfile deploy/compose.test.yml deploy/prometheus.Dockerfile docker-compose.yml; do
    [ -f "$SRC/$f" ] || die "the sources lack $f"
done

# build TAG LOG DOCKER-BUILD-ARG...: docker build with a bound; drops the image the tag had before.
build() {
    local tag=$1 log=$2 old new t0=$SECONDS
    shift 2
    old=$("${DOCKER[@]}" image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
    if ! "${DPRIV[@]}" env DOCKER_BUILDKIT="$buildkit" timeout 3600 docker build --network host \
        --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$tag" "$@" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        die "building $tag failed (last lines above)"
    fi
    new=$("${DOCKER[@]}" image inspect -f '{{.Id}}' "$tag")
    if [ -n "$old" ] && [ "$old" != "$new" ]; then
        "${DOCKER[@]}" image rm "$old" >/dev/null 2>&1 || true
    fi
    say "built $tag in $((SECONDS - t0)) s"
}
# The build stage gets a tag of its own first: with the legacy builder its layers are images, and a
# tag that moves on lets the previous run's build stage (about 1.4 GB) go as the final image's does,
# instead of piling up untagged. (With BuildKit both builds share its cache.)
build "$HEADERD_BUILD_STAGE" "$WORK/build-stage.log" --target build -f "$SRC/deploy/Dockerfile" \
    --build-arg HEADERD_COMMIT="$commit" --build-arg HEADERD_BUILD_NICE="$NICE" "$SRC"
build "$HEADERD_IMAGE" "$WORK/build-headerd.log" -f "$SRC/deploy/Dockerfile" \
    --build-arg HEADERD_COMMIT="$commit" --build-arg HEADERD_BUILD_NICE="$NICE" "$SRC"
build "$PROMETHEUS_IMAGE" "$WORK/build-prometheus.log" - <"$SRC/deploy/prometheus.Dockerfile"

# The load service runs `headerd load`: a binary without it cannot pass. (The binary itself is
# asked: the entrypoint's own `load` mode would wait for an enode file.)
"${DOCKER[@]}" run --rm --network none --entrypoint headerd "$HEADERD_IMAGE" load --help >/dev/null 2>&1 ||
    die "the headerd in $HEADERD_IMAGE has no working 'load' command (headerd load --help fails)"
# The image runs what the Debian package installs (deploy/Dockerfile installs the .deb): dpkg knows
# headerd, /usr/bin/headerd is the package's, and that program names the package's version.
pkg=$("${DOCKER[@]}" run --rm --network none --entrypoint sh "$HEADERD_IMAGE" -c \
    'dpkg-query -W -f="\${Version} \${Status}\n" headerd && dpkg -S /usr/bin/headerd && command -v headerd && headerd --version' 2>&1) ||
    die "the image does not hold the headerd package: $pkg"
pkg_version=${pkg%% *}
[[ $pkg == *"install ok installed"*"headerd: /usr/bin/headerd"*"/usr/bin/headerd"*"headerd $pkg_version "* ]] ||
    die "the image's headerd is not the package's: $pkg"
say "ok: the image runs the package headerd $pkg_version ($(grep -m 1 "^headerd $pkg_version " <<<"$pkg"))"
done_phase

# --- 4. the stack --------------------------------------------------------------------------------

phase "stack up"
free_port p2p_port
free_port metrics_port
free_port prom_port
free_port grafana_port
compose_env=(
    HEADERD_P2P_PORT="$p2p_port" HEADERD_METRICS_PORT="$metrics_port" PROMETHEUS_PORT="$prom_port"
    GRAFANA_PORT="$grafana_port"
)

# Leftovers of an interrupted earlier run go first.
compose_t 180 --profile merge down -v --remove-orphans -t 5 >"$WORK/down-before.log" 2>&1 ||
    { cat "$WORK/down-before.log" >&2; die "removing what an earlier run left failed"; }
stack_up=1

# diagnostics: state and logs of every container of the project (on failure).
diagnostics() {
    local c
    say "=== compose ps"
    compose ps -a >&2 2>&1 || compose ps >&2 2>&1 || true
    for c in $("${DOCKER[@]}" ps -aq --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null); do
        say "=== $("${DOCKER[@]}" inspect -f '{{.Name}} {{.State.Status}} exit={{.State.ExitCode}} health={{if .State.Health}}{{.State.Health.Status}}{{else}}-{{end}}' "$c" 2>/dev/null): last 80 log lines"
        "${DOCKER[@]}" logs --tail 80 "$c" >&2 2>&1 || true
    done
    if [ -n "${prom_port:-}" ]; then
        say "=== prometheus targets"
        http_body "$prom_port" /api/v1/targets 2>/dev/null | grep -o '"scrapeUrl":"[^"]*"\|"health":"[^"]*"\|"lastError":"[^"]*"' >&2 || true
    fi
}
fail() {
    say "FAIL: $*"
    diagnostics
    exit 1
}

if ! compose_t "$timeout_s" up -d --no-build >"$WORK/up.log" 2>&1; then
    cat "$WORK/up.log" >&2
    fail "compose up failed or took longer than $timeout_s s"
fi
say "up: headerd, load, prometheus (devp2p 127.0.0.1:$p2p_port, metrics :$metrics_port, prometheus :$prom_port)"

container() {
    local ids
    ids=$(compose ps -q "$1" 2>/dev/null) || true
    printf '%s\n' "${ids%%$'\n'*}"
}
state() { "${DOCKER[@]}" inspect -f "$2" "$1" 2>/dev/null || echo gone; }

# http, http_body, urlencode, values
# shellcheck source=tests/prom_http.sh
source "$(dirname "${BASH_SOURCE[0]}")/prom_http.sh"
promql() { http_body "$prom_port" "/api/v1/query?query=$(urlencode "$1")"; }

# all_running: every container of the project is running; else prints "container NAME is STATE".
all_running() {
    local c s
    for c in $("${DOCKER[@]}" ps -aq --filter "label=com.docker.compose.project=$PROJECT"); do
        s=$(state "$c" '{{.State.Status}}')
        [ "$s" = running ] || { echo "container $(state "$c" '{{.Name}}') is $s"; return 1; }
    done
}
# wait_until WHAT CONDITION...: polls every second for at most --timeout seconds; fails with the
# diagnostics when time runs out or the guard wait_guard fails: all_running (a container of the
# project has stopped), in the scaled run scaled_ok.
wait_guard=all_running
wait_until() {
    local what=$1 rc=0
    shift
    poll_until "$timeout_s" 1 "$wait_guard" -- "$@" || rc=$?
    [ "$rc" != 0 ] || return 0
    [ "$rc" != 2 ] || fail "$what: $POLL_REASON"
    fail "$what: not within $timeout_s s"
}

headerd_c=$(container headerd)
load_c=$(container load)
prom_c=$(container prometheus)
if [ -z "$headerd_c" ] || [ -z "$load_c" ] || [ -z "$prom_c" ]; then
    fail "compose ps does not list headerd, load and prometheus"
fi
[ "$(compose ps -q load | wc -l)" = 1 ] || fail "docker compose up started $(compose ps -q load | wc -l) load replicas, not 1"
[ -z "$(container grafana)" ] || fail "grafana was started; deploy/compose.test.yml should leave it out"
healthy() { [ "$(state "$1" '{{if .State.Health}}{{.State.Health.Status}}{{end}}')" = healthy ]; }
wait_until "headerd healthy" healthy "$headerd_c"
wait_until "load generator healthy (/metrics on :6061)" healthy "$load_c"
done_phase

# --- 5. checks -----------------------------------------------------------------------------------

phase "checks"
# Published ports are on 127.0.0.1 only.
for c in "$headerd_c" "$load_c" "$prom_c"; do
    # shellcheck disable=SC2016 # a Go template
    bindings=$(state "$c" '{{range $p, $b := .NetworkSettings.Ports}}{{range $b}}{{.HostIp}} {{end}}{{end}}')
    for ip in $bindings; do
        [ "$ip" = 127.0.0.1 ] || fail "$(state "$c" '{{.Name}}') publishes a port on $ip, not 127.0.0.1"
    done
done
say "ok: every published port is on 127.0.0.1"

# The load generator's /metrics on the free host port Docker gave it (no fixed port: it scales).
load_addr=$(compose port load 6061 2>/dev/null) || true
load_addr=${load_addr%%$'\n'*}
[[ $load_addr =~ ^127\.0\.0\.1:[0-9]+$ ]] || fail "compose port load 6061 says '$load_addr', not 127.0.0.1:PORT"
load_metrics=$(http_body "${load_addr##*:}" /metrics) || fail "no /metrics through $load_addr"
grep -q '^headerd_load_requests_total{.*run="compose"' <<<"$load_metrics" ||
    fail "the load generator's /metrics through $load_addr has no headerd_load_requests_total with run=\"compose\""
say "ok: the load generator's /metrics through the published $load_addr"

health=$(http_body "$metrics_port" /healthz) || fail "headerd /healthz on 127.0.0.1:$metrics_port does not answer 200"
[[ $health == ok\ head=8191* ]] || fail "headerd /healthz says '$health', expected 'ok head=8191 ...'"
say "ok: headerd /healthz through the published port: $health"

# One GetBlockHeaders from the host's side through the published devp2p port.
enode=$("${DOCKER[@]}" exec "$headerd_c" cat /data/enode) || fail "no enode file in the headerd container"
peer="${enode%@*}@127.0.0.1:$p2p_port"
got=$("${DOCKER[@]}" run --rm --network host "$HEADERD_IMAGE" get --peer "$peer" --origin 8000 --amount 192 \
    --timeout 20 2>"$WORK/get.err" | wc -l) || true
[ "$got" = 192 ] || { cat "$WORK/get.err" >&2; fail "headerd get through 127.0.0.1:$p2p_port returned $got headers, not 192"; }
say "ok: headerd get through the published devp2p port: 192 headers"

prom_ready() { http_body "$prom_port" /-/ready >/dev/null; }
wait_until "prometheus ready" prom_ready
# up_is JOB: Prometheus's last scrape of JOB succeeded.
up_is() { [ "$(values "$(promql "up{job=\"$1\"}")")" = 1 ]; }
wait_until "prometheus scrapes headerd (up{job=\"headerd\"} == 1)" up_is headerd
say "ok: up{job=\"headerd\"} == 1"

# non_empty EXPR: the instant query answers at least one sample with a number (not NaN).
non_empty() {
    local v
    v=$(values "$(promql "$1")")
    [ -n "$v" ] && grep -qvx 'NaN' <<<"$v"
}
served='sum(rate(headerd_headers_served_total{job="headerd"}[1m])) > 0'
wait_until "headerd serves the load generator's requests ($served)" non_empty "$served"
serve_q='histogram_quantile(0.99, sum by (le, code) (rate(headerd_p2p_serve_seconds_bucket{job="headerd",code="0x03"}[1m])))'
wait_until "serve time p99 of GetBlockHeaders through PromQL" non_empty "$serve_q"
say "ok: headerd serves $(values "$(promql "$served")") headers/s; p99 serve time $(values "$(promql "$serve_q")") s"

wait_until "prometheus scrapes the load generator (up{job=\"headerd_load\"} == 1)" up_is headerd_load
say "ok: up{job=\"headerd_load\"} == 1"
rtt_q='histogram_quantile(0.99, sum by (le, profile) (rate(headerd_load_request_seconds_bucket[1m])))'
wait_until "client RTT p99 per profile through PromQL" non_empty "$rtt_q"
rtt=$(promql "$rtt_q")
say "ok: client RTT p99 per profile: $(grep -o '"profile":"[^"]*"},"value":\[[^]]*\]' <<<"$rtt" |
    sed 's/"profile":"\([^"]*\)"},"value":\[[^,]*,"\([^"]*\)"\]/\1 \2 s/' | paste -sd, -)"
rate_q='sum(rate(headerd_load_requests_total[1m])) > 0'
non_empty "$rate_q" || fail "no load requests per second ($rate_q is empty)"
say "ok: load generator: $(values "$(promql "$rate_q")") requests/s"

# check_dashboard GENERATORS: every expression of the Grafana dashboard, with its variables as
# Grafana would set them, accepted by Prometheus; the client RTT panel has data under load, and the
# generators panel counts GENERATORS load generators.
check_dashboard() {
    local generators=$1 dashboard=$SRC/deploy/grafana/dashboards/headerd.json e q answer got n=0
    while IFS= read -r e; do
        q=${e//\$__rate_interval/1m}
        q=${q//\$\{instance\}/.*}
        q=${q//\$instance/.*}
        [[ $q != *'$'* ]] || fail "dashboard expression with a variable this test does not know: $e"
        answer=$(promql "$q") || fail "Prometheus refused dashboard expression: $q"
        grep -q '"status":"success"' <<<"$answer" || fail "dashboard expression failed: $q -> $answer"
        if [[ $q == *headerd_load_request_seconds* ]]; then
            grep -q '"result":\[{' <<<"$answer" || fail "load RTT panel expression returns no data under load: $q"
        fi
        if [[ $q == *'up{job="headerd_load"}'* ]]; then
            got=$(values "$answer")
            [ "$got" = "$generators" ] || fail "the generators panel counts '$got', not $generators: $q"
        fi
        n=$((n + 1))
    done < <(grep -o '"expr": *"\([^"\\]\|\\.\)*"' "$dashboard" | sed 's/^"expr": *"//; s/"$//; s/\\"/"/g; s/\\\\/\\/g')
    [ "$n" -ge 10 ] || fail "read only $n expressions from the dashboard"
    say "ok: prometheus accepts all $n Grafana dashboard expressions; the client RTT panel has data; $generators load generator(s) counted"
}
check_dashboard 1

# Still running after all that: nothing crashed or restarted.
for c in "$headerd_c" "$load_c" "$prom_c"; do
    [ "$(state "$c" '{{.State.Status}} {{.RestartCount}}')" = "running 0" ] ||
        fail "$(state "$c" '{{.Name}}') is $(state "$c" '{{.State.Status}}') after the checks"
done
done_phase

# --- 6. teardown ---------------------------------------------------------------------------------

summary() {
    local out
    out=$(printf '%s; ' "${durations[@]}")
    printf '%s' "${out%; }"
}
# teardown_stack: compose down -v, then nothing of the project may be left.
teardown_stack() {
    compose_t 180 --profile merge down -v --remove-orphans -t 20 >"$WORK/down.log" 2>&1 ||
        { cat "$WORK/down.log" >&2; die "compose down failed"; }
    stack_up=
    local left
    left=$("${DOCKER[@]}" ps -aq --filter "label=com.docker.compose.project=$PROJECT")
    left+=$("${DOCKER[@]}" volume ls -q --filter "label=com.docker.compose.project=$PROJECT")
    left+=$("${DOCKER[@]}" network ls -q --filter "label=com.docker.compose.project=$PROJECT")
    [ -z "$left" ] || die "compose down left containers, volumes or networks of project $PROJECT: $left"
    say "ok: no container, volume or network of project $PROJECT left"
}
if [ -n "$keep" ] && [ "$scale" = 0 ]; then
    say "PASS (stack kept) in $((SECONDS - t_total)) s ($(summary))"
    exit 0
fi
phase "teardown"
# SIGTERM ends every service cleanly: headerd serve and headerd load exit 0, Prometheus too.
compose_t 120 stop -t 30 >"$WORK/stop.log" 2>&1 || { cat "$WORK/stop.log" >&2; fail "compose stop failed"; }
for c in "$load_c" "$headerd_c" "$prom_c"; do
    [ "$(state "$c" '{{.State.Status}} {{.State.ExitCode}}')" = "exited 0" ] ||
        fail "$(state "$c" '{{.Name}}') did not stop cleanly on SIGTERM: $(state "$c" '{{.State.Status}}, exit code {{.State.ExitCode}}')"
done
say "ok: SIGTERM stops headerd, the load generator and prometheus with exit code 0"
teardown_stack
done_phase

# --- 7. the scaled run ---------------------------------------------------------------------------

if [ "$scale" -gt 0 ]; then
    phase "scaled run: $scale load replicas, $scale_duration s, merged report"
    # What docker-compose.yml documents, on a fresh project: the load replicas begin at the start
    # time the first of them shares (HEADERD_LOAD_START_DELAY, default 10 s), run a finite window
    # and write their reports; merge (profile "merge") waits until all have exited 0. `up -d`
    # returns only once the replicas are done, so it runs in the background meanwhile.
    run_id=compose-test-$$
    compose_env+=(HEADERD_LOAD_DURATION="$scale_duration" HEADERD_LOAD_RUN_ID="$run_id" HEADERD_LOAD_CLIENTS=4)
    stack_up=1
    compose_bg $((2 * timeout_s + scale_duration)) up-scaled --profile merge up -d --no-build --scale load="$scale"
    say "up (in the background): headerd, $scale x load ($scale_duration s, run $run_id), prometheus, merge"

    service_containers() {
        "${DOCKER[@]}" ps -aq --filter "label=com.docker.compose.project=$PROJECT" \
            --filter "label=com.docker.compose.service=$1"
    }
    # scaled_ok: the guard of this run's waits. headerd and prometheus run; a load replica or the
    # merge may run or have exited 0, nothing else; the background compose up has not failed.
    scaled_ok() {
        local c s
        for c in $(service_containers headerd) $(service_containers prometheus); do
            s=$(state "$c" '{{.State.Status}}')
            [ "$s" = running ] || { echo "container $(state "$c" '{{.Name}}') is $s"; return 1; }
        done
        for c in $(service_containers load) $(service_containers merge); do
            s=$(state "$c" '{{.State.Status}} {{.State.ExitCode}}')
            case $s in
                running\ * | created\ * | "exited 0") ;;
                *) echo "container $(state "$c" '{{.Name}}') is $s (state, exit code)"; return 1 ;;
            esac
        done
        if [ -f "$WORK/up-scaled.rc" ] && [ "$(cat "$WORK/up-scaled.rc")" != 0 ]; then
            echo "compose up exited with $(cat "$WORK/up-scaled.rc"): $(tail -n 5 "$WORK/up-scaled.log" | tr '\n' ' ')"
            return 1
        fi
    }
    wait_guard=scaled_ok

    healthy_replicas() {
        local c n=0
        for c in $(service_containers load); do
            ! healthy "$c" || n=$((n + 1))
        done
        [ "$n" = "$scale" ]
    }
    wait_until "$scale load replicas healthy" healthy_replicas
    mapfile -t load_cs < <(service_containers load)
    [ "${#load_cs[@]}" = "$scale" ] || fail "${#load_cs[@]} load containers, not $scale"
    # shellcheck disable=SC2016 # a Go template
    addrs=$(for c in "${load_cs[@]}"; do
        echo "$(state "$c" '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}'):6061"
    done | sort)
    [ "$(sort -u <<<"$addrs" | wc -l)" = "$scale" ] || fail "the load replicas' addresses are not $scale distinct: $addrs"
    say "ok: $scale load replicas healthy at $(paste -sd' ' <<<"$addrs")"

    wait_until "prometheus ready" prom_ready
    up_count() { [ "$(values "$(promql 'count(up{job="headerd_load"} == 1)')")" = "$scale" ]; }
    wait_until "prometheus scrapes $scale load replicas (count(up{job=\"headerd_load\"} == 1) == $scale)" up_count
    instances=$(promql 'up{job="headerd_load"} == 1' | grep -o '"instance":"[^"]*"' | sed 's/"instance":"\(.*\)"/\1/' | sort)
    [ "$instances" = "$addrs" ] ||
        fail "the instance labels of job headerd_load ($(paste -sd' ' <<<"$instances")) are not the replicas' addresses"
    say "ok: $scale targets of job headerd_load up, their instance labels the replicas' addresses"
    per_run=$(values "$(promql "count(count by (instance) (headerd_load_requests_total{job=\"headerd_load\",run=\"$run_id\"}))")")
    [ "$per_run" = "$scale" ] || fail "$per_run instances have headerd_load_requests_total with run=\"$run_id\", not $scale"
    other=$(promql "headerd_load_requests_total{job=\"headerd_load\",run!=\"$run_id\"}")
    [ -z "$(values "$other")" ] || fail "series of headerd_load_requests_total without run=\"$run_id\": $other"
    say "ok: every replica's headerd_load_* series carry run=\"$run_id\""

    # The dashboard adds the replicas up: one RTT series per profile (not one per replica).
    rtt_sum_q='histogram_quantile(0.99, sum by (le, run, profile) (rate(headerd_load_request_seconds_bucket{job="headerd_load"}[1m])))'
    wait_until "client RTT p99 per profile over the $scale replicas" non_empty "$rtt_sum_q"
    rtt_profiles=$(promql "$rtt_sum_q" | grep -o '"profile":"[^"]*"')
    [ "$(wc -l <<<"$rtt_profiles")" = "$(sort -u <<<"$rtt_profiles" | wc -l)" ] ||
        fail "the summed client RTT has more than one series per profile: $rtt_profiles"
    say "ok: client RTT p99 summed over the replicas: one series for each of $(wc -l <<<"$rtt_profiles") profiles"
    check_dashboard "$scale"

    replicas_done() {
        local c
        for c in "${load_cs[@]}"; do
            [ "$(state "$c" '{{.State.Status}}')" = exited ] || return 1
        done
    }
    wait_until "the $scale load replicas end their $scale_duration s run" replicas_done
    say "ok: the $scale load replicas exited with code 0"
    wait_until "compose up returns" test -f "$WORK/up-scaled.rc"
    merge_done() {
        merge_c=$(service_containers merge | head -n 1)
        [ -n "$merge_c" ] && [ "$(state "$merge_c" '{{.State.Status}}')" = exited ]
    }
    wait_until "the merge service ends" merge_done
    merge_verdict=$("${DOCKER[@]}" logs "$merge_c" 2>&1 | grep -m 1 '^verified:' || true)
    say "ok: the merge service exited with code 0${merge_verdict:+: $merge_verdict}"

    # The reports, from the load-reports volume (docker cp reads it through the merge container).
    "${DOCKER[@]}" cp "$merge_c:/reports" "$WORK/reports" >/dev/null || fail "docker cp of /reports from the merge container failed"
    command -v jq >/dev/null 2>&1 || apt_install jq
    reports=()
    for f in "$WORK"/reports/load-*.json; do
        [ ! -f "$f" ] || reports+=("$f")
    done
    in_reports=$(find "$WORK/reports" -mindepth 1 -maxdepth 1 -printf '%f ')
    [ "${#reports[@]}" = "$scale" ] || fail "${#reports[@]} replica reports in /reports, not $scale: $in_reports"
    if [ ! -s "$WORK/reports/merged.json" ] || [ ! -s "$WORK/reports/merged.html" ]; then
        fail "no merged.json and merged.html in /reports: $in_reports"
    fi
    sum=0
    starts=
    for f in "${reports[@]}"; do
        n=$(jq -er '.totals.requests' "$f") || fail "$(basename "$f") has no totals.requests"
        [[ $n =~ ^[1-9][0-9]*$ ]] || fail "$(basename "$f"): totals.requests is '$n'"
        [ "$(jq -r '.run_id' "$f")" = "$run_id" ] || fail "$(basename "$f"): run_id is $(jq -c '.run_id' "$f"), not $run_id"
        starts+="$(jq -r '.start_at' "$f")"$'\n'
        sum=$((sum + n))
    done
    if [ "$(sort -u <<<"${starts%$'\n'}" | wc -l)" != 1 ] || [ "${starts%%$'\n'*}" = null ]; then
        fail "the replicas did not share one start time: $(paste -sd' ' <<<"$starts")"
    fi
    merged=$(jq -er '.totals.requests' "$WORK/reports/merged.json") || fail "merged.json has no totals.requests"
    [ "$merged" = "$sum" ] || fail "merged.json: totals.requests $merged, but the $scale replica reports add up to $sum"
    say "ok: merged.json totals.requests $merged = the sum of the $scale replica reports' (all started at ${starts%%$'\n'*})"
    scaled_ok >/dev/null || fail "after the scaled run: $(scaled_ok)"
    if [ -n "$keep" ]; then
        done_phase
        say "PASS (stack kept) in $((SECONDS - t_total)) s ($(summary))"
        exit 0
    fi
    teardown_stack
    done_phase
fi
stop_daemon
say "PASS in $((SECONDS - t_total)) s ($(summary))"
