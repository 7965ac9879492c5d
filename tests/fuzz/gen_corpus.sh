#!/bin/sh
# tests/fuzz/gen_corpus.sh - (re)writes the seed corpora in tests/fuzz/corpus/<harness>/:
# the golden files of tests/data, valid inputs made by dcpi's own encoders (gen_corpus.c), and
# small hand-written text and ELF seeds. Run it by hand after a format change and commit the
# result. Usage: tests/fuzz/gen_corpus.sh BUILD_DIR   (a build with libdcpi_core.a built)
set -eu
build=${1:?usage: gen_corpus.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$src/tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for h in profile vprof trace hosts kallsyms elf control gperf gmon stack tracefile; do mkdir -p "$out/$h"; done
rm -f "$out"/*/gen-* "$out"/*/golden-* "$out"/*/text-* "$out"/*/elf-* "$out"/*/gz-*

# Golden files of the Check suites.
cp "$src/tests/data/golden-0.07.prof" "$out/profile/golden-0.07.prof"
cp "$src/tests/data/golden.vprof" "$out/vprof/golden.vprof"
cp "$src/tests/data/golden-trace.bin" "$out/trace/golden-trace.bin"

# Binary seeds from dcpi's encoders.
cc -std=c11 -D_GNU_SOURCE -I"$src/include" -I"$src" -o "$tmp/gen_corpus" \
    "$src/tests/fuzz/gen_corpus.c" "$build/libdcpi_core.a" \
    $(pkg-config --libs libdw libelf) -lZydis -lstdc++ -lm -ldl \
    $(pkg-config --libs libprotobuf-c zlib 2>/dev/null || true) -lpthread
"$tmp/gen_corpus" "$out"

printf 'not a gperftools profile at all\n' >"$out/gperf/text-not-profile"
printf 'gmon\001\000\000\000' >"$out/gmon/text-header-cut"

# hosts files.
printf '# host platform\nwalnut alpha\npecan beta # trailing comment\n\n' >"$out/hosts/text-ok"
printf 'walnut alpha\nlonely\n' >"$out/hosts/text-one-word"
printf 'walnut alpha beta\n' >"$out/hosts/text-three-words"
printf 'walnut ../up\nhazel a/b\n' >"$out/hosts/text-bad-name"
printf '\t walnut\t\tgamma\r\n#only a comment' >"$out/hosts/text-blanks"

# kallsyms: text, weak, data (skipped) and module symbols.
printf '%s\n' 'ffffffff81000000 T _stext' 'ffffffff81000100 t do_one_initcall' \
    'ffffffff81000200 W weak_fn' 'ffffffff81000200 T strong_fn' 'ffffffff82000000 D data_sym' \
    'ffffffffc0000000 t mod_fn	[mymod]' '0000000000000000 T zero_addr' \
    'ffffffff81000300 T _ZN3foo3barEv' >"$out/kallsyms/text-mixed"
printf 'ffffffff81000000 T a\nffffffff81000010 T b\nnot a line\nffffffff81000020 T' \
    >"$out/kallsyms/text-broken"
gzip -n -c "$out/kallsyms/text-mixed" >"$out/kallsyms/gz-mixed" # as dcpid writes it now

# control-socket answers.
printf 'ok\n' >"$out/control/text-ok"
printf 'daemon pid 42\nevents cpu-clock\nok\n' >"$out/control/text-status"
printf 'flushing\nerror: flush failed: no space left on device\n' >"$out/control/text-error"
printf 'partial line without end' >"$out/control/text-no-final"

# ELF: a tiny static program (symbols, build-id), the same stripped, a shared object, and the
# first 64 bytes alone (an ELF header whose tables are missing).
cat >"$tmp/tiny.c" <<'C'
int counter;
int helper(int x) { return x * 3 + counter; }
void _start(void) { counter = helper(4); for (;;) __asm__ volatile("hlt"); }
C
cc -Os -nostdlib -static -fno-asynchronous-unwind-tables -Wl,--build-id -o "$tmp/tiny" "$tmp/tiny.c"
cp "$tmp/tiny" "$out/elf/elf-tiny"
strip -o "$out/elf/elf-tiny-stripped" "$tmp/tiny"
cc -Os -nostdlib -shared -fPIC -fno-asynchronous-unwind-tables -o "$out/elf/elf-tiny.so" \
    "$tmp/tiny.c"
head -c 64 "$tmp/tiny" >"$out/elf/elf-header-only"
printf 'not an ELF file\n' >"$out/elf/text-not-elf"
du -sb "$out"/* | sed "s|$out/||"
