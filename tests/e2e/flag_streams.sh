#!/bin/bash
# e2e: the streams of dcpi(7). dcpid's -log - and -log /dev/stderr put the log on standard error
# (no log file in the database), in command mode; -o - (and --output=-) of dcpicalc, dcpireport
# and dcpiexport writes to standard output exactly what -o FILE writes into FILE, and no file
# named "-" appears. Skips (77) where perf_event cannot sample cpu-clock.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
BIN=${DCPI_BIN:?}
e2e_counting streams
to() { timeout -k 5 "$@"; }
W=$BIN/samples/work-calc
[ -x "$W" ] || {
    echo "FAIL: $W not built"
    exit 1
}
e2e_probe_cpu_clock "sampling cpu-clock"
cd "$T" || exit 1

# ---- -log - and -log /dev/stderr: the log on stderr, no log file ----
DB=$T/db
for log in - /dev/stderr; do
    rm -rf "$DB"
    to 60 "$BIN/dcpid" -db "$DB" -e cpu-clock -log "$log" -- "$W" 300 >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 0 ] || fail "dcpid -log $log -- work-calc: exit $rc: $(head -c 300 "$T/err")"
    grep -q "dcpid\[[0-9]*\] info: dcpid ready: db $DB" "$T/err" ||
        fail "dcpid -log $log: no log line on stderr: $(head -c 300 "$T/err")"
    ls "$DB"/dcpid-*.log >/dev/null 2>&1 && fail "dcpid -log $log: a log file was written too"
    grep -q "^calls " "$T/out" || fail "dcpid -log $log: the command's output is missing"
done
[ -e "$T/-" ] && fail "a file named '-' was written"

# ---- -o -: what -o FILE writes ----
same() { # NAME FILE-WRITTEN-BY--o-FILE STDOUT-OF--o-
    if cmp -s "$2" "$3" && [ -s "$2" ]; then
        echo "ok: $1: -o - writes the $(wc -c <"$2") bytes -o FILE writes"
    else
        fail "$1: -o - and -o FILE differ ($(wc -c <"$2") and $(wc -c <"$3") bytes)"
    fi
}
"$BIN/dcpicalc" -db "$DB" -o "$T/calc.txt" calc_loop "$W" || fail "dcpicalc -o FILE"
"$BIN/dcpicalc" -db "$DB" -o - calc_loop "$W" >"$T/calc.out" || fail "dcpicalc -o -"
same "dcpicalc" "$T/calc.txt" "$T/calc.out"
"$BIN/dcpicalc" -db "$DB" --output=- -dot calc_loop "$W" >"$T/calc.dot" || fail "dcpicalc --output=-"
head -1 "$T/calc.dot" | grep -q '^digraph' || fail "dcpicalc --output=- -dot: no dot on stdout"
"$BIN/dcpireport" -db "$DB" -top 1 -o "$T/r.html" || fail "dcpireport -o FILE"
"$BIN/dcpireport" -db "$DB" -top 1 --output - >"$T/r.out" || fail "dcpireport --output -"
same "dcpireport" "$T/r.html" "$T/r.out"
for fmt in gperftools pprof gmon; do
    "$BIN/dcpiexport" -db "$DB" -format $fmt -o "$T/x.$fmt" work-calc || fail "dcpiexport $fmt -o FILE"
    "$BIN/dcpiexport" -db "$DB" -format $fmt -o - work-calc >"$T/x.$fmt.out" ||
        fail "dcpiexport $fmt -o -"
    same "dcpiexport -format $fmt" "$T/x.$fmt" "$T/x.$fmt.out"
done
[ -e "$T/-" ] && fail "a file named '-' was written"

[ "$fails" -eq 0 ] || exit 1
echo PASS
