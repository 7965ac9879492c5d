#!/bin/bash
# e2e: deps.sh can fail. A scratch tree with a folder table (low may include nothing, high may
# include low) gets, one at a time, an include against the direction, an include of low's
# private header low/a-int.h from high (a direction the table allows), and an include cycle;
# each must make deps.sh exit 1 naming the offending include; the clean tree (where low's own
# files include a-int.h) must pass.
set -eu
S=${DCPI_SRC:?}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_counting depsneg
mkdir -p "$T/docs" "$T/core/low" "$T/core/high"
cat >"$T/docs/architecture.md" <<'MD'
## Folders
| folder | concern | may include |
| --- | --- | --- |
| `core/low/` | below | (none) |
| `core/high/` | above | `core/low/` |
## Next
MD
printf '#include "core/low/a.h"\n#include "core/low/a-int.h"\n' >"$T/core/low/a.c"
printf '/* a */\n' >"$T/core/low/a.h"
printf '/* a, inside */\n' >"$T/core/low/a-int.h"
printf '#include "core/low/a.h"\n#include "dcpi/errno.h"\n' >"$T/core/high/b.c"
run() { DCPI_SRC=$T bash "$S/tests/e2e/deps.sh" 2>&1; }
out=$(run) || fail "the clean tree fails: $out"
printf '#include "core/high/b.h"\n' >>"$T/core/low/a.c"
printf '/* b */\n' >"$T/core/high/b.h"
if out=$(run); then fail "an include against the direction passed"; fi
echo "$out" | grep -q 'core/low/a.c includes "core/high/b.h" (core/high), which core/low may not use' ||
    fail "no line names the include against the direction: $out"
printf '#include "core/low/a.h"\n' >"$T/core/low/a.c" # direction restored
out=$(run) || fail "the tree with the direction restored fails: $out"
printf '#include "core/low/a-int.h"\n' >>"$T/core/high/b.c" # allowed folder, private header
if out=$(run); then fail "an include of another folder's -int.h header passed"; fi
echo "$out" | grep -q 'core/high/b.c includes "core/low/a-int.h", which is internal to core/low' ||
    fail "no line names the include of a private header: $out"
printf '#include "core/low/a.h"\n#include "dcpi/errno.h"\n' >"$T/core/high/b.c" # restored
printf '#include "core/low/c.h"\n' >"$T/core/low/a.h"  # a -> c -> a: a cycle inside one folder
printf '#include "core/low/a.h"\n' >"$T/core/low/c.h"
if out=$(run); then fail "an include cycle passed"; fi
echo "$out" | grep -q 'include cycle' || fail "no line names the cycle: $out"
[ "$fails" = 0 ] && echo "ok: deps.sh fails on an include against the direction, of another folder's -int.h, and on a cycle"
exit $((fails > 0))
