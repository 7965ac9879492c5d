#!/bin/bash
# bad_input_db.sh - damaged data survived (issue 22 item 3): a whole database with one damaged
# file of each kind dcpid writes (a profile .prof, its split by process .procs, a value profile
# .vprof, a stack file .stk, the kernel's symbol snapshot kallsyms.gz, the symbol cache
# .symcache/syms-ID.gz), each truncated and each overwritten with garbage holding control bytes.
# Every analysis tool that reads that kind names the file in one warning ("TOOL: FILE: reason;
# skipped" or "...; its samples are shown as unknown_rou"), prints everything else (the rows of
# the other images) and exits 3; with -strict it exits 1 with one line and prints nothing. No
# byte that is not printable reaches stdout or stderr. dcpicat reads every file dcpid writes,
# the stack file included. (Flag and file errors without a database: bad_input.sh.)
# Skips (77) without cpu-clock.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
BIN=${DCPI_BIN:?}
e2e_counting baddb
to() { timeout -k 5 "$@"; }

e2e_probe_cpu_clock "perf_event_open for cpu-clock" -g
e2e_require gcc build-essential

# Two user images (prog, libc: qsort), the kernel (write(2) to /dev/null), call chains (-g) and
# values (vp-classic).
cat >"$T/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
__attribute__((noinline)) long spin(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i % 7; return s; }
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int main(void)
{
    int fd = open("/dev/null", O_WRONLY);
    static int v[200000];
    char buf[64] = "x";
    long t = 0;
    for (int r = 0; r < 12; r++) {
        for (int i = 0; i < 200000; i++) v[i] = (i * 7919 + r) % 100003;
        qsort(v, 200000, sizeof v[0], cmp);
        for (int i = 0; i < 40000; i++) t += write(fd, buf, sizeof buf);
        t += spin(6000000);
    }
    printf("%ld\n", t);
    return 0;
}
C
gcc -O1 -g -o "$T/prog" "$T/prog.c" || { echo "FAIL: gcc"; exit 1; }
to 120 "$BIN/dcpid" -db "$T/db0" -e cpu-clock -g -vtrace vp-classic -- "$T/prog" >/dev/null 2>"$T/err" ||
    { echo "FAIL: dcpid: $(cat "$T/err")"; exit 1; }
E=$(ls -d "$T"/db0/[0-9]*/*/ | head -1)
E=${E%/}
prog_dir=$(ls -d "$E"/prog_*)
libc_dir=$(ls -d "$E"/libc.so*_* 2>/dev/null | head -1)
kern_dir=$(ls -d "$E"/kernel.kallsyms_* 2>/dev/null | head -1)
[ -n "$libc_dir" ] && [ -f "$libc_dir/cpu-clock.prof" ] || { echo "FAIL: no libc samples: $(ls "$E")"; exit 1; }
[ -n "$kern_dir" ] && [ -f "$kern_dir/kallsyms.gz" ] || { echo "FAIL: no kernel samples: $(ls "$E")"; exit 1; }
[ -f "$prog_dir/vp-classic.vprof" ] || { echo "FAIL: no value profile: $(ls "$prog_dir")"; exit 1; }
[ -f "$E/stacks/cpu-clock.stk" ] || { echo "FAIL: no stack file: $(ls "$E")"; exit 1; }
id=$(basename "$prog_dir")
id=${id##*_}

# dcpicat reads every file dcpid writes (the text ones as text: symbol snapshots, epoch.info)
texts=("$kern_dir/kallsyms.gz" "$T/db0/.symcache/syms-$id.gz")
[ -f "$E/epoch.info" ] && texts+=("$E/epoch.info")
for f in "$prog_dir/cpu-clock.prof" "$prog_dir/cpu-clock.procs" "$prog_dir/vp-classic.vprof" "$E/stacks/cpu-clock.stk" "${texts[@]}"; do
    "$BIN/dcpicat" "$f" >"$T/cat" 2>"$T/caterr" && [ -s "$T/cat" ] && [ ! -s "$T/caterr" ] ||
        fail "dcpicat $f: $(head -c 300 "$T/caterr")"
done
"$BIN/dcpicat" "$E/stacks/cpu-clock.stk" >"$T/cat"
grep -q '^event *cpu-clock' "$T/cat" && grep -Eq '^[0-9]+  [0-9]+\+0x[0-9a-f]+' "$T/cat" ||
    fail "dcpicat of the stack file prints no header or chain: $(head -12 "$T/cat")"
"$BIN/dcpicat" "$T/db0/.symcache/syms-$id.gz" | grep -Eq '^[0-9a-f]+ t spin$' || fail "dcpicat of syms-$id.gz: no spin"
printf 'a \033[2J line\n' >"$T/ctl.txt"
"$BIN/dcpicat" "$T/ctl.txt" | grep -qF 'a \x1b[2J line' || fail "dcpicat prints control bytes raw: $("$BIN/dcpicat" "$T/ctl.txt" | cat -v)"

# damage HOW FILE: truncate to 300 bytes (a .procs file, chunks appended one per flush: its last
# 3 bytes cut, since 300 may fall between two whole chunks, which is a valid shorter file), or
# garbage with control bytes (an escape sequence, a bell, a NUL) in what would be a header key
damage() {
    case $1 in
    trunc) case $2 in *.procs) truncate -s -3 "$2" ;; *) truncate -s 300 "$2" ;; esac ;;
    garbage) printf '\033[2J\007key\001\377\n\000\376garbage\n' >"$2" ;;
    gzgarbage) printf 'ffffffff81000000 T ok\n\033[2J\007 not a symbol\001\n' | gzip >"$2" ;;
    esac
}

# check NAME WANT_PATTERN OUT_PATTERN CMD...: exit 3, a warning line naming the file
# (WANT_PATTERN), stdout matching OUT_PATTERN (what else must be printed), no raw control bytes;
# then the same command with -strict: exit 1, one line, empty stdout.
check() {
    local name=$1 want=$2 outpat=$3 rc
    shift 3
    "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    if [ $rc -ne 3 ]; then
        fail "$name: $*: exit $rc (want 3): $(head -c 400 "$T/err")"
    elif ! grep -Eq "$want" "$T/err"; then
        fail "$name: $*: no warning matching '$want': $(head -c 400 "$T/err")"
    elif [ -n "$outpat" ] && ! grep -Eq "$outpat" "$T/out"; then
        fail "$name: $*: the rest is not printed (no '$outpat'): $(head -c 400 "$T/out")"
    elif LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$T/out" "$T/err"; then
        fail "$name: $*: raw control bytes: $(LC_ALL=C grep -a $'[\x01-\x08\x0b-\x1f\x7f]' "$T/err" "$T/out" | cat -v | head -3)"
    else
        echo "ok: $name: $1 exit 3: $(grep -E "$want" "$T/err" | head -1)"
    fi
    local tool=$1
    "$1" -strict "${@:2}" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    if [ $rc -ne 1 ] || [ "$(wc -l <"$T/err")" -ne 1 ] || [ -s "$T/out" ]; then
        fail "$name: $tool -strict: exit $rc (want 1), $(wc -l <"$T/err") lines: $(head -c 300 "$T/err"), stdout $(wc -c <"$T/out") bytes"
    fi
}

fresh() { # a copy of the database to damage
    rm -rf "$T/db"
    cp -a "$T/db0" "$T/db"
    D=${E/db0/db}
}

P=$T/prog
for how in trunc garbage; do
    # a profile: libc's rows are gone, prog's are printed
    fresh; damage $how "${libc_dir/db0/db}/cpu-clock.prof"
    w="^dcpi[a-z]+: .*libc[^ ]*/cpu-clock\.prof: .*; skipped$"
    check "prof/$how" "$w" ' spin +.*/prog$' "$BIN/dcpiprof" -db "$T/db"
    check "prof/$how" "$w" 'spin' "$BIN/dcpitopcounts" -db "$T/db"
    check "prof/$how" "$w" '' "$BIN/dcpiexport" -db "$T/db" -format gperftools -o "$T/x.prof"
    check "prof/$how" "$w" '' "$BIN/dcpireport" -db "$T/db" -o "$T/r.html"
    check "prof/$how" "$w" 'spin' "$BIN/dcpilist" -db "$T/db" -asm spin "$P"
    check "prof/$how" "$w" 'B0' "$BIN/dcpicalc" -db "$T/db" spin "$P"
    check "prof/$how" "$w" 'spin' "$BIN/dcpicoverage" -db "$T/db" spin "$P"
    check "prof/$how" "$w" 'set B: .* samples of cpu-clock' "$BIN/dcpidiff" "$T/db0" "$T/db"

    # its split by process: -comm leaves prog's samples out (said), libc's are printed
    fresh; damage $how "${prog_dir/db0/db}/cpu-clock.procs"
    check "procs/$how" "^dcpiprof: .*prog_[^ ]*/cpu-clock\.procs: .*; skipped$" 'qsort|libc' \
        "$BIN/dcpiprof" -db "$T/db" -comm prog

    # a value profile: the listing is printed without its values
    fresh; damage $how "${prog_dir/db0/db}/vp-classic.vprof"
    w="^dcpi[a-z]+: .*prog_[^ ]*/vp-classic\.vprof: .*; skipped$"
    check "vprof/$how" "$w" 'spin' "$BIN/dcpilist" -db "$T/db" -asm -vprof -vtrace vp-classic spin "$P"
    check "vprof/$how" "$w" '' "$BIN/dcpireport" -db "$T/db" -vtrace vp-classic -o "$T/r.html"
    check "vprof/$how" "$w" '' "$BIN/dcpiexport" -db "$T/db" -format pprof -o "$T/x.pb.gz"

    # a stack file: the flat profile is printed without its children column
    fresh; damage $how "${E/db0/db}/stacks/cpu-clock.stk"
    w="^dcpi[a-z]+: .*stacks/cpu-clock\.stk: .*; skipped$"
    check "stk/$how" "$w" ' spin +.*/prog$' "$BIN/dcpiprof" -db "$T/db"
    check "stk/$how" "$w" '' "$BIN/dcpiexport" -db "$T/db" -format pprof -o "$T/x.pb.gz"
    check "stk/$how" "$w" '' "$BIN/dcpireport" -db "$T/db" -o "$T/r.html"
done

for how in trunc garbage gzgarbage; do
    # the kernel's symbol snapshot: its samples are unknown_rou, said; the rest is named
    fresh; damage $how "${kern_dir/db0/db}/kallsyms.gz"
    w="^dcpi[a-z]+: .*kallsyms\.gz: .*; its samples are shown as unknown_rou$"
    check "kallsyms/$how" "$w" ' spin +.*/prog$' "$BIN/dcpiprof" -db "$T/db"
    check "kallsyms/$how" "$w" 'spin' "$BIN/dcpitopcounts" -db "$T/db"
    check "kallsyms/$how" "$w" '' "$BIN/dcpireport" -db "$T/db" -o "$T/r.html"
done

# the symbol cache, read once the binary is gone: prog's samples are unknown_rou, said
cp "$P" "$T/prog.saved"
rm -f "$P"
for how in trunc gzgarbage; do
    fresh; damage $how "$T/db/.symcache/syms-$id.gz"
    check "symcache/$how" "^dcpiprof: .*syms-$id\.gz: .*; its samples are shown as unknown_rou$" \
        'qsort|libc' "$BIN/dcpiprof" -db "$T/db"
done
cp "$T/prog.saved" "$P"

[ "$fails" -eq 0 ] || exit 1
echo "PASS: one damaged file of each kind is named and skipped (exit 3), -strict fails (exit 1), no raw bytes; dcpicat reads .prof .procs .vprof .stk and the text files"
