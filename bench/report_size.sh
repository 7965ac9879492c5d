#!/bin/bash
# bench/report_size.sh - dcpireport on a large profile: a generated program with NFUNCS
# functions (bench/gen_bigprof src, gcc -g) and an epoch of NSAMPLES samples over them with a
# stack profile of DEPTH frames per chain (gen_bigprof db). Measured: the page's size (bytes,
# and gzip -9 bytes for reference), dcpireport's wall time (median of REPS), and the load in
# headless Chromium: the page's own measure (data-ms on its <html> element: milliseconds from
# navigation start until its script has drawn everything) and the wall time of a whole
# `chromium --dump-dom` (browser start included; a trivial page's time printed beside it).
# Usage: bench/report_size.sh [BUILD_DIR] [NFUNCS] [NSAMPLES] [DEPTH] [REPS]
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
NF=${2:-10000}
NS=${3:-1000000}
DEPTH=${4:-8}
REPS=${5:-3}
T=$(mktemp -d /tmp/dcpi-bench-report.XXXXXX)
trap 'rm -rf "$T"' EXIT
for c in gcc chromium gzip; do
    command -v $c >/dev/null || { echo "bench: $c is not installed" >&2; exit 77; }
done
G="$B/bench/gen_bigprof"
[ -x "$G" ] || { echo "bench: $G not built" >&2; exit 1; }
"$G" src "$NF" >"$T/big.c"
gcc -O0 -g -o "$T/big" "$T/big.c"
"$G" db "$T/db" "$T/big" "$NS" "$DEPTH" >/dev/null

now() { date +%s.%N; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
chrome() {
    timeout 300 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
        --host-resolver-rules="MAP * ~NOTFOUND" --user-data-dir="$T/chrome" --dump-dom "file://$1$2" 2>/dev/null
}
for ((i = 0; i < REPS; i++)); do
    t0=$(now)
    "$B/dcpireport" -db "$T/db" -o "$T/r.html"
    t1=$(now)
    echo "$t1 - $t0" | bc
done | median >"$T/gen.s"
echo '<html><body>x</body></html>' >"$T/empty.html"
for ((i = 0; i < REPS; i++)); do
    t0=$(now); chrome "$T/empty.html" "" >/dev/null; t1=$(now)
    echo "$t1 - $t0" | bc
done | median >"$T/empty.s"
: >"$T/ms"
: >"$T/ms_all"
for ((i = 0; i < REPS; i++)); do
    t0=$(now); chrome "$T/r.html" "" >"$T/dom.html"; t1=$(now)
    echo "$t1 - $t0" | bc >>"$T/wall"
    grep -o 'data-state="rendered" data-ms="[0-9]*"' "$T/dom.html" | tr -dc '0-9\n' >>"$T/ms"
    grep -q '<div id="errors" hidden=""></div>' "$T/dom.html" || { echo "bench: page errors" >&2; exit 1; }
    chrome "$T/r.html" "#all" >"$T/dom-all.html" # every procedure row drawn at once
    grep -o 'data-state="rendered" data-ms="[0-9]*"' "$T/dom-all.html" | tr -dc '0-9\n' >>"$T/ms_all"
done
[ "$(wc -l <"$T/ms")" -eq "$REPS" ] && [ "$(wc -l <"$T/ms_all")" -eq "$REPS" ] ||
    { echo "bench: the page did not render" >&2; exit 1; }
frames=$(grep -o '<div class="fr' "$T/dom.html" | wc -l)
rows=$(grep -o '<tr class="prow"' "$T/dom.html" | wc -l)
rows_all=$(grep -o '<tr class="prow"' "$T/dom-all.html" | wc -l)
echo "profile: $NF functions, $NS samples, stack depth $DEPTH"
echo "page: $(wc -c <"$T/r.html") bytes ($(gzip -9 <"$T/r.html" | wc -c) gzipped), $rows procedure rows drawn, $frames flame frames"
echo "dcpireport: $(cat "$T/gen.s") s (median of $REPS)"
echo "chromium: page script done at $(median <"$T/ms") ms after navigation start; dump-dom wall $(median <"$T/wall") s (trivial page $(cat "$T/empty.s") s)"
echo "chromium, all $rows_all procedure rows drawn (#all): script done at $(median <"$T/ms_all") ms"
