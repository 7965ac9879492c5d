#!/bin/bash
# e2e: every C source follows the committed .clang-format (what `make format` applies).
set -eu
S=${DCPI_SRC:?}
cd "$S"
command -v clang-format >/dev/null ||
    { echo "FAIL: clang-format is not installed (Debian package clang-format, installed by make test-deps)"; exit 1; }
files=$(ls include/dcpi/*.h core/*/*.[ch] trace/*.[ch] tools/*.c vprofilers/*.c samples/*.c \
    tests/*.[ch] agent/*.c tests/plugins/*.[ch] tests/fuzz/*.[ch] bench/*.c web/*.[ch] 2>/dev/null)
if ! out=$(clang-format --dry-run -Werror $files 2>&1); then
    echo "$out" | grep "error:" | cut -d: -f1 | sort | uniq -c
    echo "FAIL: files above differ from .clang-format; run 'make format'"
    exit 1
fi
echo "ok: $(echo "$files" | wc -w) files formatted"
