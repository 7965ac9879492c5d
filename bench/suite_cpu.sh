#!/bin/bash
# bench/suite_cpu.sh - the CPU time of each test of the suite, not only its wall time: on a shared
# or loaded machine the wall time says little, the CPU time (user + system, of the test and of
# every process it started, daemons included) is what the suite costs. Runs the tests ctest
# would run (same commands, environment and working directory, from ctest --show-only=json-v1),
# JOBS at a time, the highest COST first, each in its own cpuacct cgroup (v1, root), and prints
#   cpu_s  sys_s  wall_s  result  test  (sys_s: the system part of cpu_s)
# sorted by CPU time, then the totals. Needs root, jq and a cgroup v1 cpuacct hierarchy.
#   bench/suite_cpu.sh BUILD_DIR [JOBS (default 2)] [CTEST SELECTION ARGS, e.g. -LE 'once|soak']
set -u
B=$(cd "${1:?usage: suite_cpu.sh BUILD_DIR [JOBS] [CTEST ARGS...]}" && pwd)
JOBS=${2:-2}
shift $(($# >= 2 ? 2 : 1))
CG=/sys/fs/cgroup/cpuacct
[ "$(id -u)" = 0 ] || { echo "suite_cpu.sh: needs root (cgroups)" >&2; exit 1; }
[ -w "$CG" ] || { echo "suite_cpu.sh: no cgroup v1 cpuacct hierarchy at $CG" >&2; exit 1; }
command -v jq >/dev/null || { echo "suite_cpu.sh: jq missing (Debian package jq)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/suite-cpu.XXXXXX)
ROOT=$CG/dcpi-suite.$$
mkdir "$ROOT"
trap 'for d in "$ROOT"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done; rmdir "$ROOT" 2>/dev/null' EXIT

# one line per test: COST NAME, and OUT/NAME.sh running it
(cd "$B" && ctest --show-only=json-v1 "$@") | jq -r '
    .tests[] | . as $t
    | ([.properties[]? | select(.name == "COST") | .value] | first // 0) as $cost
    | ([.properties[]? | select(.name == "WORKING_DIRECTORY") | .value] | first // ".") as $wd
    | ([.properties[]? | select(.name == "ENVIRONMENT") | .value[]] // []) as $env
    | "\($cost)\t\($t.name)\t\($wd)\t\($env | map(@sh) | join(" "))\t\($t.command | map(@sh) | join(" "))"' |
    sort -t"$(printf '\t')" -k1,1nr >"$OUT/list"
while IFS=$'\t' read -r _ name wd env cmd; do
    printf 'cd %q && exec env %s %s\n' "$wd" "$env" "$cmd" >"$OUT/$name.sh"
done <"$OUT/list"

one() { # NAME: run it in its own cgroup; OUT/NAME.res: cpu_s wall_s result
    local name=$1 cg=$ROOT/$1 t0 t1 rc res
    mkdir "$cg"
    t0=$(date +%s%N)
    bash -c 'echo $$ >"$1/tasks"; exec bash "$2"' _ "$cg" "$OUT/$name.sh" >"$OUT/$name.log" 2>&1
    rc=$?
    t1=$(date +%s%N)
    case $rc in 0) res=pass ;; 77) res=skip ;; *) res="fail($rc)" ;; esac
    for _ in 1 2 3 4 5; do # what it left running (daemons) goes too
        [ -s "$cg/tasks" ] || break
        xargs -r kill -9 <"$cg/tasks" 2>/dev/null
        sleep 0.2
    done
    awk -v u="$(cat "$cg/cpuacct.usage")" -v w=$((t1 - t0)) -v r="$res" -v n="$name" \
        -v s="$(awk '$1 == "system" { print $2 }' "$cg/cpuacct.stat")" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%7.1f %7.1f %7.1f  %-8s %s\n", u / 1e9, s / hz, w / 1e9, r, n }' >"$OUT/$name.res"
    rmdir "$cg" 2>/dev/null
}
export -f one
export ROOT OUT
t0=$(date +%s)
cut -f2 "$OUT/list" | xargs -P "$JOBS" -I{} bash -c 'one "$1"' _ {}
wall=$(($(date +%s) - t0))
echo "  cpu_s   sys_s  wall_s  result   test"
cat "$OUT"/*.res | sort -rn
awk -v w="$wall" '{ c += $1; y += $2 } END { printf "total: %.1f s CPU (%.1f s system) in %d tests, %d s wall (-j '"$JOBS"')\n", c, y, NR, w }' "$OUT"/*.res
echo "logs: $OUT"
