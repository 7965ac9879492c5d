/*
 * report.c - dcpireport's page (see report.h): the JSON document of one profile set (where it
 * comes from, its events and their loss warnings, dcpiprof's rows by image and by procedure,
 * the flame graph, the listings, the differences with a second set) between the page's HTML.
 */
#include "core/report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/diff/diff.h"
#include "core/base/err.h"
#include "dcpi/errno.h"
#include "dcpi/version.h"

/* Significance level of the -diff rows (dcpidiff's default -threshold) and how many are kept. */
#define DIFF_ALPHA    0.001
#define DIFF_ROWS_MAX 200

static void write_key(FILE *f, const char *key, const char *value)
{
    fprintf(f, ",\"%s\":", key);
    dcpi_report_json_str(f, value);
}

static void write_events(FILE *f, const dcpi_profset_t *set)
{
    fputs(",\"events\":[", f);
    for (size_t e = 0; e < set->nevents; e++) {
        const dcpi_profset_event_t *ev = &set->events[e];
        fprintf(f, "%s{\"name\":", e ? "," : "");
        dcpi_report_json_str(f, ev->name);
        fprintf(f,
                ",\"total\":%" PRIu64 ",\"period\":%" PRIu64 ",\"mixed\":%d,\"lost\":%" PRIu64 "}",
                ev->total, ev->period, ev->mixed_period, ev->lost);
    }
    fputs("],\"warnings\":[", f);
    int first = 1;
    for (size_t e = 0; e < set->nevents; e++) {
        char line[512];
        if (!dcpi_procs_loss_warning(&set->events[e], line, sizeof line))
            continue;
        fputs(first ? "" : ",", f);
        first = 0;
        dcpi_report_json_str(f, line);
    }
    fputc(']', f);
}

/* "KEY":{"children":C,"rows":[[name, image index, [counts], children],...],"more":N,
 * "more_counts":[...]}: at most DCPI_REPORT_ROWS_MAX rows, the rest summed. */
static void write_rows(FILE *f, const char *key, const dcpi_profset_t *set,
                       const dcpi_procs_table_t *t)
{
    size_t ne = set->nevents, shown = t->n < DCPI_REPORT_ROWS_MAX ? t->n : DCPI_REPORT_ROWS_MAX;
    uint64_t *more = calloc(ne + 1, sizeof(*more));
    fprintf(f, ",\"%s\":{\"children\":%d,\"rows\":[", key, t->children);
    for (size_t i = 0; i < t->n; i++) {
        const dcpi_procs_row_t *r = &t->v[i];
        if (i >= shown) {
            for (size_t e = 0; more && e < ne; e++)
                more[e] += r->counts[e];
            continue;
        }
        fputs(i ? ",[" : "[", f);
        dcpi_report_json_str(f, r->proc ? r->proc : r->image);
        fprintf(f, ",%ld,", r->img);
        dcpi__report_json_u64s(f, r->counts, ne);
        fprintf(f, ",%" PRIu64 "]", r->children);
    }
    fprintf(f, "],\"more\":%zu,\"more_counts\":", t->n - shown);
    dcpi__report_json_u64s(f, more, more ? ne : 0);
    fputc('}', f);
    free(more);
}

static void write_images(FILE *f, const dcpi_profset_t *set)
{
    fputs(",\"imgnames\":[", f);
    for (size_t i = 0; i < set->nimages; i++) {
        fputs(i ? "," : "", f);
        dcpi_report_json_str(f, set->images[i].name);
    }
    fputc(']', f);
}

/* ---- -diff ---- */

static int diff_rows(const dcpi_profset_t *A, const dcpi_profset_t *B, int ea, int eb,
                     const char *tool, dcpi_diff_t *d)
{
    const char **ka = calloc(A->nimages + 1, sizeof(*ka));
    const char **kb = calloc(B->nimages + 1, sizeof(*kb));
    int rc = ka && kb ? 0 : DCPI_ENOMEM;
    if (rc == 0) {
        dcpi_diff_image_keys(A, B, ka, kb);
        d->na = A->events[ea].total;
        d->nb = eb >= 0 ? B->events[eb].total : 0;
        rc = dcpi_diff_add_set(d, DCPI_DIFF_A, A, ea, ka, 0, tool);
    }
    if (rc == 0)
        rc = dcpi_diff_add_set(d, DCPI_DIFF_B, B, eb, kb, 0, tool);
    if (rc == 0)
        rc = dcpi_diff_finish(d);
    free(kb);
    free(ka);
    return rc;
}

/* The procedures whose share changed significantly between the set (A) and o->diff_set (B), as
 * dcpidiff prints them (its default threshold), at most DIFF_ROWS_MAX. */
static int write_diff(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o, int sort)
{
    if (!o->diff_set) {
        fputs(",\"diff\":null", f);
        return 0;
    }
    const char *event = set->events[sort].name;
    int eb = dcpi_profset_event_index(o->diff_set, event);
    dcpi_diff_t d = {0};
    int rc = diff_rows(set, o->diff_set, sort, eb, o->tool, &d);
    if (rc < 0) {
        dcpi_diff_free(&d);
        return rc;
    }
    fputs(",\"diff\":{\"epoch_b\":", f);
    dcpi_report_json_str(f, o->diff_epoch);
    write_key(f, "event", event);
    fprintf(f, ",\"na\":%" PRIu64 ",\"nb\":%" PRIu64 ",\"alpha\":%g,\"rows\":[", d.na, d.nb,
            DIFF_ALPHA);
    size_t shown = 0, noise = 0;
    for (size_t i = 0; i < d.n; i++) {
        const dcpi_diff_row_t *r = &d.rows[i];
        if (r->q > DIFF_ALPHA || shown >= DIFF_ROWS_MAX) {
            noise += r->q > DIFF_ALPHA;
            continue;
        }
        fputs(shown++ ? ",[" : "[", f);
        dcpi_report_json_str(f, r->name);
        fputc(',', f);
        dcpi_report_json_str(f, r->image);
        fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%.4f,%.3g]", r->a, r->b, r->pa, r->pb,
                r->delta, r->q);
    }
    fprintf(f, "],\"noise\":%zu}", noise);
    dcpi_diff_free(&d);
    return 0;
}

/* ---- the document ---- */

/* "process_rows": dcpiprof -procs's rows ("PID COMMAND", or the samples of profiles without a
 * split by process), and "procs_missing": how many profile files had no split. */
static int write_processes(FILE *f, const dcpi_profset_t *set, dcpi_procs_opts_t *po)
{
    size_t missing = 0;
    for (size_t i = 0; i < set->nimages; i++)
        missing += set->images[i].procs_missing;
    dcpi_procs_table_t *t = NULL;
    po->by_process = 1;
    int rc = dcpi_procs_rows(set, po, &t);
    po->by_process = 0;
    if (rc == 0) {
        write_rows(f, "process_rows", set, t);
        fprintf(f, ",\"procs_missing\":%zu", missing);
    }
    dcpi_procs_table_free(t);
    return rc;
}

static int write_tables(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o,
                        dcpi_procs_table_t **procs)
{
    dcpi_procs_opts_t po = {.tool = o->tool,
                            .keep = 100.0,
                            .sort_event = o->sort_event,
                            .db = o->db,
                            .epoch = o->epoch,
                            .epochs = o->epochs,
                            .nepochs = o->nepochs,
                            .platform = o->platform,
                            .stacks = o->stacks,
                            .stacks_arg = o->source_arg};
    dcpi_procs_table_t *images = NULL;
    po.by_image = 1;
    int rc = dcpi_procs_rows(set, &po, &images);
    if (rc < 0)
        return rc;
    po.by_image = 0;
    rc = dcpi_procs_rows(set, &po, procs);
    if (rc == 0) {
        fprintf(f, ",\"sort\":%d", (*procs)->sort);
        write_images(f, set);
        write_rows(f, "image_rows", set, images);
        write_rows(f, "proc_rows", set, *procs);
    }
    dcpi_procs_table_free(images);
    if (rc == 0)
        rc = write_processes(f, set, &po);
    return rc;
}

static int write_document(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o,
                          char *err)
{
    fputs("{\"tool\":\"dcpireport\",\"version\":", f);
    dcpi_report_json_str(f, DCPI_VERSION_STRING);
    write_key(f, "db", o->db);
    write_key(f, "epoch", o->epoch);
    write_key(f, "platform", o->platform ? o->platform : "");
    fprintf(f, ",\"top\":%u,\"insns_max\":%d,\"rows_max\":%d", o->top, DCPI_REPORT_INSNS_MAX,
            DCPI_REPORT_ROWS_MAX);
    write_events(f, set);
    dcpi_procs_table_t *procs = NULL;
    int rc = 0;
    if (set->nevents) {
        rc = write_tables(f, set, o, &procs);
        if (rc == DCPI_ENOENT) /* -s names no event of the set: said on stderr */
            return rc;
    }
    if (rc == 0 && procs && procs->n) {
        fputc(',', f);
        rc = dcpi__report_flame(f, set, o, procs, err);
        if (rc == 0) {
            fputc(',', f);
            rc = dcpi__report_listings(f, set, o, procs, err);
        }
        if (rc == 0)
            rc = write_diff(f, set, o, procs->sort);
    }
    if (rc == 0)
        fputs("}", f);
    dcpi_procs_table_free(procs);
    return rc;
}

int dcpi_report_write_json(const dcpi_profset_t *set, const dcpi_report_opts_t *o, FILE *f,
                           char *err)
{
    err[0] = '\0';
    int rc = write_document(f, set, o, err);
    if (rc < 0 && !err[0] && rc != DCPI_ENOENT)
        dcpi__errf(err, rc, "%s", dcpi_strerror(rc));
    return rc;
}

int dcpi_report_write(const dcpi_profset_t *set, const dcpi_report_opts_t *o, FILE *f, char *err)
{
    err[0] = '\0';
    dcpi__report_page_head(f, o);
    int rc = write_document(f, set, o, err);
    if (rc < 0 && !err[0] && rc != DCPI_ENOENT)
        dcpi__errf(err, rc, "%s", dcpi_strerror(rc));
    if (rc == 0)
        dcpi__report_page_tail(f);
    return rc;
}
