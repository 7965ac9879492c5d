/*
 * bench/bench_parser.c - speed of trace_parser_next and size of the trace (docs/trace-format.md).
 *
 * Encodes ~10M entries of a 20-instruction loop (contexts off) with 0, 1 and 2 values per entry,
 * then times parsing the whole buffer several times (best pass) and prints entries/s and
 * bytes/entry. Target: >= 100M entries/s without values, <= 8 bytes/entry.
 *
 * Build (until CMake wires it), from the source root after building libdcpi in build-trace:
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -I. bench/bench_parser.c -Lbuild-trace -ldcpi \
 *      -Wl,-rpath,$PWD/build-trace -o build-trace/bench_parser
 * Run: build-trace/bench_parser [entries]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dcpi/errno.h"
#include "trace/trace.h"

#define BODY   20
#define PASSES 5

static const uint8_t body_bytes[BODY][5] = {{4, 0x48, 0x8b, 0x43, 0x08},
                                            {4, 0x48, 0x83, 0xc0, 0x01},
                                            {3, 0x48, 0x89, 0xd8},
                                            {4, 0x48, 0x89, 0x43, 0x08},
                                            {4, 0x48, 0x0f, 0xaf, 0xc3},
                                            {3, 0x48, 0x01, 0xd8},
                                            {1, 0x90},
                                            {4, 0x48, 0x8b, 0x43, 0x08},
                                            {3, 0x48, 0x89, 0xd8},
                                            {4, 0x48, 0x83, 0xc0, 0x01},
                                            {4, 0xf2, 0x0f, 0x58, 0xc1},
                                            {4, 0x48, 0x89, 0x43, 0x08},
                                            {3, 0x48, 0x01, 0xd8},
                                            {3, 0x48, 0x89, 0xd8},
                                            {4, 0x48, 0x8b, 0x43, 0x08},
                                            {4, 0x48, 0x83, 0xc0, 0x01},
                                            {4, 0x48, 0x0f, 0xaf, 0xc3},
                                            {3, 0x48, 0x01, 0xd8},
                                            {4, 0x48, 0x89, 0x43, 0x08},
                                            {2, 0x75, 0xb4}};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Encode n entries with nvalues values each (an address walking an array, a counter). */
static size_t encode(uint8_t *buf, size_t cap, const trace_inst_t *body, long n, int nvalues)
{
    static trace_encoder_t e;
    trace_value_t kinds[2] = {TRACE_EA, TRACE_RAX};
    uint64_t values[2] = {0x7ffd10000000ull, 0};
    trace_encoder_init(&e, buf, cap);
    trace_encoder_burst(&e, 1000, 1000, 1, 0);
    for (long i = 0; i < n;) {
        uint64_t pc = 0x401130;
        for (int k = 0; k < BODY && i < n; k++, i++) {
            values[0] += 8;
            values[1] = (uint64_t)i;
            if (trace_encoder_entry(&e, &body[k], pc, 0, 0, nvalues, kinds, values, 0) < 0) {
                fprintf(stderr, "bench_parser: encoder refused entry %ld\n", i);
                exit(1);
            }
            pc += body[k].length;
        }
    }
    return trace_encoder_size(&e);
}

static double parse_best(const uint8_t *buf, size_t len, long n, int nvalues, uint64_t *sum)
{
    static trace_parser_t p;
    double best = 1e30;
    for (int pass = 0; pass < PASSES; pass++) {
        uint64_t pc = 0, a = 0, b = 0, s = 0;
        long count = 0;
        double t0 = now();
        trace_parser_init(&p, buf, len);
        if (nvalues == 0) {
            while (trace_parser_next(&p, NULL, &pc, NULL, NULL, 0) >= 0) {
                s += pc;
                count++;
            }
        } else {
            while (trace_parser_next(&p, NULL, &pc, NULL, NULL, 2, &a, &b) >= 0) {
                s += pc + a + b;
                count++;
            }
        }
        double t = now() - t0;
        if (count != n) {
            fprintf(stderr, "bench_parser: parsed %ld of %ld entries: %s\n", count, n,
                    trace_parser_error(&p));
            exit(1);
        }
        *sum += s;
        best = t < best ? t : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000L;
    trace_inst_t body[BODY];
    uint64_t sum = 0;
    for (int k = 0; k < BODY; k++) {
        if (trace_inst_decode(body_bytes[k] + 1, body_bytes[k][0], &body[k]) < 0) {
            fprintf(stderr, "bench_parser: cannot decode body instruction %d\n", k);
            return 1;
        }
    }
    size_t cap = (size_t)n * 16 + 64;
    uint8_t *buf = malloc(cap);
    if (buf == NULL || n <= 0) {
        fprintf(stderr, "bench_parser: %s\n", dcpi_strerror(DCPI_ENOMEM));
        return 1;
    }
    printf("%-10s %12s %12s %14s\n", "values", "entries", "bytes/entry", "entries/s");
    for (int nv = 0; nv <= 2; nv++) {
        size_t len = encode(buf, cap, body, n, nv);
        double t = parse_best(buf, len, n, nv, &sum);
        printf("%-10d %12ld %12.3f %14.3e\n", nv, n, (double)len / (double)n, (double)n / t);
    }
    printf("(checksum %llu, best of %d passes)\n", (unsigned long long)sum, PASSES);
    free(buf);
    return 0;
}
