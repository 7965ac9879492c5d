#!/bin/bash
# bench/phased_load.sh - value samples uniform over executions beside competing load (issue 21):
# one run of `dcpid -event cpu-clock -vtrace vp-acc [FLAGS] -- work-phased MODE MS` (default
# value backend and -vbudget unless FLAGS say otherwise) beside SPINNERS x `sh -c 'while :; do
# :; done'`, then each divisor's share of the measured `div rcx` (dcpilist) against the truth
# work-phased counted, with z = (share - truth) / sqrt(truth (1 - truth) / n) from the value
# samples n, and dcpid's `bp backend:` line (arm delay, holders). Run it several times per case;
# bench/RESULTS.md has the figures.
# SPINNERS stressN: `stress-ng --cpu N` instead (what make test-stress runs beside the tests).
# Usage: bench/phased_load.sh [BUILD_DIR] MODE MS SPINNERS [DCPID FLAGS...]
#   e.g. bench/phased_load.sh build phased 10000 2;  bench/phased_load.sh build brief 2500 2 -vbudget 8
set -u
B=$(cd "${1:-build}" && pwd)
MODE=${2:?MODE}
MS=${3:?MS}
SP=${4:?SPINNERS}
shift 4
T=$(mktemp -d /tmp/dcpi-phased-load.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
# work-phased's mode -> the procedure of its measured div: phased_proc, shared with the e2e tests
fail() { echo "phased_load: $*" >&2; return 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib/phased.sh"
P=$(phased_proc "$MODE") || exit 2
case $SP in
stress*)
    command -v stress-ng >/dev/null || { echo "phased_load: stress-ng is not installed" >&2; exit 2; }
    stress-ng --cpu "${SP#stress}" --timeout 600 >/dev/null 2>&1 &
    pids+=($!)
    ;;
*)
    for _ in $(seq 1 "$SP"); do
        sh -c 'while :; do :; done' &
        pids+=($!)
    done
    ;;
esac
export ACC_MNEM=div ACC_VALUE=rcx
if ! "$B/dcpid" -db "$T/db" -event cpu-clock -vtrace "$B/samples/vp-acc.so" "$@" \
    -- "$B/samples/work-phased" "$MODE" "$MS" >"$T/out" 2>"$T/err"; then
    echo "phased_load: dcpid failed: $(cat "$T/err")" >&2
    exit 1
fi
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
pids=()
DCPI_PLUGIN_PATH= "$B/dcpilist" -db "$T/db" -asm -vtrace "$B/samples/vp-acc.so" -vshow 8 \
    -vcutoff 0 "$P" "$B/samples/work-phased" >"$T/list" 2>&1
line=$(grep -E "$(phased_insn "$MODE")" "$T/list" | awk '$1 ~ /^[0-9]+$/ && /\(/' | head -1)
n=$(sed -E 's/.* ([0-9]+) +[0-9.]+ +[0-9]+ +([^ (]+ +)?\(.*/\1/' <<<"$line")
out="$MODE spinners $SP n $n"
for t in $(sed -n 's/^truth //p' "$T/out"); do
    lab=${t%%=*} val=${t#*=} pct=${val#*:} val=${val%%:*}
    got=$(grep -o "([0-9.]*% $val)" <<<"$line" | tr -d '(%)' | awk '{print $1}' | head -1)
    z=$(awk -v o="${got:-0}" -v p="$pct" -v n="${n:-0}" \
        'BEGIN { q = p / 100; z = n > 0 ? (o - p) / 100 / sqrt(q * (1 - q) / n) : 0
                 printf "%.2f", z }')
    out="$out | $lab: ${got:-0}% truth $pct% z $z"
done
echo "$out"
grep -h 'bp backend: [0-9]' "$T"/db/dcpid-*.log | sed 's/.*bp backend: /  /'
