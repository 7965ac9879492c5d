#!/bin/bash
# bench/step_overhead.sh - cost of the step backend (burst tracing) against an unprofiled run and
# against valgrind, on the same fixed work `work-demo -n ROUNDS` (its own getrusage CPU, printed
# on stderr as "work-demo: cpu S", is the target CPU everywhere, valgrind included).
#
# Interleaved, REPS times:
#   unprofiled      work-demo -n ROUNDS
#   pc              dcpid -- work-demo (PC sampling only, for reference)
#   agent B/R       dcpid -vtrace vp-classic -vstep -vburst B -vrate R -- sh -c 'work-demo; read'
#                   (the sh waits on a fifo after work-demo exits so that `dcpictl status` can
#                   read "vstep agent bursts B steps S lost L": the agent's counters, whole run)
#   ptrace B/R      work-demo is started stopped (sh: kill -STOP $$; exec work-demo), dcpid
#                   -vtrace vp-classic -vstep -vburst B -vrate R -p PID attaches, then SIGCONT;
#                   steps from dcpid's log line "vstep: detached from PID (B bursts, S steps"
# Then valgrind on the same program with fewer rounds (VGN1 and VGN2 rounds, VGREPS times each;
# CPU per round = the slope between them, so valgrind's start-up is left out):
#   --tool=none, --tool=lackey (basic counts: "guest instrs", the instructions executed) and
#   --tool=lackey --trace-mem=yes --log-file=/dev/null (every instruction and load/store address).
# Prints medians: target CPU, ratio to unprofiled, traced instructions per second of target CPU,
# extra target CPU per traced instruction, dcpid's own CPU; and the lackey/agent comparison.
# Usage: bench/step_overhead.sh [BUILD_DIR] [ROUNDS] [REPS] [VGREPS]
#   env AGRID="B:R ..." (agent grid), PGRID="B:R ..." (ptrace grid), VGN1, VGN2 (valgrind rounds)
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
ROUNDS=${2:-2000}
REPS=${3:-5}
VGREPS=${4:-3}
AGRID=${AGRID:-"16:10 16:100 16:1000 4:100 64:100"}
PGRID=${PGRID:-"16:10 16:100 16:1000 4:100 64:100"}
VGN1=${VGN1:-2}
VGN2=${VGN2:-8}
W="$B/samples/work-demo"
for f in dcpid dcpictl samples/work-demo plugins/vp-classic.so libdcpi-agent.so; do
    [ -e "$B/$f" ] || { echo "bench: $B/$f not built" >&2; exit 1; }
done
T=$(mktemp -d /tmp/dcpi-stepbench.XXXXXX)
LIVE=() # our own background processes not yet waited for (killed on an early exit)
cleanup() {
    for p in "${LIVE[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
TIMEFORMAT='%3U %3S %3R'
now() { date +%s.%N; }
die() { echo "bench: $*" >&2; exit 1; }
cpu_of() { awk '/^work-demo: cpu/ {print $3}' "$1"; }
# wait_for FILE REGEX [tries]: polls every 20 ms
wait_for() {
    for _ in $(seq "${3:-1500}"); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.02; done
    return 1
}

# plain CMD...: prints "target_cpu tree_cpu wall - -"
plain() {
    local out target
    out=$( { time "$@" >/dev/null 2>"$T/err"; } 2>&1)
    target=$(cpu_of "$T/err")
    [ -n "$target" ] || die "no cpu line from: $* ($(cat "$T/err"))"
    echo "$target $(awk '{print $1+$2, $3}' <<<"$out") - -"
}

# agent BURST RATE: prints "target_cpu tree_cpu - bursts steps"
agent() {
    local fifo="$T/fifo" st line target
    rm -rf "$T/db" "$fifo" "$T/err" "$T/time"
    mkfifo "$fifo"
    # shellcheck disable=SC2016 # $0..$2 are the inner sh's arguments
    { time "$B/dcpid" -db "$T/db" -log "$T/log" -vtrace vp-classic -vstep -vburst "$1" \
        -vrate "$2" -- sh -c '"$0" -n "$1"; read x <"$2"' "$W" "$ROUNDS" "$fifo" \
        >/dev/null 2>"$T/err"; } 2>"$T/time" &
    local d=$!
    LIVE=("$d")
    wait_for "$T/err" '^work-demo: cpu' || die "agent $1/$2: no cpu line ($(cat "$T/err"))"
    st=$(timeout 20 "$B/dcpictl" -db "$T/db" status) || die "dcpictl status failed: $st"
    echo >"$fifo"
    wait "$d" || die "dcpid -vstep (agent) failed: $(cat "$T/log")"
    LIVE=()
    line=$(grep '^vstep agent' <<<"$st") || die "no vstep agent line in status: $st"
    [[ "$line" =~ bursts\ ([0-9]+)\ steps\ ([0-9]+)\ lost\ ([0-9]+) ]] || die "status: $line"
    [ "${BASH_REMATCH[3]}" = 0 ] || echo "bench: agent $1/$2: lost bursts: $line" >&2
    target=$(cpu_of "$T/err")
    echo "$target $(awk '{print $1+$2}' "$T/time") - ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
}

# ptrace BURST RATE: prints "target_cpu dcpid_cpu+target_cpu wall bursts steps"
ptrace() {
    local p d t0 t1 target
    rm -rf "$T/db" "$T/err" "$T/log" "$T/time"
    # shellcheck disable=SC2016
    sh -c 'kill -STOP $$; exec "$0" -n "$1"' "$W" "$ROUNDS" >/dev/null 2>"$T/err" &
    p=$!
    LIVE=("$p")
    wait_for "/proc/$p/status" '^State:.*\(stopped\)' || die "target did not stop"
    { time "$B/dcpid" -db "$T/db" -log "$T/log" -vtrace vp-classic -vstep -vburst "$1" \
        -vrate "$2" -p "$p" >/dev/null 2>&1; } 2>"$T/time" &
    d=$!
    LIVE=("$p" "$d")
    wait_for "$T/log" 'dcpid ready' || die "dcpid -p did not start: $(cat "$T/log")"
    t0=$(now)
    kill -CONT "$p"
    wait "$p" || die "target failed under ptrace: $(cat "$T/err")"
    t1=$(now)
    wait "$d" || die "dcpid -vstep -p failed: $(cat "$T/log")"
    LIVE=()
    target=$(cpu_of "$T/err")
    [ -n "$target" ] || die "ptrace $1/$2: no cpu line ($(cat "$T/err"))"
    grep -q 'vstep: detached from' "$T/log" || die "no detach line in the log: $(cat "$T/log")"
    local bs
    bs=$(sed -nE 's/.*vstep: detached from [0-9]+ \(([0-9]+) bursts, ([0-9]+) steps.*/\1 \2/p' \
        "$T/log")
    echo "$target $(awk -v t="$target" '{print $1+$2+t}' "$T/time")" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b-a}') $bs"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "-")}'; }
col() { awk -v c="$1" '$c != "-" {print $c}' "$2" | median; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$REPS"); do
    plain "$W" -n "$ROUNDS" >>"$T/r.base"
    rm -rf "$T/pdb"
    plain "$B/dcpid" -db "$T/pdb" -quiet -- "$W" -n "$ROUNDS" >>"$T/r.pc"
    for g in $AGRID; do agent "${g%:*}" "${g#*:}" >>"$T/r.agent-$g"; done
    for g in $PGRID; do ptrace "${g%:*}" "${g#*:}" >>"$T/r.ptrace-$g"; done
    echo "rep $i done, load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
echo "load average after dcpid runs: $(cut -d' ' -f1-3 /proc/loadavg)"

# valgrind: CPU per round from two round counts
vg() { # vg TAG ROUNDS valgrind-args...
    local tag=$1 n=$2
    shift 2
    plain valgrind "$@" "$W" -n "$n" >>"$T/v.$tag.$n"
}
for i in $(seq "$VGREPS"); do
    for n in "$VGN1" "$VGN2"; do
        vg none "$n" --tool=none --log-file=/dev/null
        vg lackey "$n" --tool=lackey --log-file="$T/lackey.$n.log"
        vg trace "$n" --tool=lackey --trace-mem=yes --log-file=/dev/null
    done
done
instrs() { sed -nE 's/.*guest instrs: *([0-9,]+).*/\1/p' "$1" | tr -d ,; }
i1=$(instrs "$T/lackey.$VGN1.log")
i2=$(instrs "$T/lackey.$VGN2.log")
if [ -z "$i1" ] || [ -z "$i2" ]; then die "no 'guest instrs' in lackey's summary"; fi
ipr=$(awk -v a="$i1" -v b="$i2" -v n1="$VGN1" -v n2="$VGN2" 'BEGIN {printf "%.0f", (b-a)/(n2-n1)}')
echo "load average after valgrind runs: $(cut -d' ' -f1-3 /proc/loadavg)"

base=$(col 1 "$T/r.base")
bpr=$(awk -v b="$base" -v n="$ROUNDS" 'BEGIN {print b/n}')
printf '\nworkload: work-demo -n %s (%s instructions per round, from lackey), median of %s' \
    "$ROUNDS" "$ipr" "$REPS"
printf ' interleaved runs, %s CPUs, event %s\n' "$(nproc)" \
    "$(sed -nE 's/.*using (.*)$/\1/p' "$T/log" | head -1 | grep . || echo default)"
printf '%-18s %9s %8s %8s %12s %12s %10s %9s\n' configuration "target s" ratio "wall s" \
    "steps/run" "steps/CPU s" "us/step" "dcpid s"
row() { # row LABEL FILE
    local t wall steps own
    t=$(col 1 "$2")
    wall=$(col 3 "$2")
    steps=$(col 5 "$2")
    own=$(awk '$2 != "-" {print $2-$1}' "$2" | median)
    awk -v l="$1" -v t="$t" -v b="$base" -v w="$wall" -v s="$steps" -v o="$own" 'BEGIN {
        r = t / b
        sps = (s == "-") ? "-" : sprintf("%.0f", s / t)
        ups = (s == "-" || s == 0) ? "-" : sprintf("%.2f", (t - b) * 1e6 / s)
        printf "%-18s %9.3f %7.4fx %8s %12s %12s %10s %9.3f\n", l, t, r, w, s, sps, ups, o
    }'
}
row unprofiled "$T/r.base"
row "dcpid (PC only)" "$T/r.pc"
for g in $AGRID; do row "agent B=${g%:*} R=${g#*:}" "$T/r.agent-$g"; done
for g in $PGRID; do row "ptrace B=${g%:*} R=${g#*:}" "$T/r.ptrace-$g"; done
echo "(dcpid s: CPU of dcpid's tree minus the target's; ptrace wall: SIGCONT to target exit)"

printf '\nvalgrind, CPU per round = slope between -n %s and -n %s, median of %s runs each\n' \
    "$VGN1" "$VGN2" "$VGREPS"
printf '%-30s %12s %10s %14s %10s\n' tool "CPU/round s" ratio "traced/CPU s" "us/instr"
slope() { # slope TAG: CPU per round
    awk -v a="$(col 1 "$T/v.$1.$VGN1")" -v b="$(col 1 "$T/v.$1.$VGN2")" \
        -v n1="$VGN1" -v n2="$VGN2" 'BEGIN {print (b-a)/(n2-n1)}'
}
vrow() { # vrow LABEL TAG TRACES(0/1)
    awk -v l="$1" -v c="$(slope "$2")" -v b="$bpr" -v i="$ipr" -v tr="$3" 'BEGIN {
        printf "%-30s %12.5f %9.1fx %14s %10.4f\n", l, c, c / b,
            tr ? sprintf("%.0f", i / c) : "-", (c - b) * 1e6 / i
    }'
}
printf '%-30s %12.5f %9.1fx %14s %10s\n' "native (unprofiled runs)" "$bpr" 1 - -
vrow "valgrind --tool=none" none 0
vrow "lackey (basic counts)" lackey 1
vrow "lackey --trace-mem=yes" trace 1

if [ -s "$T/r.agent-16:100" ]; then
    awk -v a="$(col 1 "$T/r.agent-16:100")" -v b="$base" -v lt="$(slope trace)" -v lb="$(slope lackey)" -v bpr="$bpr" \
        -v s="$(col 5 "$T/r.agent-16:100")" -v i="$ipr" 'BEGIN {
        ra = a / b
        printf "\nagent B=16 R=100: %.4fx\n", ra
        printf "(a) whole-run slowdown, lackey --trace-mem / agent: %.0fx", (lt / bpr) / ra
        printf " (lackey basic counts / agent: %.0fx; target >= 20x)\n", (lb / bpr) / ra
        ua = (a - b) * 1e6 / s
        ul = (lt - bpr) * 1e6 / i
        printf "(b) extra CPU per traced instruction: agent %.3f us, lackey --trace-mem %.4f us", ua, ul
        printf " (agent/lackey %.0fx)\n", ua / ul
    }'
fi
