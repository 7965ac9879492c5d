#!/bin/bash
# bench/symcache_size.sh - the size of a system-wide database and of its symbol cache
# (DB/.symcache, gzip since issue 13 item 7) against its profiles. Runs `dcpid -event cpu-clock`
# system-wide for SECONDS (root), quits it, and prints du -sb of the database, of .symcache, and
# the bytes of its profiles (.prof, .procs, .stk), then what the same cache takes uncompressed
# (the layout written before: every file gunzipped, the epochs' kallsyms still hard links).
# With OLD_BUILD (a build of the previous version), that version's dcpid runs side by side into
# its own database (same machine, same processes) and its sizes are printed too.
# Usage: bench/symcache_size.sh [BUILD_DIR] [SECONDS] [OLD_BUILD_DIR]
set -eu
B=$(cd "${1:-build}" && pwd)
SECS=${2:-30}
OLD=${3:-}
T=$(mktemp -d /tmp/dcpi-bench-symcache.XXXXXX)
trap 'rm -rf "$T"' EXIT

sizes() { # LABEL DB
    local prof cache gz plain
    prof=$(find "$2" \( -name '*.prof' -o -name '*.procs' -o -name '*.stk' \) -print0 |
        du -cb --files0-from=- | tail -1 | cut -f1)
    cache=$(du -sb "$2/.symcache" | cut -f1)
    printf '%-4s DB %9d  .symcache %9d (%d files)  profiles %7d\n' "$1" \
        "$(du -sb "$2" | cut -f1)" "$cache" "$(ls "$2/.symcache" | wc -l)" "$prof"
    gz=$(find "$2/.symcache" -name '*.gz' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
    plain=$(find "$2/.symcache" -name '*.gz' -exec sh -c 'gzip -dc "$1" | wc -c' _ {} \; |
        awk '{s += $1} END {print s + 0}')
    [ "$gz" = 0 ] ||
        printf '     uncompressed: DB %9d  .symcache %9d\n' \
            $(($(du -sb "$2" | cut -f1) - gz + plain)) $((cache - gz + plain))
}

"$B/dcpid" -db "$T/new" -event cpu-clock
[ -z "$OLD" ] || LD_LIBRARY_PATH=$OLD "$OLD/dcpid" -db "$T/old" -event cpu-clock
sleep "$SECS"
"$B/dcpictl" -db "$T/new" quit >/dev/null
[ -z "$OLD" ] || LD_LIBRARY_PATH=$OLD "$OLD/dcpictl" -db "$T/old" quit >/dev/null
sizes new "$T/new"
[ -z "$OLD" ] || sizes old "$T/old"
