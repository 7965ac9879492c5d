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
expect 2 "^dcpictl: unknown command 'frobnicate': give flush, epoch, quit, status or epochs" "$BIN/dcpictl" -db "$T/db1" frobnicate
expect 1 "plugin not found" "$BIN/dcpid" -db "$T/db1" -vtrace vp-nosuch -- true

# ---- messages that say what is wrong and what to do (issue 22 item 4) ----
touch "$T/plain"
expect 2 "^dcpiexport: -format json: unknown format; use gperftools, gmon, pprof, llvm or afdo$" \
    "$BIN/dcpiexport" -db "$T/db1" -format json -o "$T/x"
expect 2 "^dcpiexport: -format is required: gperftools, gmon, pprof, llvm or afdo$" "$BIN/dcpiexport" -o "$T/x"
expect 2 "^dcpiimport: -format pprof: cannot import this format; use gperftools or gmon" \
    "$BIN/dcpiimport" -format pprof "$T/plain"
expect 1 "^dcpid: $T/plain: not a directory; .*-db DIR" "$BIN/dcpid" -db "$T/plain" -- true
for tool in dcpiprof dcpitopcounts dcpireport; do
    expect 1 "^$tool: $T/plain: not a directory \(from -db\); a database is the directory dcpid writes" \
        "$BIN/$tool" -db "$T/plain"
done
expect 1 "^dcpiprof: $T/none: no such database directory \(from -db\); record one with 'dcpid -db $T/none'" \
    "$BIN/dcpiprof" -db "$T/none"
expect 1 "^dcpiprof: ./dcpidb: no such database directory \(the default: no -db, \\\$DCPIDB unset\)" \
    env -C "$T" DCPIDB= "$(realpath "$BIN")/dcpiprof"
expect 2 "^dcpid: unexpected argument './prog': to run a command, put '--' before it \(dcpid \[flags\] -- ./prog \.\.\.\)$" \
    "$BIN/dcpid" -db x ./prog
expect 2 "^dcpid: -- needs a command after it" "$BIN/dcpid" -db x --
expect 2 "^dcpid: -log -: the daemon has no standard error; add -nodaemon, or give -log FILE" \
    "$BIN/dcpid" -db x -log /dev/stderr
expect 2 "^dcpiprof: unknown flag '-wdie': did you mean -wide\? \(try -h\)$" "$BIN/dcpiprof" -wdie
expect 2 "^dcpictl: unknown command 'stop': give flush, epoch, quit, status" "$BIN/dcpictl" stop
# binary output is not written to a terminal (script(1) gives it one; its output is the terminal's)
out=$(script -qec "$BIN/dcpiexport -db $T/db1 -format pprof -o -" /dev/null </dev/null)
rc=$?
case $out in
"dcpiexport: -o -: standard output is a terminal, and -format pprof is binary; redirect it"*) [ $rc -eq 2 ] ;;
*) false ;;
esac || fail "dcpiexport -o - on a terminal: exit $rc: $(head -c 300 <<<"$out")"

# an epoch with a kernel profile and one of [vdso]: no file to list
DB=$T/kdb
E=202401020000
KDIR=$DB/$E/p1/_kernel.kallsyms__00112233445566778899aabbccddeeff00112233
e2e_mkprof "$KDIR/cpu-clock.prof" 00112233445566778899aabbccddeeff00112233 $E p1 cpu-clock \
    ffffffff81000000 '[kernel.kallsyms]' 0 $((0x150)):50
printf 'ffffffff81000000 T startup_64\nffffffff81000100 T vsnprintf\n' >"$KDIR/kallsyms"
e2e_mkprof "$DB/$E/p1/_vdso__77/cpu-clock.prof" 77 $E p1 cpu-clock 0 '[vdso]' 0 16:5
for tool in dcpilist dcpicalc; do
    expect 1 "^$tool: \[kernel.kallsyms\]: no instructions to list \(the kernel's code is in no file\); 'dcpiprof \[kernel.kallsyms\]' shows" \
        "$BIN/$tool" -db "$DB" vsnprintf '[kernel.kallsyms]'
    expect 1 "^$tool: \[vdso\]: no instructions to list \(a \[name\] mapping is in no file\)" \
        "$BIN/$tool" -db "$DB" x '[vdso]'
    expect 1 "^$tool: nosuchprog: no such file, and no image profiled in epoch $E has that name \('dcpiprof -i' lists them\)$" \
        "$BIN/$tool" -db "$DB" x nosuchprog
done
expect 1 "^dcpiprof: no samples of event 'cycles' in epoch $E \(events there: cpu-clock\)$" \
    "$BIN/dcpiprof" -db "$DB" -e cycles

[ "$fails" -eq 0 ] || exit 1
echo PASS
