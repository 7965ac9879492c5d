/*
 * llvmprof.c - LLVM's sample profile in memory, its text form and GCC's AutoFDO form
 * (llvmprof.h): top-level functions by name in a small open-addressing index, each with its
 * body positions, call targets and inlined sections in growing arrays (sorted and merged only
 * when written).
 */
#include "core/formats/llvmprof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/hash.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"

typedef struct lbody {
    uint32_t off, disc;
    uint64_t count;
} lbody_t;

typedef struct ltarget {
    uint32_t off, disc;
    char *name;
    uint64_t count;
} ltarget_t;

typedef struct lsite {
    uint32_t off, disc;
    dcpi_llvmfn_t *fn;
} lsite_t;

struct dcpi_llvmfn {
    char *name;
    uint64_t entry, head, total;
    lbody_t *body;
    size_t nbody, cbody;
    ltarget_t *tg;
    size_t ntg, ctg;
    lsite_t *site;
    size_t nsite, csite;
};

struct dcpi_llvmprof {
    dcpi_llvmfn_t **fn;
    size_t n, cap;
    size_t *slot; /* index + 1 into fn, 0: empty */
    size_t nslot; /* a power of two, kept over 2n */
};

unsigned dcpi_llvm_base_discriminator(unsigned d)
{
    if (d & 1)
        return 0;
    d >>= 1;
    return (d & 0x20) ? (((d >> 1) & 0xfe0) | (d & 0x1f)) : (d & 0x1f);
}

uint32_t dcpi_llvm_line_offset(int line, int decl_line)
{
    return (uint32_t)(line - decl_line) & 0xffff;
}

static dcpi_llvmfn_t *fn_new(const char *name)
{
    dcpi_llvmfn_t *f = calloc(1, sizeof(*f));
    if (f && !(f->name = strdup(name))) {
        free(f);
        f = NULL;
    }
    return f;
}

static void fn_free(dcpi_llvmfn_t *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->ntg; i++)
        free(f->tg[i].name);
    for (size_t i = 0; i < f->nsite; i++)
        fn_free(f->site[i].fn);
    free(f->body);
    free(f->tg);
    free(f->site);
    free(f->name);
    free(f);
}

int dcpi_llvmprof_new(dcpi_llvmprof_t **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : DCPI_ENOMEM;
}

void dcpi_llvmprof_free(dcpi_llvmprof_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        fn_free(p->fn[i]);
    free(p->fn);
    free(p->slot);
    free(p);
}

size_t dcpi_llvmprof_count(const dcpi_llvmprof_t *p)
{
    return p->n;
}

/* The slot of name: holding it, or the empty one where it goes. */
static size_t *slot_of(const dcpi_llvmprof_t *p, const char *name)
{
    size_t mask = p->nslot - 1, i = dcpi__fnv1a(DCPI_FNV64_OFFSET, name, strlen(name)) & mask;
    while (p->slot[i] && strcmp(p->fn[p->slot[i] - 1]->name, name))
        i = (i + 1) & mask;
    return &p->slot[i];
}

static int rehash(dcpi_llvmprof_t *p)
{
    size_t n = p->nslot ? p->nslot * 2 : 64;
    size_t *s = calloc(n, sizeof(*s));
    if (!s)
        return DCPI_ENOMEM;
    free(p->slot);
    p->slot = s;
    p->nslot = n;
    for (size_t i = 0; i < p->n; i++)
        *slot_of(p, p->fn[i]->name) = i + 1;
    return 0;
}

dcpi_llvmfn_t *dcpi_llvmprof_func(dcpi_llvmprof_t *p, const char *name, int create)
{
    if ((p->n + 1) * 2 > p->nslot && rehash(p) < 0)
        return NULL;
    size_t *s = slot_of(p, name);
    if (*s || !create)
        return *s ? p->fn[*s - 1] : NULL;
    dcpi_llvmfn_t *f = fn_new(name);
    if (!f || dcpi__grow((void **)&p->fn, &p->cap, p->n + 1, sizeof(*p->fn)) < 0) {
        fn_free(f);
        return NULL;
    }
    p->fn[p->n++] = f;
    *s = p->n;
    return f;
}

dcpi_llvmfn_t *dcpi_llvmfn_inlined(dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc,
                                   const char *callee)
{
    for (size_t i = 0; i < fn->nsite; i++) {
        lsite_t *s = &fn->site[i];
        if (s->off == off && s->disc == disc && !strcmp(s->fn->name, callee))
            return s->fn;
    }
    dcpi_llvmfn_t *f = fn_new(callee);
    if (!f || dcpi__grow((void **)&fn->site, &fn->csite, fn->nsite + 1, sizeof(*fn->site)) < 0) {
        fn_free(f);
        return NULL;
    }
    fn->site[fn->nsite++] = (lsite_t){off, disc, f};
    return f;
}

static lbody_t *body_find(const dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc)
{
    for (size_t i = fn->nbody; i-- > 0;) /* the last one added is the likeliest */
        if (fn->body[i].off == off && fn->body[i].disc == disc)
            return &fn->body[i];
    return NULL;
}

int dcpi_llvmfn_body(dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc, uint64_t count)
{
    lbody_t *b = body_find(fn, off, disc);
    if (!b) {
        if (dcpi__grow((void **)&fn->body, &fn->cbody, fn->nbody + 1, sizeof(*fn->body)) < 0)
            return DCPI_ENOMEM;
        b = &fn->body[fn->nbody++];
        *b = (lbody_t){off, disc, 0};
    }
    b->count += count;
    return 0;
}

uint64_t dcpi_llvmfn_body_at(const dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc)
{
    const lbody_t *b = body_find(fn, off, disc);
    return b ? b->count : 0;
}

int dcpi_llvmfn_target(dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc, const char *callee,
                       uint64_t count)
{
    for (size_t i = 0; i < fn->ntg; i++) {
        ltarget_t *t = &fn->tg[i];
        if (t->off == off && t->disc == disc && !strcmp(t->name, callee)) {
            t->count += count;
            return 0;
        }
    }
    char *name = strdup(callee);
    if (!name || dcpi__grow((void **)&fn->tg, &fn->ctg, fn->ntg + 1, sizeof(*fn->tg)) < 0) {
        free(name);
        return DCPI_ENOMEM;
    }
    fn->tg[fn->ntg++] = (ltarget_t){off, disc, name, count};
    return 0;
}

void dcpi_llvmfn_add_entry(dcpi_llvmfn_t *fn, uint64_t count)
{
    fn->entry += count;
}

uint64_t dcpi_llvmfn_entry(const dcpi_llvmfn_t *fn)
{
    return fn->entry;
}

/* ---- writing ---- */

static int cmp_pos(uint32_t ao, uint32_t ad, uint32_t bo, uint32_t bd)
{
    if (ao != bo)
        return ao < bo ? -1 : 1;
    return ad < bd ? -1 : ad > bd;
}

static int cmp_body(const void *a, const void *b)
{
    const lbody_t *x = a, *y = b;
    return cmp_pos(x->off, x->disc, y->off, y->disc);
}

static int cmp_target(const void *a, const void *b)
{
    const ltarget_t *x = a, *y = b;
    int c = cmp_pos(x->off, x->disc, y->off, y->disc);
    if (c)
        return c;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_site(const void *a, const void *b)
{
    const lsite_t *x = a, *y = b;
    int c = cmp_pos(x->off, x->disc, y->off, y->disc);
    return c ? c : strcmp(x->fn->name, y->fn->name);
}

/* qsort, but never with the NULL of an array not grown yet (n 0). */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

/* Sort everything, give every position with targets a body line holding at least their sum,
 * and compute the totals (body samples and inlined sections' totals). */
static int fn_finish(dcpi_llvmfn_t *fn)
{
    sort(fn->tg, fn->ntg, sizeof(*fn->tg), cmp_target);
    for (size_t i = 0; i < fn->ntg;) {
        uint64_t sum = 0;
        size_t j = i;
        for (;
             j < fn->ntg && !cmp_pos(fn->tg[j].off, fn->tg[j].disc, fn->tg[i].off, fn->tg[i].disc);
             j++)
            sum += fn->tg[j].count;
        uint64_t have = dcpi_llvmfn_body_at(fn, fn->tg[i].off, fn->tg[i].disc);
        if (sum > have && dcpi_llvmfn_body(fn, fn->tg[i].off, fn->tg[i].disc, sum - have) < 0)
            return DCPI_ENOMEM;
        i = j;
    }
    sort(fn->body, fn->nbody, sizeof(*fn->body), cmp_body);
    sort(fn->site, fn->nsite, sizeof(*fn->site), cmp_site);
    fn->total = 0;
    for (size_t i = 0; i < fn->nbody; i++)
        fn->total += fn->body[i].count;
    for (size_t i = 0; i < fn->nsite; i++) {
        int rc = fn_finish(fn->site[i].fn);
        if (rc < 0)
            return rc;
        fn->total += fn->site[i].fn->total;
    }
    return 0;
}

static void put_pos(FILE *out, int depth, uint32_t off, uint32_t disc)
{
    fprintf(out, "%*s%u", depth, "", off);
    if (disc)
        fprintf(out, ".%u", disc);
    fputs(": ", out);
}

static void fn_write(const dcpi_llvmfn_t *fn, FILE *out, int depth)
{
    size_t t = 0;
    for (size_t i = 0; i < fn->nbody; i++) {
        const lbody_t *b = &fn->body[i];
        if (!b->count)
            continue;
        put_pos(out, depth, b->off, b->disc);
        fprintf(out, "%llu", (unsigned long long)b->count);
        while (t < fn->ntg && cmp_pos(fn->tg[t].off, fn->tg[t].disc, b->off, b->disc) < 0)
            t++;
        for (; t < fn->ntg && !cmp_pos(fn->tg[t].off, fn->tg[t].disc, b->off, b->disc); t++)
            if (fn->tg[t].count)
                fprintf(out, " %s:%llu", fn->tg[t].name, (unsigned long long)fn->tg[t].count);
        fputc('\n', out);
    }
    for (size_t i = 0; i < fn->nsite; i++) {
        const lsite_t *s = &fn->site[i];
        if (!s->fn->total)
            continue;
        put_pos(out, depth, s->off, s->disc);
        fprintf(out, "%s:%llu\n", s->fn->name, (unsigned long long)s->fn->total);
        fn_write(s->fn, out, depth + 1);
    }
}

/* The targets naming top-level functions, in fn and its inlined sections, into their heads. */
static void calls_into(dcpi_llvmprof_t *p, const dcpi_llvmfn_t *fn)
{
    for (size_t i = 0; i < fn->ntg; i++) {
        dcpi_llvmfn_t *to = dcpi_llvmprof_func(p, fn->tg[i].name, 0);
        if (to)
            to->head += fn->tg[i].count;
    }
    for (size_t i = 0; i < fn->nsite; i++)
        calls_into(p, fn->site[i].fn);
}

static void heads(dcpi_llvmprof_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        p->fn[i]->head = 0;
    for (size_t i = 0; i < p->n; i++)
        calls_into(p, p->fn[i]);
    for (size_t i = 0; i < p->n; i++)
        if (p->fn[i]->head < p->fn[i]->entry)
            p->fn[i]->head = p->fn[i]->entry;
}

static int cmp_total(const void *a, const void *b)
{
    const dcpi_llvmfn_t *x = *(dcpi_llvmfn_t *const *)a, *y = *(dcpi_llvmfn_t *const *)b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Totals, heads, functions by decreasing total (the index follows the new order). */
static int finish(dcpi_llvmprof_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        int rc = fn_finish(p->fn[i]);
        if (rc < 0)
            return rc;
    }
    heads(p);
    sort(p->fn, p->n, sizeof(*p->fn), cmp_total);
    if (p->nslot)
        memset(p->slot, 0, p->nslot * sizeof(*p->slot));
    for (size_t i = 0; i < p->n; i++)
        *slot_of(p, p->fn[i]->name) = i + 1;
    return 0;
}

int dcpi_llvmprof_write(dcpi_llvmprof_t *p, FILE *out)
{
    int rc = finish(p);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < p->n; i++) {
        if (!p->fn[i]->total)
            continue;
        fprintf(out, "%s:%llu:%llu\n", p->fn[i]->name, (unsigned long long)p->fn[i]->total,
                (unsigned long long)p->fn[i]->head);
        fn_write(p->fn[i], out, 1);
    }
    return ferror(out) ? -EIO : 0;
}

/* ---- GCC's AutoFDO profile (gcov form, version 2) ---- */

#define AFDO_MAGIC        0x67636461u /* "gcda" */
#define AFDO_VERSION      2u          /* GCC 12's AUTO_PROFILE_VERSION */
#define AFDO_TAG_NAMES    0xaa000000u
#define AFDO_TAG_FUNCTION 0xac000000u
#define AFDO_TAG_MODULE   0xae000000u
#define AFDO_TAG_WORKSET  0xaf000000u
#define AFDO_HIST_INDIR   3u /* HIST_TYPE_INDIR_CALL (GCC reads and ignores the kind) */
#define AFDO_WORKSETS     128

/* The names of the profile, each once, by index. */
typedef struct names {
    const char **v;
    size_t n, cap;
    size_t *slot, nslot;
} names_t;

static size_t *name_slot(const names_t *t, const char *s)
{
    size_t mask = t->nslot - 1, i = dcpi__fnv1a(DCPI_FNV64_OFFSET, s, strlen(s)) & mask;
    while (t->slot[i] && strcmp(t->v[t->slot[i] - 1], s))
        i = (i + 1) & mask;
    return &t->slot[i];
}

static int name_add(names_t *t, const char *s)
{
    if ((t->n + 1) * 2 > t->nslot) {
        size_t n = t->nslot ? t->nslot * 2 : 256, *slot = calloc(n, sizeof(*slot));
        if (!slot)
            return DCPI_ENOMEM;
        free(t->slot);
        t->slot = slot;
        t->nslot = n;
        for (size_t i = 0; i < t->n; i++)
            *name_slot(t, t->v[i]) = i + 1;
    }
    size_t *sl = name_slot(t, s);
    if (*sl)
        return 0;
    if (dcpi__grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)) < 0)
        return DCPI_ENOMEM;
    t->v[t->n++] = s;
    *sl = t->n;
    return 0;
}

static uint32_t name_index(const names_t *t, const char *s)
{
    return (uint32_t)(*name_slot(t, s) - 1);
}

static int names_of(names_t *t, const dcpi_llvmfn_t *fn)
{
    int rc = name_add(t, fn->name);
    for (size_t i = 0; rc == 0 && i < fn->ntg; i++)
        rc = name_add(t, fn->tg[i].name);
    for (size_t i = 0; rc == 0 && i < fn->nsite; i++)
        rc = names_of(t, fn->site[i].fn);
    return rc;
}

static void put_u32(FILE *out, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    fwrite(b, 1, 4, out);
}

static void put_ctr(FILE *out, uint64_t v) /* gcov's counter: low word, then high word */
{
    put_u32(out, (uint32_t)v);
    put_u32(out, (uint32_t)(v >> 32));
}

/* GCC keys a position by its line alone (get_combined_location: the offset << 16): the body
 * lines of one offset, whatever their discriminators, are one position. */
static size_t body_lines(const dcpi_llvmfn_t *fn)
{
    size_t n = 0;
    for (size_t i = 0; i < fn->nbody; i++) {
        int first = i == 0 || fn->body[i - 1].off != fn->body[i].off;
        uint64_t sum = 0;
        for (size_t j = i; first && j < fn->nbody && fn->body[j].off == fn->body[i].off; j++)
            sum += fn->body[j].count;
        n += sum > 0;
    }
    return n;
}

static size_t sites_with_samples(const dcpi_llvmfn_t *fn)
{
    size_t n = 0;
    for (size_t i = 0; i < fn->nsite; i++)
        n += fn->site[i].fn->total > 0;
    return n;
}

/* One position: the body lines [i, e) of one offset, and their targets. */
static void afdo_position(const names_t *t, const dcpi_llvmfn_t *fn, size_t i, size_t e, FILE *out)
{
    uint64_t count = 0;
    size_t nt = 0;
    for (size_t j = i; j < e; j++)
        count += fn->body[j].count;
    for (size_t k = 0; k < fn->ntg; k++)
        nt += fn->tg[k].off == fn->body[i].off;
    put_u32(out, fn->body[i].off << 16);
    put_u32(out, (uint32_t)nt);
    put_ctr(out, count);
    for (size_t k = 0; k < fn->ntg; k++) {
        if (fn->tg[k].off != fn->body[i].off)
            continue;
        put_u32(out, AFDO_HIST_INDIR);
        put_ctr(out, name_index(t, fn->tg[k].name));
        put_ctr(out, fn->tg[k].count);
    }
}

static void afdo_instance(const names_t *t, const dcpi_llvmfn_t *fn, FILE *out)
{
    put_u32(out, name_index(t, fn->name));
    put_u32(out, (uint32_t)body_lines(fn));
    put_u32(out, (uint32_t)sites_with_samples(fn));
    for (size_t i = 0; i < fn->nbody;) {
        size_t e = i + 1;
        while (e < fn->nbody && fn->body[e].off == fn->body[i].off)
            e++;
        while (i < e && !fn->body[i].count)
            i++;
        if (i < e)
            afdo_position(t, fn, i, e, out);
        i = e;
    }
    for (size_t i = 0; i < fn->nsite; i++) {
        if (!fn->site[i].fn->total)
            continue;
        put_u32(out, fn->site[i].off << 16);
        afdo_instance(t, fn->site[i].fn, out);
    }
}

static void afdo_names(const names_t *t, FILE *out)
{
    size_t bytes = 4;
    for (size_t i = 0; i < t->n; i++)
        bytes += 4 + strlen(t->v[i]) + 1;
    put_u32(out, AFDO_TAG_NAMES);
    put_u32(out, (uint32_t)((bytes + 3) / 4)); /* GCC skips the length */
    put_u32(out, (uint32_t)t->n);
    for (size_t i = 0; i < t->n; i++) { /* GCC 12: the length in bytes, the NUL included */
        put_u32(out, (uint32_t)(strlen(t->v[i]) + 1));
        fwrite(t->v[i], 1, strlen(t->v[i]) + 1, out);
    }
}

/* The positions' counts, as GCC sees positions (body_lines). */
static void collect_counts(const dcpi_llvmfn_t *fn, uint64_t *c, size_t *n)
{
    for (size_t i = 0; i < fn->nbody;) {
        uint64_t sum = 0;
        size_t e = i;
        for (; e < fn->nbody && fn->body[e].off == fn->body[i].off; e++)
            sum += fn->body[e].count;
        if (sum)
            c[(*n)++] = sum;
        i = e;
    }
    for (size_t i = 0; i < fn->nsite; i++)
        collect_counts(fn->site[i].fn, c, n);
}

static size_t count_lines(const dcpi_llvmfn_t *fn)
{
    size_t n = body_lines(fn);
    for (size_t i = 0; i < fn->nsite; i++)
        n += count_lines(fn->site[i].fn);
    return n;
}

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* gcov's working set: for each of 128 fractions of the total, how many positions (the hottest
 * first) hold it, and the smallest count among them. */
static int afdo_workset(const dcpi_llvmprof_t *p, FILE *out)
{
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < p->n; i++)
        cap += count_lines(p->fn[i]);
    uint64_t *c = malloc((cap ? cap : 1) * sizeof(*c)), sum = 0, run = 0;
    if (!c)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < p->n; i++)
        collect_counts(p->fn[i], c, &n);
    sort(c, n, sizeof(*c), cmp_desc);
    for (size_t i = 0; i < n; i++)
        sum += c[i];
    put_u32(out, AFDO_TAG_WORKSET);
    put_u32(out, AFDO_WORKSETS * 3);
    size_t k = 0;
    for (unsigned w = 0; w < AFDO_WORKSETS; w++) {
        long double goal = (long double)sum * (w + 1) / AFDO_WORKSETS;
        while (k < n && (long double)run < goal)
            run += c[k++];
        put_u32(out, (uint32_t)k);
        put_ctr(out, k ? c[k - 1] : 0);
    }
    free(c);
    return 0;
}

int dcpi_llvmprof_write_afdo(dcpi_llvmprof_t *p, FILE *out)
{
    names_t t = {0};
    int rc = finish(p);
    for (size_t i = 0; rc == 0 && i < p->n; i++)
        rc = p->fn[i]->total ? names_of(&t, p->fn[i]) : 0;
    if (rc == 0) {
        put_u32(out, AFDO_MAGIC);
        put_u32(out, AFDO_VERSION);
        put_u32(out, 0);
        afdo_names(&t, out);
        size_t nf = 0;
        for (size_t i = 0; i < p->n; i++)
            nf += p->fn[i]->total > 0;
        put_u32(out, AFDO_TAG_FUNCTION);
        put_u32(out, 0); /* GCC skips the length */
        put_u32(out, (uint32_t)nf);
        for (size_t i = 0; i < p->n; i++) {
            if (!p->fn[i]->total)
                continue;
            put_ctr(out, p->fn[i]->head);
            afdo_instance(&t, p->fn[i], out);
        }
        put_u32(out, AFDO_TAG_MODULE); /* no module groups */
        put_u32(out, 1);
        put_u32(out, 0);
        rc = afdo_workset(p, out);
    }
    free(t.v);
    free(t.slot);
    return rc ? rc : ferror(out) ? -EIO : 0;
}
