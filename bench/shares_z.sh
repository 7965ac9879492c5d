#!/bin/bash
# bench/shares_z.sh - one value-hotlist accuracy row at dcpid's defaults, with z (issue 21's
# first two "Done when" bullets): one run of `dcpid -event cpu-clock -vtrace PLUGIN [FLAGS] --
# WORKLOAD MODE MS` (default value backend, bp, and default -vbudget unless FLAGS say otherwise),
# then the measured instruction's shares (dcpilist -vshow 8 -vcutoff 0) against the exact
# per-execution truth the workload prints, with n (its value samples) and
# z = (share - truth) / sqrt(truth (1 - truth) / n), the printed +-B, the CPU the workload took
# and dcpid's `bp backend:` lines (rates, arm holders).
# WORKLOAD: accuracy (samples/work-accuracy MODE, vp-acc reading the mode's value, the modes and
# instructions of bench/hotlist_accuracy.sh), phased (samples/work-phased MODE, vp-acc reading the
# divisor of `div rcx`), or classic (samples/work-accuracy chase with the installed plugin
# vp-classic: the loaded value of the payload load, a result, not an operand).
# Usage: bench/shares_z.sh BUILD_DIR WORKLOAD MODE MS [DCPID FLAGS...]
#   e.g. bench/shares_z.sh build accuracy div-reg 20000;  bench/shares_z.sh build classic chase 20000 -vstep
set -u
export LC_ALL=C
B=$(cd "${1:?usage: shares_z.sh BUILD_DIR WORKLOAD MODE MS [FLAGS]}" && pwd)
WL=${2:?WORKLOAD}
MODE=${3:?MODE}
MS=${4:?MS}
shift 4
T=$(mktemp -d /tmp/dcpi-shares-z.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
VP=$B/samples/vp-acc.so
# work-phased's mode -> the procedure of its measured div: phased_proc, shared with the e2e tests
fail() { echo "shares_z: $*" >&2; return 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib/phased.sh"
case $WL in
phased)
    W=$B/samples/work-phased RE=' div +rcx'
    export ACC_MNEM=div ACC_VALUE=rcx
    P=$(phased_proc "$MODE") || exit 2 ;;
accuracy | classic)
    W=$B/samples/work-accuracy
    case $MODE in
    branch) P=acc_branch M=jbe V=taken RE=' jbe ' ;;
    icall-reg) P=acc_icall_reg M=call V=target RE=' call +r(ax|bx|cx|dx|si|di|[0-9]+)( |$)' ;;
    icall-mem) P=acc_icall_mem M=call V=target RE=' call +qword ptr \[' ;;
    size-arg) P=acc_size_arg M=call V=rsi RE=' call +(0x)?[0-9A-Fa-f]+( |$)' ;;
    div-reg) P=acc_div_reg M=div V=rcx RE=' div +rcx' ;;
    div-mem) P=acc_div_mem M=div V=memval RE=' div +qword ptr' ;;
    chase) P=acc_chase M=mov V=memval RE=' mov +r[a-z0-9]+, qword ptr \[r[a-z0-9]+\+0x8\]' ;;
    stride) P=acc_stride M=mov V=ea RE=' mov +r[a-z0-9]+, qword ptr \[r[a-z0-9]+\+r[a-z0-9]+\*8\]' ;;
    *) echo "shares_z: unknown work-accuracy mode $MODE" >&2; exit 2 ;;
    esac
    export ACC_MNEM=$M ACC_VALUE=$V
    [ "$WL" = classic ] && VP=$B/plugins/vp-classic.so ;;
*) echo "shares_z: WORKLOAD is accuracy, phased or classic" >&2; exit 2 ;;
esac
if ! timeout -k 5 $((MS / 100 + 300)) "$B/dcpid" -db "$T/db" -event cpu-clock -vtrace "$VP" "$@" \
    -- "$W" "$MODE" "$MS" >"$T/out" 2>"$T/err"; then
    echo "shares_z: dcpid failed: $(tail -3 "$T/err")" >&2
    exit 1
fi
DCPI_PLUGIN_PATH= "$B/dcpilist" -db "$T/db" -asm -vtrace "$VP" -vshow 8 -vcutoff 0 "$P" "$W" \
    >"$T/list" 2>&1
# the measured instruction: the matching line with a hotlist and the most PC samples
line=$(grep -E "$RE" "$T/list" | awk '$1 ~ /^[0-9]+$/ && /\(/' | sort -k1,1nr | head -1)
[ -n "$line" ] || { echo "shares_z: $WL $MODE: no hotlist on the instruction:"; grep -E "$RE" "$T/list"; exit 1; }
n=$(sed -E 's/.* ([0-9]+) +[0-9.]+ +[0-9]+ +([^ (]+ +)?\(.*/\1/' <<<"$line")
bound=$(sed -nE 's/.*  \+-([0-9.]+)( few)?$/\1\2/p' <<<"$line")
cpu=$(awk '/^rounds [0-9]+ cpu_ms / {printf "%.1f", $4 / 1000}' "$T/err")
out="$WL $MODE ${*:-(defaults)} n $n +-${bound:-?} cpu ${cpu}s"
maxz=0 maxd=0
for t in $(sed -n 's/^truth //p' "$T/out"); do
    lab=${t%%=*} val=${t#*=} pct=${val#*:} val=${val%%:*}
    # vp-classic prints values in its own format: match 0x1111 as 0x1111 or 4369
    dec=$(printf '%d' "$val" 2>/dev/null || echo "$val")
    got=$(grep -oE "\([0-9.]+% ($val|$dec)\)" <<<"$line" | tr -d '(%)' | awk '{print $1}' | head -1)
    read -r z d < <(awk -v o="${got:-0}" -v p="$pct" -v n="${n:-0}" \
        'BEGIN { q = p / 100; z = n > 0 && q > 0 && q < 1 ? (o - p) / 100 / sqrt(q * (1 - q) / n) : 0
                 printf "%.2f %.1f\n", z, o - p }')
    maxz=$(awk -v a="$maxz" -v b="$z" 'BEGIN { b = b < 0 ? -b : b; print (b > a) ? b : a }')
    maxd=$(awk -v a="$maxd" -v b="$d" 'BEGIN { b = b < 0 ? -b : b; print (b > a) ? b : a }')
    out="$out | $lab ${got:-0} (truth $pct, z $z)"
done
echo "$out | max|z| $maxz max|delta| $maxd"
echo "  line: $line"
grep -h 'bp backend: [0-9]\|arm holders\|step backend' "$T"/db/dcpid-*.log | sed 's/.*info: /  /' | head -4
