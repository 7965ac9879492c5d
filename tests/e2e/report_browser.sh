#!/bin/bash
# report_browser.sh - dcpireport's page loaded in a real browser (headless Chromium, Debian
# package chromium, installed by make test-deps). One dcpid -g -vtrace vp-classic run of
# work-demo (hot_mul, hot_add, hot_xor), work-values (lea_loop: its lea's results are 7 in 60%
# of executions) and a small C++ program whose procedure is named "long spin<int>(int&, long)"
# (<, >, & in a name); the page, after its script ran (chromium --dump-dom), must hold:
#   - data-state="rendered" on <html> and an empty #errors element: the page's first script writes into it
#     every script error, every failed load and every Content-Security-Policy violation;
#   - the procedure rows of hot_mul, hot_add, hot_xor and spin with dcpiprof's exact counts (the
#     C++ name shown as text, escaped as the DOM serializes it: spin&lt;int&gt;(int&amp;, long));
#   - flame graph frames (drawn with -flame-min 0: every frame) for main and the hot functions,
#     the hot_mul frames summing to dcpiprof's children count of hot_mul, the root to the
#     stack profile's total;
#   - the listing of hot_mul with dcpilist's "total" line, and the lea of lea_loop with the very
#     hotlist text dcpilist -asm -vtrace vp-classic prints for it, 0x7 first.
# No network: (1) the HTML file has no http(s):// or protocol-relative src/href/action and no
# url( at all, and no '<' inside its JSON block (so nothing there can close the script element);
# (2) the page carries a CSP "default-src 'none'" (only its inline style and scripts), so the
# browser itself refuses any fetch the page could attempt and reports it into #errors (checked
# empty above); (3) chromium runs with every host name mapped to NOTFOUND, so even a fetch
# outside the policy could not reach anything. Watching chromium's own log for URLs was left
# out: the browser fetches things of its own (component updates) that say nothing of the page.
# The screenshot is saved to $DCPI_BIN/report-screenshot.png. A second epoch, of a Debian
# program (xz) without stacks, must say that it has no stack profile; -diff of the two has
# hot_mul's row with its count in the first and 0 in the second. One Chromium serves every page
# (lib/report_ui.py browser: the DOMs as --dump-dom serializes them, the screenshot, the
# interaction checks): each start of it costs about a CPU second.
# Skips (77) when cpu-clock sampling is not possible or chromium cannot start here.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting report
to() { timeout -k 5 "$@"; }
for f in dcpid dcpiprof dcpilist dcpireport dcpiexport samples/work-demo samples/work-values; do
    [ -x "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_require chromium chromium
e2e_require g++ build-essential
e2e_require xz xz-utils
e2e_require python3 python3
e2e_require go golang-go

# (data-state as dcpireport's pages set it: lib/cdp.py waits for it)
echo '<html><body><div id="x">a</div><script>document.getElementById("x").textContent="ran";document.documentElement.setAttribute("data-state", "rendered")</script></body></html>' >"$T/probe.html"
e2e_probe_cpu_clock "cpu-clock sampling with call chains" -g

cat >"$T/spin.cc" <<'C'
#include <cstdlib>
template <typename T> __attribute__((noinline)) long spin(T &x, long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += (long)x * i ^ (s >> 3);
    return s;
}
volatile long sink;
int main(int argc, char **argv)
{
    int a = argc;
    sink = spin<int>(a, atol(argv[1]));
    return 0;
}
C
g++ -O1 -g -fno-omit-frame-pointer -o "$T/spin" "$T/spin.cc" || { echo "FAIL: g++"; exit 1; }
# recursion for the caller/callee view: rec calls itself, even and odd call each other
cat >"$T/rec.c" <<'C'
#include <stdlib.h>
volatile long sink;
__attribute__((noinline)) long work(long n) { long s = 0; for (long i = 0; i < n; i++) s += i ^ (s >> 3); return s; }
long odd(int d, long n);
__attribute__((noinline)) long even(int d, long n) { return d <= 0 ? work(n) : work(n / 4) + odd(d - 1, n); }
__attribute__((noinline)) long odd(int d, long n) { return d <= 0 ? work(n) : even(d - 1, n); }
__attribute__((noinline)) long rec(int d, long n) { return d <= 0 ? work(n) : work(n / 8) + rec(d - 1, n); }
int main(int argc, char **argv)
{
    long n = atol(argv[1]);
    for (int r = 0; r < 40; r++) {
        sink += rec(r % 6, n);
        sink += even(r % 5, n);
    }
    return 0;
}
C
gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -o "$T/rec" "$T/rec.c" || { echo "FAIL: gcc rec"; exit 1; }

# (-vbudget 8: the bp backend may take 8% of a thread's CPU, not 1%: work-values' 500 ms give the
# lea ~150 value samples for its hotlist check (30 needed), where 1500 ms gave ~65 at 1%);
# -vbp: with the inproc backend the agent's signal handlers are in the call chains, which
# dcpireport names unknown_rou... where pprof says [libdcpi-agent.so.0.1.0] (not reconciled yet)
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -g -vbp -vbudget 8 -vtrace vp-classic -- sh -c \
    "'$BIN/samples/work-demo' 500 >/dev/null && '$BIN/samples/work-values' 500 >/dev/null && '$T/spin' 300000000 && '$T/rec' 3000000" \
    >"$T/run.out" 2>&1 || { echo "FAIL: dcpid: $(cat "$T/run.out")"; exit 1; }
"$BIN/dcpiprof" -db "$T/db" -csl >"$T/prof.csv" 2>"$T/prof.err" || fail "dcpiprof: $(cat "$T/prof.err")"
"$BIN/dcpireport" -db "$T/db" -vtrace vp-classic -flame-min 0 -o "$T/r.html" 2>"$T/rep.err" ||
    { echo "FAIL: dcpireport: $(cat "$T/rep.err")"; exit 1; }
echo "page: $(wc -c <"$T/r.html") bytes"

# (1) nothing to fetch in the file
grep -Eiq "(src|href|action)[[:space:]]*=[[:space:]]*[\"']?[[:space:]]*(https?:|//)|url\(" "$T/r.html" &&
    fail "the page references something to fetch: $(grep -Eio "(src|href|action)[^>]{0,60}|url\([^)]{0,60}" "$T/r.html" | head -3)"
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$T/r.html" || fail "no CSP default-src 'none'"
tr '\n' ' ' <"$T/r.html" | sed 's/.*id="dcpi-data">//; s/<\/script>.*//' >"$T/data.json"
grep -q '<' "$T/data.json" && fail "a '<' inside the JSON block"

# listings: hot_mul's total line, the lea's hotlist as dcpilist prints it (checked in the page below)
"$BIN/dcpilist" -db "$T/db" -asm hot_mul "$BIN/samples/work-demo" >"$T/mul.list" 2>&1 || fail "dcpilist hot_mul"
"$BIN/dcpilist" -db "$T/db" -asm -vtrace vp-classic lea_loop "$BIN/samples/work-values" >"$T/lea.list" 2>&1 ||
    fail "dcpilist lea_loop: $(cat "$T/lea.list")"

# used as a person would (tests/e2e/lib/report_ui.py, DevTools protocol, below): the processes table
# against dcpiprof -procs, sorted by a click on its pid and command headers; the caller/callee
# view of the hottest procedure against dcpiprof's children column, of rec, even and odd
# (recursive) against go tool pprof -peek and -traces of the same epoch exported as pprof; no
# debug text, and no horizontal scrolling at 1000 and 760 px (long names and dcpilist's value
# footers wrap)
"$BIN/dcpiprof" -db "$T/db" -procs -csl >"$T/procs.csv" 2>"$T/procs.err" || fail "dcpiprof -procs: $(cat "$T/procs.err")"
"$BIN/dcpiexport" -db "$T/db" -format pprof -o "$T/p.pb.gz" 2>"$T/exp.err" || fail "dcpiexport pprof: $(cat "$T/exp.err")"
go tool pprof -sample_index=0 -nodefraction=0 -edgefraction=0 -nodecount=0 -peek '^(rec|even|odd)$' \
    "$T/p.pb.gz" >"$T/peek.txt" 2>"$T/peek.err" || fail "go tool pprof -peek: $(tail -3 "$T/peek.err")"
go tool pprof -sample_index=0 -traces "$T/p.pb.gz" >"$T/traces.txt" 2>"$T/traces.err" ||
    fail "go tool pprof -traces: $(tail -3 "$T/traces.err")"

# a Debian program, no stacks, as a second epoch of the same database: its page says that it
# has no stack profile and holds dcpiprof's top row; -diff of the two epochs has hot_mul with
# its count in A and 0 in B
# (1 MB of text: xz -6 on it takes ~0.5 s, thousands of samples in liblzma)
head -c 750000 /dev/urandom | base64 >"$T/data.txt"
# a new epoch name (they have a resolution of one second; the first run took longer than that)
first=$(ls "$T/db" | grep -E '^[0-9]{14}$' | tail -1)
for i in $(seq 30); do [ "$(date +%Y%m%d%H%M%S)" != "$first" ] && break; sleep 0.1; done
to 200 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- xz -6 -T1 -k -f "$T/data.txt" >"$T/xz.out" 2>&1 ||
    { echo "FAIL: dcpid xz (rc $?): $(cat "$T/xz.out")"; exit 1; }
"$BIN/dcpiprof" -db "$T/db" -csl >"$T/xz.csv" 2>/dev/null || fail "dcpiprof xz"
"$BIN/dcpireport" -db "$T/db" -top 3 -o "$T/xz.html" 2>"$T/xz.err" || fail "dcpireport xz: $(cat "$T/xz.err")"
"$BIN/dcpireport" -db "$T/db" -epoch latest-1 -diff latest -top 0 -o "$T/diff.html" 2>"$T/diff.err" ||
    fail "dcpireport -diff: $(cat "$T/diff.err")"

# the browser: the probe (skip when chromium cannot run here), the three pages' DOMs
# (r.dom, xz.dom, diff.dom), the interaction checks on r.html, the screenshot
to 300 python3 "$(dirname "${BASH_SOURCE[0]}")/lib/report_ui.py" browser "$T/probe.html" \
    "$BIN/report-screenshot.png" "$T/r.html" "$T/procs.csv" "$T/prof.csv" "long spin<int>(int&, long)" \
    "$T/peek.txt" "$T/traces.txt" "$T/xz.html" "$T/diff.html"
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "browser checks (above)"
for d in r xz diff; do [ -s "$T/$d.dom" ] || { echo "FAIL: no DOM of $d.html"; exit 1; }; done
mv "$T/r.dom" "$T/dom.html"

grep -q '<html lang="en" data-state="rendered" data-ms="[0-9]*">' "$T/dom.html" ||
    fail "the page's script did not finish: $(grep -o '<html[^>]*>' "$T/dom.html")"
errs=$(grep -o '<div id="errors"[^>]*>.\{0,400\}' "$T/dom.html" | head -1)
case "$errs" in
'<div id="errors" hidden=""></div>'*) ;;
*) fail "errors in the page: $errs" ;;
esac

# procedure rows: dcpiprof's counts (row attributes data-count then data-name; text cells)
dom_count() { grep -o "<tr class=\"prow\" data-count=\"[0-9]*\" data-name=\"$1\"" "$T/dom.html" | head -1 | grep -o 'count="[0-9]*' | tr -dc 0-9; }
for p in hot_mul hot_add hot_xor; do
    want=$(awk -F, -v p="$p" '$6 == p {print $1}' "$T/prof.csv")
    got=$(dom_count "$p")
    [ -n "$want" ] && [ "$got" = "$want" ] || fail "$p: page ${got:-none}, dcpiprof ${want:-none}"
    echo "$p: $got samples (dcpiprof $want)"
done
want=$(grep -F '"long spin<int>(int&, long)"' "$T/prof.csv" | cut -d, -f1)
row=$(grep -o '<tr class="prow" data-count="[0-9]*"[^>]*>\(<td[^>]*>[^<]*</td>\)*<td class="proc"><a[^>]*>long spin&lt;int&gt;(int&amp;, long)</a>' "$T/dom.html" | head -1)
got=$(grep -o 'data-count="[0-9]*' <<<"$row" | tr -dc 0-9)
[ -n "$want" ] && [ "$got" = "$want" ] || fail "spin<int>: page ${got:-none} (row: ${row:0:200}), dcpiprof ${want:-none}"

# flame graph frames
frames() { grep -o "<div class=\"fr[^\"]*\"[^>]*data-name=\"$1\" data-count=\"[0-9]*\"" "$T/dom.html" | grep -o 'data-count="[0-9]*' | tr -dc '0-9\n'; }
for p in main hot_mul hot_add hot_xor lea_loop; do
    [ -n "$(frames "$p")" ] || fail "no flame graph frame for $p"
done
sum=$(frames hot_mul | awk '{s += $1} END {print s + 0}')
children=$(awk -F, '$6 == "hot_mul" {print $4}' "$T/prof.csv")
[ "$sum" = "$children" ] || fail "hot_mul frames sum to $sum, dcpiprof children $children"
all=$(frames all | head -1)
stacktotal=$(grep -o '"flame":{"event":"cpu-clock","total":[0-9]*' "$T/data.json" | grep -o '[0-9]*$')
[ -n "$all" ] && [ "$all" = "$stacktotal" ] || fail "root frame ${all:-none}, stack total ${stacktotal:-none}"
echo "flame graph: root $all samples, hot_mul frames $sum (dcpiprof children $children)"

# listings: hot_mul's total line, the lea's hotlist as dcpilist prints it
tot=$(grep '^total ' "$T/mul.list")
grep -qF "<pre class=\"totals\">$tot" "$T/dom.html" || fail "no listing total '$tot' in the page"
line=$(grep -E '^ *[0-9]+ +0x[0-9a-f]+ +lea [a-z0-9]+, \[[a-z0-9]+\+[a-z0-9]+\*1\] ' "$T/lea.list" | head -1)
addr=$(awk '{print $2}' <<<"$line")
text=$(sed -E 's/.* [0-9]+ +[0-9.]+ +[0-9]+  (.*)  \+-.*/\1/' <<<"$line")
vtot=$(sed -E 's/.*\] +([0-9]+) +[0-9.]+ +[0-9]+  .*/\1/' <<<"$line")
if [ -z "$line" ]; then
    fail "no hotlist for lea_loop's lea in dcpilist: $(cat "$T/lea.list")"
elif [ "${vtot:-0}" -lt 30 ]; then
    echo "lea hotlist check not run: only ${vtot:-0} value samples ($line)"
else
    cell=$(grep -o "<tr class=\"insn\" data-addr=\"$addr\">.\{0,400\}" "$T/dom.html" | grep -o '<td class="hot">[^<]*' | head -1)
    [ "${cell#<td class=\"hot\">}" = "$text" ] || fail "lea at $addr: page '${cell#<td class=\"hot\">}', dcpilist '$text'"
    grep -qE '^[a-z0-9]+: \([0-9.]+% 0x7\)' <<<"$text" || fail "lea hotlist does not start with 0x7: $text"
    echo "lea $addr hotlist ($vtot value samples): $text"
fi

[ -s "$BIN/report-screenshot.png" ] && [ "$(head -c 4 "$BIN/report-screenshot.png" | tail -c 3)" = PNG ] ||
    fail "no screenshot"
echo "screenshot: $BIN/report-screenshot.png"

grep -q '<html lang="en" data-state="rendered" data-ms="[0-9]*">' "$T/xz.dom" || fail "xz page not rendered"
grep -q '<div id="errors" hidden=""></div>' "$T/xz.dom" || fail "xz page errors: $(grep -o '<div id="errors".\{0,300\}' "$T/xz.dom")"
grep -q '<p class="note none">the epoch has no stack profile' "$T/xz.dom" || fail "xz page does not say it has no stack profile"
read -r n name <<<"$(awk -F, 'NR == 2 {print $1, $4}' "$T/xz.csv")"
grep -qF "<tr class=\"prow\" data-count=\"$n\" data-name=\"$name\"" "$T/xz.dom" || fail "xz: top row $name ($n) not in the page"
echo "xz: top procedure $name $n samples"
grep -q '<div id="errors" hidden=""></div>' "$T/diff.dom" || fail "diff page errors"
a=$(awk -F, '$6 == "hot_mul" {print $1}' "$T/prof.csv")
grep -qF "<tr class=\"drow\"><td class=\"n\">$a</td><td class=\"n\">0</td>" "$T/diff.dom" ||
    fail "diff: no row with A $a, B 0: $(grep -o '<tr class="drow">.\{0,300\}' "$T/diff.dom" | head -2)"
grep -o "<tr class=\"drow\"><td class=\"n\">$a</td>.\{0,400\}" "$T/diff.dom" | sed "s|</tr>.*||" | grep -q '<td>hot_mul</td>' || fail "diff: the row of A $a is not hot_mul's"

[ "$fails" -eq 0 ] || exit 1
echo "PASS"
