#!/bin/bash
# e2e: the tools' -json output (issue 23 item 7), parsed with python3's json module and compared
# with the figures put into a synthetic database written by this script (no dcpid):
#   kernel image with kallsyms names that need escaping: we"ird\name (quote, backslash),
#   ctl<U+0001>x (a control character), and startup_64; an unknown@p1 image.
# Epoch 20240102000000: startup_64 7, we"ird\name 50, ctl.x 20 (cpu-clock, lost 5),
#                       task-clock: we"ird\name 3; unknown@p1 cpu-clock 10.
set -eu
export LC_ALL=C
B=${DCPI_BIN:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting json
e2e_require python3 python3

DB=$T/db
KID=00112233445566778899aabbccddeeff00112233
E=20240102000000
KDIR=$DB/$E/p1/_kernel.kallsyms__$KID
e2e_mkprof "$KDIR/cpu-clock.prof" $KID $E p1 cpu-clock ffffffff81000000 '[kernel.kallsyms]' 5 \
    $((0x10)):7 $((0x150)):50 $((0x250)):20
e2e_mkprof "$KDIR/task-clock.prof" $KID $E p1 task-clock ffffffff81000000 '[kernel.kallsyms]' 0 \
    $((0x150)):3
printf 'ffffffff81000000 T startup_64\nffffffff81000100 T we"ird\\name\nffffffff81000200 t ctl\001x\n' \
    >"$KDIR/kallsyms"
e2e_mkprof "$DB/$E/p1/unknown@p1/cpu-clock.prof" 0 $E p1 cpu-clock 0 unknown 0 4096:10

# check NAME PYTHON-EXPR...: $T/NAME.json parses, and each expression (on j, the object) holds
check() {
    local name=$1
    shift
    python3 -m json.tool "$T/$name.json" >/dev/null 2>"$T/$name.pyerr" ||
        { fail "$name: not JSON: $(head -1 "$T/$name.pyerr")"; return; }
    python3 - "$T/$name.json" "$@" <<'PY' || fail "$name: $(cat "$T/$name.check")"
import json, sys
j = json.load(open(sys.argv[1]))
bad = [e for e in sys.argv[2:] if not eval(e, {"j": j})]
open(sys.argv[1][:-5] + ".check", "w").write("; ".join(bad) + " do not hold in " + json.dumps(j))
sys.exit(1 if bad else 0)
PY
}
# tool NAME TOOL ARGS...: TOOL's stdout to $T/NAME.json; it must exit 0 with nothing on stderr
tool() {
    local name=$1 t=$2
    shift 2
    local rc=0
    "$B/$t" "$@" >"$T/$name.json" 2>"$T/$name.err" || rc=$?
    [ $rc -eq 0 ] || fail "$name: $t $* exited $rc: $(head -2 "$T/$name.err")"
    [ ! -s "$T/$name.err" ] || fail "$name: stderr: $(head -2 "$T/$name.err")"
}

# ---- dcpiprof ----
tool prof dcpiprof -db "$DB" -json
check prof 'j["schema"] == "dcpiprof/1"' 'j["epochs"] == ["'$E'"]' 'j["view"] == "procedure"' \
    'j["sort_event"] == "cpu-clock"' 'j["children"] is False' \
    '[(e["name"], e["total"], e["lost"], e["period"]) for e in j["events"]] == [("cpu-clock", 87, 5, 1000000), ("task-clock", 3, 0, 1000000)]' \
    '[(r["procedure"], r["counts"]["cpu-clock"], r["counts"]["task-clock"]) for r in j["rows"]] == [("we\"ird\\name", 50, 3), ("ctl\x01x", 20, 0), ("unknown_rou", 10, 0), ("startup_64", 7, 0)]' \
    '[r["image"] for r in j["rows"]] == ["[kernel.kallsyms]"] * 2 + ["unknown@p1", "[kernel.kallsyms]"]' \
    'j["rows"][0]["addr"] == "0xffffffff81000100" and j["rows"][2]["addr"] is None'
grep -q 'ctl\\u0001x' "$T/prof.json" || fail "prof: the control character is not escaped as \\u0001"
tool prof_i dcpiprof -db "$DB" -json -i -e task-clock
check prof_i 'j["view"] == "image"' 'j["sort_event"] == "task-clock"' \
    '[(r["image"], r["counts"]) for r in j["rows"]] == [("[kernel.kallsyms]", {"cpu-clock": 77, "task-clock": 3}), ("unknown@p1", {"cpu-clock": 10, "task-clock": 0})]' \
    'all("procedure" not in r for r in j["rows"])'
tool prof_keep dcpiprof -db "$DB" -json -keep 60
check prof_keep 'len(j["rows"]) == 2'
tool prof_sel dcpiprof -db "$DB" -json unknown@p1
check prof_sel 'j["events"][0]["total"] == 10' 'len(j["rows"]) == 1'
# an empty epoch: empty rows, still JSON, no "no samples" line
mkdir -p "$DB/20240103000000/p1"
e2e_mkprof "$DB/20240103000000/p1/unknown@p1/cpu-clock.prof" 0 20240103000000 p1 cpu-clock 0 unknown 0
tool prof_empty dcpiprof -db "$DB" -json
check prof_empty 'j["rows"] == [] and j["sort_event"] is None' 'j["epochs"] == ["20240103000000"]'
rm -rf "${DB:?}/20240103000000"

[ "$fails" -eq 0 ] || exit 1
echo "ok: -json output parsed and checked"
