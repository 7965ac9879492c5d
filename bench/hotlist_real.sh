#!/bin/bash
# bench/hotlist_real.sh - value hotlists of programs nobody here wrote (issue 21 item 4): for xz,
# gzip, sqlite3 and python3 from Debian (apt-get install xz-utils gzip sqlite3 python3), the
# default hotlist (dcpid -vtrace vp-classic: the bp backend, default -vbudget) against the oracle
# (dcpid -voracle ADDR:IMAGE: every execution of the instruction in windows) on the same run.
#   1. a discovery run per program: the hottest instructions (PC samples) of its hottest
#      procedures that vp-classic lists, NINSN of them (default 6);
#   2. one run per instruction with -voracle ADDR:IMAGE -voracle-duty DUTY (default 5/50: 5 ms
#      windows, 10% of the run, ~100 windows in 5 s): dcpilist shows the bp hotlist and the
#      oracle's (vp-classic.oracle) of that instruction;
#   3. per row: bp's value samples (n) and the oracle's executions (vtot), bp's printed +-B, and
#      for each of bp's top-3 values bp share / oracle share (a value the oracle did not list
#      counts 0%), |delta| and whether +-B holds the oracle's share. Rows whose oracle top value
#      holds under 10% (a counter, an address: no hot value) or with fewer than VMIN bp value
#      samples (default 30) or OMIN oracle executions (default 1000) are listed as left out,
#      with the reason.
# Summary per program and overall: rows, top-3 shares, mean and max |delta|, share of top-3
# shares whose +-B holds the oracle's; and whether bp's shares scatter around the oracle's as
# independent draws would: z = delta / bp's binomial standard deviation, its rms (1 when they
# do), mean (0 without bias) and how many lie beyond 1.96 (5% expected).
# Usage: bench/hotlist_real.sh BUILD_DIR [SCALE (1)] (PROGS="xz gzip" limits the programs;
#        NINSN=N instructions per program; DUTY=ON/EVERY the oracle's windows; BUDGET=PCT runs
#        bp with -vbudget PCT instead of its default)
set -u
export LC_ALL=C
B=$(cd "${1:?usage: hotlist_real.sh BUILD_DIR [SCALE]}" && pwd)
SCALE=${2:-1}
PROGS=${PROGS:-xz gzip sqlite3 python3}
NINSN=${NINSN:-6}
DUTY=${DUTY:-5/50}
VMIN=${VMIN:-30}
OMIN=${OMIN:-1000}
T=$(mktemp -d /tmp/dcpi-hotreal.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
PY=/usr/bin/python3
bud=()
[ -n "${BUDGET:-}" ] && bud=(-vbudget "$BUDGET")

# the work, a few seconds of CPU per SCALE each here. xz and gzip: text that compresses like
# text (words from a fixed generator), SCALE x 4 MB
. "$(dirname "${BASH_SOURCE[0]}")/lib/text.sh"
bench_text $((SCALE * 600000)) >"$T/in.txt"
cat >"$T/q.sql" <<EOF
create table t(a integer, b text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < $((SCALE * 300000)))
insert into t select x, printf('%08d', (x * 7919) % 100003) from c;
create index ib on t(b);
EOF
for _ in $(seq 30); do # the queries again: value samples need seconds of CPU, not 0.3
    cat >>"$T/q.sql" <<EOF
select count(*), sum(a) from t where b like '%7%';
select b, count(*) from t group by substr(b, 1, 3) order by 2 desc limit 3;
EOF
done
cat >"$T/w.py" <<EOF
d = {}
for i in range($((SCALE * 20000000))):
    k = (i * 2654435761) % 1000
    d[k] = d.get(k, 0) + len(str(i))
print(sum(d.values()))
EOF

cmd() {
    case $1 in
    xz) echo "xz -6 -T1 -c $T/in.txt" ;;
    gzip) echo "gzip -9 -c $T/in.txt" ;;
    sqlite3) echo "sqlite3 :memory: -init $T/q.sql .quit" ;;
    python3) echo "$PY $T/w.py" ;;
    esac
}

# listing DB PROC IMAGE: dcpilist with vp-classic's hotlists (and the oracle's, when there)
listing() {
    "$B/dcpilist" -db "$1" -asm -vtrace vp-classic -vshow 16 -vcutoff 0 "$2" "$3" 2>/dev/null
}

# candidates PROG: "pcsamples addr proc image" of the instructions with a hotlist, hottest first
candidates() {
    local db=$T/$1-disc proc img
    "$B/dcpiprof" -db "$db" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && $NF !~ /^\[/ {print $4, $5}' |
        head -6 >"$T/$1.procs"
    while read -r proc img; do
        listing "$db" "$proc" "$img" | awk -v p="$proc" -v i="$img" \
            '$1 ~ /^[0-9]+$/ && /\(/ && !/missing/ { m = 0
                if (match($0, /\([0-9.]+% /)) m = substr($0, RSTART + 1, RLENGTH - 3) + 0
                if (m >= 10) print $1, $2, p, i }'
    done <"$T/$1.procs" | sort -k1,1nr | head -"$NINSN"
}

# pairs LINE: "value share" per (share% value) of a hotlist line
pairs() {
    grep -o '([0-9.]*% [^)]*)' <<<"$1" | tr -d '()%'
}

printf '%-8s %-9s %-28s %5s %6s %5s  %-50s %s\n' program address instruction bp-n oracle +-B \
    "top-3 values: bp / oracle share (|delta|, in +-B?)" ""
for prog in $PROGS; do
    c=$(cmd "$prog")
    # shellcheck disable=SC2086
    "$B/dcpid" -db "$T/$prog-disc" -vtrace vp-classic "${bud[@]}" -- $c >/dev/null 2>"$T/$prog-disc.err" ||
        { echo "bench: $prog (discovery) failed: $(tail -2 "$T/$prog-disc.err")" >&2; continue; }
    candidates "$prog" >"$T/$prog.cand"
    k=0
    while read -r _ addr proc img; do
        k=$((k + 1))
        db=$T/$prog-$k
        # shellcheck disable=SC2086
        "$B/dcpid" -db "$db" -vtrace vp-classic "${bud[@]}" -voracle "$addr:$img" -voracle-duty "$DUTY" \
            -- $c >/dev/null 2>"$db.err" ||
            { echo "bench: $prog $addr failed: $(tail -2 "$db.err")" >&2; continue; }
        orc=$(grep '^dcpid: voracle ' "$db.err")
        listing "$db" "$proc" "$img" >"$db.list"
        bl=$(awk -v a="$addr" '$1 ~ /^[0-9]+$/ && $2 == a' "$db.list" | head -1)
        ol=$(grep -A1 -E "^ *[0-9]+ +$addr " "$db.list" | grep 'vp-classic.oracle' | head -1)
        insn=$(awk '{ s = ""; for (i = 3; i <= NF && $i !~ /^[0-9]+$/; i++) s = s (s ? " " : "") $i; print s }' <<<"$bl")
        bn=$(awk '{ for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $(i + 1) ~ /^[0-9.]+$/) { print $i; exit } }' <<<"$bl")
        on=$(awk '{ print $2 }' <<<"$ol")
        bb=$(grep -o '+-[0-9.]*' <<<"$bl" | head -1 | tr -d '+-')
        pairs "$bl" | head -3 >"$db.bp"
        pairs "$ol" >"$db.or"
        otop=$(head -1 "$db.or" | awk '{ print $1 + 0 }')
        why=""
        [ -n "$bl" ] || why="no bp hotlist"
        [ -z "$why" ] && [ -z "$ol" ] && why="no oracle hotlist ($orc)"
        [ -z "$why" ] && [ "${bn:-0}" -lt "$VMIN" ] && why="$bn bp value samples (< $VMIN)"
        [ -z "$why" ] && [ "${on:-0}" -lt "$OMIN" ] && why="$on oracle executions (< $OMIN)"
        [ -z "$why" ] && awk -v t="${otop:-0}" 'BEGIN { exit !(t < 10) }' && why="no hot value (oracle top ${otop}%)"
        if [ -n "$why" ]; then
            printf '%-8s %-9s %-28.28s  left out: %s\n' "$prog" "$addr" "$insn" "$why"
            continue
        fi
        awk -v prog="$prog" -v addr="$addr" -v insn="$insn" -v bn="$bn" -v on="$on" -v bb="$bb" '
            FNR == NR { o[$2] = $1; next }
            { v = $2; s = $1; os = (v in o) ? o[v] : 0; d = s - os; if (d < 0) d = -d
              in_b = d <= bb + 0; line = line sprintf("%s %.1f/%.1f (%.1f,%s) ", v, s, os, d, in_b ? "y" : "N")
              z = (os > 0 && os < 100) ? (s - os) / sqrt(os * (100 - os) / bn) : "-"
              print "share", prog, d, in_b, z > "/dev/stderr" }
            END { printf "%-8s %-9s %-28.28s %5d %6d %5s  %s\n", prog, addr, insn, bn, on, bb, line
                  print "row", prog > "/dev/stderr" }
        ' "$db.or" "$db.bp" 2>>"$T/shares"
    done <"$T/$prog.cand"
done
awk '$1 == "row" { r[$2]++; R++ }
    $1 == "share" { n[$2]++; s[$2] += $3; if ($3 > m[$2]) m[$2] = $3; h[$2] += $4
        N++; S += $3; if ($3 > M) M = $3; H += $4 }
    $1 == "share" && $5 != "-" { Z++; ZZ += $5 * $5; ZS += $5; if ($5 > 1.96 || $5 < -1.96) ZO++ }
    END { for (p in n) printf "%-8s summary: %d rows, %d top-3 shares: mean |delta| %.2f, max %.1f, +-B holds the oracle %d/%d (%.1f%%)\n", p, r[p], n[p], s[p] / n[p], m[p], h[p], n[p], 100 * h[p] / n[p]
          if (N) printf "overall: %d rows, %d top-3 shares: mean |delta| %.2f, max %.1f, +-B holds the oracle %d/%d (%.1f%%)\n", R, N, S / N, M, H, N, 100 * H / N
          if (Z) printf "z = (bp - oracle) / sqrt(oracle (1 - oracle) / bp-n), over the %d shares with an oracle share inside (0, 100%%): rms %.2f, mean %+.2f, |z| > 1.96 in %d (%.1f expected)\n", Z, sqrt(ZZ / Z), ZS / Z, ZO, 0.05 * Z }' "$T/shares"
