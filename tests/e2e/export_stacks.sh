#!/bin/bash
# e2e: stack profiles in dcpiprof and dcpiexport. bench/gen_bigprof writes an epoch with PC
# samples and a stack profile (chains leaf -> f<k/2> -> ... -> main) over a generated program;
# dcpiprof's children column must equal google-pprof's cumulative counts of the exported
# gperftools file (and its flat counts the self column), and gprof's call graph of the exported
# gmon.out must call each function as many times as dcpiprof's children column says (dcpi's
# arcs count samples through the arc). The epoch copied under a second name: -epoch all gives
# twice the counts, children and exported chains.
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting exps
e2e_require gcc build-essential
e2e_require google-pprof google-perftools
e2e_require gprof binutils
[ -x "$B/bench/gen_bigprof" ] || { echo "FAIL: $B/bench/gen_bigprof not built (the build makes bench/)"; exit 1; }

"$B/bench/gen_bigprof" src 60 >"$T/big.c"
gcc -O1 -g -o "$T/big" "$T/big.c"
"$B/bench/gen_bigprof" db "$T/db" "$T/big" 20000 5 >/dev/null || { echo "FAIL: gen_bigprof"; exit 1; }
ls "$T"/db/*/bench/stacks/cpu-clock.stk >/dev/null || fail "no stack file"

"$B/dcpiprof" -db "$T/db" -csl >"$T/dcpi.csv" || fail "dcpiprof failed"
head -1 "$T/dcpi.csv" | grep -q '^cpu-clock,cpu-clock%,cpu-clockcum%,children,children%,' ||
    fail "no children column: $(head -1 "$T/dcpi.csv")"
main_children=$(awk -F, '$6 == "main" {print $4}' "$T/dcpi.csv")
[ "$main_children" = 20000 ] || fail "main: children ${main_children:-none}, want 20000"

"$B/dcpiexport" -db "$T/db" -format gperftools -o "$T/out.prof" || fail "dcpiexport gperftools"
google-pprof --text --cum "$T/big" "$T/out.prof" >"$T/pprof.txt" 2>/dev/null ||
    fail "google-pprof failed"
total=$(awk '/^Total:/ {print $2}' "$T/pprof.txt")
[ "$total" = 20000 ] || fail "pprof total ${total:-none}"
checked=0
while IFS=, read -r self _ _ children _ proc _; do
    [ "$proc" = procedure ] && continue
    p=$(awk -v f="$proc" '$6 == f {print $1, $4}' "$T/pprof.txt")
    [ "$p" = "$self $children" ] || fail "$proc: pprof flat/cum '${p:-none}', dcpiprof $self $children"
    checked=$((checked + 1))
done <"$T/dcpi.csv"
echo "pprof agrees on $checked procedures (self and cumulative)"
[ "$checked" -ge 60 ] || fail "only $checked procedures compared"

"$B/dcpiexport" -db "$T/db" -format gmon -o "$T/gmon.out" || fail "dcpiexport gmon"
gprof -b -q "$T/big" "$T/gmon.out" >"$T/graph.txt" 2>/dev/null || fail "gprof -q failed"
n=0
for f in f1 f2 f3 f7 f20 f59; do
    called=$(awk -v f="$f" '/^\[[0-9]+\]/ && $(NF-1) == f {print $(NF-2)}' "$T/graph.txt")
    want=$(awk -F, -v f="$f" '$6 == f {print $4}' "$T/dcpi.csv")
    [ -n "$want" ] && [ "$called" = "$want" ] || fail "$f: gprof called ${called:-none}, dcpiprof children ${want:-none}"
    n=$((n + 1))
done
echo "gprof call counts agree on $n functions"

# several epochs (issue 23 item 2): the epoch copied under a later name; -epoch all doubles every
# count, the children column (stacks merged) and the exported chains
E=$(ls "$T/db" | grep -Ex "[0-9]{12,14}" | head -1)
cp -r "$T/db/$E" "$T/db/$((E + 1))"
"$B/dcpiprof" -db "$T/db" -epoch all -csl >"$T/all.csv" || fail "dcpiprof -epoch all failed"
[ "$(awk -F, '$6 == "main" {print $4}' "$T/all.csv")" = 40000 ] || fail "-epoch all: main's children are not 2 x 20000"
"$B/dcpiexport" -db "$T/db" -epoch all -format gperftools -o "$T/all.prof" || fail "dcpiexport -epoch all"
google-pprof --text --cum "$T/big" "$T/all.prof" >"$T/allp.txt" 2>/dev/null || fail "google-pprof (all) failed"
[ "$(awk '/^Total:/ {print $2}' "$T/allp.txt")" = 40000 ] || fail "-epoch all: pprof total $(grep Total: "$T/allp.txt")"
n=0
while IFS=, read -r self _ _ children _ proc _; do
    [ "$proc" = procedure ] && continue
    p=$(awk -v f="$proc" '$6 == f {print $1, $4}' "$T/allp.txt")
    w=$(awk -F, -v f="$proc" '$6 == f {print 2 * $1, 2 * $4}' "$T/dcpi.csv")
    [ "$p" = "$self $children" ] && [ "$p" = "$w" ] || fail "-epoch all: $proc: pprof '$p', dcpiprof '$self $children', 2 x one epoch '$w'"
    n=$((n + 1))
done <"$T/all.csv"
[ "$n" -ge 60 ] || fail "-epoch all: only $n procedures compared"
[ "$fails" -eq 0 ] && echo "PASS" || exit 1
