# tests/e2e/lib/phased.sh - one check of tests/e2e/values_phased.sh and values_procs.sh (sourced
# after common.sh and stats.sh; needs BIN, T, fail): phased_check MODE runs dcpid's default
# value backend on samples/work-phased MODE, whose measured `div rcx` has a divisor mix that
# depends on where the program is (see its top comment) and which counts its exact truth per
# execution. The run is repeated longer, from the rate seen, until the instruction has at least
# PHASED_NMIN value samples (lib/stats.sh stat_until, up to 16 x the mode's base length in ms of
# the workload's CPU time, phased_ms), then
# every true share must lie within the binomial tolerance of that count (lib/stats.sh).
PHASED_NMIN=${PHASED_NMIN:-1000}
# base lengths by mode, from the rates at -vbudget 8 in the 2-core VM (value samples per s of the
# workload's CPU: callsites ~340, recurse ~940, threads ~900, spawn 300-350 falling to ~140 on a
# loaded machine, brief beside spinners 300-450): 1.3-1.5 x what PHASED_NMIN needs (phased runs
# whole rounds of ~1.5 s of which its div gets ~900: two; brief needs 800); PHASED_MS sets one
# length for all
phased_ms() {
    [ -n "${PHASED_MS:-}" ] && { echo "$PHASED_MS"; return; }
    case $1 in
    callsites) stat_ms 4200 ;; recurse) stat_ms 1600 ;; threads) stat_ms 1600 ;;
    spawn) stat_ms 4000 ;; brief) stat_ms 3000 ;; migrate) stat_ms 1500 ;; *) stat_ms 2500 ;;
    esac
}
# the volume, not the mechanism: which executions an arm takes does not depend on the budget,
# which only sets how often arms come (the default 2% gives ~400 value samples/s here)
PHASED_BUDGET=${PHASED_BUDGET:-8}

# phased_probe: fail unless the binaries the phased tests run are built; skip (77) unless cpu-clock
# sampling and execute breakpoints are available
phased_probe() {
    local f
    for f in dcpid dcpilist samples/work-phased samples/vp-acc.so; do
        [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
    done
    e2e_probe_cpu_clock "perf_event_open for cpu-clock"
    ACC_MNEM=div ACC_VALUE=rcx timeout -k 5 60 "$BIN/dcpid" -db "$T/probe" -event cpu-clock \
        -vtrace "$BIN/samples/vp-acc.so" -- true >"$T/probe.out" 2>&1 ||
        fail "probe run failed: $(cat "$T/probe.out")"
    local log
    log=$(cat "$T"/probe/dcpid-*.log)
    case "$log" in
    *"execute breakpoints unavailable"*)
        e2e_skip "execute breakpoints unavailable: $(grep -o 'unavailable (.*' <<<"$log")" ;;
    *"bp backend"*) ;;
    *) fail "the probe's log names no backend: $log" ;;
    esac
}

phased_proc() {
    case $1 in
    phased) echo ph_div ;; brief) echo br_div ;; callsites) echo cs_div ;; threads) echo th_div ;;
    rare) echo rare_div ;; recurse) echo rec_div ;; spawn) echo sp_div ;; migrate) echo mig_div ;;
    *) fail "unknown work-phased mode $1" ;;
    esac
}

# the measured instruction's listing (migrate's reads its divisor from memory, rcx the same) and
# the value vp-acc reads there (rcx; memval: the memory operand, BPF)
phased_insn() { case $1 in migrate) echo ' div +qword' ;; *) echo ' div +rcx' ;; esac; }
PHASED_VALUE=${PHASED_VALUE:-rcx}

# phased_run SCALE MODE: one run of SCALE x phased_ms MODE; the div's hotlist line in $T/MODE.line
phased_run() {
    local mode=$2 proc line
    proc=$(phased_proc "$mode")
    rm -rf "${T:?}/$mode"
    timeout -k 5 300 "$BIN/dcpid" -db "$T/$mode" -event cpu-clock -vtrace "$BIN/samples/vp-acc.so" \
        -vbudget "$PHASED_BUDGET" \
        -- "$BIN/samples/work-phased" "$mode" $(($(phased_ms "$mode") * $1)) >"$T/$mode.out" 2>"$T/$mode.err" ||
        fail "$mode: dcpid failed: $(cat "$T/$mode.err")"
    grep -q "^truth " "$T/$mode.out" || fail "$mode: no truth line: $(cat "$T/$mode.out")"
    DCPI_PLUGIN_PATH= "$BIN/dcpilist" -db "$T/$mode" -asm -vtrace "$BIN/samples/vp-acc.so" \
        -vshow 8 -vcutoff 0 "$proc" "$BIN/samples/work-phased" >"$T/$mode.list" 2>&1 ||
        fail "$mode: dcpilist: $(cat "$T/$mode.list")"
    line=$(grep -E "$(phased_insn "$mode")" "$T/$mode.list" | awk '$1 ~ /^[0-9]+$/ && /\(/' | head -1)
    [ -n "$line" ] || fail "$mode: no hotlist for the div: $(cat "$T/$mode.list")"
    echo "$line" >"$T/$mode.line"
}
phased_count() { vtot "$(cat "$T/$1.line")"; }

phased_check() {
    local mode=$1 line n t lab val pct got
    export ACC_MNEM=div ACC_VALUE=$PHASED_VALUE
    stat_until "$PHASED_NMIN" 16 phased_run phased_count "$mode"
    line=$(cat "$T/$mode.line")
    n=$(vtot "$line")
    echo "$mode: $(grep -h 'bp backend: [0-9]' "$T/$mode"/dcpid-*.log | sed 's/.*info: //')"
    stat_min "$mode value samples" "$n" "$PHASED_NMIN" || fail "$mode: too few: $line"
    for t in $(sed -n 's/^truth //p' "$T/$mode.out"); do
        lab=${t%%=*} val=${t#*=} pct=${val#*:} val=${val%%:*}
        got=$(grep -o "([0-9.]*% $val)" <<<"$line" | tr -d '(%)' | awk '{print $1}' | head -1)
        stat_share "$mode divisor $lab" "${got:-0}" "$pct" "$n" || fail "$mode: $line"
    done
}
