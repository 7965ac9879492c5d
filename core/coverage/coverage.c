/*
 * coverage.c - dcpicoverage's model: procedures decoded through dcpilist's listing and split
 * into dcpicalc's basic blocks (cfg.h), samples attributed to their instructions, counts of
 * sampled instructions, lines and blocks, the
 * never-sampled ranges, and the report (see coverage.h; the model is built from profile sets
 * in covsel.c).
 */
#include "core/coverage/coverage.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/model/csv.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"

static const char *const no_events[] = {"samples"};

void dcpi_cov_free(dcpi_cov_t *cv)
{
    for (size_t i = 0; i < cv->nprocs; i++) {
        free(cv->procs[i].name);
        free(cv->procs[i].block);
        dcpi_listing_free(cv->procs[i].ls);
    }
    free(cv->procs);
    free(cv->lranges);
    *cv = (dcpi_cov_t){0};
}

static dcpi_cov_proc_t *proc_new(dcpi_cov_t *cv, const char *name, uint64_t lo, uint64_t hi)
{
    if (dcpi__grow((void **)&cv->procs, &cv->cap, cv->nprocs + 1, sizeof(*cv->procs)) < 0)
        return NULL;
    dcpi_cov_proc_t *p = &cv->procs[cv->nprocs];
    *p = (dcpi_cov_proc_t){.name = strdup(name), .lo = lo, .hi = hi};
    if (!p->name || dcpi_listing_new(p->name, lo, hi, no_events, 1, 0, &p->ls) < 0) {
        free(p->name);
        return NULL;
    }
    cv->nprocs++;
    return p;
}

/* Drop the procedure just added (its decoding failed). */
static void proc_drop_last(dcpi_cov_t *cv)
{
    dcpi_cov_proc_t *p = &cv->procs[--cv->nprocs];
    free(p->name);
    free(p->block);
    dcpi_listing_free(p->ls);
}

/* The block of every instruction of p, from the graph dcpicalc builds (no block when the
 * procedure has no instruction). */
static int split_blocks(const dcpi_cov_t *cv, dcpi_cov_proc_t *p)
{
    p->block = calloc(p->ls->n + 1, sizeof(*p->block));
    if (!p->block)
        return DCPI_ENOMEM;
    if (p->ls->n == 0)
        return 0;
    dcpi_cfg_t *g = NULL;
    int rc = dcpi_cfg_build(p->ls, 0, cv->noreturn, cv->noreturn_arg, &g);
    if (rc < 0)
        return rc;
    for (size_t k = 0; k < g->nblocks; k++)
        for (size_t i = g->blocks[k].first; i < g->blocks[k].first + g->blocks[k].n; i++)
            p->block[i] = (uint32_t)k;
    p->nblocks = g->nblocks;
    dcpi_cfg_free(g);
    return 0;
}

/* Procedure p (the last one), decoded with result rc: split into blocks, or dropped. */
static int split_or_drop(dcpi_cov_t *cv, dcpi_cov_proc_t *p, int rc)
{
    if (rc == 0)
        rc = split_blocks(cv, p);
    if (rc < 0)
        proc_drop_last(cv);
    return rc;
}

int dcpi_cov_add_proc(dcpi_cov_t *cv, const char *name, uint64_t lo, uint64_t hi, const char *path,
                      const dcpi_image_info_t *info, char *err)
{
    dcpi_cov_proc_t *p = proc_new(cv, name, lo, hi);
    return p ? split_or_drop(cv, p, dcpi_listing_decode(p->ls, path, info, err)) : DCPI_ENOMEM;
}

int dcpi_cov_add_proc_bytes(dcpi_cov_t *cv, const char *name, uint64_t lo, const uint8_t *bytes,
                            size_t len)
{
    dcpi_cov_proc_t *p = proc_new(cv, name, lo, lo + len);
    return p ? split_or_drop(cv, p, dcpi_listing_decode_bytes(p->ls, bytes, len)) : DCPI_ENOMEM;
}

static int cmp_proc(const void *a, const void *b)
{
    const dcpi_cov_proc_t *x = a, *y = b;
    return (x->lo > y->lo) - (x->lo < y->lo);
}

static void sort_procs(dcpi_cov_t *cv)
{
    for (size_t i = 1; i < cv->nprocs; i++)
        if (cv->procs[i - 1].lo > cv->procs[i].lo) {
            qsort(cv->procs, cv->nprocs, sizeof(*cv->procs), cmp_proc);
            return;
        }
}

void dcpi_cov_add_samples(dcpi_cov_t *cv, uint64_t vaddr, uint64_t count)
{
    sort_procs(cv);
    size_t a = 0, b = cv->nprocs;
    while (a < b) { /* the first procedure starting after vaddr */
        size_t m = a + (b - a) / 2;
        if (cv->procs[m].lo <= vaddr)
            a = m + 1;
        else
            b = m;
    }
    if (a == 0 || dcpi_listing_add_samples(cv->procs[a - 1].ls, 0, vaddr, count) < 0)
        cv->outside += count;
}

void dcpi_cov_set_lines(dcpi_cov_t *cv, const dcpi_srclines_t *sl)
{
    for (size_t i = 0; sl && i < cv->nprocs; i++)
        dcpi_listing_set_lines(cv->procs[i].ls, sl);
}

double dcpi_cov_miss_probability(double s, uint64_t n)
{
    if (s <= 0)
        return 1.0;
    if (s >= 1)
        return n ? 0.0 : 1.0;
    return exp((double)n * log1p(-s));
}

/* ---- counting ---- */

/* One instruction's source line, for the line counts. */
typedef struct lent {
    const char *file;
    int line, hit;
    const char *proc;
} lent_t;

static int cmp_lent(const void *a, const void *b)
{
    const lent_t *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Distinct lines of v[0..n) (sorted): how many, and how many were sampled. */
static void count_lines(const lent_t *v, size_t n, size_t *lines, size_t *hit)
{
    *lines = *hit = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int h = 0;
        for (; j < n && cmp_lent(&v[i], &v[j]) == 0; j++)
            h |= v[j].hit;
        ++*lines;
        *hit += h;
        i = j;
    }
}

static int proc_lines(const dcpi_cov_proc_t *p, lent_t **v, size_t *n, size_t *cap)
{
    for (size_t i = 0; i < p->ls->n; i++) {
        const dcpi_lst_insn_t *in = &p->ls->insns[i];
        if (!in->file || in->line <= 0)
            continue;
        if (dcpi__grow((void **)v, cap, *n + 1, sizeof(**v)) < 0)
            return DCPI_ENOMEM;
        (*v)[(*n)++] = (lent_t){in->file, in->line, in->counts[0] > 0, p->name};
    }
    return 0;
}

static int count_proc(dcpi_cov_proc_t *p)
{
    dcpi_cov_counts_t *c = &p->c;
    *c = (dcpi_cov_counts_t){
        .samples = p->ls->proc_total[0], .insns = p->ls->n, .blocks = p->nblocks};
    uint8_t *bhit = calloc(p->nblocks + 1, 1);
    lent_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = bhit ? proc_lines(p, &v, &n, &cap) : DCPI_ENOMEM;
    if (rc == 0) {
        for (size_t i = 0; i < p->ls->n; i++) {
            int h = p->ls->insns[i].counts[0] > 0;
            c->insns_hit += h;
            if (h && !bhit[p->block[i]]++)
                c->blocks_hit++;
        }
        if (n > 0) /* qsort's array may not be NULL, even empty */
            qsort(v, n, sizeof(*v), cmp_lent);
        count_lines(v, n, &c->lines, &c->lines_hit);
    }
    free(v);
    free(bhit);
    return rc;
}

/* The runs of never-sampled lines of v[0..n) (sorted; one entry per instruction). */
static int line_ranges(dcpi_cov_t *cv, const lent_t *v, size_t n)
{
    size_t cap = 0;
    dcpi_cov_lrange_t *cur = NULL;
    for (size_t i = 0; i < n;) {
        size_t j = i, ninsn = 0;
        int h = 0;
        for (; j < n && cmp_lent(&v[i], &v[j]) == 0; j++, ninsn++)
            h |= v[j].hit;
        if (h || (cur && strcmp(cur->file, v[i].file) != 0))
            cur = NULL;
        if (!h && !cur) {
            if (dcpi__grow((void **)&cv->lranges, &cap, cv->nlranges + 1, sizeof(*cur)) < 0)
                return DCPI_ENOMEM;
            cur = &cv->lranges[cv->nlranges++];
            *cur = (dcpi_cov_lrange_t){v[i].file, v[i].line, v[i].line, 0, 0, v[i].proc};
        }
        if (!h) {
            cur->last = v[i].line;
            cur->lines++;
            cur->insns += ninsn;
        }
        i = j;
    }
    return 0;
}

int dcpi_cov_compute(dcpi_cov_t *cv)
{
    sort_procs(cv);
    lent_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    dcpi_cov_counts_t *t = &cv->total;
    *t = (dcpi_cov_counts_t){0};
    free(cv->lranges);
    cv->lranges = NULL;
    cv->nlranges = 0;
    for (size_t i = 0; i < cv->nprocs && rc == 0; i++) {
        dcpi_cov_proc_t *p = &cv->procs[i];
        rc = count_proc(p);
        if (rc == 0)
            rc = proc_lines(p, &v, &n, &cap);
        t->samples += p->c.samples;
        t->insns += p->c.insns;
        t->insns_hit += p->c.insns_hit;
        t->blocks += p->c.blocks;
        t->blocks_hit += p->c.blocks_hit;
    }
    if (rc == 0) {
        if (n > 0) /* qsort's array may not be NULL, even empty */
            qsort(v, n, sizeof(*v), cmp_lent);
        count_lines(v, n, &t->lines, &t->lines_hit);
        rc = line_ranges(cv, v, n);
    }
    free(v);
    return rc;
}

/* ---- printing ---- */

static double pct(size_t a, size_t b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void print_counts_row(const dcpi_cov_counts_t *c, const char *name, FILE *f)
{
    char in[40], ln[40], bl[40];
    snprintf(in, sizeof in, "%zu/%zu %5.1f%%", c->insns_hit, c->insns, pct(c->insns_hit, c->insns));
    if (c->lines)
        snprintf(ln, sizeof ln, "%zu/%zu %5.1f%%", c->lines_hit, c->lines,
                 pct(c->lines_hit, c->lines));
    else
        snprintf(ln, sizeof ln, "-");
    snprintf(bl, sizeof bl, "%zu/%zu %5.1f%%", c->blocks_hit, c->blocks,
             pct(c->blocks_hit, c->blocks));
    fprintf(f, "%10" PRIu64 "  %-20s  %-18s  %-18s  %s\n", c->samples, in, ln, bl, name);
}

/* The first and last line of the instructions [a, b) of p in the file of the first with one. */
static void insn_lines(const dcpi_listing_t *ls, size_t a, size_t b, char *buf, size_t len,
                       int full)
{
    const char *file = NULL;
    int lo = 0, hi = 0;
    for (size_t i = a; i < b; i++) {
        const dcpi_lst_insn_t *in = &ls->insns[i];
        if (!in->file || (file && strcmp(file, in->file) != 0))
            continue;
        if (!file || in->line < lo)
            lo = in->line;
        if (!file || in->line > hi)
            hi = in->line;
        file = in->file;
    }
    if (!file)
        snprintf(buf, len, "-");
    else if (lo == hi)
        snprintf(buf, len, "%s:%d", full ? file : base_name(file), lo);
    else
        snprintf(buf, len, "%s:%d-%d", full ? file : base_name(file), lo, hi);
}

typedef void (*irange_fn)(const dcpi_cov_proc_t *p, size_t a, size_t b, FILE *f);

/* Call fn for every run [a, b) of never-sampled instructions; returns how many. */
static size_t each_irange(const dcpi_cov_t *cv, irange_fn fn, FILE *f)
{
    size_t k = 0;
    for (size_t i = 0; i < cv->nprocs; i++) {
        const dcpi_listing_t *ls = cv->procs[i].ls;
        for (size_t a = 0; a < ls->n;) {
            if (ls->insns[a].counts[0]) {
                a++;
                continue;
            }
            size_t b = a;
            while (b < ls->n && !ls->insns[b].counts[0])
                b++;
            if (fn)
                fn(&cv->procs[i], a, b, f);
            k++;
            a = b;
        }
    }
    return k;
}

static uint64_t insn_end(const dcpi_lst_insn_t *in)
{
    return in->addr + (in->bad ? 1 : in->inst.length);
}

static void print_irange(const dcpi_cov_proc_t *p, size_t a, size_t b, FILE *f)
{
    char where[4200], span[80], off[64];
    const dcpi_listing_t *ls = p->ls;
    insn_lines(ls, a, b, where, sizeof where, 0);
    snprintf(span, sizeof span, "0x%" PRIx64 "..0x%" PRIx64, ls->insns[a].addr,
             insn_end(&ls->insns[b - 1]));
    snprintf(off, sizeof off, "+0x%" PRIx64, ls->insns[a].addr - p->lo);
    fprintf(f, "  %-30s  %s%s  %zu instructions  %s\n", span, p->name, off, b - a, where);
}

static void csv_irange(const dcpi_cov_proc_t *p, size_t a, size_t b, FILE *f)
{
    char where[4200];
    insn_lines(p->ls, a, b, where, sizeof where, 1);
    fputs("insns,", f);
    dcpi_csv_field(p->name, f);
    fprintf(f, ",,%zu,,,,,,0x%" PRIx64 ",0x%" PRIx64 ",", b - a, p->ls->insns[a].addr,
            insn_end(&p->ls->insns[b - 1]));
    char *colon = strrchr(where, ':');
    if (!colon || !strcmp(where, "-")) {
        fputs(",,\n", f);
        return;
    }
    *colon = '\0';
    int lo = 0, hi = 0;
    if (sscanf(colon + 1, "%d-%d", &lo, &hi) < 2)
        hi = lo;
    dcpi_csv_field(where, f);
    fprintf(f, ",%d,%d\n", lo, hi);
}

static void print_note(const dcpi_cov_t *cv, FILE *f)
{
    uint64_t n = cv->total.samples;
    fprintf(
        f,
        "\nnote: this is sampling coverage, not execution coverage: code that ran for a share s "
        "of\nthe time gets no sample out of N with probability (1-s)^N. Here N = %" PRIu64
        ": s = 1%% -> %.2g,\ns = 0.1%% -> %.2g, s = 0.01%% -> %.2g. A never-sampled line may "
        "have run; a sampled one did.\n",
        n, dcpi_cov_miss_probability(0.01, n), dcpi_cov_miss_probability(0.001, n),
        dcpi_cov_miss_probability(0.0001, n));
}

static void print_table(const dcpi_cov_t *cv, const dcpi_cov_popts_t *o, FILE *f)
{
    fprintf(f, "image   %s\nevent   %s\nepochs ", o->image, o->event);
    for (size_t e = 0; e < o->nepochs; e++)
        fprintf(f, " %s", o->epochs[e]);
    fprintf(f, "\n\n%10s  %-20s  %-18s  %-18s  %s\n", "samples", "instructions", "lines", "blocks",
            "procedure");
    for (size_t i = 0; i < cv->nprocs; i++)
        print_counts_row(&cv->procs[i].c, cv->procs[i].name, f);
    if (cv->nprocs > 1)
        print_counts_row(&cv->total, "(total)", f);
    if (cv->outside)
        fprintf(f, "(%" PRIu64 " samples of the image lie outside these procedures)\n",
                cv->outside);
    if (!o->summary) {
        fprintf(f, "\nnever-sampled source lines (%zu ranges):\n", cv->nlranges);
        for (size_t i = 0; i < cv->nlranges; i++) {
            const dcpi_cov_lrange_t *r = &cv->lranges[i];
            char where[4200];
            if (r->first == r->last)
                snprintf(where, sizeof where, "%s:%d", base_name(r->file), r->first);
            else
                snprintf(where, sizeof where, "%s:%d-%d", base_name(r->file), r->first, r->last);
            fprintf(f, "  %-30s  %s  %zu lines, %zu instructions\n", where, r->proc, r->lines,
                    r->insns);
        }
        fprintf(f, "\nnever-sampled instructions (%zu ranges):\n", each_irange(cv, NULL, f));
        each_irange(cv, print_irange, f);
    }
    print_note(cv, f);
}

static void csv_counts(const char *kind, const char *name, const dcpi_cov_counts_t *c, FILE *f)
{
    fprintf(f, "%s,", kind);
    dcpi_csv_field(name, f);
    fprintf(f, ",%" PRIu64 ",%zu,%zu,%zu,%zu,%zu,%zu,,,,,\n", c->samples, c->insns, c->insns_hit,
            c->lines, c->lines_hit, c->blocks, c->blocks_hit);
}

static void print_csv(const dcpi_cov_t *cv, const dcpi_cov_popts_t *o, FILE *f)
{
    fprintf(f, "kind,procedure,samples,instructions,sampled_instructions,lines,sampled_lines,"
               "blocks,sampled_blocks,start,end,file,first_line,last_line\n");
    for (size_t i = 0; i < cv->nprocs; i++)
        csv_counts("proc", cv->procs[i].name, &cv->procs[i].c, f);
    csv_counts("total", "", &cv->total, f);
    if (o->summary)
        return;
    for (size_t i = 0; i < cv->nlranges; i++) {
        const dcpi_cov_lrange_t *r = &cv->lranges[i];
        fputs("lines,", f);
        dcpi_csv_field(r->proc, f);
        fprintf(f, ",,%zu,,%zu,,,,,,", r->insns, r->lines);
        dcpi_csv_field(r->file, f);
        fprintf(f, ",%d,%d\n", r->first, r->last);
    }
    each_irange(cv, csv_irange, f);
}

void dcpi_cov_print(const dcpi_cov_t *cv, const dcpi_cov_popts_t *o, FILE *f)
{
    if (o->csl)
        print_csv(cv, o, f);
    else
        print_table(cv, o, f);
}
