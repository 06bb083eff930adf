#!/usr/bin/env bash
# deploy/systemd/headerd.service: `systemd-analyze security --offline=true` rates its exposure at
# 1.2 or below ("OK"; 0 is the safest, 10 the least safe), `systemd-analyze verify` loads it without
# a warning (no running systemd needed), and its ExecStart line is a serve command whose options
# headerd accepts. Skips (exit 77) where systemd-analyze is missing (a container without systemd).
# Usage: systemd_unit_test.sh HEADERD MANPAGE_GZ (the build's headerd.1.gz)
source "$(dirname "$0")/lib.sh" "$1"
MANPAGE=${2:?usage: $0 HEADERD MANPAGE_GZ}
[ -s "$MANPAGE" ] || fail "no man page $MANPAGE (the build makes it: target headerd_man_page)"
UNIT=$(cd "$(dirname "$0")/.." && pwd)/deploy/systemd/headerd.service
if ! command -v systemd-analyze >/dev/null; then
    echo "SKIP: systemd-analyze not found"
    exit 77
fi
out=$(systemd-analyze security --offline=true --threshold=12 "$UNIT" 2>&1) ||
    fail "exposure above 1.2: $(tail -1 <<<"$out"); what is not hardened: $(grep '✗' <<<"$out" | cut -c1-60)"
echo "ok: $(tail -1 <<<"$out" | sed 's/^→ *//')"

# `systemd-analyze verify` checks every directive, that ExecStart's binary is executable and that
# the man page of Documentation= exists, as systemd would when loading the unit.
verify_unit "$UNIT" "$HEADERD" "$MANPAGE"
echo "ok: systemd-analyze verify loads the unit without a warning"

# The ExecStart command, with the config file replaced by one the test writes: headerd must accept
# every option (serve --help would not catch a renamed one).
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
[[ $exec_start == "/usr/bin/headerd serve --config /etc/headerd/headerd.toml" ]] ||
    fail "ExecStart changed: $exec_start (update this test)"
"$HEADERD" generate --datadir "$WORK/data" --count 16 >/dev/null 2>&1 || fail "generate"
printf 'datadir = "%s"\nlisten = "127.0.0.1:0"\n' "$WORK/data" >"$WORK/headerd.toml"
"$HEADERD" serve --config "$WORK/headerd.toml" >"$WORK/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    [ -s "$WORK/data/enode" ] && break
    kill -0 "$pid" 2>/dev/null || fail "serve --config exited: $(tail -3 "$WORK/serve.log")"
    sleep 0.1
done
[ -s "$WORK/data/enode" ] || fail "serve --config did not start: $(tail -3 "$WORK/serve.log")"
kill -TERM "$pid"
wait "$pid" || fail "serve exited $? on SIGTERM: $(tail -3 "$WORK/serve.log")"
echo "ok: headerd serve --config FILE starts and stops cleanly on SIGTERM, as the unit runs it"
echo "PASS"
