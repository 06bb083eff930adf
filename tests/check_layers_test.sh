#!/usr/bin/env bash
# scripts/check_layers.py on copies of this tree's sources, CMakeLists.txt files and
# docs/architecture.md, each with one thing broken: the check must fail with exit code 1 and a
# message naming the file, the line and the layer, and leave the copy as it was (it only reads).
# The unchanged copy must pass, as must an include that the DEPS reach only transitively.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CHECK=$ROOT/scripts/check_layers.py
WORK=$(mktemp -d "${TMPDIR:-/tmp}/headerd-layers-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# The copy: every folder with a headerd_library() call (its sources and CMakeLists.txt, not its
# subfolders' other files), the header-only helpers of tests/ and docs/architecture.md.
BASE=$WORK/base
mkdir -p "$BASE"
(
    cd "$ROOT"
    for cm in $(grep -l 'headerd_library(' -- */CMakeLists.txt */*/CMakeLists.txt); do
        find "$(dirname "$cm")" -maxdepth 1 -type f \( -name '*.cpp' -o -name '*.hpp' -o -name CMakeLists.txt \)
    done
    ls tests/*.hpp
    echo docs/architecture.md
) | (cd "$ROOT" && tar -cf - -T -) | tar -C "$BASE" -xf -
[ -f "$BASE/core/CMakeLists.txt" ] && [ -f "$BASE/p2p/tracker/tracker.cpp" ] && [ -f "$BASE/tests/test_util.hpp" ] ||
    fail "test bug: the copy lacks core/, p2p/tracker/ or tests/*.hpp"

digest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum); }

n=0
# fresh NAME: a new copy of the tree in $WORK/NAME, as $T.
fresh() {
    T=$WORK/$1
    rm -rf "$T"
    cp -a "$BASE" "$T"
}
# insert_include FILE HEADER: adds `#include "HEADER"` as line 2 of FILE (in $T).
insert_include() { sed -i "1a #include \"$2\"" "$T/$1"; }
# expect_ok WHAT: the check passes on $T.
expect_ok() {
    local out
    out=$("$CHECK" --root "$T" 2>&1) || fail "$1: the check failed: $out"
    echo "ok: $1 -> ${out%%$'\n'*}"
    n=$((n + 1))
}
# expect_finding WHAT PART...: the check fails on $T with exit code 1, its output holds every PART
# (fixed strings), and $T is unchanged.
expect_finding() {
    local what=$1 out rc=0 before part
    shift
    before=$(digest "$T")
    out=$("$CHECK" --root "$T" 2>&1) || rc=$?
    [ "$rc" = 1 ] || fail "$what: exit code $rc, expected 1: $out"
    for part in "$@"; do
        grep -qF -- "$part" <<<"$out" || fail "$what: output lacks '$part': $out"
    done
    [ "$(digest "$T")" = "$before" ] || fail "$what: the check changed the tree"
    echo "ok: $what -> $(grep -F -- "$1" <<<"$out" | head -1)"
    n=$((n + 1))
}

fresh clean
expect_ok "the unchanged copy"

fresh transitive
insert_include sync/fetcher.cpp ancient/table.hpp # sync -> db -> ancient
insert_include p2p/peer.cpp core/rlp.hpp          # p2p lists no core: its DEPS reach it
expect_ok "includes that the DEPS reach only transitively"

fresh upward
insert_include p2p/tracker/tracker.cpp metrics/metrics.hpp
expect_finding "tracker.cpp includes metrics (tracker holds prometheus pointers, never the metrics layer)" \
    'p2p/tracker/tracker.cpp:2: #include "metrics/metrics.hpp": layer '\''metrics'\'' (metrics/) is not a dependency of '\''tracker'\''' \
    "DEPS core in p2p/tracker/CMakeLists.txt, which reach core, tracker" "FAIL: 1 finding(s)"

fresh core_up
insert_include core/rlp.cpp db/chain_db.hpp
expect_finding "core includes db" \
    'core/rlp.cpp:2: #include "db/chain_db.hpp": layer '\''db'\'' (db/) is not a dependency of '\''core'\'': DEPS none'

fresh header
insert_include db/chain_db.hpp p2p/peer.hpp
expect_finding "a header of db includes p2p" \
    'db/chain_db.hpp:2: #include "p2p/peer.hpp": layer '\''p2p'\'' (p2p/) is not a dependency of '\''db'\'''

fresh test_up
insert_include p2p/tracker/tracker_test.cpp p2p/eth/messages.hpp
expect_finding "a tracker test includes eth" \
    'p2p/tracker/tracker_test.cpp:2: #include "p2p/eth/messages.hpp": layer '\''eth'\'' (p2p/eth/) is not a dependency of tracker'\''s tests: DEPS core; TEST_DEPS none'

fresh test_deps_not_for_sources
# wire's tests may include eth (TEST_DEPS headerd::eth), wire's library sources may not.
insert_include p2p/wire/message_codec.cpp p2p/eth/messages.hpp
expect_finding "TEST_DEPS do not count for a library source" \
    'p2p/wire/message_codec.cpp:2: #include "p2p/eth/messages.hpp": layer '\''eth'\'' (p2p/eth/) is not a dependency of '\''wire'\'''

fresh helper_chain
# tests/test_util.hpp includes p2p/peer.hpp: a db test that includes it reaches above db.
insert_include db/chain_db_test.cpp tests/test_util.hpp
line=$(grep -n '#include "p2p/peer.hpp"' "$T/tests/test_util.hpp" | cut -d: -f1)
expect_finding "a db test includes a tests/ helper that includes p2p" \
    "db/chain_db_test.cpp:2: #include \"tests/test_util.hpp\" -> tests/test_util.hpp:$line: #include \"p2p/peer.hpp\": layer 'p2p'" \
    "is not a dependency of db's tests"

fresh source_includes_tests
insert_include db/chain_db.cpp tests/data_dir.hpp
expect_finding "a library source includes a test helper" \
    'db/chain_db.cpp:2: #include "tests/data_dir.hpp": tests/data_dir.hpp belongs to no layer (no headerd_library() in tests/)'

fresh dropped_dep
sed -i 's/headerd_library(tracker DEPS headerd::core /headerd_library(tracker DEPS /' "$T/p2p/tracker/CMakeLists.txt"
grep -q 'headerd_library(tracker DEPS prometheus' "$T/p2p/tracker/CMakeLists.txt" || fail "test bug: tracker's DEPS unchanged"
first=$(grep -n '#include "core/' "$T/p2p/tracker/tracker.hpp" | head -1 | cut -d: -f1)
expect_finding "headerd::core dropped from tracker's DEPS" \
    "p2p/tracker/tracker.hpp:$first: #include \"core/" "layer 'core' (core/) is not a dependency of 'tracker': DEPS none" \
    "docs/architecture.md:" "DEPS of 'tracker' are core in the table but - in p2p/tracker/CMakeLists.txt:2"

fresh unknown_dep
sed -i 's/headerd_library(db DEPS /headerd_library(db DEPS headerd::nosuch /' "$T/db/CMakeLists.txt"
expect_finding "DEPS name a library that does not exist" \
    "db/CMakeLists.txt:1: DEPS of 'db' names headerd::nosuch, which no headerd_library() defines"

fresh cycle
sed -i 's/headerd_library(core DEPS /headerd_library(core DEPS headerd::db /' "$T/core/CMakeLists.txt"
expect_finding "a cycle in the DEPS" "the DEPS form a cycle: " "-> core -> db ->" "(layers depend one way only)"

fresh doc_table
sed -i 's/^| `p2p\/tracker\/` | `tracker` | core |/| `p2p\/tracker\/` | `tracker` | core, metrics |/' "$T/docs/architecture.md"
row=$(grep -n '^| `p2p/tracker/` | `tracker` |' "$T/docs/architecture.md" | cut -d: -f1)
expect_finding "docs/architecture.md's table disagrees with the CMake DEPS" \
    "docs/architecture.md:$row: DEPS of 'tracker' are core, metrics in the table but core in p2p/tracker/CMakeLists.txt:2"

fresh doc_row
sed -i '/^| `p2p\/rlpx\/` | `rlpx` |/d' "$T/docs/architecture.md"
expect_finding "docs/architecture.md's table misses a library" \
    "docs/architecture.md: the DEPS table has no row for library 'rlpx' (p2p/rlpx/CMakeLists.txt: DEPS core)"

rc=0
out=$("$CHECK" --root "$WORK/nowhere" 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -qF "not a directory" <<<"$out" || fail "--root of a missing directory: exit $rc: $out"
echo "ok: --root of a missing directory -> $out"

echo "PASS: $n cases"
