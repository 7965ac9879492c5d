#!/bin/bash
# reliab_disk.sh - a full disk during a flush. The database is a 256 MB tmpfs (the log is kept
# outside it; system-wide, the database also holds the build-id code cache, DB/.codecache:
# copies of the sampled binaries, 12 MB here for the normal build's, more for an ASan build's
# and for compilers running beside it; 4 and 32 MB filled up). After one good flush the tmpfs
# is filled up; a workload runs; the next flush must fail with ENOSPC shown by dcpictl (exit
# 1), logged, and in `dcpictl status` as "last flush error"; the profile written before must be
# byte-identical; no temporary file may be left. Then space is freed and a flush must write everything kept in memory: the sum of the
# epoch's profile totals is at least the sample count status reported while the disk was full
# (minus lost), and work-demo's profile grew by the run made while it was full.
# Needs root (mount) and system-wide perf sampling: skips (77) otherwise.
set -u
export LC_ALL=C
BIN=${DCPI_BIN:?DCPI_BIN not set}
DEMO=$BIN/samples/work-demo
T=$(mktemp -d /tmp/dcpi-e2e-disk.XXXXXX)
M=$T/mnt
DB=$M/db
cleanup() {
    for l in "$DB"/dcpid-*.lock; do [ -f "$l" ] && kill -9 "$(cat "$l")" 2>/dev/null; done
    sleep 0.2
    mountpoint -q "$M" && umount "$M"
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
to() { timeout -k 5 "$@"; }
total() { "$BIN/dcpicat" "$1" | awk '$1 == "event" { print $2; exit }'; }
epoch_sum() { # the sum of every profile total of the epoch
    local s=0 f
    while IFS= read -r f; do s=$((s + $(total "$f"))); done < <(find "$DB/$1" -name '*.prof')
    echo $s
}
samples() { echo "$1" | awk '$1 == "event" { s += $6; l += $8 } END { print s - l }'; }

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a tmpfs"; exit 77; }
for f in dcpid dcpictl dcpicat samples/work-demo; do
    [ -x "$BIN/$f" ] || fail "$BIN/$f not built"
done
mkdir "$M"
mount -t tmpfs -o size=256m tmpfs "$M" 2>"$T/mount.err" ||
    { echo "SKIP: cannot mount a tmpfs here: $(cat "$T/mount.err")"; exit 77; }
out=$(to 30 "$BIN/dcpid" -db "$DB" -event cpu-clock -flush 600 -log "$T/dcpid.log" 2>&1)
if [ $? -ne 0 ]; then
    case "$out" in
    *perf_event_open*|*not\ supported*|*Permission*)
        echo "SKIP: system-wide perf sampling is not possible here: $out"; exit 77 ;;
    esac
    fail "dcpid did not start: $out"
fi
ST=$(to 70 "$BIN/dcpictl" -db "$DB" status) || fail "status: $ST"
E=$(echo "$ST" | awk '$1 == "epoch" { print $2 }')
PLAT=$(echo "$ST" | awk '$1 == "platform" { print $2 }')
ID=$(readelf -n "$DEMO" 2>/dev/null | awk '/Build ID:/ { print $3 }')

# ---- a good flush ----
to 30 "$DEMO" 300 >/dev/null 2>&1
to 70 "$BIN/dcpictl" -db "$DB" flush >/dev/null || fail "first flush failed"
P=$(ls "$DB/$E/$PLAT"/work-demo_${ID}*/cpu-clock.prof 2>/dev/null | head -1)
[ -n "$P" ] || fail "no work-demo profile after the first flush"
cp "$P" "$T/before.prof"
N0=$(total "$P")

# ---- fill the disk, run, flush ----
dd if=/dev/zero of="$M/fill" bs=16k 2>/dev/null
df -k "$M" | awk 'NR == 2 && $4 > 16 { exit 1 }' || fail "the tmpfs is not full: $(df -k "$M")"
to 30 "$DEMO" 300 >/dev/null 2>&1
out=$(to 70 "$BIN/dcpictl" -db "$DB" flush 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "No space left on device" ||
    fail "flush on a full disk: exit $rc, '$out'"
ST=$(to 70 "$BIN/dcpictl" -db "$DB" status) || fail "status after ENOSPC: $ST"
echo "$ST" | grep -q "^last flush error: .*No space left on device" || fail "status: $ST"
grep -q "flush: .*No space left on device" "$T/dcpid.log" || fail "log: $(tail -5 "$T/dcpid.log")"
cmp -s "$P" "$T/before.prof" || fail "the old profile changed during the failed flush"
[ -z "$(find "$DB" -name '.*.tmp.*')" ] || fail "temporary files left: $(find "$DB" -name '.*.tmp.*')"
SFULL=$(samples "$ST")
echo "ok full disk: '$out'; $(echo "$ST" | grep '^last flush error'); old profile intact"

# ---- free the space, flush again ----
rm -f "$M/fill"
out=$(to 70 "$BIN/dcpictl" -db "$DB" flush 2>&1) ||
    fail "flush after freeing space: $out ($(df -k "$M" | tail -1), $(find "$DB" -name '*.prof' | wc -l) profiles)"
N1=$(total "$P")
SUM=$(epoch_sum "$E")
[ "$N1" -gt $((N0 + 100)) ] || fail "work-demo: $N0 samples before, $N1 after (its 300 ms run while full is missing)"
[ "$SUM" -ge "$SFULL" ] || fail "the epoch holds $SUM samples, status counted $SFULL (not lost) while the disk was full"
echo "ok space back: '$out'; work-demo $N0 -> $N1; epoch total $SUM >= $SFULL counted while full"
to 70 "$BIN/dcpictl" -db "$DB" quit >/dev/null
exit 0
