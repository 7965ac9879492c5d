/*
 * arm_align.c - which executions the inproc backend's arms take, against the exact sequence of
 * an instruction's values (bench/arm_starts.sh drives it).
 *
 * The program is deterministic (ASLR off), so every run executes the instruction with the same
 * sequence of values; an arm's hits are consecutive executions, so each arm's values (the agent's
 * DCPI_AGENT_DUMP records, core/capture/stepring.h) occur once, or a few times, in that sequence:
 * found there, the arm's start is known as an execution index. Printed:
 *   - the arms found (at one place, at several: weighed 1/k each, not found);
 *   - the share of the sequence's most frequent value V among the arms' hits against the exact;
 *   - the arms' starts per tenth of the run (each tenth has a tenth of the executions);
 *   - what the execution before each start held (V or another) against all executions: the
 *     sampling unit picks an execution with a probability proportional to the time since the
 *     one before, and this says which executions follow the longer times;
 *   - the exact share of V in windows of an arm's mean size after a V and after another value:
 *     how much a start's position carries into its arm.
 *
 * Usage: arm_align SEQ PCLOW REG WIDTH DUMP...
 *   SEQ    every execution's value in order, one per line (decimal, or hex with 0x);
 *   PCLOW  the instruction's address modulo 4096 (the image's base differs under the agent);
 *   REG    the register read before the instruction, perf's x86-64 index (0 ax, 1 bx, ...);
 *   WIDTH  bits compared (8, 16, 32 or 64);
 *   DUMP   the agent's dump files.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/capture/cpustate.h"
#include "core/capture/stepring.h"

#define MIN_HITS  4    /* shorter arms are not looked for */
#define MAX_PLACE 4096 /* an arm found at more places than this is left out */
#define TENTHS    10

static uint64_t *seq, mask, V; /* V: the sequence's most frequent value */
static uint32_t *by_val;       /* positions sorted by value, then position */
static size_t nseq;

static int cmp_pos(const void *a, const void *b)
{
    uint64_t x = seq[*(const uint32_t *)a], y = seq[*(const uint32_t *)b];
    if (x != y)
        return x < y ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The first place of by_val whose value is at least v (after: more than v). */
static size_t bound_of(uint64_t v, int after)
{
    size_t a = 0, b = nseq;
    while (a < b) {
        size_t m = (a + b) / 2;
        uint64_t x = seq[by_val[m]];
        if (x < v || (after && x == v))
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* [*lo, *hi) of by_val holding value v. */
static void range_of(uint64_t v, size_t *lo, size_t *hi)
{
    *lo = bound_of(v, 0);
    *hi = bound_of(v, 1);
}

static int read_seq(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t cap = 1 << 20;
    seq = malloc(cap * sizeof *seq);
    char line[128];
    while (seq && fgets(line, sizeof line, f)) {
        char *end;
        uint64_t v = strtoull(line, &end, 0);
        if (end == line)
            continue;
        if (nseq == cap)
            seq = realloc(seq, (cap *= 2) * sizeof *seq);
        if (seq)
            seq[nseq++] = v & mask;
    }
    fclose(f);
    return seq && nseq ? 0 : -1;
}

static struct {
    double arms, once, several, none, hits, hits_v;
    double tenth[TENTHS], prev_v, size_sum;
} st;

/* One arm's values: where they occur in the sequence, into st. */
static void place(const uint64_t *v, size_t n)
{
    st.arms++;
    size_t anchor = 0, best = SIZE_MAX, alo = 0, ahi = 0;
    for (size_t i = 0; i < n; i++) {
        size_t lo, hi;
        range_of(v[i], &lo, &hi);
        if (hi - lo < best) {
            best = hi - lo;
            anchor = i;
            alo = lo;
            ahi = hi;
        }
    }
    static uint32_t at[MAX_PLACE];
    size_t k = 0;
    for (size_t j = alo; j < ahi; j++) {
        size_t p = by_val[j];
        if (p < anchor || p - anchor + n > nseq)
            continue;
        p -= anchor;
        size_t i = 0;
        while (i < n && seq[p + i] == v[i])
            i++;
        if (i == n) {
            if (k == MAX_PLACE) {
                k = MAX_PLACE + 1;
                break;
            }
            at[k++] = (uint32_t)p;
        }
    }
    if (k == 0 || k > MAX_PLACE) {
        st.none++;
        return;
    }
    k == 1 ? st.once++ : st.several++;
    for (size_t i = 0; i < k; i++) {
        st.tenth[(size_t)at[i] * TENTHS / nseq] += 1.0 / (double)k;
        if (at[i] > 0)
            st.prev_v += (seq[at[i] - 1] == V) / (double)k;
    }
    st.size_sum += (double)n;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: arm_align SEQ PCLOW REG WIDTH DUMP...\n");
        return 2;
    }
    uint64_t pclow = strtoull(argv[2], NULL, 0) & 0xfff;
    int reg = atoi(argv[3]), width = atoi(argv[4]);
    if (reg < 0 || reg >= STEP_NREGS || (width != 8 && width != 16 && width != 32 && width != 64)) {
        fprintf(stderr, "arm_align: bad register %s or width %s\n", argv[3], argv[4]);
        return 2;
    }
    mask = width == 64 ? ~0ull : (1ull << width) - 1;
    if (read_seq(argv[1]) != 0) {
        fprintf(stderr, "arm_align: %s: no values\n", argv[1]);
        return 1;
    }
    by_val = malloc(nseq * sizeof *by_val);
    if (!by_val)
        return 1;
    for (size_t i = 0; i < nseq; i++)
        by_val[i] = (uint32_t)i;
    qsort(by_val, nseq, sizeof *by_val, cmp_pos);
    size_t vn = 0;
    for (size_t i = 0, j; i < nseq; i = j) {
        for (j = i; j < nseq && seq[by_val[j]] == seq[by_val[i]]; j++)
            ;
        if (j - i > vn) {
            vn = j - i;
            V = seq[by_val[i]];
        }
    }
    static uint64_t vals[STEP_ARM_HITS_MAX + 1];
    for (int a = 5; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        if (!f) {
            fprintf(stderr, "arm_align: %s: cannot open\n", argv[a]);
            continue;
        }
        step_record_t r;
        uint32_t cur_tid = 0, cur_seq = 0;
        size_t n = 0;
        while (fread(&r, sizeof r, 1, f) == 1) {
            if (!(r.flags & STEP_REC_HIT) || (r.before[DCPI_REG_IP] & 0xfff) != pclow)
                continue;
            if (n && (r.tid != cur_tid || r.arm_seq != cur_seq || n > STEP_ARM_HITS_MAX)) {
                if (n >= MIN_HITS)
                    place(vals, n);
                n = 0;
            }
            cur_tid = r.tid;
            cur_seq = r.arm_seq;
            uint64_t x = r.before[reg] & mask;
            vals[n++] = x;
            st.hits++;
            st.hits_v += x == V;
        }
        if (n >= MIN_HITS)
            place(vals, n);
        fclose(f);
    }
    double found = st.once + st.several, exact = (double)vn / (double)nseq;
    printf("executions %zu, value 0x%" PRIx64 " in %.1f%%\n", nseq, V, 100 * exact);
    printf("arms %.0f (of >= %d hits): found once %.0f, at several places %.0f, not found %.0f; "
           "mean hits %.1f\n",
           st.arms, MIN_HITS, st.once, st.several, st.none, found ? st.size_sum / found : 0);
    printf("hits %.0f: 0x%" PRIx64 " sampled %.1f%%, exact %.1f%%\n", st.hits, V,
           st.hits ? 100 * st.hits_v / st.hits : 0, 100 * exact);
    printf("arm starts per tenth of the run (%.1f each if even):", found / TENTHS);
    for (int t = 0; t < TENTHS; t++)
        printf(" %.0f", st.tenth[t]);
    printf("\nthe execution before a start holds 0x%" PRIx64 ": %.1f%% of starts, %.1f%% of all\n",
           V, found ? 100 * st.prev_v / found : 0, 100 * exact);
    size_t m = found ? (size_t)(st.size_sum / found + 0.5) : 0;
    if (m > 0 && m < nseq) {
        double after_v = 0, after_o = 0, n_v = 0, n_o = 0, run = 0;
        for (size_t i = 0; i < m; i++)
            run += seq[i] == V;
        for (size_t p = 1; p + m <= nseq; p++) { /* window [p, p + m) */
            run += (seq[p + m - 1] == V) - (seq[p - 1] == V);
            if (seq[p - 1] == V) {
                after_v += run;
                n_v++;
            } else {
                after_o += run;
                n_o++;
            }
        }
        printf("exact share of 0x%" PRIx64 " in %zu executions after a 0x%" PRIx64
               ": %.1f%%, after another value: %.1f%%\n",
               V, m, V, n_v ? 100 * after_v / (n_v * (double)m) : 0,
               n_o ? 100 * after_o / (n_o * (double)m) : 0);
    }
    return 0;
}
