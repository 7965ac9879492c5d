/*
 * cluster.c - the clusters of a plugin's value samples (values-int.h, dcpi_values_clusters_t).
 *
 * The inproc backend's arm takes up to DCPI_AGENT_HITS consecutive executions of an instruction
 * (agent/agent.c): its hits are one cluster, not independent draws, and the bound of a hotlist
 * (dcpilist's +-B, core/listing/hotlist.c) needs to know how alike a cluster's values are. So
 * each summary counts, besides its values, its clusters K, the samples in them N, the sum of the
 * squares of their sizes S and the sum over clusters and values of the square of the cluster's
 * count of that value D (core/store/vsummary.h, dcpi_vsummary_cluster).
 *
 * A plugin returns its vsamples for a whole trace without saying which entry each came from.
 * The entries' clusters are kept here in trace order (dcpi__values_cluster_put); at the merge,
 * the vsamples of one pc are matched to that pc's entries in order (the k-th of V vsamples to
 * entry floor(k E / V) of E: one to one for a plugin that returns one vsample per entry, in
 * order, and order-preserving for one that returns fewer or more). The counts of a cluster that
 * spans two traces go on in the open-cluster table (a cluster is open until its slot is needed
 * by another one: LRU among CL_PROBE slots).
 *
 * No allocation after dcpi__values_clusters_new.
 */
#include "core/values/values-int.h"

#include <stdlib.h>
#include <string.h>

#define CL_SLOTS 256 /* open clusters per plugin */
#define CL_PROBE 8   /* slots looked at for one cluster */
#define CL_VALS  64  /* distinct values one cluster counts (STEP_ARM_HITS_MAX) */

typedef struct cl_entry {
    uint64_t pc, cluster; /* cluster 0: not clustered */
} cl_entry_t;

typedef struct cl_open {
    uint64_t cluster, pc, used; /* cluster 0: free */
    uint32_t m, nv;             /* samples so far, distinct values */
    uint64_t vh[CL_VALS];       /* the values' hashes */
    uint32_t vc[CL_VALS];
} cl_open_t;

struct dcpi_values_clusters {
    unsigned n, any; /* entries in this trace, whether any is clustered */
    unsigned nvs;    /* vsamples matched (0: none clustered) */
    uint64_t stamp;
    cl_entry_t e[VSAMPLE_BUFFER_SIZE];
    uint32_t eord[VSAMPLE_BUFFER_SIZE], vord[VSAMPLE_BUFFER_SIZE];
    const vsample_t *vs;                /* the vsamples being matched (sort) */
    uint64_t vkey[VSAMPLE_BUFFER_SIZE]; /* each vsample's cluster, 0: none */
    cl_open_t open[CL_SLOTS];
};

dcpi_values_clusters_t *dcpi__values_clusters_new(void)
{
    return calloc(1, sizeof(dcpi_values_clusters_t));
}

void dcpi__values_cluster_put(dcpi_values_clusters_t *c, uint64_t pc, uint64_t cluster)
{
    if (!c || c->n >= VSAMPLE_BUFFER_SIZE)
        return;
    c->e[c->n++] = (cl_entry_t){pc, cluster};
    c->any |= cluster != 0;
}

/* qsort by (pc, position): entries, then vsamples (one sort at a time: the arrays are the
 * plugin's and the merge runs on one thread) */
static const dcpi_values_clusters_t *sorting;

static int cmp_entry(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t p = sorting->e[i].pc, q = sorting->e[j].pc;
    return p != q ? (p < q ? -1 : 1) : (i < j ? -1 : i > j);
}

static int cmp_vsample(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t p = sorting->vs[i].pc, q = sorting->vs[j].pc;
    return p != q ? (p < q ? -1 : 1) : (i < j ? -1 : i > j);
}

/* c->vkey[i] for each of the n vsamples: the cluster of the entry it is matched to. */
static void match(dcpi_values_clusters_t *c, const vsample_t *vs, unsigned n)
{
    for (unsigned i = 0; i < c->n; i++)
        c->eord[i] = i;
    for (unsigned i = 0; i < n; i++)
        c->vord[i] = i, c->vkey[i] = 0;
    sorting = c;
    qsort(c->eord, c->n, sizeof(*c->eord), cmp_entry);
    qsort(c->vord, n, sizeof(*c->vord), cmp_vsample);
    unsigned ei = 0;
    for (unsigned vi = 0; vi < n;) {
        uint64_t pc = vs[c->vord[vi]].pc;
        unsigned v_end = vi;
        while (v_end < n && vs[c->vord[v_end]].pc == pc)
            v_end++;
        while (ei < c->n && c->e[c->eord[ei]].pc < pc)
            ei++;
        unsigned e_end = ei;
        while (e_end < c->n && c->e[c->eord[e_end]].pc == pc)
            e_end++;
        uint64_t nv = v_end - vi, ne = e_end - ei;
        for (uint64_t k = 0; ne && k < nv; k++)
            c->vkey[c->vord[vi + k]] = c->e[c->eord[ei + k * ne / nv]].cluster;
        vi = v_end;
        ei = e_end;
    }
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* The open cluster (cluster, pc): found, else a fresh slot (the least recently used of its
 * probes, whose cluster counts as closed). */
static cl_open_t *open_of(dcpi_values_clusters_t *c, uint64_t cluster, uint64_t pc)
{
    uint64_t h = mix(cluster ^ mix(pc));
    cl_open_t *lru = NULL;
    for (unsigned i = 0; i < CL_PROBE; i++) {
        cl_open_t *o = &c->open[(h + i) % CL_SLOTS];
        if (o->cluster == cluster && o->pc == pc)
            return o;
        if (!lru || o->used < lru->used)
            lru = o;
    }
    lru->cluster = cluster, lru->pc = pc, lru->m = 0, lru->nv = 0;
    return lru;
}

/* One more sample of value hash vh in open cluster o: the increments of o's square sums. */
static void count(dcpi_vsummary_t *s, cl_open_t *o, uint64_t vh)
{
    uint32_t i = 0;
    while (i < o->nv && o->vh[i] != vh)
        i++;
    uint64_t y = 0;
    if (i < o->nv)
        y = o->vc[i]++;
    else if (o->nv < CL_VALS)
        o->vh[o->nv] = vh, o->vc[o->nv++] = 1;
    /* a value past CL_VALS distinct ones counts as new each time: D is then low by its repeats,
     * which needs more distinct values than an arm takes executions (STEP_ARM_HITS_MAX) */
    uint64_t m = o->m++;
    dcpi_vsummary_cluster(s, m == 0, 1, 2 * m + 1, 2 * y + 1);
}

void dcpi__values_cluster_begin(dcpi_values_clusters_t *c, const vsample_t *vs, unsigned n)
{
    if (!c)
        return;
    c->vs = vs;
    c->nvs = c->any ? (n < VSAMPLE_BUFFER_SIZE ? n : VSAMPLE_BUFFER_SIZE) : 0;
    if (c->nvs)
        match(c, vs, n);
}

void dcpi__values_cluster_add(dcpi_values_clusters_t *c, unsigned i, dcpi_vsummary_t *s)
{
    if (!c || i >= c->nvs || !c->vkey[i])
        return;
    const vsample_t *v = &c->vs[i];
    cl_open_t *o = open_of(c, c->vkey[i], v->pc);
    o->used = ++c->stamp;
    count(s, o, mix(v->value ^ mix(v->context0 ^ mix(v->context1))));
}

void dcpi__values_cluster_end(dcpi_values_clusters_t *c)
{
    if (!c)
        return;
    c->n = 0;
    c->nvs = 0;
    c->any = 0;
}
