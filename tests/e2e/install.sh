#!/bin/bash
# e2e: `cmake --install` into a temporary prefix gives a usable SDK: headers, a versioned
# libdcpi exporting only its API, the programs, dcpi.pc and the CMake package; a plugin builds
# out of tree with pkg-config (samples/vp-load-addr.c) and a CMake project with find_package(dcpi).
set -eu
B=${DCPI_BIN:?}
S=${DCPI_SRC:?}
T=$(mktemp -d /tmp/dcpi-e2e-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$B" --prefix "$T/prefix" >/dev/null
P=$T/prefix
LIBDIR=$(ls -d "$P"/lib*/ | head -1)
for f in include/dcpi/vprofiler.h include/dcpi/trace-vlist.h include/dcpi/trace-parse.h \
         include/dcpi/insn.h include/dcpi/profile.h include/dcpi/dcpi.h bin/dcpid bin/dcpictl \
         bin/dcpiprof bin/dcpicat bin/dcpitopcounts bin/dcpicoverage; do
    [ -e "$P/$f" ] || fail "$f not installed"
done
for t in dcpidiff dcpicalc dcpireport; do [ -e "$P/bin/$t" ] || fail "bin/$t not installed"; done
PCDIR=$(dirname "$(find "$P" -name dcpi.pc | head -1)")
[ -n "$PCDIR" ] || fail "dcpi.pc not installed"
CMDIR=$(dirname "$(find "$P" -name dcpiConfig.cmake | head -1)")
[ -n "$CMDIR" ] || fail "dcpiConfig.cmake not installed"
LIB=$(find "$P" -name 'libdcpi.so.0' | head -1)
[ -n "$LIB" ] || fail "libdcpi.so.0 not installed"
soname=$(readelf -d "$LIB" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libdcpi.so.0" ] || fail "SONAME is '$soname', expected libdcpi.so.0"
# Exported on purpose: nm -D lists exactly the names of core/dcpi.map, which lists exactly the
# functions the installed headers declare DCPI_API.
exported=$(nm -D --defined-only "$LIB" | awk '$2 ~ /[TDBRVW]/ {sub(/@.*/, "", $3); print $3}' | sort)
mapped=$(sed -n '/global:/,/local:/p' "$S/core/dcpi.map" | sed -n 's/^ *\([a-z_0-9]*\);$/\1/p' | sort)
declared=$(grep -hv '^ *\(/\*\|\*\|#\)' "$P"/include/dcpi/*.h | tr '\n' ' ' | grep -o 'DCPI_API [^;]*' |
    sed -E 's/\(.*//; s/.*[ *]([a-z_0-9]+)$/\1/' | sort -u)
[ "$(echo "$mapped" | wc -l)" -ge 40 ] || fail "core/dcpi.map lists $(echo "$mapped" | wc -l) names"
[ "$exported" = "$mapped" ] ||
    fail "nm -D differs from core/dcpi.map: $(diff <(echo "$exported") <(echo "$mapped") | grep '^[<>]' | head -c 300)"
[ "$declared" = "$mapped" ] ||
    fail "DCPI_API declarations differ from core/dcpi.map: $(diff <(echo "$declared") <(echo "$mapped") | grep '^[<>]' | head -c 300)"
echo "ok: libdcpi exports the $(echo "$mapped" | wc -l) functions of its API, nothing else"

# Installed programs run from the prefix (relative RPATH) and look for plugins in the prefix
# (then the configured plugin dir), never in the build tree.
"$P/bin/dcpiprof" -V >/dev/null 2>&1 || fail "installed dcpiprof does not start: $("$P/bin/dcpiprof" -V 2>&1 | head -1)"
out=$("$P/bin/dcpid" -db "$T/db" -vtrace no-such-plugin -- true 2>&1) &&
    fail "installed dcpid accepted a missing plugin"
echo "$out" | grep -q "plugin not found (searched: $P/bin/\.\./lib[^,]*/dcpi, " ||
    fail "installed dcpid does not search its own prefix first: $out"
case "$out" in *"$B/plugins"*) fail "installed dcpid searches the build tree: $out" ;; esac

# A sanitizer build of libdcpi (DCPI_SANITIZE) needs its users built with the same runtime.
SAN=""
ldd "$LIB" | grep -q libasan && SAN="-fsanitize=address,undefined"

# A plugin built the way samples/README.md says, from the installed samples, against the
# installed SDK only.
export PKG_CONFIG_PATH=$PCDIR
SD=$(ls -d "$P"/share/doc/*/samples 2>/dev/null | head -1)
# every file the README's "Installed" table names is installed (and the table is not empty)
listed=$(sed -n '/^## Installed/,/^## /p' "$S/samples/README.md" 2>/dev/null | sed -n 's/^| `\([^`]*\)` |.*/\1/p')
[ "$(wc -w <<<"$listed")" -ge 5 ] || fail "samples/README.md: no Installed table with the plugins"
for f in README.md $listed; do
    [ -e "$SD/$f" ] || fail "samples/$f: listed as installed by samples/README.md, not installed (under $P/share/doc/*/samples)"
done
cc $SAN -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror -o "$T/vp-load-addr.so" \
    "$SD/vp-load-addr.c" $(pkg-config --cflags --libs dcpi) || fail "sample plugin does not build with pkg-config"
# The sample with its unit test (samples/vp-divisor), copied from the installation and built
# out of tree by its own Makefile against the installed SDK: the test passes.
cp -r "$SD/vp-divisor" "$T/vpd" || fail "samples/vp-divisor not installed"
make -s -C "$T/vpd" CFLAGS="$SAN -O2 -Wall -Wextra -Werror" all check >"$T/vpd.out" 2>&1 ||
    fail "samples/vp-divisor: make check failed: $(tail -5 "$T/vpd.out")"
grep -q '^ok: 0 checks failed' "$T/vpd.out" || fail "samples/vp-divisor: $(cat "$T/vpd.out")"
[ -f "$T/vpd/vp-divisor.so" ] || fail "samples/vp-divisor: no plugin built"
exported=$(nm -D --defined-only "$T/vp-load-addr.so" | awk '$2 ~ /[TDBR]/ && $3 !~ /^__odr_asan/ {print $3}')
[ "$exported" = "_dispatch" ] || fail "sample plugin exports '$exported', expected only _dispatch"
ldd "$T/vp-load-addr.so" | grep -q "$P" || fail "sample plugin does not link the installed libdcpi"

# A CMake project using find_package(dcpi).
mkdir -p "$T/proj"
cat >"$T/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(useit C)
find_package(dcpi 0.1 REQUIRED)
add_executable(useit main.c)
target_link_libraries(useit PRIVATE dcpi::dcpi)
CM
cat >"$T/proj/main.c" <<'C'
#include <dcpi/dcpi.h>
#include <stdio.h>
int main(void)
{
    printf("%s %s\n", dcpi_version_string(), dcpi_strerror(DCPI_EFORMAT));
    return dcpi_version() == DCPI_VERSION_HEX ? 0 : 1;
}
C
cmake -S "$T/proj" -B "$T/proj/b" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_FLAGS="$SAN" >/dev/null || fail "find_package(dcpi) failed"
cmake --build "$T/proj/b" >/dev/null || fail "find_package project does not build"
out=$(LD_LIBRARY_PATH=$(dirname "$LIB") "$T/proj/b/useit") || fail "find_package program failed"
[ "$out" = "0.1.0 malformed data" ] || fail "unexpected output '$out'"
echo "ok: installed SDK usable through pkg-config and find_package"
