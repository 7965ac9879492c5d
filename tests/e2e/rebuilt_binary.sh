#!/bin/bash
# rebuilt_binary.sh - profiles stay named after their binary is rebuilt, upgraded or deleted
# (issue 13 item 7): dcpid keeps the symbols of every profiled image with a build-id once per
# database (DB/.symcache/syms-BUILDID.gz, gzip: zcat reads it); dcpiprof uses them when the
# file on disk no longer matches the profile's build-id. A program is profiled, rebuilt with
# different code, then deleted: dcpiprof names alpha and beta with the same counts each time
# (before: unknown_rou), and again once the database is turned into the layout written before
# the cache was compressed (syms-BUILDID, kallsyms: plain text). dcpilist -asm lists the build
# profiled from the copy dcpid kept by build-id (DB/.codecache/BUILDID) after the rebuild and
# after the deletion, with the same instructions and counts. Skips (77) without cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-rebuilt.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_require gcc build-essential
e2e_require readelf binutils
src() { # MOD: a program whose alpha and beta loop on i % MOD
    printf '#include <stdio.h>\n'
    printf '__attribute__((noinline)) long alpha(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i %% %s; return s; }\n' "$1"
    printf '__attribute__((noinline)) long beta(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i %% 11; return s; }\n'
    printf 'int main(void) { long t = 0; for (int r = 0; r < 4; r++) t += alpha(30000000) + beta(15000000); printf("%%ld\\n", t); return 0; }\n'
}
src 7 >"$T/p.c"
gcc -O1 -o "$T/prog" "$T/p.c" || fail "gcc failed"
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$T/prog" >/dev/null 2>"$T/err" || fail "dcpid failed: $(cat "$T/err")"
id=$(readelf -n "$T/prog" | sed -n 's/.*Build ID: //p')
[ -n "$id" ] || fail "gcc made no build-id"
[ -f "$T/db/.symcache/syms-$id.gz" ] || fail "no symbols cached for $id: $(ls -a "$T/db/.symcache")"
for f in "$T"/db/.symcache/*; do
    case $f in *.gz) gzip -t "$f" 2>"$T/gzt" || fail "$f: gzip -t: $(cat "$T/gzt")" ;;
    *) fail "$f: not compressed" ;; esac
done
zcat "$T/db/.symcache/syms-$id.gz" | grep -Eq '^[0-9a-f]+ t alpha$' ||
    fail "alpha not in syms-$id.gz: $(zcat "$T/db/.symcache/syms-$id.gz" | head -5)"
rows() { "$BIN/dcpiprof" -db "$T/db" | awk -v p="$T/prog" '$5 == p {print $4, $1}' | sort; }
before=$(rows)
grep -q '^alpha ' <<<"$before" && grep -q '^beta ' <<<"$before" || fail "alpha/beta not named: $before"
# dcpilist -asm of the build profiled, and its code kept by build-id (DB/.codecache/ID, a copy
# of the ELF file as perf's ~/.debug keeps one): after a rebuild and after deletion dcpilist
# lists the same instructions with the same counts (perf annotate works from its cache too)
asm() { "$BIN/dcpilist" -db "$T/db" -asm alpha "$T/prog" 2>"$T/asm.err" | tail -n +2; }
asm_before=$(asm)
grep -q ' alpha' <<<"$(head -1 "$T/asm.err")$asm_before" || grep -q 'ret' <<<"$asm_before" ||
    fail "dcpilist -asm alpha before the rebuild: $(cat "$T/asm.err") $asm_before"
cmp -s "$T/prog" "$T/db/.codecache/$id" || fail "no copy of the profiled build in .codecache: $(ls -a "$T/db")"
src 13 >"$T/p.c"
gcc -O1 -o "$T/prog" "$T/p.c" || fail "gcc (rebuild) failed"
after=$(rows)
[ "$after" = "$before" ] || fail "after a rebuild: '$after', before: '$before'"
"$BIN/dcpilist" -db "$T/db" -asm alpha "$T/prog" 2>/dev/null | head -1 |
    grep -q "^alpha  $T/prog \[code kept by build-id: .*/\.codecache/$id\]" ||
    fail "the listing's header does not name the kept code: $("$BIN/dcpilist" -db "$T/db" -asm alpha "$T/prog" 2>&1 | head -1)"
asm_after=$(asm)
[ "$asm_after" = "$asm_before" ] ||
    fail "dcpilist -asm after a rebuild: $(cat "$T/asm.err") $(diff <(echo "$asm_before") <(echo "$asm_after"))"
rm -f "$T/prog"
gone=$(rows)
[ "$gone" = "$before" ] || fail "after deleting the binary: '$gone', before: '$before'"
asm_gone=$(asm)
[ "$asm_gone" = "$asm_before" ] ||
    fail "dcpilist -asm after deleting the binary: $(cat "$T/asm.err") $(diff <(echo "$asm_before") <(echo "$asm_gone"))"
# without the kept copy: the one-line refusal, as before
mv "$T/db/.codecache" "$T/codecache.saved"
"$BIN/dcpilist" -db "$T/db" -asm alpha "$T/prog" >/dev/null 2>"$T/asm.err" &&
    fail "dcpilist -asm of a deleted binary without its kept code succeeded"
mv "$T/codecache.saved" "$T/db/.codecache"
all=$("$BIN/dcpiprof" -db "$T/db" 2>&1)
# the database as the previous version wrote it: every .gz file gunzipped in place
find "$T/db" -name '*.gz' | while read -r f; do
    gzip -dc "$f" >"${f%.gz}" && rm "$f" || fail "gunzip $f"
done || exit 1
[ -z "$(find "$T/db" -name '*.gz')" ] && [ -f "$T/db/.symcache/syms-$id" ] || fail "not converted: $(ls -R "$T/db")"
old=$(rows)
[ "$old" = "$before" ] || fail "plain syms-$id (older database): '$old', before: '$before'"
all_old=$("$BIN/dcpiprof" -db "$T/db" 2>&1)
[ "$all_old" = "$all" ] || fail "older database layout: dcpiprof differs: $(diff <(echo "$all") <(echo "$all_old"))"
echo "PASS: named and listed (dcpilist -asm, $(wc -l <<<"$asm_before") rows) after rebuild and deletion: $(tr '\n' ' ' <<<"$before")"
