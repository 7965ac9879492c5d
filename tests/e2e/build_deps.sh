#!/bin/bash
# build_deps.sh - building needs only the build packages (Makefile BUILD_PKGS), never a test's:
#  1. the lists: what make deps, build, demo, install and package ask tools/install-deps.sh for (make -n)
#     requires none of the test-only packages (check, chromium, linux-perf, golang-go, ...);
#     make test-deps requires all of them; a demo whose build fails shows the error and the log;
#  2. install-deps.sh as a user other than root: a missing required package is exit 1 and the
#     exact "sudo apt-get install -y ..." line; only optional ones missing is a note and exit 0;
#  3. a machine with only the build packages: in a private mount namespace every program,
#     header, pkg-config and CMake file of the installed packages outside the build packages'
#     dependency closure is hidden and dpkg's status forgets those packages; there, as nobody,
#     `make demo` on a fresh copy of the sources must build (cmake saying the tests, BPF and man
#     pages are off), stay quiet (no compiler output; under 40 lines) and print the answer:
#     dcpiprof's procedures of work-demo, hot_mul first.
# Skips (77) without root (the namespace, nobody), unshare/setpriv/apt-cache, or when the
# demo's dcpid cannot sample as nobody (perf_event_paranoid).
set -u
S=${DCPI_SRC:?DCPI_SRC not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting builddeps
chmod 755 "$T"

# --- 1. the lists, as make would run them
deps_of() { # TARGET: the install-deps.sh command line make -n prints for TARGET
    make -s -n -C "$S" "$1" BUILD="$T/nobuild" 2>/dev/null | grep -m1 'tools/install-deps.sh'
}
required() { sed -E 's/.*install-deps\.sh//; s/ -- .*//' <<<"$1"; }
has() { tr ' ' '\n' <<<"$1" | grep -qx -- "$2"; } # LIST PKG
list() { make -s -C "$S" --no-print-directory --eval="print-$1: ; @echo \$($1)" "print-$1"; }
BUILD_PKGS=$(list BUILD_PKGS)
TEST_PKGS=$(list TEST_PKGS)
[ -n "$BUILD_PKGS" ] && [ -n "$TEST_PKGS" ] || fail "the Makefile has no BUILD_PKGS/TEST_PKGS lists"
for p in check chromium linux-perf golang-go google-perftools debuginfod graphviz; do
    has "$TEST_PKGS" "$p" || fail "TEST_PKGS lacks $p"
done
for t in deps build demo install package; do
    line=$(deps_of $t)
    [ -n "$line" ] || { fail "make -n $t runs no tools/install-deps.sh"; continue; }
    req=$(required "$line")
    for p in $BUILD_PKGS; do has "$req" "$p" || fail "make $t does not require $p"; done
    for p in $TEST_PKGS; do
        [ "$t/$p" = package/pandoc ] && continue
        has "$BUILD_PKGS" "$p" && continue
        has "$req" "$p" && fail "make $t requires the test package $p: $line"
    done
done
req=$(required "$(deps_of test-deps)")
for p in $BUILD_PKGS $TEST_PKGS; do has "$req" "$p" || fail "make test-deps does not require $p"; done

# a failing build: make demo shows the error and names the log, nothing else
out=$(make -s -C "$S" demo BUILD="$T/bad" CMAKE_FLAGS=-DCMAKE_C_COMPILER=/dcpi/no-such-cc 2>&1) &&
    fail "make demo with a missing compiler passed"
grep -q 'CMake Error' <<<"$out" && grep -q "its whole log: $T/bad/build.log" <<<"$out" &&
    [ "$(wc -l <<<"$out")" -le 25 ] || fail "make demo's failure: $out"
[ -s "$T/bad/build.log" ] || fail "make demo's failure left no log"

[ "$fails" = 0 ] && echo "ok: make deps/build/demo/install/package require only the build packages; make test-deps all; a failed demo build shows its error and log"

# --- 2. install-deps.sh as another user
[ "$(id -u)" = 0 ] || e2e_skip "the non-root and namespace checks need root (setpriv, unshare)"
e2e_need setpriv "setpriv (util-linux) is missing"
e2e_need unshare "unshare (util-linux) is missing"
e2e_need apt-cache "apt-cache is missing (not a Debian system)"
asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$T" "$@"; }
out=$(asnobody sh "$S/tools/install-deps.sh" cmake dcpi-no-such-pkg -- dcpi-no-such-opt 2>&1)
rc=$?
[ $rc = 1 ] || fail "a missing required package: exit $rc, expected 1 ($out)"
grep -qx '    sudo apt-get install -y dcpi-no-such-pkg dcpi-no-such-opt' <<<"$out" ||
    fail "a missing required package: no exact apt-get line: $out"
out=$(asnobody sh "$S/tools/install-deps.sh" cmake -- dcpi-no-such-opt 2>&1)
rc=$?
[ $rc = 0 ] || fail "only an optional package missing: exit $rc, expected 0 ($out)"
grep -q 'optional' <<<"$out" && grep -qx '    sudo apt-get install -y dcpi-no-such-opt' <<<"$out" ||
    fail "only an optional package missing: no note with the apt-get line: $out"
out=$(asnobody sh "$S/tools/install-deps.sh" cmake -- pkg-config 2>&1)
[ $? = 0 ] && [ -z "$out" ] || fail "nothing missing: not silent: $out"
[ "$fails" = 0 ] && echo "ok: install-deps.sh as nobody: stops for a required package, notes optional ones"

# --- 3. a machine with only the build packages
closure() {
    apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
        --no-replaces --no-enhances "$@" 2>/dev/null | grep -v '^[ <]' | sort -u
}
# shellcheck disable=SC2086
closure $BUILD_PKGS >"$T/keep"
# shellcheck disable=SC2086
closure $(list OPT_PKGS) $(list MAN_PKGS) $TEST_PKGS >"$T/other"
grep -qx cmake "$T/keep" && grep -qx chromium "$T/other" || fail "apt-cache depends gave no closure"
# (what every Debian system has stays: Essential, Priority required or important)
comm -13 "$T/keep" "$T/other" |
    xargs -r dpkg-query -W -f='${Package} ${Essential} ${Priority} ${Status}\n' 2>/dev/null |
    awk '$NF == "installed" && $2 != "yes" && $3 != "required" && $3 != "important" { print $1 }' >"$T/hide"
grep -qx check "$T/hide" || fail "check is not among the hidden packages (installed?)"
xargs -r dpkg -L <"$T/hide" 2>/dev/null | grep -E '^/usr/(s?bin|include|lib/cmake|share/pkgconfig|lib/x86_64-linux-gnu/(pkgconfig|cmake))/' |
    sort -u >"$T/hidden"
[ "$fails" = 0 ] || exit 1
mkdir -p "$T/src"
if git -C "$S" rev-parse --git-dir >/dev/null 2>&1; then # the tracked files, as a clone has them
    (cd "$S" && git ls-files -z | tar --null -T - -cf -) | tar -C "$T/src" -xf -
else
    tar -C "$S" --exclude='./build*' -cf - . | tar -C "$T/src" -xf -
fi
chown -R 65534:65534 "$T/src"
# (the build is unoptimised, CMAKE_BUILD_TYPE=None: what it needs from Debian does not depend on
# -O2 -g, and it costs half the CPU; the workloads keep their own -O flags, so the demo's answer
# is the same; and linked by gold, DCPI_FAST_LINK, as make test's trees are: binutils has it)
# inside the namespace: each directory holding hidden files gets an overlay (on a tmpfs) from
# which those files are deleted; programs stay at their paths (cmake finds its modules)
cat >"$T/ns.sh" <<'SH'
set -eu
T=$1
mkdir -p "$T/ovl"
mount -t tmpfs tmpfs "$T/ovl"
i=0
for d in /usr/bin /usr/sbin /usr/include /usr/lib/cmake /usr/share/pkgconfig \
    /usr/lib/x86_64-linux-gnu/pkgconfig /usr/lib/x86_64-linux-gnu/cmake; do
    [ -d "$d" ] && grep -q "^$d/" "$T/hidden" || continue
    i=$((i + 1))
    mkdir -p "$T/ovl/u$i" "$T/ovl/w$i"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=$T/ovl/u$i,workdir=$T/ovl/w$i" "$d"
    grep "^$d/" "$T/hidden" | while IFS= read -r f; do
        [ -d "$f" ] && [ ! -L "$f" ] || rm -f "$f"
    done
done
awk 'NR == FNR { h[$1] = 1; next } /^Package: / { skip = $2 in h } !skip' "$T/hide" \
    /var/lib/dpkg/status >"$T/status"
mount --bind "$T/status" /var/lib/dpkg/status
cd "$T/src"
exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$T" PATH=/usr/bin:/bin \
    make demo BUILD="$T/src/build" CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=None -DDCPI_FAST_LINK=ON"
SH
to() { timeout -k 5 "$@"; }
to 600 unshare -m --propagation private bash "$T/ns.sh" "$T" >"$T/demo.out" 2>&1
rc=$?
log=$T/src/build/build.log
if [ $rc != 0 ]; then
    case "$(cat "$T/demo.out")" in
    *"demo: dcpid failed"*perf_event*|*"demo: dcpid failed"*ermission*)
        grep -q 'Built target' "$log" 2>/dev/null &&
            e2e_skip "built as nobody; the demo's dcpid cannot sample as nobody here: $(grep -m1 perf_event "$T/demo.out")" ;;
    esac
    fail "make demo as nobody with only the build packages: exit $rc: $(tail -20 "$T/demo.out")"
    exit 1
fi
[ -f "$log" ] || fail "make demo kept no build log ($log)"
grep -q 'Check not found: the tests are not built' "$log" || fail "cmake did not say the tests are off: $(grep -m3 -i check "$log")"
grep -q 'libbpf or clang not found' "$log" || fail "cmake did not say BPF is off (clang/libbpf hidden?)"
grep -q 'pandoc not found' "$log" || fail "cmake did not say the man pages are off (pandoc hidden?)"
grep -q '^dcpi: optional Debian packages missing' "$T/demo.out" ||
    fail "make demo did not note the optional packages: $(head -5 "$T/demo.out")"
n=$(wc -l <"$T/demo.out")
[ "$n" -le 40 ] || fail "make demo printed $n lines: $(head -5 "$T/demo.out")"
grep -qE 'Building C|Linking C|\[ *[0-9]+%\]' "$T/demo.out" && fail "make demo printed the compiler's output"
db=$(sed -n 's/^The database is in \([^ ]*\) .*/\1/p' "$T/demo.out")
case "$db" in /tmp/dcpi-demo.*) rm -rf "$db" ;; *) fail "make demo did not say where its database is" ;; esac
top=$(awk '/procedure/ { p = 1; next } p && $NF ~ /work-demo$/ { print $4; exit }' "$T/demo.out")
[ "$top" = hot_mul ] || fail "make demo's first work-demo procedure is '$top': $(cat "$T/demo.out")"
for p in hot_add hot_xor; do grep -qw "$p" "$T/demo.out" || fail "make demo does not show $p"; done
[ "$fails" = 0 ] && echo "ok: as nobody, with $(wc -l <"$T/hide") packages hidden, make demo builds and prints $n lines, hot_mul first"
exit $((fails > 0))
