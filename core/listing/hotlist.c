/*
 * hotlist.c - the value hotlist texts of a listing: a plugin's preface, then the value/percentage
 * pairs sorted by count, each value formatted by the plugin; every plugin call guarded
 * (core/plugin/guard.h). See listing.h.
 */
#include "core/listing/listing.h"
#include "core/listing/listing-int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/plugin/guard.h"
#include "core/store/vdesc.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

typedef struct sbuf {
    char *p;
    size_t len, used;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) DCPI_PRINTF(2, 3);
static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->used < b->len ? b->len - b->used : 0;
    int n = vsnprintf(room ? b->p + b->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->used += (size_t)n;
}

/* The name of vp's plugin in fault messages. */
static const char *plugin_name(const dcpi_lst_vp_t *vp)
{
    return vp->plugin ? vp->plugin : vp->name ? vp->name : "plugin";
}

/* The text of value v: the plugin's vp_format2 / vp_format, else (none, or NULL answer) "0x..."
 * in hex. */
int dcpi__lst_value_text(const trace_inst_t *inst, const dcpi_lst_vp_t *vp, const vp_context_t *ctx,
                         uint64_t v, char *out, size_t len, char *err)
{
    int rc = 0;
    if (dcpi_guard_has(vp->d, DCPI_GUARD_FORMAT, ctx))
        rc =
            dcpi_guard_call(vp->d, DCPI_GUARD_FORMAT, inst, ctx, v, out, len, plugin_name(vp), err);
    if (rc == 0)
        snprintf(out, len, "0x%llx", (unsigned long long)v);
    return rc < 0 ? rc : 0;
}

/* The preface into out: 1 with one (possibly ""), 0 when the plugin omits the hotlist. */
int dcpi__lst_preface(const trace_inst_t *inst, const dcpi_lst_vp_t *vp, const vp_context_t *ctx,
                      char *out, size_t len, char *err)
{
    out[0] = '\0';
    if (!dcpi_guard_has(vp->d, DCPI_GUARD_PREFACE, ctx))
        return 1;
    return dcpi_guard_call(vp->d, DCPI_GUARD_PREFACE, inst, ctx, 0, out, len, plugin_name(vp), err);
}

static int cmp_entry(const void *a, const void *b)
{
    const dcpi_ventry_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    if (x->context0 != y->context0)
        return x->context0 < y->context0 ? -1 : 1;
    return x->context1 < y->context1 ? -1 : x->context1 > y->context1;
}

dcpi_ventry_t *dcpi__lst_sorted(const dcpi_vsummary_t *s)
{
    dcpi_ventry_t *e = malloc((s->n + 1) * sizeof(*e));
    if (!e)
        return NULL;
    memcpy(e, s->e, s->n * sizeof(*e));
    qsort(e, s->n, sizeof(*e), cmp_entry);
    return e;
}

const vp_context_t *dcpi__lst_insn_ctx(const dcpi_listing_t *ls, size_t v,
                                       const dcpi_lst_insn_t *in, vp_context_t *ctx)
{
    *ctx = ls->vp[v].ctx; /* this instruction's */
    ctx->pc = in->addr;
    ctx->offset = in->addr - ls->vp[v].tstart;
    return ctx->size ? ctx : NULL;
}

const char *dcpi_listing_backend_note(const char *backend)
{
    static char buf[512];
    return dcpi_vdesc_note(backend, buf, sizeof buf);
}

/* The farther end of the 95% Wilson score interval of share p among n samples, as a distance
 * from p (it stays wide at p = 0 or 1 and small n, where p(1-p)/n would say 0). */
static double wilson_reach(double p, double n)
{
    const double z = 1.96, z2 = z * z;
    double c = (p + z2 / (2 * n)) / (1 + z2 / n);
    double h = z / (1 + z2 / n) * sqrt(p * (1 - p) / n + z2 / (4 * n * n));
    double lo = c - h, hi = c + h;
    return p - lo > hi - p ? p - lo : hi - p;
}

static double neff_value(const dcpi_vsummary_t *s, const dcpi_vsummary_icc_t *c, double p);

/* The bound of s's shares: the widest Wilson reach of a listed share, each as drawn from n_eff
 * independent samples (n_eff 0: exact, the error bound only), or, with clusters c, from its own
 * neff_value (at least 1), plus the error bound; at most 100. */
static double share_bound_over(const dcpi_vsummary_t *s, double n_eff, const dcpi_vsummary_icc_t *c)
{
    double n = (double)s->vtot, worst = 0.0;
    for (uint32_t i = 0; i < s->n && (c || n_eff > 0); i++) {
        double p = (double)s->e[i].count / n, ne = c ? neff_value(s, c, p) : n_eff;
        double r = wilson_reach(p, ne < 1.0 ? 1.0 : ne);
        worst = r > worst ? r : worst;
    }
    double b = 100.0 * (worst + (double)s->err / n);
    return b > 100.0 ? 100.0 : b;
}

/* n_eff at intraclass correlation rho: vtot / (1 + (m - 1) rho) x (K - 1) / K (0: fewer than
 * two clusters). */
static double neff_at(const dcpi_vsummary_t *s, const dcpi_vsummary_icc_t *c, double rho)
{
    if (c->k < 2)
        return 0.0;
    return (double)s->vtot / (1.0 + (c->m - 1.0) * rho) * (c->k - 1) / c->k;
}

double dcpi_listing_neff(const dcpi_vsummary_t *s)
{
    if (!s || s->vtot == 0)
        return 0.0;
    if (s->chits == 0)
        return (double)s->vtot;
    dcpi_vsummary_icc_t c;
    dcpi_vsummary_icc(s, &c);
    return neff_at(s, &c, c.rho);
}

/* n_eff for a value of share p (listing.h): the pooled correlation says how much the values'
 * shares vary between clusters in all, T = sum_v Var(p_v) = rho (1 - sum p_v^2). One value's
 * share is 1 minus the k - 1 others', so its variance is at most (k - 1) times theirs
 * (Cauchy-Schwarz): Var(p_v) <= T (k - 1) / k, for the k values a hotlist without error bound
 * holds (two values: exactly T / 2); at most T when values may be unlisted. So its own
 * correlation is at most rho (1 - sum p_v^2) (k - 1) / k / (p (1 - p)). */
static double neff_value(const dcpi_vsummary_t *s, const dcpi_vsummary_icc_t *c, double p)
{
    double rho = c->rho, spread = p * (1.0 - p);
    double part = s->err == 0 && s->n >= 2 ? (double)(s->n - 1) / (double)s->n : 1.0;
    if (rho > 0.0 && spread > 0.0)
        rho = rho * (1.0 - c->pa) * part / spread;
    else if (rho > 0.0)
        rho = 1.0;
    return neff_at(s, c, rho > 1.0 ? 1.0 : rho);
}

double dcpi_listing_share_bound(const dcpi_vsummary_t *s)
{
    if (!s || s->vtot == 0)
        return 100.0;
    if (s->chits == 0)
        return share_bound_over(s, (double)s->vtot, NULL);
    dcpi_vsummary_icc_t c;
    dcpi_vsummary_icc(s, &c);
    return c.k < 2 ? 100.0 : share_bound_over(s, 0.0, &c);
}

double dcpi_listing_share_bound_vp(const dcpi_vsummary_t *s, const dcpi_lst_vp_t *vp)
{
    if (!vp || !vp->ow_set)
        return dcpi_listing_share_bound(s);
    if (!s || s->vtot == 0)
        return 100.0;
    if (vp->ow_all)
        return share_bound_over(s, 0.0, NULL);
    if (vp->ow_windows < 2 || vp->ow_execs == 0 || vp->ow_sumsq == 0)
        return 100.0;
    double k = (double)vp->ow_windows, deff = (double)vp->ow_sumsq / (double)vp->ow_execs;
    double n_eff = (double)s->vtot / (deff < 1.0 ? 1.0 : deff) * (k - 1) / k;
    return share_bound_over(s, n_eff, NULL);
}

int dcpi_listing_value_missing(const dcpi_ventry_t *e)
{
    return e->context0 == VP_CONTEXT_MISSING && e->value == 0 && !e->context1;
}

/* The pairs of the hotlist after the preface. 0 or DCPI_EPLUGIN. */
static int format_pairs(sbuf_t *b, const dcpi_ventry_t *e, const dcpi_vsummary_t *s,
                        const trace_inst_t *inst, const dcpi_lst_vp_t *vp, const vp_context_t *ctx,
                        const dcpi_lst_vopts_t *o, char *err)
{
    int dots = 0;
    for (size_t i = 0; i < s->n && i < o->show; i++) {
        double pct = 100.0 * (double)e[i].count / (double)s->vtot;
        if (pct < o->cutoff) {
            sb_printf(b, "%s.", dots++ || !b->used ? "" : " ");
            continue;
        }
        char v[DCPI_LST_PLUGIN_TEXT_MAX];
        int missing = dcpi_listing_value_missing(&e[i]);
        int rc = missing ? 0 : dcpi__lst_value_text(inst, vp, ctx, e[i].value, v, sizeof(v), err);
        if (rc < 0)
            return rc;
        sb_printf(b, "%s(%.1f%% %s", b->used ? " " : "", pct, missing ? "missing" : v);
        if (!missing && (e[i].context0 || e[i].context1))
            sb_printf(b, " @0x%llx,0x%llx", (unsigned long long)e[i].context0,
                      (unsigned long long)e[i].context1);
        sb_printf(b, ")");
    }
    return 0;
}

/* dcpi_listing_hotlist with the guard entered; ctx NULL: no context (ABI-1 entries). */
static int hotlist_text(const dcpi_vsummary_t *s, const trace_inst_t *inst, const dcpi_lst_vp_t *vp,
                        const vp_context_t *ctx, const dcpi_lst_vopts_t *o, char *buf, size_t len,
                        char *err)
{
    sbuf_t b = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    if (!s || s->n == 0 || s->vtot == 0)
        return 0;
    char preface[DCPI_LST_PLUGIN_TEXT_MAX];
    int rc = dcpi__lst_preface(inst, vp, ctx, preface, sizeof(preface), err);
    if (rc <= 0)
        return rc; /* a fault, or the plugin omits this instruction's hotlist */
    dcpi_ventry_t *e = dcpi__lst_sorted(s);
    if (!e)
        return 0;
    sb_printf(&b, "%s", preface);
    rc = format_pairs(&b, e, s, inst, vp, ctx, o, err);
    free(e);
    if (rc < 0 && len)
        buf[0] = '\0';
    return rc < 0 ? rc : (int)(b.used < INT32_MAX ? b.used : INT32_MAX);
}

int dcpi_listing_hotlist(const dcpi_vsummary_t *s, const trace_inst_t *inst,
                         const dcpi_lst_vp_t *vp, const dcpi_lst_vopts_t *o, char *buf, size_t len,
                         char *err)
{
    dcpi_guard_t g;
    dcpi_guard_enter(&g);
    int rc = hotlist_text(s, inst, vp, NULL, o, buf, len, err);
    dcpi_guard_leave(&g);
    return rc;
}

/* The texts of one instruction (its vtext array made here). */
static int prepare_insn(dcpi_listing_t *ls, dcpi_lst_insn_t *in, const dcpi_lst_vopts_t *vo,
                        char *err)
{
    if (in->bad)
        return 0;
    if (!in->vtext && !(in->vtext = calloc(ls->nvp + 1, sizeof(*in->vtext))))
        return DCPI_ENOMEM;
    for (size_t v = 0; v < ls->nvp; v++) {
        char text[DCPI_LST_HOTLIST_LEN];
        if (!in->vs[v] || in->vtext[v])
            continue;
        vp_context_t ctx;
        int rc = hotlist_text(in->vs[v], &in->inst, &ls->vp[v], dcpi__lst_insn_ctx(ls, v, in, &ctx),
                              vo, text, sizeof(text), err);
        if (rc < 0)
            return rc;
        if (!(in->vtext[v] = strdup(text)))
            return DCPI_ENOMEM;
    }
    return 0;
}

int dcpi_listing_prepare_values(dcpi_listing_t *ls, const dcpi_lst_vopts_t *vo, char *err)
{
    dcpi_guard_t g;
    dcpi_guard_enter(&g);
    int rc = 0;
    for (size_t i = 0; i < ls->n && rc == 0; i++)
        rc = prepare_insn(ls, &ls->insns[i], vo, err);
    dcpi_guard_leave(&g);
    if (rc == DCPI_ENOMEM && err)
        dcpi__errf(err, rc, "%s: %s", ls->proc ? ls->proc : "listing", dcpi_strerror(rc));
    return rc;
}
