#!/bin/bash
# web_fleet.sh - dcpiweb -fleet on a ClickHouse store started here (tests/e2e/lib/fleet.sh): one
# recording (work-values with -g and vp-classic's hotlists, beside the program with the hostile
# symbol and command of lib/web.sh) pushed as two hosts, "h1" and h"2'x (quotes in a host name).
# The JSON views (through the store's aggregate, built after the first two pushes) equal the
# tools' -fleet -json on the same selection (dcpiprof: every host, one
# host by a quoted name, -procs, a time window; dcpilist -json -vtrace vp-classic); the page in
# Chromium (lib/web_ui.py): the procedures as dcpiprof -fleet's rows, the hostile symbol as text,
# a click on the hottest procedure to its listing with the lea's hotlist as dcpilist -fleet
# prints it, the flame graph of the store's call chains zoomed and searched, the JSON link.
# The diff view (dcpidiff -fleet's rows: the selection against HOSTS@WINDOW), by curl and typed
# into the selection bar in Chromium. A live view of the fleet is a 400 with one line. A reply kept for an unchanged store
# (web/cache.c) is given again, and after a push of a third host the view is the new dcpiprof's. Skips (77) without cpu-clock
# sampling or when chromium cannot start (the JSON checks have run by then).
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/fleet.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/web.sh"
e2e_counting web-fleet
to() { timeout -k 5 "$@"; }
WEB_PID=
trap '[ -n "$WEB_PID" ] && kill "$WEB_PID" 2>/dev/null; fleet_stop "$T/ch"; [ -n "${KEEP:-}" ] || { fleet_rm "$T/ch"; rm -rf "$T"; }' EXIT
FLEET_TMPFS=1
for f in dcpid dcpiweb dcpiprof dcpilist dcpipush dcpictl samples/work-values; do
    [ -x "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_require curl curl
e2e_require gcc build-essential
e2e_require python3 python3
e2e_require chromium chromium
e2e_probe_cpu_clock "cpu-clock sampling with call chains" -g

prog=$(web_hostile_prog "$T") || exit 1
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -g -vbp -vbudget 8 -vtrace vp-classic -- sh -c \
    "'$BIN/samples/work-values' 500 >/dev/null && '$prog' 150" >"$T/run.out" 2>&1 ||
    { echo "FAIL: dcpid: $(tail -3 "$T/run.out")"; exit 1; }
mkdir -p "$T/ch"
fleet_start "$T/ch"
F="${FLEET_HTTP}?database=wf"
"$BIN/dcpictl" -fleet "$F" init >/dev/null || { echo "FAIL: dcpictl init"; exit 1; }
H2="h\"2'x"
for h in h1 "$H2"; do
    "$BIN/dcpipush" -q -db "$T/db" -host "$h" "$F" >"$T/push.out" 2>&1 || { echo "FAIL: push $h: $(cat "$T/push.out")"; exit 1; }
done
# the views of every host read the aggregate built now, and raw what later pushes change
"$BIN/dcpictl" -fleet "$F" aggregate >"$T/agg.out" 2>&1 && grep -q " built$" "$T/agg.out" ||
    { echo "FAIL: dcpictl aggregate: $(cat "$T/agg.out")"; exit 1; }
web_start web -fleet "$F"
U=$(grep -o 'at http://127\.0\.0\.1:[0-9]*' "$T/web.log" | head -1 | cut -c4-)
WV=$BIN/samples/work-values
enc() { python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

same() { # WHAT URL TOOL ARGS...
    local what=$1 url=$2
    shift 2
    curl -s -g "$U$url" >"$T/web.json"
    "$@" >"$T/tool.json" 2>"$T/tool.err"
    if cmp -s "$T/web.json" "$T/tool.json" && [ -s "$T/web.json" ]; then
        echo "ok: $what = $(basename "$1") -fleet -json ($(wc -c <"$T/web.json") bytes)"
    else
        fail "$what differs from $*: $(diff "$T/web.json" "$T/tool.json" | head -c 400)"
    fi
}
same "prof" "/api/prof.json" "$BIN/dcpiprof" -fleet "$F" -json
same "prof one host" "/api/prof.json?hosts=$(enc "$H2")" "$BIN/dcpiprof" -fleet "$F" -host "$H2" -json
same "prof -procs" "/api/prof.json?procs=1" "$BIN/dcpiprof" -fleet "$F" -procs -json
same "prof -i, since 1h" "/api/prof.json?i=1&since=1h" "$BIN/dcpiprof" -fleet "$F" -i -since 1h -json
same "list lea_loop" "/api/list.json?proc=lea_loop&image=$(enc "$WV")" "$BIN/dcpilist" -fleet "$F" -json -vtrace vp-classic lea_loop "$WV"
n=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r["counts"]["cpu-clock"] for r in d["rows"]))' "$T/web.json" 2>/dev/null)
curl -s "$U/api/prof.json?hosts=$(enc "$H2")" | grep -q '<' && fail "a raw '<' in the fleet's JSON"
for url in "/api/diff.json" "/api/diff.json?diff=h%22x" "/api/top.json" "/api/prof.json?epoch=latest"; do
    c=$(curl -s -o "$T/body" -w '%{http_code}' "$U$url")
    [ "$c" = 400 ] && [ "$(wc -l <"$T/body")" = 1 ] || fail "$url: $c $(cat "$T/body")"
done
echo "ok: a diff without its set or with a quote, live and epochs of the fleet: 400 with one line"

# replies kept while the store is unchanged, never stale: a push of a third host changes them
curl -s "$U/api/prof.json" >"$T/c1.json"
curl -s "$U/api/prof.json" >"$T/c2.json"
cmp -s "$T/c1.json" "$T/c2.json" || fail "two asks of an unchanged store differ"
"$BIN/dcpipush" -q -db "$T/db" -host h3 "$F" >"$T/push.out" 2>&1 || fail "push h3: $(cat "$T/push.out")"
same "prof after a push" "/api/prof.json" "$BIN/dcpiprof" -fleet "$F" -json
cmp -s "$T/c1.json" "$T/web.json" && fail "the reply after a push is the one before it"
# the fleet's diff: the selection against dcpidiff -fleet's SET (hosts, a window); host h4 ran
# the hostile program alone
to 60 "$BIN/dcpid" -db "$T/db4" -event cpu-clock -- "$prog" 150 >"$T/run4.out" 2>&1 ||
    fail "dcpid of h4: $(tail -3 "$T/run4.out")"
"$BIN/dcpipush" -q -db "$T/db4" -host h4 "$F" >"$T/push.out" 2>&1 || fail "push h4: $(cat "$T/push.out")"
same "diff h1 h3" "/api/diff.json?hosts=h1&diff=h3" "$BIN/dcpidiff" -fleet "$F" -json h1 h3
same "diff h1 h4@2026-01-01.." "/api/diff.json?hosts=h1&diff=h4@2026-01-01..2099-01-01" \
    "$BIN/dcpidiff" -fleet "$F" -json h1 "h4@2026-01-01..2099-01-01"
cp "$T/tool.json" "$T/diff.json"
grep -q '"name":"lea_loop".*"significant":true' "$T/diff.json" ||
    fail "h1 against h4 (no lea_loop there) shows no significant lea_loop: $(head -c 300 "$T/diff.json")"
# the aggregate (built before h3 and h4 came) against the raw rows (DCPI_FLEET_RAW=1)
raw_same() { # WHAT TOOL ARGS...
    local what=$1
    shift
    "$@" >"$T/agg.out" 2>&1
    DCPI_FLEET_RAW=1 "$@" >"$T/raw.out" 2>&1
    cmp -s "$T/agg.out" "$T/raw.out" && [ -s "$T/agg.out" ] || fail "$what: the aggregate's differs from the raw rows': $(diff "$T/raw.out" "$T/agg.out" | head -c 300)"
}
raw_same "dcpiprof" "$BIN/dcpiprof" -fleet "$F" -json
raw_same "dcpiprof -procs" "$BIN/dcpiprof" -fleet "$F" -procs -json
raw_same "dcpilist -vprof" "$BIN/dcpilist" -fleet "$F" -json -vtrace vp-classic lea_loop "$WV"
grep -q '"values":{' "$T/agg.out" || fail "dcpilist -fleet -json shows no hotlist: $(head -c 300 "$T/agg.out")"
curl -s -o "$T/body" -w '%{http_code}' "$U/api/page.json?hosts=h1&diff=h4" >"$T/code"
[ "$(cat "$T/code")" = 200 ] && grep -q '"diff"' "$T/body" || fail "the page's diff document: $(cat "$T/code") $(head -c 300 "$T/body")"
# the page's views: hosts h1 and h"2'x (not h3)
"$BIN/dcpiprof" -fleet "$F" -host "h1,$H2" -json >"$T/prof.json"
"$BIN/dcpilist" -fleet "$F" -host "h1,$H2" -asm -vtrace vp-classic lea_loop "$WV" >"$T/lea.list" 2>&1 || fail "dcpilist -fleet lea_loop"
line=$(grep -E '^ *[0-9]+ +0x[0-9a-f]+ +lea [a-z0-9]+, \[[a-z0-9]+\+[a-z0-9]+\*1\] ' "$T/lea.list" | head -1)
addr=$(awk '{print $2}' <<<"$line")
text=$(sed -E 's/.* [0-9]+ +[0-9.]+ +[0-9]+  (.*)  \+-.*/\1/' <<<"$line")
vtot=$(sed -E 's/.*\] +([0-9]+) +[0-9.]+ +[0-9]+  .*/\1/' <<<"$line")
[ "${vtot:-0}" -ge 30 ] || { echo "lea hotlist check not run: ${vtot:-0} value samples"; text=; }
python3 - "$T/expect.json" <<PY
import json
X = {"url": "$U", "sel": "hosts=h1,$(enc "$H2")", "e1": "", "e2": "",
     "prof": json.load(open("$T/prof.json")), "prof_text": open("$T/prof.json").read(),
     "lea_addr": "$addr", "lea_hot": """$text""", "xss": "<img src=x onerror=alert(1)>",
     "dhosts": "h1", "dset": "h4@2026-01-01..2099-01-01", "diff": json.load(open("$T/diff.json")),
     "steps": ["procs_view", "listing_view", "flame_view", "fleet_diff_view", "json_link"]}
json.dump(X, open("$T/expect.json", "w"))
PY
to 240 python3 "$(dirname "${BASH_SOURCE[0]}")/lib/web_ui.py" "$T/expect.json"
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "browser checks (above)"
[ "$fails" -eq 0 ] || exit 1
echo "PASS"
