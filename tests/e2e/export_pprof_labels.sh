#!/bin/bash
# e2e: dcpiexport -format pprof labels every sample with its process (issue 23 item 8), read by
# Go's pprof (golang-go): sha256sum and md5sum (Debian coreutils) hash a file side by side under
# one dcpid -- command, then
#   - `go tool pprof -tags`: the "comm" and "pid" labels' totals equal dcpiprof -procs's rows
#     exactly (per command and per pid), and cover every sample;
#   - the profile of several commands is named after the database and epoch (pprof's "File:"),
#     not after one of the programs; the comment names the processes (all of them);
#   - with -comm md5sum: only md5sum's samples, labelled, as many as dcpiprof -comm md5sum
#     counts, the profile named after md5sum and the comment after the selection.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
BIN=${DCPI_BIN:?}
export LC_ALL=C HOME=${HOME:-/tmp}
e2e_require go golang-go
e2e_counting pprofl
to() { timeout -k 5 "$@"; }
e2e_probe_cpu_clock "cpu-clock sampling"
SHA=$(command -v sha256sum) && MD5=$(command -v md5sum) ||
    e2e_skip "sha256sum/md5sum (coreutils) are not installed"

# both commands hash a file until each has at least 30 samples (a loaded machine: longer)
ok=0
for mb in 4 16 64; do
    head -c $((mb * 1000000)) /dev/urandom >"$T/f"
    rm -rf "$T/db"
    to 300 "$BIN/dcpid" -db "$T/db" -event cpu-clock -- sh -c \
        "'$SHA' '$T/f' '$T/f' '$T/f' >/dev/null & '$MD5' '$T/f' '$T/f' '$T/f' '$T/f' >/dev/null; wait" \
        >/dev/null 2>"$T/dcpid.err" || { echo "FAIL: dcpid: $(cat "$T/dcpid.err")"; exit 1; }
    "$BIN/dcpiprof" -db "$T/db" -procs -no_header >"$T/procs" 2>&1 ||
        { echo "FAIL: dcpiprof -procs: $(cat "$T/procs")"; exit 1; }
    s=$(awk '$5 == "sha256sum" {n += $1} END {print n + 0}' "$T/procs")
    m=$(awk '$5 == "md5sum" {n += $1} END {print n + 0}' "$T/procs")
    [ "$s" -ge 30 ] && [ "$m" -ge 30 ] && { ok=1; break; }
done
[ $ok -eq 1 ] || { echo "FAIL: too few samples: sha256sum $s, md5sum $m"; exit 1; }
echo "dcpiprof -procs: sha256sum $s, md5sum $m samples"

"$BIN/dcpiexport" -db "$T/db" -format pprof -o "$T/p.pb.gz" 2>"$T/exp.err" ||
    { echo "FAIL: dcpiexport: $(cat "$T/exp.err")"; exit 1; }
go tool pprof -sample_index=0 -tags "$T/p.pb.gz" >"$T/tags" 2>&1 || fail "go tool pprof -tags: $(head -3 "$T/tags")"
# "KEY: Total N" then "  COUNT (PCT%): VALUE" lines, as "KEY VALUE COUNT"
# (the share may be padded: "(  100%)")
tagrows() {
    sed -nE 's/^ *([a-z]+): Total .*/K \1/p; s/^ *([0-9]+)(\.[0-9]*)? \( *[0-9.]+%\): (.*)$/V \1 \3/p' "$1" |
        awk '$1 == "K" {k = $2; next} {print k, $3, $2}'
}
tagrows "$T/tags" | sort >"$T/got"
# expected from dcpiprof -procs: "comm NAME N" and "pid PID N"
awk 'NF == 5 {c[$5] += $1; p[$4] += $1} END {for (k in c) printf "comm %s %d\n", k, c[k];
     for (k in p) printf "pid %s %d\n", k, p[k]}' "$T/procs" | sort >"$T/want"
cmp -s "$T/got" "$T/want" || fail "pprof labels differ from dcpiprof -procs: got [$(tr '\n' ' ' <"$T/got")] want [$(tr '\n' ' ' <"$T/want")]"
total=$("$BIN/dcpiprof" -db "$T/db" | awk '$1 == "cpu-clock" {print $2; exit}')
ltot=$(awk '/^ *comm: Total/ {print $3 + 0}' "$T/tags")
[ "${ltot:-x}" = "$total" ] || fail "comm labels cover ${ltot:-none} of $total samples"
go tool pprof -top "$T/p.pb.gz" >"$T/top" 2>&1
E=$(basename "$(ls -d "$T"/db/2*)")
grep -qx "File: db epoch $E (all processes)" "$T/top" || fail "profile not named after the database: $(head -3 "$T/top")"
grep -qx "dcpi database $T/db, epoch $E, all processes" "$T/top" || fail "no title comment: $(head -3 "$T/top")"

# -comm md5sum
"$BIN/dcpiexport" -db "$T/db" -format pprof -comm md5sum -o "$T/m.pb.gz" 2>"$T/exp.err" ||
    fail "dcpiexport -comm md5sum: $(cat "$T/exp.err")"
go tool pprof -sample_index=0 -tags "$T/m.pb.gz" >"$T/mtags" 2>&1
mc=$("$BIN/dcpiprof" -db "$T/db" -comm md5sum | awk '$1 == "cpu-clock" {print $2; exit}')
got=$(tagrows "$T/mtags" | tr '\n' ' ')
[ "$got" = "comm md5sum $mc pid $(awk '$5 == "md5sum" {print $4; exit}' "$T/procs") $mc " ] ||
    fail "-comm md5sum: labels [$got], dcpiprof -comm md5sum has $mc samples"
go tool pprof -top "$T/m.pb.gz" >"$T/mtop" 2>&1
grep -qx "File: md5sum" "$T/mtop" || fail "-comm md5sum: not named after md5sum: $(head -3 "$T/mtop")"
grep -q "processes named md5sum$" "$T/mtop" || fail "-comm md5sum: the comment does not name the selection"
[ "$fails" -eq 0 ] || exit 1
echo "PASS: pid/comm labels = dcpiprof -procs ($(tr '\n' ' ' <"$T/got"))"
