#!/bin/sh
# md2man.sh - one docs/<page>.md into a man page with pandoc (run by the build, cmake/DcpiMan.cmake).
# Usage: md2man.sh IN.md OUT VERSION
# The Markdown starts (after an optional <!-- comment -->) with "# name(N) - description": that
# title becomes the .TH header (name, section N, "dcpi VERSION"), and the NAME section
# "name - description" when the page has no "## NAME" of its own. Tables get their pandoc
# column widths scaled to fit an 80-column terminal (tbl warns otherwise).
set -eu
in=$1
out=$2
version=$3
tmp=$out.md.tmp
trap 'rm -f "$tmp"' EXIT

# the title line, after a leading HTML comment and blank lines
title=$(awk '
  st == 0 && /^<!--/ { if ($0 !~ /-->/) st = 1; next }
  st == 1 { if ($0 ~ /-->/) st = 0; next }
  /^[ \t]*$/ { next }
  { print; exit }' "$in")
name=$(printf '%s\n' "$title" | sed -n 's/^# \([A-Za-z0-9_.-]*\)(\([1-9]\))\( - .*\)\{0,1\}$/\1/p')
sect=$(printf '%s\n' "$title" | sed -n 's/^# \([A-Za-z0-9_.-]*\)(\([1-9]\))\( - .*\)\{0,1\}$/\2/p')
desc=$(printf '%s\n' "$title" | sed -n 's/^# [A-Za-z0-9_.-]*([1-9]) - \(.*\)$/\1/p')
if [ -z "$name" ]; then
    echo "md2man: $in: first heading is not '# name(N) - description': $title" >&2
    exit 1
fi
has_name=0
grep -q '^## NAME[ \t]*$' "$in" && has_name=1
if [ "$has_name" = 0 ] && [ -z "$desc" ]; then
    echo "md2man: $in: no '## NAME' section and no description in '$title'" >&2
    exit 1
fi

# the body: everything after the title line, a NAME section first when the page has none
{
    if [ "$has_name" = 0 ]; then
        printf '## NAME\n\n%s - %s\n\n' "$name" "$desc"
    fi
    awk -v t="$title" 'done { print; next } $0 == t { done = 1 }' "$in"
} >"$tmp"

pandoc -s -f markdown -t man --shift-heading-level-by=-1 -M title="$name" -M section="$sect" -M footer="dcpi $version" \
    -M header="dcpi manual" "$tmp" |
    awk '
      # tbl format lines written by pandoc ("lw(35.0n) lw(35.0n)."): at most 68n with the gaps
      /^([lcr]w\([0-9.]+n\) ?)+\.$/ {
        n = split($0, f, " "); sum = 0
        for (i = 1; i <= n; i++) { w = f[i]; sub(/^[lcr]w\(/, "", w); sub(/n\).*/, "", w); sum += w }
        room = 68 - 3 * (n - 1)
        if (sum > room) {
          line = ""
          for (i = 1; i <= n; i++) {
            w = f[i]; a = substr(w, 1, 1); sub(/^[lcr]w\(/, "", w); sub(/n\).*/, "", w)
            line = line (i > 1 ? " " : "") sprintf("%sw(%.1fn)", a, w * room / sum)
          }
          $0 = line "."
        }
      }
      # continuous rendering (man, -rcR=1) grows the page on .ne, but tbl checks its text blocks
      # against the page length before its own .ne: grow it first (no output change)
      /^\.TS/ { print ".if \\n[cR] .ne 100v" }
      { print }
      # left-aligned text: no "cannot adjust line" in narrow table cells
      /^\.TH / { print ".ad l" }' >"$out"
