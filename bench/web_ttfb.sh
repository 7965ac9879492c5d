#!/bin/bash
# bench/web_ttfb.sh - dcpiweb's time to first byte per view, its drawn pages and its memory, on
# a generated database, beside `go tool pprof -http` on the same epoch exported with dcpiexport
# -format pprof. The data: a generated program with NFUNCS functions (bench/gen_bigprof src, gcc
# -O0 -g) and two epochs of NSAMPLES cpu-clock samples over them, each with a stack profile of
# DEPTH frames per chain (gen_bigprof db). Each URL is asked REPS times with curl (median of
# time_starttransfer, and the reply's size); then each page view is opened in headless Chromium
# (lib/cdp.py) and its own measure read: data-ms, milliseconds from navigation start until its
# script has drawn the view. The servers' resident memory (VmRSS, VmHWM) after all of it.
# Usage: bench/web_ttfb.sh [BUILD_DIR] [NFUNCS] [NSAMPLES] [DEPTH] [REPS]
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
NF=${2:-10000}
NS=${3:-2000000}
DEPTH=${4:-8}
REPS=${5:-3}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T=$(mktemp -d /tmp/dcpi-bench-web.XXXXXX)
WPID= GPID=
trap '[ -n "$WPID" ] && kill $WPID; [ -n "$GPID" ] && kill $GPID; rm -rf "$T"' EXIT
for c in gcc curl python3; do
    command -v $c >/dev/null || { echo "bench: $c is not installed" >&2; exit 77; }
done
G="$B/bench/gen_bigprof"
"$G" src "$NF" >"$T/big.c"
gcc -O0 -g -o "$T/big" "$T/big.c"
E1=$("$G" db "$T/db" "$T/big" "$NS" "$DEPTH")
sleep 1.1 # epoch names have a resolution of one second
E2=$("$G" db "$T/db" "$T/big" "$NS" "$DEPTH")
"$B/dcpiexport" -db "$T/db" -epoch "$E2" -format pprof -o "$T/p.pb.gz"

"$B/dcpiweb" -db "$T/db" -http 127.0.0.1:0 >"$T/web.log" 2>&1 &
WPID=$!
for i in $(seq 100); do grep -q http "$T/web.log" && break; sleep 0.1; done
U=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$T/web.log" | head -1)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if command -v go >/dev/null; then
    go tool pprof -http=127.0.0.1:$PORT -no_browser "$T/p.pb.gz" >"$T/pprof.log" 2>&1 &
    GPID=$!
    for i in $(seq 300); do curl -s -o /dev/null "http://127.0.0.1:$PORT/ui/" && break; sleep 0.1; done
fi

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ttfb() { # URL: "median-ms bytes"
    local i ms
    ms=$(for ((i = 0; i < REPS; i++)); do
        curl -s -g -o "$T/body" -w '%{time_starttransfer}\n' "$1"
    done | median | awk '{printf "%.0f", $1 * 1000}')
    echo "$ms $(wc -c <"$T/body")"
}
row() { # VIEW URL
    read -r ms n <<<"$(ttfb "$2")"
    printf '| %s | `%s` | %s | %s |\n' "$1" "${2#http://127.0.0.1:*/}" "$ms" "$n"
}
img=$(python3 -c 'import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=""))' "$T/big")
echo "NFUNCS=$NF NSAMPLES=$NS DEPTH=$DEPTH, median of $REPS"
echo "| view | URL | TTFB ms | bytes |"
echo "| --- | --- | --- | --- |"
row "page (HTML shell)" "$U/"
row "procedures (dcpiprof -json)" "$U/api/prof.json"
row "images (dcpiprof -i -json)" "$U/api/prof.json?i=1"
row "procedures/images/flame/calls document" "$U/api/page.json"
row "listing document (f1)" "$U/api/page.json?view=list&proc=f1&image=$img"
row "listing (dcpilist -json)" "$U/api/list.json?proc=f1&image=$img"
row "diff document" "$U/api/page.json?epoch=$E1&diff=$E2"
row "diff (dcpidiff -json)" "$U/api/diff.json?epoch=$E1&diff=$E2"
if [ -n "$GPID" ]; then
    P=http://127.0.0.1:$PORT
    row "pprof: graph" "$P/ui/"
    row "pprof: top" "$P/ui/top"
    row "pprof: flame graph" "$P/ui/flamegraph"
    row "pprof: peek f1" "$P/ui/peek?f=%5Ef1%24"
    row "pprof: source f1" "$P/ui/source?f=%5Ef1%24"
    row "pprof: disasm f1" "$P/ui/disasm?f=%5Ef1%24"
fi
if command -v chromium >/dev/null; then
    python3 - "$U" "$img" "$E1" "$E2" "$SRC/tests/e2e/lib" <<'PY'
import sys, tempfile
sys.path.insert(0, sys.argv[5])
from cdp import Browser
u, img, e1, e2 = sys.argv[1:5]
b = Browser(tempfile.mkdtemp(), reach=('127.0.0.1',), timeout=120)
for name, q in (('procedures', ''), ('images', '?view=images'), ('flame graph', '?view=flame'),
                ('callers/callees', '?view=calls'), ('listing f1', '?view=list&proc=f1&image=' + img),
                ('diff', '?view=diff&epoch=%s&diff=%s' % (e1, e2))):
    ms = []
    for i in range(3):
        b.open(u + '/' + q)
        ms.append(int(b.eval('document.documentElement.getAttribute("data-ms")') or -1))
    print('| drawn: %s | data-ms %d (median of 3) |' % (name, sorted(ms)[1]))
b.close()
PY
fi
# (go tool pprof runs the pprof program as its child: that one serves)
[ -n "$GPID" ] && GPID="$GPID $(pgrep -P "$GPID" | tr '\n' ' ')"
for p in "dcpiweb:$WPID" $(for g in $GPID; do echo "pprof:$g"; done); do
    [ -n "${p#*:}" ] || continue
    printf '%s: %s\n' "${p%%:*}" "$(grep -E 'VmRSS|VmHWM' /proc/${p#*:}/status | tr -s ' \t' ' ' | tr '\n' ' ')"
done
