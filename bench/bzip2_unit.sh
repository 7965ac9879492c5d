#!/bin/bash
# bench/bzip2_unit.sh - why the sampled hotlist of bzip2's libbz2 0x3929 (`sub eax, r9d` in
# mainQSort3's partition loop, Debian's libbz2.so.1.0.4) reads 0x0 at 45-53% for a true 62.0%
# (issue 29 item 7), measured against the exact per-execution sequence with the kernel's uprobes
# (bpftrace 0.17, apt-get install bpftrace; root; each run ~3-5 min: a uprobe per execution).
#   1. exact: every execution's eax at the next instruction (0x392c), and r10b at 0x4acc (the
#      result of 0x4ac3 `movzx r10d, byte ptr [rbp+rax+0x180]`): counts per value;
#   2. the sampling unit: the bp backend's value sample is the second hit of an arm set at a
#      random time, i.e. the execution after the first execution after a random time, which is
#      picked with probability proportional to the time since the instruction's previous
#      execution (its gap). Time under a uprobe is the probe's (~12 us a hit), so the gap is
#      counted in loop iterations instead: 1 + the iterations of the partition's other scan (the
#      unHi loop, 0x395f) since the previous execution. For lags J = 1..8 the sum of the gaps of
#      the executions J before each execution, per value class (0x0 or not): the share of 0x0
#      the unit gives when the arm's first hit is J executions before its value sample and an
#      unHi iteration costs a unLo iteration's time x a (a = 1, 2, 3, infinite).
# Usage: bench/bzip2_unit.sh [SCALE (1: 3.3 MB, the text of bench/hotlist_real.sh)]
set -u
export LC_ALL=C
SCALE=${1:-1}
L=$(readlink -f /lib/x86_64-linux-gnu/libbz2.so.1.0)
[ "$(basename "$L")" = libbz2.so.1.0.4 ] || { echo "bench: needs Debian 12's libbz2.so.1.0.4, not $L" >&2; exit 1; }
T=$(mktemp -d /tmp/dcpi-bzunit.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/lib/text.sh"
bench_text $((SCALE * 600000)) >"$T/in.txt"

# traced BT OUT: run the bpftrace program BT while bzip2 -9 compresses the text, its maps to OUT
traced() {
    bpftrace --unsafe -o "$2" "$1" >"$2.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do grep -q Attaching "$2" 2>/dev/null && break; sleep 0.2; done
    sleep 2
    bzip2 -9 -c "$T/in.txt" >/dev/null
    kill -INT $pid
    wait $pid
}

cat >"$T/exact.bt" <<EOF
uprobe:$L:0x392c { @v[reg("ax") & 0xffffffff] = count(); }
uprobe:$L:0x4acc { @w[reg("r10") & 0xff] = count(); }
EOF
traced "$T/exact.bt" "$T/exact.out"
cat >"$T/lag.bt" <<EOF
uprobe:$L:0x395f { @hi[tid] = @hi[tid] + 1; }
uprobe:$L:0x392c {
  \$z = (reg("ax") & 0xffffffff) == 0 ? 1 : 0;
  \$g = 1 + @hi[tid];
  @A[1, \$z] = sum(@g1[tid]); @A[2, \$z] = sum(@g2[tid]); @A[3, \$z] = sum(@g3[tid]);
  @A[4, \$z] = sum(@g4[tid]); @A[6, \$z] = sum(@g6[tid]); @A[8, \$z] = sum(@g8[tid]);
  @B[1, \$z] = sum(@h1[tid]); @B[2, \$z] = sum(@h2[tid]); @B[3, \$z] = sum(@h3[tid]);
  @B[4, \$z] = sum(@h4[tid]); @B[6, \$z] = sum(@h6[tid]); @B[8, \$z] = sum(@h8[tid]);
  @g8[tid] = @g7[tid]; @g7[tid] = @g6[tid]; @g6[tid] = @g5[tid]; @g5[tid] = @g4[tid];
  @g4[tid] = @g3[tid]; @g3[tid] = @g2[tid]; @g2[tid] = @g1[tid]; @g1[tid] = \$g;
  @h8[tid] = @h7[tid]; @h7[tid] = @h6[tid]; @h6[tid] = @h5[tid]; @h5[tid] = @h4[tid];
  @h4[tid] = @h3[tid]; @h3[tid] = @h2[tid]; @h2[tid] = @h1[tid]; @h1[tid] = \$g - 1;
  @hi[tid] = 0;
}
EOF
traced "$T/lag.bt" "$T/lag.out"
python3 - "$T/exact.out" "$T/lag.out" <<'EOF'
import re, sys
t = open(sys.argv[1], 'rb').read().decode('latin1')
for m, what in (('v', '0x3929 sub eax, r9d (eax)'), ('w', '0x4ac3 movzx r10d, byte [...] (r10b)')):
    d = {int(k): int(c) for k, c in re.findall(r'@%s\[(\d+)\]: (\d+)' % m, t)}
    n = sum(d.values())
    top = sorted(d.items(), key=lambda x: -x[1])[:4]
    print('exact %s: %d executions, %s' % (what, n, ' '.join('%s %.2f%%' % (hex(k), 100 * c / n) for k, c in top)))
t = open(sys.argv[2]).read()
A, B = {}, {}
for m, d in (('A', A), ('B', B)):
    for j, z, v in re.findall(r'@%s\[(\d+), (\d)\]: (\d+)' % m, t):
        d[(int(j), int(z))] = int(v)
print('0x3929: share of 0x0 the first-after-a-random-time unit gives, value sample J executions after the first hit')
print('  J   a=1    a=2    a=3    a=inf')
for J in (1, 2, 3, 4, 6, 8):
    row = []
    for a in (1, 2, 3, 1e12):
        c1, c0 = A[(J, 1)] - B[(J, 1)], A[(J, 0)] - B[(J, 0)]
        w1, w0 = c1 + a * B[(J, 1)], c0 + a * B[(J, 0)]
        row.append(100 * w1 / (w0 + w1))
    print('  %d  %s' % (J, '  '.join('%5.1f' % x for x in row)))
EOF
