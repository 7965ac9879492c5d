#!/bin/bash
# bench/realprogs.sh - a system-wide run of real Debian programs, profiled by dcpid and by two
# `perf record -a` at the same time (cpu-clock, same rate), then compared (dcpi issue 13):
#   overlap   per image, sum over procedures of min(dcpi share, perf share) within the image
#             (dcpi keeps no per-process split, so programs are compared through their images:
#             the binary and its main library; the kernel and libc as whole images); beside it
#             the overlap sampling noise alone would leave (two independent samples of these
#             sizes from one distribution, normal approximation) and the control: perf against
#             the second perf record (perf2) of the same run. Images under 98% get their most
#             different procedures printed.
#   sizes     the database (all of it, the measured epoch, its .prof files) against perf.data
#             (and perf's build-id cache, which perf record fills beside it)
#   speed     time and peak RSS (/usr/bin/time %e %M) of dcpiprof against perf report
#             --sort dso,sym, and of dcpilist -asm against perf annotate, on the hottest named
#             procedure of python3; medians of REPS runs
# The window is the same for all: perf records with events disabled (-D -1), is enabled through
# its control fifo right before the `dcpictl epoch` that starts the dcpi epoch compared and
# disabled right before the one that ends it: `epoch` drains the rings, flushes, then switches,
# so the samples taken during a flush (dcpid's own work, a kallsyms snapshot per epoch) go to
# the next epoch; this way every window holds the first flush's samples and none the last's.
# Workloads, one after another, each for SECONDS/7 (a loop of the command under timeout):
# xz -9, bzip2 -9, sort, python3, sqlite3, gcc -O2 (cc1), perl; other processes of the machine
# are sampled too (system-wide). Names: perf's and dcpi's are matched after cutting C++
# parameter lists and default symbol versions, names at one address are made one (ELF symbols,
# kallsyms), and perf's raw addresses in stripped code (file offsets) are turned into ELF
# addresses and named after the .eh_frame function start at or before them, as dcpi names them.
# Usage: bench/realprogs.sh BUILD_DIR [SECONDS (60)] [HZ (1000)]   (REPS=3; KEEP=1 keeps the
# temporary directory with the databases, perf.data files and the readings)
set -u
export LC_ALL=C
die() {
    echo "realprogs: $*" >&2
    exit 1
}
[ $# -ge 1 ] || die "usage: bench/realprogs.sh BUILD_DIR [SECONDS (60)] [HZ (1000)]"
[ -d "$1" ] || die "$1: no such build directory"
B=$(cd "$1" && pwd)
SECS=${2:-60}
HZ=${3:-1000}
REPS=${REPS:-3}
case $SECS in '' | *[!0-9]*) die "SECONDS '$SECS' is not a whole number" ;; esac
case $HZ in '' | *[!0-9]*) die "HZ '$HZ' is not a whole number" ;; esac
[ "$SECS" -ge 7 ] || die "SECONDS $SECS: at least 7 (one second per program)"
[ "$HZ" -ge 1 ] && [ "$HZ" -le 100000 ] || die "HZ $HZ: from 1 to 100000"
[ "$(id -u)" = 0 ] || die "system-wide sampling needs root"
for f in dcpid dcpictl dcpiprof dcpilist; do
    [ -x "$B/$f" ] || die "$B/$f not built"
done
need() { command -v "$1" >/dev/null || die "$1 missing (Debian package $2: sh tools/install-deps.sh $2)"; }
need perf linux-perf
need readelf binutils
need xz xz-utils
need bzip2 bzip2
need sort coreutils
need sqlite3 sqlite3
need gcc gcc
need perl perl-base
need timeout coreutils
[ -x /usr/bin/python3 ] || die "/usr/bin/python3 missing (Debian package python3)"
[ -x /usr/bin/time ] || die "/usr/bin/time missing (Debian package time)"

T=$(mktemp -d /tmp/dcpi-realprogs.XXXXXX)
DB=$T/db
PERF_PIDS=()
WPID=
cleanup() {
    local p
    [ -n "$WPID" ] && kill -TERM "$WPID" 2>/dev/null # timeout passes it on to the workload
    for p in "${PERF_PIDS[@]}"; do
        kill -INT "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    [ -S "$(ls "$DB"/dcpid-*.sock 2>/dev/null | head -1)" ] &&
        timeout 90 "$B/dcpictl" -db "$DB" quit >/dev/null 2>&1
    [ -n "${KEEP:-}" ] && echo "realprogs: kept $T" >&2 || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
PERF="perf --buildid-dir $T/buildid" # perf2 has buildid2: no two perf write one cache

# ---- inputs (made before the window)
awk 'BEGIN { srand(1); n = split("the of and to in is was that for on with as by at from this be or are an it not which have had", w, " ");
             for (i = 0; i < 2500000; i++) { l = int(rand() * 8) + 1; s = "";
                 for (j = 0; j < l; j++) s = s (j ? " " : "") (rand() < 0.6 ? w[int(rand() * n) + 1] : sprintf("w%x", int(rand() * rand() * 100000)));
                 print s } }' >"$T/words.txt"
sqlite3 "$T/t.db" "CREATE TABLE t(a INTEGER, b INTEGER, c TEXT);
    WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 200000)
    INSERT INTO t SELECT x, abs(random()) % 1000, hex(randomblob(12)) FROM s;" || die "sqlite3 could not build $T/t.db"
cat >"$T/q.sql" <<'EOF'
SELECT b, count(*), sum(a), max(c) FROM t GROUP BY b ORDER BY 2 DESC LIMIT 5;
SELECT count(*) FROM t WHERE c LIKE '%A5%';
SELECT count(*) FROM t AS x JOIN t AS y ON x.a = y.b * 7 WHERE x.c > y.c;
SELECT substr(c, 1, 3) AS k, avg(a) FROM t GROUP BY k ORDER BY k LIMIT 3;
EOF
awk 'BEGIN { for (i = 0; i < 300; i++) {
    printf "int f%d(const int *p, int n) { int s = %d; for (int i = 0; i < n; i++) {\n", i, i;
    printf "  switch ((p[i] + %d) & 7) { case 0: s += p[i] * %d; break; case 1: s ^= p[i] << 3; break;\n", i, i + 3;
    printf "  case 2: s -= p[i] / %d; break; case 3: s = s * 31 + p[i]; break; default: s += i; }\n", i % 5 + 1;
    printf "  if (s > %d) s %%= %d; } return s; }\n", i * 1000 + 7, i + 97 } }' >"$T/gen.c"
cat >"$T/work.py" <<'EOF'
d = {}
while True:
    for i in range(200000):
        k = "k%d" % (i * 7919 % 100003)
        d[k] = d.get(k, 0) + len(k) * (i & 15)
    s = sorted(d.items(), key=lambda kv: kv[1])[:10]
    d.clear()
EOF
cat >"$T/work.pl" <<'EOF'
my %h;
while (1) {
    for my $i (1 .. 100000) { my $s = "k" . ($i * 7919 % 100003); $h{$s} += length $s; $s =~ s/(\d)(\d)/$2$1/g; }
    my @top = (sort { $h{$a} <=> $h{$b} } keys %h)[0 .. 9];
    %h = ();
}
EOF

# program  binary  main library (or -): the images each program is compared through
CC1=$(readlink -f "$(gcc -print-prog-name=cc1)")
lib_of() { ldd "$1" | awk -v l="$2" 'index($1, l) == 1 { print $3; exit }' | xargs -r readlink -f; }
cat >"$T/progs" <<EOF
xz $(readlink -f "$(command -v xz)") $(lib_of "$(command -v xz)" liblzma)
bzip2 $(readlink -f "$(command -v bzip2)") $(lib_of "$(command -v bzip2)" libbz2)
sort $(readlink -f "$(command -v sort)") -
python3 $(readlink -f /usr/bin/python3) -
sqlite3 $(readlink -f "$(command -v sqlite3)") $(lib_of "$(command -v sqlite3)" libsqlite3)
gcc $CC1 -
perl $(readlink -f "$(command -v perl)") -
shared $(lib_of /bin/sh libc.so.6) [kernel.kallsyms]
EOF
SLICE=$(awk -v s="$SECS" 'BEGIN { printf "%.1f", s / 7 }')
workload() {
    case $1 in
    xz) timeout "$SLICE" sh -c "while :; do xz -9 -T1 -c '$T/words.txt' >/dev/null; done" ;;
    bzip2) timeout "$SLICE" sh -c "while :; do bzip2 -9 -c '$T/words.txt' >/dev/null; done" ;;
    sort) timeout "$SLICE" sh -c "while :; do sort --parallel=1 -S 512M '$T/words.txt' >/dev/null; done" ;;
    python3) timeout "$SLICE" /usr/bin/python3 "$T/work.py" ;;
    sqlite3) timeout "$SLICE" sh -c "while :; do sqlite3 '$T/t.db' <'$T/q.sql' >/dev/null; done" ;;
    gcc) timeout "$SLICE" sh -c "while :; do gcc -O2 -c '$T/gen.c' -o '$T/gen.o'; done" ;;
    perl) timeout "$SLICE" perl "$T/work.pl" ;;
    esac
}

# perf (compared) and perf2 (the control: what two samplers of one run give), events disabled
# until enabled through their control fifos. Periods: a timer whose period divides the kernel
# tick's (1 ms and CONFIG_HZ=250 here) keeps one phase to the tick for the whole run; when that
# phase puts it a little after the tick, its samples land where the tick's interrupt re-enables
# interrupts (seen here with dcpid's exact 1 ms, in 2 runs of 4: 4-20% of its kernel samples at
# handle_softirqs, _raw_spin_unlock_irqrestore, finish_task_switch, 4-5% of all samples moved
# from user code into the kernel, while the two perf, off 1 ms, agreed with each other). So
# no sampler has a divisor of the tick: with DP = period/(SECONDS*HZ) (at least 1 ns), dcpi has
# 1e9/HZ + DP ns, perf + 2 DP, perf2 - DP, and every phase (to the tick and to each other)
# sweeps a whole period in the run; the rates differ from HZ by at most 2/(SECONDS*HZ).
P0=$((1000000000 / HZ))
DP=$(((P0 + SECS * HZ / 2) / (SECS * HZ)))
[ "$DP" -ge 1 ] || DP=1
PERIODS=($((P0 + DP)) $((P0 + 2 * DP)) $((P0 - DP)))
# ---- the run: dcpid and perf record system-wide, one window
"$B/dcpid" -db "$DB" -event "cpu-clock:${PERIODS[0]}" -quiet || die "dcpid did not start (system-wide, $DB)"
CTL=() ACK=()
for i in 1 2; do
    n=perf$([ $i = 1 ] || echo $i)
    mkfifo "$T/ctl$i" "$T/ack$i"
    exec {fd}<>"$T/ack$i"
    ACK+=("$fd")
    exec {fd}<>"$T/ctl$i"
    CTL+=("$fd")
    perf --buildid-dir "$T/buildid$([ $i = 1 ] || echo $i)" record -a -q -e cpu-clock \
        -c "${PERIODS[$i]}" --no-bpf-event -D -1 --control "fifo:$T/ctl$i,$T/ack$i" \
        -o "$T/$n.data" >"$T/$n.log" 2>&1 &
    PERF_PIDS+=($!)
done
perf_ctl() {
    local a= i
    for i in 0 1; do echo "$1" >&"${CTL[$i]}"; done
    for i in 0 1; do
        read -r -t 30 a <&"${ACK[$i]}" || die "perf record gave no ack to '$1': $(cat "$T"/perf*.log)"
    done
}
perf_ctl enable
E=$(timeout 90 "$B/dcpictl" -db "$DB" epoch | awk '$1 == "new" && $2 == "epoch" { print $3 }')
[ -n "$E" ] || die "dcpictl epoch gave no epoch name"
t0=$(date +%s.%N)
for p in xz bzip2 sort python3 sqlite3 gcc perl; do
    workload "$p" & # waited for in the background: a signal to this script is handled at once
    WPID=$!
    wait "$WPID"
    WPID=
done
t1=$(date +%s.%N)
DSTAT=$(timeout 90 "$B/dcpictl" -db "$DB" status | awk '$1 == "event" || $1 == "unknown"' | tr '\n' ' ')
perf_ctl disable
timeout 90 "$B/dcpictl" -db "$DB" epoch >/dev/null || die "dcpictl epoch (end of the window) failed"
for p in "${PERF_PIDS[@]}"; do
    kill -INT "$p"
    wait "$p"
    rc=$? # perf re-raises the SIGINT it stopped on: 130
    [ $rc = 0 ] || [ $rc = 130 ] || die "perf record exited $rc: $(cat "$T"/perf*.log)"
done
PERF_PIDS=()
timeout 90 "$B/dcpictl" -db "$DB" quit >/dev/null || die "dcpictl quit failed"
WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

# ---- the two readings: image basename, procedure (parameter lists cut), samples
"$B/dcpiprof" -db "$DB" -epoch "$E" -csl >"$T/dcpi.csv" 2>"$T/dcpiprof.err" ||
    die "dcpiprof failed: $(cat "$T/dcpiprof.err")"
for n in perf perf2; do
    $PERF report -i "$T/$n.data" --stdio -q -n --sort dso,sym --percent-limit 0 >"$T/$n.txt" \
        2>"$T/perfreport.err" || die "perf report of $n.data failed: $(head -3 "$T/perfreport.err")"
    [ -s "$T/$n.txt" ] || die "perf report of $n.data printed no samples: $(tr '\n' ' ' <"$T/perfreport.err" | head -c 300)
(perf 6.1 stops this way on some system-wide recordings here, 3 runs of 10: run again)"
done
NORM='function norm(s,   i, d, c) { # cut a default symbol version and a C++ parameter list
    sub(/@@[^@]*$/, "", s)
    sub(/ const$/, "", s)
    if (substr(s, length(s)) != ")") return s
    d = 0
    for (i = length(s); i > 1; i--) {
        c = substr(s, i, 1)
        if (c == ")") d++
        else if (c == "(" && --d == 0) return substr(s, 1, i - 1)
    }
    return s
}
function base(p) { sub(/.*\//, "", p); return p }'
# dcpi: CSV (RFC 4180) to "image TAB procedure TAB samples"; kernel module symbols "f [mod]"
# become image "[mod]", as perf shows modules; "[jit pid N]" is perf's "[JIT] tid N"
awk "$NORM"'
function csv(line, f,   n, i, c, q, cur) {
    n = 0; q = 0; cur = ""
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { cur = cur c; i++ } else q = 0 } else cur = cur c }
        else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = cur; cur = "" }
        else cur = cur c
    }
    f[++n] = cur
    return n
}
NR > 1 && csv($0, f) >= 5 {
    img = f[5]; proc = f[4]
    if (img ~ /^unknown@/) img = "[unknown]"
    else if (img ~ /^\[jit pid [0-9]+\]$/) { sub(/^\[jit pid /, "[JIT] tid ", img); sub(/\]$/, "", img) }
    else img = base(img)
    if (img == "[kernel.kallsyms]" && match(proc, / \[[^]]*\]$/)) {
        img = substr(proc, RSTART + 1); proc = substr(proc, 1, RSTART - 1)
    }
    print img "\t" norm(proc) "\t" f[1] "\t" f[4] "\t" f[5]
}' "$T/dcpi.csv" >"$T/dcpi.tsv"
# perf: "overhead samples dso [x] symbol" to "image TAB symbol TAB samples"
for n in perf perf2; do
    awk "$NORM"'
/^#/ || NF < 4 { next }
match($0, / \[[.kgu]\] /) {
    head = substr($0, 1, RSTART - 1); sym = substr($0, RSTART + RLENGTH)
    sub(/^ +/, "", head); n = split(head, h, " ")
    dso = head; sub(/^[^ ]+ +[^ ]+ +/, "", dso); sub(/ +$/, "", dso)
    sub(/ +$/, "", sym)
    print dso "\t" norm(sym) "\t" h[2]
}' "$T/$n.txt" >"$T/$n.raw"
done
# perf's raw addresses of stripped code are file offsets (map-relative): made ELF addresses with
# the executable segment's (vaddr - offset), then named after the .eh_frame start at or before
# each, as dcpi names them ("S" lines: starts, "D" lines: the offset-to-address delta)
path_of() { awk -F'\t' -v i="$1" '$1 == i { print $5; exit }' "$T/dcpi.tsv"; }
awk -F'\t' '$2 ~ /^0x/ && $1 !~ /^\[/ { print $1 }' "$T/perf.raw" "$T/perf2.raw" | sort -u >"$T/rawimgs"
: >"$T/fdes"
while read -r img; do
    path=$(path_of "$img")
    [ -n "$path" ] && [ -r "$path" ] || continue
    readelf -lW "$path" | awk -v i="$img" '$1 == "LOAD" && $NF ~ /^0x/ && $(NF - 1) ~ /E/ {
        print i "\tD\t" $2 "\t" $3; exit }' >>"$T/fdes"
    readelf --debug-dump=frames "$path" 2>/dev/null |
        awk -v i="$img" '$4 == "FDE" { split($6, r, /[=.]+/); print i "\tS\t" r[2] }' |
        sort -u >>"$T/fdes" # fixed-width hex: sorted as text is sorted by address
done <"$T/rawimgs"
# Names at one address (free and cfree@GLIBC_2.2.5, __memcpy_* and __memmove_*): each tool
# picks one; both are mapped to the first in sort order. Symbols from .dynsym, .symtab and the
# build-id debug file (where the image has one), kallsyms for the kernel.
syms_of() { # PATH: "ADDR TYPE NAME" lines
    local bid dbg
    nm -C -D --defined-only "$1" 2>/dev/null
    nm -C --defined-only "$1" 2>/dev/null
    bid=$(readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
    dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
    [ -n "$bid" ] && [ -r "$dbg" ] && nm -C --defined-only "$dbg" 2>/dev/null
}
: >"$T/aliases"
cut -f1 "$T/perf.raw" "$T/perf2.raw" | sort -u | while read -r img; do
    if [ "$img" = "[kernel.kallsyms]" ]; then
        awk 'NF == 3' /proc/kallsyms
    else
        path=$(path_of "$img")
        [ -n "$path" ] && [ -r "$path" ] && syms_of "$path"
    fi | awk -v i="$img" "$NORM"'
        $2 ~ /^[tTwWi]$/ { n = $0; sub(/^[^ ]+ [^ ]+ /, "", n); sub(/@@.*/, "", n); n = norm(n)
            if (!(($1, n) in seen)) { seen[$1, n] = 1; c[$1]++; nm[$1, c[$1]] = n } }
        END { for (a in c) if (c[a] > 1) { m = nm[a, 1]
                for (j = 2; j <= c[a]; j++) if (nm[a, j] < m) m = nm[a, j]
                for (j = 1; j <= c[a]; j++) if (nm[a, j] != m) print i "\t" nm[a, j] "\t" m } }' >>"$T/aliases"
done
for n in perf perf2; do
    awk -F'\t' '
function hex(s,   i, v) { s = tolower(s); sub(/^0x/, "", s); v = 0
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
    return v }
FILENAME == ARGV[1] { if ($2 == "D") delta[$1] = hex($4) - hex($3); else { n[$1]++; st[$1, n[$1]] = hex($3) } next }
FILENAME == ARGV[2] { al[$1, $2] = $3; next }
{
    if ($2 ~ /^0x/ && ($1 in n)) {
        a = hex($2) + delta[$1]; lo = 1; hi = n[$1]; k = 0
        while (lo <= hi) { mid = int((lo + hi) / 2); if (st[$1, mid] <= a) { k = mid; lo = mid + 1 } else hi = mid - 1 }
        $2 = k ? sprintf("%s+0x%x", $1, st[$1, k]) : "unknown_rou"
    } else if ($2 ~ /^0x/) $2 = "unknown_rou"
    if (($1, $2) in al) $2 = al[$1, $2]
    print $1 "\t" $2 "\t" $3 (NF > 3 ? "\t" $4 "\t" $5 : "")
}' "$T/fdes" "$T/aliases" "$T/$n.raw" >"$T/$n.tsv"
done
awk -F'\t' 'FILENAME == ARGV[1] { al[$1, $2] = $3; next }
    { if (($1, $2) in al) $2 = al[$1, $2]; print $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 }' \
    "$T/aliases" "$T/dcpi.tsv" >"$T/dcpi.canon"
mv "$T/dcpi.canon" "$T/dcpi.tsv"

# ---- overlap per image, per program, overall
echo "== realprogs: $(nproc) CPUs, kernel $(uname -r), cpu-clock ${HZ} Hz (periods: dcpi ${PERIODS[0]} ns, perf ${PERIODS[1]}, perf2 ${PERIODS[2]}), window ${WALL} s (workloads of ${SLICE} s each: xz bzip2 sort python3 sqlite3 gcc perl)"
echo "== dcpi epoch $E; overlap = sum over procedures of min(dcpi share, perf share) within the image"
echo "   (dcpi and two perf record -a ran at once: perf is compared, perf2 is a control)"
echo "== dcpid status at the end of the window (since its start): $DSTAT"
awk -F'\t' '
function ovl(x, y, xi, yi, img, k,   a, b) { a = x[k] / xi[img]; b = y[k] / yi[img]; return a < b ? a : b }
FILENAME == ARGV[1] { n = split($0, f, " "); for (i = 2; i <= n; i++) if (f[i] != "-") { b = f[i]; sub(/.*\//, "", b); want[b] = f[1]; order[++no] = b } next }
FILENAME == ARGV[2] { d[$1 SUBSEP $2] += $3; di[$1] += $3; dt += $3; key[$1 SUBSEP $2] = 1; next }
FILENAME == ARGV[3] { p[$1 SUBSEP $2] += $3; pi[$1] += $3; pt += $3; key[$1 SUBSEP $2] = 1; next }
{ q[$1 SUBSEP $2] += $3; qi[$1] += $3; qt += $3; key[$1 SUBSEP $2] = 1 }
END {
    for (k in key) {
        split(k, kk, SUBSEP); img = kk[1]; np[img]++
        if (di[img] && pi[img]) {
            ov[img] += ovl(d, p, di, pi, img, k)
            r = (d[k] + p[k]) / (di[img] + pi[img])
            e = sqrt(2 / 3.14159265) * sqrt(r * (1 - r) * (1 / di[img] + 1 / pi[img]))
            fl[img] += (e > 2 * r ? 2 * r : e) / 2
        }
        if (pi[img] && qi[img]) ovc[img] += ovl(p, q, pi, qi, img, k)
        a = d[k] / dt; b = p[k] / pt; c = q[k] / qt
        all += (a < b ? a : b); allc += (b < c ? b : c)
        if (img in want) { a = d[k]; b = p[k]; c = q[k]; ps += (a < b ? a : b); psc += (b < c ? b : c) }
    }
    printf "%-8s %-22s %8s %8s %8s %6s %8s %8s %8s\n", "program", "image", "dcpi", "perf", "perf2", "procs", "overlap", "noise", "control"
    for (i = 1; i <= no; i++) {
        img = order[i]
        printf "%-8s %-22s %8d %8d %8d %6d", want[img], img, di[img], pi[img], qi[img], np[img]
        if (di[img] && pi[img]) printf " %7.2f%% %7.2f%%", 100 * ov[img], 100 * (1 - fl[img])
        else printf " %8s %8s", "-", "-"
        if (pi[img] && qi[img]) printf " %7.2f%%\n", 100 * ovc[img]
        else printf " %8s\n", "-"
        if (ov[img] < 0.98 && di[img] >= 100 && pi[img] >= 100) bad[img] = 1
    }
    for (i = 1; i <= no; i++) { sd += di[order[i]]; sp += pi[order[i]]; sq += qi[order[i]] }
    printf "the images above together (samples in common / mean samples): %.2f%% (control %.2f%%)\n", 200 * ps / (sd + sp), 200 * psc / (sp + sq)
    printf "overall, every image (shares of all %d / %d / %d samples): %.2f%% (control %.2f%%)\n", dt, pt, qt, 100 * all, 100 * allc
    printf "(dcpi, perf, perf2: samples in the image; overlap: dcpi against perf; noise: the overlap that\n"
    printf " sampling noise alone leaves between two independent samples of these sizes from one\n"
    printf " distribution (normal approximation); control: perf against perf2, a second perf record)\n"
    for (img in bad) {
        printf "-- %s under 98%% (images of 100 samples or more): largest differences (dcpi%% perf%% perf2%% procedure)\n", img
        m = 0
        for (k in key) { split(k, kk, SUBSEP); if (kk[1] != img) continue
            m++; dd[m] = 100 * d[k] / di[img]; pp[m] = 100 * p[k] / pi[img]; qq[m] = (qi[img] ? 100 * q[k] / qi[img] : 0); nm[m] = kk[2] }
        for (r = 0; r < 6 && r < m; r++) { best = 0
            for (j = 1; j <= m; j++) if (!used[img, j] && (best == 0 || (dd[j] - pp[j]) ^ 2 > (dd[best] - pp[best]) ^ 2)) best = j
            used[img, best] = 1; printf "   %6.2f %6.2f %6.2f  %s\n", dd[best], pp[best], qq[best], nm[best] }
    }
}' "$T/progs" "$T/dcpi.tsv" "$T/perf.tsv" "$T/perf2.tsv"
only() { # A B: the images of A that B has not, with 10 samples or more; the others counted
    awk -F'\t' 'NR == FNR { s[$1] = 1; next } !($1 in s) { n[$1] += $3 }
        END { for (i in n) if (n[i] >= 10) printf "%s %d; ", i, n[i]; else { k++; t += n[i] }
              printf "%d more images with %d samples", k, t }' "$2" "$1"
}
echo "images only dcpi saw: $(only "$T/dcpi.tsv" "$T/perf.tsv")"
echo "images only perf saw: $(only "$T/perf.tsv" "$T/dcpi.tsv")"

# ---- sizes
sz() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
profs=$(find "$DB/$E" -name '*.prof' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
nprofs=$(find "$DB/$E" -name '*.prof' | wc -l)
echo "== sizes (bytes)"
echo "dcpi database, all of it:     $(sz "$DB")  (3 epochs and .symcache)"
echo "  of which DB/.symcache:       $(sz "$DB/.symcache")  (dcpid: the kallsyms snapshot, the symbols of each profiled image)"
echo "dcpi epoch $E:     $(sz "$DB/$E")  (its kallsyms is a hard link into .symcache)"
echo "dcpi .prof files of the epoch: $profs  ($nprofs files)"
echo "perf.data:                     $(sz "$T/perf.data")"
echo "perf build-id cache:           $(sz "$T/buildid")  (copies of the sampled binaries and kallsyms)"

# ---- speed and memory: median of REPS, interleaved
timed() { # OUTFILE CMD...: appends "seconds maxrss_kB"
    local out=$1
    shift
    /usr/bin/time -f '%e %M' -o "$T/time1" "$@" >/dev/null 2>"$T/timed.err" ||
        die "$* failed: $(head -3 "$T/timed.err")"
    tail -1 "$T/time1" >>"$out"
}
PYIMG=$(awk '$1 == "python3" { print $2 }' "$T/progs")
HOT=$(awk -F'\t' -v i="$(basename "$PYIMG")" '$1 == i && $4 !~ /\+0x|^unknown_rou$/ { print $4; exit }' "$T/dcpi.tsv")
[ -n "$HOT" ] || die "no named procedure of $PYIMG in dcpi's profile"
for i in $(seq "$REPS"); do
    timed "$T/t_prof" "$B/dcpiprof" -db "$DB" -epoch "$E"
    timed "$T/t_rep" $PERF report -i "$T/perf.data" --stdio --sort dso,sym
    timed "$T/t_list" "$B/dcpilist" -db "$DB" -epoch "$E" -asm "$HOT" "$PYIMG"
    timed "$T/t_ann" $PERF annotate -i "$T/perf.data" --stdio -s "$HOT"
done
med() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
row() { # LABEL DCPI_FILE PERF_FILE
    local dt dm pt pm
    dt=$(awk '{ print $1 }' "$2" | med) dm=$(awk '{ print $2 }' "$2" | med)
    pt=$(awk '{ print $1 }' "$3" | med) pm=$(awk '{ print $2 }' "$3" | med)
    awk -v l="$1" -v dt="$dt" -v dm="$dm" -v pt="$pt" -v pm="$pm" 'BEGIN {
        printf "%-34s %7.2f s %8d kB | %7.2f s %8d kB | perf/dcpi time %6.1fx RSS %5.1fx\n",
            l, dt, dm, pt, pm, (dt > 0 ? pt / dt : 0), (dm > 0 ? pm / dm : 0) }'
}
echo "== speed and memory (median of $REPS; dcpi | perf)"
row "dcpiprof vs perf report dso,sym" "$T/t_prof" "$T/t_rep"
row "dcpilist -asm vs perf annotate" "$T/t_list" "$T/t_ann"
echo "(procedure listed: $HOT in $PYIMG; $(wc -l <"$T/dcpi.csv") dcpiprof rows, $(wc -l <"$T/perf.txt") perf report rows)"
