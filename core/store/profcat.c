/*
 * profcat.c - dcpicat's printing (see profcat.h): the profiles of one image form a group, printed
 * as a header block (the image's lines, each distinct "path" and other line once, an "event" line
 * per file) and the rows of a k-way merge of the files' sorted entries by address.
 */
#include "core/store/procprof.h"
#include "core/store/profcat.h"
#include "core/store/stackprof.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base/damage.h"
#include "dcpi/errno.h"

/* s with its non-printable bytes as "\\xNN" (header values come from files that may be
 * damaged: their bytes never reach a terminal raw); four rotating buffers, one printf's worth. */
static const char *esc(const char *s)
{
    static char buf[4][4096];
    static unsigned next;
    if (!s || !dcpi__needs_escape(s))
        return s;
    char *b = buf[next++ % 4];
    return dcpi__escape(b, sizeof(buf[0]), s);
}

/* One group: the profiles of one image, g[0..n) (with their files), in command-line order. */
typedef struct group {
    const dcpi_profile_t **p;
    const char **path;
    size_t n;
} group_t;

/* "name": the basename of the image path, else the name of the directory holding the file
 * (the database's image directory, e.g. "unknown@host"). */
static void image_name(const char *file, const dcpi_profile_t *prof, char *out, size_t len)
{
    const char *path = dcpi_profile_get(prof, "path");
    if (path) {
        const char *slash = strrchr(path, '/');
        snprintf(out, len, "%s", slash ? slash + 1 : path);
        return;
    }
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        snprintf(out, len, "-");
        return;
    }
    *slash = '\0';
    slash = strrchr(dir, '/');
    snprintf(out, len, "%s", slash ? slash + 1 : dir);
}

static const char *get_or(const dcpi_profile_t *p, const char *key, const char *dflt)
{
    const char *v = dcpi_profile_get(p, key);
    return v ? v : dflt;
}

/* Header lines printed by their own rule; everything else is printed as "key value". */
static bool is_special(const char *key)
{
    static const char *const keys[] = {"image",  "path",  "epoch", "platform",
                                       "tstart", "tsize", "event", "period"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strcmp(keys[i], key) == 0)
            return true;
    return false;
}

static bool line_printed_before(const group_t *g, size_t upto, const char *key, const char *value)
{
    for (size_t f = 0; f < upto; f++)
        for (size_t i = 0; i < dcpi_profile_nlines(g->p[f]); i++) {
            const char *k, *v;
            dcpi_profile_line(g->p[f], i, &k, &v);
            if (strcmp(k, key) == 0 && strcmp(v, value) == 0)
                return true;
        }
    return false;
}

static void print_header(FILE *out, const group_t *g)
{
    const dcpi_profile_t *p = g->p[0];
    char name[4096];
    uint64_t tstart = 0, tsize = 0;
    dcpi_profile_get_hex(p, "tstart", &tstart);
    dcpi_profile_get_u64(p, "tsize", &tsize);
    image_name(g->path[0], p, name, sizeof(name));
    fprintf(out, "%-20s %s\n", "name", esc(name));
    fprintf(out, "%-20s %s\n", "image", esc(get_or(p, "image", "-")));
    for (size_t f = 0; f < g->n; f++) /* each distinct path once */
        for (size_t i = 0; i < dcpi_profile_nlines(g->p[f]); i++) {
            const char *k, *v;
            dcpi_profile_line(g->p[f], i, &k, &v);
            if (strcmp(k, "path") == 0 && !line_printed_before(g, f, k, v))
                fprintf(out, "%-20s %s\n", "path", esc(v));
        }
    fprintf(out, "%-20s %s\n", "epoch", esc(get_or(p, "epoch", "-")));
    fprintf(out, "%-20s %s\n", "platform", esc(get_or(p, "platform", "-")));
    fprintf(out, "%-20s 0x%012llx\n", "text_start", (unsigned long long)tstart);
    fprintf(out, "%-20s 0x%012llx\n", "text_size", (unsigned long long)tsize);
    for (size_t f = 0; f < g->n; f++)
        fprintf(out, "%-20s %" PRIu64 " %s:%s:10000\n", "event", dcpi_profile_total(g->p[f]),
                get_or(g->p[f], "event", "-"), get_or(g->p[f], "period", "0"));
    for (size_t f = 0; f < g->n; f++)
        for (size_t i = 0; i < dcpi_profile_nlines(g->p[f]); i++) {
            const char *k, *v;
            dcpi_profile_line(g->p[f], i, &k, &v);
            if (!is_special(k) && !line_printed_before(g, f, k, v))
                fprintf(out, "%-20s %s\n", esc(k), esc(v));
        }
}

typedef struct cursor {
    const dcpi_profile_entry_t *e;
    size_t n, i;
    uint64_t tstart;
} cursor_t;

/* Rows in ascending address order: a k-way merge of the files' sorted entries. */
static int print_rows(FILE *out, const group_t *g)
{
    cursor_t *c = calloc(g->n, sizeof(*c));
    if (!c)
        return DCPI_ENOMEM;
    for (size_t f = 0; f < g->n; f++) {
        c[f].e = dcpi_profile_entries(g->p[f], &c[f].n);
        dcpi_profile_get_hex(g->p[f], "tstart", &c[f].tstart);
    }
    for (;;) {
        uint64_t best = UINT64_MAX;
        bool any = false;
        for (size_t f = 0; f < g->n; f++)
            if (c[f].i < c[f].n && c[f].tstart + c[f].e[c[f].i].offset <= best) {
                best = c[f].tstart + c[f].e[c[f].i].offset;
                any = true;
            }
        if (!any)
            break;
        fprintf(out, "0x%012llx", (unsigned long long)best);
        for (size_t f = 0; f < g->n; f++) {
            uint32_t count = 0;
            if (c[f].i < c[f].n && c[f].tstart + c[f].e[c[f].i].offset == best)
                count = c[f].e[c[f].i++].count;
            fprintf(out, " %7" PRIu32, count);
        }
        fputc('\n', out);
    }
    free(c);
    return 0;
}

/* Print every not-yet-printed profile with the same image as profs[first], as one table. */
static int print_group(FILE *out, dcpi_profile_t *const *profs, const char *const *paths,
                       size_t nin, size_t first, bool *printed, bool header)
{
    group_t g = {calloc(nin, sizeof(*g.p)), calloc(nin, sizeof(*g.path)), 0};
    int rc = DCPI_ENOMEM;
    if (!g.p || !g.path)
        goto out;
    const char *image = dcpi_profile_get(profs[first], "image");
    for (size_t i = first; i < nin; i++) {
        if (!profs[i] || printed[i])
            continue;
        const char *im = dcpi_profile_get(profs[i], "image");
        if (image && im && strcasecmp(image, im) == 0) {
            g.p[g.n] = profs[i];
            g.path[g.n++] = paths[i];
            printed[i] = true;
        }
    }
    if (header)
        print_header(out, &g);
    rc = print_rows(out, &g);
out:
    free(g.p);
    free(g.path);
    return rc;
}

int dcpi_profcat_print(FILE *out, dcpi_profile_t *const *profs, const char *const *paths, size_t n,
                       bool header)
{
    bool *printed = calloc(n ? n : 1, sizeof(*printed));
    if (!printed)
        return DCPI_ENOMEM;
    int rc = 0;
    bool first_group = true;
    for (size_t i = 0; i < n; i++) {
        if (!profs[i] || printed[i])
            continue;
        if (!first_group && header)
            fputc('\n', out); /* a blank line between the tables of two images */
        first_group = false;
        if (print_group(out, profs, paths, n, i, printed, header) < 0)
            rc = DCPI_ENOMEM;
    }
    free(printed);
    return rc;
}

void dcpi_profcat_print_procs(FILE *out, const struct dcpi_procprof *pp, const char *path,
                              bool header)
{
    if (header)
        fprintf(out, "# %s\n", path);
    if (pp->torn)
        fprintf(out, "# %zu bytes of an unfinished append left out (a writer killed in a flush)\n",
                pp->torn);
    for (size_t i = 0; i < pp->n; i++) {
        const dcpi_procprof_entry_t *e = &pp->e[i];
        if (i == 0 || e->pid != pp->e[i - 1].pid || strcmp(e->comm, pp->e[i - 1].comm) != 0)
            fprintf(out, "pid %" PRIu32 " %s\n", e->pid, esc(e->comm));
        fprintf(out, "0x%" PRIx32 " %" PRIu64 "\n", e->offset, e->count);
    }
}

void dcpi_profcat_print_vprof(FILE *out, const dcpi_vprof_t *vp, const char *path, bool header)
{
    const char *ctx = dcpi_vprof_get(vp, "contexts");
    int contexts = ctx && strcmp(ctx, "1") == 0;
    if (header) {
        fprintf(out, "# %s\n", path);
        for (size_t i = 0; i < dcpi_vprof_nlines(vp); i++) {
            const char *k, *v;
            dcpi_vprof_line(vp, i, &k, &v);
            fprintf(out, "%s %s\n", esc(k), esc(v));
        }
        fprintf(out, "\n");
    }
    for (size_t i = 0; i < dcpi_vprof_count(vp); i++) {
        uint32_t off = 0;
        const dcpi_vsummary_t *s = NULL;
        dcpi_vprof_entry(vp, i, &off, &s);
        fprintf(out, "0x%" PRIx32 " vtot %" PRIu64 " seen %" PRIu64 " err %" PRIu64, off, s->vtot,
                s->seen, s->err);
        if (s->chits) /* vpdb-0.02 cluster counters; none (0) prints as before */
            fprintf(out, " clusters %" PRIu64 " chits %" PRIu64 " csq %" PRIu64 " cagree %" PRIu64,
                    s->clusters, s->chits, s->csq, s->cagree);
        fputc('\n', out);
        for (uint32_t j = 0; j < s->n; j++) {
            const dcpi_ventry_t *e = &s->e[j];
            fprintf(out, "  0x%" PRIx64 " %" PRIu64 " %.1f%%", e->value, e->count,
                    s->vtot ? 100.0 * (double)e->count / (double)s->vtot : 0.0);
            if (contexts)
                fprintf(out, " ctx 0x%" PRIx64 " 0x%" PRIx64, e->context0, e->context1);
            fputc('\n', out);
        }
    }
}

/* ---- stack profiles ---- */

typedef struct chain_ref {
    size_t i;
    uint64_t count;
} chain_ref_t;

static int cmp_chain_ref(const void *a, const void *b)
{
    const chain_ref_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static void print_stack_header(FILE *out, const dcpi_stackprof_t *sp, const char *path)
{
    static const char *const keys[] = {"version", "epoch", "platform", "event",
                                       "period",  "lost",  "truncated"};
    fprintf(out, "# %s\n", path);
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        if (dcpi_stackprof_get(sp, keys[k]))
            fprintf(out, "%-10s %s\n", keys[k], esc(dcpi_stackprof_get(sp, keys[k])));
    for (size_t i = 0; i < dcpi_stackprof_nimages(sp); i++) {
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(sp, i);
        fprintf(out, "image %zu %s tstart 0x%" PRIx64 " tsize %" PRIu64 " %s\n", i, esc(im->dir),
                im->tstart, im->tsize, esc(im->path));
    }
    fprintf(out, "\n");
}

void dcpi_profcat_print_stack(FILE *out, const dcpi_stackprof_t *sp, const char *path, bool header)
{
    if (header)
        print_stack_header(out, sp, path);
    size_t n = dcpi_stackprof_count(sp);
    chain_ref_t *ord = calloc(n ? n : 1, sizeof(*ord));
    for (size_t i = 0; ord && i < n; i++) {
        const dcpi_frame_t *f;
        unsigned nf;
        ord[i].i = i;
        dcpi_stackprof_chain(sp, i, &f, &nf, &ord[i].count);
    }
    if (ord)
        qsort(ord, n, sizeof(*ord), cmp_chain_ref);
    for (size_t k = 0; k < n; k++) {
        const dcpi_frame_t *f;
        unsigned nf;
        uint64_t count;
        dcpi_stackprof_chain(sp, ord ? ord[k].i : k, &f, &nf, &count);
        fprintf(out, "%" PRIu64 " ", count);
        for (unsigned j = 0; j < nf; j++) {
            if (f[j].image == DCPI_STACK_NOIMAGE)
                fprintf(out, " %s?+0x%" PRIx32, j ? "<- " : "", f[j].offset);
            else
                fprintf(out, " %s%" PRIu32 "+0x%" PRIx32, j ? "<- " : "", f[j].image, f[j].offset);
        }
        fputc('\n', out);
    }
    free(ord);
}

/* ---- other text files ---- */

int dcpi_profcat_print_text(FILE *out, const char *text, size_t len, const char *path, bool header)
{
    if (memchr(text, '\0', len))
        return DCPI_EFORMAT;
    if (header)
        fprintf(out, "# %s\n", esc(path));
    char *line = NULL, *safe = NULL;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        char *l = realloc(line, n + 1), *e = realloc(safe, 4 * n + 1);
        if (!l || !e) {
            free(l ? l : line);
            free(e ? e : safe);
            return DCPI_ENOMEM;
        }
        line = l;
        safe = e;
        memcpy(line, text + pos, n);
        line[n] = '\0';
        fprintf(out, "%s\n", dcpi__escape(safe, 4 * n + 1, line));
        pos += n + 1;
    }
    free(line);
    free(safe);
    return 0;
}
