/*
 * sinkin.c - the sink's inward interface (values.h): what a backend may do with the sink, the
 * plugins named by index, so that no backend reaches into the sink's state (values-int.h).
 */
#include <string.h>

#include "core/values/values-int.h"

/* plugin's state: one of the first npl (the oracle twins are the sink's own). */
static dcpi_values_plugin_t *plugin_at(const dcpi_values_t *vt, unsigned plugin)
{
    return plugin < vt->npl ? &vt->pl[plugin] : NULL;
}

int dcpi_values_icc(dcpi_values_t *vt, unsigned pid, uint64_t pc, struct dcpi_vsummary_icc *out)
{
    dcpi_image_t *img;
    uint32_t off;
    if (dcpi_loadmap_resolve(vt->lm, (pid_t)pid, pc, &img, &off) < 0)
        return -1;
    const dcpi_vsummary_t *best = NULL;
    for (unsigned i = 0; i < vt->npl; i++) {
        const dcpi_vsummary_t *s = dcpi__values_summary_find(&vt->pl[i], img->index, off);
        best = s && (!best || s->vtot > best->vtot) ? s : best;
    }
    if (!best)
        return -1;
    dcpi_vsummary_icc(best, out);
    return 0;
}

int dcpi_values_put(dcpi_values_t *vt, unsigned plugin, const dcpi_values_put_t *e, unsigned image)
{
    dcpi_values_plugin_t *p = plugin_at(vt, plugin);
    if (!p)
        return 0;
    p->st.seen++;
    return dcpi__values_put(vt, p, e, image);
}

void dcpi_values_hit(dcpi_values_t *vt, const dcpi_values_sample_t *s)
{
    dcpi__values_take(vt, s, 1);
}

int dcpi_values_takes(const dcpi_values_t *vt, unsigned plugin, trace_opc_t key)
{
    const dcpi_values_plugin_t *p = plugin_at(vt, plugin);
    return p && !p->st.disabled && key < vt->nkeys && p->nval[key] >= 0;
}

int dcpi_values_admits(dcpi_values_t *vt, unsigned plugin, const dcpi_image_t *img, uint32_t off,
                       const trace_inst_t *inst)
{
    dcpi_values_plugin_t *p = plugin_at(vt, plugin);
    if (!p)
        return 0;
    if (!inst && p->filter)
        return dcpi__values_admitted(p, img, off) == 1;
    return dcpi__values_admits(vt, p, img, off, inst);
}

void dcpi_values_seen(dcpi_values_t *vt, unsigned plugin, const dcpi_image_t *img, uint32_t off,
                      uint32_t count)
{
    dcpi_values_plugin_t *p = plugin_at(vt, plugin);
    if (!p)
        return;
    dcpi_vsummary_t *s = dcpi__values_summary_at(vt, p, img->index, off);
    if (s)
        dcpi_vsummary_seen(s, count);
    else
        dcpi__values_lose(p, img->index, 1);
}

void dcpi_values_lost(dcpi_values_t *vt, unsigned plugin)
{
    dcpi_values_plugin_t *p = plugin_at(vt, plugin);
    if (p)
        p->st.lost++;
}

int dcpi_values_vlist(const dcpi_values_t *vt, unsigned plugin, trace_opc_t key,
                      trace_value_t *kinds)
{
    const dcpi_values_plugin_t *p = plugin_at(vt, plugin);
    int n = p && key < vt->nkeys ? p->nval[key] : -1;
    for (int i = 0; i < n; i++)
        kinds[i] = (trace_value_t)p->kinds[key][i];
    return n;
}

trace_opc_t dcpi_values_nkeys(const dcpi_values_t *vt)
{
    return vt->nkeys;
}

int dcpi_values_records(const dcpi_values_t *vt, trace_opc_t key)
{
    return vt->rec.tf && key < vt->nkeys && vt->rec.nval[key] >= 0;
}

dcpi_loadmap_t *dcpi_values_loadmap(const dcpi_values_t *vt)
{
    return vt->lm;
}
