#!/bin/bash
# reliab_list_plugins.sh - dcpilist survives value-profiler plugins that misbehave in vp_preface
# or vp_format: a SIGSEGV (crash_format), abort() (abort_preface), a call that never returns
# (hang_format) and a pointer to unmapped memory (badptr_format). Each must give exit status 1,
# exactly one line on stderr naming the plugin and the fault, nothing on stdout (no half
# listing), no core dump (a normal exit, not 128+N), and the hang at most ~2 s. A good plugin
# on the same database lists normally (the control). The database is synthetic: one PC
# profile and one .vprof per plugin name, written byte by byte here (no dcpid, no perf).
set -u
export LC_ALL=C
B=${DCPI_BIN:?DCPI_BIN not set}
LIST=$B/dcpilist
TP=$B/tests/plugins
T=$(mktemp -d /tmp/dcpi-e2e-rlist.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_require gcc build-essential
for t in nm readelf; do
    e2e_require $t binutils
done
[ -x "$LIST" ] || { echo "FAIL: $LIST not built"; exit 1; }
for p in good crash_format abort_preface hang_format badptr_format; do
    [ -f "$TP/$p.so" ] || { echo "FAIL: $TP/$p.so not built"; exit 1; }
done

# ---- the profiled program ----
cat >"$T/prog.c" <<'EOF'
__attribute__((noinline)) long hot(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += i * 7;
    return s;
}
int main(int argc, char **argv)
{
    (void)argv;
    return (int)hot(argc);
}
EOF
gcc -O0 -g -Wl,--build-id -o "$T/prog" "$T/prog.c" || { echo "FAIL: gcc"; exit 1; }
PROG=$T/prog
TSTART=$(readelf -lW "$PROG" | awk '$1 == "LOAD" && $0 ~ / R?W?E / {print $3}' | sort | head -1)
ID=$(readelf -n "$PROG" | awk '/Build ID:/ {print $3}')
HOT=0x$(nm "$PROG" | awk '$3 == "hot" {print $1}')
[ -n "$TSTART" ] && [ -n "$ID" ] && [ "$HOT" != 0x ] || { echo "FAIL: cannot read $PROG"; exit 1; }
OFF=$((HOT - TSTART)) # hot's first instruction

# ---- writers (dcpiformat: text header, "samples" padded to 4, little-endian body) ----
le32() {
    local v=$1
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $((v >> 8 & 255)) \
        $((v >> 16 & 255)) $((v >> 24 & 255)))"
}
le64() { le32 $(($1 & 0xffffffff)); le32 $((($1 >> 32) & 0xffffffff)); }
header() {
    local len=$((${#1} + 1 + 8))
    printf '%s\n' "$1"
    printf 'samples%*s\n' $(((4 - len % 4) % 4)) ''
}
keys() { # EVENT
    printf 'image %s\nepoch %s\nplatform p1\nevent %s\nperiod 1000000\ntstart %s\ntsize 4096\ncpuspeed 2000' \
        "$ID" "$E" "$1" "$TSTART"
}
DB=$T/db
E=202402030000
DIR=$DB/$E/p1/prog_$ID
mkdir -p "$DIR"
{ # cpu-clock: 10 samples on hot's first instruction
    header "$(printf 'version pdb-0.07\n%s\npath %s' "$(keys cpu-clock)" "$PROG")"
    le32 $OFF; le32 1; le32 10; le32 1; le32 10
} >"$DIR/cpu-clock.prof"
mkvprof() { # NAME: one hotlist (60x 7, 40x 3) on hot's first instruction
    {
        header "$(printf 'version vpdb-0.01\n%s\nvprof %s\nhotsize 16\ncontexts 1\npath %s' \
            "$(keys cpu-clock)" "$1" "$PROG")"
        le32 $OFF; le32 2; le64 100; le64 100; le64 0
        le64 7; le64 0; le64 0; le64 60
        le64 3; le64 0; le64 0; le64 40
        le32 1; le32 0; le64 100; le64 100
    } >"$DIR/$1.vprof"
}
for n in tp-good tp-crash-format tp-abort-preface tp-hang-format tp-badptr-format; do
    mkvprof $n
done

run() { # NAME PLUGIN: dcpilist -vtrace PLUGIN; out/err files, exit status rc, seconds secs
    local t0=$(date +%s.%N)
    rc=0
    (cd "$T" && ulimit -c unlimited 2>/dev/null
     exec timeout -k 5 30 "$LIST" -db "$DB" -asm -vtrace "$2" hot "$PROG") \
        >"$T/$1.out" 2>"$T/$1.err" || rc=$?
    secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
}

# ---- the control: a plugin that behaves ----
run good "$TP/good.so"
if [ $rc -ne 0 ]; then
    fail "good plugin: exit $rc: $(cat "$T/good.err")"
elif ! grep -Eq "  tp \(60\.0% 0x7\) \(40\.0% 0x3\)  \+-[0-9.]+( few)?$" "$T/good.out"; then
    fail "good plugin: no 'tp (60.0% 0x7) (40.0% 0x3)' hotlist: $(cat "$T/good.out")"
else
    echo "ok good plugin: $(grep -E 'tp\(' "$T/good.out" | sed 's/  */ /g')"
fi

# ---- the misbehaving ones ----
check() { # FILE WANT-SUFFIX
    local f=$1 want="dcpilist: $TP/$1.so: $2"
    run "$f" "$TP/$f.so"
    local lines=$(wc -l <"$T/$f.err")
    if [ $rc -ne 1 ]; then
        fail "$f: exit $rc (want 1; 128+N is a signal death): $(cat "$T/$f.err")"
    elif [ "$lines" -ne 1 ] || [ "$(cat "$T/$f.err")" != "$want" ]; then
        fail "$f: stderr is not the one line '$want': $(cat "$T/$f.err")"
    elif [ -s "$T/$f.out" ]; then
        fail "$f: something was printed on stdout: $(head -3 "$T/$f.out")"
    elif ls "$T"/core* >/dev/null 2>&1; then
        fail "$f: a core file was left in $T"
    else
        echo "ok $f: '$(cat "$T/$f.err")' in ${secs}s"
    fi
}
check crash_format "vp_format crashed (SIGSEGV)"
check abort_preface "vp_preface crashed (SIGABRT)"
check badptr_format "vp_format returned an invalid pointer"
check hang_format "vp_format did not return within 2 s"
if awk -v s="$secs" 'BEGIN { exit !(s > 6) }'; then
    fail "hang_format: dcpilist took ${secs}s (limit 2 s per call)"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
exit 0
