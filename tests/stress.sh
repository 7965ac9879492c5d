#!/bin/bash
# tests/stress.sh - make test-stress: the soak tests once (e2e_fuzz_regress, e2e_reliab_kill with
# RELIAB_KILLS=100), then the timing-sensitive tests (ctest label "timing": sampling
# shares, value hotlists, step bursts, plugin watchdogs, SIGKILL timing) run REPS times each
# under a competing CPU load on every core (stress-ng --cpu N), every second repetition at a
# second sampling rate (DCPI_TEST_FREQ, read by the statistical e2e scripts), then a flake table:
# test, runs, failures. Failing outputs are kept in BUILD/stress/. Exit 1 when anything failed.
#   tests/stress.sh BUILD_DIR [REPS (default 20)] [SECOND_FREQ (default 1000)]
set -u
B=$(cd "${1:?usage: stress.sh BUILD_DIR [REPS] [FREQ]}" && pwd)
REPS=${2:-20}
FREQ2=${3:-1000}
OUT=$B/stress
rm -rf "$OUT"
mkdir -p "$OUT"
command -v stress-ng >/dev/null || { echo "stress.sh: stress-ng is not installed"; exit 1; }
ncpu=$(nproc)
stress-ng --cpu "$ncpu" --cpu-method all --quiet &
SPID=$!
CPID=
# on exit or interruption: the load and the running repetition's whole process group go too
trap '[ -n "$CPID" ] && kill -- -"$CPID" 2>/dev/null; kill "$SPID" 2>/dev/null; wait 2>/dev/null' EXIT
trap 'exit 130' INT TERM
echo "stress: $REPS repetitions of the timing tests, stress-ng --cpu $ncpu running," \
    "odd repetitions at DCPI_TEST_FREQ=$FREQ2"
t0=$(date +%s)
# the soak tests first, once (under the load too): e2e_fuzz_regress (label soak) and
# e2e_reliab_kill at 100 kills (make test runs it until 6 kills landed during a flush);
# STRESS_SOAK=0 leaves them out (the timing repetitions only)
[ "${STRESS_SOAK:-1}" = 0 ] || (cd "$B" && RELIAB_KILLS=${RELIAB_KILLS:-100} exec setsid ctest -R '^e2e_reliab_kill$|^e2e_fuzz_regress$' \
    --output-on-failure >"$OUT/soak.log" 2>&1) &
CPID=$!
wait "$CPID"
CPID=
[ "${STRESS_SOAK:-1}" = 0 ] || awk '/Test +#[0-9]+: / {
        for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1)
        st = /Passed/ ? "pass" : /Not Run|Skipped/ ? "skip" : "fail"
        print "soak", name, st }' "$OUT/soak.log" >>"$OUT/results"
[ "${STRESS_SOAK:-1}" = 0 ] || echo "soak: $(grep -c ' fail$' "$OUT/results") failed ($(($(date +%s) - t0)) s)"
for r in $(seq "$REPS"); do
    if [ $((r % 2)) = 1 ]; then freq=$FREQ2; else freq=; fi
    (cd "$B" && DCPI_TEST_FREQ=$freq exec setsid ctest -L timing -j "$ncpu" \
        --output-on-failure >"$OUT/rep$r.log" 2>&1) &
    CPID=$!
    wait "$CPID"
    CPID=
    awk -v r="$r" '/Test +#[0-9]+: / {
            for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1)
            st = /Passed/ ? "pass" : /Not Run|Skipped/ ? "skip" : "fail"
            print r, name, st }' "$OUT/rep$r.log" >>"$OUT/results"
    nf=$(awk -v r="$r" '$1 == r && $3 == "fail"' "$OUT/results" | wc -l)
    echo "repetition $r/$REPS${freq:+ (DCPI_TEST_FREQ=$freq)}: $nf failed ($(($(date +%s) - t0)) s)"
done
echo
printf '%-28s %5s %8s %8s\n' test runs failures skipped
awk '{ runs[$2]++; if ($3 == "fail") f[$2]++; if ($3 == "skip") s[$2]++ }
     END { for (t in runs) printf "%-28s %5d %8d %8d\n", t, runs[t], f[t], s[t] }' \
    "$OUT/results" | sort
tot=$(awk '$3 == "fail"' "$OUT/results" | wc -l)
echo "total failures: $tot (logs: $OUT/rep*.log), $(($(date +%s) - t0)) s"
[ "$tot" -eq 0 ]
