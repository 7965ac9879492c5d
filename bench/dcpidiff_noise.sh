#!/bin/bash
# dcpidiff_noise.sh - how often dcpidiff calls a difference significant between two runs of an
# identical workload (samples/work-diff 1, twice), at its default level (0.001, Benjamini-
# Hochberg): PAIRS pairs (default 20), each compared over the program's image and over the whole
# profile; prints one line per pair and the count of pairs with no significant row.
#   bench/dcpidiff_noise.sh BUILD_DIR [PAIRS]
set -u
B=${1:?usage: dcpidiff_noise.sh BUILD_DIR [PAIRS]}
PAIRS=${2:-20}
T=$(mktemp -d /tmp/dcpidiff-noise.XXXXXX)
trap 'rm -rf "$T"' EXIT
clean_img=0 clean_all=0
for i in $(seq "$PAIRS"); do
    for s in a b; do
        "$B/dcpid" -db "$T/$s$i" -freq 4000 -event cpu-clock -- "$B/samples/work-diff" 1 600 \
            >/dev/null 2>&1 || { echo "dcpid failed"; exit 1; }
    done
    "$B/dcpidiff" -csl "$T/a$i" "$T/b$i" work-diff >"$T/img" || exit 1
    "$B/dcpidiff" -csl "$T/a$i" "$T/b$i" >"$T/all" || exit 1
    si=$(($(wc -l <"$T/img") - 1)) sa=$(($(wc -l <"$T/all") - 1))
    [ $si = 0 ] && clean_img=$((clean_img + 1))
    [ $sa = 0 ] && clean_all=$((clean_all + 1))
    echo "pair $i: significant rows: program $si, whole profile $sa$([ $sa != 0 ] && echo ": $(tail -n +2 "$T/all" | tr '\n' ' ')")"
    rm -rf "$T/a$i" "$T/b$i"
done
echo "no significant row: program image $clean_img of $PAIRS pairs, whole profile $clean_all of $PAIRS"
