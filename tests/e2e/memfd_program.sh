#!/bin/bash
# memfd_program.sh - a program run from a memfd (memfd_create + fexecve: runc, some packers and
# sandboxes do this) maps "/memfd:NAME (deleted)", a path that names no file. dcpid reads that
# image through /proc/PID/map_files while the process lives and keeps its symbols and code by
# build-id (DB/.symcache, DB/.codecache): dcpiprof names its functions without a warning about a
# missing file, dcpitopcounts shows its instructions and source lines, and dcpilist -asm lists
# it. Skips (77) without cpu-clock.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting memfd
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_require gcc build-essential

cat >"$T/memrun.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    int in = open(argv[1], O_RDONLY), fd = memfd_create("work", MFD_CLOEXEC);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(fd, buf, (size_t)n) != n)
            return 1;
    close(in);
    char *envp[] = {NULL};
    fexecve(fd, argv + 1, envp);
    perror("fexecve");
    return 1;
}
C
cat >"$T/w.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long f(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i % 7; return s; }
__attribute__((noinline)) long g(long n) { long s = 0; for (long i = 0; i < n; i++) s += i ^ (s >> 3); return s; }
int main(int c, char **v) { long n = c > 1 ? atol(v[1]) : 300000000; printf("%ld\n", f(n) + g(n)); return 0; }
C
gcc -O1 -o "$T/memrun" "$T/memrun.c" && gcc -O1 -g -o "$T/w" "$T/w.c" || { echo "FAIL: gcc"; exit 1; }
to 120 "$BIN/dcpid" -db "$T/db" -e cpu-clock -- "$T/memrun" "$T/w" 300000000 >/dev/null 2>"$T/err" ||
    { echo "FAIL: dcpid: $(cat "$T/err")"; exit 1; }
"$BIN/dcpiprof" -db "$T/db" >"$T/prof" 2>"$T/proferr"
rc=$?
img='/memfd:work (deleted)'
[ $rc -eq 0 ] && [ ! -s "$T/proferr" ] || fail "dcpiprof: exit $rc, stderr: $(cat "$T/proferr")"
for fn in f g; do
    grep -Eq "^ +[0-9]+ .* $fn +/memfd:work \(deleted\)$" "$T/prof" || fail "$fn not named in '$img': $(head -8 "$T/prof")"
done
grep -q 'unknown_rou  */memfd' "$T/prof" && fail "samples of the memfd program left unnamed: $(head -8 "$T/prof")"
"$BIN/dcpitopcounts" -db "$T/db" -n 3 >"$T/top" 2>"$T/toperr" || fail "dcpitopcounts: $(cat "$T/toperr")"
awk 'NR > 1 && $6 == "-"' "$T/top" | grep -q . && fail "dcpitopcounts shows no instruction: $(cat "$T/top")"
grep -q 'w\.c:[0-9]' "$T/top" || fail "dcpitopcounts shows no source line: $(cat "$T/top")"
"$BIN/dcpilist" -db "$T/db" -asm f "$img" >"$T/list" 2>"$T/listerr" || fail "dcpilist -asm f '$img': $(cat "$T/listerr")"
grep -q ' ret$' "$T/list" && [ "$(wc -l <"$T/list")" -ge 6 ] || fail "dcpilist -asm: $(head -5 "$T/list")"
# the same instructions as the file the memfd was filled from
"$BIN/dcpilist" -db "$T/db" -asm -image "$T/w" f 2>/dev/null | tail -n +3 | awk '{$1 = ""; print}' >"$T/want" || true
tail -n +3 "$T/list" | awk '{$1 = ""; print}' >"$T/got"
[ -s "$T/want" ] || fail "dcpilist -image $T/w f printed nothing"
cmp -s "$T/want" "$T/got" || fail "dcpilist of the memfd differs from its file: $(diff "$T/want" "$T/got" | head -5)"
[ "$fails" -eq 0 ] || exit 1
echo "PASS: a memfd program is named ($(grep -c memfd "$T/prof") rows), listed and shown by dcpitopcounts, no warning"
