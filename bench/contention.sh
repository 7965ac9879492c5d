#!/bin/bash
# bench/contention.sh - value shares under a competing load, run by run and pooled (issue 29
# item 4): REPS runs of each work-phased MODE at dcpid's defaults (the inproc backend for a
# command; DCPID_FLAGS="-vbp" for the bp backend) beside `stress-ng --cpu N` started once for the
# whole bench, each divisor's share of the measured div (vp-acc, dcpilist) against the truth the
# workload counted; per run z = (share - truth) / sqrt(truth (1 - truth) / n), n the hotlist's
# independent samples for that share (tests/e2e/lib/stats.sh stat_n_line: its vtot, or fewer
# when its +-B says so: the inproc backend's value samples come in clusters, one an arm); per
# mode the
# pooled share over all runs (value samples summed) with its z, the largest |z| of a run, and
# Pearson's chi2 of the runs' counts against the truth (sum over runs and divisors of
# n (share - truth)^2 / truth, dof = runs x (divisors - 1); the pooled share's z from the runs'
# variances, each truth (1 - truth) / n over its n above): the runs agree with chance when
# chi2 is near its dof. ROWS=FILE keeps every run's rows (mode run n divisor truth share).
# Usage: bench/contention.sh [BUILD_DIR] [REPS (20)] [STRESS_CPUS (2)] [MODES...]
#   default MODES: phased callsites threads spawn migrate
set -u
B=$(cd "${1:-build}" && pwd)
REPS=${2:-20}
NS=${3:-2}
shift 3 2>/dev/null || shift $#
MODES=${*:-phased callsites threads spawn migrate}
T=$(mktemp -d /tmp/dcpi-contention.XXXXXX)
SP=
trap '[ -n "$SP" ] && kill $SP 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fail() { echo "contention: $*" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib/stats.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../tests/e2e/lib/phased.sh"
command -v stress-ng >/dev/null || fail "stress-ng is not installed (apt-get install stress-ng)"
stress-ng --cpu "$NS" --timeout 7200 >/dev/null 2>&1 &
SP=$!
export ACC_MNEM=div ACC_VALUE=rcx
ms_of() { case $1 in callsites) echo 4000 ;; spawn) echo 5000 ;; threads) echo 2500 ;; *) echo 3000 ;; esac; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); stress-ng --cpu $NS; flags: ${DCPID_FLAGS:-(defaults)}"
for mode in $MODES; do
    proc=$(phased_proc "$mode")
    : >"$T/$mode.rows"
    for r in $(seq "$REPS"); do
        rm -rf "$T/db"
        # shellcheck disable=SC2086
        "$B/dcpid" -db "$T/db" -event cpu-clock -vtrace "$B/samples/vp-acc.so" ${DCPID_FLAGS:-} \
            -- "$B/samples/work-phased" "$mode" "$(ms_of "$mode")" >"$T/out" 2>"$T/err" ||
            fail "$mode run $r: dcpid failed: $(tail -3 "$T/err")"
        DCPI_PLUGIN_PATH= "$B/dcpilist" -db "$T/db" -asm -vtrace "$B/samples/vp-acc.so" -vshow 8 \
            -vcutoff 0 "$proc" "$B/samples/work-phased" >"$T/list" 2>&1
        line=$(grep -E "$(phased_insn "$mode")" "$T/list" | awk '$1 ~ /^[0-9]+$/ && /\(/' | head -1)
        n=$(vtot "$line")
        # one row per divisor: mode run n divisor truth share
        for t in $(sed -n 's/^truth //p' "$T/out"); do
            val=${t#*=} pct=${val#*:} val=${val%%:*}
            got=$(grep -o "([0-9.]*% $val)" <<<"$line" | tr -d '(%)' | awk '{print $1}' | head -1)
            echo "$mode $r ${n:-0} $val $pct ${got:-0} $(stat_n_line "$line" "$pct")" >>"$T/$mode.rows"
        done
    done
    [ -n "${ROWS:-}" ] && cat "$T/$mode.rows" >>"$ROWS"
    awk -v mode="$mode" -v reps="$REPS" '
        { n = $3; tr = $5 / 100; sh = $6 / 100; e = $7 + 0
          if (n > 0 && e > 0 && tr > 0 && tr < 1) {
              z = (sh - tr) / sqrt(tr * (1 - tr) / e); chi += e * (sh - tr) ^ 2 / tr
              if (z < 0) z = -z
              if (z > maxz) maxz = z; k++
              V[$4] += n * n * tr * (1 - tr) / e }
          N[$4] += n; S[$4] += sh * n; TR[$4] = tr; if (!($2 in seen)) { seen[$2] = 1; tot += n } }
        END {
            ndiv = length(TR); printf "%-10s runs %d, value samples %d (%.0f a run); ", mode, reps, tot, tot / reps
            for (v in TR) { p = S[v] / N[v]; z = (p - TR[v]) / sqrt(V[v] / (N[v] * N[v]))
                printf "%s %.2f%% for %.2f%% (z %+.2f)  ", v, 100 * p, 100 * TR[v], z }
            printf "; max run |z| %.2f, chi2 %.1f on %d dof\n", maxz, chi, reps * (ndiv - 1)
        }' "$T/$mode.rows"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
