#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test (unit, integration,
# benchmark smoke runs, the ThreadSanitizer build and the whole suite under ASan + UBSan (both skipped
# with HEADERD_SKIP_SANITIZE=1, ASan alone with HEADERD_SKIP_ASAN=1), a short fuzzing run,
# clang-format check). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# CI (CI=true) starts from a clean clone, where a unity build (each folder's .cpp files compiled in
# batches, as the sanitizer and fuzz presets do) saves most of the compile time; a developer's
# ./build keeps one object per file, for small incremental rebuilds and so that a file missing an
# include fails to compile (docs/testing.md, "Time of the test command").
if [ "${CI:-}" = true ]; then
    ./scripts/build.sh -DHEADERD_UNITY=ON
else
    ./scripts/build.sh
fi
./scripts/check_format.sh
# The interop tests' independent peer (@ethereumjs/devp2p), pinned by the committed lockfile.
(cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
ctest --test-dir "${HEADERD_BUILD_DIR:-build}" --output-on-failure --parallel "$(nproc)" --timeout 900
# The db, ancient and p2p tests again under ThreadSanitizer, in ./build-tsan (docs/testing.md).
if [ "${HEADERD_SKIP_SANITIZE:-0}" != 1 ]; then
    ./scripts/sanitize.sh thread
fi
# The whole CTest suite again under AddressSanitizer + UBSan, in ./build-asan (docs/testing.md).
if [ "${HEADERD_SKIP_SANITIZE:-0}" != 1 ] && [ "${HEADERD_SKIP_ASAN:-0}" != 1 ]; then
    ./scripts/sanitize.sh address
fi
HEADERD_FUZZ_SECONDS=${HEADERD_FUZZ_SECONDS:-30} ./scripts/fuzz.sh
