#!/bin/bash
# stripped_eh_frame.sh - stripped code gets function boundaries from .eh_frame (issue 13 item 5):
# Debian's xz spends nearly all its time in liblzma, stripped to .dynsym (a hundred exported
# entry points, none of them hot). dcpiprof must name the hot code by function ranges taken from
# .eh_frame_hdr ("liblzma.so.5.4.1+0x15ae0"), not one unknown_rou; dcpilist -asm accepts an
# address inside such a range and lists the whole range. perf, on the same run (dcpid -- perf
# record -- xz: both sample xz at once), gives liblzma the same share of xz's samples, within the
# binomial tolerance (two runs differ by more under load: at stop 36, beside stress-ng and other
# tests, xz's page faults took 20% of one run and 9% of the next); and google-pprof reading
# dcpiexport -format gperftools -symbols names the same top functions.
# Skips (77) without cpu-clock, xz or perf.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-ehframe.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_need xz "xz (xz-utils) is not installed"
e2e_require perf linux-perf
# perf records the same run when it can (else the dcpi checks run alone and the comparison is
# skipped at the end)
perf_cmd=(perf record -q -o "$T/perf.data" -e cpu-clock -F 1000 --)
perf record -q -o "$T/probe.data" -e cpu-clock -F 1000 -- true >/dev/null 2>"$T/perr" || perf_cmd=()
# xz -9 of 2 MB of text (about 1 s of CPU, ~1000 samples in liblzma; a quarter of it in quick
# mode, lib/stats.sh stat_ms, where a quarter of the samples is asked), redone on 2, 4 times as
# much until liblzma has 500 samples (dcpiprof -comm xz: perf's own samples are not xz's)
run() {
    rm -rf "$T/db" "$T/perf.data"
    head -c $((1500 * $(stat_ms 1000) * $1)) /dev/urandom | base64 >"$T/in.txt"
    to 300 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- ${perf_cmd[@]+"${perf_cmd[@]}"} \
        xz -9 -k -c "$T/in.txt" >/dev/null 2>"$T/err" ||
        fail "dcpid -- ${perf_cmd[*]:-} xz failed (rc $?): $(cat "$T/err")"
    "$BIN/dcpiprof" -db "$T/db" -comm xz >"$T/prof" 2>&1 || fail "dcpiprof failed: $(cat "$T/prof")"
}
count() { awk '$5 ~ /liblzma/ {s += $1} END {print s + 0}' "$T/prof"; }
stat_until 500 4 run count || exit 1
lib=$(awk '$5 ~ /liblzma/ {print $5; exit}' "$T/prof")
[ -n "$lib" ] || fail "no liblzma row: $(head -12 "$T/prof")"
base=${lib##*/}
named=$(awk -v l="$lib" -v b="$base" '$5 == l && index($4, b "+0x") == 1 {s += $1} END {print s + 0}' "$T/prof")
unk=$(awk -v l="$lib" '$5 == l && $4 == "unknown_rou" {s += $1} END {print s + 0}' "$T/prof")
all=$(awk -v l="$lib" '$5 == l {s += $1} END {print s + 0}' "$T/prof")
stat_min "liblzma samples" "$all" 500 || fail "too few samples in liblzma"
awk -v n="$named" -v a="$all" 'BEGIN { exit !(n >= 0.9 * a) }' ||
    fail "only $named of $all liblzma samples in .eh_frame ranges ($unk unknown_rou): $(head -12 "$T/prof")"
top=$(awk -v l="$lib" '$5 == l {print $4; exit}' "$T/prof")
addr=$(printf '0x%x' $((${top#*+} + 9)))
"$BIN/dcpilist" -db "$T/db" -asm "$addr" "$lib" >"$T/list" 2>&1 || fail "dcpilist -asm $addr $lib: $(cat "$T/list")"
grep -q "^$top " "$T/list" || fail "dcpilist $addr did not list $top: $(head -3 "$T/list")"

# gperftools export with dcpi's symbols: google-pprof (no binary given) names the same top
# functions with the same counts as dcpiprof (issue 13 item 14: without them it names the
# nearest exported symbol of the stripped library)
e2e_require google-pprof google-perftools
"$BIN/dcpiexport" -db "$T/db" -comm xz -format gperftools -symbols -o "$T/g.prof" || fail "dcpiexport -symbols failed"
head -1 "$T/g.prof" | grep -q '^--- symbol$' || fail "no symbol section"
# (each of dcpiprof's top 3 of liblzma looked up by name in google-pprof's whole table: its top
# rows mix in other images' functions, which outrank liblzma's third in a short run)
google-pprof --text "$T/g.prof" 2>/dev/null | awk 'NF == 6 && $2 ~ /%$/ {print $6, $1}' >"$T/gp.txt"
awk -v l="$lib" '$5 == l {print $4, $1}' "$T/prof" | head -3 >"$T/dp.txt"
awk 'NR == FNR { n[$1] = $2; next } !($1 in n) || n[$1] != $2 { bad = 1 } END { exit bad || FNR < 3 }' \
    "$T/gp.txt" "$T/dp.txt" ||
    fail "google-pprof does not show dcpiprof's top 3 with their counts: $(cat "$T/dp.txt") vs $(head -5 "$T/gp.txt")"

# perf on the same run: liblzma's share of xz's samples
[ ${#perf_cmd[@]} -gt 0 ] || e2e_skip "perf record cannot run here: $(tail -1 "$T/perr")"
perf script -i "$T/perf.data" -F comm,ip,dso 2>/dev/null | awk '$1 == "xz"' >"$T/perf.txt"
pn=$(wc -l <"$T/perf.txt")
pl=$(grep -c liblzma "$T/perf.txt")
stat_min "perf's samples of xz" "$pn" 500 || fail "too few perf samples of xz"
total=$(awk '$1 == "cpu-clock" && NF == 4 {print $2; exit}' "$T/prof")
ours=$(awk -v a="$all" -v t="$total" 'BEGIN {printf "%.2f", 100 * a / t}')
theirs=$(awk -v a="$pl" -v t="$pn" 'BEGIN {printf "%.2f", 100 * a / t}')
stat_same "liblzma share, dcpi vs perf" "$ours" "$total" "$theirs" "$pn" || fail "liblzma share differs"
echo "PASS: $named of $all liblzma samples named by .eh_frame ranges, top $top; share dcpi $ours%, perf $theirs%"
