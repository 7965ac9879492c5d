#!/bin/bash
# values_oracle.sh - dcpid -voracle ADDR:IMAGE (issue 21 item 4): every execution of one
# instruction, exactly. samples/work-accuracy MODE 150 500 sleeps 500 ms (dcpid arms the oracle
# when it sees the image mapped), then runs whole rounds of NSEQ = 2000 executions of the
# measured instruction, each round holding every value exactly in its printed share, and
# prints the rounds it ran. With -voracle-duty 1/1 (one window: the whole run) the oracle's
# profile vp-classic.oracle must count exactly rounds x 2000 executions and rounds x 20 x
# PERCENT of each value (dcpicat of the .vprof), with nothing throttled, lost, stray or missed;
# dcpilist -vtrace vp-classic shows it as "vp-classic.oracle" under the sampled hotlist of the
# same instruction. Modes: chase (a load's loaded value: the oracle's BPF read; vp-classic) and
# stride (a load's effective address, 5 addresses; vp-addr). Then the default windows (20 ms in every 200) on a longer run take
# some executions, not all, in more than one window. The instruction's address comes from a
# plain first run's listing (-voracle takes the address dcpilist shows; chase names it
# acc_chase+OFF).
# Skips (77) without cpu-clock sampling, execute breakpoints or BPF (chase's loaded value), and
# when the kernel throttled the period-1 breakpoint (perf_event_max_sample_rate: a machine whose
# traps are fast enough to pass it; the oracle then says it is not exact).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
W=$BIN/samples/work-accuracy
T=$(mktemp -d /tmp/dcpi-e2e-values-oracle.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for f in dcpid dcpilist dcpicat samples/work-accuracy plugins/vp-classic.so plugins/vp-addr.so; do
    [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
done
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
to 60 "$BIN/dcpid" -db "$T/probe2" -event cpu-clock -vbp -vtrace vp-classic -- true >"$T/probe.out" 2>&1 ||
    fail "probe run failed: $(cat "$T/probe.out")"
log=$(cat "$T"/probe2/dcpid-*.log)
grep -q 'execute breakpoints unavailable' <<<"$log" && e2e_skip "execute breakpoints unavailable"
grep -q 'memory values read by BPF' <<<"$log" ||
    e2e_skip "BPF cannot be loaded here: $(grep -o 'memory values .*missing.*' <<<"$log")"

# addr MODE PROC PATTERN: the address of the instruction matching PATTERN in PROC (a plain run;
# the listing shows every instruction of a sampled procedure, so 100 ms do)
addr() {
    to 120 "$BIN/dcpid" -db "$T/plain-$1" -event cpu-clock -- "$W" "$1" 100 \
        >/dev/null 2>"$T/plain-$1.err" || fail "$1: plain run: $(cat "$T/plain-$1.err")"
    "$BIN/dcpilist" -db "$T/plain-$1" -asm "$2" "$W" 2>&1 |
        awk -v pat="$3" '$1 ~ /^[0-9]+$/ && $0 ~ pat { print $2; exit }'
}

# lo MODE PROC: the procedure's first address in the plain run's listing header "(LO..HI)"
lo() {
    "$BIN/dcpilist" -db "$T/plain-$1" -asm "$2" "$W" 2>&1 | grep -o '(0x[0-9a-f]*\.\.' | head -1 | tr -d '(.'
}

# oracle MODE PROC PATTERN PLUGIN [sym]: exact counts of the whole run (sym: -voracle names the
# instruction PROC+OFF instead of its address). A run whose rings or BPF log lost records
# (dcpid fell behind the traps on a loaded machine; counted, never silent) is run again, at
# most 3 times (an ASan build that still falls behind skips, with the counts).
oracle() {
    local mode=$1 pl=$4 a spec l rounds line vp vtot n t val pct want
    a=$(addr "$@")
    [ -n "$a" ] || fail "$mode: no instruction matching '$3' in $2"
    spec=$a
    if [ "${5:-}" = sym ]; then
        l=$(lo "$mode" "$2")
        [ -n "$l" ] || fail "$mode: no (LO..HI) in the listing of $2"
        spec=$2+$(printf '0x%x' $((a - l)))
    fi
    for try in 1 2 3; do
        rm -rf "${T:?}/$mode"
        to 120 "$BIN/dcpid" -db "$T/$mode" -event cpu-clock -vtrace "$pl" -voracle "$spec:$W" \
            -voracle-duty 1/1 -- "$W" "$mode" 150 500 >"$T/$mode.out" 2>"$T/$mode.err" ||
            fail "$mode: dcpid -voracle failed: $(cat "$T/$mode.err")"
        line=$(grep '^dcpid: voracle ' "$T/$mode.err") || fail "$mode: no voracle line: $(cat "$T/$mode.err")"
        echo "$mode: -voracle $spec: $line"
        grep -q " voracle $a:" <<<"$line" || fail "$mode: -voracle $spec is not $a: $line"
        grep -q ' ring-lost 0 ' <<<"$line$IFS" && grep -q ' memory-missed 0 ' <<<"$line$IFS" && break
        echo "$mode: the rings or the BPF log lost records (try $try of 3)"
    done
    # (an ASan dcpid may not keep up with a trap per execution: counted, so said, and skipped)
    if [ "${DCPI_SANITIZE:-0}" = 1 ] && ! { grep -q ' ring-lost 0 ' <<<"$line$IFS" &&
        grep -q ' memory-missed 0 ' <<<"$line$IFS"; }; then
        e2e_skip "an ASan build of dcpid fell behind the oracle's traps 3 times (counted: $line)"
    fi
    n=$(sed 's/.* throttled \([0-9]*\).*/\1/' <<<"$line")
    [ "$n" = 0 ] || e2e_skip "the kernel throttled the oracle's period-1 breakpoint ($line;" \
        "perf_event_max_sample_rate $(cat /proc/sys/kernel/perf_event_max_sample_rate))"
    for k in ring-lost memory-missed stray failed no-plugin; do
        n=$(sed "s/.* $k \\([0-9]*\\).*/\\1/" <<<"$line")
        [ "$n" = 0 ] || fail "$mode: $k $n (every execution must reach the profile): $line"
    done
    rounds=$(sed -n 's/^rounds \([0-9]*\) .*/\1/p' "$T/$mode.err")
    [ "${rounds:-0}" -ge 1 ] || fail "$mode: the workload ran no round: $(cat "$T/$mode.err")"
    vp=$(ls "$T/$mode"/*/*/work-accuracy_*/"$pl".oracle.vprof 2>/dev/null | head -1)
    [ -n "$vp" ] || fail "$mode: no $pl.oracle.vprof: $(ls -R "$T/$mode")"
    "$BIN/dcpicat" "$vp" >"$T/$mode.cat" || fail "$mode: dcpicat $vp"
    grep -q '^backend oracle$' "$T/$mode.cat" || fail "$mode: header backend is not oracle"
    grep -q '^oracle-all 1$' "$T/$mode.cat" || fail "$mode: -voracle-duty 1/1 but no 'oracle-all 1'"
    off=$(printf '0x%x' $((a - 0x$(sed -n 's/^tstart 0x//p' "$T/$mode.cat"))))
    vtot=$(awk -v o="$off" '$1 == o && $2 == "vtot" { print $3 }' "$T/$mode.cat")
    [ "$vtot" = $((rounds * 2000)) ] ||
        fail "$mode: oracle vtot '$vtot' at $off, the workload ran $rounds rounds = $((rounds * 2000)) executions"
    for t in $(sed -n 's/^truth //p' "$T/$mode.out"); do
        val=${t#*=} pct=${val#*:} val=${val%%:*}
        want=$((rounds * 20 * pct))
        got=$(awk -v o="$off" -v v="$val" '$1 == o { on = 1; next } /^0x/ && $2 == "vtot" { on = 0 }
            on && $1 == v { print $2 }' "$T/$mode.cat")
        [ "$got" = "$want" ] || fail "$mode: value $val counted '$got' times, exactly $want ($pct% of $vtot)"
        echo "ok: $mode: $val $got of $vtot executions (exactly $pct%)"
    done
    DCPI_PLUGIN_PATH= "$BIN/dcpilist" -db "$T/$mode" -asm -vtrace "$pl" -vcutoff 0 "$2" "$W" \
        >"$T/$mode.list" 2>&1 || fail "$mode: dcpilist: $(cat "$T/$mode.list")"
    grep -A1 " $a " "$T/$mode.list" | grep -q "$pl.oracle *$vtot " ||
        fail "$mode: dcpilist does not show the oracle's $vtot under $a: $(grep -A2 " $a " "$T/$mode.list")"
}

oracle chase acc_chase 'mov +r[a-z0-9]+, qword ptr \[r[a-z0-9]+\+0x8\]' vp-classic sym
oracle stride acc_stride 'mov +r[a-z0-9]+, qword ptr \[r[a-z0-9]+\+r[a-z0-9]+\*8\]' vp-addr

# the default windows: some executions in several windows, not all of them (20 ms in every
# 200 ms of wall time: 700 ms of CPU hold at least 3)
a=$(grep -o '0x[0-9a-f]*:' <<<"$(grep '^dcpid: voracle' "$T/chase.err")" | tr -d :)
to 120 "$BIN/dcpid" -db "$T/win" -event cpu-clock -vbp -vtrace vp-classic -voracle "$a:$W" \
    -- "$W" chase 700 >"$T/win.out" 2>"$T/win.err" || fail "windows: $(cat "$T/win.err")"
line=$(grep '^dcpid: voracle ' "$T/win.err") || fail "windows: no voracle line"
win=$(sed 's/.* windows \([0-9]*\).*/\1/' <<<"$line")
smp=$(sed 's/.* samples \([0-9]*\).*/\1/' <<<"$line")
rounds=$(sed -n 's/^rounds \([0-9]*\) .*/\1/p' "$T/win.err")
[ "$win" -ge 2 ] && [ "$smp" -gt 0 ] && [ "$smp" -lt $((rounds * 2000)) ] ||
    fail "windows: $win windows, $smp samples of $((rounds * 2000)) executions: $line"
echo "ok: default windows: $win windows took $smp of $((rounds * 2000)) executions"
# ... and they are clusters: the profile says so (oracle-all 0, the windows with executions, their
# executions and the sum of their squares), and the listing's +-B of the oracle's hotlist is the
# cluster bound, wider than a binomial over its executions would be
vp=$(ls "$T"/win/*/*/work-accuracy_*/vp-classic.oracle.vprof 2>/dev/null | head -1)
"$BIN/dcpicat" "$vp" >"$T/win.cat" || fail "windows: dcpicat $vp"
grep -q '^oracle-all 0$' "$T/win.cat" || fail "windows: no 'oracle-all 0' in $vp"
nw=$(sed -n 's/^oracle-windows //p' "$T/win.cat")
nx=$(sed -n 's/^oracle-execs //p' "$T/win.cat")
nq=$(sed -n 's/^oracle-sumsq //p' "$T/win.cat")
[ "${nw:-0}" -ge 2 ] && [ "${nx:-0}" -ge "$nw" ] && [ "${nq:-0}" -ge "$nx" ] ||
    fail "windows: oracle-windows '$nw' oracle-execs '$nx' oracle-sumsq '$nq' in $vp"
DCPI_PLUGIN_PATH= "$BIN/dcpilist" -db "$T/win" -asm -vtrace vp-classic -vcutoff 0 acc_chase "$W" \
    >"$T/win.list" 2>&1 || fail "windows: dcpilist: $(cat "$T/win.list")"
ol=$(grep -A1 " $a " "$T/win.list" | grep 'vp-classic.oracle' | head -1)
ob=$(grep -o '+-[0-9.]*' <<<"$ol" | head -1 | tr -d '+-')
on=$(awk '{ print $2 }' <<<"$ol")
# the binomial reach of a 50% share over on executions, the least a cluster bound can be
awk -v b="${ob:-0}" -v n="${on:-0}" 'BEGIN { exit !(n > 0 && b >= 100 * 1.96 * sqrt(0.25 / n)) }' ||
    fail "windows: the oracle's +-$ob over $on executions in $nw windows is not a cluster bound: $ol"
echo "ok: default windows are clusters: $nw windows, $nx executions, sum of squares $nq: +-$ob"
# bad specifications: one line naming the thing and the reason, exit 1, no command run (an address
# past the program: gold, make test's linker (DCPI_FAST_LINK), maps the ELF header and the text in
# one executable segment from 0, so a small address is in its code)
for bad in "0x7ffffff0:$W|is not in" "nosuch+0x4:$W|no symbol 'nosuch'" "0x10:$T/none|No such file" \
    "acc_chase|is not ADDR:IMAGE"; do
    spec=${bad%%|*} want=${bad#*|}
    to 60 "$BIN/dcpid" -db "$T/bad" -event cpu-clock -vtrace vp-classic -voracle "$spec" \
        -- touch "$T/ran" >"$T/bad.out" 2>&1
    rc=$?
    [ $rc = 1 ] && [ "$(wc -l <"$T/bad.out")" = 1 ] && grep -q -- "-voracle: .*$want" "$T/bad.out" &&
        [ ! -e "$T/ran" ] || fail "-voracle $spec: exit $rc, want 1 and one line '$want': $(cat "$T/bad.out")"
    echo "ok: -voracle $spec: $(cat "$T/bad.out")"
done
echo "PASS: -voracle counts every execution exactly (chase, stride) and shows beside the hotlist"
