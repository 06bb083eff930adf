#!/usr/bin/env bash
# The Debian package (docs/packaging.md) installed into a clean Debian 12 root:
#  1. without root: deploy/headerd.toml documents every option of `headerd serve` and every key of
#     it is one headerd accepts; the man page made by the build covers every command, names the
#     licence and groff reads it without a warning; `headerd --version` names the licence;
#  2. cpack builds headerd_<version>_<arch>.deb from BUILD_DIR: stripped binary, Depends from
#     dpkg-shlibdeps, the conffile, the maintainer scripts, the DEP-5 copyright file (Apache-2.0)
#     as /usr/share/doc/headerd/copyright, mode 0644; lintian finds no error and no warning;
#  3. a Debian 12 minbase root made by debootstrap (cached as a tarball under
#     ${XDG_CACHE_HOME:-$HOME/.cache}/headerd/, so only the first run downloads it), with /proc
#     mounted, where `apt-get install ./headerd_*.deb` pulls the dependencies; the files are where
#     docs/packaging.md says, the user, group and datadir exist, the unit passes
#     `systemd-analyze verify` (when the host has systemd-analyze);
#  4. the unit's ExecStart line, read from the installed unit, run as the user headerd in its
#     working directory with its umask, on a datadir imported from the mainnet epoch 0 and a
#     config that listens on 127.0.0.1 only: `headerd get` fetches 192 headers from 8000 whose
#     hashes match the mainnet list; SIGTERM stops it with exit code 0;
#  5. `dpkg --purge` leaves nothing of the package (dpkg -L taken before, every new path of the
#     root compared) but the datadir and the user that owns it; installed again (a first install,
#     which never starts the service), `HEADERD_PURGE_DATA=1 dpkg --purge` removes those too;
#  6. an upgrade between two really different builds, with the datadir in use: the package of an
#     older commit (UPGRADE_FROM below, built from `git archive` of it as version 0.0.0+git<commit>
#     and cached as ${XDG_CACHE_HOME:-$HOME/.cache}/headerd/headerd-<commit>-<arch>.deb, so only
#     the first run builds it) installed on the clean root; its binary imports the mainnet epoch 0
#     and serves it as the unit says; the service enabled and running (a stand-in systemctl that
#     logs its calls: the root has no systemd), `dpkg -i --force-confdef --force-confold` of this
#     package over it (dpkg asks about the edited config otherwise, and fails without a terminal):
#     the older package's prerm stops the running serve (exit code 0), this one's postinst reloads
#     systemd and starts it again; the edited conffile stays (the new one beside it as
#     .dpkg-dist), and so do the user, the datadir (head 8191) and the node key; this build's serve
#     on that datadir answers `get` 8000+192 with the mainnet hashes. Reinstalled, a disabled
#     service is not started, nor an enabled one while /usr/sbin/policy-rc.d forbids it. Without
#     the commit (a shallow clone) and without the cached package, it prints "SKIPPED: the upgrade
#     from the older build ..." and upgrades this build to itself.
# Needs root (or passwordless sudo), debootstrap and a reachable Debian mirror: otherwise it prints
# "SKIPPED: ... because ..." and exits 77 (CTest counts it as skipped). HEADERD_DEBIAN_MIRROR sets
# the mirror (default: the host's Debian mirror from /etc/apt, else http://deb.debian.org/debian).
# Usage: package_test.sh HEADERD BUILD_DIR
source "$(dirname "$0")/lib.sh" "$1"
BUILD=$(cd "${2:?usage: $0 HEADERD BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
# The older build that section 6 upgrades from: the commit that first made the package (install
# rules, cpack, the maintainer scripts), 97 commits before this line was written. Its package
# builds, installs and runs on Debian 12, and it differs from today's in what an upgrade meets: its
# prerm and postinst call systemctl directly (not deb-systemd-invoke), its example config differs,
# it has no changelog nor copyright file, and its binary (no --version, no history store, no
# datadir anchor) writes the datadir that this build's must serve. Another commit here costs one
# cold build of it (docs/packaging.md, "The test").
UPGRADE_FROM=11ad48c70b0dad9f48c8dc83c80b7351ec878635
# poll_until
# shellcheck source=../scripts/lib/wait.sh
source "$SRC/scripts/lib/wait.sh"
T0=$SECONDS
say() { echo "package_test: [$((SECONDS - T0)) s] $*"; }
skip() {
    echo "SKIPPED: package test (tests/package_test.sh) because $*"
    exit 77
}

# --- 1. the example config and the man page (no root needed) ------------------------------------

CONFIG=$SRC/deploy/headerd.toml
# Every option of serve's help, as a config key (a leading "#" when it shows a default).
missing=()
while read -r key; do
    grep -qE "^#?$key = " "$CONFIG" || missing+=("$key")
done < <("$HEADERD" serve --help | sed -n 's/^  --\([a-z][a-z.-]*\).*/\1/p' | tr . - | grep -vxE 'help|config')
[ ${#missing[@]} -eq 0 ] || fail "deploy/headerd.toml does not document serve's ${missing[*]}"
# Every key, commented or not, is one headerd knows with a value of the right kind: all of them set
# at once, read by inspect (which checks the [serve] table's keys and values too).
"$HEADERD" generate --datadir "$WORK/cfg-data" --count 16 >/dev/null 2>&1 || fail "generate"
sed -E 's/^#([a-z][a-z-]* = )/\1/' "$CONFIG" >"$WORK/all-keys.toml"
"$HEADERD" inspect --config "$WORK/all-keys.toml" --datadir "$WORK/cfg-data" >/dev/null 2>"$WORK/cfg.err" ||
    fail "deploy/headerd.toml with every key set is refused: $(cat "$WORK/cfg.err")"
say "ok: deploy/headerd.toml documents every serve option ($(grep -cE '^#?[a-z][a-z-]* = ' "$CONFIG") keys), all accepted"

MAN=$BUILD/man/headerd.1.gz
[ -s "$MAN" ] || fail "no man page $MAN (the build makes it: target headerd_man_page)"
for c in $("$HEADERD" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
    zcat "$MAN" | grep -qF ".SS \"headerd $c\"" || fail "the man page has no section for '$c'"
done
if command -v groff >/dev/null; then
    warnings=$(zcat "$MAN" | groff -man -ww -z 2>&1) || true
    [ -z "$warnings" ] || fail "groff warns about the man page: $warnings"
fi
zcat "$MAN" >"$WORK/headerd.1"
grep -q '^\.SH COPYRIGHT' "$WORK/headerd.1" && grep -q 'Apache License 2\.0' "$WORK/headerd.1" ||
    fail "the man page has no COPYRIGHT section naming the Apache License 2.0"
say "ok: headerd(1) covers every command and names the licence"
# --version: the first line as before (this test and tests/compose_test.sh parse it), the licence
# on the second.
"$HEADERD" --version >"$WORK/version-build.txt" || fail "headerd --version failed"
grep -qE '^headerd [0-9][^ ]* \(commit [^)]+\)$' <(head -n 1 "$WORK/version-build.txt") ||
    fail "the first line of headerd --version is not 'headerd VERSION (commit C)': $(head -n 1 "$WORK/version-build.txt")"
sed -n 2p "$WORK/version-build.txt" | grep -q 'Licensed under the Apache License 2\.0' ||
    fail "headerd --version does not name the licence: $(cat "$WORK/version-build.txt")"
say "ok: headerd --version names the licence: $(sed -n 2p "$WORK/version-build.txt")"

# --- privileges and tools --------------------------------------------------------------------------

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null ||
        skip "it is not root and has no passwordless sudo (chroot, mount and dpkg need root)"
    SUDO=(sudo -n)
fi
for tool in cpack dpkg-deb dpkg-shlibdeps file; do
    command -v "$tool" >/dev/null || skip "$tool is missing (scripts/setup.sh installs it)"
done
if ! command -v debootstrap >/dev/null && ! PATH=$PATH:/usr/sbin:/sbin command -v debootstrap >/dev/null; then
    say "debootstrap missing: installing it"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap \
        >"$WORK/apt-debootstrap.log" 2>&1 ||
        skip "debootstrap is missing and apt-get could not install it: $(tail -n 1 "$WORK/apt-debootstrap.log")"
fi
export PATH=$PATH:/usr/sbin:/sbin

# The chroot's /proc is mounted while the test runs; the EXIT trap stops serve, unmounts it and only
# then removes the work directory (as root: the root's files are root's).
R=$WORK/root
SERVE_PID=
cleanup() {
    if [ -n "$SERVE_PID" ]; then "${SUDO[@]}" kill -9 "$SERVE_PID" 2>/dev/null || true; fi
    local m
    for m in "$R/dev" "$R/proc"; do
        if mountpoint -q "$m" 2>/dev/null; then
            "${SUDO[@]}" umount "$m" || "${SUDO[@]}" umount -l "$m" || true
        fi
    done
    if mountpoint -q "$R/proc" 2>/dev/null || mountpoint -q "$R/dev" 2>/dev/null; then
        echo "package_test: $R still has mounts; not removing $WORK" >&2
    else
        "${SUDO[@]}" rm -rf "$WORK"
    fi
}
trap cleanup EXIT
# in_root CMD...: CMD in the root with a clean environment; ROOT_PATH_FIRST, when set, goes in front
# of its PATH.
in_root() {
    "${SUDO[@]}" env -i PATH=${ROOT_PATH_FIRST:+$ROOT_PATH_FIRST:}/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C \
        DEBIAN_FRONTEND=noninteractive chroot "$R" "$@"
}

# --- 2. the .deb -----------------------------------------------------------------------------------

[ -f "$BUILD/CPackConfig.cmake" ] || fail "$BUILD/CPackConfig.cmake missing: configure the build first"
cpack -G DEB -B "$WORK/cpack" --config "$BUILD/CPackConfig.cmake" >"$WORK/cpack.log" 2>&1 ||
    fail "cpack failed: $(tail -n 20 "$WORK/cpack.log")"
DEB=$(compgen -G "$WORK/cpack/headerd_*_$(dpkg --print-architecture).deb") || fail "cpack made no headerd_*.deb: $(ls "$WORK/cpack")"
version=$(dpkg-deb --field "$DEB" Version)
depends=$(dpkg-deb --field "$DEB" Depends)
[ "$(basename "$DEB")" = "headerd_${version}_$(dpkg --print-architecture).deb" ] || fail "package file name $(basename "$DEB")"
[[ $depends == *libc6* && $depends == *libleveldb* && $depends == *libssl3* && $depends == *passwd* ]] ||
    fail "Depends lacks a library package (dpkg-shlibdeps did not run?): $depends"
dpkg-deb --ctrl-tarfile "$DEB" | tar -t | sort | tr '\n' ' ' >"$WORK/control.txt"
for f in conffiles postinst prerm postrm; do grep -q "\./$f " "$WORK/control.txt" || fail "no $f in the control archive"; done
[ "$(dpkg-deb --info "$DEB" conffiles)" = /etc/headerd/headerd.toml ] || fail "conffiles: $(dpkg-deb --info "$DEB" conffiles)"
mkdir "$WORK/x" && dpkg-deb -x "$DEB" "$WORK/x"
if readelf -S "$WORK/x/usr/bin/headerd" | grep -qE '\.symtab|\.debug_info'; then fail "/usr/bin/headerd is not stripped"; fi
# The copyright file, where policy wants it (lintian's error no-copyright-file otherwise): DEP-5,
# Apache-2.0, deploy/debian/copyright as written, mode 0644; and no second copy of the licence's
# text (Debian points at /usr/share/common-licenses/Apache-2.0 instead).
COPYRIGHT=usr/share/doc/headerd/copyright
dpkg-deb -c "$DEB" >"$WORK/contents.txt"
grep -qE "^-rw-r--r-- root/root +[0-9]+ [0-9-]+ [0-9:]+ \./$COPYRIGHT\$" "$WORK/contents.txt" ||
    fail "no /$COPYRIGHT of mode 0644 in the package: $(grep -F "./$COPYRIGHT" "$WORK/contents.txt")"
cmp -s "$WORK/x/$COPYRIGHT" "$SRC/deploy/debian/copyright" || fail "/$COPYRIGHT differs from deploy/debian/copyright"
[ "$(head -n 1 "$WORK/x/$COPYRIGHT")" = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ] ||
    fail "/$COPYRIGHT does not start with the DEP-5 Format line: $(head -n 1 "$WORK/x/$COPYRIGHT")"
grep -qx 'Files: \*' "$WORK/x/$COPYRIGHT" && [ "$(grep -cx 'License: Apache-2.0' "$WORK/x/$COPYRIGHT")" = 2 ] &&
    grep -q '/usr/share/common-licenses/Apache-2.0' "$WORK/x/$COPYRIGHT" ||
    fail "/$COPYRIGHT does not give Files: * the licence Apache-2.0 with its stand-alone paragraph"
if grep -qiE '/(LICEN[CS]E|COPYING)[^/]*$' "$WORK/contents.txt"; then fail "the package carries a licence text file besides /$COPYRIGHT"; fi
say "ok: $(basename "$DEB"), $(stat -c %s "$DEB") bytes, stripped, /$COPYRIGHT (DEP-5, Apache-2.0), Depends: $depends"

# lintian, Debian's package checker: no error and no warning (docs/packaging.md says why the
# informational tags it still prints stay). It says it should not run as root; it runs all the same.
command -v lintian >/dev/null || skip "lintian is missing (scripts/setup.sh installs it)"
lintian --fail-on error,warning --display-info "$DEB" >"$WORK/lintian.txt" 2>&1 ||
    fail "lintian found errors or warnings in $(basename "$DEB"): $(grep -E '^[EW]: ' "$WORK/lintian.txt" || cat "$WORK/lintian.txt")"
say "ok: lintian: no error, no warning ($(grep -c '^[IPX]: ' "$WORK/lintian.txt") informational tags)"

# --- 3. a clean Debian 12 root, the package installed ------------------------------------------------

# shellcheck source=../scripts/lib/debian_mirror.sh
source "$SRC/scripts/lib/debian_mirror.sh"
mirror=$(host_debian_mirror)
arch=$(dpkg --print-architecture)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/headerd
TARBALL=$CACHE/debootstrap-bookworm-minbase-$arch.tar.gz
mkdir -p "$CACHE"
if [ -s "$TARBALL" ]; then
    say "unpacking the cached Debian 12 root $TARBALL"
    "${SUDO[@]}" mkdir "$R"
    "${SUDO[@]}" tar -C "$R" -xzf "$TARBALL" || fail "cannot unpack $TARBALL (delete it to make it again)"
else
    say "no cached root: debootstrap --variant=minbase bookworm from $mirror (a few minutes, once)"
    if ! timeout 1500 "${SUDO[@]}" debootstrap --variant=minbase bookworm "$R" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
        host=${mirror#*://}
        host=${host%%/*}
        if ! timeout 10 bash -c "exec 3<>/dev/tcp/${host%:*}/80" 2>/dev/null; then
            skip "the Debian mirror $mirror cannot be reached (set HEADERD_DEBIAN_MIRROR)"
        fi
        fail "debootstrap failed: $(tail -n 20 "$WORK/debootstrap.log")"
    fi
    # A clean root as debootstrap left it, without its download cache; written whole or not at all.
    "${SUDO[@]}" rm -rf "$R/var/cache/apt/archives/"*.deb
    "${SUDO[@]}" tar -C "$R" -czf - . >"$TARBALL.tmp.$$" && mv "$TARBALL.tmp.$$" "$TARBALL" ||
        { rm -f "$TARBALL.tmp.$$"; fail "cannot write $TARBALL"; }
    say "cached the root as $TARBALL ($(du -h "$TARBALL" | cut -f1))"
fi
"${SUDO[@]}" mount -t proc proc "$R/proc"
# /dev/null and friends: a root made where mknod is not allowed has no device nodes.
if [ ! -c "$R/dev/null" ]; then "${SUDO[@]}" mount --bind /dev "$R/dev"; fi
"${SUDO[@]}" cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true

# Every path of the root before the install (without what apt, dpkg and the test itself change).
snapshot() {
    "${SUDO[@]}" find "$R" -xdev \( -path "$R/proc" -o -path "$R/dev" -o -path "$R/tmp" -o -path "$R/var/lib/apt" \
        -o -path "$R/var/cache" -o -path "$R/var/log" -o -path "$R/var/lib/dpkg" -o -path "$R/run" \) -prune -o -print |
        sed "s|^$R||; /^$/d" | sort
}
snapshot >"$WORK/before.txt"
"${SUDO[@]}" cp "$DEB" "$R/tmp/"
"${SUDO[@]}" cp "$DATA/mainnet-00000-5ec1ffb8.era1" "$R/tmp/"
say "apt-get update and install ./$(basename "$DEB") in the root"
in_root apt-get update -q >"$WORK/apt.log" 2>&1 || fail "apt-get update in the root: $(tail -n 5 "$WORK/apt.log")"
in_root apt-get install -y -q --no-install-recommends "/tmp/$(basename "$DEB")" >>"$WORK/apt.log" 2>&1 ||
    fail "apt-get install of the package: $(tail -n 20 "$WORK/apt.log")"
in_root dpkg-query -W -f='${Status}\n' headerd | grep -q "install ok installed" || fail "headerd not installed"
say "ok: installed with $(grep -c '^Setting up' "$WORK/apt.log") packages set up (the dependencies pulled by apt)"

# The program runs in the root and names its version: the package's.
in_root /usr/bin/headerd --version >"$WORK/version.txt" 2>&1 || fail "headerd --version in the root: $(cat "$WORK/version.txt")"
grep -q "^headerd $version " "$WORK/version.txt" || fail "headerd --version is not $version: $(cat "$WORK/version.txt")"
grep -q "Apache License 2\.0" "$WORK/version.txt" || fail "headerd --version does not name the licence: $(cat "$WORK/version.txt")"
say "ok: headerd --version: $(tr '\n' ' ' <"$WORK/version.txt")"
# The files where docs/packaging.md says.
for f in /usr/bin/headerd /etc/headerd/headerd.toml /usr/lib/systemd/system/headerd.service \
    /usr/share/man/man1/headerd.1.gz /usr/share/doc/headerd/README.md /usr/share/doc/headerd/docs/operations.md \
    /usr/share/doc/headerd/changelog.gz /usr/share/doc/headerd/copyright; do
    in_root dpkg -S "$f" >/dev/null 2>&1 || fail "$f is not a file of the package"
    "${SUDO[@]}" test -f "$R$f" || fail "$f missing after the install"
done
"${SUDO[@]}" cmp -s "$R/usr/lib/systemd/system/headerd.service" "$SRC/deploy/systemd/headerd.service" ||
    fail "the installed unit differs from deploy/systemd/headerd.service"
in_root dpkg-query -W -f='${Conffiles}\n' headerd | grep -q '/etc/headerd/headerd.toml' ||
    fail "/etc/headerd/headerd.toml is not a conffile: $(in_root dpkg-query -W -f='${Conffiles}' headerd)"
uid=$(in_root id -u headerd) || fail "no user headerd"
[ "$(in_root id -gn headerd)" = headerd ] || fail "the user headerd is not in the group headerd"
[ "$uid" -lt 1000 ] || fail "headerd is not a system user (uid $uid)"
[ "$(in_root stat -c '%a %U %G' /var/lib/headerd)" = "750 headerd headerd" ] ||
    fail "/var/lib/headerd is $(in_root stat -c '%a %U %G' /var/lib/headerd), not 750 headerd headerd"
[ "$(in_root stat -c '%a %U %G' /usr/share/doc/headerd/copyright)" = "644 root root" ] ||
    fail "/usr/share/doc/headerd/copyright is $(in_root stat -c '%a %U %G' /usr/share/doc/headerd/copyright), not 644 root root"
in_root head -n 1 /usr/share/doc/headerd/copyright | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
    fail "the installed /usr/share/doc/headerd/copyright does not start with the DEP-5 Format line"
in_root test -f /usr/share/common-licenses/Apache-2.0 || fail "/usr/share/common-licenses/Apache-2.0, which the copyright file names, is missing"
say "ok: binary, config (a conffile), unit (as in deploy/systemd), man page, docs and copyright (0644, DEP-5) in place; user headerd (uid $uid), /var/lib/headerd 0750"

if command -v systemd-analyze >/dev/null && [ -d /usr/lib/systemd/system ]; then
    # The installed unit, binary and man page, as systemd would load them.
    "${SUDO[@]}" cat "$R/usr/lib/systemd/system/headerd.service" >"$WORK/installed.service"
    "${SUDO[@]}" cat "$R/usr/bin/headerd" >"$WORK/installed-headerd"
    "${SUDO[@]}" cat "$R/usr/share/man/man1/headerd.1.gz" >"$WORK/installed-headerd.1.gz"
    verify_unit "$WORK/installed.service" "$WORK/installed-headerd" "$WORK/installed-headerd.1.gz"
    say "ok: systemd-analyze verify accepts the installed unit with the installed binary and man page"
else
    say "note: no systemd-analyze on this host; the installed unit is not verified (tests/systemd_unit_test.sh skips too)"
fi

# --- 4. the unit's ExecStart as the user headerd ----------------------------------------------------

# Helpers of this section and of section 6, which runs them again on the older package and then on
# this one over the same datadir.
# import_epoch0: the installed headerd, as headerd, imports the mainnet epoch 0 into /var/lib/headerd.
import_epoch0() {
    say "importing the mainnet epoch 0 into /var/lib/headerd as headerd"
    in_root setpriv --reuid=headerd --regid=headerd --init-groups -- /usr/bin/headerd import --datadir /var/lib/headerd /tmp/mainnet-00000-5ec1ffb8.era1 >"$WORK/import.log" 2>&1 ||
        fail "import as headerd: $(tail -n 5 "$WORK/import.log")"
}
# listen_on_loopback: the installed config listens on loopback only (the test's ports are loopback's).
listen_on_loopback() {
    "${SUDO[@]}" sed -i 's/^listen = .*/listen = "127.0.0.1:0"/' "$R/etc/headerd/headerd.toml"
    grep -q '^listen = "127.0.0.1:0"' "$R/etc/headerd/headerd.toml" || fail "could not set listen in the config"
}
# start_service: the ExecStart line of the installed unit, run as headerd in its working directory
# with its umask, as systemd would; waits for its enode URL. Sets SERVE_PID (to wait on), SERVE_MAIN
# (serve's own PID) and ENODE.
start_service() {
    local unit=$R/usr/lib/systemd/system/headerd.service exec_start workdir umask_
    exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
    workdir=$(sed -n 's/^WorkingDirectory=//p' "$unit")
    umask_=$(sed -n 's/^UMask=//p' "$unit")
    [ -n "$exec_start" ] && [ -n "$workdir" ] && [ -n "$umask_" ] || fail "ExecStart, WorkingDirectory or UMask missing in the unit"
    # The URL of an earlier run names another port.
    "${SUDO[@]}" rm -f "$R/var/lib/headerd/enode"
    say "starting the unit's ExecStart as headerd: $exec_start"
    # In a subshell that execs (sudo,) env, chroot, setpriv and sh all exec in turn, so SERVE_PID is
    # serve itself (under sudo: sudo, which passes signals on to it).
    # shellcheck disable=SC2086 # ExecStart's words, as systemd splits this line (no quotes in it)
    (exec "${SUDO[@]}" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C chroot "$R" \
        setpriv --reuid=headerd --regid=headerd --init-groups -- \
        sh -c 'umask "$1"; cd "$2" && shift 2 && exec "$@"' sh "$umask_" "$workdir" $exec_start) >"$WORK/serve.log" 2>&1 &
    SERVE_PID=$!
    poll_until 30 0.2 pid_alive "$SERVE_PID" -- enode_written ||
        fail "serve did not write its enode ($POLL_REASON): $(tail -n 5 "$WORK/serve.log")"
    ENODE=$("${SUDO[@]}" cat "$R/var/lib/headerd/enode")
    [[ $ENODE == enode://*@127.0.0.1:* ]] || fail "serve listens beyond loopback: $ENODE"
    # The process is headerd's (the PID is serve's own: chroot, setpriv and sh exec it; under sudo it
    # is sudo's, whose child serve is).
    SERVE_MAIN=$(pgrep -f -P "$SERVE_PID" headerd || echo "$SERVE_PID")
    local serve_uid
    serve_uid=$(awk '/^Uid:/ {print $2}' /proc/"$SERVE_MAIN"/status)
    [ "$serve_uid" = "$uid" ] || fail "serve runs as uid $serve_uid, not headerd ($uid)"
}
enode_written() { "${SUDO[@]}" test -s "$R/var/lib/headerd/enode"; }
# check_served WHAT: the installed headerd's `get` fetches 192 headers from 8000 from the running
# serve, whose hashes are the mainnet list's.
check_served() {
    in_root /usr/bin/headerd get --peer "$ENODE" --origin 8000 --amount 192 --format json >"$WORK/get.json" 2>"$WORK/get.err" ||
        fail "get from $1: $(tail -n 3 "$WORK/get.err")"
    grep -o '"number":[0-9]*,"hash":"0x[0-9a-f]*"' "$WORK/get.json" |
        sed 's/"number":\([0-9]*\),"hash":"\(0x[0-9a-f]*\)"/\1 \2/' >"$WORK/got.txt"
    awk '$1 >= 8000' "$DATA/mainnet-headers-0-8191.hashes.txt" >"$WORK/want.txt"
    [ "$(wc -l <"$WORK/got.txt")" = 192 ] || fail "$1: expected 192 headers, got $(wc -l <"$WORK/got.txt")"
    cmp -s "$WORK/got.txt" "$WORK/want.txt" || fail "$1: hashes differ from the mainnet list"
    say "ok: get 8000+192 from $1 ($ENODE): every hash matches the mainnet list"
}
# serve_ended: waits for serve, which SIGTERM (sent by the caller) ends, and checks its exit code 0.
stopped() { ! pid_alive "$SERVE_PID"; }
serve_ended() {
    poll_until 30 0.2 -- stopped || fail "serve still running 30 s after SIGTERM"
    local rc=0
    wait "$SERVE_PID" || rc=$?
    SERVE_PID=
    [ "$rc" = 0 ] || fail "serve exited with $rc on SIGTERM: $(tail -n 3 "$WORK/serve.log")"
}

import_epoch0
listen_on_loopback
start_service
check_served "the packaged serve"
"${SUDO[@]}" kill -TERM "$SERVE_PID"
serve_ended
say "ok: SIGTERM stops it with exit code 0"

# --- the stand-in systemctl of sections 5 and 6 ------------------------------------------------------

# The root has no systemd. A stand-in systemctl (first in PATH, with /run/systemd/system present, as
# the scripts test) logs its calls and answers is-enabled and is-active from two flag files. Its
# stop ends the service as systemd's would: SIGTERM to the process whose PID /tmp/stub-main-pid
# holds (serve, when section 6 runs it as the service), then a wait until it has exited (at most
# 30 s; a zombie that the test has yet to reap counts as exited).
STUB=/tmp/stub-bin
"${SUDO[@]}" mkdir -p "$R$STUB" "$R/run/systemd/system"
"${SUDO[@]}" tee "$R$STUB/systemctl" >/dev/null <<'STUB_EOF'
#!/bin/sh
echo "$*" >>/tmp/systemctl.log
case "$*" in
    *is-enabled*) if [ -e /tmp/stub-enabled ]; then echo enabled; else echo disabled && exit 1; fi ;;
    *is-active*) [ -e /tmp/stub-active ] ;;
    *stop*)
        rm -f /tmp/stub-active
        if [ -s /tmp/stub-main-pid ]; then
            pid=$(cat /tmp/stub-main-pid)
            kill -TERM "$pid" 2>/dev/null || true
            i=0
            while [ $i -lt 300 ] && [ -e "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; do
                sleep 0.1
                i=$((i + 1))
            done
            rm -f /tmp/stub-main-pid
        fi
        ;;
    *) exit 0 ;;
esac
STUB_EOF
"${SUDO[@]}" chmod 0755 "$R$STUB/systemctl"
in_stub_systemd() { ROOT_PATH_FIRST=$STUB in_root "$@"; }
# systemctl_calls: the stand-in's log since the last call, one line each, then empties it.
systemctl_calls() {
    { "${SUDO[@]}" cat "$R/tmp/systemctl.log" 2>/dev/null || true; } | tr '\n' ';'
    "${SUDO[@]}" rm -f "$R/tmp/systemctl.log"
}

# --- 5. purge ------------------------------------------------------------------------------------------

# leftovers FILE: the paths of the root that were not there before the install and that no package
# owns (the dependencies' files are owned), but the datadir and the backups of passwd, group and
# shadow that useradd and userdel write; into FILE.
leftovers() {
    snapshot >"$WORK/after.txt"
    # Every path some package owns, also under /usr for a package that names /lib, /bin or /sbin
    # (the root has merged /usr: find sees those files below /usr).
    "${SUDO[@]}" sh -c 'cat "$1"/var/lib/dpkg/info/*.list' sh "$R" |
        sed -E 'p; s#^/(lib|lib64|bin|sbin)/#/usr/\1/#' | sort -u >"$WORK/owned.txt"
    comm -13 "$WORK/before.txt" "$WORK/after.txt" | comm -23 - "$WORK/owned.txt" |
        grep -vE '^/var/lib/headerd(/|$)|^/etc/(passwd|group|shadow|gshadow|subuid|subgid)-$' >"$1" || true
}
in_root dpkg -L headerd >"$WORK/dpkg-L.txt"
say "dpkg --purge headerd (the package's $(wc -l <"$WORK/dpkg-L.txt") paths)"
in_stub_systemd dpkg --purge headerd >"$WORK/purge.log" 2>&1 || fail "dpkg --purge: $(tail -n 5 "$WORK/purge.log")"
calls=$(systemctl_calls)
[[ $calls == *"daemon-reload;"* ]] || fail "purge: postrm did not reload systemd; systemctl saw: $calls"
grep -q "kept the datadir /var/lib/headerd" "$WORK/purge.log" || fail "purge did not say it kept the datadir: $(cat "$WORK/purge.log")"
[ -z "$(in_root dpkg-query -W -f='${Status}' headerd 2>/dev/null | grep -v not-installed)" ] || fail "headerd still known to dpkg"
while read -r p; do
    # Directories that other packages share (/usr/bin, /etc) stay; every file and the package's own
    # directories go.
    if "${SUDO[@]}" test -e "$R$p" && { ! "${SUDO[@]}" test -d "$R$p" || [[ $p == *headerd* ]]; }; then
        fail "$p is left after the purge"
    fi
done <"$WORK/dpkg-L.txt"
leftovers "$WORK/left.txt"
[ ! -s "$WORK/left.txt" ] || fail "the purge left paths of no package: $(head -n 20 "$WORK/left.txt" | tr '\n' ' ')"
"${SUDO[@]}" test -d "$R/var/lib/headerd/chaindata" || fail "the purge removed the datadir"
in_root id headerd >/dev/null || fail "the purge removed the user that owns the kept datadir"
say "ok: purge left nothing of the package but the datadir /var/lib/headerd and its user"

# Installed again: a first install (nothing configured before), which never starts the service,
# enabled or not.
"${SUDO[@]}" touch "$R/tmp/stub-enabled"
in_stub_systemd dpkg -i "/tmp/$(basename "$DEB")" >"$WORK/reinstall.log" 2>&1 || fail "dpkg -i again: $(tail -n 5 "$WORK/reinstall.log")"
calls=$(systemctl_calls)
[[ $calls == *"daemon-reload;"* && $calls != *"start headerd.service"* ]] || fail "a first install started the service; systemctl saw: $calls"
[ "$(in_root id -u headerd)" = "$uid" ] || fail "the user headerd changed its uid on the second install"
"${SUDO[@]}" test -d "$R/var/lib/headerd/chaindata" || fail "the second install touched the kept datadir"
in_root env HEADERD_PURGE_DATA=1 dpkg --purge headerd >"$WORK/purge2.log" 2>&1 || fail "dpkg --purge: $(tail -n 5 "$WORK/purge2.log")"
"${SUDO[@]}" test ! -e "$R/var/lib/headerd" || fail "HEADERD_PURGE_DATA=1 left /var/lib/headerd"
if in_root getent passwd headerd >/dev/null || in_root getent group headerd >/dev/null; then
    fail "HEADERD_PURGE_DATA=1 left the user or group headerd"
fi
leftovers "$WORK/left2.txt"
[ ! -s "$WORK/left2.txt" ] || fail "the purge with HEADERD_PURGE_DATA=1 left: $(head -n 20 "$WORK/left2.txt" | tr '\n' ' ')"
say "ok: installed again (same uid, datadir kept); HEADERD_PURGE_DATA=1 dpkg --purge removes the datadir, user and group"

# --- 6. an upgrade from an older build, with the datadir in use ---------------------------------------

# The package of UPGRADE_FROM (at the top), built from that commit's tree as version
# 0.0.0+git<commit>, lower than any release's; kept in the cache, keyed by the commit, so that only
# the first run builds it. Without the commit (a shallow clone) and without the cached package, the
# step says SKIPPED and the upgrade runs from this build to itself (a reinstall: the same
# maintainer-script branches, no older datadir).
OLD_VERSION=0.0.0+git${UPGRADE_FROM:0:7}
OLD_DEB=$CACHE/headerd-$UPGRADE_FROM-$arch.deb
# build_old_package: the .deb of UPGRADE_FROM into OLD_DEB. Only what the package holds is built
# (the targets headerd and headerd_man_page; no tests, no benchmarks), in unity batches, as Release
# (no debug info to compile: the package strips it), with this build tree's compiler, through
# ccache as scripts/build.sh uses it (scripts/ccache.sh, the old tree as its base directory).
# Warnings do not fail it (HEADERD_WERROR=OFF): a later compiler may warn where the commit's did not.
build_old_package() {
    # The build tree inside the source tree, as ./build is: below ccache's base directory, so that
    # every path hashed is relative and a rebuild in another temporary directory hits.
    local old_src=$WORK/old-src old_build=$WORK/old-src/build compiler deb
    local -a generator=()
    if command -v ninja >/dev/null; then generator=(-G Ninja); fi
    compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
    mkdir "$old_src"
    git -C "$SRC" archive "$UPGRADE_FROM" | tar -x -C "$old_src" || fail "git archive $UPGRADE_FROM failed"
    say "building the package of $UPGRADE_FROM as $OLD_VERSION (once: kept as $OLD_DEB)"
    (
        cd "$old_src"
        # shellcheck source=scripts/ccache.sh
        source "$SRC/scripts/ccache.sh"
        cmake -S . -B "$old_build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release ${compiler:+-DCMAKE_CXX_COMPILER="$compiler"} \
            -DHEADERD_BUILD_TESTS=OFF -DHEADERD_BUILD_BENCHMARKS=OFF -DHEADERD_UNITY=ON -DHEADERD_WERROR=OFF \
            -DHEADERD_COMMIT="${UPGRADE_FROM:0:12}" "${headerd_launcher[@]}"
        cmake --build "$old_build" --parallel "$(nproc)" --target headerd headerd_man_page
    ) >"$WORK/old-build.log" 2>&1 || fail "building $UPGRADE_FROM: $(tail -n 20 "$WORK/old-build.log")"
    cpack -G DEB -R "$OLD_VERSION" -B "$WORK/cpack-old" --config "$old_build/CPackConfig.cmake" >"$WORK/cpack-old.log" 2>&1 ||
        fail "cpack of $UPGRADE_FROM failed: $(tail -n 20 "$WORK/cpack-old.log")"
    deb=$(compgen -G "$WORK/cpack-old/headerd_${OLD_VERSION}_$arch.deb") || fail "cpack made no headerd_${OLD_VERSION}_$arch.deb: $(ls "$WORK/cpack-old")"
    # Written whole or not at all.
    cp "$deb" "$OLD_DEB.tmp.$$" && mv "$OLD_DEB.tmp.$$" "$OLD_DEB" || { rm -f "$OLD_DEB.tmp.$$"; fail "cannot write $OLD_DEB"; }
}
if [ -s "$OLD_DEB" ]; then
    say "the package of $UPGRADE_FROM from the cache: $OLD_DEB"
elif command -v git >/dev/null && git -C "$SRC" cat-file -e "$UPGRADE_FROM^{commit}" 2>/dev/null; then
    build_old_package
    say "built $(basename "$OLD_DEB") ($(stat -c %s "$OLD_DEB") bytes)"
else
    echo "SKIPPED: the upgrade from the older build $UPGRADE_FROM (tests/package_test.sh, section 6) because" \
        "$SRC has no such commit (a shallow clone?) and $OLD_DEB is not cached; the upgrade runs from this build to itself"
    OLD_DEB=
    PASS_NOTE="; the upgrade from $UPGRADE_FROM SKIPPED"
fi
FROM_DEB=${OLD_DEB:-$DEB}
from=$(dpkg-deb --field "$FROM_DEB" Version)
[ "$FROM_DEB" = "$DEB" ] || dpkg --compare-versions "$from" lt "$version" || fail "the older package's $from is not below $version"
[ "$FROM_DEB" = "$DEB" ] || [ "$(dpkg-deb --field "$FROM_DEB" Package)" = headerd ] || fail "$FROM_DEB is not a headerd package"

# The older package on the root that section 5 left clean; its binary imports the datadir and
# serves it as the unit says; the operator has enabled the service and it runs.
"${SUDO[@]}" cp "$FROM_DEB" "$R/tmp/headerd-from.deb"
say "installing $from (apt-get: it pulls any dependency this build's package lacks)"
in_root apt-get install -y -q --no-install-recommends /tmp/headerd-from.deb >"$WORK/apt-from.log" 2>&1 ||
    fail "apt-get install of $from: $(tail -n 20 "$WORK/apt-from.log")"
[ "$(in_root dpkg-query -W -f='${Version}' headerd)" = "$from" ] || fail "$from is not the installed version"
uid=$(in_root id -u headerd) || fail "the package $from made no user headerd"
import_epoch0
listen_on_loopback
start_service
check_served "the serve of $from"
node_id=${ENODE%@*}
echo "$SERVE_MAIN" | "${SUDO[@]}" tee "$R/tmp/stub-main-pid" >/dev/null
"${SUDO[@]}" touch "$R/tmp/stub-enabled" "$R/tmp/stub-active"
systemctl_calls >/dev/null

say "upgrading $from to $version with dpkg -i (service enabled, serving the datadir)"
# The operator edited the config and the package changed it too: dpkg would ask (and fail with no
# answer on stdin); keeping the operator's is the answer an unattended upgrade gives.
in_stub_systemd dpkg -i --force-confdef --force-confold "/tmp/$(basename "$DEB")" >"$WORK/upgrade.log" 2>&1 ||
    fail "upgrade: $(tail -n 10 "$WORK/upgrade.log")"
[ "$(in_root dpkg-query -W -f='${Version}' headerd)" = "$version" ] || fail "the upgrade did not install $version"
calls=$(systemctl_calls)
[[ $calls == *"stop headerd.service;"*"daemon-reload;"*"start headerd.service;"* ]] ||
    fail "upgrade of an enabled, running service: expected stop (prerm), daemon-reload and start (postinst); systemctl saw: $calls"
# prerm's stop ended the serve of the older build (the stand-in waited for it), cleanly.
! pid_alive "$SERVE_PID" || fail "the serve of $from still runs after the upgrade (prerm did not stop it)"
serve_ended
grep -q '^listen = "127.0.0.1:0"' "$R/etc/headerd/headerd.toml" || fail "the upgrade replaced the edited conffile"
# Where the package's config changed too, dpkg kept the operator's and put the new one beside it.
if ! dpkg-deb --fsys-tarfile "$FROM_DEB" | tar -xO ./etc/headerd/headerd.toml | cmp -s - "$SRC/deploy/headerd.toml"; then
    "${SUDO[@]}" cmp -s "$R/etc/headerd/headerd.toml.dpkg-dist" "$SRC/deploy/headerd.toml" ||
        fail "the config of $version is not beside the kept one as /etc/headerd/headerd.toml.dpkg-dist"
fi
[ "$(in_root id -u headerd)" = "$uid" ] || fail "the user headerd changed its uid on the upgrade"
in_root setpriv --reuid=headerd --regid=headerd --init-groups -- /usr/bin/headerd inspect --config /etc/headerd/headerd.toml --json \
    >"$WORK/inspect.log" 2>&1 || fail "inspect after the upgrade: $(tail -n 5 "$WORK/inspect.log")"
grep -q '"head_number":8191,' "$WORK/inspect.log" || fail "the datadir lost headers in the upgrade: $(cat "$WORK/inspect.log")"
say "ok: upgrade from $from: prerm stopped the running service (exit code 0), postinst reloaded and started it; the edited config, the user and the datadir (head 8191) stay"
# What postinst's start would run: this build's binary, on the datadir the older one wrote.
start_service
[ "${ENODE%@*}" = "$node_id" ] || fail "the node's identity (its key in the datadir) changed in the upgrade: $ENODE, was $node_id@..."
check_served "the serve of $version on the datadir of $from"
"${SUDO[@]}" kill -TERM "$SERVE_PID"
serve_ended

# A service the operator never enabled is not started by an upgrade (here a reinstall, which runs
# the same branches of the scripts).
"${SUDO[@]}" rm -f "$R/tmp/stub-enabled" "$R/tmp/stub-active"
in_stub_systemd dpkg -i "/tmp/$(basename "$DEB")" >"$WORK/upgrade2.log" 2>&1 || fail "reinstall: $(tail -n 10 "$WORK/upgrade2.log")"
calls=$(systemctl_calls)
[[ $calls == *"daemon-reload;"* && $calls != *"start headerd.service"* ]] ||
    fail "reinstall of a disabled, stopped service: expected no start; systemctl saw: $calls"
say "ok: a disabled service stays stopped across an upgrade"
# Nor one that /usr/sbin/policy-rc.d forbids to start (as image builds and chroots do).
"${SUDO[@]}" touch "$R/tmp/stub-enabled"
printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$R/usr/sbin/policy-rc.d" >/dev/null
"${SUDO[@]}" chmod 0755 "$R/usr/sbin/policy-rc.d"
in_stub_systemd dpkg -i "/tmp/$(basename "$DEB")" >"$WORK/upgrade3.log" 2>&1 || fail "reinstall: $(tail -n 10 "$WORK/upgrade3.log")"
"${SUDO[@]}" rm -f "$R/usr/sbin/policy-rc.d"
calls=$(systemctl_calls)
[[ $calls != *"start headerd.service"* ]] || fail "an upgrade started the service against policy-rc.d; systemctl saw: $calls"
say "ok: nor does an enabled one where policy-rc.d forbids it"
echo "PASS ($((SECONDS - T0)) s${PASS_NOTE:-})"
