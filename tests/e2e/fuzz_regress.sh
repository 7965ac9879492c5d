#!/bin/sh
# tests/e2e/fuzz_regress.sh - the fuzz harnesses in CI: builds a clang libFuzzer build in
# $DCPI_BIN/../build-fuzz-ci (cmake -DDCPI_FUZZ=ON) and runs tests/fuzz/run.sh for 3 seconds a
# harness: each harness replays its regress/ inputs (every crash found so far) and its seed
# corpus, then fuzzes briefly. clang and libFuzzer (clang, libclang-rt-14-dev) are installed by
# make test-deps: without them the test fails.
# Env: DCPI_BIN (build dir), DCPI_SRC (source dir); FUZZ_SECONDS overrides the 3 seconds.
set -u
src=${DCPI_SRC:?DCPI_SRC not set}
bin=${DCPI_BIN:?DCPI_BIN not set}
fuzzdir=$(cd "$bin/.." && pwd)/build-fuzz-ci
seconds=${FUZZ_SECONDS:-3}

if ! command -v clang >/dev/null 2>&1 || ! command -v clang++ >/dev/null 2>&1; then
    echo "FAIL: clang/clang++ not found (Debian package clang, installed by make test-deps)"
    exit 1
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' \
    >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" >/dev/null 2>&1; then
    echo "FAIL: clang cannot link -fsanitize=fuzzer,address,undefined (libclang-rt-14-dev, installed by make test-deps)"
    exit 1
fi

if ! cmake -S "$src" -B "$fuzzdir" -DDCPI_FUZZ=ON -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DDCPI_BUILD_TESTS=OFF >"$probe/configure.log" 2>&1; then
    cat "$probe/configure.log"
    echo "FAIL: configuring the fuzz build in $fuzzdir"
    exit 1
fi
# Only the harnesses: the rest of a sanitized build (libdcpi.so, tools) is not needed here.
targets=$(for f in "$src"/tests/fuzz/fuzz_*.c; do basename "$f" .c; done)
# shellcheck disable=SC2086
if ! cmake --build "$fuzzdir" -j2 --target $targets >"$probe/build.log" 2>&1; then
    tail -n 40 "$probe/build.log"
    echo "FAIL: building the fuzz harnesses"
    exit 1
fi
# shellcheck disable=SC2086
"$src/tests/fuzz/run.sh" "$fuzzdir" "$seconds" $(echo "$targets" | sed 's/fuzz_//g')
rc=$?
[ $rc -eq 0 ] && echo "PASS: every harness replayed its regress/ and corpus/ inputs and fuzzed ${seconds}s"
exit $rc
