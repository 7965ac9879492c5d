/*
 * vsummary.c - bounded, mergeable heavy-hitters summary (SpaceSaving with a global error bound).
 *
 * Proof of the invariant stated in vsummary.h. Write t(k) for the true count of key k among the
 * samples that reached the summary, c(k) for its listed count and E for err. The invariant is
 *   I:  listed k:  c(k) - E <= t(k) <= c(k);   unlisted k:  t(k) <= E.
 * It holds for the empty summary (t = 0, E = 0). Each operation keeps it:
 *
 * add(k, n), hit: t(k) and c(k) both grow by n; nothing else changes.
 * add(k, n), miss with room: k was unlisted so 0 <= t(k) <= E; the entry gets c = E + n and
 *   t'(k) = t(k) + n lies in [n, E + n] = [c - E, c].
 * add(k, n), miss when full: the minimum entry m (count c_m) is evicted; let B = max(c_m, E)
 *   and E' = B >= E. m is now unlisted with t(m) <= c_m <= E'. k gets c = B + n; since
 *   t(k) <= E <= B before, t'(k) = t(k) + n lies in [n, B + n] = [c - E', c]. Every other
 *   bound only loosens when E grows.
 * merge(A, B) into R: the candidate count of k is C(k) = a(k) + b(k) where a(k) is k's count in
 *   A if listed, else E_A (and likewise b). By I on A and B, t_A(k) <= a(k) and
 *   t_A(k) >= a(k) - E_A (listed: I; unlisted: t_A >= 0 = a(k) - E_A), so with
 *   t = t_A + t_B:  C(k) - (E_A + E_B) <= t(k) <= C(k). R keeps the cap largest candidates
 *   and sets E_R = max(E_A + E_B, D) where D is the largest dropped candidate (0 if none).
 *   Kept k: C(k) - E_R <= t(k) <= C(k). Dropped k: t(k) <= C(k) <= D <= E_R. A key in
 *   neither summary: t(k) = t_A + t_B <= E_A + E_B <= E_R. So I holds for R.
 *
 * Add-only summaries also satisfy E <= min count once full and sum of counts = vtot (a
 * replacement adds exactly n to the sum and sets E to the evicted minimum), hence
 * E <= vtot / cap. Before the first eviction E = 0 and counts are exact; a merge of summaries
 * with E = 0 and at most cap distinct keys in all drops nothing and keeps E = 0, so it is exact
 * and associative. Counts saturate at UINT64_MAX (the bound is then void for that key).
 *
 * Cluster counters (K clusters, N chits, S csq, D cagree): a merge normalises each side
 * (normalised()) and adds. A side's unaccounted samples u = vtot - chits (or all vtot of a side
 * without cluster info beside one with it) are u clusters of one sample, each adding 1 to K, N,
 * S and D, so N <= vtot becomes N = vtot and 1 <= K <= N <= D <= S still holds; sums keep these
 * inequalities, and so does saturation (min(x, UINT64_MAX) is monotone).
 */
#include "core/store/vsummary.h"

#include <stdlib.h>
#include <string.h>
#include "dcpi/errno.h"

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int dcpi_vsummary_key_cmp(const dcpi_ventry_t *a, const dcpi_ventry_t *b)
{
    if (a->value != b->value)
        return a->value < b->value ? -1 : 1;
    if (a->context0 != b->context0)
        return a->context0 < b->context0 ? -1 : 1;
    if (a->context1 != b->context1)
        return a->context1 < b->context1 ? -1 : 1;
    return 0;
}

/* Listing order: count descending, then key ascending. */
static int rank_cmp(const void *pa, const void *pb)
{
    const dcpi_ventry_t *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return dcpi_vsummary_key_cmp(a, b);
}

dcpi_vsummary_t *dcpi_vsummary_new(unsigned cap)
{
    if (cap == 0)
        cap = DCPI_VSUMMARY_DEFAULT_CAP;
    if (cap > DCPI_VSUMMARY_MAX_CAP)
        return NULL;
    dcpi_vsummary_t *s = calloc(1, sizeof(*s) + (size_t)cap * sizeof(s->e[0]));
    if (s)
        s->cap = cap;
    return s;
}

static dcpi_ventry_t *find(dcpi_vsummary_t *s, const dcpi_ventry_t *key)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (dcpi_vsummary_key_cmp(&s->e[i], key) == 0)
            return &s->e[i];
    return NULL;
}

/* The entry to evict: smallest count, ties broken by the largest key (the last in rank). */
static dcpi_ventry_t *victim(dcpi_vsummary_t *s)
{
    dcpi_ventry_t *m = &s->e[0];
    for (uint32_t i = 1; i < s->n; i++)
        if (rank_cmp(&s->e[i], m) > 0)
            m = &s->e[i];
    return m;
}

void dcpi_vsummary_add(dcpi_vsummary_t *s, uint64_t value, uint64_t c0, uint64_t c1, uint64_t count)
{
    if (!s || count == 0)
        return;
    dcpi_ventry_t key = {value, c0, c1, 0};
    s->vtot = sat_add(s->vtot, count);
    s->seen = sat_add(s->seen, count);
    dcpi_ventry_t *hit = find(s, &key);
    if (hit) {
        hit->count = sat_add(hit->count, count);
        return;
    }
    uint64_t base = s->err;
    dcpi_ventry_t *slot;
    if (s->n < s->cap) {
        slot = &s->e[s->n++];
    } else {
        slot = victim(s);
        if (slot->count > base)
            base = slot->count;
        s->err = base;
    }
    key.count = sat_add(base, count);
    *slot = key;
}

void dcpi_vsummary_cluster(dcpi_vsummary_t *s, uint64_t clusters, uint64_t hits, uint64_t sq,
                           uint64_t agree)
{
    if (!s || hits == 0)
        return;
    s->clusters = sat_add(s->clusters, clusters);
    s->chits = sat_add(s->chits, hits);
    s->csq = sat_add(s->csq, sq);
    s->cagree = sat_add(s->cagree, agree);
}

void dcpi_vsummary_icc(const dcpi_vsummary_t *s, dcpi_vsummary_icc_t *o)
{
    memset(o, 0, sizeof(*o));
    if (!s || s->vtot == 0)
        return;
    double vtot = (double)s->vtot;
    for (uint32_t i = 0; i < s->n; i++)
        o->pa += ((double)s->e[i].count / vtot) * ((double)s->e[i].count / vtot);
    if (s->chits == 0) { /* independent draws */
        o->k = o->n = vtot;
        o->m = 1.0;
        return;
    }
    double one = s->vtot > s->chits ? (double)(s->vtot - s->chits) : 0.0;
    double sq = (double)s->csq + one, agree = (double)s->cagree + one;
    o->k = (double)s->clusters + one;
    o->n = (double)s->chits + one;
    o->m = sq / o->n;
    o->clustered = 1;
    if (sq <= o->n)
        return; /* clusters of one: rho 0 */
    double pw = (agree - o->n) / (sq - o->n);
    double rho = o->pa < 1.0 ? (pw - o->pa) / (1.0 - o->pa) : 1.0;
    o->rho = rho < 0.0 ? 0.0 : rho > 1.0 ? 1.0 : rho;
}

void dcpi_vsummary_seen(dcpi_vsummary_t *s, uint64_t n)
{
    if (s)
        s->seen = sat_add(s->seen, n);
}

void dcpi_vsummary_sort(dcpi_vsummary_t *s)
{
    if (s && s->n > 1)
        qsort(s->e, s->n, sizeof(s->e[0]), rank_cmp);
}

uint64_t dcpi_vsummary_count(const dcpi_vsummary_t *s, uint64_t value, uint64_t c0, uint64_t c1)
{
    dcpi_ventry_t key = {value, c0, c1, 0};
    for (uint32_t i = 0; s && i < s->n; i++)
        if (dcpi_vsummary_key_cmp(&s->e[i], &key) == 0)
            return s->e[i].count;
    return 0;
}

/* A merge candidate: the entry and which summaries listed it (bit 0: dst, bit 1: src). */
typedef struct cand {
    dcpi_ventry_t e;
    unsigned from;
} cand_t;

static int cand_key_cmp(const void *pa, const void *pb)
{
    const cand_t *a = pa, *b = pb;
    int c = dcpi_vsummary_key_cmp(&a->e, &b->e);
    return c ? c : (int)a->from - (int)b->from;
}

static int cand_rank_cmp(const void *pa, const void *pb)
{
    return rank_cmp(&((const cand_t *)pa)->e, &((const cand_t *)pb)->e);
}

/* Combine the key-sorted candidates in place: equal keys (one from each side) are summed, a
 * key listed on one side only gets the other side's err added. Returns the new count. */
static size_t combine(cand_t *c, size_t n, uint64_t dst_err, uint64_t src_err)
{
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        cand_t cur = c[i];
        if (i + 1 < n && dcpi_vsummary_key_cmp(&c[i].e, &c[i + 1].e) == 0) {
            cur.e.count = sat_add(cur.e.count, c[i + 1].e.count);
            i++;
        } else {
            cur.e.count = sat_add(cur.e.count, cur.from == 1 ? src_err : dst_err);
        }
        c[out++] = cur;
    }
    return out;
}

/* Cluster counters K, N, S, D of one side of a merge. */
typedef struct ccount {
    uint64_t k, n, s, d;
} ccount_t;

/* s's cluster counters as a merge adds them (see dcpi_vsummary_merge): its unaccounted samples
 * become single-sample clusters when it has cluster info, or when other_has (the other side
 * has); else no info (all 0). */
static ccount_t normalised(const dcpi_vsummary_t *s, int other_has)
{
    if (s->chits == 0)
        return other_has ? (ccount_t){s->vtot, s->vtot, s->vtot, s->vtot} : (ccount_t){0};
    uint64_t u = s->chits < s->vtot ? s->vtot - s->chits : 0;
    return (ccount_t){sat_add(s->clusters, u), sat_add(s->chits, u), sat_add(s->csq, u),
                      sat_add(s->cagree, u)};
}

static void put_clusters(dcpi_vsummary_t *s, ccount_t a, ccount_t b)
{
    s->clusters = sat_add(a.k, b.k);
    s->chits = sat_add(a.n, b.n);
    s->csq = sat_add(a.s, b.s);
    s->cagree = sat_add(a.d, b.d);
}

int dcpi_vsummary_merge(dcpi_vsummary_t *dst, const dcpi_vsummary_t *src)
{
    if (!dst || !src)
        return DCPI_EINVAL;
    /* both sides read before dst changes (src may be dst) */
    ccount_t cd = normalised(dst, src->chits > 0), cs = normalised(src, dst->chits > 0);
    size_t n = (size_t)dst->n + src->n;
    cand_t *c = malloc((n ? n : 1) * sizeof(*c));
    if (!c)
        return DCPI_ENOMEM;
    for (uint32_t i = 0; i < dst->n; i++)
        c[i] = (cand_t){dst->e[i], 1};
    for (uint32_t i = 0; i < src->n; i++)
        c[dst->n + i] = (cand_t){src->e[i], 2};
    qsort(c, n, sizeof(*c), cand_key_cmp);
    n = combine(c, n, dst->err, src->err);
    qsort(c, n, sizeof(*c), cand_rank_cmp);

    uint64_t err = sat_add(dst->err, src->err);
    if (n > dst->cap && c[dst->cap].e.count > err)
        err = c[dst->cap].e.count;
    uint32_t keep = n > dst->cap ? dst->cap : (uint32_t)n;
    uint64_t vtot = sat_add(dst->vtot, src->vtot);
    uint64_t seen = sat_add(dst->seen, src->seen);
    for (uint32_t i = 0; i < keep; i++)
        dst->e[i] = c[i].e;
    memset(&dst->e[keep], 0, (size_t)(dst->cap - keep) * sizeof(dst->e[0]));
    dst->n = keep;
    dst->err = err;
    dst->vtot = vtot;
    dst->seen = seen;
    put_clusters(dst, cd, cs);
    free(c);
    return 0;
}
