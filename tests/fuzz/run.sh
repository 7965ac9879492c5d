#!/bin/sh
# tests/fuzz/run.sh - runs every libFuzzer harness of a fuzz build (cmake -DDCPI_FUZZ=ON with
# clang) for SECONDS each, one at a time. Each harness first replays its regression inputs
# (tests/fuzz/regress/<name>/) and seed corpus, then fuzzes a temporary copy of the corpus
# (the repository is never modified). Prints one line per harness:
#   harness  execs  exec/s  result
# and exits non-zero when any harness crashed, leaked or broke a property; crash inputs are
# kept in FUZZ_ARTIFACTS (default BUILD_FUZZ_DIR/fuzz-artifacts/<name>/) to be added to
# regress/<name>/ once understood. Extra arguments after SECONDS name the harnesses to run
# (default: all). FUZZ_FLAGS adds libFuzzer flags (e.g. FUZZ_FLAGS=-jobs=2).
# Usage: tests/fuzz/run.sh BUILD_FUZZ_DIR SECONDS [NAME...]
set -u
build=${1:?usage: run.sh BUILD_FUZZ_DIR SECONDS [NAME...]}
seconds=${2:?usage: run.sh BUILD_FUZZ_DIR SECONDS [NAME...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
artifacts=${FUZZ_ARTIFACTS:-$build/fuzz-artifacts}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

if [ $# -eq 0 ]; then
    for bin in "$build"/fuzz/fuzz_*; do
        [ -x "$bin" ] && set -- "$@" "$(basename "$bin" | sed 's/^fuzz_//')"
    done
fi
if [ $# -eq 0 ]; then
    echo "run.sh: no harness in $build/fuzz (configure with -DDCPI_FUZZ=ON and build them)" >&2
    exit 2
fi

# stat NAME LOG: the value of libFuzzer's final "stat::NAME:" line, or 0.
stat() {
    v=$(sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$2" | tail -n 1)
    echo "${v:-0}"
}

failed=0
printf '%-10s %12s %8s  %s\n' harness execs exec/s result
for name in "$@"; do
    bin=$build/fuzz/fuzz_$name
    log=$work/$name.log
    mkdir -p "$work/$name" "$artifacts/$name"
    if [ ! -x "$bin" ]; then
        printf '%-10s %12s %8s  %s\n' "$name" - - "MISSING ($bin)"
        failed=1
        continue
    fi
    [ -d "$here/corpus/$name" ] && cp -R "$here/corpus/$name/." "$work/$name/"
    seeds=
    [ -d "$here/regress/$name" ] && seeds=$here/regress/$name
    result=ok
    # Known crash inputs first, each run once (a fixed regression must stay fixed).
    if [ -n "$seeds" ] && ls "$seeds"/* >/dev/null 2>&1; then
        if ! "$bin" -runs=1 "$seeds"/* >"$log.regress" 2>&1; then
            result="REGRESSION (see $artifacts/$name/regress.log)"
            cp "$log.regress" "$artifacts/$name/regress.log"
        fi
    fi
    # shellcheck disable=SC2086
    "$bin" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$name/" ${FUZZ_FLAGS:-} "$work/$name" $seeds >"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        result="CRASH rc=$rc ${crash:-} (log: $artifacts/$name/fuzz.log)"
        cp "$log" "$artifacts/$name/fuzz.log"
    fi
    case $result in ok) ;; *) failed=1 ;; esac
    printf '%-10s %12s %8s  %s\n' "$name" "$(stat number_of_executed_units "$log")" \
        "$(stat average_exec_per_sec "$log")" "$result"
done
exit $failed
