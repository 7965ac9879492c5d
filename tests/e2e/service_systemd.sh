#!/bin/bash
# service_systemd.sh - dcpid.service under a real systemd (issue 23 item 1): a copy of the unit
# (ExecStart at this build, its own database instead of /var/lib/dcpi, a unique name) started
# with systemctl: active once READY, dcpictl status answers, the journal has its log lines,
# `systemctl stop` flushes (profiles on disk, the epoch ended) and releases the lock.
# Skips (77) where systemd is not PID 1 (containers, this kind of VM), or without root.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
SRC=${DCPI_SRC:?DCPI_SRC not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
[ "$(id -u)" = 0 ] || e2e_skip "needs root (systemctl start)"
[ -d /run/systemd/system ] && [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] ||
    e2e_skip "systemd is not PID 1 here (PID 1 is '$(cat /proc/1/comm 2>/dev/null)'): the unit is checked by service.sh"
e2e_probe_cpu_clock "perf_event_open for cpu-clock"
e2e_counting service-systemd
NAME=dcpid-e2e-$$
UNIT=/run/systemd/system/$NAME.service
DB=$T/db
trap 'systemctl stop "$NAME" 2>/dev/null; rm -f "$UNIT"; systemctl daemon-reload; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
chmod 0755 "$T"
sed -e "s|@DCPI_BINDIR@|$BIN|g" -e "s|/var/lib/dcpi|$DB|g" -e "s|^StateDirectory.*|ReadWritePaths=$T|" \
    -e "/^StateDirectoryMode/d" -e "s|^Group=dcpi|Group=root|" -e "s|^ProtectHome=.*|ProtectHome=no|" \
    "$SRC/packaging/dcpid.service.in" >"$UNIT"
systemctl daemon-reload
t0=$(date '+%Y-%m-%d %H:%M:%S')
timeout 60 systemctl start "$NAME" || fail "systemctl start: $(systemctl status "$NAME" 2>&1 | tail -5)"
[ "$(systemctl is-active "$NAME")" = active ] || fail "not active: $(systemctl status "$NAME" 2>&1 | tail -5)"
ST=$(timeout 30 "$BIN/dcpictl" -db "$DB" status) || fail "dcpictl status: $ST"
MP=$(systemctl show -p MainPID --value "$NAME")
[ "$(echo "$ST" | awk '$1 == "pid" { print $2 }')" = "$MP" ] || fail "status pid is not the MainPID $MP"
sleep 2
journalctl -u "$NAME" --since "$t0" | grep -q "dcpid ready" || fail "no 'dcpid ready' in the journal"
timeout 130 systemctl stop "$NAME" || fail "systemctl stop"
flock -n "$(ls "$DB"/dcpid-*.lock)" true || fail "the lock is still held after systemctl stop"
E=$(ls "$DB" | grep -E '^[0-9]{14}$' | tail -1)
grep -qx "open 0" "$DB/$E"/*/epoch.info || fail "the epoch did not end at stop"
[ "$(find "$DB/$E" -name '*.prof' | wc -l)" -gt 0 ] || fail "nothing flushed at stop"
[ $fails = 0 ] && echo "ok: $NAME active (MainPID $MP), journal, systemctl stop flushed and released the lock"
exit $((fails > 0))
