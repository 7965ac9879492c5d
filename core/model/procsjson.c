/*
 * procsjson.c - dcpiprof -json: the event summary and the rows of procs.h as one JSON object
 * (the schema is in docs/dcpiprof.md, JSON OUTPUT).
 */
#include "core/model/procs.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/base/json.h"
#include "dcpi/errno.h"

static void json_events(const dcpi_profset_t *set, FILE *f)
{
    fputs("\"events\":[", f);
    for (size_t e = 0; e < set->nevents; e++) {
        const dcpi_profset_event_t *ev = &set->events[e];
        fputs(e ? ",{" : "{", f);
        dcpi__json_key(f, 0, "name");
        dcpi__json_str(f, ev->name);
        fprintf(f, ",\"total\":%" PRIu64 ",\"lost\":%" PRIu64, ev->total, ev->lost);
        if (ev->mixed_period)
            fputs(",\"period\":null,\"mixed_period\":true", f);
        else
            fprintf(f, ",\"period\":%" PRIu64 ",\"mixed_period\":false", ev->period);
        fputc('}', f);
    }
    fputc(']', f);
}

/* A process row's "PID COMMAND" label as "pid" and "comm"; the row of the samples without a
 * split by process has both null. */
static void json_process(FILE *f, const char *label)
{
    char *end = NULL;
    unsigned long pid = strtoul(label, &end, 10);
    if (end != label && *end == ' ') {
        fprintf(f, "\"pid\":%lu,", pid);
        dcpi__json_key(f, 0, "comm");
        dcpi__json_str(f, end + 1);
    } else {
        fputs("\"pid\":null,\"comm\":null", f);
    }
}

static void json_row(const dcpi_profset_t *set, const dcpi_procs_opts_t *o,
                     const dcpi_procs_table_t *t, const dcpi_procs_row_t *row, FILE *f)
{
    fputc('{', f);
    if (o->by_process) {
        json_process(f, row->image);
    } else {
        dcpi__json_key(f, 0, "image");
        dcpi__json_str(f, row->image);
        if (!o->by_image) {
            dcpi__json_key(f, 1, "procedure");
            dcpi__json_str(f, row->proc);
            if (row->addr)
                fprintf(f, ",\"addr\":\"0x%" PRIx64 "\"", row->addr);
            else
                fputs(",\"addr\":null", f);
        }
    }
    fputs(",\"counts\":{", f);
    for (size_t e = 0; e < set->nevents; e++) {
        dcpi__json_key(f, e > 0, set->events[e].name);
        fprintf(f, "%" PRIu64, row->counts[e]);
    }
    fputc('}', f);
    if (t->children)
        fprintf(f, ",\"children\":%" PRIu64, row->children);
    fputc('}', f);
}

int dcpi_procs_json(const dcpi_profset_t *set, const dcpi_procs_opts_t *o,
                    const char *const *epochs, size_t nepochs, FILE *f)
{
    dcpi_procs_table_t *t = NULL;
    int rc = dcpi_procs_rows(set, o, &t);
    if (rc < 0)
        return rc;
    fputs("{\"schema\":\"dcpiprof/1\",\"epochs\":[", f);
    for (size_t i = 0; i < nepochs; i++) {
        if (i)
            fputc(',', f);
        dcpi__json_str(f, epochs[i]);
    }
    fprintf(f, "],\"view\":\"%s\",",
            o->by_process ? "process"
            : o->by_image ? "image"
                          : "procedure");
    dcpi__json_key(f, 0, "sort_event");
    dcpi__json_str(f, t->n ? set->events[t->sort].name : NULL);
    fputc(',', f);
    json_events(set, f);
    fprintf(f, ",\"children\":%s,\"rows\":[", t->children ? "true" : "false");
    uint64_t cum = 0, total = t->n ? set->events[t->sort].total : 0;
    for (size_t i = 0; i < t->n; i++) {
        if (i)
            fputc(',', f);
        json_row(set, o, t, &t->v[i], f);
        cum += t->v[i].counts[t->sort];
        if (o->keep < 100.0 && total && 100.0 * (double)cum / (double)total >= o->keep)
            break;
    }
    fputs("]}\n", f);
    dcpi_procs_table_free(t);
    if (fflush(f) == 0 && !ferror(f))
        return 0;
    fprintf(stderr, "%s: output: %s\n", o->tool, dcpi_strerror(DCPI_EIO));
    return DCPI_EIO;
}
