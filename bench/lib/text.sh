# bench/lib/text.sh - the text the real-program benchmarks compress (sourced): bench_text N
# prints N words drawn from a fixed generator (awk srand(7): the same bytes on every run), 12 a
# line; 600000 words are 3.3 MB that compress like text. bench/hotlist_real.sh,
# bench/hotlist_exact.sh and bench/bzip2_unit.sh feed it to bzip2, xz and gzip.
bench_text() {
    awk -v n="$1" 'BEGIN { srand(7); for (i = 0; i < n; i++) {
        printf "%s%s", substr("lorem ipsum dolor sit amet consectetur adipiscing elit sed do", int(rand() * 50) + 1, int(rand() * 8) + 1), (i % 12 ? " " : "\n") } }'
}
