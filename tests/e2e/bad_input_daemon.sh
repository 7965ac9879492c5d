#!/bin/bash
# e2e: a live system-wide dcpid answers a raw unknown command with "error: unknown command", a
# client that connects and says nothing with "error: no command received" within 5 s, and
# survives both (docs/reliability.md). Split from bad_input.sh, which passed without this part
# when it could not run.
# Skips (77) when python3 (the raw AF_UNIX client; not installed by make test-deps) is missing or
# system-wide cpu-clock sampling is not possible here.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
BIN=${DCPI_BIN:?}
e2e_counting badinputd
for f in dcpid dcpictl; do
    [ -x "$BIN/$f" ] || { echo "FAIL: $BIN/$f not built"; exit 1; }
done
e2e_need python3 "python3 is not installed: the raw AF_UNIX client is a python3 one-liner"

if ! "$BIN/dcpid" -db "$T/db2" -event cpu-clock >"$T/start" 2>&1; then
    grep -q "perf_event_open" "$T/start" &&
        e2e_skip "system-wide cpu-clock sampling is not possible here: $(cat "$T/start")"
    echo "FAIL: system-wide dcpid did not start: $(cat "$T/start")"
    exit 1
fi
trap '"$BIN/dcpictl" -db "$T/db2" quit >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
sock=$(ls "$T"/db2/dcpid-*.sock)
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
dpid=$("$BIN/dcpictl" -db "$T/db2" status | awk '$1 == "pid" {print $2}')
[ -n "$dpid" ] || fail "daemon did not survive the bad clients"
"$BIN/dcpictl" -db "$T/db2" quit >/dev/null || fail "quit failed"
for _ in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
[ "$fails" -eq 0 ] || exit 1
echo PASS
