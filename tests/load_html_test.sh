#!/usr/bin/env bash
# The HTML page of a load report in a real browser: `headerd report` renders
# tests/data/load-report-sample.json, headless Chromium (Debian's chromium package) loads it from
# file:// (nothing else: the page is self-contained, and every host name is mapped to nothing), and
# the test checks that
#   - the screenshot is not blank: the PNG is decoded here (zlib and struct, no imaging library)
#     and must hold many distinct colours and a fair share of non-background pixels;
#   - the DOM Chromium built holds the charts' data attributes, equal to the JSON's timeline values
#     (requests, headers, p50_ms, p99_ms, errors per second) and to every profile's histogram.
# Without chromium the test is skipped (exit 77), or fails when CI=true.
source "$(dirname "$0")/lib.sh" "$@"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    if [ "${CI:-}" = true ]; then
        fail "chromium is not installed (apt-get install chromium); CI=true, so this is a failure, not a skip"
    fi
    echo "SKIP: chromium is not installed (apt-get install chromium)"
    exit 77
fi

SAMPLE=$DATA/load-report-sample.json
PAGE=$WORK/report.html
"$HEADERD" report --json "$SAMPLE" --html "$PAGE" 2>"$WORK/report.err" || {
    cat "$WORK/report.err" >&2
    fail "headerd report failed"
}
[ -s "$PAGE" ] || fail "headerd report wrote no page"
echo "ok: headerd report rendered $(wc -c <"$PAGE") bytes"

# Headless Chromium with its profile, cache and crash files under $WORK, no network (every host name
# resolves to nothing) and bounded in time.
mkdir -p "$WORK/home"
chromium_run() {
    HOME=$WORK/home XDG_CONFIG_HOME=$WORK/home XDG_CACHE_HOME=$WORK/home timeout -k 5 60 "$CHROMIUM" \
        --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$WORK/profile" \
        --no-first-run --no-default-browser-check --disable-extensions --disable-sync \
        --disable-background-networking --disable-component-update --host-resolver-rules="MAP * ~NOTFOUND" \
        --window-size=1280,2000 "$@" "file://$PAGE"
}

chromium_run --screenshot="$WORK/shot.png" >"$WORK/shot.out" 2>&1 || {
    tail -20 "$WORK/shot.out" >&2
    fail "chromium --screenshot failed"
}
[ -s "$WORK/shot.png" ] || fail "chromium wrote no screenshot"

python3 - "$WORK/shot.png" <<'EOF' || fail "the screenshot looks blank"
import struct, sys, zlib

data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG file")
pos, idat, header = 8, [], None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        header = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat.append(body)
    elif kind == b"IEND":
        break
    pos += 12 + length
width, height, depth, colour, _, _, interlace = header
channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
if depth != 8 or channels is None or interlace != 0:
    sys.exit(f"unexpected PNG layout: depth {depth}, colour type {colour}, interlace {interlace}")
raw = zlib.decompress(b"".join(idat))
stride = width * channels
if len(raw) != height * (stride + 1):
    sys.exit("PNG data has the wrong size")

# Undo the per-row filters (PNG specification, section 9).
rows, prev = [], bytearray(stride)
for y in range(height):
    kind = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if kind == 1:
        for i in range(channels, stride):
            line[i] = (line[i] + line[i - channels]) & 0xFF
    elif kind == 2:
        line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
    elif kind == 3:
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
    elif kind != 0:
        sys.exit(f"bad PNG filter type {kind} in row {y}")
    rows.append(bytes(line))
    prev = line

colours, counts = set(), {}
for line in rows:
    for x in range(0, stride, channels):
        px = line[x:x + channels]
        colours.add(px)
        counts[px] = counts.get(px, 0) + 1
background = max(counts.values())
inked = 1 - background / (width * height)
print(f"ok: screenshot {width}x{height}: {len(colours)} distinct colours, {inked:.1%} of the pixels not background")
if len(colours) < 200:
    sys.exit(f"only {len(colours)} distinct colours")
if inked < 0.05:
    sys.exit(f"only {inked:.1%} of the pixels differ from the background")
EOF

chromium_run --dump-dom >"$WORK/dom.html" 2>"$WORK/dom.err" || {
    tail -20 "$WORK/dom.err" >&2
    fail "chromium --dump-dom failed"
}
grep -q "<svg" "$WORK/dom.html" || fail "the DOM chromium built has no chart"

python3 - "$SAMPLE" "$WORK/dom.html" <<'EOF' || fail "the charts in the DOM differ from the JSON report"
import json, sys
from html.parser import HTMLParser

report = json.load(open(sys.argv[1]))
lines, bars, banner = {}, {}, []


class Charts(HTMLParser):
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-points" in a:
            key = (a.get("data-chart"), a.get("data-series"))
            if key in lines:
                sys.exit(f"two elements for the series {key}")
            lines[key] = json.loads(a["data-points"])
        if tag == "rect" and a.get("data-chart") == "histogram":
            bars.setdefault(a["data-profile"], []).append((float(a["data-le-ms"]), float(a["data-count"])))
        if "data-verified" in a:
            banner.append(a)


Charts().feed(open(sys.argv[2], encoding="utf-8").read())

errors = []
timeline = report["timeline"]
want_lines = {("throughput", "requests"), ("throughput", "headers"), ("throughput", "errors"),
              ("rtt", "p50_ms"), ("rtt", "p99_ms")}
if set(lines) != want_lines:
    errors.append(f"chart series {sorted(lines)}, expected {sorted(want_lines)}")
for (chart, series), points in sorted(lines.items()):
    want = [[e["t"], e[series]] for e in timeline]
    if points != want:
        errors.append(f"{chart}/{series}: {points[:3]}... differs from the timeline {want[:3]}...")
    else:
        print(f"ok: {chart} chart, {series}: {len(points)} points equal the timeline")
for profile in report["profiles"]:
    want = [(float(b["le_ms"]), float(b["count"])) for b in profile["histogram"]]
    got = bars.pop(profile["name"], None)
    if got != want:
        errors.append(f"histogram of {profile['name']}: {got} differs from {want}")
    else:
        print(f"ok: histogram of {profile['name']}: {len(got)} buckets equal the JSON")
if bars:
    errors.append(f"histograms of profiles the report does not have: {sorted(bars)}")
if len(banner) != 1 or banner[0].get("data-verified") != json.dumps(report["verified"]):
    errors.append(f"verdict banner {banner} does not say verified={report['verified']}")
for e in errors:
    print("FAIL:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
echo "ok: the page in chromium matches the report"
