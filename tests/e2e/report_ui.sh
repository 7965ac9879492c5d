#!/bin/bash
# report_ui.sh - dcpireport's page used by interaction in headless Chromium (tests/e2e/lib/
# report_ui.py through the DevTools protocol: real mouse clicks and key presses), on a profile
# that needs no sampling: bench/gen_bigprof's program of 60 functions (gcc -O1 -g) and an epoch
# of 20,000 samples with a stack profile (chains leaf -> f<k/2> -> ... -> main, so callers and
# callees differ from procedure to procedure). Checked in the browser:
#   - clicking the cpu-clock, children and procedure headers of the procedure table sorts its
#     rows by that column (compared with dcpiprof -csl's values), a second click reverses them;
#   - the caller/callee view of f3 (found by typing "f3" in its search box) and of f6 (by the
#     link in f6's procedure row) has the callers, callees, self samples and samples in chains
#     that `go tool pprof -peek` gives for the same epoch exported by dcpiexport -format pprof;
#     expanding caller f1 shows f1's callers and expanding callee f6 its callees, as pprof -peek
#     lists them, and a second click folds them again;
#   - f0's listing has source rows while big.c is readable; with big.c gone, it has no source
#     row, every instruction of dcpilist -asm f0, and notes that say why (as dcpilist -best
#     falls back to the instructions);
#   - a procedure of 960 instructions with samples on 4 (gen_bigprof over a generated long f0):
#     its table draws those 4 and 3 instructions around each, rows that count the others, and a
#     button that shows every instruction of dcpilist -asm f0 (and folds them again);
#   - f0's instructions sorted by samples, then by address, by clicks on their headers;
#   - no script error, no debug text, no horizontal scrolling at 1000 and 760 px.
# Skips (77) when chromium cannot start here (as report_browser.sh).
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting reportui
for f in dcpiprof dcpilist dcpireport dcpiexport bench/gen_bigprof; do
    [ -x "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_require chromium chromium
e2e_require python3 python3
e2e_require gcc build-essential
e2e_require go golang-go
echo '<html><body><div id="x">a</div><script>document.getElementById("x").textContent="ran"</script></body></html>' >"$T/probe.html"
timeout -k 5 120 chromium --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/probe" \
    --dump-dom "file://$T/probe.html" >"$T/probe.dom" 2>"$T/probe.err"
grep -q '<div id="x">ran</div>' "$T/probe.dom" ||
    e2e_skip "chromium cannot run here: $(grep -v dbus "$T/probe.err" | tail -3)"

"$BIN/bench/gen_bigprof" src 60 >"$T/big.c"
gcc -O1 -g -o "$T/big" "$T/big.c" || { echo "FAIL: gcc"; exit 1; }
"$BIN/bench/gen_bigprof" db "$T/db" "$T/big" 20000 5 >/dev/null || { echo "FAIL: gen_bigprof"; exit 1; }
"$BIN/dcpiprof" -db "$T/db" -csl >"$T/prof.csv" 2>"$T/prof.err" || { echo "FAIL: dcpiprof: $(cat "$T/prof.err")"; exit 1; }
"$BIN/dcpiexport" -db "$T/db" -format pprof -o "$T/p.pb.gz" 2>"$T/exp.err" || { echo "FAIL: dcpiexport: $(cat "$T/exp.err")"; exit 1; }
go tool pprof -sample_index=0 -nodefraction=0 -edgefraction=0 -nodecount=0 \
    -peek '^(f1|f3|f6|f7)$' "$T/p.pb.gz" >"$T/peek.txt" 2>"$T/peek.err" ||
    { echo "FAIL: go tool pprof -peek: $(tail -3 "$T/peek.err")"; exit 1; }
"$BIN/dcpilist" -db "$T/db" -asm f0 "$T/big" >"$T/f0.asm" 2>&1 || { echo "FAIL: dcpilist: $(cat "$T/f0.asm")"; exit 1; }
"$BIN/dcpireport" -db "$T/db" -o "$T/r.html" 2>"$T/rep.err" || { echo "FAIL: dcpireport: $(cat "$T/rep.err")"; exit 1; }
mv "$T/big.c" "$T/big.c.gone"
"$BIN/dcpireport" -db "$T/db" -o "$T/nosrc.html" 2>"$T/rep.err" || { echo "FAIL: dcpireport: $(cat "$T/rep.err")"; exit 1; }
echo "pages: $(wc -c <"$T/r.html") and $(wc -c <"$T/nosrc.html") bytes"

timeout -k 5 240 python3 "$(dirname "${BASH_SOURCE[0]}")/lib/report_ui.py" synth "$T/r.html" "$T/nosrc.html" \
    "$T/prof.csv" "$T/peek.txt" "$T/f0.asm" f0 || fail "interaction checks (above)"

# a long procedure (960 instructions) with samples on 4 of them: folded to those and their
# neighbours, the rest behind a button
{
    echo 'volatile long v;'
    echo '__attribute__((noinline)) void f0(void) {'
    for i in $(seq 0 119); do echo "    v += $i; v ^= v >> $((i % 7 + 1));"; done
    echo '}'
    echo '__attribute__((noinline)) void f1(void) { v += 2; }'
    echo 'int main(void) { f0(); f1(); return 0; }'
} >"$T/long.c"
gcc -O1 -g -o "$T/long" "$T/long.c" || { echo "FAIL: gcc long.c"; exit 1; }
"$BIN/bench/gen_bigprof" db "$T/db2" "$T/long" 5000 0 >/dev/null || { echo "FAIL: gen_bigprof long"; exit 1; }
"$BIN/dcpilist" -db "$T/db2" -asm f0 "$T/long" >"$T/long.asm" 2>&1 || { echo "FAIL: dcpilist: $(cat "$T/long.asm")"; exit 1; }
"$BIN/dcpireport" -db "$T/db2" -o "$T/long.html" 2>"$T/rep.err" || { echo "FAIL: dcpireport: $(cat "$T/rep.err")"; exit 1; }
timeout -k 5 240 python3 "$(dirname "${BASH_SOURCE[0]}")/lib/report_ui.py" fold "$T/long.html" "$T/long.asm" f0 ||
    fail "interaction checks (above)"
[ "$fails" -eq 0 ] || exit 1
echo "PASS"
