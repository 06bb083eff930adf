# Shared helpers of the shell integration tests. Usage: source tests/lib.sh HEADERD_BINARY
set -euo pipefail
HEADERD=${1:?usage: $0 HEADERD_BINARY}
DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/data" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/headerd-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# json_field JSON NAME -> the scalar value of "NAME" in a one-line JSON object (strings unquoted).
json_field() {
    local v
    v=$(printf '%s' "$1" | grep -o "\"$2\":\(\"[^\"]*\"\|[0-9a-z]*\)" | head -1 | cut -d: -f2-) || true
    v=${v#\"}
    printf '%s' "${v%\"}"
}

# expect_fail "what" "expected message part" cmd... : the command must exit non-zero and print the part.
expect_fail() {
    local what=$1 part=$2
    shift 2
    local out
    if out=$("$@" 2>&1); then fail "$what: succeeded but should have failed"; fi
    printf '%s' "$out" | grep -qF -- "$part" || fail "$what: error does not mention '$part': $out"
    echo "ok: $what -> $(printf '%s' "$out" | grep -F -- "$part" | head -1)"
}

# chain_digest DATADIR -> a digest of what the datadir holds: every ancient file byte for byte, the
# inspect summary (without on-disk sizes, which LevelDB changes by merely opening) and every header.
# LevelDB files themselves are not compared: opening a LevelDB rewrites its log and manifest.
chain_digest() {
    local d=$1 json head
    json=$("$HEADERD" inspect --datadir "$d" --json)
    head=$(json_field "$json" head_number)
    "$HEADERD" export --datadir "$d" --from 0 --count $((head + 1)) --out "$WORK/digest.rlp" >/dev/null 2>&1
    {
        (cd "$d/chaindata/ancient" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
        printf '%s\n' "$json" | sed 's/"bytes":{[^}]*}//'
        sha256sum <"$WORK/digest.rlp"
    } | sha256sum
}
