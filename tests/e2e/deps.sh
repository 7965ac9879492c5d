#!/bin/bash
# e2e: the include direction of docs/architecture.md holds. The table under "## Folders" there
# (first cell a folder, last cell the folders it may include, both in backquotes) is the rule;
# every #include "..." of every C file in those folders is checked against it, and the
# file-level include graph (a module is X.c + X.h) must have no cycle (tsort). A header named
# *-int.h is private to its folder: an include of it from any other folder fails, whatever the
# table allows (the folder's non-internal header is what others use). Exit 1 with one line per
# offending include.
#   DCPI_SRC=. bash tests/e2e/deps.sh     (DCPI_DEPS_DOC: another table, for this script's test)
set -eu
S=${DCPI_SRC:?}
cd "$S"
doc=${DCPI_DEPS_DOC:-docs/architecture.md}

# "folder allowed..." per row of the table (backquoted names, trailing / dropped).
rules=$(awk '/^## Folders/ { on = 1; next } /^## / { on = 0 }
    on && /^\| `/ {
        n = split($0, cell, "|")
        f = cell[2]; gsub(/[` ]/, "", f); sub(/\/$/, "", f)
        a = cell[n - 1]; gsub(/`/, "", a); gsub(/\/ /, " ", a); sub(/\/ *$/, "", a)
        print f, a }' "$doc" | sed 's/ (none)//; s/  */ /g')
[ -n "$rules" ] || { echo "FAIL: no folder table in $doc"; exit 1; }

# folder of a path: the longest folder in the table that prefixes it
folder_of() {
    local p=$1 best= f
    while read -r f _; do
        case $p in "$f"/*) [ ${#f} -gt ${#best} ] && best=$f ;; esac
    done <<<"$rules"
    echo "$best"
}

bad=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
while read -r f allowed; do
    [ -d "$f" ] || { echo "FAIL: $doc names folder $f, which does not exist"; bad=1; continue; }
    for src in "$f"/*.[ch]; do
        [ -e "$src" ] || continue
        while IFS= read -r inc; do
            case $inc in
            dcpi/*) to=include ;;
            *.pb-c.h) to=core/formats ;; # generated from core/formats/proto at build time
            */*) to=$(folder_of "$inc") ;;
            *) to=$f ;; # same folder (tests' own helpers)
            esac
            [ -n "$to" ] || { echo "FAIL: $src includes \"$inc\", in no folder of the table"; bad=1; continue; }
            m=${src%.[ch]}
            case $inc in dcpi/* | *.pb-c.h) ;; */*) echo "$m ${inc%.h}" >>"$edges" ;; esac
            case $inc in
            *-int.h) [ "$to" = "$f" ] || {
                echo "FAIL: $src includes \"$inc\", which is internal to $to (an -int.h header is private to its folder; use $to's non-internal header)"
                bad=1
                continue
            } ;;
            esac
            [ "$to" = "$f" ] || [ "$to" = include ] && continue
            ok=0
            for a in $allowed; do [ "$a" = "${to}" ] && ok=1; done
            [ $ok = 1 ] || { echo "FAIL: $src includes \"$inc\" ($to), which $f may not use (allowed: $allowed)"; bad=1; }
        done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$src")
    done
done <<<"$rules"

# cycles between modules (X.c and X.h are one module; a module's own header is no edge)
awk '$1 != $2' "$edges" | sort -u >"$edges.s"
if ! out=$(tsort "$edges.s" 2>&1 >/dev/null); then
    echo "FAIL: include cycle: $(echo "$out" | grep -v 'input contains a loop' | sed 's/^tsort: //' | tr '\n' ' ')"
    bad=1
fi
rm -f "$edges.s"
[ $bad = 0 ] || exit 1
echo "ok: $(echo "$rules" | wc -l) folders, $(sort -u "$edges" | wc -l) includes between modules, no cycle"
