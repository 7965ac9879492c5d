#!/bin/bash
# e2e: dcpictl status -json against a running dcpid (issue 23 item 7): the object parses
# (python3), names the daemon's epoch, platform and pid as the text answer does, and keeps every
# line of it.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
BIN=${DCPI_BIN:?}
export LC_ALL=C
e2e_require python3 python3
e2e_counting jsonstatus
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "cpu-clock sampling"
to 60 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- sleep 20 >/dev/null 2>"$T/dcpid.err" &
dpid=$!
ok=0
for _ in $(seq 100); do # until the daemon answers (a loaded machine: slowly)
    "$BIN/dcpictl" -db "$T/db" status >"$T/text" 2>/dev/null && { ok=1; break; }
    sleep 0.1
done
[ $ok -eq 1 ] || { kill $dpid; echo "FAIL: dcpid never answered: $(cat "$T/dcpid.err")"; exit 1; }
"$BIN/dcpictl" -db "$T/db" status -json >"$T/s.json" 2>"$T/err" || fail "status -json: $(cat "$T/err")"
"$BIN/dcpictl" -db "$T/db" quit >/dev/null 2>&1
wait $dpid
epoch=$(awk '$1 == "epoch" {print $2}' "$T/text")
plat=$(awk '$1 == "platform" {print $2}' "$T/text")
pid=$(awk '$1 == "pid" {print $2}' "$T/text")
python3 - "$T/s.json" "$epoch" "$plat" "$pid" "$T/text" <<'PY' || fail "status -json: $(cat "$T/s.json")"
import json, sys
j = json.load(open(sys.argv[1]))
text = open(sys.argv[5]).read().split("\n")
assert j["schema"] == "dcpictl-status/1"
assert (j["epoch"], j["platform"], j["pid"]) == (sys.argv[2], sys.argv[3], int(sys.argv[4])), j
assert isinstance(j["uptime_s"], int) and isinstance(j["images"], int) and isinstance(j["rate_per_s"], int)
keys = lambda ls: [l.split(" ")[0] for l in ls if l and l != "ok"]
assert keys(j["lines"]) == keys(text), (j["lines"], text)
PY
[ "$fails" -eq 0 ] || exit 1
echo "PASS: dcpictl status -json (epoch $epoch, pid $pid)"
