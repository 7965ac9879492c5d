#!/bin/bash
# bench/hotlist_exact.sh - the real-program table against an EXACT count (issue 29 item 7): for
# bzip2, xz, gzip, sqlite3 and python3 from Debian (apt-get install bzip2 xz-utils gzip sqlite3
# python3), the sampled hotlist (dcpid -vtrace vp-classic: the default backend at the default
# -vbudget, or BUDGET) against the share of each value in EVERY execution of the instruction over
# the whole run, with the windowed oracle (-voracle-duty DUTY, what bench/hotlist_real.sh used as
# its reference) beside it.
#   the exact count: dcpid -vtrace vp-classic -voracle ADDR:IMAGE -voracle-duty 1/1 -vhot HOT (a
#     period-1 breakpoint open for the whole run: every execution through the same plugin, so the
#     value is the one the sampled hotlist means), with kernel.perf_cpu_time_max_percent=0 so the
#     kernel never throttles it (restored at exit). Its status line says how many executions it
#     took and how many records the rings lost; XCHECK=1 also counts the executions with a
#     uprobe (perf probe -x IMAGE -a ADDR; perf stat -e probe_...) on a separate run. A row whose
#     exact run lost more than 1% of the executions is marked.
#   the oracle runs take the sampled runs' backend (the default, or SAMPLED="-vbp" for the bp
#     backend; the oracle works beside the inproc backend since 735d1ef, which gave it the user
#     registers and a debug register): the inproc backend preloads its agent, which moves the
#     heap, so an exact run with -vbp (what stops 32-35 ran) placed the heap elsewhere and its
#     pointer values did not compare with the sampled runs' (XBACKEND="-vbp" runs them so);
#   every run is the same deterministic work with ASLR off (setarch -R, PYTHONHASHSEED=0), so
#     address values agree between the runs; the sampled hotlist is pooled over REPS runs (dcpilist
#     -epoch all) because one run at the default budget gives a few dozen value samples.
#   1. REPS sampled runs per program into one database; candidates: the hottest instructions (PC
#      samples) of its hottest procedures with a vp-classic hotlist whose top value holds >= 10%,
#      NINSN of them;
#   2. per instruction an exact run (TIMEOUT s at most: a trap per execution, ~15 us here) and a
#      windowed-oracle run (DUTY, default 5/50);
#   3. per row: sampled n and +-B; per value of the sampled top 3: sampled / exact / windowed
#      share, and whether the sampled +-B holds the exact share (y/N) and whether the windowed
#      oracle's own +-B does (y/N).
# Usage: bench/hotlist_exact.sh BUILD_DIR [SCALE (0.25)] (PROGS, NINSN (4), REPS (10; REPS_PROG
#        for one program, e.g. REPS_bzip2=300: a short process's rows need more runs), DUTY,
#        BUDGET, HOT (64), TIMEOUT (300), XCHECK, VMIN (30: candidates with fewer pooled
#        sampled values are skipped), EXACT_FROM, EXACT_REDO, XBACKEND, REGS)
# REGS=N: also N runs with -vregs (the registers of the PC samples that land on the instruction:
# each independent, weighted by the time a random moment finds the program at that instruction),
# and per row one more line with its n and its shares of the top-3 values. Where the -vregs
# shares and the sampled ones miss the exact share alike, the cause is the time-weighting of any
# time-based trigger (an execution that takes longer is found more often), not the arms. Address
# values show "-/-": -vregs loads no agent, and the agent moves the heap and the mmap area.
# EXACT_FROM=DIR: a directory an earlier run kept (KEEP=1, same SCALE): its inputs, candidates
# and exact and windowed runs are taken as they are (the runs are deterministic: same input,
# ASLR off), and only the sampled runs are made again, e.g. to compare a new sampler with the
# same exact counts (an exact run traps every execution: hours for the whole table);
# EXACT_REDO="PROG:ADDR ...": those instructions' exact and windowed runs are made again all the
# same (e.g. the pointer rows an earlier run made with -vbp; with ASLR off two programs can share
# an address, hence the program).
set -u
export LC_ALL=C
B=$(cd "${1:?usage: hotlist_exact.sh BUILD_DIR [SCALE]}" && pwd)
SCALE=${2:-0.25}
PROGS=${PROGS:-bzip2 xz gzip sqlite3 python3}
NINSN=${NINSN:-4}
REPS=${REPS:-10}
DUTY=${DUTY:-5/50}
HOT=${HOT:-64}
TIMEOUT=${TIMEOUT:-300}
VMIN=${VMIN:-30}
XBACKEND=${XBACKEND-${SAMPLED:-}}
T=$(mktemp -d /tmp/dcpi-hotexact.XXXXXX)
old_pct=$(sysctl -n kernel.perf_cpu_time_max_percent)
cleanup() {
    sysctl -qw kernel.perf_cpu_time_max_percent="$old_pct"
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
sysctl -qw kernel.perf_cpu_time_max_percent=0 || echo "bench: cannot turn perf throttling off" >&2
bud=()
[ -n "${BUDGET:-}" ] && bud=(-vbudget "$BUDGET")
export PYTHONHASHSEED=0
[ -d "$B/plugins" ] && export DCPI_PLUGIN_PATH=$B/plugins${DCPI_PLUGIN_PATH:+:$DCPI_PLUGIN_PATH}
PY=/usr/bin/python3
n=$(awk -v s="$SCALE" 'BEGIN { print int(s * 600000) }')
. "$(dirname "${BASH_SOURCE[0]}")/lib/text.sh"
bench_text "$n" >"$T/in.txt"
[ -n "${EXACT_FROM:-}" ] && cp "$EXACT_FROM/in.txt" "$T/in.txt"
rows=$(awk -v s="$SCALE" 'BEGIN { print int(s * 300000) }')
cat >"$T/q.sql" <<EOF
create table t(a integer, b text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < $rows)
insert into t select x, printf('%08d', (x * 7919) % 100003) from c;
create index ib on t(b);
select count(*), sum(a) from t where b like '%7%';
select b, count(*) from t group by substr(b, 1, 3) order by 2 desc limit 3;
EOF
cat >"$T/w.py" <<EOF
d = {}
for i in range($(awk -v s="$SCALE" 'BEGIN { print int(s * 4000000) }')):
    k = (i * 2654435761) % 1000
    d[k] = d.get(k, 0) + len(str(i))
print(sum(d.values()))
EOF

cmd() {
    case $1 in
    bzip2) echo "setarch -R bzip2 -9 -c $T/in.txt" ;;
    xz) echo "setarch -R xz -6 -T1 -c $T/in.txt" ;;
    gzip) echo "setarch -R gzip -9 -c $T/in.txt" ;;
    sqlite3) echo "setarch -R sqlite3 :memory: -init $T/q.sql .quit" ;;
    python3) echo "setarch -R $PY $T/w.py" ;;
    esac
}

# listing DB PROC IMAGE: dcpilist of every epoch with vp-classic's hotlists (and the oracle's)
listing() {
    "$B/dcpilist" -db "$1" -epoch all -asm -vtrace vp-classic -vshow 64 -vcutoff 0 "$2" "$3" 2>/dev/null
}

# candidates PROG: "pcsamples addr proc image" of the instructions with a hotlist, hottest first
candidates() {
    local db=$T/$1-s proc img
    "$B/dcpiprof" -db "$db" -epoch all 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && $NF !~ /^\[/ {print $4, $5}' |
        head -6 >"$T/$1.procs"
    while read -r proc img; do
        listing "$db" "$proc" "$img" | awk -v p="$proc" -v i="$img" \
            '$1 ~ /^[0-9]+$/ && /\(/ && !/missing/ { m = 0
                if (match($0, /\([0-9.]+% /)) m = substr($0, RSTART + 1, RLENGTH - 3) + 0
                if (m >= 10 && $(NF - 0) != "") print $1, $2, p, i, $0 }' |
            while read -r pcs a p i rest; do
                nn=$(nof "$rest")
                [ "${nn:-0}" -ge "$VMIN" ] && echo "$pcs $a $p $i"
            done
    done <"$T/$1.procs" | sort -k1,1nr | head -"$NINSN"
}

# pairs LINE: "share value" per (share% value) of a hotlist line
pairs() {
    grep -o '([0-9.]*% [^)]*)' <<<"$1" | tr -d '()%'
}
# nof LINE: the hotlist's n (the number before the two columns after the instruction)
nof() {
    awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $(i + 1) ~ /^[0-9.]+$/) { print $i; exit } }' <<<"$1"
}
bof() {
    grep -o '+-[0-9.]*' <<<"$1" | head -1 | tr -d '+-'
}

printf '%-8s %-9s %-26s %5s %5s %9s %5s  %s\n' program address instruction n +-B exact win+-B \
    "top-3 values: sampled / exact / windowed share (sampled +-B holds exact?, windowed +-B holds exact?)"
for prog in $PROGS; do
    c=$(cmd "$prog")
    reps=REPS_$prog
    for r in $(seq "${!reps:-$REPS}"); do
        # shellcheck disable=SC2086
        "$B/dcpid" -db "$T/$prog-s" ${SAMPLED:-} -vtrace vp-classic "${bud[@]}" -- $c >/dev/null 2>"$T/$prog-s.$r.err" ||
            echo "bench: $prog sampled run $r failed: $(tail -2 "$T/$prog-s.$r.err")" >&2
    done
    for ((r = 1; r <= ${REGS:-0}; r++)); do
        # shellcheck disable=SC2086
        "$B/dcpid" -db "$T/$prog-r" -vregs -vtrace vp-classic -- $c >/dev/null 2>"$T/$prog-r.$r.err" ||
            echo "bench: $prog -vregs run $r failed: $(tail -2 "$T/$prog-r.$r.err")" >&2
    done
    if [ -n "${EXACT_FROM:-}" ]; then
        cp "$EXACT_FROM/$prog.cand" "$T/$prog.cand"
    else
        candidates "$prog" >"$T/$prog.cand"
    fi
    k=0
    while read -r _ addr proc img; do
        k=$((k + 1))
        ex=$T/$prog-x$k
        wi=$T/$prog-w$k
        t0=$(date +%s)
        reuse=${EXACT_FROM:-}
        [[ " ${EXACT_REDO:-} " == *" $prog:$addr "* ]] && reuse=
        if [ -n "$reuse" ]; then
            cp -r "$EXACT_FROM/$prog-x$k" "$EXACT_FROM/$prog-w$k" "$T/"
            cp "$EXACT_FROM/$prog-x$k.err" "$EXACT_FROM/$prog-w$k.err" "$T/"
            xrc=0
        else
            # shellcheck disable=SC2086
            timeout "$TIMEOUT" "$B/dcpid" -db "$ex" $XBACKEND -vtrace vp-classic -vhot "$HOT" \
                -voracle "$addr:$img" -voracle-duty 1/1 -- $c >/dev/null 2>"$ex.err"
            xrc=$?
        fi
        t1=$(date +%s)
        # shellcheck disable=SC2086
        [ -n "$reuse" ] || "$B/dcpid" -db "$wi" $XBACKEND -vtrace vp-classic \
            -voracle "$addr:$img" -voracle-duty "$DUTY" -- $c >/dev/null 2>"$wi.err"
        xv=$(grep '^dcpid: voracle 0x' "$ex.err" | tail -1)
        xs=$(grep -o ' samples [0-9]*' <<<"$xv" | awk '{ print $2 }')
        xl=$(grep -o 'ring-lost [0-9]*' <<<"$xv" | awk '{ print $2 }')
        xm=$(grep -o 'memory-missed [0-9]*' <<<"$xv" | awk '{ print $2 }')
        pc=""
        if [ -n "${XCHECK:-}" ]; then
            ev=$(perf probe -q -x "$img" -a "$addr" 2>&1 | grep -o 'probe_[a-z0-9_]*:[a-z0-9_]*' | head -1)
            # shellcheck disable=SC2086
            [ -n "$ev" ] && pc=$(perf stat -x, -e "$ev" -- $c 2>&1 >/dev/null | awk -F, 'NF > 2 { print $1 }' | tail -1)
            [ -n "$ev" ] && perf probe -q -d "$ev" >/dev/null 2>&1
        fi
        echo "exact $prog $addr rc $xrc $((t1 - t0)) s samples ${xs:-?} ring-lost ${xl:-?} memory-missed ${xm:-?} uprobe-count ${pc:--}" >>"$T/exactlog"
        listing "$T/$prog-s" "$proc" "$img" >"$T/$prog-s$k.list"
        listing "$ex" "$proc" "$img" >"$ex.list"
        listing "$wi" "$proc" "$img" >"$wi.list"
        sl=$(awk -v a="$addr" '$1 ~ /^[0-9]+$/ && $2 == a' "$T/$prog-s$k.list" | head -1)
        xo=$(grep -A1 -E "^ *[0-9]+ +$addr " "$ex.list" | grep 'vp-classic.oracle' | head -1)
        wo=$(grep -A1 -E "^ *[0-9]+ +$addr " "$wi.list" | grep 'vp-classic.oracle' | head -1)
        insn=$(awk '{ s = ""; for (i = 3; i <= NF && $i !~ /^[0-9]+$/; i++) s = s (s ? " " : "") $i; print s }' <<<"$sl")
        sn=$(nof "$sl")
        xn=$(awk '{ print $2 }' <<<"$xo")
        wn=$(awk '{ print $2 }' <<<"$wo")
        sb=$(bof "$sl")
        wb=$(bof "$wo")
        if [ $xrc -ne 0 ] || [ -z "$xo" ] || [ -z "$sl" ]; then
            printf '%-8s %-9s %-26.26s  left out: %s\n' "$prog" "$addr" "$insn" \
                "$([ $xrc -ne 0 ] && echo "exact run rc $xrc (timeout ${TIMEOUT}s?)" || echo "no hotlist (sampled '${sn:-}', exact '${xn:-}')")"
            continue
        fi
        lossy=$(awk -v s="${xs:-0}" -v l="${xl:-0}" -v m="${xm:-0}" 'BEGIN { print (s > 0 && (l + m) / (s + l) > 0.01) ? "lossy" : "" }')
        pairs "$sl" | head -3 >"$ex.sp"
        pairs "$xo" >"$ex.xp"
        pairs "$wo" >"$ex.wp"
        awk -v prog="$prog" -v addr="$addr" -v insn="$insn" -v sn="$sn" -v xn="$xn" -v wn="${wn:-0}" \
            -v sb="$sb" -v wb="${wb:-100}" -v lossy="$lossy" '
            FILENAME == ARGV[1] { x[$2] = $1; next }
            FILENAME == ARGV[2] { w[$2] = $1; next }
            { v = $2; s = $1; xs = (v in x) ? x[v] : 0; ws = (v in w) ? w[v] : 0
              d = s - xs; if (d < 0) d = -d; dw = ws - xs; if (dw < 0) dw = -dw
              hb = d <= sb + 0; hw = dw <= wb + 0
              line = line sprintf("%s %.1f/%.1f/%.1f (%s,%s) ", v, s, xs, ws, hb ? "y" : "N", hw ? "y" : "N")
              z = (xs > 0 && xs < 100) ? (s - xs) / sqrt(xs * (100 - xs) / sn) : "-"
              print "share", prog, d, hb, z, dw, hw, (sn >= 1000) > "/dev/stderr" }
            END { printf "%-8s %-9s %-26.26s %5d %5s %9d %5s  %s%s\n", prog, addr, insn, sn, sb, xn, wb, line, lossy
                  print "row", prog, (sn >= 1000) > "/dev/stderr" }
        ' "$ex.xp" "$ex.wp" "$ex.sp" 2>>"$T/shares"
        [ "${REGS:-0}" -gt 0 ] || continue
        rl=$(listing "$T/$prog-r" "$proc" "$img" | awk -v a="$addr" '$1 ~ /^[0-9]+$/ && $2 == a' | head -1)
        pairs "$rl" >"$ex.rp"
        awk -v rn="$(nof "$rl")" -v rb="$(bof "$rl")" 'FILENAME == ARGV[1] { x[$2] = $1; next }
            FILENAME == ARGV[2] { r[$2] = $1; next }
            length($2) > 12 { line = line $2 " -/- "; next } # an address: the layouts differ
            { line = line sprintf("%s %.1f/%.1f ", $2, ($2 in r) ? r[$2] : 0, ($2 in x) ? x[$2] : 0) }
            END { printf "%-8s %-9s %-26s %5s %5s  %s\n", "", "", "  -vregs: / exact", rn, rb, line }
        ' "$ex.xp" "$ex.rp" "$ex.sp"
    done <"$T/$prog.cand"
done
awk '$1 == "row" { r[$2]++; R++; R1 += $3 }
    $1 == "share" { n[$2]++; s[$2] += $3; if ($3 > m[$2]) m[$2] = $3; h[$2] += $4; hw[$2] += $7
        N++; S += $3; if ($3 > M) M = $3; H += $4; HW += $7; SW += $6 }
    $1 == "share" && $5 != "-" { Z++; ZZ += $5 * $5; ZS += $5; if ($5 > 1.96 || $5 < -1.96) ZO++ }
    END { for (p in n) printf "%-8s summary: %d rows, %d top-3 shares: mean |sampled - exact| %.2f, max %.1f, sampled +-B holds exact %d/%d, windowed +-B holds exact %d/%d\n", p, r[p], n[p], s[p] / n[p], m[p], h[p], n[p], hw[p], n[p]
          if (N) printf "overall: %d rows (%d with >= 1000 sampled values), %d top-3 shares: mean |sampled - exact| %.2f, max %.1f, sampled +-B holds exact %d/%d (%.1f%%); windowed oracle: mean |windowed - exact| %.2f, its +-B holds exact %d/%d (%.1f%%)\n", R, R1, N, S / N, M, H, N, 100 * H / N, SW / N, HW, N, 100 * HW / N
          if (Z) printf "z = (sampled - exact) / sqrt(exact (1 - exact) / n), %d shares inside (0, 100%%): rms %.2f, mean %+.2f, |z| > 1.96 in %d (%.1f expected)\n", Z, sqrt(ZZ / Z), ZS / Z, ZO, 0.05 * Z }' "$T/shares"
echo "exact runs:"
cat "$T/exactlog"
