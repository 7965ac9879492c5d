#!/bin/bash
# deb_package.sh - the Debian packages of `make package` (cpack, cmake/DcpiPackage.cmake):
# dcpi and dcpi-dev are built from this build, their control files and contents checked, then
# installed on this machine with dpkg -i; the sample plugin samples/vp-divisor is built from the
# installed dcpi-dev with pkg-config, /usr/bin/dcpid profiles the divisors of work-accuracy
# div-mem with it and /usr/bin/dcpilist shows them (shares within the binomial tolerance of the
# truth, lib/stats.sh); man dcpid, man dcpilist, man 5 dcpiformat and man 5 vprofiler show the
# installed pages; the build tree's
# programs still load the build's libdcpi.so.0 (RUNPATH), not /usr/lib's. The packages are
# always removed again (dpkg -P, in a trap), also on failure. Skips (77) when not root, without dpkg, when a
# dcpi package is already installed (not ours to replace), or without cpu-clock.
set -u
B=${DCPI_BIN:?DCPI_BIN not set}
BIN=$B # lib/common.sh e2e_probe_cpu_clock
S=${DCPI_SRC:?DCPI_SRC not set}
W=$B/samples/work-accuracy
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/stats.sh"
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }

[ "$(id -u)" = 0 ] || e2e_skip "dpkg -i needs root"
e2e_need dpkg "dpkg is missing (not a Debian system)"
e2e_need dpkg-deb "dpkg-deb is missing"
e2e_require cpack cmake
e2e_require pkg-config pkg-config
e2e_require man man-db
for p in dcpi dcpi-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' &&
        e2e_skip "package $p is installed already: not replacing or removing it"
done
[ -x "$W" ] || fail "$W not built"
[ -d "$B/man/man1" ] || fail "$B/man not built (pandoc missing?)"

T=$(mktemp -d /tmp/dcpi-e2e-deb.XXXXXX)
installed=0
cleanup() {
    if [ "$installed" = 1 ]; then
        dpkg -P dcpi-dev dcpi >"$T/remove.out" 2>&1 ||
            echo "FAIL: dpkg -P dcpi-dev dcpi: $(tail -3 "$T/remove.out")"
        for p in dcpi dcpi-dev; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' &&
                echo "FAIL: $p still installed after dpkg -P"
        done
    fi
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- build the packages into $T (the build's own packages/ stays as make package left it).
# The tree is built (ctest runs on it): cpack's first step, the Makefile generator's "preinstall"
# target, would only re-check every target of the build (4 CPU-s, 10 s on a loaded machine).
# Told the tree is Ninja's (whose install needs no preinstall target), cpack runs the same
# cmake_install.cmake scripts at once: the packages are the same, file for file.
(cd "$B" && cpack -B "$T/pkg" -D CPACK_CMAKE_GENERATOR=Ninja >"$T/cpack.out" 2>&1) ||
    fail "cpack failed: $(tail -5 "$T/cpack.out")"
V=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$B/CMakeCache.txt")
[ -n "$V" ] || fail "no project version in $B/CMakeCache.txt"
RUN=$T/pkg/dcpi_${V}_amd64.deb
DEV=$T/pkg/dcpi-dev_${V}_amd64.deb
[ -f "$RUN" ] && [ -f "$DEV" ] || fail "cpack made: $(ls "$T/pkg")"

# control fields: names, version, dependencies
[ "$(dpkg-deb -f "$RUN" Package)" = dcpi ] || fail "dcpi: Package is $(dpkg-deb -f "$RUN" Package)"
[ "$(dpkg-deb -f "$DEV" Package)" = dcpi-dev ] || fail "dcpi-dev: Package is $(dpkg-deb -f "$DEV" Package)"
dep=$(dpkg-deb -f "$DEV" Depends)
[[ $dep == *"dcpi (= $V)"* ]] || fail "dcpi-dev does not depend on dcpi (= $V): $dep"
dep=$(dpkg-deb -f "$RUN" Depends)
if command -v dpkg-shlibdeps >/dev/null; then
    for lib in libc6 libdw1 libelf1 libffi8 zlib1g; do
        [[ $dep == *"$lib "* ]] || fail "dcpi's Depends lacks $lib (dpkg-shlibdeps): $dep"
    done
fi

# contents: what goes where
dpkg-deb -c "$RUN" | awk '{print $6}' | sed 's|^\./|/|' >"$T/run.list"
dpkg-deb -c "$DEV" | awk '{print $6}' | sed 's|^\./|/|' >"$T/dev.list"
for f in /usr/bin/dcpid /usr/bin/dcpiprof /usr/bin/dcpilist /usr/lib/libdcpi.so.0 \
    /usr/lib/libdcpi-agent.so /usr/share/man/man1/dcpid.1 /usr/share/man/man5/dcpiformat.5 \
    /usr/share/man/man5/vprofiler.5; do
    grep -qx "$f" "$T/run.list" || fail "dcpi lacks $f"
done
grep -q '^/usr/lib/dcpi/vp-.*\.so$' "$T/run.list" || fail "dcpi has no plugin in /usr/lib/dcpi"
for f in /usr/include/dcpi/vprofiler.h /usr/include/dcpi/version.h /usr/lib/libdcpi.so \
    /usr/lib/pkgconfig/dcpi.pc /usr/lib/cmake/dcpi/dcpiConfig.cmake \
    /usr/share/doc/dcpi/samples/vp-divisor/vp-divisor.c; do
    grep -qx "$f" "$T/dev.list" || fail "dcpi-dev lacks $f"
done
grep -q '^/usr/include\|/libdcpi\.so$\|pkgconfig' "$T/run.list" && fail "dcpi has -dev files: $(grep '^/usr/include\|/libdcpi\.so$\|pkgconfig' "$T/run.list" | head -3)"
for src in "$S"/tools/*.c; do
    tool=$(basename "$src" .c)
    grep -qx "/usr/bin/$tool" "$T/run.list" || fail "dcpi lacks /usr/bin/$tool"
    grep -qx "/usr/share/man/man1/$tool.1" "$T/run.list" || fail "dcpi lacks man page $tool.1"
done

# ---- install
installed=1
had_group=0
getent group dcpi >/dev/null && had_group=1
dpkg -i "$RUN" "$DEV" >"$T/install.out" 2>&1 || fail "dpkg -i: $(tail -5 "$T/install.out")"
# the service: installed, not enabled, its group created by postinst (dcpid(1), issue 23)
U=/usr/lib/systemd/system/dcpid.service
[ -f "$U" ] || fail "dcpid.service not installed at $U"
grep -qx "ExecStart=/usr/bin/dcpid -nodaemon -db /var/lib/dcpi -epoch-every 1d -keep 4w" "$U" ||
    fail "$U: ExecStart is $(grep ExecStart "$U")"
[ -z "$(find /etc/systemd/system -name dcpid.service 2>/dev/null)" ] || fail "the package enabled dcpid.service"
getent group dcpi >/dev/null || fail "postinst did not create the group dcpi"
[ "$(dpkg-query -W -f='${Version}' dcpi-dev)" = "$V" ] || fail "dcpi-dev not installed"

# the build tree's programs keep their own library while /usr/lib has one
for p in "$B/dcpid" "$B/dcpiprof"; do
    l=$(ldd "$p" | awk '$1 == "libdcpi.so.0" {print $3}')
    [ "$l" = "$B/libdcpi.so.0" ] || fail "$p loads libdcpi.so.0 from '$l' with the package installed"
done
l=$(ldd /usr/bin/dcpid | awk '$1 == "libdcpi.so.0" {print $3}')
[ "$(readlink -f "$l")" = "$(readlink -f /usr/lib/libdcpi.so.0)" ] || fail "/usr/bin/dcpid loads '$l'"
/usr/bin/dcpiprof -V >/dev/null 2>&1 || fail "/usr/bin/dcpiprof -V: $(/usr/bin/dcpiprof -V 2>&1 | head -1)"

# man pages of the installed package (the system's MANPATH)
MANWIDTH=80 man dcpid 2>/dev/null | grep -q 'dcpid - sample program counters' || fail "man dcpid"
MANWIDTH=80 man 5 dcpiformat 2>/dev/null | grep -q 'dcpiformat - format of dcpi' ||
    fail "man 5 dcpiformat"
[ "$(man -w dcpid 2>&1)" = /usr/share/man/man1/dcpid.1 ] || fail "man -w dcpid: $(man -w dcpid 2>&1)"
[ "$(man -w dcpilist 2>&1)" = /usr/share/man/man1/dcpilist.1 ] || fail "man -w dcpilist: $(man -w dcpilist 2>&1)"
[ "$(man -w 5 vprofiler 2>&1)" = /usr/share/man/man5/vprofiler.5 ] ||
    fail "man -w 5 vprofiler: $(man -w 5 vprofiler 2>&1)"
MANWIDTH=80 man dcpilist 2>/dev/null | grep -q '^NAME' || fail "man dcpilist"
MANWIDTH=80 man 5 vprofiler 2>/dev/null | grep -q '^NAME' || fail "man 5 vprofiler"

# a sample plugin from the installed samples, built with the installed SDK only
pkg-config --exists dcpi || fail "pkg-config does not find dcpi"
[ "$(pkg-config --modversion dcpi)" = "$V" ] || fail "pkg-config dcpi version $(pkg-config --modversion dcpi)"
SD=/usr/share/doc/dcpi/samples
cc -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror -o "$T/vp-divisor.so" \
    "$SD/vp-divisor/vp-divisor.c" $(pkg-config --cflags --libs dcpi) 2>"$T/cc.err" ||
    fail "vp-divisor does not build against dcpi-dev: $(head -3 "$T/cc.err")"
l=$(ldd "$T/vp-divisor.so" | awk '$1 == "libdcpi.so.0" {print $3}')
[ "$(readlink -f "$l")" = "$(readlink -f /usr/lib/libdcpi.so.0)" ] ||
    fail "vp-divisor.so does not link /usr/lib/libdcpi.so.0: '$l'"

# profile with the installed dcpid and the plugin; the installed dcpilist shows the divisors
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
# (MS of work, redone twice and four times as long until the div has 300 value samples; the bp
# backend's budget at 8% of the thread's CPU, not the 1% default: 1 s gives the value samples
# 3 s gave, ~370)
MS=${DCPI_TEST_MS:-1000}
run() {
    rm -rf "$T/db"
    to 300 /usr/bin/dcpid -db "$T/db" -event cpu-clock -vbudget 8 -vtrace "$T/vp-divisor.so" -- "$W" div-mem $((MS * $1)) \
        >"$T/out" 2>"$T/err" || fail "/usr/bin/dcpid failed: $(cat "$T/err")"
    grep -q '^dcpid: value profiler vp-divisor: [0-9]* traces, [1-9][0-9]* vsamples' "$T/err" ||
        fail "no vsamples: $(cat "$T/err")"
    DCPI_PLUGIN_PATH= /usr/bin/dcpilist -db "$T/db" -asm -vtrace "$T/vp-divisor.so" -vshow 8 -vcutoff 0 \
        acc_div_mem "$W" >"$T/list" 2>&1 || fail "/usr/bin/dcpilist failed: $(cat "$T/list")"
    line=$(grep -E 'div +qword ptr' "$T/list" | awk '$1 ~ /^[0-9]+$/ && /\(/' | sort -k5,5nr | head -1)
    [ -n "$line" ] || fail "no hotlist on the div: $(cat "$T/list")"
}
count() { vtot "$line"; }
stat_until 300 4 run count
n=$(vtot "$line")
stat_min "divisor value samples" "$n" 300 || fail "too few: $line"
for t in $(sed -n 's/^truth //p' "$T/out"); do
    lab=${t%%=*} val=${t#*=} pct=${val#*:} val=$((${val%%:*}))
    got=$(grep -o "([0-9.]*% $val)" <<<"$line" | tr -d '(%)' | awk '{print $1}' | head -1)
    stat_share "divisor $lab ($val)" "${got:-0}" "$pct" "$n" || fail "$line"
done
/usr/bin/dcpiprof -db "$T/db" >"$T/prof" 2>&1 || fail "/usr/bin/dcpiprof: $(cat "$T/prof")"
grep -q 'acc_div_mem' "$T/prof" || fail "dcpiprof does not show acc_div_mem: $(head "$T/prof")"

# ---- remove, and nothing of it is left
dpkg -P dcpi-dev dcpi >"$T/remove.out" 2>&1 || fail "dpkg -r: $(tail -3 "$T/remove.out")"
installed=0
[ $had_group = 1 ] || ! getent group dcpi >/dev/null || fail "the group dcpi is left after dpkg -P"
for f in /usr/bin/dcpid /usr/lib/libdcpi.so.0 /usr/lib/pkgconfig/dcpi.pc /usr/share/man/man1/dcpid.1 \
    /usr/lib/systemd/system/dcpid.service; do
    [ ! -e "$f" ] || fail "$f left after dpkg -P"
done
echo "ok: dcpi and dcpi-dev $V install, build and run a sample plugin ($n divisor samples), man works, remove cleanly"
