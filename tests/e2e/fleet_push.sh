#!/bin/bash
# fleet_push.sh - dcpipush and dcpictl -fleet against a private clickhouse-server: the schema,
# a pushed database counted exactly once (a repeat is a no-op), hostile names (host, path, command,
# symbol with quotes, backslashes, tabs) round-tripping exactly, basic auth from the environment
# (never the URL), TLS with the server's certificate verified, duty weighting, the server down,
# and pushes killed at random points or cut by a server killed mid-push: once both are back,
# the store holds every sample exactly once.
# Skips (77) when perf_event_open of cpu-clock is not possible here (the database is recorded).
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/fleet.sh"
e2e_counting fleet-push
to() { timeout -k 5 "$@"; }
trap 'fleet_stop "$T/ch"; [ -n "${KEEP:-}" ] || { fleet_rm "$T/ch"; rm -rf "$T"; }' EXIT
FLEET_TMPFS=1
e2e_require gcc build-essential
e2e_probe_cpu_clock "perf_event_open for cpu-clock"

# --- a recording of a program with hostile names, with call chains
prog=$(fleet_hostile_prog "$T") || exit 1
to 60 "$BIN/dcpid" -db "$T/db" -g -event cpu-clock -- "$prog" 500 >"$T/dcpid.out" 2>&1 ||
    { echo "FAIL: dcpid: $(tail -3 "$T/dcpid.out")"; exit 1; }
local_total=$("$BIN/dcpiprof" -db "$T/db" | awk '$1 == "cpu-clock" { print $2; exit }')
[ "${local_total:-0}" -ge 100 ] || { echo "FAIL: only '$local_total' samples recorded"; exit 1; }

mkdir -p "$T/ch"
FLEET_TLS=1 fleet_start "$T/ch"
U="${FLEET_HTTP}?database=fl"
S="$FLEET_HTTP"
committed="cid IN (SELECT argMax(cid, pushed) FROM fl.manifest GROUP BY slot)"
total() { fleet_sql "$S" "SELECT sum(cnt) FROM fl.samples WHERE $committed ${1:-}"; }
# until SQL prints WANT (an ALTER ... DELETE is a mutation, done in the background): at most 20 s
until_sql() {
    for _ in $(seq 1 200); do
        [ "$(fleet_sql "$S" "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    fail "'$1' is not '$2' after 20 s"
}

# --- schema
out=$("$BIN/dcpipush" -db "$T/db" "$U" 2>&1) && fail "push before init succeeded"
case "$out" in *"has no dcpi schema (run dcpictl -fleet URL init)"*) ;; *) fail "push before init: $out" ;; esac
"$BIN/dcpictl" -fleet "$U" -fleet-keep 30 init >"$T/init.out" 2>&1 || fail "init: $(cat "$T/init.out")"
"$BIN/dcpictl" -fleet "$U" init >/dev/null 2>&1 || fail "init again is not a no-op"
for t in meta samples hotlists vmiss chains loss symbols manifest; do
    [ "$(fleet_sql "$S" "EXISTS TABLE fl.$t")" = 1 ] || fail "no table $t after init"
done
fleet_sql "$S" "INSERT INTO fl.meta VALUES ('schema', '99', 1)" >/dev/null
fleet_sql "$S" "INSERT INTO fl.meta VALUES ('schema', '99', 99999999999999999999)" >/dev/null 2>&1 ||
    fleet_sql "$S" "INSERT INTO fl.meta VALUES ('schema', '99', 18446744073709551615)" >/dev/null
out=$("$BIN/dcpipush" -db "$T/db" "$U" 2>&1) && fail "push to schema 99 succeeded"
case "$out" in *"has dcpi schema 99, this dcpi knows 4"*) ;; *) fail "schema 99: $out" ;; esac
fleet_sql "$S" "ALTER TABLE fl.meta DELETE WHERE value = '99'" >/dev/null
until_sql "SELECT count() FROM fl.meta WHERE value = '99'" 0
"$BIN/dcpictl" -fleet "$U" status >/dev/null 2>&1 || fail "status after restoring the schema"
# old_schema N: the store says schema N; a push is refused naming the upgrade, then init upgrades
old_schema() {
    local out
    fleet_sql "$S" "ALTER TABLE fl.meta DELETE WHERE key = 'schema'" >/dev/null
    fleet_sql "$S" "INSERT INTO fl.meta VALUES ('schema', '$1', 1)" >/dev/null
    until_sql "SELECT arrayStringConcat(groupArray(value), ',') FROM fl.meta WHERE key = 'schema'" "$1"
    out=$("$BIN/dcpipush" -db "$T/db" "$U" 2>&1) && fail "push to schema $1 succeeded"
    case "$out" in *"has dcpi schema $1, this dcpi knows 4 (dcpictl -fleet URL init upgrades it)"*) ;; *) fail "schema $1: $out" ;; esac
    "$BIN/dcpictl" -fleet "$U" init >"$T/up.out" 2>&1 || fail "init of a schema $1 store: $(cat "$T/up.out")"
}
# the hotlists' cluster counters (schema 4): dropped, then counted back
clust="('hotlists', 'clusters'), ('hotlists', 'chits'), ('hotlists', 'csq'), ('hotlists', 'cagree')"
drop_clust() {
    local c
    for c in clusters chits csq cagree; do
        fleet_sql "$S" "ALTER TABLE fl.hotlists DROP COLUMN $c" >/dev/null
    done
}
# a schema 3 store (no cluster counters in hotlists) is refused, then upgraded by init
drop_clust
old_schema 3
[ "$(fleet_sql "$S" "SELECT count() FROM system.columns WHERE database = 'fl' AND (table, name) IN ($clust)")" = 4 ] ||
    fail "init did not add the schema 4 columns of hotlists"
# a schema 2 store (no vmiss table, no cluster counters) is refused, then upgraded by init
fleet_sql "$S" "DROP TABLE fl.vmiss" >/dev/null
drop_clust
old_schema 2
[ "$(fleet_sql "$S" "EXISTS TABLE fl.vmiss")" = 1 ] || fail "init did not add the schema 3 table vmiss"
[ "$(fleet_sql "$S" "SELECT count() FROM system.columns WHERE database = 'fl' AND (table, name) IN ($clust)")" = 4 ] ||
    fail "init did not add the schema 4 columns to a schema 2 store"
# a schema 1 store (no hotlists.backend, no manifest.epoch, no vmiss, no cluster counters) is
# refused, then upgraded
fleet_sql "$S" "DROP TABLE fl.vmiss" >/dev/null
fleet_sql "$S" "ALTER TABLE fl.hotlists DROP COLUMN backend" >/dev/null
fleet_sql "$S" "ALTER TABLE fl.manifest DROP COLUMN epoch" >/dev/null
drop_clust
old_schema 1
[ "$(fleet_sql "$S" "SELECT count() FROM system.columns WHERE database = 'fl' AND (table, name) IN (('hotlists', 'backend'), ('manifest', 'epoch'), ('vmiss', 'reason'), $clust)")" = 7 ] ||
    fail "init did not add the schema 2 and 4 columns and the schema 3 table"

# --- push, hostile names, repeat
host=$'ho\'st"\\\tna me'
out=$("$BIN/dcpipush" -db "$T/db" -host "$host" "$U" 2>&1) || fail "push: $out"
case "$out" in *" rows pushed") ;; *) fail "push said: $out" ;; esac
[ "$(total)" = "$local_total" ] || fail "fleet total $(total), local $local_total"
hex() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n' | tr a-f A-F; }
[ "$(fleet_sql "$S" "SELECT DISTINCT hex(host) FROM fl.samples")" = "$(hex "$host")" ] ||
    fail "host did not round-trip: $(fleet_sql "$S" "SELECT DISTINCT host FROM fl.samples")"
fleet_sql "$S" "SELECT DISTINCT hex(path) FROM fl.samples" | grep -x "$(hex "$prog")" >/dev/null ||
    fail "path did not round-trip"
fleet_sql "$S" "SELECT DISTINCT hex(comm) FROM fl.samples" | grep -x "$(hex $'c\'o"m\\m\tx')" >/dev/null ||
    fail "command name did not round-trip: $(fleet_sql "$S" "SELECT DISTINCT comm FROM fl.samples")"
fleet_sql "$S" "SELECT hex(name) FROM fl.symbols" | grep -x "$(hex 'q'"'"'uo"te\back\ttab\nnl')" >/dev/null ||
    fail "symbol name did not round-trip"
[ "$(fleet_sql "$S" "SELECT count() FROM fl.chains WHERE $committed")" -gt 0 ] || fail "no call chains"
[ "$(fleet_sql "$S" "SELECT count() FROM fl.loss WHERE $committed")" -gt 0 ] || fail "no loss rows"
commits=$(fleet_sql "$S" "SELECT count() FROM fl.manifest")
out=$("$BIN/dcpipush" -db "$T/db" -host "$host" "$U" 2>&1) || fail "repeat: $out"
case "$out" in *"already in the store") ;; *) fail "repeat said: $out" ;; esac
[ "$(fleet_sql "$S" "SELECT count() FROM fl.manifest")" = "$commits" ] || fail "a repeat committed"
[ "$(total)" = "$local_total" ] || fail "after a repeat: fleet total $(total), local $local_total"
# the hostile names through the queries: by procedure with the children column (from the stored
# chains), and the report page (flame graph, callers), as the local database shows them
"$BIN/dcpiprof" -db "$T/db" >"$T/lp" 2>&1
"$BIN/dcpiprof" -fleet "$U" -host "$host" >"$T/fp" 2>&1
grep -q children "$T/lp" && diff "$T/lp" "$T/fp" >"$T/dp" || fail "hostile names, dcpiprof -fleet: $(head -5 "$T/dp")"
"$BIN/dcpireport" -db "$T/db" -o "$T/lr.html" 2>/dev/null
"$BIN/dcpireport" -fleet "$U" -host "$host" -o "$T/fr.html" 2>/dev/null
norm() { tr ',' '\n' <"$1" | grep -v -e '^"db":' -e '^"epoch":' -e '<title>'; }
grep -q '"flame":{' "$T/lr.html" && diff <(norm "$T/lr.html") <(norm "$T/fr.html") >"$T/dr" ||
    fail "hostile names, dcpireport -fleet: $(head -5 "$T/dr")"

# --- duty: a host that sampled a quarter of the time counts 4 times (dcpid -duty 0.25 writes
# DB/<epoch>/<platform>/duty); the fleet total of both hosts is 4 a + b
cp -r "$T/db" "$T/dbq"
for d in "$T"/dbq/*/*/; do echo 0.25 >"$d/duty"; done
"$BIN/dcpipush" -q -db "$T/dbq" -host quarter "$U" >/dev/null 2>&1 || fail "push of the duty 0.25 host"
[ "$(total "AND host = 'quarter'")" = "$local_total" ] || fail "raw counts of the duty host changed"
fleet_q=$("$BIN/dcpiprof" -fleet "$U" -host quarter | awk '$1 == "cpu-clock" { print $2; exit }')
[ "$fleet_q" = "$((4 * local_total))" ] || fail "duty 0.25: fleet shows $fleet_q, want $((4 * local_total))"
both=$("$BIN/dcpiprof" -fleet "$U" -host quarter,"$host" | awk '$1 == "cpu-clock" { print $2; exit }')
[ "$both" = "$((5 * local_total))" ] || fail "duty 0.25 + 1: fleet shows $both, want $((5 * local_total))"

# --- credentials: from the environment or a file, never the URL
out=$(DCPI_FLEET_USER=pusher DCPI_FLEET_PASSWORD_FILE="$T/ch/password" \
    "$BIN/dcpipush" -db "$T/db" -host auth1 "$U" 2>&1) || fail "push with a password file: $out"
out=$(DCPI_FLEET_USER=pusher DCPI_FLEET_PASSWORD='pw-"q\uote' \
    "$BIN/dcpipush" -db "$T/db" -host auth2 "$U" 2>&1) || fail "push with a password: $out"
out=$(DCPI_FLEET_USER=pusher DCPI_FLEET_PASSWORD=wrong "$BIN/dcpipush" -db "$T/db" -host a3 "$U" 2>&1) &&
    fail "a wrong password was accepted"
case "$out" in *"Wrong password"*) ;; *) fail "wrong password: $out" ;; esac
out=$("$BIN/dcpipush" -db "$T/db" "http://pusher:pw@127.0.0.1:1/" 2>&1) && fail "URL credentials taken"
case "$out" in *"credentials in a URL"*) ;; *) fail "URL credentials: $out" ;; esac
[ "$(total "AND host = 'auth1'")" = "$local_total" ] || fail "auth1 total $(total "AND host = 'auth1'")"
# TLS: the server's certificate is verified (against DCPI_FLEET_CACERT), with basic auth on top
out=$("$BIN/dcpipush" -db "$T/db" -host tls0 "$FLEET_HTTPS?database=fl" 2>&1) &&
    fail "https with an unknown certificate accepted"
case "$out" in *"certificate"*) ;; *) fail "https, unknown certificate: $out" ;; esac
out=$(DCPI_FLEET_CACERT="$T/ch/crt.pem" DCPI_FLEET_USER=pusher DCPI_FLEET_PASSWORD_FILE="$T/ch/password" \
    "$BIN/dcpipush" -db "$T/db" -host tls1 "$FLEET_HTTPS?database=fl" 2>&1) || fail "https push: $out"
[ "$(total "AND host = 'tls1'")" = "$local_total" ] || fail "tls1 total $(total "AND host = 'tls1'")"

# --- many epochs, pushes killed at random points: nothing lost, nothing twice
ep=$(ls "$T/db" | grep -E '^[0-9]{12}([0-9]{2})?$' | head -1)
for i in $(seq 10 39); do cp -r "$T/db/$ep" "$T/db/2026010100$i"; done
nep=$(ls "$T/db" | grep -cE '^[0-9]{12}([0-9]{2})?$')
# 8 pushes killed; 4 in quick mode (make test's ASan pass, for memory errors: the pushes that
# resume after the kills run the same code after 4)
nk=8
[ "${DCPI_TEST_QUICK:-0}" = 1 ] && nk=4
for i in $(seq 1 $nk); do
    "$BIN/dcpipush" -q -db "$T/db" -host killed "$U" >/dev/null 2>&1 &
    p=$!
    sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
    kill -9 $p 2>/dev/null
    wait $p 2>/dev/null
done
"$BIN/dcpipush" -q -db "$T/db" -host killed "$U" >"$T/k.out" 2>&1 || fail "final push: $(cat "$T/k.out")"
want=$((local_total * nep))
[ "$(total "AND host = 'killed'")" = "$want" ] ||
    fail "after killed pushes: $(total "AND host = 'killed'") samples, want $want"

# --- the server down, then killed mid-push
fleet_stop "$T/ch"
out=$("$BIN/dcpipush" -db "$T/db" -host down "$U" 2>&1) && fail "push to a stopped server succeeded"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "server down: more than one line: $out"
case "$out" in "dcpipush: http://127.0.0.1:"*) ;; *) fail "server down: $out" ;; esac
fleet_restart "$T/ch"
for i in 1 2; do
    "$BIN/dcpipush" -q -db "$T/db" -host cut "$U" >/dev/null 2>&1 &
    p=$!
    sleep "0.$((RANDOM % 10))"
    kill -9 "$(cat "$T/ch/pid")"
    wait $p && echo "note: push $i finished before the server was killed"
    fleet_restart "$T/ch"
done
"$BIN/dcpipush" -q -db "$T/db" -host cut "$U" >"$T/c.out" 2>&1 || fail "push after restart: $(cat "$T/c.out")"
[ "$(total "AND host = 'cut'")" = "$want" ] ||
    fail "after a killed server: $(total "AND host = 'cut'") samples, want $want"

[ $fails = 0 ] && echo "PASS: fleet push ($local_total samples, $nep epochs)"
exit $((fails > 0))
