#!/bin/bash
# arm_starts.sh - which executions the inproc backend's arms take on a real program, against
# the exact sequence of the instruction's values (issue 29, item 7: "measure which executions
# the arms take against the exact per-execution sequence").
#
# The instruction: libbz2's `sub eax, r9d` at 0x3929 in bzip2 -9 of generated text (the first
# row of bench/hotlist_exact.sh's table), read as eax at the next instruction (0x392c, `test
# eax, eax`, also a target of dcpid's table).
#   1. the exact sequence: a uprobe on 0x392c reading eax at every execution (perf probe, perf
#      record), one run with ASLR off;
#   2. REPS sampled runs at the defaults (dcpid -vtrace vp-classic, the inproc backend), each
#      hit also written by the agent to a file of its own (DCPI_AGENT_DUMP);
#   3. bench/arm_align finds each arm's consecutive values in the sequence and prints where the
#      arms start, what preceded the starts, and the sampled share against the exact one.
# Any DCPI_AGENT_* variable set by the caller reaches the agent (e.g. DCPI_AGENT_WINDOW_US=0).
#
# Usage: bench/arm_starts.sh BUILD_DIR [REPS (200)] (SCALE 0.3: the input, as hotlist_exact.sh;
#        KEEP=1 keeps the working directory)
set -u
export LC_ALL=C
B=$(cd "${1:?usage: arm_starts.sh BUILD_DIR [REPS]}" && pwd)
REPS=${2:-200}
SCALE=${SCALE:-0.3}
LIB=/usr/lib/x86_64-linux-gnu/libbz2.so.1.0.4
[ "$(id -u)" = 0 ] || { echo "arm_starts: needs root (uprobes)"; exit 1; }
for t in perf bzip2 objdump setarch; do
    command -v $t >/dev/null || { echo "arm_starts: $t is missing"; exit 1; }
done
[ -x "$B/bench/arm_align" ] || { echo "arm_starts: $B/bench/arm_align is not built"; exit 1; }
objdump -d --start-address=0x3929 --stop-address=0x392e "$LIB" 2>/dev/null |
    grep -q 'sub *%r9d,%eax' || { echo "arm_starts: $LIB has no sub eax, r9d at 0x3929 (another build of libbz2)"; exit 1; }
T=$(mktemp -d /tmp/dcpi-armstarts.XXXXXX)
cleanup() {
    perf probe -q -d 'probe_libbz2:dcpiarm' >/dev/null 2>&1
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
[ -d "$B/plugins" ] && export DCPI_PLUGIN_PATH=$B/plugins${DCPI_PLUGIN_PATH:+:$DCPI_PLUGIN_PATH}
. "$(dirname "${BASH_SOURCE[0]}")/lib/text.sh"
bench_text "$(awk -v s="$SCALE" 'BEGIN { print int(s * 600000) }')" >"$T/in.txt"
run=(setarch -R bzip2 -9 -c "$T/in.txt")

perf probe -q -d 'probe_libbz2:dcpiarm' >/dev/null 2>&1
perf probe -q -x "$LIB" -a 'dcpiarm=0x392c v=%ax:u32' >/dev/null 2>&1 ||
    { echo "arm_starts: perf probe on $LIB failed"; exit 1; }
t0=$(date +%s)
perf record -q -e probe_libbz2:dcpiarm -m 4096 -o "$T/p.data" -- "${run[@]}" >/dev/null 2>"$T/record.err" ||
    { echo "arm_starts: perf record failed: $(tail -1 "$T/record.err")"; exit 1; }
perf script -i "$T/p.data" -F trace 2>/dev/null | sed -n 's/.*v=\([0-9]*\).*/\1/p' >"$T/seq"
lost=$(perf report -i "$T/p.data" --stats 2>/dev/null | awk '/LOST_SAMPLES/ { n += $NF } END { print n + 0 }')
echo "exact: $(wc -l <"$T/seq") executions recorded in $(($(date +%s) - t0)) s, $lost lost (arms that overlap a loss are not found)"

for r in $(seq "$REPS"); do
    DCPI_AGENT_DUMP=$T/dump "$B/dcpid" -db "$T/db" -vtrace vp-classic -- "${run[@]}" >/dev/null 2>>"$T/dcpid.err" ||
        echo "arm_starts: sampled run $r failed: $(tail -1 "$T/dcpid.err")" >&2
done
echo "sampled: $REPS runs at the defaults${DCPI_AGENT_WINDOW_US:+, DCPI_AGENT_WINDOW_US=$DCPI_AGENT_WINDOW_US}${DCPI_AGENT_HITS:+, DCPI_AGENT_HITS=$DCPI_AGENT_HITS}"
"$B/bench/arm_align" "$T/seq" 0x92c 0 32 "$T"/dump.*
