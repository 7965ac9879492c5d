#!/bin/bash
# web_http.sh - dcpiweb over HTTP (curl), on a database of two dcpid runs: work-values with
# -g and vp-classic's hotlists beside a program with a hostile symbol ("<img src=x
# onerror=alert(1)>") and command name (c"o'm<i>), then work-demo in a second epoch.
#   - JSON of each view = the tool's -json on the same selection, byte for byte: dcpiprof
#     (procedures, -i, -procs, -pid, -comm, -epoch all), dcpilist -json -vtrace vp-classic (the
#     plugins of the value profiles the image has), dcpidiff -json;
#   - names escaped: the hostile symbol and command only as JSON escapes (\u003c...), never raw
#     in a reply; the page's HTML carries no profile data; error replies are text/plain with
#     nosniff;
#   - bad parameters (unknown, twice, wrong form, a POST) -> 400/405 with one line; a request
#     for another host name than the loopback one (DNS rebinding) -> 403;
#   - paths cannot leave the database: '..', '/' in an epoch or platform, an image that is not
#     one of the selection's, an epoch that is a link out of the database, a link inside one;
#   - a damaged profile is a warning in the page's document (and dcpiprof's), not an error;
#   - 30 clients that close their connection mid-reply, then 100 concurrent requests: all 200;
#   - -http on a non-loopback address needs -public (and the log says it), -h, -V.
# Skips (77) when cpu-clock sampling is not possible here.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/web.sh"
e2e_counting web-http
to() { timeout -k 5 "$@"; }
WEB_PID=
trap '[ -n "$WEB_PID" ] && kill "$WEB_PID" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
for f in dcpid dcpiweb dcpiprof dcpilist dcpidiff samples/work-demo samples/work-values; do
    [ -x "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_require curl curl
e2e_require gcc build-essential
e2e_require python3 python3
e2e_probe_cpu_clock "cpu-clock sampling" -g

prog=$(web_hostile_prog "$T") || exit 1
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -g -vbp -vbudget 8 -vtrace vp-classic -- sh -c \
    "'$BIN/samples/work-values' 400 >/dev/null && '$prog' 200" >"$T/run1.out" 2>&1 ||
    { echo "FAIL: dcpid (1): $(tail -3 "$T/run1.out")"; exit 1; }
e2e_after_epoch "$T/db"
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$BIN/samples/work-demo" 300 >"$T/run2.out" 2>&1 ||
    { echo "FAIL: dcpid (2): $(tail -3 "$T/run2.out")"; exit 1; }
E1=$(ls "$T/db" | grep -E '^[0-9]{14}$' | sort | head -1)
E2=$(ls "$T/db" | grep -E '^[0-9]{14}$' | sort | tail -1)
[ "$E1" != "$E2" ] || { echo "FAIL: one epoch only"; exit 1; }
PLAT=$(ls "$T/db/$E1" | grep -v '\.' | head -1)
WV=$BIN/samples/work-values
web_start web -db "$T/db"
U=$WEB_URL
get() { curl -s -g "$U$1"; }
code() { curl -s -g -o "$T/body" -w '%{http_code}' "$U$1"; }

# --- JSON of each view = the tool's -json
same() { # WHAT URL TOOL ARGS...
    local what=$1 url=$2
    shift 2
    get "$url" >"$T/web.json"
    "$@" >"$T/tool.json" 2>"$T/tool.err"
    if cmp -s "$T/web.json" "$T/tool.json" && [ -s "$T/web.json" ]; then
        echo "ok: $what = $(basename "$1") -json ($(wc -c <"$T/web.json") bytes)"
    else
        fail "$what differs from $*: $(diff "$T/web.json" "$T/tool.json" | head -c 400)"
    fi
}
same "prof (latest)" "/api/prof.json" "$BIN/dcpiprof" -db "$T/db" -json
same "prof epoch E1" "/api/prof.json?epoch=$E1" "$BIN/dcpiprof" -db "$T/db" -epoch "$E1" -json
same "prof -i" "/api/prof.json?epoch=$E1&i=1" "$BIN/dcpiprof" -db "$T/db" -epoch "$E1" -i -json
same "prof -procs" "/api/prof.json?epoch=$E1&procs=1" "$BIN/dcpiprof" -db "$T/db" -epoch "$E1" -procs -json
same "prof all" "/api/prof.json?epoch=all" "$BIN/dcpiprof" -db "$T/db" -epoch all -json
same "prof range" "/api/prof.json?epoch=$E1..$E2" "$BIN/dcpiprof" -db "$T/db" -epoch "$E1..$E2" -json
same "prof -comm" "/api/prof.json?epoch=$E1&comm=work-values" "$BIN/dcpiprof" -db "$T/db" -epoch "$E1" -comm work-values -json
pid=$(get "/api/prof.json?epoch=$E1&procs=1" | python3 -c 'import json,sys; print([r for r in json.load(sys.stdin)["rows"] if r.get("comm") == "work-values"][0]["pid"])' 2>/dev/null)
[ -n "$pid" ] && same "prof -pid" "/api/prof.json?epoch=$E1&pid=$pid" "$BIN/dcpiprof" -db "$T/db" -epoch "$E1" -pid "$pid" -json ||
    fail "no pid of work-values in the procs view"
same "list lea_loop" "/api/list.json?epoch=$E1&proc=lea_loop&image=$WV" "$BIN/dcpilist" -db "$T/db" -epoch "$E1" -json -vtrace vp-classic lea_loop "$WV"
same "list lea_loop, vtrace=vp-classic" "/api/list.json?epoch=$E1&proc=lea_loop&image=$WV&vtrace=vp-classic" "$BIN/dcpilist" -db "$T/db" -epoch "$E1" -json -vtrace vp-classic lea_loop "$WV"
same "diff E1 E2" "/api/diff.json?epoch=$E1&diff=$E2" "$BIN/dcpidiff" -db "$T/db" -json "@$E1" "@$E2"
get "/api/page.json?epoch=$E1&proc=lea_loop&image=$WV" | python3 -c '
import json, sys
d = json.load(sys.stdin)
L = d["report"]["listings"]
assert len(L) == 1 and L[0]["proc"] == "lea_loop", L
print("ok: the page document holds the one listing of lea_loop")' || fail "page.json listing"

# --- names escaped
get "/api/prof.json?epoch=$E1" >"$T/p1.json"
grep -qF '"\u003cimg src=x onerror=alert(1)\u003e"' "$T/p1.json" || fail "the hostile symbol is not in prof.json as \\u003c...: $(grep -o '.\{0,20\}img src.\{0,30\}' "$T/p1.json" | head -2)"
get "/api/page.json?epoch=$E1" >"$T/page.json"
get "/api/prof.json?epoch=$E1&procs=1" >"$T/ps.json"
for f in p1.json page.json ps.json; do
    grep -q '<' "$T/$f" && fail "$f holds a raw '<': $(grep -o '.\{0,30\}<.\{0,30\}' "$T/$f" | head -2)"
done
grep -qF 'c\"o'"'"'m\u003ci\u003e' "$T/ps.json" || fail "the hostile command is not escaped in the procs view: $(grep -o '.\{0,10\}o.m.\{0,20\}' "$T/ps.json" | head -3)"
python3 -c 'import json,sys; json.load(open(sys.argv[1])); json.load(open(sys.argv[2]))' "$T/page.json" "$T/ps.json" || fail "not JSON"
xs=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("<img src=x onerror=alert(1)>"))')
c=$(code "/api/list.json?epoch=$E1&proc=$xs&image=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1]))' "$prog")")
[ "$c" = 200 ] && ! grep -q '<' "$T/body" && grep -qF '\u003cimg' "$T/body" || fail "list of the hostile symbol: $c $(head -c 300 "$T/body")"
c=$(code "/api/list.json?epoch=$E1&proc=%3Cscript%3Ealert(1)%3C/script%3E&image=$WV")
ct=$(curl -s -g -o /dev/null -w '%{content_type}' "$U/api/list.json?epoch=$E1&proc=%3Cscript%3E&image=$WV")
[ "$c" = 400 ] && [ "${ct%%;*}" = text/plain ] || fail "an unknown procedure: $c $ct $(cat "$T/body")"
curl -s -g -D "$T/hdr" -o "$T/shell.html" "$U/"
grep -qi '^x-content-type-options: nosniff' "$T/hdr" || fail "no nosniff header"
grep -qi "^content-security-policy: default-src 'none'" "$T/hdr" || fail "no CSP header: $(cat "$T/hdr")"
grep -Eq 'img src|work-values|hot_|lea_loop' "$T/shell.html" && fail "the page's HTML carries profile data"
grep -Eiq "(src|href)=\"(https?:)?//" "$T/shell.html" && fail "the page loads something from another host"
echo "ok: names escaped (JSON \\u003c, text/plain errors, CSP and nosniff headers)"

# --- bad parameters: 400 (405 for a POST) with one line
bad() { # URL STATUS
    local c
    c=$(code "$1")
    if [ "$c" = "$2" ] && [ "$(wc -l <"$T/body")" = 1 ] && grep -q '^dcpiweb: ' "$T/body"; then
        echo "ok: $1 -> $c $(cat "$T/body")"
    else
        fail "$1: $c (want $2) '$(head -c 300 "$T/body")'"
    fi
}
bad "/api/prof.json?pid=abc" 400
bad "/api/prof.json?pid=-1" 400
bad "/api/prof.json?nosuch=1" 400
bad "/api/prof.json?epoch=$E1&epoch=$E2" 400
bad "/api/prof.json?event=nosuch-event" 400
bad "/api/prof.json?epoch=19990101000000" 400
bad "/?view=%3Cscript%3E" 400
bad "/api/top.json?rows=100000" 400
bad "/api/prof.json?comm=a%01b" 400
bad "/api/diff.json" 400
bad "/api/list.json?proc=lea_loop" 400
bad "/api/nosuch" 404
c=$(curl -s -o "$T/body" -w '%{http_code}' -H 'Host: evil.example:8088' "$U/api/prof.json")
[ "$c" = 403 ] && [ "$(wc -l <"$T/body")" = 1 ] || fail "a request for another host name (DNS rebinding): $c $(cat "$T/body")"
c=$(curl -s -o "$T/body" -w '%{http_code}' -X POST --data x=1 "$U/api/prof.json")
[ "$c" = 405 ] && [ "$(wc -l <"$T/body")" = 1 ] || fail "POST: $c $(cat "$T/body")"

# --- paths cannot leave the database
bad "/api/prof.json?epoch=../../etc" 400
bad "/api/prof.json?epoch=/etc" 400
bad "/api/prof.json?epoch=..%2F..%2Fetc" 400
bad "/api/prof.json?platform=.." 400
bad "/api/prof.json?platform=../$PLAT" 400
bad "/api/list.json?epoch=$E1&proc=main&image=/etc/passwd" 400
bad "/api/list.json?epoch=$E1&proc=main&image=../../../etc/passwd" 400
# an epoch that is a link to a copy outside the database, and a link inside an epoch
mkdir -p "$T/outside"
cp -r "$T/db/$E1" "$T/outside/copy"
ln -s "$T/outside/copy" "$T/db/20000101000000"
bad "/api/prof.json?epoch=20000101000000" 400
cp -r "$T/db/$E1" "$T/db/20000101000001"
img=$(ls -d "$T/db/20000101000001/$PLAT"/*/ | head -1)
ln -s "$T/outside/copy/$PLAT/$(basename "$img")" "$T/db/20000101000001/$PLAT/zz_link"
bad "/api/prof.json?epoch=20000101000001" 400
rm "$T/db/20000101000001/$PLAT/zz_link"
c=$(code "/api/prof.json?epoch=20000101000001")
[ "$c" = 200 ] || fail "the copy without its link: $c $(cat "$T/body")"
rm -rf "$T/db/20000101000000" "$T/db/20000101000001"

# --- a damaged profile: a warning in the page's document, as dcpiprof says it on stderr
cp -r "$T/db/$E1" "$T/db/20000101000002"
prof=$(find "$T/db/20000101000002" -name 'cpu-clock.prof' | head -1)
head -c 100 "$prof" >"$prof.x" && mv "$prof.x" "$prof"
"$BIN/dcpiprof" -db "$T/db" -epoch 20000101000002 >/dev/null 2>"$T/dmg.err"
[ $? = 3 ] || fail "dcpiprof on the damaged epoch: not exit 3"
get "/api/page.json?epoch=20000101000002" >"$T/dmg.json"
python3 - "$T/dmg.json" "$T/dmg.err" <<'PY' || fail "damage warning"
import json, sys
d = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
assert d["damage"], "no damage in the page's document"
for m in d["damage"]:
    assert m in err, (m, err)
print("ok: damaged profile in the page: %s" % d["damage"][0][:100])
PY
rm -rf "$T/db/20000101000002"

# --- clients that go away mid-reply, then 100 at once
python3 - "${U#http://}" "$E1" <<'PY' || fail "disconnecting clients"
import socket, struct, sys
host, port = sys.argv[1].split(':')
for i in range(30):
    s = socket.create_connection((host, int(port)), timeout=30)
    path = ['/api/page.json?epoch=%s', '/static/report.js', '/api/prof.json?epoch=%s'][i % 3]
    s.sendall(('GET ' + (path % sys.argv[2] if '%s' in path else path) + ' HTTP/1.1\r\nHost: x\r\n\r\n').encode())
    if i % 2:
        s.recv(64)  # part of the reply, then a reset
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    s.close()
print("ok: 30 clients closed their connection mid-reply")
PY
kill -0 "$WEB_PID" || { echo "FAIL: dcpiweb died"; exit 1; }
urls=("/api/prof.json" "/api/page.json?epoch=$E1" "/" "/static/report.js" "/api/prof.json?epoch=$E1&i=1"
    "/api/list.json?epoch=$E1&proc=lea_loop&image=$WV" "/api/prof.json?pid=zz")
for i in $(seq 0 99); do echo "$U${urls[$((i % 7))]}"; done >"$T/urls"
to 120 xargs -P 100 -n 1 curl -s -g -o /dev/null -w '%{http_code}\n' <"$T/urls" >"$T/codes"
n200=$(grep -c '^200$' "$T/codes") n400=$(grep -c '^400$' "$T/codes")
[ "$n200" = 86 ] && [ "$n400" = 14 ] || fail "100 concurrent requests: $n200 x 200, $n400 x 400 (want 86, 14): $(sort "$T/codes" | uniq -c | tr '\n' ' ')"
echo "ok: 100 concurrent requests: $n200 x 200, $n400 x 400 (the bad ones)"
[ "$(get /api/prof.json)" = "$("$BIN/dcpiprof" -db "$T/db" -json)" ] || fail "after the load: prof.json differs"
web_stop "$WEB_PID"
WEB_PID=

# --- the listening address, -h, -V
out=$(to 10 "$BIN/dcpiweb" -db "$T/db" -http 0.0.0.0:0 2>&1)
[ $? = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q 'give -public' <<<"$out" || fail "0.0.0.0 without -public: $out"
out=$(to 10 "$BIN/dcpiweb" -db "$T/db" -http nohost 2>&1)
[ $? = 2 ] && grep -q 'HOST:PORT' <<<"$out" || fail "-http nohost: $out"
web_start pub -db "$T/db" -http 0.0.0.0:0 -public
grep -q -- '-public: listening on 0.0.0.0' "$T/pub.log" || fail "the log does not say -public: $(cat "$T/pub.log")"
web_stop "$WEB_PID"
WEB_PID=
out=$(to 10 "$BIN/dcpiweb" -db "$T/db" -host h1 2>&1)
[ $? = 2 ] && [ "$(wc -l <<<"$out")" = 1 ] || fail "-host without -fleet: $out"
# -since on the command line: the selection of the URLs that give none (E2 only: E1 ended before)
web_start since -db "$T/db" -since "$E2"
c=$(curl -s -o "$T/body" -w '%{http_code}' "$WEB_URL/api/prof.json")
"$BIN/dcpiprof" -db "$T/db" -since "$E2" -json >"$T/tool.json" 2>/dev/null
[ "$c" = 200 ] && cmp -s "$T/body" "$T/tool.json" || fail "-since $E2: $c, not dcpiprof -since's JSON"
web_stop "$WEB_PID"
WEB_PID=
"$BIN/dcpiweb" -h | grep -q -- '-http HOST:PORT' || fail "-h"
"$BIN/dcpiweb" -V | grep -q '^dcpiweb (dcpi)' || fail "-V"
out=$(to 10 "$BIN/dcpiweb" -db "$T/nosuch" 2>&1)
[ $? = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] || fail "-db nosuch: $out"

[ "$fails" -eq 0 ] || exit 1
echo "PASS"
