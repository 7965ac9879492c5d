#!/bin/bash
# plugin_abi1.sh - the plugin ABI is append-only: tests/data/abi1/vp-load-addr-abi1.so, built
# against ABI 1's header and never rebuilt (tests/data/abi1/README.md), loads in today's dcpid
# and dcpilist and gives the same hotlists as samples/vp-load-addr.c built from today's sources:
# dcpid records the traces of a work-values run with the old binary (-vrecord), dcpireplay feeds
# the same traces to the new build in a copy of the database, and dcpilist's hotlists of the
# strided loads, old binary on the live profile and new build on the replayed one, are equal.
# Skips (77) when cpu-clock sampling with user registers is not available.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
SRC=${DCPI_SRC:?DCPI_SRC not set}
W=$BIN/samples/work-values
OLD=$SRC/tests/data/abi1/vp-load-addr-abi1.so
T=$(mktemp -d /tmp/dcpi-e2e-abi1.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

[ -f "$OLD" ] || fail "$OLD missing"
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
SAN=
ldd "$BIN/libdcpi.so" 2>/dev/null | grep -q libasan && SAN="-fsanitize=address,undefined"
mkdir -p "$T/new"
cc $SAN -O2 -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror -I"$SRC/include" -I"$BIN/include" \
    -o "$T/new/vp-load-addr.so" "$SRC/samples/vp-load-addr.c" -L"$BIN" -Wl,-rpath,"$BIN" -ldcpi ||
    fail "today's sample does not build"

# (-vbudget 8: 1 s of CPU gives the strided loads the value samples 3 s gave at the default)
to 120 "$BIN/dcpid" -db "$T/db" -event cpu-clock -vbudget 8 -vtrace "$OLD" -vrecord -- "$W" 1000 \
    >/dev/null 2>"$T/err" || fail "dcpid with the ABI-1 plugin failed: $(cat "$T/err")"
grep -q '^dcpid: value profiler vp-ldq-addr: [0-9]* traces, [1-9][0-9]* vsamples' "$T/err" ||
    fail "the ABI-1 plugin produced no vsamples: $(cat "$T/err")"
cp -a "$T/db" "$T/copy"
find "$T/copy" -name vp-ldq-addr.vprof -delete
"$BIN/dcpireplay" -db "$T/copy" -vtrace "$T/new/vp-load-addr.so" >"$T/rout" 2>&1 ||
    fail "dcpireplay with today's build failed: $(cat "$T/rout")"

"$BIN/dcpilist" -db "$T/db" -asm -vtrace "$OLD" -vshow 16 -vcutoff 0 stride_loop "$W" >"$T/old" 2>&1 ||
    fail "dcpilist with the ABI-1 plugin failed: $(cat "$T/old")"
"$BIN/dcpilist" -db "$T/copy" -asm -vtrace "$T/new/vp-load-addr.so" -vshow 16 -vcutoff 0 stride_loop "$W" \
    >"$T/new.list" 2>&1 || fail "dcpilist with today's build failed: $(cat "$T/new.list")"
grep -q 'addr (' "$T/old" || fail "no hotlist from the ABI-1 plugin: $(cat "$T/old")"
diff <(grep -v '^vp-ldq-addr: backend ' "$T/old") <(grep -v '^vp-ldq-addr: backend ' "$T/new.list") \
    >"$T/diff" || fail "ABI-1 binary and today's build differ: $(head -20 "$T/diff")"
echo "PASS: ABI-1 binary gives today's hotlists ($(grep -c 'addr (' "$T/old") instructions)"
