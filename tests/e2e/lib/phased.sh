# tests/e2e/lib/phased.sh - one check of tests/e2e/values_phased.sh, values_procs.sh and
# values_migrate.sh (sourced after common.sh and stats.sh; needs BIN, T, fail): phased_check MODE
# runs a value backend (PHASED_BACKEND: inproc, dcpid's default for a command that takes the
# agent, at its default -vbudget; bp, with -vbp at -vbudget PHASED_BUDGET) on samples/work-phased
# MODE, whose measured `div rcx` has a divisor mix that depends on where the program is (see its
# top comment) and which counts its exact truth per execution. Runs are added into new epochs,
# each as long as the rate seen says the missing samples need, until the instruction has at least
# PHASED_NMIN value samples over all of them (lib/stats.sh stat_topup, up to 16 x the mode's base
# length in ms of the workload's CPU time, phased_ms; a short run is topped up, not redone; threads
# and migrate, whose truth differs from run to run, are run again from scratch, longer:
# stat_until), then
# every true share must lie within the tolerance of that count and of the hotlist's own bound
# (stat_share_line, lib/stats.sh: an arm's hits are one cluster).
PHASED_NMIN=${PHASED_NMIN:-1000}
PHASED_BACKEND=${PHASED_BACKEND:-inproc}
# base lengths by mode, 1.3-1.5 x what PHASED_NMIN needs (phased runs whole rounds of ~1.6 s of
# CPU: two); PHASED_MS sets one length for all. inproc at 2%, from the rates in the
# 2-core VM (value samples per ms of the workload's CPU argument: phased ~0.65, callsites ~0.29,
# recurse ~0.59, threads ~0.75, spawn ~0.24, brief ~0.37 (needs 800), migrate ~0.66); bp at
# -vbudget 8 (callsites ~340/s, recurse ~940, threads ~900, spawn 300-350 falling to ~140 on a
# loaded machine, brief beside spinners 300-450)
phased_ms() {
    [ -n "${PHASED_MS:-}" ] && { echo "$PHASED_MS"; return; }
    if [ "$PHASED_BACKEND" = bp ]; then
        case $1 in
        callsites) stat_ms 4200 ;; recurse) stat_ms 1600 ;; threads) stat_ms 1600 ;;
        spawn) stat_ms 4000 ;; brief) stat_ms 3000 ;; migrate) stat_ms 1500 ;; *) stat_ms 2500 ;;
        esac
        return
    fi
    case $1 in # 1.3 x what NMIN needs at 4% (stop 31, with the arm window: callsites 0.40,
    # recurse 0.73, brief 0.47, threads 0.70, spawn 0.26, migrate 0.68 value samples a ms; under
    # make test at stop 32 migrate gave 0.39-0.48, so 2700 ms)
    callsites) stat_ms 3200 ;; recurse) stat_ms 1800 ;; threads) stat_ms 1900 ;;
    spawn) stat_ms 5100 ;; brief) stat_ms 2200 ;; migrate) stat_ms 2700 ;; *) stat_ms 2500 ;;
    esac
}
# the bp backend's budget: the volume, not the mechanism (which executions an arm takes does not
# depend on it, only how often arms come: its default 1% gives ~150 value samples/s here); the
# inproc backend at 4% (four times its default 1%: the volume, not the mechanism; the base lengths
# above are half those measured at 2%) unless PHASED_BUDGET is set
PHASED_BUDGET=${PHASED_BUDGET:-}
phased_args() {
    case $PHASED_BACKEND in
    bp) echo -vbp -vbudget "${PHASED_BUDGET:-8}" ;;
    inproc) echo -vbudget "${PHASED_BUDGET:-4}" ;;
    *) fail "unknown PHASED_BACKEND $PHASED_BACKEND" ;;
    esac
}

# phased_probe [BACKEND...]: fail unless the binaries the phased tests run are built; skip (77)
# unless cpu-clock sampling and execute breakpoints are available; then, for each BACKEND (default
# PHASED_BACKEND), a probe run that must log it: inproc (no flag: dcpid's default backend for a
# command that takes the agent, which the build makes) or bp (-vbp); its log in $T/probe-BACKEND
phased_probe() {
    local f be log
    for f in dcpid dcpilist samples/work-phased samples/vp-acc.so libdcpi-agent.so; do
        [ -e "$BIN/$f" ] || fail "$BIN/$f not built"
    done
    e2e_probe_cpu_clock "perf_event_open for cpu-clock"
    for be in "${@:-$PHASED_BACKEND}"; do
        local flag=()
        [ "$be" = bp ] && flag=(-vbp)
        ACC_MNEM=div ACC_VALUE=rcx timeout -k 5 60 "$BIN/dcpid" -db "$T/probe-$be" -event cpu-clock \
            -vtrace "$BIN/samples/vp-acc.so" "${flag[@]}" -- true >"$T/probe-$be.out" 2>&1 ||
            fail "probe run ($be) failed: $(cat "$T/probe-$be.out")"
        log=$(cat "$T"/probe-"$be"/dcpid-*.log)
        case "$log" in
        *"execute breakpoints unavailable"*)
            e2e_skip "execute breakpoints unavailable: $(grep -o 'unavailable (.*' <<<"$log")" ;;
        *"value profiling: 1 plugins, $be backend"*) ;;
        *) fail "the probe (${flag[*]:-no flag}) does not run the $be backend: $(grep -E 'backend|value profiling' <<<"$log")" ;;
        esac
        [ "$be" = inproc ] && echo "ok: the default value backend for a command is inproc: $(grep -o 'value profiling: .*backend' <<<"$log")"
    done
    return 0
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

# phased_run MS MODE: one run of MS ms of the workload into a new epoch of $T/MODE (the runs of
# one phased_check add up: lib/stats.sh stat_topup); the div's hotlist line over every epoch in
# $T/MODE.line; every run's truth line must be the same (the mixes are the workload's structure,
# not its length)
phased_run() {
    local mode=$2 proc line
    proc=$(phased_proc "$mode")
    e2e_after_epoch "$T/$mode"
    timeout -k 5 300 "$BIN/dcpid" -db "$T/$mode" -event cpu-clock -vtrace "$BIN/samples/vp-acc.so" \
        $(phased_args) -- "$BIN/samples/work-phased" "$mode" "$1" >>"$T/$mode.out" 2>"$T/$mode.err" ||
        fail "$mode: dcpid failed: $(cat "$T/$mode.err")"
    grep -q "^truth " "$T/$mode.out" || fail "$mode: no truth line: $(cat "$T/$mode.out")"
    [ "$(grep "^truth " "$T/$mode.out" | sort -u | wc -l)" -eq 1 ] ||
        fail "$mode: the runs' truths differ: $(grep "^truth " "$T/$mode.out" | sort -u)"
    DCPI_PLUGIN_PATH= "$BIN/dcpilist" -db "$T/$mode" -epoch all -asm -vtrace "$BIN/samples/vp-acc.so" \
        -vshow 8 -vcutoff 0 "$proc" "$BIN/samples/work-phased" >"$T/$mode.list" 2>&1 ||
        fail "$mode: dcpilist: $(cat "$T/$mode.list")"
    line=$(grep -E "$(phased_insn "$mode")" "$T/$mode.list" | awk '$1 ~ /^[0-9]+$/ && /\(/' | head -1)
    [ -n "$line" ] || fail "$mode: no hotlist for the div: $(cat "$T/$mode.list")"
    grep -q "^vp-acc: backend $PHASED_BACKEND (" "$T/$mode.list" ||
        fail "$mode: no 'backend $PHASED_BACKEND' footer: $(tail -3 "$T/$mode.list")"
    echo "$line" >"$T/$mode.line"
}
phased_count() { vtot "$(cat "$T/$1.line")"; }
# phased_run_scale SCALE MODE: one run of SCALE x phased_ms MODE from scratch, for the modes
# whose truth depends on how the threads ran (threads, migrate: runs of them cannot be pooled
# against one truth)
phased_run_scale() {
    rm -rf "${T:?}/$2" "$T/$2.out"
    phased_run $(($(phased_ms "$2") * $1)) "$2"
}

phased_check() {
    local mode=$1 line n t lab val pct got
    export ACC_MNEM=div ACC_VALUE=$PHASED_VALUE
    rm -rf "${T:?}/$mode" "$T/$mode.out"
    case $mode in
    threads | migrate) stat_until "$PHASED_NMIN" 16 phased_run_scale phased_count "$mode" ;;
    *) STAT_TOPUP_MAX=16 stat_topup "$PHASED_NMIN" "$(phased_ms "$mode")" phased_run phased_count "$mode" ;;
    esac
    line=$(cat "$T/$mode.line")
    n=$(vtot "$line")
    echo "$mode: $(grep -h "$PHASED_BACKEND backend: [0-9]" "$T/$mode"/dcpid-*.log | sed 's/.*info: //')"
    stat_min "$mode value samples ($PHASED_BACKEND)" "$n" "$PHASED_NMIN" || fail "$mode: too few: $line"
    for t in $(sed -n 's/^truth //p' "$T/$mode.out"); do
        lab=${t%%=*} val=${t#*=} pct=${val#*:} val=${val%%:*}
        got=$(grep -o "([0-9.]*% $val)" <<<"$line" | tr -d '(%)' | awk '{print $1}' | head -1)
        stat_share_line "$mode divisor $lab ($PHASED_BACKEND)" "${got:-0}" "$pct" "$line" ||
            fail "$mode: $line"
    done
}
