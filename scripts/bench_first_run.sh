#!/usr/bin/env bash
# README command 1 on a fresh Debian 12 machine, timed (docs/performance.md, "The first run"): a
# Debian 12 minbase root made by debootstrap (cached as tests/package_test.sh caches it, under
# ${XDG_CACHE_HOME:-$HOME/.cache}/headerd/), this checkout's HEAD cloned into it, and
# `./scripts/run.sh` run there as root, as on a new server or in CI: it installs the packages the
# build needs from the root's Debian mirror, builds the headerd binary from nothing (no compiler
# cache) and serves. Prints each output line with the seconds since the start, and at the end the
# time to "Serving headers" and to the end of the package installs, the build and the import.
# serve listens on 127.0.0.1 with a port the kernel picks, and is stopped once it serves.
#
#   sudo scripts/bench_first_run.sh            # about 6-10 minutes on 2 cores
#
# Needs root (chroot and mount), debootstrap and a reachable Debian mirror (HEADERD_DEBIAN_MIRROR,
# default: the host's from /etc/apt, else http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
[ "$(id -u)" = 0 ] || { echo "bench_first_run.sh: run as root (chroot and mount need it)" >&2; exit 2; }
export PATH=$PATH:/usr/sbin:/sbin
command -v debootstrap >/dev/null || { echo "bench_first_run.sh: debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }

arch=$(dpkg --print-architecture)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/headerd
TARBALL=$CACHE/debootstrap-bookworm-minbase-$arch.tar.gz
# shellcheck source=lib/debian_mirror.sh
source "$SRC/scripts/lib/debian_mirror.sh"
mirror=$(host_debian_mirror)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/headerd-first-run.XXXXXX")
R=$WORK/root
serve_pid=
cleanup() {
    if [ -n "$serve_pid" ]; then kill -- -"$serve_pid" 2>/dev/null || kill "$serve_pid" 2>/dev/null || true; fi
    sleep 1
    for m in "$R/dev" "$R/proc"; do
        if mountpoint -q "$m" 2>/dev/null; then umount "$m" || umount -l "$m" || true; fi
    done
    if mountpoint -q "$R/proc" 2>/dev/null || mountpoint -q "$R/dev" 2>/dev/null; then
        echo "bench_first_run.sh: $R still has mounts; not removing $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

mkdir -p "$R" "$CACHE"
if [ -s "$TARBALL" ]; then
    tar -C "$R" -xzf "$TARBALL"
else
    echo "no cached root: debootstrap --variant=minbase bookworm from $mirror (a few minutes, once; not timed)"
    debootstrap --variant=minbase bookworm "$R" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
        { tail -n 20 "$WORK/debootstrap.log" >&2; exit 1; }
    rm -rf "$R/var/cache/apt/archives/"*.deb
    tar -C "$R" -czf - . >"$TARBALL.tmp.$$" && mv "$TARBALL.tmp.$$" "$TARBALL"
fi
cp /etc/resolv.conf "$R/etc/resolv.conf"
mount -t proc proc "$R/proc"
if [ ! -c "$R/dev/null" ]; then mount --bind /dev "$R/dev"; fi
git clone -q "$SRC" "$R/src"
commit=$(git -C "$R/src" rev-parse --short HEAD)

echo "== first run of scripts/run.sh at $commit in a fresh Debian 12 minbase root; $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
start=$(date +%s.%N)
setsid chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    HEADERD_LISTEN=127.0.0.1:0 HEADERD_METRICS=127.0.0.1:0 \
    /bin/bash -c 'cd /src && exec ./scripts/run.sh' >"$WORK/run.log" 2>&1 &
serve_pid=$!
served=
seen=0
while :; do
    now=$(date +%s.%N)
    elapsed=$(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.0f", b - a }')
    total=$(wc -l <"$WORK/run.log")
    if [ "$total" -gt "$seen" ]; then
        sed -n "$((seen + 1)),${total}p" "$WORK/run.log" | while IFS= read -r line; do printf '[%4d s] %s\n' "$elapsed" "$line"; done
        seen=$total
    fi
    if grep -q "Serving headers" "$WORK/run.log"; then
        served=$elapsed
        break
    fi
    if ! kill -0 "$serve_pid" 2>/dev/null; then
        echo "bench_first_run.sh: scripts/run.sh ended before serving" >&2
        exit 1
    fi
    if [ "$elapsed" -gt 3600 ]; then
        echo "bench_first_run.sh: no \"Serving headers\" within an hour" >&2
        exit 1
    fi
    sleep 1
done
echo "== \"Serving headers\" after $served s ($(awk -v s="$served" 'BEGIN { printf "%.1f", s / 60 }') min), commit $commit"
