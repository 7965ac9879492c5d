#!/bin/bash
# bench/value_yield.sh - what a value sample costs and how many a run gets, per value backend
# (issue 29): the same fixed work unprofiled, under PC sampling alone, and under each value
# mechanism with vp-classic and vp-addr, interleaved REPS times; medians of
#   value samples per second of the target's CPU (vp-classic's vsamples / target CPU),
#   the target's CPU ratio to the unprofiled run (the whole cost a user sees, PC sampling
#   included) and to PC sampling alone,
#   the cost of one value sample to the target: (target CPU with values - with PC alone) /
#   value samples, in us,
#   dcpid's own CPU per value sample: (dcpid's CPU with values - with PC alone) / value samples.
# Mechanisms: inproc (the default for a command; inprocN: at -vbudget N), bp (-vbp: dcpid arms after a thinned PC
# sample), bp at -vbudget 5, regs (-vregs: the PC samples' registers), step (-vstep: the agent's
# single-step bursts). The target CPU is what the workload reports (getrusage); dcpid's is the
# command tree's minus the target's.
# Usage: bench/value_yield.sh [BUILD_DIR] [REPS] [WORKLOAD...]
#   WORKLOAD defaults to "work-demo -n 2000"; e.g. bench/value_yield.sh build 5 work-demo -n 2000
#   or "work-accuracy MODE ..." (any workload of build/samples that prints "NAME: cpu SECONDS" or
#   "rounds N cpu_ms MS", or whose CPU is measured as the command's user+sys when it prints
#   neither, dcpid's own then included), or "short BZ PROG ARGS...": PROG run BZ times one after
#   another, each a short process (bzip2 -9 of 1 MB: 65 ms), the target CPU the children's
#   (the inproc backend's start-up price: a process of 8 ticks or fewer never gets its own).
set -eu
export LC_ALL=C
B=$(cd "${1:-build}" && pwd)
REPS=${2:-5}
shift 2 || true
[ $# -gt 0 ] || set -- work-demo -n 2000
T=$(mktemp -d /tmp/dcpi-yield.XXXXXX)
export T # the short workload writes its children's times there
W=("$B/samples/$1" "${@:2}")
if [ "$1" = short ]; then # N short processes in a row; "short: cpu S", their children's CPU
    W=(bash -c 'for ((i = 0; i < $0; i++)); do "$@" >/dev/null; done; times >"$T/times"
        awk "NR == 2 { gsub(/[ms]/, \" \"); print \"short: cpu\", \$1 * 60 + \$2 + \$3 * 60 + \$4 }" "$T/times"' "${@:2}")
fi
trap 'rm -rf "$T"' EXIT
TIMEFORMAT='%3U %3S %3R'
MECHS=${MECHS:-"inproc bp bp5 regs step"}

flags() {
    case $1 in
    pc) echo "" ;;
    inproc) echo "-vtrace vp-classic -vtrace vp-addr" ;;
    inproc[0-9]*) echo "-vtrace vp-classic -vtrace vp-addr -vbudget ${1#inproc}" ;;
    bp) echo "-vtrace vp-classic -vtrace vp-addr -vbp" ;;
    bp5) echo "-vtrace vp-classic -vtrace vp-addr -vbp -vbudget 5" ;;
    regs) echo "-vtrace vp-classic -vtrace vp-addr -vregs" ;;
    step) echo "-vtrace vp-classic -vtrace vp-addr -vstep" ;;
    esac
}

# run NAME CMD... : appends "target_cpu tree_cpu wall vsamples" to $T/NAME
run() {
    local name=$1 out target vs
    shift
    out=$({ time "$@" >"$T/out" 2>"$T/err"; } 2>&1)
    # the target's own CPU: "NAME: cpu SECONDS" (work-demo), or "rounds N cpu_ms MS" (work-accuracy,
    # which runs for a fixed CPU time: its work is N rounds)
    target=$(cat "$T/out" "$T/err" | awk '/: cpu [0-9.]+$/ {print $NF; exit}')
    rounds=$(awk '/^rounds [0-9]+ cpu_ms [0-9.]+$/ {print $2, $4 / 1000; exit}' "$T/err")
    [ -z "$rounds" ] || target=${rounds#* }
    [ -n "$target" ] || target=$(echo "$out" | awk '{print $1+$2}')
    vs=$(sed -n 's/.*value profiler vp-classic: [0-9]* traces, \([0-9]*\) vsamples.*/\1/p' "$T/err")
    echo "$target $(echo "$out" | awk '{print $1+$2, $3}') ${vs:-0} ${rounds%% *}" >>"$T/$name"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
col() { awk -v c="$1" '{print $c}' "$T/$2" | median; }
# work(NAME): per run, the target's CPU for the unprofiled runs' work (a workload that reports
# rounds runs for a fixed CPU time: its CPU per round times the unprofiled median of rounds)
work() { awk -v r="$rb" '{print ($5 > 0 ? $1 / $5 * r : $1)}' "$T/$1"; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$REPS"); do
    run base "${W[@]}"
    for m in pc $MECHS; do
        # a fresh epoch directory, the symbol cache kept (a daemon keeps its database: the
        # first kernel sample's kallsyms snapshot is compressed once, not in every run)
        [ -d "$T/db" ] && find "$T/db" -mindepth 1 -maxdepth 1 ! -name .symcache -exec rm -rf {} +
        # shellcheck disable=SC2046
        run "$m" "$B/dcpid" -db "$T/db" -quiet $(flags "$m") -- "${W[@]}"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rb=$(awk '{print ($5 > 0 ? $5 : 0)}' "$T/base" | median)
base=$(work base | median)
pct=$(work pc | median)
pcown=$(awk '{print $2-$1}' "$T/pc" | median)
printf 'workload: %s, default -freq, median of %s interleaved runs, %s CPUs\n' "${*}" "$REPS" \
    "$(nproc)"
printf 'unprofiled target CPU %.3f s; PC sampling alone %.4fx, dcpid %.3f s\n' "$base" \
    "$(echo "$pct $base" | awk '{print $1/$2}')" "$pcown"
printf '%-8s %10s %10s %12s %10s %10s %12s %12s\n' mechanism "values" "values/s" "target CPU" \
    "x unprof" "x PC" "us/value" "dcpid us/v"
for m in $MECHS; do
    # per run: samples per target-CPU second, then medians
    vps=$(awk '{print ($1 > 0 ? $4 / $1 : 0)}' "$T/$m" | median)
    n=$(col 4 "$m")
    t=$(work "$m" | median)
    own=$(awk '{print $2-$1}' "$T/$m" | median)
    a=$(col 1 "$m") # the CPU the run's n values came in (t is for the unprofiled runs' work)
    awk -v m="$m" -v n="$n" -v vps="$vps" -v t="$t" -v b="$base" -v p="$pct" -v own="$own" \
        -v pown="$pcown" -v a="$a" 'BEGIN {
            cost = n > 0 && t > 0 ? (t - p) / t * a / n * 1e6 : 0; dc = n > 0 ? (own - pown) / n * 1e6 : 0
            printf "%-8s %10d %10.0f %12.3f %9.4fx %9.4fx %12.1f %12.1f\n", m, n, vps, t, t/b, t/p, cost, dc
        }'
done
