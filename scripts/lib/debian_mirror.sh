# host_debian_mirror: prints the Debian mirror to make a clean Debian 12 root from:
# HEADERD_DEBIAN_MIRROR when set, else the host's own mirror on a Debian host (.list lines, then
# deb822 .sources; not its security archive), else http://deb.debian.org/debian.
# Sourced by tests/package_test.sh and scripts/bench_first_run.sh.
host_debian_mirror() {
    local mirror=${HEADERD_DEBIAN_MIRROR:-}
    if [ -z "$mirror" ] && grep -qx 'ID=debian' /etc/os-release 2>/dev/null; then
        mirror=$({
            grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
                awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\//) {print $i; break}}'
            grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
        } | grep -v security | head -n 1) || true
    fi
    echo "${mirror:-http://deb.debian.org/debian}"
}
