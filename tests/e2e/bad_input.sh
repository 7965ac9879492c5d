#!/bin/bash
# e2e: bad input to every tool gets one line naming the thing and the reason, and a non-zero
# exit: unknown flags, missing arguments, a vanished process, unknown dcpictl commands, a
# client that sends nothing, missing databases and files (docs/reliability.md).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
BIN=${DCPI_BIN:?}
e2e_counting badinput

# expect RC PATTERN CMD...: CMD exits with RC and prints exactly one line on stderr matching
# PATTERN (an extended regular expression).
expect() {
    local want=$1 pat=$2 rc
    shift 2
    "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    local lines
    lines=$(wc -l <"$T/err")
    if [ "$rc" -ne "$want" ] || [ "$lines" -ne 1 ] || ! grep -Eq "$pat" "$T/err"; then
        fail "$*: exit $rc (want $want), stderr ($lines lines): $(head -c 300 "$T/err")"
    else
        echo "ok: $* -> $(cat "$T/err")"
    fi
}

for tool in dcpid dcpictl dcpiprof dcpilist dcpicat dcpiexport dcpiimport dcpireplay; do
    expect 2 "^$tool: unknown flag '-nosuchflag'" "$BIN/$tool" -nosuchflag
done
expect 2 "^dcpiprof: flag '-db' needs an argument" "$BIN/dcpiprof" -db
expect 1 "^dcpiprof: $T/none: no such database directory" "$BIN/dcpiprof" -db "$T/none"
expect 1 "^dcpicat: $T/missing.prof: " "$BIN/dcpicat" "$T/missing.prof"
expect 1 "no such process" "$BIN/dcpid" -db "$T/db1" -p 999999
expect 1 "^dcpictl: no dcpid for platform" "$BIN/dcpictl" -db "$T/db1" status
expect 2 "unknown command frobnicate" "$BIN/dcpictl" -db "$T/db1" frobnicate
expect 1 "plugin not found" "$BIN/dcpid" -db "$T/db1" -vtrace vp-nosuch -- true

# A live daemon: an unknown command sent raw, and a client that connects and says nothing.
if "$BIN/dcpid" -db "$T/db2" -event cpu-clock >"$T/start" 2>&1; then
    sock=$(ls "$T"/db2/dcpid-*.sock)
    if command -v python3 >/dev/null; then
        ans=$(python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"frobnicate\n")
print(s.recv(4096).decode().strip())' "$sock")
        echo "$ans" | grep -q "^error: unknown command" || fail "raw unknown command: '$ans'"
        echo "ok: raw unknown command answered '$ans'"
        start=$(date +%s%N)
        ans=$(python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
print(s.recv(4096).decode().strip())' "$sock")
        ms=$((($(date +%s%N) - start) / 1000000))
        echo "$ans" | grep -q "^error: no command received" || fail "silent client: '$ans'"
        [ "$ms" -lt 5000 ] || fail "silent client held the daemon for $ms ms"
        echo "ok: silent client answered '$ans' after $ms ms"
    fi
    dpid=$("$BIN/dcpictl" -db "$T/db2" status | awk '$1 == "pid" {print $2}')
    [ -n "$dpid" ] || fail "daemon did not survive the bad clients"
    "$BIN/dcpictl" -db "$T/db2" quit >/dev/null || fail "quit failed"
    for _ in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
else
    grep -q "perf_event_open" "$T/start" && echo "note: no system-wide sampling here: $(cat "$T/start")" ||
        fail "system-wide dcpid did not start: $(cat "$T/start")"
fi
[ "$fails" -eq 0 ] || exit 1
echo PASS
