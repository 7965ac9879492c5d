/*
 * diff.c - dcpidiff's table: pieces of two sets summed and matched by name into rows, their
 * shares and significance, the sort by absolute difference, and the printing (see diff.h).
 */
#include "core/diff/diff.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/csv.h"
#include "core/diff/diffstat.h"
#include "core/base/json.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"

#define NAME_WIDTH_MAX 50

int dcpi_diff_add(dcpi_diff_t *d, int side, const char *image, const char *name, uint64_t count)
{
    if (dcpi__grow((void **)&d->pieces, &d->cap_pieces, d->npieces + 1, sizeof(*d->pieces)) < 0)
        return DCPI_ENOMEM;
    dcpi_diff_piece_t *p = &d->pieces[d->npieces];
    p->image = strdup(image ? image : "");
    p->name = strdup(name ? name : "");
    if (!p->image || !p->name) {
        free(p->image);
        free(p->name);
        return DCPI_ENOMEM;
    }
    p->side = side;
    p->count = count;
    d->npieces++;
    return 0;
}

/* A new row taking over image and name (freed with the table). */
static dcpi_diff_row_t *row_new(dcpi_diff_t *d, char *image, char *name)
{
    if (dcpi__grow((void **)&d->rows, &d->cap, d->n + 1, sizeof(*d->rows)) < 0)
        return NULL;
    d->rows[d->n] = (dcpi_diff_row_t){.image = image, .name = name, .na = d->na, .nb = d->nb};
    return &d->rows[d->n++];
}

int dcpi_diff_add_row(dcpi_diff_t *d, const char *image, const char *name, uint64_t a, uint64_t na,
                      uint64_t b, uint64_t nb)
{
    char *im = strdup(image ? image : ""), *nm = strdup(name ? name : "");
    dcpi_diff_row_t *r = im && nm ? row_new(d, im, nm) : NULL;
    if (!r) {
        free(im);
        free(nm);
        return DCPI_ENOMEM;
    }
    r->a = a;
    r->b = b;
    r->na = na;
    r->nb = nb;
    return 0;
}

static int cmp_piece(const void *x, const void *y)
{
    const dcpi_diff_piece_t *a = x, *b = y;
    int c = strcmp(a->image, b->image);
    return c ? c : strcmp(a->name, b->name);
}

/* Sum the sorted pieces of one (image, name) into a row; the strings move to the row. */
static int pieces_to_rows(dcpi_diff_t *d)
{
    if (d->npieces > 0) /* qsort's array may not be NULL, even empty */
        qsort(d->pieces, d->npieces, sizeof(*d->pieces), cmp_piece);
    dcpi_diff_row_t *cur = NULL;
    for (size_t i = 0; i < d->npieces; i++) {
        dcpi_diff_piece_t *p = &d->pieces[i];
        if (cur && !strcmp(cur->image, p->image) && !strcmp(cur->name, p->name)) {
            free(p->image);
            free(p->name);
        } else if (!(cur = row_new(d, p->image, p->name))) {
            for (size_t j = i; j < d->npieces; j++) {
                free(d->pieces[j].image);
                free(d->pieces[j].name);
            }
            d->npieces = 0;
            return DCPI_ENOMEM;
        }
        p->image = p->name = NULL;
        if (p->side == DCPI_DIFF_A)
            cur->a += p->count;
        else
            cur->b += p->count;
    }
    d->npieces = 0;
    return 0;
}

static double share(uint64_t n, uint64_t total)
{
    return total ? 100.0 * (double)n / (double)total : 0.0;
}

static int cmp_row(const void *x, const void *y)
{
    const dcpi_diff_row_t *a = x, *b = y;
    double da = fabs(a->delta), db = fabs(b->delta);
    if (da != db)
        return da > db ? -1 : 1;
    if (a->q != b->q)
        return a->q < b->q ? -1 : 1;
    int c = strcmp(a->image, b->image);
    return c ? c : strcmp(a->name, b->name);
}

int dcpi_diff_finish(dcpi_diff_t *d)
{
    if (pieces_to_rows(d) < 0)
        return DCPI_ENOMEM;
    double *p = calloc(d->n ? d->n : 1, sizeof(*p));
    if (!p)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < d->n; i++) {
        dcpi_diff_row_t *r = &d->rows[i];
        r->pa = share(r->a, r->na);
        r->pb = share(r->b, r->nb);
        r->delta = r->pb - r->pa;
        p[i] = r->p = dcpi_diffstat_pvalue(r->a, r->na, r->b, r->nb);
    }
    int rc = dcpi_diffstat_bh(p, d->n, p);
    for (size_t i = 0; rc == 0 && i < d->n; i++)
        d->rows[i].q = p[i];
    free(p);
    if (rc == 0 && d->n > 0) /* qsort's array may not be NULL, even empty */
        qsort(d->rows, d->n, sizeof(*d->rows), cmp_row);
    return rc;
}

void dcpi_diff_free(dcpi_diff_t *d)
{
    for (size_t i = 0; i < d->npieces; i++) {
        free(d->pieces[i].image);
        free(d->pieces[i].name);
    }
    free(d->pieces);
    for (size_t i = 0; i < d->n; i++) {
        free(d->rows[i].image);
        free(d->rows[i].name);
    }
    free(d->rows);
    *d = (dcpi_diff_t){0};
}

/* ---- printing ---- */

static int ndigits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

typedef struct layout {
    int wa, wb, wname;
} layout_t;

static void compute_layout(const dcpi_diff_t *d, const dcpi_diff_popts_t *o, layout_t *l)
{
    *l = (layout_t){.wa = 7, .wb = 7, .wname = (int)strlen(o->what)};
    for (size_t i = 0; i < d->n; i++) {
        const dcpi_diff_row_t *r = &d->rows[i];
        int wa = ndigits(r->a), wb = ndigits(r->b), wn = (int)strlen(r->name);
        l->wa = wa > l->wa ? wa : l->wa;
        l->wb = wb > l->wb ? wb : l->wb;
        l->wname = wn > l->wname ? wn : l->wname;
    }
    if (l->wname > NAME_WIDTH_MAX && !o->wide)
        l->wname = NAME_WIDTH_MAX;
}

static void print_header(const dcpi_diff_popts_t *o, const layout_t *l, FILE *f)
{
    if (o->csl) {
        fprintf(f, "count_a,share_a,count_b,share_b,diff,p,p_adj,signif,%s%s%s\n", o->what,
                o->group ? "," : "", o->group ? o->group : "");
        return;
    }
    fprintf(f, "%*s %7s  %*s %7s  %7s  %6s  %-6s  %-*s%s%s\n", l->wa, "A", "A%", l->wb, "B", "B%",
            "diff", "p", "signif", o->group ? l->wname : 0, o->what, o->group ? "  " : "",
            o->group ? o->group : "");
}

static void print_row(const dcpi_diff_row_t *r, const dcpi_diff_popts_t *o, const layout_t *l,
                      FILE *f)
{
    const char *mark = dcpi_diffstat_marker(r->q, o->alpha);
    if (o->csl) {
        fprintf(f, "%" PRIu64 ",%.2f,%" PRIu64 ",%.2f,%+.2f,%.3g,%.3g,%s,", r->a, r->pa, r->b,
                r->pb, r->delta, r->p, r->q, mark);
        dcpi_csv_field(r->name, f);
        if (o->group) {
            fputc(',', f);
            dcpi_csv_field(r->image, f);
        }
        fputc('\n', f);
        return;
    }
    char pa[16], pb[16], dl[16], q[16];
    snprintf(pa, sizeof pa, "%.2f%%", r->pa);
    snprintf(pb, sizeof pb, "%.2f%%", r->pb);
    snprintf(dl, sizeof dl, "%+.2f", r->delta);
    dcpi_diffstat_format_p(r->q, q, sizeof q);
    fprintf(f, "%*" PRIu64 " %7s  %*" PRIu64 " %7s  %7s  %6s  %-6s  ", l->wa, r->a, pa, l->wb, r->b,
            pb, dl, q, mark);
    int cut = (int)strlen(r->name) > l->wname;
    if (!o->group)
        fprintf(f, cut ? "%.*s...\n" : "%.*s\n", cut ? l->wname - 3 : l->wname, r->name);
    else if (cut)
        fprintf(f, "%.*s...  %s\n", l->wname - 3, r->name, r->image);
    else
        fprintf(f, "%-*s  %s\n", l->wname, r->name, r->image);
}

/*
 * The rows the table shows, in order, each handed to show(r, arg): rows until -keep's share of
 * the summed |difference| is reached, the noise left out unless -all. *hidden counts the noise
 * rows left out; returns how many rows are significant at o->alpha.
 */
static size_t each_shown(const dcpi_diff_t *d, const dcpi_diff_popts_t *o,
                         void (*show)(const dcpi_diff_row_t *r, void *arg), void *arg,
                         size_t *hidden)
{
    double sum = 0.0, cum = 0.0;
    size_t nsig = 0;
    *hidden = 0;
    for (size_t i = 0; i < d->n; i++) {
        sum += fabs(d->rows[i].delta);
        nsig += d->rows[i].q < o->alpha;
    }
    for (size_t i = 0; i < d->n; i++) {
        const dcpi_diff_row_t *r = &d->rows[i];
        if (o->keep < 100.0 && sum > 0 && cum >= o->keep * sum / 100.0)
            break;
        if (!o->all && !(r->q < o->alpha)) {
            (*hidden)++;
            continue;
        }
        cum += fabs(r->delta);
        show(r, arg);
    }
    return nsig;
}

typedef struct {
    const dcpi_diff_popts_t *o;
    const layout_t *l;
    FILE *f;
    size_t printed;
} shown_t;

static void show_text(const dcpi_diff_row_t *r, void *arg)
{
    shown_t *s = arg;
    print_row(r, s->o, s->l, s->f);
}

size_t dcpi_diff_print(const dcpi_diff_t *d, const dcpi_diff_popts_t *o, FILE *f)
{
    layout_t l;
    compute_layout(d, o, &l);
    print_header(o, &l, f);
    shown_t s = {.o = o, .l = &l, .f = f};
    size_t hidden;
    size_t nsig = each_shown(d, o, show_text, &s, &hidden);
    if (!o->csl && hidden)
        fprintf(f, "(%zu more row%s within the noise: -all shows them)\n", hidden,
                hidden == 1 ? "" : "s");
    return nsig;
}

/* A double as JSON (null when not finite). */
static void json_num(FILE *f, const char *key, double v)
{
    if (isfinite(v))
        fprintf(f, ",\"%s\":%.6g", key, v);
    else
        fprintf(f, ",\"%s\":null", key);
}

static void show_json(const dcpi_diff_row_t *r, void *arg)
{
    shown_t *s = arg;
    FILE *f = s->f;
    fputs(s->printed++ ? ",{" : "{", f);
    dcpi__json_key(f, 0, "name");
    dcpi__json_str(f, r->name);
    if (s->o->group) {
        dcpi__json_key(f, 1, "group");
        dcpi__json_str(f, r->image);
    }
    fprintf(f, ",\"a\":%" PRIu64 ",\"b\":%" PRIu64, r->a, r->b);
    json_num(f, "share_a", r->pa);
    json_num(f, "share_b", r->pb);
    json_num(f, "diff", r->delta);
    json_num(f, "p", r->p);
    json_num(f, "p_adj", r->q);
    fprintf(f, ",\"significant\":%s}", r->q < s->o->alpha ? "true" : "false");
}

size_t dcpi_diff_json(const dcpi_diff_t *d, const dcpi_diff_popts_t *o, const char *event,
                      const dcpi_diff_jside_t side[2], FILE *f)
{
    fputs("{\"schema\":\"dcpidiff/1\",", f);
    dcpi__json_key(f, 0, "event");
    dcpi__json_str(f, event);
    dcpi__json_key(f, 1, "what");
    dcpi__json_str(f, o->what);
    dcpi__json_key(f, 1, "group");
    dcpi__json_str(f, o->group);
    json_num(f, "alpha", o->alpha);
    fputs(",\"sets\":[", f);
    for (int k = 0; k < 2; k++) {
        fprintf(f, "%s{\"label\":\"%c\",", k ? "," : "", k ? 'B' : 'A');
        dcpi__json_key(f, 0, "db");
        dcpi__json_str(f, side[k].db);
        dcpi__json_key(f, 1, "epoch");
        dcpi__json_str(f, side[k].epoch);
        fprintf(f, ",\"samples\":%" PRIu64 ",\"share_of\":%" PRIu64 "}", side[k].samples,
                side[k].share_of);
    }
    fputs("],\"rows\":[", f);
    shown_t s = {.o = o, .f = f};
    size_t hidden;
    size_t nsig = each_shown(d, o, show_json, &s, &hidden);
    fprintf(f, "],\"hidden\":%zu}\n", hidden);
    return nsig;
}
