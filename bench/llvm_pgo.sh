#!/bin/bash
# bench/llvm_pgo.sh - do dcpi's LLVM sample profiles make real programs faster (issue 30)? For
# lua5.4 and sqlite3 rebuilt from their Debian sources (apt-get source; a deb-src entry is added
# to /etc/apt/sources.list.d/dcpi-src.sources when apt has none) with Debian's clang 14 at
# -O2 -gline-tables-only -fdebug-info-for-profiling, five builds of each:
#   base    no profile
#   dcpi    dcpid -vtrace vp-calls -- PROGRAM TRAIN (the defaults), dcpiexport -format llvm,
#           llvm-profdata merge -sample, -fprofile-sample-use
#   notgt   the same text profile with the ` name:count` call-target lists cut from its body
#           lines (what a non-LBR AutoFDO profile carries: no targets)
#   dcpi4k  dcpi's profile as dcpi but at -freq 4000 (four times the samples; perf's default)
#   dcpiblk the dcpi run exported with -counts blocks: a line counts its block's executions as
#           dcpicalc estimates them (within a function; functions weighted by their samples)
#   afdo    perf + AutoFDO: perf record -e cpu-clock (same 1 kHz as dcpid), create_llvm_prof
#           --use_lbr=false. Debian 12's autofdo 0.19 cannot read Debian 12's perf.data as is;
#           what makes it read it: perf record --no-bpf-event, the KSYMBOL (17), BPF_EVENT (18)
#           and FINISHED_INIT (82) records rewritten in place as FINISHED_ROUND (68) (0.19 stops
#           at a type it does not know: "Unknown event type: 82" and an empty profile, or the
#           program's mmaps unseen behind a KSYMBOL and an empty profile), and a -gdwarf-4
#           build of the same code to profile (0.19 reads no DWARF 5: "no .debug_ranges
#           section"; its .text is compared with base's: equal for lua, 80 bytes longer for
#           sqlite); its text output then needs cleaning (inlined sections named by garbage
#           bytes cut) before llvm-profdata takes it
#   instrfe instrumented PGO as issue 30 names it: -fprofile-instr-generate (clang's front-end
#           instrumentation; with -mllvm -enable-value-profiling, without which it records no
#           call targets), TRAIN, llvm-profdata merge, -fprofile-instr-use. Even so clang 14
#           promotes no indirect call with it at -O2 without LTO, hence:
#   instr   instrumented PGO at the IR level: -fprofile-generate, TRAIN, llvm-profdata merge,
#           -fprofile-use (value profiling and call promotion on): the limit
# Profiles come from a TRAIN workload, times from a different TEST workload (train/test split):
# lua, small Lua programs of table/string/closure/metatable work (train.lua: sieve, sort with a
# comparator, string.format, map/filter/fold closures, methods; test.lua: binary trees, a
# serializer, fannkuch, gmatch counting through __call, closures); sqlite3 :memory:, a
# speedtest1-like load (train.sql: integer keys, LIKE, group by, join, update, delete; test.sql:
# text keys without rowid, a composite index, window functions, subqueries, replace, glob).
# Each variant runs TEST REPS times, interleaved (base dcpi notgt dcpi4k afdo instrfe instr, base
# ...), timed
# by /usr/bin/time (wall and user CPU); the table gives medians, min-max, the speedup of the
# medians against base, the share of instrumented PGO's gain a variant recovers
# ((base - v) / (base - instr), from wall and from user CPU medians) and the indirect call sites
# clang promoted (its -Rpass=pgo-icall-prom remarks "Promote indirect call to ...": sites, and
# targets in parentheses), plus clang's profile warnings per build.
# Usage: bench/llvm_pgo.sh BUILD_DIR [WORKDIR (/tmp/dcpi-pgo)]   (root: apt; PROGS="lua sqlite";
#        REPS=7; LUA_TRAIN=10 LUA_TEST=20 SQL_TRAIN=3 SQL_TEST=4 scale the workloads; builds are
#        kept in WORKDIR and redone only when their profile changed; FRESH=1 redoes everything
#        but the sources)
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@" # sh bench/llvm_pgo.sh works too
set -u
export LC_ALL=C
die() {
    echo "llvm_pgo: $*" >&2
    exit 1
}
[ $# -ge 1 ] || die "usage: bench/llvm_pgo.sh BUILD_DIR [WORKDIR]"
[ -d "$1" ] || die "$1: no such build directory"
B=$(cd "$1" && pwd)
W=${2:-/tmp/dcpi-pgo}
REPS=${REPS:-7}
PROGS=${PROGS:-lua sqlite}
LUA_TRAIN=${LUA_TRAIN:-10}
LUA_TEST=${LUA_TEST:-20}
SQL_TRAIN=${SQL_TRAIN:-3}
SQL_TEST=${SQL_TEST:-4}
VARIANTS=${VARIANTS:-base dcpi notgt dcpi4k dcpiblk afdo instrfe instr}
for f in dcpid dcpiexport; do
    [ -x "$B/$f" ] || die "$B/$f not built"
done
[ -e "$B/plugins/vp-calls.so" ] || die "$B/plugins/vp-calls.so not built"
need() { command -v "$1" >/dev/null || die "$1 missing (Debian package $2)"; }
need clang-14 clang-14
need llvm-profdata-14 llvm-14
need perf linux-perf
need create_llvm_prof autofdo
need tclsh tcl # sqlite's amalgamation generator
need objcopy binutils
need python3 python3
[ -x /usr/bin/time ] || die "/usr/bin/time missing (Debian package time)"
CC=clang-14
PD=llvm-profdata-14
CF="-O2 -gline-tables-only -fdebug-info-for-profiling"
REM="-Rpass=pgo-icall-prom|sample-profile" # one -Rpass: clang keeps only the last one given
# a sample profile's use: a warning per function whose body records or samples were not all
# applied (LLVM's coverage check; no effect on the code)
SCOV="-mllvm -sample-profile-check-record-coverage=100 -mllvm -sample-profile-check-sample-coverage=100"
[ -n "${FRESH:-}" ] && rm -rf "$W/lua" "$W/sqlite"
mkdir -p "$W/src" "$W/wl" || die "cannot create $W"

# ---- sources ----
if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    [ "$(id -u)" = 0 ] || die "apt has no deb-src entry and adding one needs root"
    cat >/etc/apt/sources.list.d/dcpi-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -qq || die "apt-get update failed"
fi
for p in lua5.4 sqlite3; do
    ls -d "$W/src/$p"-[0-9]*/ >/dev/null 2>&1 ||
        (cd "$W/src" && apt-get source -qq "$p" >/dev/null 2>"$W/src/$p.log") ||
        die "apt-get source $p failed (see $W/src/$p.log)"
done
LSRC=$(ls -d "$W"/src/lua5.4-[0-9]*/src | head -1)
SSRC=$(ls -d "$W"/src/sqlite3-[0-9]*/ | head -1)
# Debian's rules write this header at configure time
printf '#ifndef _LUA_DEB_MULTIARCH_\n#define _LUA_DEB_MULTIARCH_\n#define DEB_HOST_MULTIARCH "%s"\n#endif\n' \
    "$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)" \
    >"$LSRC/lua5.4-deb-multiarch.h"
# sqlite: the amalgamation (sqlite3.c, shell.c) from the source tree, as upstream's make does
if [ ! -s "$W/sqlgen/sqlite3.c" ] || [ ! -s "$W/sqlgen/shell.c" ]; then
    mkdir -p "$W/sqlgen"
    (cd "$W/sqlgen" && "$SSRC/configure" --disable-tcl >configure.log 2>&1 &&
        make -j2 sqlite3.c shell.c >make.log 2>&1) || die "sqlite amalgamation failed: $W/sqlgen"
fi
# Debian's defines (debian/rules), without its -O2 and -g
SQLDEFS="-fno-strict-aliasing -DSQLITE_SECURE_DELETE -DSQLITE_ENABLE_COLUMN_METADATA
 -DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS3_PARENTHESIS -DSQLITE_ENABLE_RTREE=1 -DSQLITE_SOUNDEX=1
 -DSQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_OMIT_LOOKASIDE=1 -DSQLITE_ENABLE_DBSTAT_VTAB
 -DSQLITE_ALLOW_ROWID_IN_VIEW -DSQLITE_ENABLE_UPDATE_DELETE_LIMIT=1 -DSQLITE_ENABLE_LOAD_EXTENSION
 -DSQLITE_ENABLE_JSON1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_THREADSAFE=1
 -DSQLITE_ENABLE_FTS3_TOKENIZER=1 -DSQLITE_USE_URI=1 -DSQLITE_MAX_SCHEMA_RETRY=25
 -DSQLITE_ENABLE_PREUPDATE_HOOK -DSQLITE_ENABLE_SESSION -DSQLITE_ENABLE_STMTVTAB
 -DSQLITE_MAX_VARIABLE_NUMBER=250000"

# ---- workloads ----
cat >"$W/wl/train.lua" <<'EOF'
-- TRAIN: tables, strings, closures, metatables
local N = tonumber(arg and arg[1]) or 1
local function sieve(n)
  local p, c = {}, 0
  for i = 2, n do p[i] = true end
  for i = 2, n do if p[i] then c = c + 1; for j = i * i, n, i do p[j] = false end end end
  return c
end
local Point = {}
Point.__index = Point
function Point.new(x, y) return setmetatable({x = x, y = y}, Point) end
function Point:add(o) return Point.new(self.x + o.x, self.y + o.y) end
function Point:len2() return self.x * self.x + self.y * self.y end
local function map(t, f) local r = {} for i = 1, #t do r[i] = f(t[i]) end return r end
local function filter(t, f) local r = {} for i = 1, #t do if f(t[i]) then r[#r + 1] = t[i] end end return r end
local function fold(t, f, a) for i = 1, #t do a = f(a, t[i]) end return a end
local total = 0
for rep = 1, N do
  total = total + sieve(400000)
  local words = {}
  for i = 1, 60000 do words[i] = string.format("w%05d", (i * 7919) % 60000) end
  table.sort(words, function(a, b) return a > b end)
  local freq = {}
  for i = 1, #words do local k = words[i]:sub(1, 3); freq[k] = (freq[k] or 0) + 1 end
  local parts = {}
  for k, v in pairs(freq) do parts[#parts + 1] = k .. "=" .. v end
  total = total + #table.concat(parts, ",")
  local pts = {}
  for i = 1, 100000 do pts[i] = Point.new(i % 17, i % 23) end
  local acc = Point.new(0, 0)
  for i = 1, #pts do acc = acc:add(pts[i]) end
  total = total + acc:len2() % 1000
  local sq = map(pts, function(p) return p:len2() end)
  local big = filter(sq, function(v) return v > 200 end)
  total = total + fold(big, function(a, v) return a + v end, 0) % 1000
  local s = string.rep("the quick brown fox jumps over the lazy dog ", 2000)
  local cnt = 0
  for w in s:gmatch("%a+") do cnt = cnt + #w end
  total = total + cnt + #s:gsub("o", "0")
end
print(total)
EOF
cat >"$W/wl/test.lua" <<'EOF'
-- TEST: other programs of the same kinds: binary trees, a tiny serializer, word counts, fannkuch
local N = tonumber(arg and arg[1]) or 1
local function tree(d) if d == 0 then return {} end return {tree(d - 1), tree(d - 1)} end
local function check(t) if t[1] then return 1 + check(t[1]) + check(t[2]) end return 1 end
local function ser(v, out)
  local ty = type(v)
  if ty == "table" then
    out[#out + 1] = "{"
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for _, k in ipairs(keys) do out[#out + 1] = k; out[#out + 1] = "="; ser(v[k] or v[tonumber(k)], out); out[#out + 1] = "," end
    out[#out + 1] = "}"
  else out[#out + 1] = tostring(v) end
end
local function fannkuch(n)
  local perm, perm1, count = {}, {}, {}
  local maxf, r = 0, n
  for i = 0, n - 1 do perm1[i] = i end
  while true do
    while r ~= 1 do count[r - 1] = r; r = r - 1 end
    for i = 0, n - 1 do perm[i] = perm1[i] end
    local f, k = 0, perm[0]
    while k ~= 0 do
      local i, j = 0, k
      while i < j do perm[i], perm[j] = perm[j], perm[i]; i = i + 1; j = j - 1 end
      f = f + 1; k = perm[0]
    end
    if f > maxf then maxf = f end
    while true do
      if r == n then return maxf end
      local p0 = perm1[0]
      for i = 0, r - 1 do perm1[i] = perm1[i + 1] end
      perm1[r] = p0
      count[r] = count[r] - 1
      if count[r] > 0 then break end
      r = r + 1
    end
  end
end
local Counter = setmetatable({}, {__call = function(self, k) self[k] = (self[k] or 0) + 1 end})
local total = 0
for rep = 1, N do
  total = total + check(tree(15))
  local rec = {}
  for i = 1, 3000 do rec[i] = {id = i, name = "item" .. i, tags = {i % 3, i % 5}, ok = i % 2 == 0} end
  local out = {}
  ser(rec, out)
  total = total + #table.concat(out)
  local text = {}
  for i = 1, 20000 do text[i] = ("alpha beta gamma delta %d epsilon"):format(i % 97) end
  local s = table.concat(text, " ")
  for w in s:gmatch("%w+") do Counter(w) end
  total = total + fannkuch(8)
  local up = s:upper():lower():reverse()
  total = total + #up + select(2, s:gsub("a", "A"))
  local adders = {}
  for i = 1, 50000 do adders[i] = function(x) return x + i end end
  local a = 0
  for i = 1, #adders do a = adders[i](a) % 1000003 end
  total = total + a
end
print(total)
EOF
{
    cat <<EOF
-- TRAIN: speedtest1-like: inserts, indexes, range and LIKE scans, group by, join, update, delete
create table t1(a integer primary key, b integer, c text);
create table t2(a integer, b integer, c text);
with recursive s(x) as (select 1 union all select x + 1 from s where x < $((SQL_TRAIN * 200000)))
insert into t1 select x, (x * 7919) % 100003, printf('%d-%s', x, hex(x * 31)) from s;
insert into t2 select b, a, c from t1;
create index t1b on t1(b);
create index t2a on t2(a);
EOF
    for _ in $(seq "$SQL_TRAIN"); do
        cat <<'EOF'
select count(*), sum(b) from t1 where c like '%AB%';
select b % 100, count(*), avg(a) from t1 group by 1 order by 2 desc limit 5;
select count(*) from t1 join t2 on t1.b = t2.a where t1.a % 7 = 0;
select sum(length(c)) from t1 where b between 1000 and 60000;
update t1 set c = upper(c) where a % 3 = 0;
select count(distinct substr(c, 1, 4)) from t1;
EOF
    done
    cat <<'EOF'
delete from t2 where b % 5 = 1;
select max(b), min(c) from t2;
EOF
} >"$W/wl/train.sql"
{
    cat <<EOF
-- TEST: another schema and other query shapes: text keys without rowid, a composite index,
-- window functions, subqueries, replace, glob, order by on text
create table kv(k text primary key, v integer, w real) without rowid;
create table ev(id integer primary key, k text, ts integer, amount real);
with recursive s(x) as (select 1 union all select x + 1 from s where x < $((SQL_TEST * 60000)))
insert into kv select printf('key%07d', (x * 48271) % 2147483647 % 1000000), x, x / 7.0 from s;
with recursive s(x) as (select 1 union all select x + 1 from s where x < $((SQL_TEST * 150000)))
insert into ev select x, printf('key%07d', (x * 16807) % 1000000), x % 86400, (x % 1000) / 3.0 from s;
create index evk on ev(k, ts);
EOF
    for _ in $(seq "$SQL_TEST"); do
        cat <<'EOF'
select count(*) from ev where k in (select k from kv where v % 11 = 0);
select k, sum(amount) over (partition by k) from ev where ts < 200 order by k limit 5;
select substr(k, 1, 6), count(*), total(amount) from ev group by 1 order by 3 desc limit 5;
select count(*), avg(w) from kv where k glob 'key00*';
select length(group_concat(k, ',')) from (select k from kv order by w desc limit 100);
select count(*) from ev e where amount > (select avg(v) / 1000 from kv where kv.k = e.k);
select ts, count(*) c from ev group by ts having c > 2 order by c desc, ts limit 3;
EOF
    done
    echo "replace into kv select k, v + 1, w * 2 from kv where v % 4 = 0;"
} >"$W/wl/test.sql"

# ---- per program ----
img() { case $1 in lua) echo lua5.4 ;; sqlite) echo sqlite3 ;; esac; }
# run PROG BIN train|test [PREFIX...]: the workload under PREFIX (dcpid, perf, time), output to
# /dev/null
run() {
    local p=$1 bin=$2 which=$3
    shift 3
    case $p:$which in
    lua:train) "$@" "$bin" "$W/wl/train.lua" "$LUA_TRAIN" </dev/null ;;
    lua:test) "$@" "$bin" "$W/wl/test.lua" "$LUA_TEST" </dev/null ;;
    sqlite:train) "$@" "$bin" :memory: <"$W/wl/train.sql" ;;
    sqlite:test) "$@" "$bin" :memory: <"$W/wl/test.sql" ;;
    esac >/dev/null
}
# build PROG DIR FLAGS...: DIR/IMAGE, clang's messages in DIR/build.log
build() {
    local p=$1 d=$2 out
    shift 2
    mkdir -p "$d"
    out=$d/$(img "$p")
    case $p in
    lua) # as src/Makefile's lua target: every file but luac.c, one binary, -DLUA_COMPAT_5_3
        # (Debian's linux-readline target adds readline, which the workloads do not use)
        local srcs=() f
        for f in "$LSRC"/*.c; do [ "${f##*/}" = luac.c ] || srcs+=("$f"); done
        # shellcheck disable=SC2086
        $CC -std=gnu99 $CF "$@" -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -o "$out" "${srcs[@]}" -lm -ldl \
            >"$d/build.log" 2>&1 ;;
    sqlite)
        # shellcheck disable=SC2086
        $CC $CF "$@" $SQLDEFS -DHAVE_READLINE=0 -I"$W/sqlgen" -o "$out" "$W/sqlgen/sqlite3.c" \
            "$W/sqlgen/shell.c" -lpthread -ldl -lm >"$d/build.log" 2>&1 ;;
    esac || die "build of $out failed: $d/build.log"
}
# build_if PROG DIR STAMP FLAGS...: build unless DIR holds the image built from STAMP's content
# with these FLAGS
build_if() {
    local p=$1 d=$2 st=$3 sum
    shift 3
    sum=$({ cat "$st" && echo "$*"; } | md5sum | cut -d' ' -f1)
    [ -x "$d/$(img "$p")" ] && [ "$(cat "$d/stamp" 2>/dev/null)" = "$sum" ] && return 0
    echo "llvm_pgo: building $p $(basename "$d")" >&2
    build "$p" "$d" "$@"
    echo "$sum" >"$d/stamp"
}

prepare() {
    local p=$1 D=$W/$1 im
    im=$(img "$p")
    mkdir -p "$D/prof"
    # base, and its -gdwarf-4 twin for autofdo
    echo "$CF" >"$D/prof/base.flags"
    build_if "$p" "$D/base" "$D/prof/base.flags" $REM
    echo "$CF -gdwarf-4" >"$D/prof/dw4.flags"
    build_if "$p" "$D/dw4" "$D/prof/dw4.flags" -gdwarf-4
    objcopy -O binary -j .text "$D/base/$im" "$D/prof/base.text"
    objcopy -O binary -j .text "$D/dw4/$im" "$D/prof/dw4.text"
    cmp -s "$D/prof/base.text" "$D/prof/dw4.text" ||
        echo "llvm_pgo: $p: the -gdwarf-4 build's .text differs from base's" >&2
    # instrumented PGO. instrfe: clang's front-end instrumentation, as issue 30 asks
    # (-fprofile-instr-generate), which records no indirect call targets unless asked
    # (CodeGenPGO.cpp: -enable-value-profiling, off by default) and even then has no call
    # promoted at -O2 without LTO (clang 14's pipeline runs PGOIndirectCallPromotion for IR
    # profiles and sample profiles only); instr: IR-level instrumentation (-fprofile-generate,
    # value profiling on), the limit
    echo "$CF -fprofile-instr-generate -mllvm -enable-value-profiling" >"$D/prof/gen.flags"
    build_if "$p" "$D/gen" "$D/prof/gen.flags" -fprofile-instr-generate -mllvm -enable-value-profiling
    rm -f "$D"/prof/instrfe-*.profraw
    run "$p" "$D/gen/$im" train env LLVM_PROFILE_FILE="$D/prof/instrfe-%p.profraw"
    $PD merge -o "$D/prof/instrfe.profdata" "$D"/prof/instrfe-*.profraw || die "$p: llvm-profdata merge"
    build_if "$p" "$D/instrfe" "$D/prof/instrfe.profdata" -fprofile-instr-use="$D/prof/instrfe.profdata" $REM
    echo "$CF -fprofile-generate" >"$D/prof/irgen.flags"
    build_if "$p" "$D/irgen" "$D/prof/irgen.flags" -fprofile-generate
    rm -f "$D"/prof/instr-*.profraw
    run "$p" "$D/irgen/$im" train env LLVM_PROFILE_FILE="$D/prof/instr-%p.profraw"
    $PD merge -o "$D/prof/instr.profdata" "$D"/prof/instr-*.profraw || die "$p: llvm-profdata merge"
    build_if "$p" "$D/instr" "$D/prof/instr.profdata" -fprofile-use="$D/prof/instr.profdata" $REM
    # dcpi, at the defaults
    rm -rf "$D/prof/db"
    run "$p" "$D/base/$im" train "$B/dcpid" -db "$D/prof/db" -vtrace vp-calls -- \
        2>"$D/prof/dcpid.log" || die "$p: dcpid failed: $D/prof/dcpid.log"
    "$B/dcpiexport" -db "$D/prof/db" -format llvm -o "$D/prof/dcpi.txt" "$im" \
        2>"$D/prof/dcpiexport.log" || die "$p: dcpiexport failed: $D/prof/dcpiexport.log"
    # the same at 4 times the PC sampling rate (-freq 4000, perf record's default): is a
    # profile of a 2-3 s run at 1 kHz too sparse?
    rm -rf "$D/prof/db4k"
    run "$p" "$D/base/$im" train "$B/dcpid" -db "$D/prof/db4k" -freq 4000 -vtrace vp-calls -- \
        2>"$D/prof/dcpid4k.log" || die "$p: dcpid -freq 4000 failed: $D/prof/dcpid4k.log"
    "$B/dcpiexport" -db "$D/prof/db4k" -format llvm -o "$D/prof/dcpi4k.txt" "$im" \
        2>"$D/prof/dcpiexport4k.log" || die "$p: dcpiexport failed: $D/prof/dcpiexport4k.log"
    "$B/dcpiexport" -db "$D/prof/db" -format llvm -counts blocks -o "$D/prof/dcpiblk.txt" "$im" \
        2>"$D/prof/dcpiexportblk.log" || die "$p: dcpiexport -counts blocks failed: $D/prof/dcpiexportblk.log"
    # without targets: body lines "offset[.disc]: count name:count ..." lose the names
    sed -E 's/^( +[0-9]+(\.[0-9]+)?: [0-9]+) .*/\1/' "$D/prof/dcpi.txt" >"$D/prof/notgt.txt"
    for v in dcpi notgt dcpi4k dcpiblk; do
        $PD merge -sample -o "$D/prof/$v.prof" "$D/prof/$v.txt" 2>"$D/prof/$v.merge.log" ||
            die "$p: llvm-profdata merge -sample $v: $D/prof/$v.merge.log"
        build_if "$p" "$D/$v" "$D/prof/$v.prof" -fprofile-sample-use="$D/prof/$v.prof" $REM $SCOV
    done
    # perf + AutoFDO, on the -gdwarf-4 twin
    run "$p" "$D/dw4/$im" train perf record --no-bpf-event -e cpu-clock -F 1000 \
        -o "$D/prof/perf.data" -- 2>"$D/prof/perf.log" || die "$p: perf record failed: $D/prof/perf.log"
    python3 - "$D/prof/perf.data" >"$D/prof/perf_fix.log" <<'EOF'
import struct, sys
# autofdo 0.19 stops at record types it does not know: KSYMBOL (17) and BPF_EVENT (18), which
# perf writes even with --no-bpf-event, and FINISHED_INIT (82). Each becomes a FINISHED_ROUND
# (68, which it skips whatever its size): the records keep their sizes, the file its layout
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
assert b[:8] == b'PERFILE2', 'not a perf.data file'
doff, dsz = struct.unpack_from('<QQ', b, 40)
o, n = doff, {}
while o + 8 <= doff + dsz:
    t, misc, sz = struct.unpack_from('<IHH', b, o)
    if sz < 8:
        break
    if t in (17, 18, 82):
        struct.pack_into('<I', b, o, 68)
        n[t] = n.get(t, 0) + 1
    o += sz
open(p, 'wb').write(b)
print('rewrote as FINISHED_ROUND: ' + ', '.join('%d of type %d' % (n[t], t) for t in sorted(n)))
EOF
    rm -f "$D/prof/afdo.txt"
    create_llvm_prof --binary="$D/dw4/$im" --profile="$D/prof/perf.data" --out="$D/prof/afdo.txt" \
        --format=text --use_lbr=false >"$D/prof/create_llvm_prof.log" 2>&1
    # 0.19's text has inlined call sites named by garbage bytes (llvm-profdata rejects the file:
    # "Expected 'NUM[.NUM]: NUM[ mangled_name:NUM]*'") and names followed by a space before the
    # colon: such a section goes with everything nested in it, the spaces go
    [ -s "$D/prof/afdo.txt" ] && awk '
    { match($0, /^ */); ind = RLENGTH }
    skip >= 0 && ind > skip { dropped++; next }
    { skip = -1 }
    /[^ -~]/ { skip = ind; dropped++; next }
    { gsub(/ +:/, ":"); print }
    END { print dropped + 0 " lines dropped (garbage-named inlined sections and their bodies)" > "/dev/stderr" }' \
        "$D/prof/afdo.txt" >"$D/prof/afdo.clean.txt" 2>"$D/prof/afdo.clean.log"
    if [ -s "$D/prof/afdo.txt" ] &&
        $PD merge -sample -o "$D/prof/afdo.prof" "$D/prof/afdo.clean.txt" 2>"$D/prof/afdo.merge.log"; then
        build_if "$p" "$D/afdo" "$D/prof/afdo.prof" -fprofile-sample-use="$D/prof/afdo.prof" $REM $SCOV
    else
        echo "llvm_pgo: $p: no AutoFDO profile: $D/prof/create_llvm_prof.log" >&2
        rm -rf "$D/afdo"
    fi
}
measure() {
    local p=$1 D=$W/$1 im v
    im=$(img "$p")
    : >"$D/times"
    for v in $VARIANTS; do [ -x "$D/$v/$im" ] && run "$p" "$D/$v/$im" test; done # warm
    for _ in $(seq "$REPS"); do
        for v in $VARIANTS; do
            [ -x "$D/$v/$im" ] || continue
            run "$p" "$D/$v/$im" test /usr/bin/time -f "$v %e %U" -o "$D/t.one" ||
                die "$p $v: the test run failed"
            cat "$D/t.one" >>"$D/times"
        done
    done
}

# promoted PROG VARIANT: "sites (targets)" from clang's remarks
promoted() {
    local f=$W/$1/$2/build.log
    [ -f "$f" ] || return
    local t s
    t=$(grep -c 'remark: Promote indirect call to' "$f")
    s=$(grep 'remark: Promote indirect call to' "$f" | cut -d: -f1-3 | sort -u | wc -l)
    echo "$s ($t)"
}
# warnings PROG VARIANT: clang's profile warnings but the coverage check's, counted by kind;
# then the coverage check's: over the functions it names, the records and samples applied
warnings() {
    local f=$W/$1/$2/build.log
    [ -f "$f" ] || return
    grep 'warning:' "$f" | grep -v 'were applied' | grep -iE 'profile|sample' |
        sed -E 's/.*warning: //; s/[0-9]+/N/g' | sort | uniq -c |
        awk '{n = $1; $1 = ""; printf "%s%d x%s", (NR > 1 ? "; " : ""), n, $0}'
    grep 'were applied' "$f" | awk '
    { for (i = 1; i < NF; i++) if ($i == "of") { u = $(i - 1); t = $(i + 1); break }
      if (/records/) { nr++; ur += u; tr += t } else { ns++; us += u; ts += t } }
    END { if (nr + ns) printf "coverage < 100%%: records %d of %d in %d functions, samples %d of %d in %d", ur, tr, nr, us, ts, ns }'
}

report() {
    local p=$1 D=$W/$1
    awk -v prog="$(img "$p")" -v order="$VARIANTS" '
    function med(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { n[$1]++; w[$1, n[$1]] = $2; u[$1, n[$1]] = $3 }
    END {
        k = split(order, vs, " ")
        for (i = 1; i <= k; i++) {
            v = vs[i]; if (!n[v]) continue
            delete a; delete c
            for (j = 1; j <= n[v]; j++) { a[j] = w[v, j]; c[j] = u[v, j] }
            mw[v] = med(a, n[v]); lo[v] = a[1]; hi[v] = a[n[v]]
            mu[v] = med(c, n[v]); ulo[v] = c[1]; uhi[v] = c[n[v]]
        }
        for (i = 1; i <= k; i++) {
            v = vs[i]; if (!n[v]) continue
            sw = mw["base"] / mw[v]; su = mu["base"] / mu[v]
            rw = (mw["base"] - mw["instr"]) != 0 && v != "base" ? sprintf("%.0f%%", 100 * (mw["base"] - mw[v]) / (mw["base"] - mw["instr"])) : "-"
            ru = (mu["base"] - mu["instr"]) != 0 && v != "base" ? sprintf("%.0f%%", 100 * (mu["base"] - mu[v]) / (mu["base"] - mu["instr"])) : "-"
            printf "%s|%s|%d|%.2f [%.2f-%.2f]|%.2f [%.2f-%.2f]|%.3fx|%.3fx|%s|%s\n", prog, v, n[v], mw[v], lo[v], hi[v], mu[v], ulo[v], uhi[v], sw, su, rw, ru
        }
    }' "$D/times" | while IFS='|' read -r prog v n wall cpu sw su rw ru; do
        echo "| $prog | $v | $n | $wall | $cpu | $sw | $su | $rw | $ru | $(promoted "$p" "$v") | $(warnings "$p" "$v") |"
    done
}

for p in $PROGS; do
    case $p in lua | sqlite) ;; *) die "unknown program $p (lua, sqlite)" ;; esac
    echo "llvm_pgo: $p: builds and profiles" >&2
    prepare "$p"
done
for p in $PROGS; do
    echo "llvm_pgo: $p: $REPS interleaved test runs of each variant" >&2
    measure "$p"
done
{
    echo "| program | variant | runs | wall s median [min-max] | user s median [min-max] | speedup wall | speedup user | of instr's gain (wall) | of instr's gain (user) | icall sites promoted (targets) | clang profile warnings |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for p in $PROGS; do report "$p"; done
} | tee "$W/results.md"
for p in $PROGS; do
    D=$W/$p
    echo
    echo "$(img "$p"): dcpid: $(grep -E '^dcpid: [0-9]+ samples|vp-calls:' "$D/prof/dcpid.log" | sed 's/^dcpid: //' | tr '\n' ';')"
    echo "$(img "$p"): dcpiexport: $(tr '\n' ' ' <"$D/prof/dcpiexport.log")"
    echo "$(img "$p"): dcpi profile: $(grep -c '^[^ ]' "$D/prof/dcpi.txt") functions, $(grep -cE '^ +[0-9.]+: [0-9]+ [^ ]' "$D/prof/dcpi.txt") body lines with targets"
    [ -s "$D/prof/afdo.txt" ] && echo "$(img "$p"): afdo profile: $(grep -c '^[^ ]' "$D/prof/afdo.clean.txt") functions, $(cat "$D/prof/afdo.clean.log")"
done | tee -a "$W/results.md"
