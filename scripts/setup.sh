#!/usr/bin/env bash
# Installs the Debian 12 packages headerd needs to build and test, only when some are missing.
# Uses sudo for apt-get when not root. Safe to run repeatedly.
#
#   scripts/setup.sh               everything: build, tests, benchmarks, fuzzing, interop, monitoring
#   scripts/setup.sh --build-only  only what building the headerd binary and its .deb needs (compiler,
#                                  CMake, Ninja, the libraries it links, cpack's tools); deploy/Dockerfile
#                                  uses this, with -DHEADERD_BUILD_TESTS=OFF -DHEADERD_BUILD_BENCHMARKS=OFF
set -euo pipefail

build_only=
case ${1:-} in
    "") ;;
    --build-only) build_only=1 ;;
    -h | --help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "setup: unknown option '$1' (--build-only or nothing)" >&2; exit 1 ;;
esac

packages=(
    build-essential cmake ninja-build pkg-config
    libboost1.81-dev libleveldb-dev libsnappy-dev libspdlog-dev libfmt-dev
    libsecp256k1-dev libssl-dev libcrypto++-dev prometheus-cpp-dev libtomlplusplus-dev libxxhash-dev
    # cpack -G DEB (docs/packaging.md): dpkg-shlibdeps computes the package's Depends, and CPack
    # runs file to find the ELF files to give it.
    dpkg-dev file
)
if [ -z "$build_only" ]; then
    # Tests, benchmarks, format check and fuzzing (clang), the strace-based and Prometheus tests,
    # and headless Chromium for the load report's browser test; curl for scraping in tests; ccache
    # for the four builds of the test command (scripts/ccache.sh); dnsmasq-base (the binary alone,
    # no system service) serves the DNS discovery test's trees on 127.0.0.1; systemd for
    # systemd-analyze, which rates deploy/systemd/headerd.service (nothing is started or enabled);
    # debootstrap makes the clean Debian 12 root that tests/package_test.sh installs the .deb into,
    # and lintian checks that .deb.
    packages+=(
        ccache clang-format clang libclang-rt-14-dev
        libgtest-dev libgmock-dev libbenchmark-dev nettle-dev libgcrypt20-dev
        strace prometheus chromium curl
        dnsmasq-base systemd debootstrap lintian
    )
    # Node.js and npm run the interop tests' independent peer; any Node.js >= 18 will do, so a
    # machine that already has one (from Debian or NodeSource) keeps it.
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        packages+=(nodejs npm)
    fi
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "setup: not root and sudo is not available; install as root: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
