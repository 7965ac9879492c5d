#!/bin/bash
# e2e: the tools' -json output (issue 23 item 7), parsed with python3's json module and compared
# with the figures put into a synthetic database written by this script (no dcpid):
#   kernel image with kallsyms names that need escaping: we"ird\name (quote, backslash),
#   ctl~x, and startup_64; an unknown@p1 image.
# Epoch 20240102000000: startup_64 7, we"ird\name 50, ctl.x 20 (cpu-clock, lost 5),
#                       task-clock: we"ird\name 3; unknown@p1 cpu-clock 10.
# dcpilist -json on a gcc -O0 program with value profiles in two epochs: its figures are the
# text view's (shares, bounds, vtot, thld, nv, the shown text), with and without vp-classic.
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
printf 'ffffffff81000000 T startup_64\nffffffff81000100 T we"ird\\name\nffffffff81000200 t ctl~x\n' \
    >"$KDIR/kallsyms"
e2e_mkprof "$DB/$E/p1/unknown@p1/cpu-clock.prof" 0 $E p1 cpu-clock 0 unknown 0 4096:10

# check NAME PYTHON-EXPR...: $T/NAME.json parses, and each expression (on j, the object) holds.
# Queued (each file is written once), and evaluated by check_all at the end in one python3: a
# python3 start per check was nearly all of this script's CPU time.
nchecks=0
check() {
    nchecks=$((nchecks + 1))
    printf '%s\0' "$@" >"$T/check.$(printf %04d $nchecks)"
}
# check_all: the queued checks, in order; each one that fails is one fail line
check_all() {
    local line
    python3 - "$T" >"$T/checks.out" 2>&1 <<'PY' || fail "the checks did not run: $(tail -3 "$T/checks.out")"
import glob, json, sys
t = sys.argv[1]
for f in sorted(glob.glob(t + "/check.[0-9]*")):
    name, *exprs = open(f).read().split("\0")[:-1]
    try:
        j = json.load(open(f"{t}/{name}.json"))
    except ValueError as e:
        print(f"{name}: not JSON: {e}")
        continue
    bad = []
    for e in exprs:
        try:
            if not eval(e, {"j": j}):
                bad.append(e)
        except Exception as x:
            bad.append(f"{e} (raised {x!r})")
    if bad:
        print(f"{name}: " + "; ".join(bad).replace("\n", " ") + " do not hold in " + json.dumps(j))
PY
    [ "$(ls "$T"/check.[0-9]* | wc -l)" = "$nchecks" ] || fail "$nchecks checks queued, $(ls "$T"/check.[0-9]* | wc -l) files"
    while IFS= read -r line; do fail "$line"; done <"$T/checks.out"
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
    '[(r["procedure"], r["counts"]["cpu-clock"], r["counts"]["task-clock"]) for r in j["rows"]] == [("we\"ird\\name", 50, 3), ("ctl~x", 20, 0), ("unknown_rou", 10, 0), ("startup_64", 7, 0)]' \
    '[r["image"] for r in j["rows"]] == ["[kernel.kallsyms]"] * 2 + ["unknown@p1", "[kernel.kallsyms]"]' \
    'j["rows"][0]["addr"] == "0xffffffff81000100" and j["rows"][2]["addr"] is None'
# (a control byte in a kernel symbol snapshot marks it damaged (DAMAGED FILES in dcpiprof(1)),
# so control characters are escaped in a command name below: be"<U+0001>ta)
tool prof_i dcpiprof -db "$DB" -json -i -e task-clock
check prof_i 'j["view"] == "image"' 'j["sort_event"] == "task-clock"' \
    '[(r["image"], r["counts"]) for r in j["rows"]] == [("[kernel.kallsyms]", {"cpu-clock": 77, "task-clock": 3}), ("unknown@p1", {"cpu-clock": 10, "task-clock": 0})]' \
    'all("procedure" not in r for r in j["rows"])'
tool prof_keep dcpiprof -db "$DB" -json -keep 60
check prof_keep 'len(j["rows"]) == 2'
tool prof_sel dcpiprof -db "$DB" -json unknown@p1
check prof_sel 'j["events"][0]["total"] == 10' 'len(j["rows"]) == 1'
# ---- dcpitopcounts ----
tool top dcpitopcounts -db "$DB" -json
check top 'j["schema"] == "dcpitopcounts/1"' 'j["epochs"] == ["'$E'"]' 'j["unit"] == "samples"' \
    '[(r["procedure"], r["pc"], r["image"], r["counts"]) for r in j["rows"]] == [("we\"ird\\name", "0xffffffff81000150", "[kernel.kallsyms]", {"cpu-clock": 50, "task-clock": 3}), ("ctl~x", "0xffffffff81000250", "[kernel.kallsyms]", {"cpu-clock": 20, "task-clock": 0}), ("unknown_rou", "0x1000", "unknown@p1", {"cpu-clock": 10, "task-clock": 0}), ("startup_64", "0xffffffff81000010", "[kernel.kallsyms]", {"cpu-clock": 7, "task-clock": 0})]' \
    'all(r["instruction"] is None and r["source"] is None for r in j["rows"])' \
    '[(e["name"], e["total"]) for e in j["events"]] == [("cpu-clock", 87), ("task-clock", 3)]'
tool top_p dcpitopcounts -db "$DB" -json -period -n 1 -e task-clock
check top_p 'j["unit"] == "samples x period" and j["sort_event"] == "task-clock"' \
    'j["rows"][0]["counts"] == {"cpu-clock": 50000000, "task-clock": 3000000} and len(j["rows"]) == 1'
# an empty epoch: empty rows, still JSON, no "no samples" line
mkdir -p "$DB/20240103000000/p1"
e2e_mkprof "$DB/20240103000000/p1/unknown@p1/cpu-clock.prof" 0 20240103000000 p1 cpu-clock 0 unknown 0
tool prof_empty dcpiprof -db "$DB" -json
check prof_empty 'j["rows"] == [] and j["sort_event"] is None' 'j["epochs"] == ["20240103000000"]'
tool top_empty dcpitopcounts -db "$DB" -json
check top_empty 'j["rows"] == [] and j["epochs"] == ["20240103000000"]'
rm -rf "${DB:?}/20240103000000"

# ---- epoch selections merged (issue 23 item 2): a second database of three epochs ----
# E1: kernel 0x10:5 0x150:9, unknown@p1 4096:2, lost 1; task-clock 0x150:4
# E2: kernel 0x150:20 0x250:7, lost 2
# E3: kernel 0x10:1 0x250:30, an image only here (unknown@p2 4096:6)
# Each kernel cpu-clock profile has its split by process (.procs: pid 100 "alpha" gets
# count - count/3 at each offset, pid 200 "be\"ta" the rest); epoch.info gives each epoch one
# hour from midnight of its day.
M=$T/mdb
mkprocs() { # FILE PID:COMM:OFFSET:COUNT... (sorted by pid, comm, offset)
    python3 - "$@" <<'PY'
import sys
def v(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
groups = {}
for a in sys.argv[2:]:
    pid, comm, off, cnt = a.split(":")
    groups.setdefault((int(pid), comm), []).append((int(off), int(cnt)))
data = b"dcpiprocs 1\n"
for (pid, comm), ents in sorted(groups.items()):
    data += v(pid) + bytes([len(comm)]) + comm.encode() + v(len(ents))
    prev = 0
    for off, cnt in ents:
        data += v(off - prev) + v(cnt)
        prev = off
open(sys.argv[1], "wb").write(data)
PY
}
kprof() { # EPOCH LOST OFFSET:COUNT...
    local e=$1 lost=$2
    shift 2
    local d=$M/$e/p1/_kernel.kallsyms__$KID a=() b=() p
    e2e_mkprof "$d/cpu-clock.prof" $KID "$e" p1 cpu-clock ffffffff81000000 '[kernel.kallsyms]' \
        "$lost" "$@"
    cp "$KDIR/kallsyms" "$d/kallsyms"
    for p in "$@"; do
        local off=${p%%:*} cnt=${p##*:}
        a+=("100:alpha:$off:$((cnt - cnt / 3))")
        [ $((cnt / 3)) -eq 0 ] || b+=("200:be\""$'\001'"ta:$off:$((cnt / 3))")
    done
    mkprocs "$d/cpu-clock.procs" "${a[@]}" "${b[@]}"
    local day=${e:0:4}-${e:4:2}-${e:6:2} s
    s=$(date -u -d "$day" +%s)
    printf 'dcpi-epoch 1\nstart %s\nend %s\nsamples 0\nlost %s\nopen 0\n' "$s" $((s + 3600)) \
        "$lost" >"$M/$e/p1/epoch.info"
}
E1=20240101000000 E2=20240102000000 E3=20240103000000
kprof $E1 1 $((0x10)):5 $((0x150)):9
e2e_mkprof "$M/$E1/p1/unknown@p1/cpu-clock.prof" 0 $E1 p1 cpu-clock 0 unknown 0 4096:2
e2e_mkprof "$M/$E1/p1/_kernel.kallsyms__$KID/task-clock.prof" $KID $E1 p1 task-clock \
    ffffffff81000000 '[kernel.kallsyms]' 0 $((0x150)):4
kprof $E2 2 $((0x150)):20 $((0x250)):7
kprof $E3 0 $((0x10)):1 $((0x250)):30
# call chains (stacks/cpu-clock.stk, docs/stackformat.md) in E1 and E3, none in E2: E1 we"ird\name
# called from startup_64 (its return address 0x15) 9 times, startup_64 alone 5; E3 ctl~x from
# startup_64 30, startup_64 alone 1. Children: E1 startup_64 14, we"ird 9; E3 startup_64 31, ctl~x 30.
mkstk() { # EPOCH CHAIN... where CHAIN is COUNT:OFFSET[,OFFSET...] (kernel frames, sorted)
    python3 - "$M" "$KID" "$@" <<'PY'
import os, struct, sys
m, kid, epoch = sys.argv[1:4]
hdr = f"version stk-0.01\nepoch {epoch}\nplatform p1\nevent cpu-clock\nperiod 1000000\n"
hdr += "samples" + " " * ((4 - (len(hdr) + 8) % 4) % 4) + "\n"
d, path = f"_kernel.kallsyms__{kid}", "[kernel.kallsyms]"
img = struct.pack("<QQIIII", 0xffffffff81000000, 4096, len(kid), len(d), len(path), 0)
img += (kid + d + path).encode()
img += b"\0" * ((4 - len(img) % 4) % 4)
chains, total, nf = b"", 0, 0
for c in sys.argv[4:]:
    n, offs = c.split(":")
    offs = [int(o, 0) for o in offs.split(",")]
    chains += struct.pack("<QI", int(n), len(offs)) + b"".join(struct.pack("<II", 0, o) for o in offs)
    total, nf = total + int(n), nf + len(offs)
body = struct.pack("<II", 1, len(sys.argv) - 4) + img + chains + struct.pack("<QII", total, len(sys.argv) - 4, nf)
os.makedirs(f"{m}/{epoch}/p1/stacks", exist_ok=True)
open(f"{m}/{epoch}/p1/stacks/cpu-clock.stk", "wb").write(hdr.encode() + body)
PY
}
mkstk $E1 5:0x10 9:0x150,0x15
mkstk $E3 1:0x10 30:0x250,0x15
e2e_mkprof "$M/$E3/p1/unknown@p2/cpu-clock.prof" 0 $E3 p1 cpu-clock 0 unknown 0 4096:6
for e in $E1 $E2 $E3; do
    tool "m$e" dcpiprof -db "$M" -epoch $e -json
    tool "mp$e" dcpiprof -db "$M" -epoch $e -json -procs
done
# sum NAME EPOCH...: the expression "the rows and events of NAME equal those epochs' added up"
summed() {
    local name=$1 view=${2:-m} es
    shift 2
    es=$(printf '"%s",' "$@")
    echo "__import__('sumcheck').same(j, [$es], '$T', '$view')"
}
cat >"$T/sumcheck.py" <<'PY'
import json
def key(r):
    return tuple(r.get(k) for k in ("image", "procedure", "pid", "comm"))
def same(j, epochs, t, view):
    rows, events = {}, {}
    for e in epochs:
        x = json.load(open(f"{t}/{view}{e}.json"))
        for r in x["rows"]:
            c = rows.setdefault(key(r), {})
            for ev, n in r["counts"].items():
                c[ev] = c.get(ev, 0) + n
        for ev in x["events"]:
            a = events.setdefault(ev["name"], [0, 0])
            a[0] += ev["total"]
            a[1] += ev["lost"]
    got = {key(r): {k: n for k, n in r["counts"].items() if n} for r in j["rows"]}
    want = {k: {e: n for e, n in c.items() if n} for k, c in rows.items()}
    gotev = {ev["name"]: [ev["total"], ev["lost"]] for ev in j["events"]}
    return got == want and gotev == events and j["epochs"] == epochs
def same_top(j, epochs, t):
    rows = {}
    for e in epochs:
        for r in json.load(open(f"{t}/t{e}.json"))["rows"]:
            c = rows.setdefault((r["image"], r["pc"]), {})
            for ev, n in r["counts"].items():
                c[ev] = c.get(ev, 0) + n
    got = {(r["image"], r["pc"]): {k: n for k, n in r["counts"].items() if n} for r in j["rows"]}
    want = {k: {e: n for e, n in c.items() if n} for k, c in rows.items()}
    return got == want and j["epochs"] == epochs
PY
export PYTHONPATH=$T
tool mall dcpiprof -db "$M" -epoch all -json
check mall "$(summed mall m $E1 $E2 $E3)" 'j["events"][0]["total"] == 5 + 9 + 2 + 20 + 7 + 1 + 30 + 6'
# the children column of several epochs: their stacks merged (E2 has none, and adds nothing)
check "m$E1" 'j["children"] is True' '{r["procedure"]: r["children"] for r in j["rows"]}["startup_64"] == 14'
check "m$E2" 'j["children"] is False'
check mall 'j["children"] is True' \
    '{r["procedure"]: r.get("children") for r in j["rows"] if r["image"] == "[kernel.kallsyms]"} == {"startup_64": 14 + 31, "we\"ird\\name": 9, "ctl~x": 30}' \
    "{r['procedure']: r['children'] for r in j['rows']} == {k: sum({r['procedure']: r.get('children', 0) for r in __import__('json').load(open('$T/m' + e + '.json'))['rows']}.get(k, 0) for e in ['$E1', '$E2', '$E3']) for k in {r['procedure'] for r in j['rows']}}"
tool mpall dcpiprof -db "$M" -epoch all -json -procs
check mpall "$(summed mpall mp $E1 $E2 $E3)" \
    '{(r["pid"], r["comm"]): r["counts"]["cpu-clock"] for r in j["rows"]} == {(100, "alpha"): 4 + 6 + 14 + 5 + 1 + 20, (200, "be\"\x01ta"): 1 + 3 + 6 + 2 + 0 + 10, (None, None): 8}'
grep -q 'be\\"\\u0001ta' "$T/mpall.json" || fail "mpall: the control character is not escaped as \\u0001"
tool mlast dcpiprof -db "$M" -epoch latest-1..latest -json
check mlast "$(summed mlast m $E2 $E3)"
tool mrange dcpiprof -db "$M" -epoch $E1..latest-1 -json
check mrange "$(summed mrange m $E1 $E2)"
tool msince dcpiprof -db "$M" -since 2024-01-02 -until 2024-01-03 -json
check msince "$(summed msince m $E2)"
tool muntil dcpiprof -db "$M" -until 2024-01-02T00:30 -json
check muntil "$(summed muntil m $E1 $E2)"
tool mwin dcpiprof -db "$M" -epoch latest-1..latest -since 2024-01-01T00:30 -json
check mwin "$(summed mwin m $E2 $E3)"
for e in $E1 $E2 $E3 all; do
    tool "t$e" dcpitopcounts -db "$M" -epoch $e -json -n 0
done
check tall "__import__('sumcheck').same_top(j, ['$E1', '$E2', '$E3'], '$T')"
tool mtop dcpitopcounts -db "$M" -since 2024-01-02T00:30 -n 1
[ "$(awk 'NR == 2 {print $1}' "$T/mtop.json")" = 37 ] || fail "dcpitopcounts -since: $(cat "$T/mtop.json")"
# the table adds up the same way: dcpitopcounts over all = the sum of its epochs' counts
"$B/dcpitopcounts" -db "$M" -epoch all -n 3 >"$T/top.out" 2>&1 || fail "dcpitopcounts -epoch all: $(head -2 "$T/top.out")"
[ "$(awk 'NR > 1 {printf "%s:%s ", $1, $5}' "$T/top.out")" = "37:0xffffffff81000250 29:0xffffffff81000150 6:0xffffffff81000010 " ] ||
    fail "dcpitopcounts -epoch all: want 7+30, 9+20, 5+1 samples: $(head -5 "$T/top.out")"
# ---- dcpidiff -json: E1 against E3 ----
tool diff dcpidiff -db "$M" -json -all @$E1 @$E3
check diff 'j["schema"] == "dcpidiff/1" and j["event"] == "cpu-clock" and j["what"] == "procedure"' \
    '[(s["label"], s["epoch"], s["samples"]) for s in j["sets"]] == [("A", "'$E1'", 16), ("B", "'$E3'", 37)]' \
    '{(r["name"], r["group"]): (r["a"], r["b"]) for r in j["rows"]} == {("startup_64", "[kernel.kallsyms]"): (5, 1), ("we\"ird\\name", "[kernel.kallsyms]"): (9, 0), ("ctl~x", "[kernel.kallsyms]"): (0, 30), ("unknown_rou", "unknown@p1"): (2, 0), ("unknown_rou", "unknown@p2"): (0, 6)}' \
    'all(abs(r["share_a"] - 100 * r["a"] / 16) < 1e-3 and abs(r["share_b"] - 100 * r["b"] / 37) < 1e-3 and r["significant"] == (r["p_adj"] < j["alpha"]) for r in j["rows"])' \
    'j["hidden"] == 0'
tool diffsig dcpidiff -db "$M" -json @$E1 @$E3
check diffsig 'all(r["significant"] for r in j["rows"]) and len(j["rows"]) + j["hidden"] == 5'

# ---- dcpictl epochs -json (from the database: no daemon needed) ----
tool ctl dcpictl -db "$M" -platform p1 epochs -json
s1=$(date -u -d 2024-01-01 +%s)
check ctl 'j["schema"] == "dcpictl-epochs/1" and j["platform"] == "p1"' \
    '[e["epoch"] for e in j["epochs"]] == ["'$E1'", "'$E2'", "'$E3'"]' \
    '[(e["start_unix"] - '$s1', e["end_unix"] - e["start_unix"], e["lost"], e["state"]) for e in j["epochs"]] == [(0, 3600, 1, "ended"), (86400, 3600, 2, "ended"), (172800, 3600, 0, "ended")]' \
    'j["epochs"][0]["start"] == "2024-01-01T00:00:00Z" and all(e["bytes"] > 0 for e in j["epochs"])'
rc=0
"$B/dcpictl" -db "$M" -platform p1 flush -json >/dev/null 2>"$T/ctl.err" || rc=$?
[ $rc -eq 2 ] && grep -q "json is for status and epochs" "$T/ctl.err" || fail "dcpictl flush -json: exit $rc, $(cat "$T/ctl.err")"

# ---- dcpilist -json (issue 23 item 7): a gcc -O0 program's hot(), two epochs with values ----
e2e_require gcc build-essential
e2e_require objdump binutils
printf '%s\n' '__attribute__((noinline)) long hot(long n) { long s = 0;' \
    '    for (long i = 0; i < n; i++) s += i * 7; return s; }' \
    'int main(int argc, char **argv) { (void)argv; return (int)hot(argc); }' >"$T/lprog.c"
gcc -O0 -g -Wl,--build-id -o "$T/lprog" "$T/lprog.c"
LP=$T/lprog L=$T/ldb
LID=$(readelf -n "$LP" | awk '/Build ID:/ {print $3}')
LTS=$(readelf -lW "$LP" | awk '$1 == "LOAD" && $0 ~ / R?W?E / {print $3}' | sort | head -1)
mapfile -t LA < <(objdump -d --no-show-raw-insn "$LP" | awk '/<hot>:$/ {on = 1; next} on && /^$/ {exit} on {sub(":", "", $1); print "0x" $1}')
[ -n "$LID" ] && [ -n "$LTS" ] && [ "${#LA[@]}" -gt 8 ] || fail "cannot read $LP ($LID $LTS ${#LA[@]})"
o() { echo $((LA[$1] - LTS)); }
# mkvprof FILE EPOCH BACKEND "OFFSET VTOT SEEN ERR VALUE:C0:C1:COUNT ..."...: a .vprof (the layout of
# core/store/vprof.h), entries given count descending
mkvprof() {
    python3 - "$LID" "$LTS" "$LP" "$@" <<'PY'
import struct, sys, os
lid, ts, path, f, epoch, backend = sys.argv[1:7]
hdr = (f"version vpdb-0.01\nimage {lid}\nepoch {epoch}\nplatform p1\nevent cpu-clock\nperiod 1000000\n"
       f"tstart {ts}\ntsize 4096\ncpuspeed 2000\nvprof vp-classic\nhotsize 16\ncontexts 1\n"
       f"backend {backend}\npath {path}\n")
hdr += "samples" + " " * ((4 - (len(hdr) + 8) % 4) % 4) + "\n"
body, tv, tsn = b"", 0, 0
for rec in sys.argv[7:]:
    w = rec.split()
    off, vtot, seen, err = (int(x) for x in w[:4])
    ents = [[int(x, 0) for x in e.split(":")] for e in w[4:]]
    body += struct.pack("<IIQQQ", off, len(ents), vtot, seen, err)
    for v, c0, c1, n in ents:
        body += struct.pack("<QQQQ", v, c0, c1, n)
    tv, tsn = tv + vtot, tsn + seen
body += struct.pack("<IIQQ", len(sys.argv) - 7, 0, tv, tsn)
os.makedirs(os.path.dirname(f), exist_ok=True)
open(f, "wb").write(hdr.encode() + body)
PY
}
LE1=20240101000000 LE2=20240102000000
for e in $LE1 $LE2; do
    d=$L/$e/p1/lprog_$LID
    e2e_mkprof "$d/cpu-clock.prof" "$LID" $e p1 cpu-clock "$LTS" "$LP" 0 "$(o 1):3" "$(o 4):${e:7:1}0" "$(o 5):2"
done
# E1: insn 4 two values exactly (60/40); insn 5 a full hotlist's err (2); E2: insn 4 a third
# value and 7 again, insn 6 only here (a "missing" value: context0 VP_CONTEXT_MISSING, 1)
mkvprof "$L/$LE1/p1/lprog_$LID/vp-classic.vprof" $LE1 bp "$(o 4) 100 200 0 7:0:0:60 3:0:0:40" \
    "$(o 5) 10 10 2 5:0xa:0xb:10"
mkvprof "$L/$LE2/p1/lprog_$LID/vp-classic.vprof" $LE2 bp "$(o 4) 50 50 0 9:0:0:30 7:0:0:20" \
    "$(o 6) 8 8 0 0:1:0:8"
for e in $LE1 $LE2; do
    tool "l$e" dcpilist -db "$L" -epoch $e -asm -vprof -json hot "$LP"
    "$B/dcpilist" -db "$L" -epoch $e -asm -vprof hot "$LP" >"$T/l$e.txt" 2>&1 || fail "dcpilist -epoch $e: $(head -2 "$T/l$e.txt")"
done
a4=$(printf '0x%x' $((LA[4])))
check "l$LE1" 'j["schema"] == "dcpilist/1" and j["procedure"] == "hot" and j["epochs"] == ["'$LE1'"]' \
    'j["image"] == "'"$LP"'" and j["build_id"] == "'"$LID"'" and j["lo"] == "'"${LA[0]}"'"' \
    'j["events"] == [{"name": "cpu-clock", "samples": 3 + 10 + 2, "image_samples": 15}]' \
    'len(j["instructions"]) == '${#LA[@]}' and [i["counts"]["cpu-clock"] for i in j["instructions"]][:6] == [0, 3, 0, 0, 10, 2]' \
    'j["instructions"][1]["line"] == 1 and j["instructions"][1]["file"].endswith("lprog.c")' \
    'j["value_profiles"][0]["name"] == "vp-classic" and j["value_profiles"][0]["backend"] == "bp" and j["value_profiles"][0]["max_err"] == 2' \
    '[(h["value"], h["count"], h["share"]) for h in j["instructions"][4]["values"]["vp-classic"]["hotlist"]] == [("0x7", 60, 60.0), ("0x3", 40, 40.0)]' \
    'j["instructions"][4]["values"]["vp-classic"]["thld"] == 2.0 and j["instructions"][5]["values"]["vp-classic"]["err"] == 2' \
    'j["instructions"][5]["values"]["vp-classic"]["few"] and not j["instructions"][4]["values"]["vp-classic"]["few"]' \
    'j["instructions"][4]["values"]["vp-classic"]["clusters"] == 0 and j["instructions"][4]["values"]["vp-classic"]["neff"] == 100.0' \
    'j["instructions"][5]["values"]["vp-classic"]["hotlist"][0]["context0"] == "0xa" and j["instructions"][3]["values"] == {}'
check "l$LE2" 'j["instructions"][6]["values"]["vp-classic"]["hotlist"][0]["missing"] is True' \
    'j["instructions"][6]["values"]["vp-classic"]["hotlist"][0]["text"] == "missing"'
# the JSON says what the text says: per hotlist vtot, thld, nv, the shown pairs and +-B (the
# text's one decimal of the JSON's shares and bound)
cat >"$T/listcheck.py" <<'PY'
import json, re
def same_as_text(j, txt):
    rows = {}
    for line in open(txt):
        w = line.split()
        if len(w) > 2 and w[1].startswith("0x") and re.search(r"\+-[0-9.]+", line):
            rows[w[1]] = line
    n = 0
    for i in j["instructions"]:
        for name, h in i["values"].items():
            line = rows.pop(i["addr"])
            m = re.search(r"(\d+) +([0-9.]+) +(\d+)  (.*)  \+-([0-9.]+)( few)?$", line.rstrip("\n"))
            vtot, thld, nv, shown, bound, few = m.groups()
            pairs = re.findall(r"\(([0-9.]+)% ([^ )]+)", shown)
            want = [("%.1f" % e["share"], e["text"]) for e in h["hotlist"]][:3]
            if (int(vtot), "%.1f" % h["thld"], int(nv), "%.1f" % h["bound"], bool(few), h["shown"]) != \
               (h["vtot"], thld, h["nv"], bound, h["few"], shown) or pairs != want:
                return False
            n += 1
    return n > 0 and not rows
PY
for e in $LE1 $LE2; do
    check "l$e" "__import__('listcheck').same_as_text(j, '$T/l$e.txt')"
done
# a plugin's texts: vp-classic's preface (the register) and the shown text of the asm view
tool lvt dcpilist -db "$L" -epoch $LE1 -asm -vtrace "$B/plugins/vp-classic.so" -json hot "$LP"
"$B/dcpilist" -db "$L" -epoch $LE1 -asm -vtrace "$B/plugins/vp-classic.so" hot "$LP" >"$T/lvt.txt" 2>&1
check lvt "__import__('listcheck').same_as_text(j, '$T/lvt.txt')" \
    'j["instructions"][4]["values"]["vp-classic"]["preface"] not in (None, "")' \
    'j["value_profiles"][0]["plugin"].endswith("vp-classic.so")'
tool lplain dcpilist -db "$L" -epoch $LE1 -json hot "$LP"
check lplain '"values" not in j["instructions"][4] and "value_profiles" not in j'

# dcpilist -epoch all (issue 23 item 2): counts and hotlists of the two epochs added up: per
# value its counts (a value missing from an epoch's hotlist counts that hotlist's err, its
# bound for values it does not list), vtot, seen and err
cat >>"$T/listcheck.py" <<'PY'
def summed(j, files):
    parts = [json.load(open(f)) for f in files]
    if j["epochs"] != [e for p in parts for e in p["epochs"]]:
        return False
    for k, i in enumerate(j["instructions"]):
        ins = [p["instructions"][k] for p in parts]
        if any(x["addr"] != i["addr"] for x in ins):
            return False
        if i["counts"] != {e: sum(x["counts"].get(e, 0) for x in ins) for e in i["counts"]}:
            return False
        if set(i["values"]) != {n for x in ins for n in x["values"]}:
            return False
        for name, h in i["values"].items():
            hs = [x["values"][name] for x in ins if name in x["values"]]
            if [h[f] for f in ("vtot", "seen", "err")] != [sum(x[f] for x in hs) for f in ("vtot", "seen", "err")]:
                return False
            keys = {(e["value"], e["context0"], e["context1"]) for x in hs for e in x["hotlist"]}
            def cnt(x, key):
                m = [e["count"] for e in x["hotlist"] if (e["value"], e["context0"], e["context1"]) == key]
                return m[0] if m else x["err"]
            want = {key: sum(cnt(x, key) for x in hs) for key in keys}
            got = {(e["value"], e["context0"], e["context1"]): e["count"] for e in h["hotlist"]}
            if got != want or any(abs(e["share"] - 100.0 * e["count"] / h["vtot"]) > 1e-3 for e in h["hotlist"]):
                return False
    return True
PY
tool lall dcpilist -db "$L" -epoch all -asm -vprof -json hot "$LP"
"$B/dcpilist" -db "$L" -epoch all -asm -vprof hot "$LP" >"$T/lall.txt" 2>&1 || fail "dcpilist -epoch all: $(head -2 "$T/lall.txt")"
check lall "__import__('listcheck').summed(j, ['$T/l$LE1.json', '$T/l$LE2.json'])" \
    "__import__('listcheck').same_as_text(j, '$T/lall.txt')" \
    '[(h["value"], h["count"]) for h in j["instructions"][4]["values"]["vp-classic"]["hotlist"]] == [("0x7", 80), ("0x3", 40), ("0x9", 30)]' \
    'j["instructions"][4]["counts"]["cpu-clock"] == 30 and j["value_profiles"][0]["backend"] == "bp"'
grep -q "^hot  $LP  (.*)  epoch $LE1..$LE2\$" "$T/lall.txt" || fail "dcpilist -epoch all: header $(head -1 "$T/lall.txt")"
"$B/dcpicalc" -db "$L" -epoch all hot "$LP" >"$T/calc.out" 2>&1 || fail "dcpicalc -epoch all: $(head -2 "$T/calc.out")"
grep -q '^event cpu-clock: 40 samples in the procedure' "$T/calc.out" || fail "dcpicalc -epoch all: not 15 + 25 samples: $(head -3 "$T/calc.out")"
tool llast dcpilist -db "$L" -epoch latest-1..latest -asm -vprof -json hot "$LP"
check llast "__import__('listcheck').summed(j, ['$T/l$LE1.json', '$T/l$LE2.json'])"

# bad selections: one line naming the reason, non-zero exit
for bad in "-epoch $E3..$E1" "-epoch nosuch..latest" "-since yesterday-ish" "-since 2030-01-01"; do
    rc=0
    # shellcheck disable=SC2086
    "$B/dcpiprof" -db "$M" $bad >"$T/bad.out" 2>"$T/bad.err" || rc=$?
    [ $rc -ne 0 ] && [ "$(wc -l <"$T/bad.err")" -eq 1 ] && [ ! -s "$T/bad.out" ] &&
        ! grep -q '^dcpiprof: dcpiprof:' "$T/bad.err" ||
        fail "dcpiprof $bad: exit $rc, stderr [$(cat "$T/bad.err")], stdout $(wc -c <"$T/bad.out") bytes"
done
# dcpicoverage -epoch A..B: the same as the two epochs listed
"$B/dcpicoverage" -db "$L" -epoch $LE1..latest hot "$LP" >"$T/cov_r.out" 2>&1 || fail "dcpicoverage -epoch A..B: $(head -2 "$T/cov_r.out")"
"$B/dcpicoverage" -db "$L" -epochs $LE1,$LE2 hot "$LP" >"$T/cov_l.out" 2>&1 || fail "dcpicoverage -epochs: $(head -2 "$T/cov_l.out")"
cmp -s "$T/cov_r.out" "$T/cov_l.out" && grep -q "$LE2" "$T/cov_r.out" || fail "dcpicoverage -epoch $LE1..latest is not -epochs $LE1,$LE2: $(diff "$T/cov_r.out" "$T/cov_l.out" | head -5)"
rc=0
"$B/dcpicoverage" -db "$L" -epoch $LE2..$LE1 hot "$LP" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$T/bad.err")" -eq 1 ] && grep -q "^dcpicoverage: " "$T/bad.err" ||
    fail "dcpicoverage -epoch B..A: exit $rc, $(cat "$T/bad.err")"
# dcpireport -epoch all: one page of the three epochs, their stacks merged in its flame graph
"$B/dcpireport" -db "$M" -epoch all -o "$T/r.html" 2>"$T/r.err" || fail "dcpireport -epoch all: $(head -2 "$T/r.err")"
grep -q '"epoch":"'$E1..$E3'"' "$T/r.html" && grep -q '"events":\[{"name":"cpu-clock","total":80,"period":1000000,"mixed":0,"lost":3}' "$T/r.html" &&
    grep -q '"flame":{"event":"cpu-clock","total":45,' "$T/r.html" ||
    fail "dcpireport -epoch all: not the epochs' 80 samples (3 lost) and 14 + 31 chained: $(grep -o '"events":.\{0,80\}' "$T/r.html")"

check_all
[ "$fails" -eq 0 ] || exit 1
echo "ok: -json output parsed and checked; -epoch all/A..B/-since/-until = the sum of their epochs"
