#!/bin/bash
# docs_tour.sh - the plugin author's tour of docs/vprofiler.md runs as written: its ```sh tour
# blocks, extracted in order, run in one shell (set -e) in a fresh directory holding `build` (a
# link to this build tree); then its three listings must show the tour program's divisors 7 and
# 3 with 7 the larger share (75% / 25% of the executions). Skips (77) without cpu-clock.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
SRC=${DCPI_SRC:?DCPI_SRC not set}
T=$(mktemp -d /tmp/dcpi-e2e-tour.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_require make make
awk '/^```sh tour$/ {on = 1; next} /^```$/ {on = 0} on' "$SRC/docs/vprofiler.md" >"$T/tour.sh"
[ "$(grep -c . "$T/tour.sh")" -ge 20 ] || fail "no tour found in docs/vprofiler.md: $(cat "$T/tour.sh")"
ln -s "$BIN" "$T/build"
SAN=
ldd "$BIN/libdcpi.so" 2>/dev/null | grep -q libasan && SAN="-fsanitize=address,undefined"
# a sanitizer build's libdcpi needs its users built with the runtime (make and cc read CFLAGS)
(cd "$T" && CFLAGS="$SAN -O2 -Wall -Wextra" CC="cc $SAN" timeout -k 5 300 bash -e tour.sh) \
    >"$T/out" 2>"$T/err" || fail "the tour stops: $(tail -5 "$T/err") $(tail -3 "$T/out")"
n=$(grep -c 'divisor (' "$T/out")
[ "$n" = 3 ] || fail "the tour printed $n hotlists, expected 3: $(cat "$T/out")"
while read -r line; do
    p7=$(grep -o '([0-9.]*% 7)' <<<"$line" | tr -d '(%)' | awk '{print $1}')
    p3=$(grep -o '([0-9.]*% 3)' <<<"$line" | tr -d '(%)' | awk '{print $1}')
    [ -n "$p7" ] && [ -n "$p3" ] && awk -v a="$p7" -v b="$p3" 'BEGIN { exit !(a > b) }' ||
        fail "divisors not as the program has them: $line"
done < <(grep 'divisor (' "$T/out")
grep -q '^ok: 0 checks failed' "$T/out" || fail "the plugin's unit test did not pass: $(cat "$T/out")"
echo "PASS: the tour runs as written: $(grep 'divisor (' "$T/out" | head -1 | grep -o '(.*')"
