# tests/e2e/lib/common.sh - shell helpers sourced by the e2e scripts in tests/e2e/ (it lives in a
# subdirectory so that ctest, which runs every tests/e2e/*.sh, does not take it for a test).
# Source it with:  . "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# e2e_skip REASON...: print "SKIP: REASON" and exit 77 (ctest's skip code).
e2e_skip() {
    echo "SKIP: $*"
    exit 77
}

# e2e_need CMD REASON...: skip with REASON unless CMD is on PATH. Only for what the machine may
# lack; what `make test-deps` installs (the Makefile's package lists) is e2e_require'd.
e2e_need() {
    local cmd=$1
    shift
    command -v "$cmd" >/dev/null || e2e_skip "$@"
}

# e2e_require CMD PACKAGE: fail (exit 1) unless CMD is on PATH: PACKAGE is one `make test-deps`
# installs, so its absence is a broken set-up, never a skip.
e2e_require() {
    command -v "$1" >/dev/null && return 0
    echo "FAIL: $1 is not installed (Debian package $2, installed by make test-deps)"
    exit 1
}

# e2e_counting NAME: the set-up of the scripts that count failures: a fresh $T
# (/tmp/dcpi-e2e-NAME.XXXXXX, removed at exit unless $KEEP is set), fails=0 and fail(), which
# prints "FAIL: ..." and counts it.
e2e_counting() {
    T=$(mktemp -d "/tmp/dcpi-e2e-$1.XXXXXX")
    trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
    fails=0
    fail() {
        echo "FAIL: $*"
        fails=$((fails + 1))
    }
}

# e2e_after_epoch DB: epoch names have a resolution of one second: wait (polling, at most 2 s)
# until the clock (UTC, as the names) has left the second that names DB's latest epoch, so that
# the next dcpid run into DB starts a new epoch (a fixed `sleep 1` waited a second also after a
# run that had lasted longer). Returns at once when DB has no epoch.
e2e_after_epoch() {
    local last i
    last=$(ls "$1" 2>/dev/null | grep -E '^[0-9]{14}$' | sort | tail -1)
    for i in $(seq 40); do
        [ -z "$last" ] || [ "$(date -u +%Y%m%d%H%M%S)" \> "$last" ] && return 0
        sleep 0.05
    done
}

# e2e_probe_cpu_clock WHAT [DCPID FLAGS...]: one short dcpid run on cpu-clock (with the extra
# flags) into $T/probe. Skips with "WHAT is not possible here" when perf_event_open cannot
# sample here; any other failure calls fail. Needs $BIN, $T, fail and to (timeout -k 5).
e2e_probe_cpu_clock() {
    local what=$1 probe rc
    shift
    probe=$(to 30 "$BIN/dcpid" -db "$T/probe" -event cpu-clock "$@" -- true 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        case "$probe" in
        *perf_event_open*|*not\ supported*|*Permission*)
            e2e_skip "$what is not possible here: $probe" ;;
        esac
        fail "probe run failed (rc $rc): $probe"
    fi
}

# e2e_gperf_prog: build $T/prog (hot, warm) linked to $T/libspin.so (lib_spin) with gcc -O1 -g
# and profile one run under gperftools' libprofiler into $T/prog.prof (1000 Hz). Fails when gcc,
# google-pprof or libprofiler.so.0 is missing (make test-deps installs them); skips when libprofiler
# writes no profile (no SIGPROF timer here).
e2e_gperf_prog() {
    local libprof=/usr/lib/x86_64-linux-gnu/libprofiler.so.0
    e2e_require gcc build-essential
    e2e_require google-pprof google-perftools
    [ -e "$libprof" ] || { echo "FAIL: $libprof not installed (google-perftools, installed by make test-deps)"; exit 1; }
    cat >"$T/lib.c" <<'C'
__attribute__((noinline)) double lib_spin(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.125; return s; }
C
    cat >"$T/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
double lib_spin(long n);
__attribute__((noinline)) double hot(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.5; return s; }
__attribute__((noinline)) double warm(long n) { double s = 0; for (long i = 0; i < n; i++) s += i * 0.25 + 1; return s; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000000;
    printf("%g\n", hot(n) + warm(n / 2) + lib_spin(n / 3));
    return 0;
}
C
    gcc -O1 -g -shared -fPIC -o "$T/libspin.so" "$T/lib.c"
    gcc -O1 -g -o "$T/prog" "$T/prog.c" -L"$T" -lspin -Wl,-rpath,"$T"
    LD_PRELOAD=$libprof CPUPROFILE="$T/prog.prof" CPUPROFILE_FREQUENCY=1000 "$T/prog" >/dev/null 2>&1
    [ -s "$T/prog.prof" ] || e2e_skip "libprofiler wrote no profile (no SIGPROF timer?)"
}

# e2e_le32 V: V as 4 little-endian bytes on stdout.
e2e_le32() {
    local v=$1
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $((v >> 8 & 255)) \
        $((v >> 16 & 255)) $((v >> 24 & 255)))"
}
# e2e_mkprof FILE IMAGE EPOCH PLATFORM EVENT TSTART PATH LOST [OFFSET:COUNT ...] (offsets ascending)
e2e_mkprof() {
    local file=$1 image=$2 epoch=$3 plat=$4 ev=$5 tstart=$6 path=$7 lost=$8
    shift 8
    mkdir -p "$(dirname "$file")"
    local hdr
    local fmt='version pdb-0.07\nimage %s\nepoch %s\nplatform %s\nevent %s\nperiod 1000000\n'
    fmt+='tstart %s\ntsize 4096\ncpuspeed 2000\npath %s\nlost %s\nunknownkey kept\n'
    hdr=$(printf "$fmt" "$image" "$epoch" "$plat" "$ev" "$tstart" "$path" "$lost")
    local len=$((${#hdr} + 1 + 8)) n=0 total=0 pair
    {
        printf '%s\n' "$hdr"
        printf 'samples%*s\n' $(((4 - len % 4) % 4)) ''
        for pair in "$@"; do
            e2e_le32 "${pair%%:*}"
            e2e_le32 1
            e2e_le32 "${pair##*:}"
            n=$((n + 1))
            total=$((total + ${pair##*:}))
        done
        e2e_le32 $n
        e2e_le32 $total
    } >"$file"
}
