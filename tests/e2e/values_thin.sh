#!/bin/bash
# values_thin.sh - the bp backend's arm triggers are PC samples kept at random (issue 21; docs/dcpid.md
# BP BACKEND, core/sampling/thin.h): dcpid -vtrace vp-acc -vbp -vrate 250 on samples/work-phased spawn
# (a parent and a child process every ~40 ms, the command mode's inherited events) logs
# "arm triggers are PC samples kept at random (each with probability Q)" and at exit "triggers
# thinned: K of N user PC ticks kept"; K must be Binomial(N, Q): within 5.5 standard deviations
# (a false failure below 1e-7) from at least NMIN ticks (the run is repeated longer until there
# are: lib/stats.sh stat_until). -vrate 250 caps the triggers at 250 per second of a thread's CPU, so Q <= 1/4 on every
# machine, whatever the traps cost there. The children's share of it (that the kernel copies the
# program to inherited events and that a child's triggers come at random offsets from its start)
# is tests/check_thin.c's. Skips (77) without cpu-clock events or execute breakpoints, or when
# dcpid logs fixed-period triggers because BPF is missing (the reason it logs); fixed-period
# triggers for any other reason fail.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-values-thin.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/phased.sh"
NMIN=2000

phased_probe bp

MS=$(stat_ms 2500)
run() { # run SCALE: one run of SCALE x MS of the workload's CPU; its log in $T/log
    rm -rf "$T/db"
    ACC_MNEM=div ACC_VALUE=rcx timeout -k 5 300 "$BIN/dcpid" -db "$T/db" -event cpu-clock \
        -vtrace "$BIN/samples/vp-acc.so" -vbp -vrate 250 -- "$BIN/samples/work-phased" spawn \
        $((MS * $1)) >"$T/out" 2>"$T/err" || fail "dcpid failed: $(cat "$T/err")"
    cat "$T"/db/dcpid-*.log >"$T/log"
    if grep -q "triggers fixed-period" "$T/log"; then
        why=$(grep -o 'arm triggers at a fixed period (.*' "$T/log" | head -1)
        case "$why" in
        *"built without libbpf"* | *"BPF load"* | *"BPF map"*) e2e_skip "no BPF here: $why" ;;
        esac
        fail "triggers not thinned: ${why:-$(cat "$T/log")}"
    fi
}
ticks() { sed -nE 's/.*triggers thinned: [0-9]+ of ([0-9]+) user PC ticks kept.*/\1/p' "$T/log"; }

stat_until "$NMIN" 8 run ticks
n=$(ticks)
[ -n "$n" ] || fail "no 'triggers thinned' line at exit: $(cat "$T/log")"
q=$(sed -nE 's/.*kept at random \(each with probability ([0-9.]+)\).*/\1/p' "$T/log" | head -1)
k=$(sed -nE 's/.*triggers thinned: ([0-9]+) of [0-9]+ user PC ticks kept.*/\1/p' "$T/log")
[ -n "$q" ] || fail "no probability in the log: $(cat "$T/log")"
echo "thinned: kept $k of $n ticks, q $q"
stat_min "user PC ticks" "$n" "$NMIN" || fail "too few ticks ($n) after 8 x $MS ms"
awk -v q="$q" 'BEGIN { exit !(q > 0 && q <= 0.26) }' || fail "q $q: -vrate 250 should cap it at 1/4"
awk -v k="$k" -v n="$n" -v q="$q" 'BEGIN {
    tol = 5.5 * sqrt(n * q * (1 - q)); d = k - n * q
    printf "expected %.0f +- %.0f, got %d (%.2f sd)\n", n * q, tol, k, d / (tol / 5.5)
    exit !(d <= tol && d >= -tol) }' || fail "kept $k of $n ticks is not Binomial(n, $q)"
echo "PASS"
