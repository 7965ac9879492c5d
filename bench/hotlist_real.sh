#!/bin/bash
# bench/hotlist_real.sh - value hotlists of programs nobody here wrote (issue 21 item 4): for xz,
# gzip, sqlite3 and python3 from Debian, vp-classic's hotlists (each instruction's result) from
# the default backend (bp) against the step backend (dcpid -vstep: every instruction of its
# bursts single-stepped, exact per execution within them), the oracle, on two runs of the same
# deterministic work. For every instruction both listed with at least VMIN value samples (bp)
# and OMIN (step), and for each of bp's top-3 values: |bp share - step share| (a value step did
# not list counts as 0%), and whether bp's printed +-B contains step's share. Prints one row per
# instruction and a summary per program and overall: rows, mean and max |delta|, share of
# top-3 shares whose +-B holds the oracle's. Instructions whose top value holds under 10% of
# bp's samples (a counter, an address: no hot value, and addresses differ between the runs)
# are left out.
# Not the same run: the step backend and bp cannot run in one dcpid. The work is deterministic
# (fixed input, one thread), so both runs execute the same instructions with the same values.
# Usage: bench/hotlist_real.sh BUILD_DIR [SCALE (1)] (PROGS="xz gzip" limits the programs;
#        BUDGET=PCT runs bp with -vbudget PCT instead of its default)
set -u
export LC_ALL=C
B=$(cd "${1:?usage: hotlist_real.sh BUILD_DIR [SCALE]}" && pwd)
SCALE=${2:-1}
PROGS=${PROGS:-xz gzip sqlite3 python3}
VMIN=${VMIN:-30}
OMIN=${OMIN:-100}
T=$(mktemp -d /tmp/dcpi-hotreal.XXXXXX)
trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3
bud=()
[ -n "${BUDGET:-}" ] && bud=(-vbudget "$BUDGET")

# the input: text that compresses like text (words from a fixed generator), SCALE x 4 MB
awk -v n=$((SCALE * 600000)) 'BEGIN { srand(7); for (i = 0; i < n; i++) {
    printf "%s%s", substr("lorem ipsum dolor sit amet consectetur adipiscing elit sed do", int(rand() * 50) + 1, int(rand() * 8) + 1), (i % 12 ? " " : "\n") } }' >"$T/in.txt"
cat >"$T/q.sql" <<EOF
create table t(a integer, b text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < $((SCALE * 300000)))
insert into t select x, printf('%08d', (x * 7919) % 100003) from c;
create index ib on t(b);
select count(*), sum(a) from t where b like '%7%';
select b, count(*) from t group by substr(b, 1, 3) order by 2 desc limit 3;
EOF
cat >"$T/w.py" <<EOF
d = {}
for i in range($((SCALE * 400000))):
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

# rows PROG BE: "addr vtot B value share value share value share" per listed instruction
rows() {
    local db=$T/$1-$2 img proc show=3
    [ "$2" = step ] && show=16 # the oracle: bp's top values further down its list too
    "$B/dcpiprof" -db "$db" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && $NF !~ /^\[/ {print $4, $5}' |
        head -8 >"$T/$1-$2.procs"
    while read -r proc img; do
        "$B/dcpilist" -db "$db" -asm -vtrace vp-classic -vshow $show -vcutoff 0 "$proc" "$img" 2>/dev/null
    done <"$T/$1-$2.procs" | awk '$1 ~ /^[0-9]+$/ && /\(/ && !/missing/ {
        addr = $2; b = "x"; line = $0
        if (match(line, /\+-[0-9.]+/)) b = substr(line, RSTART + 2, RLENGTH - 2)
        vt = ""; for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $(i + 1) ~ /^[0-9.]+$/ && $(i + 2) ~ /^[0-9]+$/) { vt = $i; break }
        out = addr " " vt " " b
        rest = line
        while (match(rest, /\([0-9.]+% [^)]*\)/)) {
            s = substr(rest, RSTART + 1, RLENGTH - 2); split(s, p, "% ")
            out = out " " p[2] " " p[1]; rest = substr(rest, RSTART + RLENGTH)
        }
        print out }'
}

printf '%-8s %-10s %6s %6s %6s  %-44s %s\n' program address bp-n step-n +-B "top-3 bp / step shares" "max|d|"
for prog in $PROGS; do
    c=$(cmd "$prog")
    for be in bp step; do
        args=()
        [ $be = step ] && args=(-vstep)
        [ $be = bp ] && args=("${bud[@]}")
        # shellcheck disable=SC2086
        "$B/dcpid" -db "$T/$prog-$be" -vtrace vp-classic "${args[@]}" -- $c >/dev/null 2>"$T/$prog-$be.err" ||
            { echo "bench: $prog ($be) failed: $(tail -2 "$T/$prog-$be.err")" >&2; continue 2; }
        rows "$prog" "$be" >"$T/$prog-$be.rows"
    done
    awk -v prog="$prog" -v vmin="$VMIN" -v omin="$OMIN" '
        FNR == NR { n[$1] = $2; for (i = 4; i < NF; i += 2) s[$1 "|" $i] = $(i + 1); next }
        ($1 in n) && $2 >= vmin && n[$1] >= omin && $5 >= 10 {
            line = ""; mx = 0
            for (i = 4; i < NF && i < 10; i += 2) {
                o = ($1 "|" $i) in s ? s[$1 "|" $i] : 0
                d = $(i + 1) - o; if (d < 0) d = -d
                sum += d; k++; if (d > mx) mx = d; if (d > gmx) gmx = d
                if ($3 != "x" && d <= $3 + 0) hit++
                line = line sprintf("%s %.1f/%.1f ", $i, $(i + 1), o)
            }
            rowsn++
            printf "%-8s %-10s %6d %6d %6s  %-44s %.1f\n", prog, $1, $2, n[$1], $3, line, mx
        }
        END { if (k) printf "%-8s summary: %d instructions, %d top-3 shares: mean |d| %.2f, max |d| %.1f, +-B holds the oracle %.1f%%\n", prog, rowsn, k, sum / k, gmx, 100 * hit / k
              else printf "%-8s summary: no instruction with %d+ bp and %d+ step value samples\n", prog, vmin, omin }
    ' "$T/$prog-step.rows" "$T/$prog-bp.rows" | tee -a "$T/all"
done
awk '/summary:/ && /instructions/ { split($0, a, " "); r += $3; k += $5 }
    END { print "overall: " r " instructions, " k " top-3 shares (per-program summaries above)" }' "$T/all"
