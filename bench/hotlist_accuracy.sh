#!/bin/bash
# bench/hotlist_accuracy.sh - how far value hotlists are from the truth, per backend, and what
# they cost. For each mode of samples/work-accuracy (one instruction form each, exact truth
# printed by the workload, see its top comment) and each backend (regs: dcpid -vtrace, the
# default; step: dcpid -vtrace -vstep), one run of SECONDS of the workload's CPU time; the
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
# row. The plugin (vp-acc, built here from a heredoc against the build tree's headers) captures
# one value of every instruction with one mnemonic, both given by environment variables:
# ACC_MNEM (jbe, call, div, mov) and ACC_VALUE (taken, target, rsi, rcx, memval, ea); a missing
# value becomes one vsample of a reserved value that vp-acc formats as "missing", so that missing
# values are counted, not dropped. With ACC_VALUE=memval the vlist also holds TRACE_EA (not
# reported): the regs backend asks perf for no registers when no value needs one, and then writes
# no entries at all instead of entries whose MEMVAL is missing.
# Usage: bench/hotlist_accuracy.sh BUILD_DIR [SECONDS (6)] [BASE_SECONDS (2)]
#        (MODES="branch stride" limits the modes)
set -u
export LC_ALL=C
B=$(cd "${1:?usage: hotlist_accuracy.sh BUILD_DIR [SECONDS] [BASE_SECONDS]}" && pwd)
SECS=${2:-6}
BASE_SECS=${3:-2}
MODES=${MODES:-branch icall-reg icall-mem size-arg div-reg div-mem chase stride}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$SRC/tests/e2e/lib/stats.sh"
W=$B/samples/work-accuracy
for f in dcpid dcpilist samples/work-accuracy libdcpi-agent.so; do
    [ -e "$B/$f" ] || { echo "bench: $B/$f not built" >&2; exit 1; }
done
T=$(mktemp -d /tmp/dcpi-accuracy.XXXXXX)
# plugins in a directory writable by others (/tmp) are refused: the built one goes here
P=$(mktemp -d "$B/bench-accuracy-plugin.XXXXXX") || exit 1
trap 'rm -rf "$T" "$P"' EXIT

cat >"$T/vp-acc.c" <<'PLUGIN'
/* vp-acc: one value (ACC_VALUE) of every instruction whose mnemonic is ACC_MNEM; a missing value
 * is kept as ACC_MISSING (formatted "missing"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dcpi/errno.h>
#include <dcpi/vprofiler.h>
#define ACC_MISSING 0xfeedfacecafe0001ull
static vsample_t buf[VSAMPLE_BUFFER_SIZE];
static trace_vlist_table_t *table;
static const char *mnem;
static int pick(const trace_opc_info_t *i)
{
    return strcmp(i->mnemonic, mnem) == 0;
}
static trace_vlist_table_t *init(void)
{
    static const struct {
        const char *name;
        trace_value_t v;
    } vals[] = {{"taken", TRACE_BR_TAKEN}, {"target", TRACE_BR_TARGET}, {"rsi", TRACE_RSI},
                {"rcx", TRACE_RCX},        {"memval", TRACE_MEMVAL},    {"ea", TRACE_EA}};
    const char *val = getenv("ACC_VALUE");
    trace_vlist_t *v;
    mnem = getenv("ACC_MNEM");
    if (!mnem || !val)
        return NULL;
    v = trace_vlist_alloc();
    table = trace_vlist_table_alloc();
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++)
        if (v && strcmp(val, vals[k].name) == 0 && trace_add_value_to_vlist(v, vals[k].v) >= 0 &&
            (vals[k].v != TRACE_MEMVAL || trace_add_value_to_vlist(v, TRACE_EA) >= 0) && table &&
            trace_add_vlist_by_select(table, pick, v) >= 0) {
            trace_vlist_free(v);
            return table;
        }
    trace_vlist_free(v);
    trace_vlist_table_free(table);
    return table = NULL;
}
static void done(void)
{
    trace_vlist_table_free(table);
}
static int process(unsigned pid, trace_parser_t *p, vsample_t **out)
{
    int n = 0, k = 0;
    uint64_t pc, v;
    (void)pid;
    while (n < VSAMPLE_BUFFER_SIZE && (k = trace_parser_next(p, NULL, &pc, NULL, NULL, 1, &v)) >= 0) {
        if (k < 1 || (trace_parser_missing(p) & 1u))
            v = ACC_MISSING;
        buf[n++] = (vsample_t){.pc = pc, .value = v};
    }
    *out = buf;
    return k == TRACE_PARSE_ERROR ? DCPI_EFORMAT : n;
}
static const char *name(void)
{
    return "vp-acc";
}
static const char *preface(const trace_inst_t *i)
{
    (void)i;
    return "value:";
}
static const char *format(const trace_inst_t *i, uint64_t v)
{
    static char s[32];
    (void)i;
    if (v == ACC_MISSING)
        return "missing";
    snprintf(s, sizeof s, "0x%llx", (unsigned long long)v);
    return s;
}
VP_EXPORT vp_dispatch_t _dispatch = {VP_DISPATCH_HEADER, .vp_name = name, .vp_prof_init = init,
    .vp_prof_done = done, .vp_prof_process = process, .vp_preface = preface, .vp_format = format};
PLUGIN
cc -O2 -shared -fPIC -fvisibility=hidden -I"$SRC/include" -I"$B/include" -o "$P/vp-acc.so" \
    "$T/vp-acc.c" 2>"$T/cc.err" || { echo "bench: building vp-acc: $(cat "$T/cc.err")" >&2; exit 1; }
VP=$P/vp-acc.so

# mode -> procedure, mnemonic, value, the measured instruction in dcpilist -asm (an ERE on the line)
spec() {
    case $1 in
    branch) echo "acc_branch jbe taken  jbe " ;;
    icall-reg) echo "acc_icall_reg call target call +r(ax|bx|cx|dx|si|di|[0-9]+)( |$)" ;;
    icall-mem) echo "acc_icall_mem call target call +qword ptr \[" ;;
    size-arg) echo "acc_size_arg call rsi call +0x[0-9A-Fa-f]+" ;;
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
    cpu[regs]=$(run "$mode.regs" $((SECS * 1000)) "$B/dcpid" -db "$T/$mode.regs.db" \
        -event cpu-clock -quiet -vtrace "$VP" -- "$W" "$mode") || exit 1
    cpu[step]=$(run "$mode.step" $((SECS * 1000)) "$B/dcpid" -db "$T/$mode.step.db" \
        -event cpu-clock -quiet -vtrace "$VP" -vstep -- "$W" "$mode") || exit 1
    row "$mode" regs
    row "$mode" step
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${KEEP:-}" ] || { cp -r "$T" "$KEEP"; echo "kept in $KEEP"; }
