/*
 * check_vsummary.c - the value hotlist summary: exactness below cap, the error bound on skewed
 * and uniform streams against exact counts, heavy hitters, merge bounds and associativity,
 * determinism, the cluster counters (adding, merge normalisation, saturation).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "dcpi/errno.h"
#include "core/store/vsummary.h"

#define NKEYS 1000
#define NADDS 100000

/* A small fixed-seed generator (xorshift64*), independent of libc's rand. */
static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* Zipf (s = 1) sampling over NKEYS values through a cumulative table. */
static double zipf_cdf[NKEYS];

static void zipf_init(void)
{
    double sum = 0;
    for (int i = 0; i < NKEYS; i++)
        sum += 1.0 / (i + 1);
    double acc = 0;
    for (int i = 0; i < NKEYS; i++) {
        acc += 1.0 / (i + 1) / sum;
        zipf_cdf[i] = acc;
    }
}

static unsigned zipf_draw(void)
{
    double u = (double)(rng() >> 11) / (double)(1ull << 53);
    unsigned lo = 0, hi = NKEYS - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (zipf_cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A stream of NADDS keys (index into NKEYS) with counts 1..3; the value of key i is a
 * scrambled 64-bit number and context0 = i % 3, so keys differ in value and context. */
typedef struct stream {
    unsigned key[NADDS];
    unsigned cnt[NADDS];
} stream_t;

static uint64_t key_value(unsigned i)
{
    return 0x9e3779b97f4a7c15ull * (i + 1);
}

static void make_stream(stream_t *st, int zipf, uint64_t seed)
{
    rng_state = seed;
    zipf_init();
    for (int i = 0; i < NADDS; i++) {
        st->key[i] = zipf ? zipf_draw() : (unsigned)(rng() % NKEYS);
        st->cnt[i] = 1 + (unsigned)(rng() % 3);
    }
}

static void feed(dcpi_vsummary_t *s, const stream_t *st, int from, int to, uint64_t *truth)
{
    for (int i = from; i < to; i++) {
        unsigned k = st->key[i];
        dcpi_vsummary_add(s, key_value(k), k % 3, 7, st->cnt[i]);
        if (truth)
            truth[k] += st->cnt[i];
    }
}

/* Check the invariant of vsummary.h against exact counts; returns how many keys are listed. */
static unsigned check_bound(const dcpi_vsummary_t *s, const uint64_t *truth)
{
    unsigned listed = 0;
    uint64_t total = 0;
    for (unsigned k = 0; k < NKEYS; k++) {
        uint64_t c = dcpi_vsummary_count(s, key_value(k), k % 3, 7);
        total += truth[k];
        if (c) {
            listed++;
            ck_assert_uint_le(truth[k], c);
            ck_assert_uint_le(c - truth[k], s->err);
        } else {
            ck_assert_uint_le(truth[k], s->err);
        }
    }
    ck_assert_uint_eq(listed, s->n);
    ck_assert_uint_eq(s->vtot, total);
    return listed;
}

START_TEST(test_exact_below_cap)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(16);
    ck_assert_ptr_nonnull(s);
    for (int r = 0; r < 50; r++)
        for (unsigned k = 0; k < 16; k++)
            dcpi_vsummary_add(s, 100 + k, k, k * 2, k + 1);
    ck_assert_uint_eq(s->n, 16);
    ck_assert_uint_eq(s->err, 0);
    for (unsigned k = 0; k < 16; k++)
        ck_assert_uint_eq(dcpi_vsummary_count(s, 100 + k, k, k * 2), 50 * (k + 1));
    /* same value, other context: a different key */
    ck_assert_uint_eq(dcpi_vsummary_count(s, 100, 1, 0), 0);
    dcpi_vsummary_sort(s);
    ck_assert_uint_eq(s->e[0].value, 115);
    ck_assert_uint_eq(s->e[0].count, 800);
    ck_assert_uint_eq(s->e[15].value, 100);
    ck_assert_uint_eq(s->vtot, 50 * 136);
    ck_assert_uint_eq(s->seen, s->vtot);
    dcpi_vsummary_seen(s, 1000);
    ck_assert_uint_eq(s->seen, s->vtot + 1000);
    dcpi_vsummary_add(s, 1, 0, 0, 0); /* count 0: nothing */
    ck_assert_uint_eq(s->n, 16);
    free(s);
}
END_TEST

START_TEST(test_replace_rule)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(2);
    dcpi_vsummary_add(s, 1, 0, 0, 5);
    dcpi_vsummary_add(s, 2, 0, 0, 3);
    dcpi_vsummary_add(s, 3, 0, 0, 1); /* replaces value 2 (min 3): count 4, err 3 */
    ck_assert_uint_eq(s->err, 3);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 3, 0, 0), 4);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 2, 0, 0), 0);
    dcpi_vsummary_add(s, 4, 0, 0, 1); /* min is 3 (count 4) vs 1 (5): replaces 3 -> 5, err 4 */
    ck_assert_uint_eq(s->err, 4);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 4, 0, 0), 5);
    /* tie 5/5: the larger key (4) goes */
    dcpi_vsummary_add(s, 9, 0, 0, 1);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 1, 0, 0), 5);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 9, 0, 0), 6);
    ck_assert_uint_eq(s->err, 5);
    ck_assert_ptr_null(dcpi_vsummary_new(DCPI_VSUMMARY_MAX_CAP + 1));
    dcpi_vsummary_t *d = dcpi_vsummary_new(0);
    ck_assert_uint_eq(d->cap, DCPI_VSUMMARY_DEFAULT_CAP);
    free(d);
    free(s);
}
END_TEST

static void run_stream(int zipf)
{
    static stream_t st;
    uint64_t *truth = calloc(NKEYS, sizeof(*truth));
    make_stream(&st, zipf, 0x1234567ull);
    dcpi_vsummary_t *s = dcpi_vsummary_new(16);
    feed(s, &st, 0, NADDS, truth);
    check_bound(s, truth);
    ck_assert_uint_eq(s->n, 16);
    ck_assert_uint_le(s->err, s->vtot / s->cap);
    ck_assert_uint_gt(s->err, 0);
    unsigned heavy = 0;
    for (unsigned k = 0; k < NKEYS; k++) {
        if (truth[k] * s->cap > s->vtot) {
            heavy++;
            ck_assert_uint_gt(dcpi_vsummary_count(s, key_value(k), k % 3, 7), 0);
        }
    }
    if (zipf)
        ck_assert_uint_ge(heavy, 2); /* the skewed stream does have heavy hitters */
    uint64_t sum = 0;
    for (unsigned i = 0; i < s->n; i++)
        sum += s->e[i].count;
    ck_assert_uint_eq(sum, s->vtot); /* add-only: counts sum to vtot */
    free(s);
    free(truth);
}

START_TEST(test_bound_zipf)
{
    run_stream(1);
}
END_TEST

START_TEST(test_bound_uniform)
{
    run_stream(0);
}
END_TEST

/* Summaries a, b, c of three parts of one stream. */
static void three_parts(const stream_t *st, unsigned cap, dcpi_vsummary_t *p[3])
{
    int cut[4] = {0, NADDS / 5, NADDS / 2, NADDS};
    for (int i = 0; i < 3; i++) {
        p[i] = dcpi_vsummary_new(cap);
        feed(p[i], st, cut[i], cut[i + 1], NULL);
        dcpi_vsummary_seen(p[i], 10 * (i + 1));
    }
}

static dcpi_vsummary_t *copy(const dcpi_vsummary_t *s)
{
    dcpi_vsummary_t *c = dcpi_vsummary_new(s->cap);
    memcpy(c, s, sizeof(*s) + s->cap * sizeof(s->e[0]));
    return c;
}

/* The three merge orders (a+b)+c, a+(b+c), (c+a)+b. */
static void merge_orders(dcpi_vsummary_t *p[3], dcpi_vsummary_t *r[3])
{
    r[0] = copy(p[0]);
    ck_assert_int_eq(dcpi_vsummary_merge(r[0], p[1]), 0);
    ck_assert_int_eq(dcpi_vsummary_merge(r[0], p[2]), 0);
    dcpi_vsummary_t *bc = copy(p[1]);
    ck_assert_int_eq(dcpi_vsummary_merge(bc, p[2]), 0);
    r[1] = copy(p[0]);
    ck_assert_int_eq(dcpi_vsummary_merge(r[1], bc), 0);
    r[2] = copy(p[2]);
    ck_assert_int_eq(dcpi_vsummary_merge(r[2], p[0]), 0);
    ck_assert_int_eq(dcpi_vsummary_merge(r[2], p[1]), 0);
    free(bc);
}

static void merge_bound(int zipf)
{
    static stream_t st;
    uint64_t *truth = calloc(NKEYS, sizeof(*truth));
    make_stream(&st, zipf, 0xabcdefull);
    for (int i = 0; i < NADDS; i++)
        truth[st.key[i]] += st.cnt[i];
    dcpi_vsummary_t *p[3], *r[3];
    three_parts(&st, 16, p);
    merge_orders(p, r);
    for (int i = 0; i < 3; i++) {
        check_bound(r[i], truth);
        ck_assert_uint_eq(r[i]->vtot, p[0]->vtot + p[1]->vtot + p[2]->vtot);
        ck_assert_uint_eq(r[i]->seen, r[i]->vtot + 60);
        /* every key above err is listed (follows from the bound; check it directly) */
        for (unsigned k = 0; k < NKEYS; k++)
            if (truth[k] > r[i]->err)
                ck_assert_uint_gt(dcpi_vsummary_count(r[i], key_value(k), k % 3, 7), 0);
    }
    if (zipf) /* the top key dominates: listed first in every order */
        for (int i = 0; i < 3; i++)
            ck_assert_uint_eq(r[i]->e[0].value, key_value(0));
    for (int i = 0; i < 3; i++) {
        free(p[i]);
        free(r[i]);
    }
    free(truth);
}

START_TEST(test_merge_bound_zipf)
{
    merge_bound(1);
}
END_TEST

START_TEST(test_merge_bound_uniform)
{
    merge_bound(0);
}
END_TEST

START_TEST(test_merge_exact_associative)
{
    /* 40 distinct keys, cap 64: every summary and merge is exact, all orders identical */
    static stream_t st;
    make_stream(&st, 1, 42);
    for (int i = 0; i < NADDS; i++)
        st.key[i] %= 40;
    uint64_t truth[NKEYS] = {0};
    for (int i = 0; i < NADDS; i++)
        truth[st.key[i]] += st.cnt[i];
    dcpi_vsummary_t *p[3], *r[3];
    three_parts(&st, 64, p);
    merge_orders(p, r);
    size_t bytes = sizeof(*r[0]) + 64 * sizeof(r[0]->e[0]);
    ck_assert_int_eq(memcmp(r[0], r[1], bytes), 0);
    ck_assert_int_eq(memcmp(r[0], r[2], bytes), 0);
    ck_assert_uint_eq(r[0]->err, 0);
    ck_assert_uint_eq(r[0]->n, 40);
    for (unsigned k = 0; k < 40; k++)
        ck_assert_uint_eq(dcpi_vsummary_count(r[0], key_value(k), k % 3, 7), truth[k]);
    for (int i = 0; i < 3; i++) {
        free(p[i]);
        free(r[i]);
    }
}
END_TEST

START_TEST(test_merge_caps_and_self)
{
    dcpi_vsummary_t *big = dcpi_vsummary_new(8), *small = dcpi_vsummary_new(2);
    for (unsigned k = 0; k < 8; k++)
        dcpi_vsummary_add(big, k, 0, 0, 10 + k);
    dcpi_vsummary_add(small, 100, 0, 0, 50);
    dcpi_vsummary_add(small, 7, 0, 0, 1);
    /* merge big (8 keys) into small (cap 2): keeps 100 (50) and 7 (18) */
    ck_assert_int_eq(dcpi_vsummary_merge(small, big), 0);
    ck_assert_uint_eq(small->cap, 2);
    ck_assert_uint_eq(small->n, 2);
    ck_assert_uint_eq(small->e[0].value, 100);
    ck_assert_uint_eq(small->e[0].count, 50);
    ck_assert_uint_eq(small->e[1].value, 7);
    ck_assert_uint_eq(small->e[1].count, 18);
    ck_assert_uint_eq(small->err, 16); /* largest dropped: value 6 with 16 */
    ck_assert_uint_eq(small->vtot, 51 + 8 * 10 + 28);
    /* self merge doubles */
    ck_assert_int_eq(dcpi_vsummary_merge(big, big), 0);
    ck_assert_uint_eq(dcpi_vsummary_count(big, 3, 0, 0), 26);
    ck_assert_uint_eq(big->err, 0);
    ck_assert_int_eq(dcpi_vsummary_merge(NULL, big), DCPI_EINVAL);
    /* nothing dropped but both sides inexact: err is the sum of both errs */
    dcpi_vsummary_t *x = dcpi_vsummary_new(4), *y = dcpi_vsummary_new(4);
    for (uint64_t v = 1; v <= 6; v++) {
        dcpi_vsummary_add(x, v, 0, 0, v); /* 5 replaces 1 (1 + 5), 6 replaces 2 (2 + 6) */
        dcpi_vsummary_add(y, v, 0, 0, v);
    }
    ck_assert_uint_eq(x->err, 2);
    ck_assert_uint_eq(dcpi_vsummary_count(x, 6, 0, 0), 8);
    ck_assert_int_eq(dcpi_vsummary_merge(x, y), 0);
    ck_assert_uint_eq(x->n, 4);
    ck_assert_uint_eq(x->err, 4);
    ck_assert_uint_eq(dcpi_vsummary_count(x, 5, 0, 0), 12); /* true 10: within err 4 */
    ck_assert_uint_eq(dcpi_vsummary_count(x, 3, 0, 0), 6);  /* true 6 */
    ck_assert_uint_eq(dcpi_vsummary_count(x, 2, 0, 0), 0);  /* true 4 <= err */
    free(x);
    free(y);
    free(big);
    free(small);
}
END_TEST

START_TEST(test_deterministic)
{
    static stream_t st;
    make_stream(&st, 1, 7);
    dcpi_vsummary_t *a = dcpi_vsummary_new(16), *b = dcpi_vsummary_new(16);
    feed(a, &st, 0, NADDS, NULL);
    feed(b, &st, 0, NADDS, NULL);
    size_t bytes = sizeof(*a) + 16 * sizeof(a->e[0]);
    ck_assert_int_eq(memcmp(a, b, bytes), 0);
    dcpi_vsummary_sort(a);
    dcpi_vsummary_sort(b);
    ck_assert_int_eq(memcmp(a, b, bytes), 0);
    for (unsigned i = 1; i < a->n; i++)
        ck_assert_uint_ge(a->e[i - 1].count, a->e[i].count);
    free(a);
    free(b);
}
END_TEST

/* ---- cluster counters ---------------------------------------------------------------------- */

static void assert_clusters(const dcpi_vsummary_t *s, uint64_t k, uint64_t n, uint64_t sq,
                            uint64_t d)
{
    ck_assert_uint_eq(s->clusters, k);
    ck_assert_uint_eq(s->chits, n);
    ck_assert_uint_eq(s->csq, sq);
    ck_assert_uint_eq(s->cagree, d);
}

/* n samples of value v as one add (no cluster info). */
static dcpi_vsummary_t *plain(uint64_t v, uint64_t n)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(4);
    dcpi_vsummary_add(s, v, 0, 0, n);
    return s;
}

START_TEST(test_cluster_add)
{
    dcpi_vsummary_t *s = dcpi_vsummary_new(4);
    assert_clusters(s, 0, 0, 0, 0);
    /* a cluster of 3 (values 1, 1, 2: D = 2^2 + 1^2) and one of 4 (all value 1: D = 16) */
    dcpi_vsummary_add(s, 1, 0, 0, 2);
    dcpi_vsummary_add(s, 2, 0, 0, 1);
    dcpi_vsummary_cluster(s, 1, 3, 9, 5);
    dcpi_vsummary_add(s, 1, 0, 0, 4);
    dcpi_vsummary_cluster(s, 1, 4, 16, 16);
    assert_clusters(s, 2, 7, 25, 21);
    ck_assert_uint_eq(s->vtot, 7);
    dcpi_vsummary_cluster(s, 1, 0, 0, 0); /* hits 0: nothing */
    dcpi_vsummary_cluster(NULL, 1, 1, 1, 1);
    assert_clusters(s, 2, 7, 25, 21);
    ck_assert_uint_eq(s->vtot, 7); /* vtot is add's */
    /* saturation */
    dcpi_vsummary_cluster(s, UINT64_MAX - 1, UINT64_MAX - 5, UINT64_MAX, UINT64_MAX - 21);
    assert_clusters(s, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX);
    dcpi_vsummary_cluster(s, 1, 1, 1, 1);
    assert_clusters(s, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX);
    free(s);
}
END_TEST

START_TEST(test_cluster_merge_plain)
{
    /* neither side has cluster info: the result has none */
    dcpi_vsummary_t *a = plain(1, 5), *b = plain(2, 3);
    ck_assert_int_eq(dcpi_vsummary_merge(a, b), 0);
    ck_assert_uint_eq(a->vtot, 8);
    assert_clusters(a, 0, 0, 0, 0);
    ck_assert_int_eq(dcpi_vsummary_merge(a, a), 0); /* self */
    assert_clusters(a, 0, 0, 0, 0);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_cluster_merge_mixed)
{
    /* clustered dst (clusters of 3 and 7: K 2, N 10, S 58, D 40) + unclustered src (vtot 5):
     * src counts as 5 single-sample clusters */
    dcpi_vsummary_t *a = plain(1, 10), *b = plain(2, 5);
    dcpi_vsummary_cluster(a, 2, 10, 58, 40);
    ck_assert_int_eq(dcpi_vsummary_merge(a, b), 0);
    assert_clusters(a, 7, 15, 63, 45);
    ck_assert_uint_eq(a->vtot, 15);
    assert_clusters(b, 0, 0, 0, 0); /* src unchanged */
    /* and the other way round: unclustered dst, clustered src */
    dcpi_vsummary_t *c = plain(2, 5), *d = plain(1, 10);
    dcpi_vsummary_cluster(d, 2, 10, 58, 40);
    ck_assert_int_eq(dcpi_vsummary_merge(c, d), 0);
    assert_clusters(c, 7, 15, 63, 45);
    /* an empty unclustered side adds nothing */
    dcpi_vsummary_t *e = dcpi_vsummary_new(4);
    ck_assert_int_eq(dcpi_vsummary_merge(c, e), 0);
    assert_clusters(c, 7, 15, 63, 45);
    ck_assert_int_eq(dcpi_vsummary_merge(e, c), 0);
    assert_clusters(e, 7, 15, 63, 45);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
}
END_TEST

START_TEST(test_cluster_merge_partial)
{
    /* vtot 10, only 6 in clusters (one of 6: K 1, N 6, S 36, D 20): 4 unaccounted samples */
    dcpi_vsummary_t *a = plain(1, 10), *empty = dcpi_vsummary_new(4);
    dcpi_vsummary_cluster(a, 1, 6, 36, 20);
    ck_assert_int_eq(dcpi_vsummary_merge(a, empty), 0);
    assert_clusters(a, 5, 10, 40, 24);
    /* partial src into partial dst: both normalised (src: vtot 3, one cluster of 2, D 4) */
    dcpi_vsummary_t *b = plain(1, 10), *c = plain(1, 3);
    dcpi_vsummary_cluster(b, 1, 6, 36, 20);
    dcpi_vsummary_cluster(c, 1, 2, 4, 4);
    ck_assert_int_eq(dcpi_vsummary_merge(b, c), 0);
    assert_clusters(b, 5 + 2, 13, 40 + 5, 24 + 5);
    ck_assert_uint_eq(b->chits, b->vtot);
    free(a);
    free(b);
    free(c);
    free(empty);
}
END_TEST

START_TEST(test_cluster_merge_self_and_saturation)
{
    /* src == dst, partial: both sides normalised before either changes, then doubled */
    dcpi_vsummary_t *a = plain(1, 10);
    dcpi_vsummary_cluster(a, 1, 6, 36, 20);
    ck_assert_int_eq(dcpi_vsummary_merge(a, a), 0);
    assert_clusters(a, 10, 20, 80, 48);
    ck_assert_uint_eq(a->vtot, 20);
    /* counters saturate at UINT64_MAX; the order N <= D <= S still holds */
    dcpi_vsummary_t *b = plain(1, 10), *c = plain(1, 10);
    dcpi_vsummary_cluster(b, 2, 10, UINT64_MAX - 10, UINT64_MAX / 2);
    dcpi_vsummary_cluster(c, 2, 10, UINT64_MAX - 10, UINT64_MAX / 2 + 3);
    ck_assert_int_eq(dcpi_vsummary_merge(b, c), 0);
    assert_clusters(b, 4, 20, UINT64_MAX, UINT64_MAX);
    free(a);
    free(b);
    free(c);
}
END_TEST

/* One simulated clustered backend: clusters of 1..8 samples of 3 values, counters computed
 * from the samples as a backend would, over adds [from, to) of cluster index. */
static void clustered_part(dcpi_vsummary_t *s, int from, int to, uint64_t seed)
{
    rng_state = seed;
    for (int c = 0; c < to; c++) {
        uint64_t n = 1 + rng() % 8, y[3] = {0};
        for (uint64_t i = 0; i < n; i++)
            y[rng() % 3]++;
        if (c < from)
            continue;
        for (unsigned v = 0; v < 3; v++)
            dcpi_vsummary_add(s, v, 0, 0, y[v]);
        dcpi_vsummary_cluster(s, 1, n, n * n, y[0] * y[0] + y[1] * y[1] + y[2] * y[2]);
    }
}

START_TEST(test_cluster_merge_additive)
{
    /* clustered parts merged in any order give the counters of the whole */
    dcpi_vsummary_t *whole = dcpi_vsummary_new(4), *p[3], *r[3];
    clustered_part(whole, 0, 300, 99);
    int cut[4] = {0, 50, 170, 300};
    for (int i = 0; i < 3; i++) {
        p[i] = dcpi_vsummary_new(4);
        clustered_part(p[i], cut[i], cut[i + 1], 99);
    }
    ck_assert_uint_eq(whole->clusters, 300);
    ck_assert_uint_eq(whole->chits, whole->vtot);
    ck_assert_uint_le(whole->chits, whole->cagree);
    ck_assert_uint_le(whole->cagree, whole->csq);
    merge_orders(p, r);
    for (int i = 0; i < 3; i++) {
        assert_clusters(r[i], whole->clusters, whole->chits, whole->csq, whole->cagree);
        ck_assert_uint_eq(r[i]->vtot, whole->vtot);
    }
    for (int i = 0; i < 3; i++) {
        free(p[i]);
        free(r[i]);
    }
    free(whole);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vsummary");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_exact_below_cap);
    tcase_add_test(tc, test_replace_rule);
    tcase_add_test(tc, test_bound_zipf);
    tcase_add_test(tc, test_bound_uniform);
    tcase_add_test(tc, test_merge_bound_zipf);
    tcase_add_test(tc, test_merge_bound_uniform);
    tcase_add_test(tc, test_merge_exact_associative);
    tcase_add_test(tc, test_merge_caps_and_self);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_cluster_add);
    tcase_add_test(tc, test_cluster_merge_plain);
    tcase_add_test(tc, test_cluster_merge_mixed);
    tcase_add_test(tc, test_cluster_merge_partial);
    tcase_add_test(tc, test_cluster_merge_self_and_saturation);
    tcase_add_test(tc, test_cluster_merge_additive);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
