#!/bin/bash
# cxx_names.sh - C++ names as a user types them (issue 13 item 6): dcpilist selects a function by
# its short name (no parameter list, template arguments or return type: `norm2`, `geo::norm2`,
# `tally`), refuses an ambiguous one naming the candidates (exit 1: `work`, and Debian's
# libstdc++ `_Rb_tree_increment`, overloaded), dcpicoverage selects as dcpilist does, and dcpiprof cuts long signatures to its column unless -wide.
# Skips (77) without cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
T=$(mktemp -d /tmp/dcpi-e2e-cxx.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_require g++ g++
cat >"$T/p.cc" <<'CC'
#include <cstdio>
#include <map>
#include <string>
#include <vector>
namespace geo {
struct Vec { double x, y; };
__attribute__((noinline)) double norm2(const std::vector<Vec> &v)
{ double s = 0; for (auto &p : v) s += p.x * p.x + p.y * p.y; return s; }
}
__attribute__((noinline)) long work(int n) { long s = 0; for (int i = 0; i < n; i++) s += i % 7; return s; }
__attribute__((noinline)) double work(double d) { double s = 0; for (int i = 1; i < 200; i++) s += d / i; return s; }
template <class K, class V>
__attribute__((noinline)) long tally(const std::map<K, std::vector<V>> &m, const std::string &tag)
{ long s = (long)tag.size(); for (auto &kv : m) for (auto &x : kv.second) s += (long)x % 3; return s; }
int main()
{
    std::vector<geo::Vec> v(2000, {1.5, 2.5});
    std::map<std::string, std::vector<double>> m;
    for (int i = 0; i < 50; i++) m[std::to_string(i)] = std::vector<double>(100, i);
    double t = 0;
    for (int r = 0; r < 6000; r++)
        t += geo::norm2(v) + (double)work(r % 1000) + work(0.5) + (double)tally(m, std::string("x"));
    std::printf("%g\n", t);
}
CC
g++ -O1 -o "$T/p" "$T/p.cc" || fail "g++ failed"
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- "$T/p" >/dev/null 2>"$T/err" || fail "dcpid failed: $(cat "$T/err")"
head1() { "$BIN/dcpilist" -db "$T/db" "$1" "$2" 2>&1 | head -1; }
for name in norm2 geo::norm2; do
    head1 "$name" "$T/p" | grep -q '^geo::norm2(std::vector<geo::Vec' || fail "'$name' does not select geo::norm2: $(head1 "$name" "$T/p")"
done
head1 tally "$T/p" | grep -q '^long tally<' || fail "'tally' does not select the template: $(head1 tally "$T/p")"
out=$("$BIN/dcpilist" -db "$T/db" work "$T/p" 2>&1)
rc=$?
[ $rc = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] &&
    grep -q "procedure 'work' is ambiguous in .*: 2 functions match ('work(int)', 'work(double)')\|procedure 'work' is ambiguous in .*: 2 functions match ('work(double)', 'work(int)')" <<<"$out" ||
    fail "ambiguous 'work': exit $rc, '$out'"
# dcpicoverage selects a procedure as dcpilist does (core/listing/listsel.h)
"$BIN/dcpicoverage" -db "$T/db" -summary -csl norm2 "$T/p" | grep -q '^proc,"geo::norm2(std::vector<geo::Vec' ||
    fail "dcpicoverage: 'norm2' does not select geo::norm2"
out=$("$BIN/dcpicoverage" -db "$T/db" work "$T/p" 2>&1)
rc=$?
[ $rc = 1 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q "^dcpicoverage: procedure 'work' is ambiguous in .*: 2 functions match" <<<"$out" ||
    fail "dcpicoverage, ambiguous 'work': exit $rc, '$out'"
# Debian's libstdc++ (when its map iteration was sampled there, not only in the program's PLT
# stub of the same name): std::_Rb_tree_increment is overloaded
# (node_base* and node_base const*): the short name names both; the full name selects
lib=$("$BIN/dcpiprof" -db "$T/db" -wide | awk '$4 ~ /^std::_Rb_tree_increment\(/ && $NF ~ /libstdc\+\+/ {print $NF; exit}')
if [ -n "$lib" ]; then
    head1 _Rb_tree_increment "$lib" | grep -q "is ambiguous in .*: 2 functions match ('std::_Rb_tree_increment(" ||
        fail "'_Rb_tree_increment' in $lib: $(head1 _Rb_tree_increment "$lib")"
    head1 'std::_Rb_tree_increment(std::_Rb_tree_node_base*)' "$lib" | grep -q '^std::_Rb_tree_increment(std::_Rb_tree_node_base\*)' ||
        fail "the full name does not select: $(head1 'std::_Rb_tree_increment(std::_Rb_tree_node_base*)' "$lib")"
fi
# dcpiprof: the tally row is cut to the 50-column procedure field; -wide keeps it whole
"$BIN/dcpiprof" -db "$T/db" >"$T/prof" || fail "dcpiprof failed"
row=$(grep 'long tally<' "$T/prof")
[ -n "$row" ] || fail "no tally row: $(cat "$T/prof")"
grep -q '\.\.\.  ' <<<"$row" && [ "$(awk '{print length($0)}' <<<"$row")" -lt 160 ] || fail "long name not cut: $row"
"$BIN/dcpiprof" -db "$T/db" -wide | grep -q 'long tally<.*>(std::map<.*> const&, std::__cxx11::basic_string<.*> const&)' ||
    fail "-wide does not print the whole signature"
# Listings name call and jump targets as objdump does (lower-case hex, <symbol+0xoff>): every
# relative call/jump objdump prints in main and geo::norm2 reads the same in dcpilist -asm
# (mnemonics aside: Zydis says jz where objdump says je).
e2e_require objdump binutils
targets() { sed -E 's/.*\s([0-9a-f]+ <.*>)\s*$/\1/'; }
for sym in main 'geo::norm2(std::vector<geo::Vec, std::allocator<geo::Vec> > const&)'; do
    objdump -d --no-show-raw-insn -M intel -C "$T/p" | awk -v s="<$sym>:" 'index($0, s) {on = 1; next} on && /^$/ {exit} on' |
        grep -E '\s(call|j[a-z]+)\s+[0-9a-f]+ <' | sed -E 's/^ *([0-9a-f]+):.*\s([0-9a-f]+ <.*>)\s*$/0x\1 \2/' >"$T/od"
    [ "$(wc -l <"$T/od")" -ge 1 ] || fail "objdump shows no call or jump in $sym"
    "$BIN/dcpilist" -db "$T/db" -asm "${sym%%(*}" "$T/p" | grep -E ' (call|j[a-z]+) [0-9a-f]+ <' |
        sed -E 's/^ *[0-9]+ +(0x[0-9a-f]+) +(: )?\S+ ([0-9a-f]+ <.*>)$/\1 \3/' >"$T/dl"
    missing=$(grep -vxFf "$T/dl" "$T/od")
    [ -z "$missing" ] || fail "$sym: objdump's targets not in dcpilist -asm: $missing (dcpilist: $(head -3 "$T/dl"))"
done
echo "PASS: short C++ names select (libstdc++ too: ${lib:-not sampled}), ambiguity refused, long names cut"
