/*
 * vsummary.h - one instruction's value hotlist: a bounded, mergeable heavy-hitters summary of
 * (value, context0, context1) keys with counts (SpaceSaving family).
 *
 * Invariant (proved in vsummary.c), for every key k with true count t(k) among the samples
 * added to s (directly or through merges):
 *   - k listed with count c:  c - err <= t(k) <= c   (a count is at most err above the truth);
 *   - k not listed:           t(k) <= err;
 * so every key with t(k) > err is listed. A summary built by dcpi_vsummary_add alone also has
 * err <= vtot / cap, so every key with t(k) > vtot / cap is listed. While fewer than cap
 * distinct keys were ever added (and merged), err is 0 and every count is exact.
 *
 * vtot counts the samples added (sum of all counts ever given to add, plus merged vtot); seen
 * counts the candidate samples (the added ones plus those not admitted, e.g. thinned by a rate
 * limit), so thld = seen / vtot is the reciprocal admission probability.
 *
 * Cluster counters: a backend that takes value samples in clusters (one breakpoint arm: several
 * consecutive executions of the instruction) records, per cluster i with n_i value samples of
 * which y_it have triple t, clusters += 1, chits += n_i, csq += n_i^2 and cagree += the sum over
 * the cluster's distinct triples t of y_it^2. They only add (dcpi_vsummary_cluster, merges),
 * saturating. chits == 0 means no cluster information: every value sample is an independent
 * draw (then all four are 0). With chits > 0 they keep
 *   1 <= clusters <= chits <= vtot  and  chits <= cagree <= csq
 * (chits is normally vtot; samples not accounted count as single-sample clusters in a merge).
 *
 * Deterministic: ties are broken by key order (value, then context0, then context1), never by
 * position or hashing, so equal inputs give equal bytes. Not thread-safe.
 */
#ifndef DCPI_CORE_VSUMMARY_H
#define DCPI_CORE_VSUMMARY_H

#include <stdint.h>

/* Default hotlist size (dcpid -vhot N). */
#define DCPI_VSUMMARY_DEFAULT_CAP 16
/* Largest accepted hotlist size. */
#define DCPI_VSUMMARY_MAX_CAP 65536

typedef struct dcpi_ventry {
    uint64_t value, context0, context1, count;
} dcpi_ventry_t;

typedef struct dcpi_vsummary {
    uint32_t cap;      /* K: hotlist size */
    uint32_t n;        /* entries in use */
    uint64_t vtot;     /* value samples added (sum of all counts ever added) */
    uint64_t seen;     /* candidate samples (>= vtot); thld = seen / vtot */
    uint64_t err;      /* error bound, see above */
    uint64_t clusters; /* clusters that contributed value samples */
    uint64_t chits;    /* value samples accounted in clusters; 0: no cluster information */
    uint64_t csq;      /* sum over clusters of (its value samples)^2 */
    uint64_t cagree;   /* sum over clusters, over its distinct triples, of (their samples)^2 */
    dcpi_ventry_t e[]; /* cap entries: no allocation after creation */
} dcpi_vsummary_t;

/* A new empty summary with room for cap entries (1..DCPI_VSUMMARY_MAX_CAP; 0 means
 * DCPI_VSUMMARY_DEFAULT_CAP). calloc'd: release with free(). NULL on ENOMEM or a bad cap. */
dcpi_vsummary_t *dcpi_vsummary_new(unsigned cap);

/* Add count samples of one key (vtot and seen grow by count). A hit adds to the entry; a miss
 * with room inserts (count + err); a miss when full replaces the minimum entry m (ties: the
 * largest key) with count max(m.count, err) + count and err becomes max(err, m.count).
 * O(cap), no allocation. Counts saturate at UINT64_MAX. count 0 does nothing. */
void dcpi_vsummary_add(dcpi_vsummary_t *s, uint64_t value, uint64_t c0, uint64_t c1,
                       uint64_t count);

/* n candidate samples that were seen but not added (thinned): seen += n. */
void dcpi_vsummary_seen(dcpi_vsummary_t *s, uint64_t n);

/* Add whole clusters' totals to the cluster counters: clusters, hits (to chits), sq (to csq),
 * agree (to cagree); see above. The caller keeps 1 <= clusters <= hits <= agree <= sq, e.g. one
 * cluster of n samples with y_t of triple t: 1, n, n^2, sum of y_t^2. Saturates at UINT64_MAX.
 * hits 0 does nothing. vtot is not touched: the samples are added with dcpi_vsummary_add. */
void dcpi_vsummary_cluster(dcpi_vsummary_t *s, uint64_t clusters, uint64_t hits, uint64_t sq,
                           uint64_t agree);

/* How alike the values of s's clusters are: k clusters and n samples (the samples not accounted
 * in a cluster as clusters of one; k = n = vtot when s has no cluster information), m = S / N
 * the clusters' mean size weighted by size, pa = the sum of the hotlist's squared shares (how
 * often two samples agree), rho the values' intraclass correlation over all of them, how much
 * more often two samples of one cluster agree: ((D - N) / (S - N) - pa) / (1 - pa) clamped to
 * [0, 1] (0 with clusters of one; 1 when pa is 1). core/listing/hotlist.c's bound and the inproc
 * backend's choice of an arm's executions (core/values/inproc.c) read it. */
typedef struct dcpi_vsummary_icc {
    double k, n, m, pa, rho;
    int clustered; /* s had cluster information */
} dcpi_vsummary_icc_t;
void dcpi_vsummary_icc(const dcpi_vsummary_t *s, dcpi_vsummary_icc_t *out);

/* Merge src into dst (dst's cap is kept; src may be dst). Keys present in both have their
 * counts summed; a key missing from one summary counts that summary's err (its bound for
 * unlisted keys: 0 when nothing was ever evicted); the cap largest (count desc, key asc) are
 * kept and err = max(dst.err + src.err, largest dropped count). vtot and seen add. Cluster
 * counters add after each side is normalised: a side with chits > 0 but chits < vtot gets its
 * vtot - chits unaccounted samples as single-sample clusters (all four counters grow by
 * vtot - chits); a side with chits == 0 and vtot > 0 when the other has chits > 0 counts as
 * vtot single-sample clusters (all four are vtot); when neither has chits > 0 they stay 0.
 * Leaves dst sorted (dcpi_vsummary_sort). Returns 0, DCPI_EINVAL or DCPI_ENOMEM (dst
 * unchanged). */
int dcpi_vsummary_merge(dcpi_vsummary_t *dst, const dcpi_vsummary_t *src);

/* Sort entries by count descending, then key ascending. */
void dcpi_vsummary_sort(dcpi_vsummary_t *s);

/* Key order (value, then context0, then context1, ascending): -1, 0 or 1. */
int dcpi_vsummary_key_cmp(const dcpi_ventry_t *a, const dcpi_ventry_t *b);

/* Count of one key (0 if not listed). */
uint64_t dcpi_vsummary_count(const dcpi_vsummary_t *s, uint64_t value, uint64_t c0, uint64_t c1);

#endif
