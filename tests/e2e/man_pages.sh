#!/bin/bash
# man_pages.sh - the man pages the build makes from docs/*.md (cmake/DcpiMan.cmake, md2man.sh):
# every tools/<tool>.c has docs/<tool>.md and so a page <tool>(1); dcpiformat(5) and vprofiler(5)
# are there; each page renders with groff (tbl, continuous like man) without a single warning,
# its .TH names it and its section, and lexgrog reads its NAME line as "name - description";
# after cmake --install into a temporary prefix, man finds dcpid and vprofiler(5) through MANPATH.
set -u
B=${DCPI_BIN:?DCPI_BIN not set}
S=${DCPI_SRC:?DCPI_SRC not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
e2e_require pandoc pandoc
e2e_require man man-db
e2e_require groff groff-base
e2e_require lexgrog man-db
T=$(mktemp -d /tmp/dcpi-e2e-man.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

M=$B/man
[ -s "$M/pages.txt" ] || { echo "FAIL: $M/pages.txt missing (configured without pandoc?)"; exit 1; }

# every tool has its page, and the format and plugin pages are there
for src in "$S"/tools/*.c; do
    tool=$(basename "$src" .c)
    [ -f "$S/docs/$tool.md" ] || fail "tools/$tool.c has no docs/$tool.md"
    [ -f "$M/man1/$tool.1" ] || fail "no man page $tool(1) built ($M/man1/$tool.1)"
done
for p in man5/dcpiformat.5 man5/vprofiler.5 man5/stackformat.5 man5/dcpitrace.5; do
    [ -f "$M/$p" ] || fail "no man page $p built"
done

n=0
while read -r md name sect; do
    page=$M/man$sect/$name.$sect
    n=$((n + 1))
    [ -f "$page" ] || { fail "$md: $page not built"; continue; }
    # groff as man runs it (tbl, continuous page), all warnings on
    warn=$(groff -k -t -man -rcR=1 -Tutf8 -ww -z "$page" 2>&1)
    [ -z "$warn" ] || fail "$name($sect): groff warns: $(head -3 <<<"$warn")"
    warn=$(MANWIDTH=80 man --warnings=w -l "$page" 2>&1 >/dev/null)
    [ -z "$warn" ] || fail "$name($sect): man -l warns: $(head -3 <<<"$warn")"
    th=$(grep -m1 '^\.TH ' "$page")
    [[ $th == ".TH \"$name\" \"$sect\" "* ]] || fail "$name($sect): header is '$th'"
    # NAME line: "name - description", no leftover markup
    nl=$(lexgrog "$page" 2>&1) || fail "$name($sect): lexgrog cannot parse NAME: $nl"
    [[ $nl == *": \"$name - "?* ]] || fail "$name($sect): NAME line is $nl"
    [[ $nl == *'\f'* || $nl == *'f['* ]] && fail "$name($sect): font escapes in NAME: $nl"
    # rendered text: NAME and at least two more sections (## headings) at the margin, SYNOPSIS
    # in section 1, and not the Markdown title
    out=$(MANWIDTH=80 man -l "$page" 2>/dev/null)
    grep -q '^NAME$' <<<"$out" || fail "$name($sect): no NAME heading at the margin"
    [ "$(grep -c '^[A-Z][A-Za-z0-9 ()._-]*$' <<<"$out")" -ge 3 ] || fail "$name($sect): fewer than 3 sections"
    [ "$sect" != 1 ] || grep -q '^SYNOPSIS$' <<<"$out" || fail "$name($sect): no SYNOPSIS"
    grep -q "^$name($sect) - \|^$name($sect)\$" <<<"$out" && fail "$name($sect): the Markdown title is in the body"
done <"$M/pages.txt"
[ "$n" -ge 14 ] || fail "only $n man pages in $M/pages.txt"
# definition lists (OPTIONS) become tagged paragraphs
grep -q '^\.TP' "$M/man1/dcpid.1" || fail "dcpid(1) has no .TP (OPTIONS definition list lost)"
MANWIDTH=80 man -l "$M/man1/dcpid.1" 2>/dev/null | grep -A1 '^ *-db DIR' | grep -q 'Database directory' ||
    fail "dcpid(1): -db DIR is not followed by its description"

# installed: man finds them through MANPATH
cmake --install "$B" --prefix "$T/p" >/dev/null || fail "cmake --install failed"
export MANPATH=$T/p/share/man
w=$(man -w dcpid 2>&1)
[ "$w" = "$T/p/share/man/man1/dcpid.1" ] || fail "man -w dcpid: $w"
w=$(man -w 5 dcpiformat 2>&1)
[ "$w" = "$T/p/share/man/man5/dcpiformat.5" ] || fail "man -w 5 dcpiformat: $w"
man 5 vprofiler 2>/dev/null | grep -q 'vprofiler - the value-profiler plugin interface' ||
    fail "man 5 vprofiler does not show the page"
for src in "$S"/tools/*.c; do
    tool=$(basename "$src" .c)
    [ -f "$T/p/share/man/man1/$tool.1" ] || fail "$tool.1 not installed under share/man/man1"
done

[ "$fails" = 0 ] || exit 1
echo "ok: $n man pages render without warnings, NAME lines parse, man finds the installed ones"
