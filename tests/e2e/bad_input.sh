#!/bin/bash
# e2e: bad input to every tool gets one line naming the thing and the reason, and a non-zero
# exit: unknown flags, missing arguments, a vanished process, unknown dcpictl commands,
# missing databases and files (docs/reliability.md). A live daemon's answers to a raw unknown
# command and to a silent client: bad_input_daemon.sh.
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
expect 2 "^dcpictl: unknown command 'frobnicate': give flush, epoch, quit or status" "$BIN/dcpictl" -db "$T/db1" frobnicate
expect 1 "plugin not found" "$BIN/dcpid" -db "$T/db1" -vtrace vp-nosuch -- true

[ "$fails" -eq 0 ] || exit 1
echo PASS
