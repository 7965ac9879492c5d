#!/bin/bash
# e2e: every tool speaks the one flag grammar of dcpi(7) (cli/cli.h), and its --help and its man
# page agree. For each tools/<tool>.c:
#   - -h, -help and --help print the same usage (exit 0, "usage: TOOL" first), -V and --version
#     print "TOOL (dcpi) VERSION";
#   - the flag spellings --help lists (every alias) are exactly those the OPTIONS section of
#     docs/<tool>.md names in its entries (`-e EVENT`, `-s EVENT`, ...), and every flag of the
#     page's SYNOPSIS is one of them;
#   - the parser takes every one of them: "TOOL SPELLING [1] ... --help" prints the usage (a
#     flag the parser did not know would fail before --help), and so do their "--name=1" forms
#     (each flag that takes a value, in its two-dash form with the value after '=');
#   - an unknown flag is a usage error (exit 2) with one line naming it.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
BIN=${DCPI_BIN:?}
S=${DCPI_SRC:?}
e2e_counting flaggrammar

# The spellings of a usage text, one per line as "SPELLING ARG" (ARG empty: no value).
help_flags() {
    awk '/^  -[^-]|^  --[a-z]/ {
        line = substr($0, 3)
        left = line
        if (match(line, /  /)) left = substr(line, 1, RSTART - 1)
        n = split(left, item, ", ")
        arg = ""
        if (split(item[n], w, " ") > 1) { arg = w[2]; item[n] = w[1] }
        for (i = 1; i <= n; i++) print item[i], arg
    }' "$1"
}

# The flag spellings named by the entries of a man page's OPTIONS section (lines starting with
# a backquoted flag), one per line.
doc_flags() {
    awk '/^## OPTIONS/ { on = 1; next } /^## / { on = 0 }
        on && /^`-/ {
            s = $0
            while (match(s, /`-[^`]*`/)) {
                tok = substr(s, RSTART + 1, RLENGTH - 2)
                split(tok, w, " ")
                if (w[1] != "--") print w[1]
                s = substr(s, RSTART + RLENGTH)
            }
        }' "$1"
}

# The flags of the SYNOPSIS block (words starting with one or two dashes and a letter).
# Lines that start with another tool's name (dcpireplay's shows the dcpid run it needs) are not
# this tool's.
synopsis_flags() {
    awk -v tool="$2" '/^## SYNOPSIS/ { on = 1; next } /^## / { on = 0 }
        on && !/^```/ && !($1 ~ /^`?dcpi/ && $1 !~ "^`?" tool "$") { print }' "$1" | grep -oE '(^|[[ |])--?[a-zA-Z][a-zA-Z0-9_-]*' |
        sed -E 's/^[[ |]//' | sort -u
}

ntools=0
nflags=0
for src in "$S"/tools/*.c; do
    tool=$(basename "$src" .c)
    doc=$S/docs/$tool.md
    ntools=$((ntools + 1))
    "$BIN/$tool" --help >"$T/$tool.help" 2>"$T/err"
    rc=$?
    [ $rc -eq 0 ] && [ ! -s "$T/err" ] && head -1 "$T/$tool.help" | grep -q "^usage: $tool " ||
        {
            fail "$tool --help: exit $rc, $(head -c 200 "$T/err")"
            continue
        }
    for h in -h -help; do
        "$BIN/$tool" $h 2>&1 | cmp -s - "$T/$tool.help" || fail "$tool $h differs from --help"
    done
    for v in -V --version; do
        out=$("$BIN/$tool" $v 2>&1)
        [[ "$out" =~ ^$tool\ \(dcpi\)\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$tool $v: '$out'"
    done
    help_flags "$T/$tool.help" | sort -u >"$T/$tool.flags"
    cut -d' ' -f1 "$T/$tool.flags" | sort -u >"$T/$tool.h"
    [ -s "$T/$tool.h" ] || fail "$tool --help lists no flags"
    [ -f "$doc" ] || {
        fail "tools/$tool.c has no docs/$tool.md"
        continue
    }
    grep -q '^## OPTIONS' "$doc" || fail "docs/$tool.md has no OPTIONS section"
    doc_flags "$doc" | sort -u >"$T/$tool.d"
    only_help=$(comm -23 "$T/$tool.h" "$T/$tool.d" | tr '\n' ' ')
    only_doc=$(comm -13 "$T/$tool.h" "$T/$tool.d" | tr '\n' ' ')
    [ -z "$only_help" ] || fail "$tool: --help lists, docs/$tool.md OPTIONS does not: $only_help"
    [ -z "$only_doc" ] || fail "$tool: docs/$tool.md OPTIONS names, --help does not: $only_doc"
    syn=$(synopsis_flags "$doc" "$tool" | comm -23 - "$T/$tool.h" | tr '\n' ' ')
    [ -z "$syn" ] || fail "$tool: docs/$tool.md SYNOPSIS names flags --help does not: $syn"

    # the parser takes every spelling the help lists, and --name=VALUE for those with a value:
    # all of them on one command line before --help (the first it did not know would fail)
    all=() eq=()
    while read -r flag arg; do
        case $flag in -h | -help | --help | -V | -version | --version) continue ;; esac
        nflags=$((nflags + 1))
        all+=("$flag")
        [ -n "$arg" ] || continue
        all+=(1)
        name=${flag#-}
        name=${name#-} # -x and --x both become --x=1
        eq+=("--$name=1")
    done <"$T/$tool.flags"
    "$BIN/$tool" "${all[@]}" --help >"$T/out" 2>"$T/err" && cmp -s "$T/out" "$T/$tool.help" ||
        fail "$tool ${all[*]} --help: not taken: $(head -c 200 "$T/err")"
    "$BIN/$tool" "${eq[@]}" --help >"$T/out" 2>"$T/err" && cmp -s "$T/out" "$T/$tool.help" ||
        fail "$tool ${eq[*]} --help: not taken: $(head -c 200 "$T/err")"

    "$BIN/$tool" -no-such-flag >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] &&
        grep -q "^$tool: unknown flag '-no-such-flag'" "$T/err" ||
        fail "$tool -no-such-flag: exit $rc, stderr: $(head -c 200 "$T/err")"
done

[ "$ntools" -ge 13 ] || fail "only $ntools tools found under $S/tools"
[ "$fails" -eq 0 ] || exit 1
echo "PASS: $ntools tools, $nflags flag spellings: --help, the parser and docs/<tool>.md agree"
