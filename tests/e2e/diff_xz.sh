#!/bin/bash
# diff_xz.sh - dcpidiff on a program from a Debian package: xz -0 against xz -9 on the same
# generated file. By xz's design the presets use different match finders (-0: hash chains,
# -9: binary trees, xz(1) "Custom compressor filter chains"), so some liblzma procedures run in
# one set only. Robust facts asserted: the first row is in liblzma and significant (adjusted
# p < 0.001); among the significant rows are liblzma procedures with samples in only one of the
# sets, both ways. At least 1000 samples in liblzma per set (the runs redone on up to 4 x the
# input until they have them).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
# significance needs the full sample counts (a test of power), also in make test's quick pass
STAT_QUICK=0
e2e_counting diffxz
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
XZ=$(command -v xz) || e2e_skip "xz (xz-utils) is not installed"
D=$BIN/dcpidiff
# run SCALE: both presets on SCALE x 2.5 MB of text (1.7 MB gave 833 samples in a fresh clone's
# make test at stop 32 and was redone); redone on twice and four times as much until each set
# has 1000 liblzma samples (lib/stats.sh stat_until)
run() {
    head -c $((1900000 * $1)) /dev/urandom | base64 >"$T/f" 2>/dev/null || fail "cannot write $T/f"
    for lvl in 0 9; do
        rm -rf "$T/x$lvl"
        to 300 "$BIN/dcpid" -db "$T/x$lvl" -freq 4000 -event cpu-clock -- "$XZ" "-$lvl" -c "$T/f" \
            >/dev/null 2>"$T/err" || { fail "dcpid -- xz -$lvl failed: $(cat "$T/err")"; return 1; }
    done
    "$D" -i -all -csl "$T/x0" "$T/x9" >"$T/img" 2>&1 || { fail "dcpidiff -i: $(cat "$T/img")"; return 1; }
    n0=$(awk -F, '$9 ~ /liblzma/ { s += $1 } END { print s + 0 }' "$T/img")
    n9=$(awk -F, '$9 ~ /liblzma/ { s += $3 } END { print s + 0 }' "$T/img")
}
count() { echo $((n0 < n9 ? n0 : n9)); }
stat_until 1000 4 run count || exit 1
stat_min "liblzma samples of xz -0" "$n0" 1000 || fail "too few samples"
stat_min "liblzma samples of xz -9" "$n9" 1000 || fail "too few samples"
"$D" -csl "$T/x0" "$T/x9" >"$T/d" 2>"$T/err" || fail "dcpidiff: $(cat "$T/err")"
read -r img q < <(awk -F, 'NR == 2 { print $10, $7 }' "$T/d")
case "$img" in *liblzma*) ;; *) fail "first row not in liblzma: $(head -3 "$T/d")" ;; esac
awk -v q="$q" 'BEGIN { exit !(q < 0.001) }' || fail "first row not significant: $(head -3 "$T/d")"
only9=$(awk -F, 'NR > 1 && $10 ~ /liblzma/ && $1 == 0 && $7 < 0.001' "$T/d" | wc -l)
only0=$(awk -F, 'NR > 1 && $10 ~ /liblzma/ && $3 == 0 && $7 < 0.001' "$T/d" | wc -l)
[ "$only9" -ge 1 ] && [ "$only0" -ge 1 ] ||
    fail "expected liblzma procedures run by one preset only (both ways): $only0 and $only9: $(cat "$T/d")"
echo "ok: $n0 and $n9 liblzma samples; first row $(awk -F, 'NR == 2 { print $9, $5 }' "$T/d") points; $only0 procedures only in -0, $only9 only in -9"
[ $fails = 0 ] || exit 1
echo PASS
