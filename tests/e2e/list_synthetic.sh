#!/bin/bash
# e2e: dcpilist on a synthetic database written by this script (no dcpid): a gcc -O0 -g program
# whose function hot() gets known per-instruction counts (instruction k gets k + 1 samples,
# platform p2 adds 100 on the first one, main gets 1000, task-clock 5 on the first one), then:
#   -asm: every count lands on the instruction objdump shows at that address, branch targets
#         carry ": ", the total line; an address operand and a bare basename give the same;
#   -source: each line's count is the sum over its instructions (addr2line), -both interleaves;
#   -vprof: a .vprof file written byte by byte (core/store/vprof.h layout) shown in hex, then through
#         vp-classic (-vtrace), with -vshow / -vcutoff dots, contexts and the err footer;
#   errors: unknown procedure, unprofiled image, changed image, bad flags, corrupt .vprof.
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting list
LIST=$B/dcpilist

e2e_require gcc build-essential
for t in nm readelf objdump addr2line; do
    e2e_require $t binutils
done
[ -x "$LIST" ] || { echo "FAIL: $LIST not built"; exit 1; }

# ---- the profiled program ----
cat >"$T/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long hot(long n)
{
    long s = 0;
    /* no code on this line: a gap for -both */
    for (long i = 0; i < n; i++)
        s += i * 7;
    return s;
}

int main(int argc, char **argv)
{
    printf("%ld\n", hot(argc > 1 ? atol(argv[1]) : 10));
    return 0;
}
EOF
(cd "$T" && gcc -O0 -g -Wl,--build-id -o prog prog.c && cp prog other)
mkdir -p "$T/changed" # same basename, another build-id
sed 's/\* 7/* 9/' "$T/prog.c" >"$T/changed/prog.c"
gcc -O0 -g -Wl,--build-id -o "$T/changed/prog" "$T/changed/prog.c"
PROG=$T/prog
TSTART=$(readelf -lW "$PROG" | awk '$1 == "LOAD" && $0 ~ / R?W?E / {print $3}' | sort | head -1)
ID=$(readelf -n "$PROG" | awk '/Build ID:/ {print $3}')
MAIN=0x$(nm "$PROG" | awk '$3 == "main" {print $1}')
# hot's instructions: address and Intel text, one per line
objdump -d -M intel --no-show-raw-insn "$PROG" |
    awk '/<hot>:$/ {on = 1; next} on && /^$/ {exit} on {a = $1; sub(":", "", a); $1 = ""; sub(/^ +/, ""); print a "\t" $0}' \
        >"$T/hot.insns"
N=$(wc -l <"$T/hot.insns")
[ -n "$TSTART" ] && [ -n "$ID" ] && [ "$N" -gt 10 ] || { echo "FAIL: cannot read $PROG"; exit 1; }
mapfile -t ADDRS < <(cut -f1 "$T/hot.insns" | sed 's/^/0x/')
HOT=${ADDRS[0]}
echo "prog: tstart $TSTART id $ID hot $HOT ($N instructions)"

# ---- writers: le32/le64, a PC profile, a value profile ----
le32() {
    local v=$1
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $((v >> 8 & 255)) \
        $((v >> 16 & 255)) $((v >> 24 & 255)))"
}
le64() {
    le32 $(($1 & 0xffffffff))
    le32 $((($1 >> 32) & 0xffffffff))
}
# header FILE TEXT: TEXT, then "samples" padded so the body starts at a multiple of 4
header() {
    local len=$((${#2} + 1 + 8))
    printf '%s\n' "$2"
    printf 'samples%*s\n' $(((4 - len % 4) % 4)) ''
}
# mkprof FILE EPOCH PLATFORM EVENT [OFFSET:COUNT ...] (offsets ascending; one-count chunks)
mkprof() {
    local file=$1 epoch=$2 plat=$3 ev=$4 n=0 total=0 pair hdr
    shift 4
    mkdir -p "$(dirname "$file")"
    hdr=$(printf 'version pdb-0.07\nimage %s\nepoch %s\nplatform %s\nevent %s\nperiod 1000000\ntstart %s\ntsize 4096\ncpuspeed 2000\npath %s' \
        "$ID" "$epoch" "$plat" "$ev" "$TSTART" "$PROG")
    {
        header "$file" "$hdr"
        for pair in "$@"; do
            le32 "${pair%%:*}"
            le32 1
            le32 "${pair##*:}"
            n=$((n + 1))
            total=$((total + ${pair##*:}))
        done
        le32 $n
        le32 $total
    } >"$file"
}
# mkvprof FILE EPOCH PLATFORM RECORD... where RECORD is
# "OFFSET VTOT SEEN ERR VALUE:C0:C1:COUNT..." (entries count desc); contexts 1
mkvprof() {
    local file=$1 epoch=$2 plat=$3 rec nrec=0 tv=0 ts=0 hdr
    shift 3
    mkdir -p "$(dirname "$file")"
    hdr=$(printf 'version vpdb-0.01\nimage %s\nepoch %s\nplatform %s\nevent cpu-clock\nperiod 1000000\ntstart %s\ntsize 4096\ncpuspeed 2000\nvprof vp-classic\nhotsize 16\ncontexts 1\npath %s' \
        "$ID" "$epoch" "$plat" "$TSTART" "$PROG")
    {
        header "$file" "$hdr"
        for rec in "$@"; do
            set -- $rec
            local off=$1 vtot=$2 seen=$3 err=$4 e
            shift 4
            le32 "$off"
            le32 $#
            le64 "$vtot"
            le64 "$seen"
            le64 "$err"
            for e in "$@"; do
                IFS=: read -r v c0 c1 cnt <<<"$e"
                le64 $((v))
                le64 $((c0))
                le64 $((c1))
                le64 "$cnt"
            done
            nrec=$((nrec + 1))
            tv=$((tv + vtot))
            ts=$((ts + seen))
        done
        le32 $nrec
        le32 0
        le64 $tv
        le64 $ts
    } >"$file"
}

DB=$T/db
E=202402030000
IMGDIR=prog_$ID
pairs=()
for k in "${!ADDRS[@]}"; do
    pairs+=("$((ADDRS[k] - TSTART)):$((k + 1))")
done
[ $((MAIN)) -gt $((ADDRS[N - 1])) ] || { echo "FAIL: main is not after hot"; exit 1; }
mkprof "$DB/$E/p1/$IMGDIR/cpu-clock.prof" $E p1 cpu-clock "${pairs[@]}" $((MAIN - TSTART)):1000
mkprof "$DB/$E/p1/$IMGDIR/task-clock.prof" $E p1 task-clock $((HOT - TSTART)):5
mkprof "$DB/$E/p2/$IMGDIR/cpu-clock.prof" $E p2 cpu-clock $((HOT - TSTART)):100
want() { # expected cpu-clock count of instruction k
    echo $(($1 + 1 + ($1 == 0 ? 100 : 0)))
}
HOT_TOTAL=$((N * (N + 1) / 2 + 100))

run() { # NAME ARGS...: stdout/stderr to $T/NAME.out/.err, exit status in $rc
    local name=$1
    shift
    rc=0
    "$LIST" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
}
show() { echo "--- $1 (exit $rc):"; cat "$T/$1.out" "$T/$1.err"; }

# ---- -asm ----
run asm -db "$DB" -asm hot "$PROG"
[ $rc -eq 0 ] || { fail "-asm exited $rc"; show asm; }
sed -n 1,4p "$T/asm.out"
grep -Eq '^ *cpu-clock +task-clock +address +instruction$' "$T/asm.out" || fail "-asm header"
targets=$(awk -F'\t' '$2 ~ /^j/ {split($2, w, " "); print "0x" w[2]}' "$T/hot.insns" | sort -u)
[ -n "$targets" ] || fail "no branch in hot (compiler changed?)"
for k in "${!ADDRS[@]}"; do
    a=$(printf '0x%x' $((ADDRS[k])))
    row=$(awk -v a="$a" '$3 == a' "$T/asm.out")
    tc=$([ $k -eq 0 ] && echo 5 || echo 0)
    mn=$(sed -n "$((k + 1))p" "$T/hot.insns" | cut -f2 | awk '{print $1}')
    prefix=$(echo "$targets" | grep -qx "$a" && echo ': ' || true)
    echo "$row" | grep -Eq "^ +$(want $k) +$tc +$a +$prefix$mn( |$)" ||
        fail "instruction $k at $a: want $(want $k) $tc '$prefix$mn', got '$row'"
done
[ "$(grep -c '^ .* 0x[0-9a-f]*  ' "$T/asm.out")" -eq "$N" ] || fail "-asm: not $N instruction rows"
pct=$(awk -v h=$HOT_TOTAL 'BEGIN {printf "%.2f", 100 * h / (h + 1000)}')
grep -qx "total  $HOT_TOTAL samples ($pct% of the image's cpu-clock)" "$T/asm.out" ||
    fail "-asm total line (want $HOT_TOTAL, $pct%): $(grep '^total' "$T/asm.out")"
grep -qx "total  5 samples (100.00% of the image's task-clock)" "$T/asm.out" || fail "task-clock total"

run addr -db "$DB" -asm $(printf '0x%x' $((ADDRS[3]))) "$PROG"
diff <(tail -n +2 "$T/asm.out") <(tail -n +2 "$T/addr.out") >/dev/null ||
    fail "an address inside hot does not list hot"
(cd / && "$LIST" -db "$DB" -asm hot prog >"$T/base.out" 2>"$T/base.err") ||
    fail "bare basename 'prog' from / failed: $(cat "$T/base.err")"
diff "$T/asm.out" "$T/base.out" >/dev/null || fail "bare basename gives another listing"
run plat -db "$DB" -platform p2 -asm hot "$PROG"
awk -v a=$HOT '$2 == a' "$T/plat.out" | grep -Eq '^ +100 +0x' || fail "-platform p2: $(sed -n 3p "$T/plat.out")"

# ---- -source / -both / -best ----
declare -A LSUM
for k in "${!ADDRS[@]}"; do
    l=$(addr2line -e "$PROG" "${ADDRS[k]}" | sed 's/ .*//; s/.*://')
    LSUM[$l]=$((${LSUM[$l]:-0} + $(want $k)))
done
run src -db "$DB" -source hot "$PROG"
[ $rc -eq 0 ] || { fail "-source exited $rc"; show src; }
cat "$T/src.out"
grep -qx "$T/prog.c:" "$T/src.out" || fail "-source: no file line '$T/prog.c:'"
for l in "${!LSUM[@]}"; do
    text=$(sed -n "${l}p" "$T/prog.c")
    grep -Fq "$(printf '%6d  %s' "$l" "$text")" "$T/src.out" || fail "-source: line $l text missing"
    grep -Eq "^ +${LSUM[$l]} +[0-9]+ +$l  " "$T/src.out" ||
        fail "-source: line $l should have ${LSUM[$l]} samples"
done
[ "$(grep -Ec '^ +[0-9]+ +[0-9]+ +[0-9]+  ' "$T/src.out")" -eq "${#LSUM[@]}" ] ||
    fail "-source: not ${#LSUM[@]} lines with counts"
grep -qx "total  $HOT_TOTAL samples ($pct% of the image's cpu-clock)" "$T/src.out" ||
    fail "-source total line"

run best -db "$DB" hot "$PROG"
diff "$T/src.out" "$T/best.out" >/dev/null || fail "-best (default) is not -source with sources"
run both -db "$DB" -both hot "$PROG"
[ $rc -eq 0 ] || { fail "-both exited $rc"; show both; }
# each source line is followed by its instructions: instruction k comes after its line's row
awk -v first="$(printf '0x%x' $((ADDRS[0])))" '
    /^ +[0-9]+ +[0-9]+ +[0-9]+  / {line = $3}
    $3 == first {print line}' "$T/both.out" | grep -qx 5 || fail "-both: hot's first instruction not under line 5"
[ "$(grep -c ' 0x[0-9a-f]*  ' "$T/both.out")" -eq "$N" ] || fail "-both: not $N instruction rows"
grep -qx '....' "$T/both.out" || fail "-both: no '....' gap for line 7 (a comment)"
mv "$T/prog.c" "$T/prog.c.away"
run best2 -db "$DB" hot "$PROG"
mv "$T/prog.c.away" "$T/prog.c"
grep -q 'address  *instruction' "$T/best2.out" || fail "-best without the source file is not -asm"
run src2 -db "$DB" -source hot "$T/other"
[ $rc -eq 0 ] || fail "-source on a copy (same build-id) exited $rc: $(cat "$T/src2.err")"

# ---- -vprof ----
V1=$((ADDRS[6] - TSTART)) # mov rdx, qword ptr [rbp-0x10] at -O0
V2=$((ADDRS[7] - TSTART))
REG=$(sed -n 7p "$T/hot.insns" | cut -f2 | awk '{sub(",.*", "", $2); print $2}')
mkvprof "$DB/$E/p1/$IMGDIR/vp-classic.vprof" $E p1 \
    "$V1 100 200 0 7:0:0:60 3:0:0:30 9:0:0:6 1:0:0:4" "$V2 10 10 2 5:0xa:0xb:10"
run vp -db "$DB" -asm -vprof hot "$PROG"
[ $rc -eq 0 ] || { fail "-vprof exited $rc"; show vp; }
a1=$(printf '0x%x' $((ADDRS[6])))
a2=$(printf '0x%x' $((ADDRS[7])))
row() { awk -v a="$2" '$3 == a' "$T/$1.out"; }
row vp "$a1"
grep -Eq 'instruction +vtot +thld +nv$' "$T/vp.out" || fail "-vprof header"
row vp "$a1" | grep -Eq ' 100 +2\.0 +4  \(60\.0% 0x7\) \(30\.0% 0x3\) \(6\.0% 0x9\)  \+-9\.8$' ||
    fail "-vprof hex hotlist: '$(row vp "$a1")'"
row vp "$a2" | grep -Eq ' 10 +1\.0 +1  \(100\.0% 0x5 @0xa,0xb\)  \+-47\.8 few$' || fail "contexts: '$(row vp "$a2")'"
# the footers: a .vprof without a "backend" key (written before dcpi recorded it) says so, and
# the bound is explained (60% of 100 samples: the 95% Wilson interval reaches 9.8 points away)
grep -q '^vp-classic: backend unknown (written before dcpi recorded backends)$' "$T/vp.out" ||
    fail "-vprof footer: no 'backend unknown' line: $(tail -4 "$T/vp.out")"
grep -q '^+-B after a hotlist: any share may be B points' "$T/vp.out" ||
    fail "-vprof footer: the bound is not explained: $(tail -4 "$T/vp.out")"
grep -qx 'vp-classic: hotlists hold at most 16 values per instruction; each count may exceed the truth by at most err (largest err in this procedure: 2)' \
    "$T/vp.out" || fail "err footer"
run vs -db "$DB" -asm -vprof -vshow 2 hot "$PROG"
row vs "$a1" | grep -Eq '  \(60\.0% 0x7\) \(30\.0% 0x3\)  \+-9\.8$' || fail "-vshow 2: '$(row vs "$a1")'"
run vc -db "$DB" -asm -vprof -vshow 4 -vcutoff 10 hot "$PROG"
row vc "$a1" | grep -Eq '  \(60\.0% 0x7\) \(30\.0% 0x3\) \.\.  \+-9\.8$' || fail "-vcutoff 10: '$(row vc "$a1")'"
# vp-classic is built with dcpilist: a missing one fails here.
run vt -db "$DB" -asm -vtrace "$B/plugins/vp-classic.so" hot "$PROG"
row vt "$a1"
row vt "$a1" | grep -Eq "  $REG: \(60\.0% 0x7\) \(30\.0% 0x3\) \(6\.0% 0x9\)  \+-9\.8$" ||
    fail "-vtrace vp-classic: no '$REG:' preface: '$(row vt "$a1")' $(cat "$T/vt.err")"
run vbad -db "$DB" -asm -vtrace no-such-plugin hot "$PROG"
[ $rc -ne 0 ] && grep -q '^dcpilist: no-such-plugin: plugin not found' "$T/vbad.err" ||
    fail "unknown plugin: exit $rc, '$(cat "$T/vbad.err")'"
run vsrc -db "$DB" -source -vprof hot "$PROG"
[ $rc -eq 2 ] || fail "-source -vprof should be a usage error, exit $rc"
VF=$DB/$E/p1/$IMGDIR/vp-classic.vprof
head -c -8 "$VF" >"$T/cut" && cp "$T/cut" "$VF"
run vcorrupt -db "$DB" -asm -vprof hot "$PROG"
[ $rc -eq 3 ] && grep -q "^dcpilist: $VF: .*; skipped$" "$T/vcorrupt.err" && grep -q 'hot' "$T/vcorrupt.out" ||
    fail "corrupt .vprof: exit $rc (want 3, the listing without it), '$(cat "$T/vcorrupt.err")'"
run vcorrupt_strict -db "$DB" -strict -asm -vprof hot "$PROG"
[ $rc -eq 1 ] && grep -q "^dcpilist: $VF: " "$T/vcorrupt_strict.err" ||
    fail "corrupt .vprof, -strict: exit $rc (want 1), '$(cat "$T/vcorrupt_strict.err")'"
rm -f "$VF"

# ---- errors ----
run noproc -db "$DB" -asm nope "$PROG"
[ $rc -eq 1 ] && [ "$(cat "$T/noproc.err")" = "dcpilist: no procedure 'nope' in $PROG" ] ||
    fail "unknown procedure: exit $rc, '$(cat "$T/noproc.err")'"
gcc -O0 -Wl,--build-id -o "$T/unprof" -x c - <<<'int main(void) { return 0; }'
UID2=$(readelf -n "$T/unprof" | awk '/Build ID:/ {print $3}')
run noimg -db "$DB" main "$T/unprof"
[ $rc -eq 1 ] && [ "$(cat "$T/noimg.err")" = "dcpilist: no profile of $T/unprof (id $UID2) in epoch $E" ] ||
    fail "unprofiled image: exit $rc, '$(cat "$T/noimg.err")'"
run changed -db "$DB" hot "$T/changed/prog"
[ $rc -eq 1 ] && grep -q "^dcpilist: $T/changed/prog changed since it was profiled" "$T/changed.err" ||
    fail "changed image: exit $rc, '$(cat "$T/changed.err")'"
run nofile -db "$DB" hot "$T/nothere"
[ $rc -eq 1 ] && [ "$(wc -l <"$T/nofile.err")" -eq 1 ] && grep -q "nothere" "$T/nofile.err" ||
    fail "missing image file: exit $rc, '$(cat "$T/nofile.err")'"
run badflag -db "$DB" -x hot "$PROG"
[ $rc -eq 2 ] || fail "unknown flag: exit $rc"
run oneop -db "$DB" hot
[ $rc -eq 2 ] || fail "one operand: exit $rc"
run vshow -db "$DB" -vshow x hot "$PROG"
[ $rc -eq 2 ] || fail "-vshow x: exit $rc"
run ver -V
[ "$(cat "$T/ver.out")" = "dcpilist (dcpi) 0.1.0" ] || fail "-V: $(cat "$T/ver.out")"
BADF=$DB/$E/p2/$IMGDIR/cpu-clock.prof
head -c -4 "$BADF" >"$T/cut" && cp "$T/cut" "$BADF"
run corrupt -db "$DB" hot "$PROG"
[ $rc -eq 3 ] && grep -q "^dcpilist: $BADF: .*; skipped$" "$T/corrupt.err" ||
    fail "corrupt profile: exit $rc (want 3), '$(cat "$T/corrupt.err")'"
run corrupt_strict -db "$DB" -strict hot "$PROG"
[ $rc -eq 1 ] && grep -q "^dcpilist: $BADF: " "$T/corrupt_strict.err" ||
    fail "corrupt profile, -strict: exit $rc (want 1), '$(cat "$T/corrupt_strict.err")'"

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all dcpilist checks passed"
