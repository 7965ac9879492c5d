#!/bin/bash
# topcov.sh - dcpitopcounts, dcpicoverage and dcpiprof's -m / -full_output on workloads whose
# answer is known by construction (samples/work-cover.c):
#   - work-cover a: cover_me runs 9 iterations of its loop LOOP_A for every iteration of warm's,
#     and the two loops are the same instructions (imul, add, add, cmp, jne: one dependent
#     multiply-add each), so cover_me holds about 90% of the two procedures' samples: exactly, the
#     share of CPU time work-cover measured around its calls and printed (binomial check);
#     dcpitopcounts' top instruction lies in cover_me, its rows of cover_me sum exactly to
#     dcpiprof's cover_me count, all rows to the event's total, and kernel rows have no text ("-");
#   - dcpicoverage of cover_me over the mode-a epoch: the COLD lines (never run) and LOOP_B's
#     (not run in that mode) are never sampled, one of LOOP_A's lines is; over both epochs
#     (-epochs all, or -epoch twice) one of LOOP_B's lines is too, the COLD lines still are not;
#   - dcpiprof -m: a binary moved after profiling and no cached symbols: unknown_rou without the
#     map, cover_me with it (same count); -full_output ignores -keep;
#   - a Debian program (xz -9 on a generated file): dcpitopcounts' top instruction belongs to
#     dcpiprof's top procedure, or differs from that procedure's best instruction by no more
#     than binomial noise.
# Skips (77) without cpu-clock sampling.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
SRC=${DCPI_SRC:?DCPI_SRC not set}
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
e2e_counting topcov
W=$BIN/samples/work-cover
S=$SRC/samples/work-cover.c
[ -x "$W" ] || { echo "FAIL: $W not built"; exit 1; }
e2e_probe_cpu_clock "perf_event_open for cpu-clock"

# the two epochs (modes a and b), redone twice and four times as long until mode a's cover_me +
# warm have 1000 samples (lib/stats.sh stat_until; 2.5 s at ~1 sample per ms of CPU; the
# workload's rounds are of random length, so that cpu-clock's fixed period cannot keep step with
# them: see samples/work-cover.c); mode b's epoch only needs one of LOOP_B's lines sampled
# (hundreds of samples there)
run() {
    rm -rf "$T/db"
    to 300 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$W" a $(($(stat_ms 2500) * $1)) >"$T/out.a" 2>"$T/err.a" ||
        { fail "dcpid (mode a): $(tail -1 "$T/err.a")"; return 1; }
    e2e_after_epoch "$T/db" # a new epoch name (lib/common.sh)
    to 300 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$W" b $(($(stat_ms 400) * $1)) >/dev/null 2>"$T/err.b" ||
        { fail "dcpid (mode b): $(tail -1 "$T/err.b")"; return 1; }
}
count() {
    "$BIN/dcpiprof" -db "$T/db" -epoch latest-1 -csl 2>/dev/null |
        awk -F, '($4 == "cover_me" || $4 == "warm") && $5 ~ /work-cover$/ { n += $1 } END { print n + 0 }'
}
stat_until 1000 4 run count || exit 1
[ "$(ls -d "$T"/db/[0-9]* | wc -l)" = 2 ] || fail "two runs did not make two epochs: $(ls "$T/db")"

# ---- dcpitopcounts on the mode-a epoch
A="-db $T/db -epoch latest-1"
"$BIN/dcpiprof" $A -csl >"$T/prof.csv" || fail "dcpiprof failed"
# CSV fields in quotes (instruction texts with commas) become Q, so that awk -F, splits right
unquote() { sed -E 's/"([^"]|"")*"/Q/g'; }
"$BIN/dcpitopcounts" $A -n 0 -csl 2>"$T/top.err" | unquote >"$T/top.csv" || fail "dcpitopcounts: $(cat "$T/top.err")"
total=$(awk -F, 'NR > 1 { n += $1 } END { print n + 0 }' "$T/prof.csv")
pc=$(awk -F, '$4 == "cover_me" && $5 ~ /work-cover$/ { print $1 }' "$T/prof.csv")
pw=$(awk -F, '$4 == "warm" && $5 ~ /work-cover$/ { print $1 }' "$T/prof.csv")
tc=$(awk -F, 'NR > 1 && $4 == "cover_me" { n += $1 } END { print n + 0 }' "$T/top.csv")
tall=$(awk -F, 'NR > 1 { n += $1 } END { print n + 0 }' "$T/top.csv")
[ "$tc" = "$pc" ] || fail "cover_me's rows sum to $tc samples, dcpiprof says $pc"
[ "$tall" = "$total" ] || fail "all rows sum to $tall samples, dcpiprof's total is $total"
top=$(awk -F, 'NR == 2' "$T/top.csv")
[ "$(cut -d, -f4 <<<"$top")" = cover_me ] || fail "top instruction not in cover_me: $top"
la=$(grep -n '/\* LOOP_A \*/' "$S" | cut -d: -f1 | paste -sd'|')
grep -Eq "work-cover\.c:($la)\$" <<<"$top" || fail "top instruction not on LOOP_A's lines ($la): $top"
[ "$(cut -d, -f6 <<<"$top")" != - ] || fail "top instruction has no text: $top"
awk -F, 'NR > 1 && $7 == "[kernel.kallsyms]" && $6 != "-"' "$T/top.csv" | grep -q . &&
    fail "kernel rows with instruction text: $(awk -F, '$7 == "[kernel.kallsyms]"' "$T/top.csv" | head -2)"
p1=$(awk -F, 'NR == 2 { printf "%.2f", 100 * $1 / t }' t="$total" "$T/top.csv")
[ "$(cut -d, -f2 <<<"$top")" = "$p1" ] || fail "top row's % $(cut -d, -f2 <<<"$top"), count/total $p1"
if stat_min "cover_me + warm" "$((pc + pw))" 1000; then
    share=$(awk -v a="$pc" -v b="$pw" 'BEGIN { printf "%.2f", 100 * a / (a + b) }')
    # the truth is the share of CPU time work-cover measured itself (about 90%: nine times the
    # iterations, but per-iteration costs differ by CPU and build)
    truth=$(sed -n 's/^work-cover: cover_me \([0-9.]*\)% of cover_me + warm CPU time.*/\1/p' "$T/out.a")
    [ -n "$truth" ] || fail "work-cover printed no CPU time shares: $(cat "$T/out.a")"
    stat_share "cover_me of cover_me + warm" "$share" "${truth:-90}" "$((pc + pw))" || fail "cover_me share"
else
    fail "too few samples"
fi
"$BIN/dcpitopcounts" $A -n 3 >"$T/top.txt" || fail "dcpitopcounts (table) failed"
[ "$(wc -l <"$T/top.txt")" = 4 ] || fail "-n 3 printed $(wc -l <"$T/top.txt") lines: $(cat "$T/top.txt")"
head -1 "$T/top.txt" | grep -Eq '^ *cpu-clock +% +cum% +procedure +pc +instruction +image +source$' ||
    fail "table header: $(head -1 "$T/top.txt")"
# the profiles' period, as dcpiprof's summary prints it (dcpid's default is not a round number)
period=$("$BIN/dcpiprof" $A | awk '$1 == "cpu-clock" && NF == 4 {print $3; exit}')
"$BIN/dcpitopcounts" $A -n 1 -period -csl | unquote | awk -F, -v c="$(cut -d, -f1 <<<"$top")" \
    -v p="$period" 'NR == 2 && $1 != c * p { exit 1 }' || fail "-period: not samples x $period"

# ---- dcpicoverage
lines_of() { grep -n "/\* $1 \*/" "$S" | cut -d: -f1 | tr '\n' ' '; }
never() { # CSV LINE: 0 when LINE lies in a never-sampled line range
    awk -F, -v l="$2" '$1 == "lines" && $12 ~ /work-cover\.c$/ && l >= $13 && l <= $14 { f = 1 } END { exit !f }' "$1"
}
check_cov() { # CSV WHAT MARK want(never|some)
    local l hit=0 all=1
    for l in $(lines_of "$3"); do
        if never "$1" "$l"; then hit=$hit; else hit=1; all=0; fi
    done
    [ "$4" = never ] && [ $all = 1 ] && return 0
    [ "$4" = some ] && [ $hit = 1 ] && return 0
    fail "$2: $3 lines ($(lines_of "$3")) should be $4 sampled: $(grep '^lines' "$1" | tr '\n' ' ')"
}
"$BIN/dcpicoverage" $A -csl cover_me work-cover >"$T/cov.a" 2>"$T/cov.err" || fail "dcpicoverage: $(cat "$T/cov.err")"
check_cov "$T/cov.a" "mode a" COLD never
check_cov "$T/cov.a" "mode a" LOOP_B never
check_cov "$T/cov.a" "mode a" LOOP_A some
samples_a=$(awk -F, '$1 == "proc" { print $3 }' "$T/cov.a")
[ "$samples_a" = "$pc" ] || fail "dcpicoverage counts $samples_a samples in cover_me, dcpiprof $pc"
"$BIN/dcpicoverage" -db "$T/db" -epochs all -csl cover_me work-cover >"$T/cov.all" || fail "-epochs all failed"
check_cov "$T/cov.all" "both epochs" COLD never
check_cov "$T/cov.all" "both epochs" LOOP_B some
check_cov "$T/cov.all" "both epochs" LOOP_A some
"$BIN/dcpicoverage" -db "$T/db" -epoch latest -epoch latest-1 -csl cover_me work-cover >"$T/cov.two" ||
    fail "-epoch twice failed"
cmp -s "$T/cov.all" "$T/cov.two" || fail "-epoch twice differs from -epochs all"
"$BIN/dcpicoverage" $A cover_me work-cover >"$T/cov.txt" || fail "dcpicoverage (table) failed"
# -comm: only work-cover ran the image, so its coverage is the whole coverage; another name has none
"$BIN/dcpicoverage" $A -comm work-cover -csl cover_me work-cover >"$T/cov.comm" ||
    fail "dcpicoverage -comm work-cover failed"
cmp -s "$T/cov.a" "$T/cov.comm" || fail "-comm work-cover differs: $(diff "$T/cov.a" "$T/cov.comm" | head -4)"
"$BIN/dcpicoverage" -db "$T/db" -epochs all -comm work-cover -csl cover_me work-cover >/dev/null ||
    fail "dcpicoverage -epochs all -comm work-cover failed"
grep -q '^note: this is sampling coverage, not execution coverage' "$T/cov.txt" || fail "no note: $(cat "$T/cov.txt")"
grep -Eq "^ +$pc +[0-9]+/[0-9]+ " "$T/cov.txt" || fail "no cover_me row with $pc samples: $(cat "$T/cov.txt")"
"$BIN/dcpicoverage" $A -summary work-cover | grep -Eq ' cover_me$' || fail "whole image: no cover_me row"

# ---- errors: one line, exit 2 for usage, 1 otherwise
err_is() { # RC WANT CMD...: exit status and one line on stderr
    local want=$1 re=$2 out rc
    shift 2
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = "$want" ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -Eq "$re" <<<"$out" ||
        fail "$*: exit $rc (want $want), stderr '$out'"
}
err_is 2 '^dcpitopcounts: -n wants' "$BIN/dcpitopcounts" $A -n x
err_is 2 '^dcpicoverage: give an image' "$BIN/dcpicoverage" $A
err_is 1 "^dcpicoverage: no procedure 'nosuch' in " "$BIN/dcpicoverage" $A nosuch work-cover
err_is 1 "^dcpicoverage: no samples of process named nosuch in epoch" "$BIN/dcpicoverage" -db "$T/db" \
    -epochs all -comm nosuch cover_me work-cover
err_is 2 "^dcpicoverage: flag '-epochs' needs an argument" "$BIN/dcpicoverage" -db "$T/db" work-cover -epochs

# ---- dcpiprof -m with a moved binary, -full_output
cp "$W" "$T/prog"
# (its samples only need to be named: 300 ms give ~300)
to 120 "$BIN/dcpid" -db "$T/db2" -event cpu-clock -- "$T/prog" a 300 >/dev/null 2>&1 || fail "dcpid (prog) failed"
mkdir "$T/moved" && mv "$T/prog" "$T/moved/prog" && rm -rf "$T/db2/.symcache"
unk=$("$BIN/dcpiprof" -db "$T/db2" -csl 2>/dev/null | awk -F, -v p="$T/prog" '$4 == "unknown_rou" && $5 == p { print $1 }')
[ -n "$unk" ] || fail "moved binary: no unknown_rou row without a map"
id=$(readelf -n "$T/moved/prog" | awk '/Build ID/ { print $3 }')
printf '# moved\n%s %s\n' "$id" "$T/moved/prog" >"$T/map"
"$BIN/dcpiprof" -db "$T/db2" -m "$T/map" -csl >"$T/mprof.csv" 2>"$T/m.err" || fail "dcpiprof -m: $(cat "$T/m.err")"
[ ! -s "$T/m.err" ] || fail "dcpiprof -m warned: $(cat "$T/m.err")"
mc=$(awk -F, -v p="$T/prog" '$4 != "unknown_rou" && $5 == p { n += $1 } END { print n + 0 }' "$T/mprof.csv")
mw=$(awk -F, -v p="$T/prog" '$4 == "cover_me" && $5 == p { print $1 }' "$T/mprof.csv")
[ "$mc" = "$unk" ] && [ "${mw:-0}" -gt 0 ] ||
    fail "-m: named rows sum to $mc (cover_me ${mw:-none}), unknown_rou was $unk"
"$BIN/dcpitopcounts" -db "$T/db2" -m "$T/map" -n 1 -csl | unquote | awk -F, 'NR == 2' >"$T/mtop"
grep -Eq '^[0-9]+,[0-9.]+,[0-9.]+,cover_me,0x[0-9a-f]+,[^-][^,]*,[^,]*,.*work-cover\.c:[0-9]+$' "$T/mtop" ||
    fail "dcpitopcounts -m: $(cat "$T/mtop")"
echo "zz /x" >"$T/badmap"
err_is 1 "^dcpiprof: $T/badmap:1: the image id must be hex digits$" "$BIN/dcpiprof" -db "$T/db2" -m "$T/badmap"
n_all=$("$BIN/dcpiprof" -db "$T/db2" -no_header 2>/dev/null | wc -l)
n_keep=$("$BIN/dcpiprof" -db "$T/db2" -no_header -keep 1 2>/dev/null | wc -l)
n_full=$("$BIN/dcpiprof" -db "$T/db2" -no_header -keep 1 -full_output 2>/dev/null | wc -l)
[ "$n_keep" = 2 ] && [ "$n_full" = "$n_all" ] ||
    fail "-keep 1: $n_keep lines (want 2), with -full_output $n_full (want all $n_all)"

# ---- a Debian program
if command -v xz >/dev/null; then
    # 150,000 generated lines (xz -9: about 1.5 s of CPU, ~1500 samples; its time grows faster
    # than the input: 100,000 give ~600, enough for quick's 250), twice and four times as many
    # until the run has 1000 samples
    XZ_LINES=150000
    [ "$STAT_QUICK" = 1 ] && XZ_LINES=100000
    xrun() {
        seq 1 $((XZ_LINES * $1)) | awk '{ print $1 * 7919 % 1000003, $1 }' >"$T/gen.txt"
        rm -rf "$T/dbx"
        to 300 "$BIN/dcpid" -db "$T/dbx" -event cpu-clock -- xz -9 -T1 -c "$T/gen.txt" >/dev/null 2>"$T/xz.err" ||
            { fail "dcpid xz: $(tail -1 "$T/xz.err")"; return 1; }
        "$BIN/dcpiprof" -db "$T/dbx" -csl >"$T/xprof.csv"
    }
    xcount() { awk -F, 'NR > 1 { n += $1 } END { print n + 0 }' "$T/xprof.csv"; }
    stat_until 1000 4 xrun xcount
    "$BIN/dcpitopcounts" -db "$T/dbx" -n 0 -csl | unquote >"$T/xtop.csv" || fail "dcpitopcounts (xz) failed"
    tproc=$(awk -F, 'NR == 2 { print $4 "|" $5 }' "$T/xprof.csv")
    t1=$(awk -F, 'NR == 2 { print $4 "|" $7 "|" $1 }' "$T/xtop.csv")
    best=$(awk -F, -v k="$tproc" 'NR > 1 && $4 "|" $7 == k { print $1; exit }' "$T/xtop.csv")
    stat_min "xz" "$(awk -F, 'NR > 1 { n += $1 } END { print n + 0 }' "$T/xprof.csv")" 1000 || fail "xz: too few samples"
    if [ "${t1%|*}" = "$tproc" ]; then
        echo "ok: xz: top instruction ($t1) in dcpiprof's top procedure"
    else # the margin: two counts within z * sqrt(a + b) of each other are a tie within noise
        c1=${t1##*|}
        awk -v a="$c1" -v b="${best:-0}" -v z="$STAT_Z" 'BEGIN { exit !(a - b <= z * sqrt(a + b)) }' ||
            fail "xz: top instruction $t1 is outside dcpiprof's top procedure $tproc (its best: ${best:-none})"
        echo "ok: xz: top instruction $t1 ties with $tproc's best ($best) within noise"
    fi
else
    echo "note: xz not installed, the Debian-program part is left out"
fi

[ "$fails" = 0 ] || exit 1
echo "PASS: topcov (cover_me $pc, warm $pw of $total samples)"
