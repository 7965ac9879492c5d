#!/bin/sh
# make demo: profile the bundled workload (samples/work-demo.c: hot_mul ~60%, hot_add ~30%,
# hot_xor ~10% of its work) with dcpid, then print dcpiprof's breakdown by image and by procedure.
# Usage: demo.sh BUILD_DIR
set -eu
B=$(cd "${1:-build}" && pwd)
DB=$(mktemp -d /tmp/dcpi-demo.XXXXXX)
echo "== dcpid -db $DB -- work-demo 2000   (2 s of CPU-bound work, sampled at 1 kHz)"
if ! "$B/dcpid" -db "$DB" -- "$B/samples/work-demo" 2000; then
    echo "demo: dcpid failed (see the message above)" >&2
    exit 1
fi
echo
echo "== dcpiprof -i   (by image)"
"$B/dcpiprof" -db "$DB" -i
echo
echo "== dcpiprof      (by procedure)"
"$B/dcpiprof" -db "$DB" -keep 99
echo
echo "The database is in $DB (dcpicat $DB/*/*/work-demo_*/cpu-clock.prof shows the raw profile)."
