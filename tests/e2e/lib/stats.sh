# tests/e2e/lib/stats.sh - statistical assertions for the e2e scripts (sourced, like common.sh).
#
# A share read from sampled data is a binomial estimate: its noise depends on the number of
# samples behind it, not on the machine. Every check here first asserts a minimum sample count,
# then accepts a deviation of at most
#     tol = STAT_Z * sqrt(p (1 - p) / n) * 100 + STAT_ROUND   (percentage points)
# with p the truth, n the samples and STAT_ROUND the rounding of the printed figure (the tools
# print one decimal). STAT_Z = 5.5 puts the two-sided tail at 3.8e-8 per check, so a script
# making up to 26 checks fails falsely less than once in 10^6 runs. A figure seen on one machine
# is never a tolerance. Failure messages name the sample count and the tolerance.

STAT_Z=${STAT_Z:-5.5}
STAT_ROUND=${STAT_ROUND:-0.05}
# DCPI_TEST_QUICK=1 (make test's ASan+UBSan pass): that pass is there for memory and undefined-
# behaviour errors, which the same code paths show with fewer samples; the first pass checks the
# statistics at full power. Quick asks a quarter of each minimum sample count (at least 100) and
# of each base run length (stat_ms); tolerances still come from the counts seen, so every check
# keeps its false-failure rate and only loses power.
STAT_QUICK=${DCPI_TEST_QUICK:-0}

# stat_need N: the minimum sample count to ask for: N, or a quarter of it (at least 100) when quick
stat_need() {
    if [ "$STAT_QUICK" = 1 ]; then
        awk -v n="$1" 'BEGIN { n = int(n / 4); print n < 100 ? 100 : n }'
    else
        echo "$1"
    fi
}

# stat_ms MS: a base run length in milliseconds: MS, or a quarter of it (at least 250) when quick
stat_ms() {
    if [ "$STAT_QUICK" = 1 ]; then
        awk -v n="$1" 'BEGIN { n = int(n / 4); print n < 250 ? 250 : n }'
    else
        echo "$1"
    fi
}

# stat_tol P N: the tolerance (points) for a share of P percent estimated from N samples.
stat_tol() {
    awk -v p="$1" -v n="$2" -v z="$STAT_Z" -v r="$STAT_ROUND" \
        'BEGIN { p /= 100; printf "%.2f", z * sqrt(p * (1 - p) / n) * 100 + r }'
}

# stat_min WHAT N NMIN: fails (returns 1, prints why) when N is not a number >= NMIN (stat_need).
stat_min() {
    local need
    need=$(stat_need "$3")
    set -- "$1" "$2" "$need"
    if ! awk -v n="$2" -v m="$3" 'BEGIN { exit !(n ~ /^[0-9]+$/ && n + 0 >= m + 0) }'; then
        echo "$1: '$2' samples, need at least $3 for the statistical checks"
        return 1
    fi
}

# stat_share WHAT OBSERVED TRUTH N: OBSERVED percent against the TRUTH percent estimated from N
# samples (assert N's minimum with stat_min first). Prints one line either way; returns 1 when
# the deviation exceeds the tolerance.
stat_share() {
    stat__within "$1" "$2" "$3" "$(stat_tol "$3" "$4")" "n $4" "from $4 samples"
}

# stat__within WHAT OBSERVED TRUTH TOL OK_NOTE FAIL_NOTE: OBSERVED within TOL points of TRUTH
# (stat_share, stat_share_line); one line either way, the notes saying what TOL came from.
stat__within() {
    if awk -v a="$2" -v b="$3" -v t="$4" \
        'BEGIN { exit !(a ~ /^[0-9.]+$/ && a - b <= t && b - a <= t) }'; then
        echo "ok: $1: $2% (truth $3%, $5, tolerance +-$4)"
        return 0
    fi
    echo "$1: '$2'% $6, truth $3%, tolerance +-$4 points (z $STAT_Z)"
    return 1
}

# bound_of LINE: the +-B of a dcpilist hotlist line (empty when it has none)
bound_of() { grep -oE '[+]-[0-9.]+' <<<"$1" | tail -1 | tr -d '+-'; }

# stat_share_line WHAT OBSERVED TRUTH LINE: stat_share for a share of a dcpilist hotlist LINE
# whose value samples may come in clusters (the inproc backend: an arm's consecutive hits, not
# independent draws): the tolerance is the larger of the binomial one over its vtot and the
# hotlist's own bound +-B (dcpilist's 95% interval over each value's effective samples, which
# counts the clusters and how alike their values are; core/listing/hotlist.c) taken to STAT_Z
# (B x STAT_Z / 1.96) plus STAT_ROUND. A bound over 25 points fails: the check would say nothing.
stat_share_line() {
    local what=$1 obs=$2 truth=$3 line=$4 n b tol
    n=$(vtot "$line")
    b=$(bound_of "$line")
    if ! awk -v b="$b" 'BEGIN { exit !(b ~ /^[0-9.]+$/ && b + 0 <= 25) }'; then
        echo "$what: the hotlist's bound '+-$b' (n $n) is missing or over 25 points"
        return 1
    fi
    tol=$(awk -v t="$(stat_tol "$truth" "$n")" -v b="$b" -v z="$STAT_Z" -v r="$STAT_ROUND" \
        'BEGIN { c = b * z / 1.96 + r; printf "%.2f", (c > t ? c : t) }')
    stat__within "$what" "$obs" "$truth" "$tol" "n $n, bound +-$b" "from $n samples (bound +-$b)"
}

# stat_n_line LINE P: the independent samples a share of P percent of hotlist LINE is worth for
# stat_same: its vtot, or fewer when its bound +-B says so (3.8416 p (1 - p) / (B / 100)^2: the
# count whose binomial 95% interval at p is B wide; stat_share_line says why)
stat_n_line() {
    local n b
    n=$(vtot "$1")
    b=$(bound_of "$1")
    awk -v n="$n" -v b="${b:-100}" -v p="$2" 'BEGIN { p /= 100; b /= 100
        e = b > 0 ? 3.8416 * p * (1 - p) / (b * b) : n; e = e < n ? e : n
        printf "%d", e < 2 ? 2 : e }'
}

# stat_same WHAT P1 N1 P2 N2: two estimates of one share (two tools sampling the same run,
# independently) agree: |P1 - P2| <= STAT_Z * sqrt(p (1 - p) (1/N1 + 1/N2)) + 2 * STAT_ROUND,
# p the pooled share. Prints one line either way; returns 1 on disagreement.
stat_same() {
    local what=$1 p1=$2 n1=$3 p2=$4 n2=$5 tol
    tol=$(awk -v a="$p1" -v m="$n1" -v b="$p2" -v n="$n2" -v z="$STAT_Z" -v r="$STAT_ROUND" \
        'BEGIN { p = (a * m + b * n) / (m + n) / 100
                 printf "%.2f", z * sqrt(p * (1 - p) * (1 / m + 1 / n)) * 100 + 2 * r }')
    if awk -v a="$p1" -v b="$p2" -v t="$tol" \
        'BEGIN { exit !(a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && a - b <= t && b - a <= t) }'; then
        echo "ok: $what: $p1% (n $n1) vs $p2% (n $n2), tolerance +-$tol"
        return 0
    fi
    echo "$what: $p1% from $n1 samples vs $p2% from $n2, differ by more than $tol points (z $STAT_Z)"
    return 1
}

# stat_until NMIN MAXSCALE RUN COUNT [ARG...]: run until enough samples. Calls RUN SCALE ARG...,
# then COUNT ARG..., for SCALE = 1 and then larger ones chosen from the rate seen (at least
# doubling, at most MAXSCALE), until COUNT prints a number >= NMIN:
# RUN redoes its run from scratch with its workload SCALE times as long; COUNT prints the
# smallest of the sample counts the checks need. The stopping rule looks at the counts only,
# never at the shares, so the checks after it keep their binomial tolerances. Returns 1 when RUN
# fails; otherwise 0, also when even MAXSCALE gave too few (the caller's stat_min says so).
# Sets STAT_SCALE and STAT_N.
stat_until() {
    local nmin max=$2 run=$3 count=$4 next
    nmin=$(stat_need "$1")
    shift 4
    STAT_SCALE=1
    while :; do
        "$run" "$STAT_SCALE" "$@" || return 1
        STAT_N=$("$count" "$@")
        awk -v n="$STAT_N" -v m="$nmin" 'BEGIN { exit !(n ~ /^[0-9]+$/ && n + 0 >= m + 0) }' &&
            return 0
        [ "$STAT_SCALE" -lt "$max" ] || return 0
        # the next scale from the rate seen: a quarter more than the samples missing need (at
        # least twice the last, at most MAX), so that one more run is nearly always the last
        next=$(awk -v n="$STAT_N" -v m="$nmin" -v s="$STAT_SCALE" -v x="$max" \
            'BEGIN { n = (n ~ /^[0-9]+$/) ? n + 0 : 0; t = n > 0 ? s * m / n * 1.25 : 2 * s
                     t = int(t) + (t > int(t)); if (t < 2 * s) t = 2 * s; if (t > x) t = x
                     print t }')
        echo "note: ${*:+$* }'$STAT_N' samples at scale $STAT_SCALE, need $nmin: running ${next}x as long"
        STAT_SCALE=$next
    done
}

# stat_topup NMIN MS RUN COUNT [ARG...]: like stat_until, but a short run is topped up, not
# redone: calls RUN MS ARG... (a run of MS milliseconds of the workload added to what earlier
# calls recorded: a new epoch of the same database (lib/common.sh e2e_after_epoch first), listed
# with -epoch all, whose hotlists and counts add up), then COUNT ARG..., until COUNT prints a number >= NMIN (stat_need) or 4 x MS
# (STAT_TOPUP_MAX x MS) ran in all. The next MS is the missing samples' share at the rate seen, a quarter more (at
# least MS / 2: a run's first few hundred ms give no value samples, while the backend measures
# its costs and its first tables wait for PC samples; twice the last when the last added none,
# as on a slow or loaded machine where that warm-up is longer). The stopping rule looks at the counts only, so the checks after it keep their
# binomial tolerances; under load, where the value sample rate can fall several-fold, a short
# run costs its missing part, not a run twice as long from scratch. Returns 1 when RUN fails.
# Sets STAT_N.
stat_topup() {
    local nmin base=$2 run=$3 count=$4 ms=$2 total=0 last=0 max=${STAT_TOPUP_MAX:-4}
    nmin=$(stat_need "$1")
    shift 4
    while :; do
        "$run" "$ms" "$@" || return 1
        total=$((total + ms))
        STAT_N=$("$count" "$@")
        awk -v n="$STAT_N" -v m="$nmin" 'BEGIN { exit !(n ~ /^[0-9]+$/ && n + 0 >= m + 0) }' &&
            return 0
        [ $total -lt $((max * base)) ] || return 0
        ms=$(awk -v n="$STAT_N" -v m="$nmin" -v t=$total -v b="$base" -v l="$last" -v p="$ms" -v k="$max" 'BEGIN {
            n = (n ~ /^[0-9]+$/) ? n + 0 : 0; x = n > 0 ? (m - n) / n * t * 1.25 : t
            if (x < b / 2) x = b / 2; if (n <= l && x < 2 * p) x = 2 * p
            if (x > k * b - t) x = k * b - t; if (x < b / 2) x = b / 2; printf "%d", x }')
        last=$STAT_N
        [[ $last =~ ^[0-9]+$ ]] || last=0
        echo "note: ${*:+$1 }'$STAT_N' samples after $total ms, need $nmin: $ms ms more"
    done
}

# stat_scale_ms MS FREQ: a run length that gives the same expected sample count at FREQ Hz as MS
# milliseconds at the default 2000 Hz (tests run at a second rate under make test-stress, which
# sets DCPI_TEST_FREQ).
stat_scale_ms() {
    awk -v ms="$1" -v f="$2" 'BEGIN { printf "%d", ms * 2000 / f }'
}

# dcpilist -asm output: hot_line FILE RE: the line of the instruction whose mnemonic matches RE
# (a branch target's ": " skipped) with the most PC samples (first column); one line at most.
hot_line() {
    awk -v re="$2" '{m = $3 == ":" ? $4 : $3} m ~ re && $1 ~ /^[0-9]+$/' "$1" | sort -k1,1nr |
        head -1
}

# vtot LINE: the vtot column of a dcpilist line: the number before thld and nv, ahead of the
# plugin's preface (if any) and the hotlist
vtot() { sed -E 's/.* ([0-9]+) +[0-9.]+ +[0-9]+ +([^ (]+ +)?\(.*/\1/' <<<"$1"; }
