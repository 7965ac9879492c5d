/*
 * listjson.c - dcpilist -json: the listing of one procedure (its instructions, their counts and
 * source positions) and, with -vprof, every value hotlist with its bound, as one JSON object
 * (schema dcpilist/1, docs/dcpilist.md, JSON OUTPUT). The object is written into memory first
 * and copied out only when every plugin call succeeded, so a faulting plugin leaves nothing
 * half written.
 */
#include "core/listing/listsel.h"
#include "core/listing/listing-int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/json.h"
#include "dcpi/errno.h"

static void json_hex(FILE *f, int comma, const char *key, uint64_t v)
{
    dcpi__json_key(f, comma, key);
    fprintf(f, "\"0x%" PRIx64 "\"", v);
}

static void json_u64(FILE *f, int comma, const char *key, uint64_t v)
{
    dcpi__json_key(f, comma, key);
    fprintf(f, "%" PRIu64, v);
}

static void json_head(const dcpi_lstsel_t *s, FILE *f)
{
    fputs("{\"schema\":\"dcpilist/1\",\"epochs\":[", f);
    size_t n = s->nepochs ? s->nepochs : 1;
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        dcpi__json_str(f, s->nepochs ? s->epochs[i] : s->epoch);
    }
    fputc(']', f);
    dcpi__json_key(f, 1, "procedure");
    dcpi__json_str(f, s->proc);
    dcpi__json_key(f, 1, "image");
    dcpi__json_str(f, s->kept[0] ? s->kept : s->path);
    dcpi__json_key(f, 1, "code");
    dcpi__json_str(f, s->path);
    dcpi__json_key(f, 1, "build_id");
    dcpi__json_str(f, s->info.id);
    json_hex(f, 1, "lo", s->lo);
    json_hex(f, 1, "hi", s->hi);
    fputs(",\"events\":[", f);
    const dcpi_listing_t *ls = s->ls;
    for (size_t e = 0; e < ls->nevents; e++) {
        fputs(e ? ",{" : "{", f);
        dcpi__json_key(f, 0, "name");
        dcpi__json_str(f, ls->events[e]);
        json_u64(f, 1, "samples", ls->proc_total[e]);
        json_u64(f, 1, "image_samples", ls->image_total[e]);
        fputc('}', f);
    }
    fputc(']', f);
}

static void json_profiles(const dcpi_listing_t *ls, FILE *f)
{
    fputs(",\"value_profiles\":[", f);
    for (size_t v = 0; v < ls->nvp; v++) {
        const dcpi_lst_vp_t *vp = &ls->vp[v];
        fputs(v ? ",{" : "{", f);
        dcpi__json_key(f, 0, "name");
        dcpi__json_str(f, vp->name);
        dcpi__json_key(f, 1, "plugin");
        dcpi__json_str(f, vp->plugin);
        json_u64(f, 1, "hotsize", vp->hotsize);
        json_u64(f, 1, "max_err", vp->max_err);
        dcpi__json_key(f, 1, "backend");
        dcpi__json_str(f, vp->backend);
        dcpi__json_key(f, 1, "backend_note");
        dcpi__json_str(f, dcpi_listing_backend_note(vp->backend));
        fputc('}', f);
    }
    fprintf(f, "],\"few_bound\":%.1f", DCPI_LST_FEW_BOUND);
}

/* The entries of one hotlist, each with the plugin's text of its value. */
static int json_entries(const dcpi_listing_t *ls, size_t v, const dcpi_lst_insn_t *in,
                        const vp_context_t *ctx, int formatted, FILE *f, char *err)
{
    const dcpi_vsummary_t *s = in->vs[v];
    dcpi_ventry_t *e = dcpi__lst_sorted(s);
    if (!e)
        return DCPI_ENOMEM;
    int rc = 0;
    fputs(",\"hotlist\":[", f);
    for (uint32_t i = 0; i < s->n && rc == 0; i++) {
        char text[DCPI_LST_PLUGIN_TEXT_MAX] = "";
        int missing = dcpi_listing_value_missing(&e[i]);
        if (missing)
            snprintf(text, sizeof text, "missing");
        else if (formatted)
            rc = dcpi__lst_value_text(&in->inst, &ls->vp[v], ctx, e[i].value, text, sizeof text,
                                      err);
        else
            snprintf(text, sizeof text, "0x%" PRIx64, e[i].value);
        fputs(i ? ",{" : "{", f);
        json_hex(f, 0, "value", e[i].value);
        dcpi__json_key(f, 1, "text");
        dcpi__json_str(f, text);
        json_hex(f, 1, "context0", e[i].context0);
        json_hex(f, 1, "context1", e[i].context1);
        json_u64(f, 1, "count", e[i].count);
        fprintf(f, ",\"share\":%.4f", s->vtot ? 100.0 * (double)e[i].count / (double)s->vtot : 0.0);
        fprintf(f, ",\"missing\":%s}", missing ? "true" : "false");
    }
    fputc(']', f);
    free(e);
    return rc;
}

/* One value profile's hotlist at in: its figures, bound, preface, text and entries. */
static int json_hotlist(const dcpi_listing_t *ls, size_t v, const dcpi_lst_insn_t *in, int comma,
                        FILE *f, char *err)
{
    const dcpi_vsummary_t *s = in->vs[v];
    vp_context_t cbuf;
    const vp_context_t *ctx = dcpi__lst_insn_ctx(ls, v, in, &cbuf);
    char preface[DCPI_LST_PLUGIN_TEXT_MAX] = "";
    int shown = !in->bad && s->n && s->vtot;
    int rc =
        shown ? dcpi__lst_preface(&in->inst, &ls->vp[v], ctx, preface, sizeof preface, err) : 0;
    if (rc < 0)
        return rc;
    dcpi__json_key(f, comma, ls->vp[v].name);
    fputc('{', f);
    json_u64(f, 0, "vtot", s->vtot);
    json_u64(f, 1, "seen", s->seen);
    if (s->vtot)
        fprintf(f, ",\"thld\":%.4f", (double)s->seen / (double)s->vtot);
    else
        fputs(",\"thld\":null", f);
    json_u64(f, 1, "nv", s->n);
    json_u64(f, 1, "err", s->err);
    json_u64(f, 1, "clusters", s->chits ? s->clusters : 0);
    fprintf(f, ",\"neff\":%.1f", dcpi_listing_neff(s));
    double b = dcpi_listing_share_bound_vp(s, &ls->vp[v]);
    fprintf(f, ",\"bound\":%.4f,\"few\":%s", b, b > DCPI_LST_FEW_BOUND ? "true" : "false");
    dcpi__json_key(f, 1, "preface");
    dcpi__json_str(f, rc == 1 && dcpi_guard_has(ls->vp[v].d, DCPI_GUARD_PREFACE, ctx) ? preface
                                                                                      : NULL);
    dcpi__json_key(f, 1, "omitted");
    fputs(shown && rc == 0 ? "true" : "false", f);
    dcpi__json_key(f, 1, "shown");
    dcpi__json_str(f, in->vtext ? in->vtext[v] : NULL);
    rc = json_entries(ls, v, in, ctx, !in->bad && rc == 1, f, err);
    fputc('}', f);
    return rc;
}

static int json_insn(const dcpi_listing_t *ls, const dcpi_lst_insn_t *in, int values, FILE *f,
                     char *err)
{
    fputc('{', f);
    json_hex(f, 0, "addr", in->addr);
    dcpi__json_key(f, 1, "text");
    dcpi__json_str(f, dcpi_lst_insn_text(in));
    fprintf(f, ",\"target\":%s,\"bad\":%s,\"counts\":{", in->is_target ? "true" : "false",
            in->bad ? "true" : "false");
    for (size_t e = 0; e < ls->nevents; e++)
        json_u64(f, e > 0, ls->events[e], in->counts[e]);
    fputc('}', f);
    dcpi__json_key(f, 1, "file");
    dcpi__json_str(f, in->file);
    if (in->file)
        fprintf(f, ",\"line\":%d", in->line);
    else
        fputs(",\"line\":null", f);
    int rc = 0, comma = 0;
    if (values) {
        fputs(",\"values\":{", f);
        for (size_t v = 0; v < ls->nvp && rc == 0; v++) {
            if (in->vs[v]) {
                rc = json_hotlist(ls, v, in, comma, f, err);
                comma = 1;
            }
        }
        fputc('}', f);
    }
    fputc('}', f);
    return rc;
}

static int json_body(const dcpi_lstsel_t *s, int values, FILE *f, char *err)
{
    const dcpi_listing_t *ls = s->ls;
    json_head(s, f);
    if (values)
        json_profiles(ls, f);
    fputs(",\"instructions\":[", f);
    dcpi_guard_t g;
    dcpi_guard_enter(&g);
    int rc = 0;
    for (size_t i = 0; i < ls->n && rc == 0; i++) {
        if (i)
            fputc(',', f);
        rc = json_insn(ls, &ls->insns[i], values, f, err);
    }
    dcpi_guard_leave(&g);
    fputs("]}\n", f);
    return rc;
}

int dcpi_lstsel_json(dcpi_lstsel_t *s, int values, FILE *f, char *err)
{
    char why[DCPI_ERRLEN] = "";
    err[0] = '\0';
    if (!s->sl && dcpi_srclines_open(s->path, &s->sl, why) == 0)
        dcpi_listing_set_lines(s->ls, s->sl); /* positions when there are; none is no error */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return DCPI_ENOMEM;
    int rc = json_body(s, values && s->ls->nvp > 0, m, err);
    if (fclose(m) != 0 && rc == 0)
        rc = DCPI_ENOMEM;
    if (rc == 0 && fwrite(buf, 1, len, f) != len)
        rc = dcpi__errf(err, DCPI_EIO, "standard output: write failed");
    free(buf);
    return rc;
}
