#!/bin/bash
# bench/hotlist_accuracy.sh - how far value hotlists are from the truth, per backend, and what
# they cost. For each mode of samples/work-accuracy (one instruction form each, exact truth
# printed by the workload, see its top comment) and each backend (inproc: dcpid -vtrace, the
# default for a command where execute breakpoints work; bp: dcpid -vtrace -vbp; regs: dcpid
# -vtrace -vregs; step: dcpid -vtrace -vstep; BACKENDS="inproc regs" limits them), one run of
# SECONDS of the workload's CPU time; the
# measured instruction's hotlist is read with dcpilist and compared with the truth:
#   vtot        value samples of the instruction (lib/stats.sh's vtot)
#   top shares  the listed shares, largest first, values named by the workload's labels
#   +-B         dcpilist's bound after the hotlist (95% sampling interval + error bound; "few"
#               when over 10 points)
#   max|error|  the largest |listed share - true share| over the true values, in points
#               (a true value missing from the hotlist counts as 0%; "(vtot<30)" marks
#               figures from fewer than 30 value samples, whose bound dcpilist may print as
#               +-0.0 when one value holds them all)
#   CPU ratios  the workload's CPU time per round (it runs for CPU time, so the ratio is of CPU
#               per unit of work) against an unprofiled run and a PC-sampling-only run (dcpid
#               without -vtrace) of BASE_SECONDS each, run just before, side by side
# A backend that gives the instruction no value samples, or only missing values, says so in its
# row. The plugin (samples/vp-acc.c) captures one value of every instruction with one mnemonic,
# both given by environment variables: ACC_MNEM (jbe, call, div, mov) and ACC_VALUE (taken,
# target, rsi, rcx, memval, ea); a missing value becomes one vsample of a reserved value that
# vp-acc formats as "missing", so that missing values are counted, not dropped.
# Usage: bench/hotlist_accuracy.sh BUILD_DIR [SECONDS (6)] [BASE_SECONDS (2)]
#        (MODES="branch stride" limits the modes)
#        bench/hotlist_accuracy.sh BUILD_DIR real [SCALE]: the real-program table instead
#        (bench/hotlist_real.sh: xz, gzip, sqlite3, python3, vp-classic, bp against -voracle)
set -u
[ "${2:-}" = real ] && exec "$(dirname "${BASH_SOURCE[0]}")/hotlist_real.sh" "$1" "${3:-1}"
export LC_ALL=C
B=$(cd "${1:?usage: hotlist_accuracy.sh BUILD_DIR [SECONDS] [BASE_SECONDS]}" && pwd)
SECS=${2:-6}
BASE_SECS=${3:-2}
MODES=${MODES:-branch icall-reg icall-mem size-arg div-reg div-mem chase stride}
BACKENDS=${BACKENDS:-inproc bp regs step}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$SRC/tests/e2e/lib/stats.sh"
W=$B/samples/work-accuracy
for f in dcpid dcpilist samples/work-accuracy samples/vp-acc.so libdcpi-agent.so; do
    [ -e "$B/$f" ] || { echo "bench: $B/$f not built" >&2; exit 1; }
done
T=$(mktemp -d /tmp/dcpi-accuracy.XXXXXX)
trap 'rm -rf "$T"' EXIT

VP=$B/samples/vp-acc.so

# mode -> procedure, mnemonic, value, the measured instruction in dcpilist -asm (an ERE on the line)
spec() {
    case $1 in
    branch) echo "acc_branch jbe taken  jbe " ;;
    icall-reg) echo "acc_icall_reg call target call +r(ax|bx|cx|dx|si|di|[0-9]+)( |$)" ;;
    icall-mem) echo "acc_icall_mem call target call +qword ptr \[" ;;
    size-arg) echo "acc_size_arg call rsi call +(0x)?[0-9A-Fa-f]+( |$)" ;;
    div-reg) echo "acc_div_reg div rcx div +rcx" ;;
    div-mem) echo "acc_div_mem div memval div +qword ptr" ;;
    chase) echo "acc_chase mov memval mov +r[a-z0-9]+, qword ptr \[r[a-z0-9]+\+0x8\]" ;;
    stride) echo "acc_stride mov ea mov +r[a-z0-9]+, qword ptr \[r[a-z0-9]+\+r[a-z0-9]+\*8\]" ;;
    *) echo "bench: unknown mode $1" >&2; exit 2 ;;
    esac
}

# per_round ERRFILE: the workload's CPU milliseconds per round ("rounds N cpu_ms T" on stderr)
per_round() { awk '/^rounds [0-9]+ cpu_ms / {printf "%.6f", $4 / $2; f = 1} END {exit !f}' "$1"; }

# run TAG MS ARGS...: runs ARGS... (ending with the workload), stdout in $T/TAG.out, stderr in
# $T/TAG.err; prints the CPU ms per round
run() {
    local tag=$1 ms=$2
    shift 2
    timeout -k 5 $((SECS * 10 + 120)) "$@" "$ms" >"$T/$tag.out" 2>"$T/$tag.err" ||
        { echo "bench: failed ($?): $* $ms: $(tail -3 "$T/$tag.err")" >&2; return 1; }
    per_round "$T/$tag.err" || { echo "bench: no rounds line: $(tail -3 "$T/$tag.err")" >&2; return 1; }
}

# row MODE BACKEND: reads the hotlist of the run in $T/MODE.BACKEND.db, prints the table row
row() {
    local mode=$1 be=$2 proc re line pc n top err note="" bound=-
    read -r proc _ _ re <<<"$(spec "$mode")"
    DCPI_PLUGIN_PATH= "$B/dcpilist" -db "$T/$mode.$be.db" -asm -vtrace "$VP" -vshow 8 -vcutoff 0 \
        "$proc" "$W" >"$T/$mode.$be.list" 2>&1 || note="dcpilist failed: $(tail -1 "$T/$mode.$be.list")"
    # no value sample at all: dcpid wrote no value profile, which dcpilist refuses to list
    grep -q "no value profile 'vp-acc'" "$T/$mode.$be.list" && note="no value samples (no value profile written)"
    # the measured instruction: the matching line with the most PC samples
    line=$(grep -E "$re" "$T/$mode.$be.list" | awk '$1 ~ /^[0-9]+$/' | sort -k1,1nr | head -1)
    [ -n "$line" ] || line=$(grep -E "$re" "$T/$mode.$be.list" | head -1)
    pc=$(awk '{print ($1 ~ /^[0-9]+$/) ? $1 : 0}' <<<"$line")
    truth=$(sed -n 's/^truth //p' "$T/$mode.$be.out")
    if [ -n "$note" ] || [ -z "$line" ]; then
        n=0 top="${note:-instruction not found in the listing}" err=-
    elif ! grep -q '(' <<<"$line"; then
        n=0 top="no value samples ($pc PC samples on it)" err=-
    else
        n=$(vtot "$line")
        bound=$(sed -nE 's/.*  \+-([0-9.]+)( few)?$/\1\2/p' <<<"$line")
        # pairs "(P% V)" -> "P LABEL" with the truth's labels; then the error over true values
        grep -oE '\([0-9.]+% [^)]+\)' <<<"$line" | tr -d '()%' >"$T/pairs"
        top=$(awk -v truth="$truth" 'BEGIN { n = split(truth, t, " ")
                  for (i = 1; i <= n; i++) { split(t[i], a, "[=:]"); lab[a[2]] = a[1] } }
              { l = ($2 in lab) ? lab[$2] : $2; s = s (s ? " " : "") $1 "% " l } END { print s }' \
            "$T/pairs")
        err=$(awk -v truth="$truth" '{ got[$2] = $1 }
              END { n = split(truth, t, " ")
                    for (i = 1; i <= n; i++) { split(t[i], a, "[=:]"); d = got[a[2]] - a[3]
                        if (d < 0) d = -d; if (d > m) m = d }
                    printf "%.1f", m }' "$T/pairs")
        [ "$n" -ge 30 ] || err="$err (vtot<30)"
        grep -q ' missing' "$T/pairs" && note="missing"
        [ "$note" = missing ] && err="- (missing)"
        [ "$note" = missing ] && [ "$(awk '$2 == "missing" {print $1}' "$T/pairs")" = 100.0 ] &&
            top="all missing ($n value samples)"
    fi
    truth_pct=$(awk -v truth="$truth" 'BEGIN { n = split(truth, t, " ")
        for (i = 1; i <= n; i++) { split(t[i], a, "[=:]"); s = s (s ? " " : "") a[3] "% " a[1] }
        print s }')
    printf '%-9s %-7s %6s  %-56s %-9s %-56s %-11s %8s %8s\n' "$mode" "$be" "$n" "$top" \
        "${bound:--}" "$truth_pct" "$err" "$(awk -v a="${cpu[$be]}" -v b="${cpu[base]}" 'BEGIN {printf "%.3fx", a / b}')" \
        "$(awk -v a="${cpu[$be]}" -v b="${cpu[pc]}" 'BEGIN {printf "%.3fx", a / b}')"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); stress-ng running: $(pgrep -c stress-ng || true) processes"
printf 'work-accuracy MODE %s ms per profiled run (%s ms unprofiled and PC-only), cpu-clock at dcpid'"'"'s default rate, %s CPUs\n' \
    "$((SECS * 1000))" "$((BASE_SECS * 1000))" "$(nproc)"
printf '%-9s %-7s %6s  %-56s %-9s %-56s %-11s %8s %8s\n' workload backend vtot "top shares" \
    "+-B" truth "max|error|" "CPU/unpr" "CPU/PC"
declare -A cpu
for mode in $MODES; do
    spec "$mode" >/dev/null || exit 2
    read -r _ mnem val _ <<<"$(spec "$mode")"
    export ACC_MNEM=$mnem ACC_VALUE=$val
    cpu[base]=$(run "$mode.base" $((BASE_SECS * 1000)) "$W" "$mode") || exit 1
    cpu[pc]=$(run "$mode.pc" $((BASE_SECS * 1000)) "$B/dcpid" -db "$T/$mode.pc.db" -event cpu-clock \
        -quiet -- "$W" "$mode") || exit 1
    for be in $BACKENDS; do
        case $be in inproc) flag= ;; bp) flag=-vbp ;; regs) flag=-vregs ;; step) flag=-vstep ;; *) exit 2 ;; esac
        cpu[$be]=$(run "$mode.$be" $((SECS * 1000)) "$B/dcpid" -db "$T/$mode.$be.db" \
            -event cpu-clock -quiet -vtrace "$VP" $flag -- "$W" "$mode") || exit 1
    done
    for be in $BACKENDS; do row "$mode" "$be"; done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${KEEP:-}" ] || { cp -r "$T" "$KEEP"; echo "kept in $KEEP"; }
