#!/bin/bash
# e2e: dcpiexport -format pprof read by Go's own pprof (`go tool pprof`, Debian golang-go):
# the sample types are there, the mappings follow pprof's model (the program first, disjoint,
# every location inside its mapping), the top procedures and their counts equal dcpiprof's, call chains
# from dcpid -g give cumulative counts, and value hotlists are numeric labels so that
# `-tagfocus=vp-classic=7 -focus=lea_loop` selects exactly the value samples of result 7 in lea_loop
# that dcpilist's hotlists count (each vtot times its share of 7, to the printed rounding).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
BIN=${DCPI_BIN:?}
export LC_ALL=C HOME=${HOME:-/tmp}
e2e_require go golang-go
e2e_counting pprofgo
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "cpu-clock sampling with registers" -g

to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -freq 2000 -g -vtrace vp-classic -- \
    "$BIN/samples/work-values" "$(stat_ms 2000)" >"$T/run.out" 2>"$T/run.err" ||
    { echo "FAIL: dcpid: $(cat "$T/run.err")"; exit 1; }
"$BIN/dcpiexport" -db "$T/db" -format pprof -o "$T/p.pb.gz" || { echo "FAIL: export"; exit 1; }
go tool pprof -raw "$T/p.pb.gz" >"$T/raw.txt" 2>&1 || fail "go tool pprof -raw: $(head -5 "$T/raw.txt")"
grep -q "cpu-clock/count" "$T/raw.txt" || fail "no cpu-clock/count sample type: $(head -12 "$T/raw.txt")"
grep -q "values/count" "$T/raw.txt" || fail "no values/count sample type"
# mappings, pprof's address model: the profiled program is pprof's main binary (the first), no
# limit is below its start (the kernel's text reaches the top of the address space), no two
# mappings overlap and every location lies inside its own mapping. (Go's pprof merges the
# profile as it reads it, keeping the first mapping first and the others in order of first use,
# so the file's ascending memory_start order is checked by check_pprof instead.)
sed -n '/^Mappings/,$p' "$T/raw.txt" >"$T/maps.txt"
sed -n 2p "$T/maps.txt" | grep -q '^1: .*/samples/work-values ' || fail "first mapping is not the program: $(head -4 "$T/maps.txt")"
awk '
    function hex(h) { h = tolower(substr(h, 3)); return substr("0000000000000000", 1, 16 - length(h)) h }
    /^Locations/ { inloc = 1; next }
    /^Mappings/ { inloc = 0; inmap = 1; next }
    inmap && $1 ~ /^[0-9]+:$/ { split($2, r, "/"); id = $1 + 0; lo[id] = hex(r[1]); hi[id] = hex(r[2]); ids[++n] = id }
    inloc && $2 ~ /^0x/ && $3 ~ /^M=/ { nl++; at[nl] = hex($2); of[nl] = substr($3, 3) + 0; lid[nl] = $1 }
    END {
        for (i = 1; i <= n; i++) {
            a = ids[i]
            if (!(lo[a] < hi[a])) { print "mapping " a ": limit 0x" hi[a] " not above start 0x" lo[a]; bad++ }
            for (j = i + 1; j <= n; j++)
                if (lo[a] < hi[ids[j]] && lo[ids[j]] < hi[a]) { print "mappings " a " and " ids[j] " overlap"; bad++ }
        }
        for (k = 1; k <= nl; k++)
            if (!(of[k] in lo) || at[k] < lo[of[k]] || at[k] >= hi[of[k]]) {
                print "location " lid[k] " 0x" at[k] " outside its mapping " of[k]; bad++
            }
        if (!bad)
            printf "%d mappings, disjoint; %d locations, each inside its mapping\n", n, nl
        exit bad > 0
    }' "$T/raw.txt" >"$T/layout.txt" || fail "mappings: $(head -5 "$T/layout.txt")"
cat "$T/layout.txt"

# flat counts per procedure: Go's pprof vs dcpiprof (work-values image)
go tool pprof -sample_index=0 -top -nodecount=3 "$T/p.pb.gz" 2>/dev/null |
    awk '$2 ~ /%$/ && $6 != "" {print $6, $1}' >"$T/go.txt"
"$BIN/dcpiprof" -db "$T/db" -csl >"$T/dcpi.csv"
for f in lea_loop stride_loop; do
    g=$(awk -v f=$f '$1 == f {print $2}' "$T/go.txt")
    d=$(awk -F, -v f=$f '$6 == f || $4 == f {print $1; exit}' "$T/dcpi.csv")
    if [ -z "$g" ] || [ "$g" != "$d" ]; then
        # seen once in 5 stress repetitions (go 1770, dcpiprof 1771) and not again in 70 runs:
        # where the sample went, per instruction on both sides and pprof's other functions
        echo "go pprof -disasm=$f:"
        go tool pprof -sample_index=0 -disasm="$f" "$T/p.pb.gz" 2>&1 | head -40
        echo "go pprof -top:"
        go tool pprof -sample_index=0 -top -nodecount=12 "$T/p.pb.gz" 2>&1 | head -20
        echo "dcpilist $f:"
        "$BIN/dcpilist" -db "$T/db" -asm "$f" "$BIN/samples/work-values" 2>&1 | head -40
        fail "$f: go pprof flat ${g:-none}, dcpiprof ${d:-none}"
    fi
done
echo "go pprof flat: $(tr '\n' ' ' <"$T/go.txt")"

# call chains: something above the loops has ~100% cumulative
cum=$(go tool pprof -sample_index=0 -top "$T/p.pb.gz" 2>/dev/null |
    awk '$5 ~ /%$/ {sub("%", "", $5); if ($5 + 0 > m) m = $5 + 0} END {print m + 0}')
awk -v c="$cum" 'BEGIN {exit !(c >= 95)}' || fail "largest cum is $cum%, want >= 95 (stacks lost?)"

# value hotlists as numeric labels: tagfocus on result 7 in lea_loop counts what dcpilist's
# hotlists of lea_loop show for 0x7: the hot lea's, and any other instruction whose result was 7
# (the loads before it), each its vtot times its share of 7, to the printed rounding
got=$(go tool pprof -sample_index=values -focus=lea_loop -tagfocus=vp-classic=7 -top "$T/p.pb.gz" \
    2>/dev/null | awk '/^Showing nodes accounting for/ {sub(",", "", $5); print $5}')
"$BIN/dcpilist" -db "$T/db" -asm -vtrace vp-classic -vshow 16 -vcutoff 0 lea_loop \
    "$BIN/samples/work-values" >"$T/lea" 2>&1
line=$(hot_line "$T/lea" '^lea$')
want=$(grep -E '^ +[0-9]+ +0x[0-9a-f]+ ' "$T/lea" | while IFS= read -r l; do
    p=$(grep -o '([0-9.]*% 0x7)' <<<"$l" | tr -d '(%)' | awk '{print $1}')
    [ -n "$p" ] && echo "$(vtot "$l") $p"
done | awk '{e += $1 * $2 / 100; t += $1 * 0.0005 + 0.5} END {printf "%.2f %.2f\n", e, t}')
echo "go pprof: tagfocus vp-classic=7 in lea_loop: ${got:-none} value samples; dcpilist: ${want:-none} (expected, tolerance)"
awk -v g="${got:-x}" -v w="${want:-x}" \
    'BEGIN { split(w, a, " "); exit !(g ~ /^[0-9]+$/ && a[1] > 0 && (g - a[1]) ^ 2 <= a[2] ^ 2) }' ||
    fail "tagfocus vp-classic=7 keeps ${got:-none} samples; dcpilist's hotlists of 0x7 add to ${want:-none}: $line"
[ "$fails" -eq 0 ] || exit 1
echo PASS
