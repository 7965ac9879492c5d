#!/bin/bash
# service.sh - dcpid.service (issue 23 item 1) without systemd as PID 1:
#  (1) the unit (packaging/dcpid.service.in, ExecStart pointed at this build) passes
#      `systemd-analyze verify` and says what it promises: Type=notify, the database
#      /var/lib/dcpi (StateDirectory, group dcpi, UMask 0027), capabilities instead of all of
#      root's, not enabled by the package (WantedBy only);
#  (2) dcpid run the way systemd runs it: NOTIFY_SOCKET (a python3 datagram listener),
#      JOURNAL_STREAM naming its stderr, the unit's CapabilityBoundingSet (setpriv) and no
#      -nodaemon: it stays in the foreground, sends READY=1 with its MAINPID once sampling,
#      logs "<6>info: ..." lines without times to the journal stream, writes a database that
#      only root and the group dcpi read (dirs 0750, files 0640), and on SIGTERM (systemctl
#      stop) sends STOPPING=1, flushes, ends its epoch, exits 0 and releases the lock.
# (3), the unit under a real systemd, is service_systemd.sh. Skips (77) without root,
# systemd-analyze, python3 or system-wide perf sampling.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
SRC=${DCPI_SRC:?DCPI_SRC not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting service
to() { timeout -k 5 "$@"; }
DP= LP=
trap '[ -n "$DP" ] && kill -9 $DP 2>/dev/null; [ -n "$LP" ] && kill $LP 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
[ "$(id -u)" = 0 ] || e2e_skip "needs root (setpriv with a bounding set, system-wide sampling)"
e2e_need systemd-analyze "systemd-analyze is not installed (package systemd)"
e2e_need python3 "python3 is not installed (the NOTIFY_SOCKET listener)"
e2e_need setpriv "setpriv is not installed (util-linux)"
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
UNIT_IN=$SRC/packaging/dcpid.service.in

# --- (1) the unit
sed "s|@DCPI_BINDIR@|$BIN|g" "$UNIT_IN" >"$T/dcpid.service"
out=$(systemd-analyze verify --man=no "$T/dcpid.service" 2>&1) || fail "(1) systemd-analyze verify: $out"
[ -z "$out" ] || fail "(1) systemd-analyze verify says: $out"
want() { grep -qxF "$1" "$T/dcpid.service" || fail "(1) the unit has no line '$1'"; }
want "Type=notify"
want "ExecStart=$BIN/dcpid -nodaemon -db /var/lib/dcpi -epoch-every 1d -keep 4w"
want "StateDirectory=dcpi"
want "Group=dcpi"
want "UMask=0027"
want "WantedBy=multi-user.target"
grep -q "^User=" "$T/dcpid.service" && fail "(1) the unit sets User= (root's uid is meant, with fewer capabilities)"
CAPS=$(awk -F= '$1 == "CapabilityBoundingSet" { print $2 }' "$T/dcpid.service")
echo "$CAPS" | grep -q CAP_PERFMON || fail "(1) no CAP_PERFMON in CapabilityBoundingSet: $CAPS"
echo "$CAPS" | grep -q CAP_SYS_ADMIN && fail "(1) CAP_SYS_ADMIN in the bounding set: $CAPS"
echo "ok (1) the unit verifies; capabilities: $CAPS"

# --- (2) as systemd runs it
cat >"$T/listen.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(4096).decode().replace("\n", " ") + "\n")
        out.flush()
PY
python3 "$T/listen.py" "$T/notify" "$T/notify.log" &
LP=$!
for i in $(seq 50); do [ -S "$T/notify" ] && break; sleep 0.1; done
: >"$T/journal"
JS=$(stat -c '%d:%i' "$T/journal")
setcaps=$(echo "$CAPS" | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
NOTIFY_SOCKET=$T/notify JOURNAL_STREAM=$JS setpriv --bounding-set "-all,$setcaps" --inh-caps -all -- \
    "$BIN/dcpid" -db "$T/db" -e cpu-clock -flush 1 2>>"$T/journal" &
DP=$!
for i in $(seq 300); do grep -q READY=1 "$T/notify.log" 2>/dev/null && break; kill -0 $DP 2>/dev/null || break; sleep 0.1; done
grep -q READY=1 "$T/notify.log" || fail "(2) no READY=1: $(cat "$T/notify.log" "$T/journal")"
grep -q "READY=1.*MAINPID=$DP" "$T/notify.log" || fail "(2) READY without MAINPID=$DP: $(cat "$T/notify.log")"
kill -0 $DP 2>/dev/null || fail "(2) dcpid did not stay in the foreground (NOTIFY_SOCKET set)"
ST=$(to 30 "$BIN/dcpictl" -db "$T/db" status) || fail "(2) status: $ST"
[ "$(echo "$ST" | awk '$1 == "pid" { print $2 }')" = "$DP" ] || fail "(2) status pid is not $DP"
capeff=$(awk '/^CapBnd/ { print $2 }' /proc/$DP/status)
[ "$capeff" != "000001ffffffffff" ] || fail "(2) dcpid runs with every capability"
sleep 2
head -1 "$T/journal" | grep -qE '^<[0-7]>(info|warning|error|debug): ' || fail "(2) journal lines: $(head -3 "$T/journal")"
grep -qE '^<6>info: dcpid ready: ' "$T/journal" || fail "(2) no '<6>info: dcpid ready' line: $(head -5 "$T/journal")"
grep -qE '^[0-9]{4}-' "$T/journal" && fail "(2) timestamps in the journal stream: $(head -3 "$T/journal")"
MP=$DP
kill -TERM $DP
wait $DP
rc=$?
DP=
[ $rc = 0 ] || fail "(2) dcpid exited $rc on SIGTERM: $(tail -3 "$T/journal")"
grep -q STOPPING=1 "$T/notify.log" || fail "(2) no STOPPING=1: $(cat "$T/notify.log")"
flock -n "$(ls "$T"/db/dcpid-*.lock)" true || fail "(2) the lock is still held after exit"
E=$(ls "$T/db" | grep -E '^[0-9]{14}$')
grep -qx "open 0" "$T/db/$E"/*/epoch.info || fail "(2) the epoch did not end: $(cat "$T/db/$E"/*/epoch.info)"
n=$(find "$T/db/$E" -name '*.prof' | wc -l)
[ "$n" -gt 0 ] || fail "(2) no profiles flushed"
bad=$(find "$T/db" \( -type d ! -perm -0750 -o -type d -perm /0027 -o -type f -perm /0027 \) ! -name '*.sock' | head -3)
[ -z "$bad" ] || fail "(2) readable by others: $(ls -ld $bad)"
grp="(no group dcpi on this machine: modes only)"
if getent group dcpi >/dev/null; then
    [ "$(stat -c %G "$T/db")" = dcpi ] || fail "(2) the database's group is $(stat -c %G "$T/db"), not dcpi"
    [ "$(find "$T/db/$E" ! -group dcpi | head -1)" = "" ] || fail "(2) files outside group dcpi"
    grp="(group dcpi)"
fi
echo "ok (2) READY=1 MAINPID=$MP, journal priorities, STOPPING=1 on SIGTERM, exit 0, lock free, $n profiles, dirs 0750 files 0640 $grp"
exit $((fails > 0))
