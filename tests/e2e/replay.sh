#!/bin/bash
# replay.sh - dcpid -vrecord and dcpireplay end to end: record samples/work-values with both
# shipped plugins live (dcpid -vtrace vp-classic -vtrace vp-addr -vrecord), copy the database,
# remove the live vp-addr.vprof files from the copy, replay vp-addr into the copy with
# dcpireplay, and compare the hotlists dcpilist prints for both: the replay must equal the live
# run (the issue: "replay with a second plugin equals running that plugin live on the same
# traces"). A declarative plugin (-vtrace 'name=... select=...') replays the recording too.
# Broken plugins (tests/plugins/*_process.c: SIGSEGV, never returns, 5000 samples) replayed beside
# vp-addr are disabled in their workers with one line each and exit 1, while vp-addr's hotlists
# are still written and equal the live ones. Skips (77) when cpu-clock sampling with user
# registers is not available.
set -u
BIN=${DCPI_BIN:?DCPI_BIN not set}
W=$BIN/samples/work-values
T=$(mktemp -d /tmp/dcpi-e2e-replay.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }

for f in dcpid dcpireplay dcpilist samples/work-values plugins/vp-classic.so plugins/vp-addr.so; do
    [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
done
"$BIN/dcpid" -h 2>&1 | grep -q -- '-vrecord' || fail "dcpid -h does not list -vrecord"

probe=$(to 30 "$BIN/dcpid" -db "$T/probe" -event cpu-clock -vtrace vp-classic -vrecord -- true 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
    case "$probe" in
    *perf_event_open*|*not\ supported*|*Permission*)
        echo "SKIP: cpu-clock sampling with user registers is not possible here: $probe"; exit 77 ;;
    esac
    fail "probe run failed (rc $rc): $probe"
fi

# --- the live run, recording (2 s of CPU at -vbudget 8 give the value samples 4 s gave at the
# default budget: 300-400 on lea_loop's lea, a few on each of stride_loop's)
to 120 "$BIN/dcpid" -db "$T/db" -freq 2000 -vbudget 8 -vtrace vp-classic -vtrace vp-addr -vrecord \
    -- "$W" 2000 >"$T/out" 2>"$T/err" || fail "dcpid run failed: $(cat "$T/err")"
[ -n "$(find "$T/db" -path '*/values.trace/*.dtr')" ] || fail "no values.trace segment written"
find "$T/db" -name vp-addr.vprof | grep -q work-values || fail "no live vp-addr.vprof written"

# --- replay vp-addr into a copy without the live vp-addr profiles
cp -a "$T/db" "$T/copy"
find "$T/copy" -name vp-addr.vprof -delete
"$BIN/dcpireplay" -db "$T/copy" -vtrace vp-addr >"$T/rout" 2>&1 ||
    fail "dcpireplay failed: $(cat "$T/rout")"
grep -q 'files written' "$T/rout" || fail "no summary line: $(cat "$T/rout")"
find "$T/copy" -name vp-addr.vprof | grep -q work-values || fail "no replayed vp-addr.vprof"
grep -aq '^origin values.replay' $(find "$T/copy" -name vp-addr.vprof | grep work-values) ||
    fail "the replayed profile has no 'origin values.replay' line"

# --- a second replay would count twice: refused
"$BIN/dcpireplay" -db "$T/copy" -vtrace vp-addr >/dev/null 2>&1 && fail "second replay accepted"

# --- the hotlists are identical (instruction lines with their value lists)
for proc in stride_loop lea_loop; do
    for d in db copy; do
        "$BIN/dcpilist" -db "$T/$d" -asm -vtrace vp-addr -vshow 16 -vcutoff 0 "$proc" "$W" \
            >"$T/$d.$proc" 2>&1 || fail "dcpilist on $d failed: $(cat "$T/$d.$proc")"
    done
    # the footers name the backend: inproc (a command), bp (or regs where execute breakpoints are unavailable) live,
    # replay for the replayed copy; the rest is identical
    grep -Eq '^vp-addr: backend (inproc|bp|regs) \(' "$T/db.$proc" || fail "$proc live: no 'backend inproc/bp/regs' footer"
    grep -q '^vp-addr: backend replay (' "$T/copy.$proc" || fail "$proc replayed: no 'backend replay' footer"
    diff <(grep -v '^vp-addr: backend ' "$T/db.$proc") <(grep -v '^vp-addr: backend ' "$T/copy.$proc") >"$T/diff" ||
        fail "replayed vp-addr hotlists of $proc differ from the live ones: $(head -20 "$T/diff")"
    grep -q '%' "$T/db.$proc" || fail "no hotlist in the live listing of $proc"
done
# a declarative plugin (no .so: libffi closures) replays the same recording too
SPEC='name=vp-lea select=mnemonic:lea capture=rc format=dec'
"$BIN/dcpireplay" -db "$T/copy" -vtrace "$SPEC" >"$T/dout" 2>&1 || fail "dcpireplay of a declarative plugin failed: $(cat "$T/dout")"
"$BIN/dcpilist" -db "$T/copy" -asm -vtrace "$SPEC" -vcutoff 0 lea_loop "$W" >"$T/decl" 2>&1 ||
    fail "dcpilist with the declarative plugin failed: $(cat "$T/decl")"
grep -E 'lea +r[a-z0-9]+, \[r[a-z0-9]+\+r[a-z0-9]+\*1\]' "$T/decl" | grep -q 'vp-lea ([0-9.]*% 7)' ||
    fail "replayed declarative lea hotlist does not lead with 7 (the 60% result): $(grep 'vp-lea (' "$T/decl")"
# replay selects as dcpid does: symbol= holds (lea_loop's leas and movs only), and a misspelt one
# is a warning naming the key (leas and movs: the recording has stride_loop's load whatever the
# backend, while its leas, outside the loop, get value samples from bp's arms but not inproc's)
SYM='name=vp-leasym select=mnemonic:lea,mov capture=rc format=dec symbol=lea_loop'
ALL='name=vp-leamov select=mnemonic:lea,mov capture=rc format=dec'
"$BIN/dcpireplay" -db "$T/copy" -vtrace "$SYM" -vtrace "$ALL" >"$T/sout" 2>&1 || fail "dcpireplay with symbol= failed: $(cat "$T/sout")"
"$BIN/dcpilist" -db "$T/copy" -asm -vtrace "$SYM" -vcutoff 0 lea_loop "$W" 2>&1 | grep -q 'vp-leasym (' ||
    fail "symbol=lea_loop: no hotlist in lea_loop after replay"
"$BIN/dcpilist" -db "$T/copy" -asm -vtrace "$SYM" -vcutoff 0 stride_loop "$W" 2>&1 | grep -q 'vp-leasym (' &&
    fail "symbol=lea_loop: a hotlist in stride_loop after replay"
"$BIN/dcpilist" -db "$T/copy" -asm -vtrace "$ALL" -vcutoff 0 stride_loop "$W" 2>&1 | grep -q 'vp-leamov (' ||
    fail "without symbol=, no lea or mov hotlist in stride_loop (the check above proves nothing)"
"$BIN/dcpireplay" -db "$T/copy" -vtrace 'name=vp-typo select=mnemonic:lea symbol=lea_lop' >"$T/tout" 2>&1 ||
    fail "dcpireplay with a misspelt symbol failed: $(cat "$T/tout")"
grep -q '^dcpireplay: warning: vp-typo: symbol=lea_lop matched none of the sampled instructions its keys select' "$T/tout" ||
    fail "a misspelt symbol= under dcpireplay: no warning: $(cat "$T/tout")"

# --- broken plugins under dcpireplay: each in its worker with dcpid's watchdog, so one that
# crashes or hangs (from its first call: a short recording may hand it one trace only) is one
# line naming it and the reason, the exit status is 1, it writes no
# profile, and vp-addr's replayed hotlists are still written and equal the live ones
P=$BIN/tests/plugins
declare -A WHY=(
    [segv]="vp_prof_process crashed (SIGSEGV)"
    [hang]="vp_prof_process did not return within 1 s"
    [too_many]="vp_prof_process returned 5000 samples (buffer holds 4096)"
)
for x in segv hang too_many; do
    name=tp-${x//_/-}-process
    rm -rf "$T/broken" && cp -a "$T/db" "$T/broken"
    find "$T/broken" -name vp-addr.vprof -delete
    DCPI_TEST_FAULT_AFTER=0 to 120 "$BIN/dcpireplay" -db "$T/broken" -vtimeout 1 -vtrace vp-addr \
        -vtrace "$P/${x}_process.so" >"$T/bout" 2>"$T/berr"
    rc=$?
    [ $rc -eq 1 ] || fail "$x under dcpireplay: exit $rc, expected 1: $(cat "$T/berr")"
    [ "$(wc -l <"$T/berr")" = 1 ] || fail "$x under dcpireplay: not one line on stderr: $(cat "$T/berr")"
    grep -qx "dcpireplay: $name: disabled: ${WHY[$x]}; its value profiles are not written" "$T/berr" ||
        fail "$x under dcpireplay: the line does not name $name and '${WHY[$x]}': $(cat "$T/berr")"
    [ -z "$(find "$T/broken" -name "$name.vprof")" ] || fail "$x under dcpireplay: $name.vprof written"
    grep -q '1 value profiler disabled' "$T/bout" || fail "$x: the summary does not count it: $(cat "$T/bout")"
    "$BIN/dcpilist" -db "$T/broken" -asm -vtrace vp-addr -vshow 16 -vcutoff 0 stride_loop "$W" \
        >"$T/broken.list" 2>&1 || fail "$x: dcpilist on the replay failed: $(cat "$T/broken.list")"
    diff <(grep -v '^vp-addr: backend ' "$T/db.stride_loop") <(grep -v '^vp-addr: backend ' "$T/broken.list") >"$T/diff" ||
        fail "$x: vp-addr replayed beside it differs from live: $(head -20 "$T/diff")"
    echo "ok $x under dcpireplay: ${WHY[$x]}"
done
echo "PASS: replayed vp-addr equals live ($(cat "$T/rout")); a declarative plugin replays too; crashing, hanging and overflowing plugins are isolated under dcpireplay"
