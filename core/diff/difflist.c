/*
 * difflist.c - dcpidiff's views of one procedure: its listing (core/listing/listsel.h) built
 * in both sets, then rows per source line, per instruction, or per value of the instructions'
 * value hotlists (see diff.h, dcpi_diff_add_proc).
 */
#include "core/diff/diff.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/listing/listsel.h"
#include "core/base/err.h"
#include "core/image/srclines.h"
#include "dcpi/errno.h"

static const char *const set_label[2] = {"A", "B"};

/* The listing of o->proc in set s: 0, or DCPI_E* with "set X: reason" in err. */
static int open_listing(const dcpi_diff_proc_t *o, const dcpi_diff_set_t *s, int side,
                        dcpi_lstsel_t *sel, char *err)
{
    *sel = (dcpi_lstsel_t){
        .tool = o->tool, .set = s->set, .db = s->db, .epoch = s->epoch, .platform = s->platform};
    char why[DCPI_ERRLEN] = "";
    int rc = dcpi_lstsel_open(sel, o->proc, o->image, NULL, why);
    if (rc == 0 && o->view == DCPI_DIFF_VPROF)
        rc = dcpi_lstsel_values(sel, o->plugin_dirs, NULL, 0, 0, why);
    if (rc == 0)
        rc = dcpi_lstsel_build(sel, why);
    if (rc < 0)
        dcpi__errf(err, rc, "set %s: %s", set_label[side], why[0] ? why : dcpi_strerror(rc));
    return rc;
}

/* The listing's column of the compared event, or -1 when the image has no samples of it. */
static int column(const dcpi_lstsel_t *sel, int event)
{
    for (size_t k = 0; k < sel->nevents; k++)
        if (sel->event_idx[k] == event)
            return (int)k;
    return -1;
}

static uint64_t insn_count(const dcpi_lst_insn_t *in, int col)
{
    return col < 0 ? 0 : in->counts[col];
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int add_lines(dcpi_diff_t *d, int side, dcpi_lstsel_t *sel, int col, char *err)
{
    dcpi_srclines_t *sl = NULL;
    char why[DCPI_ERRLEN] = "";
    int rc = dcpi_srclines_open(sel->path, &sl, why);
    if (rc < 0)
        return dcpi__errf(err, rc, "set %s: %s (use -asm)", set_label[side], why);
    dcpi_listing_set_lines(sel->ls, sl);
    for (size_t i = 0; i < sel->ls->n && rc == 0; i++) {
        const dcpi_lst_insn_t *in = &sel->ls->insns[i];
        char key[600];
        if (in->file)
            snprintf(key, sizeof key, "%s:%d", base_name(in->file), in->line);
        else
            snprintf(key, sizeof key, "(no line)");
        if (insn_count(in, col))
            rc = dcpi_diff_add(d, side, "", key, insn_count(in, col));
    }
    sel->sl = sl; /* the positions point into sl: freed with the listing */
    return rc;
}

static int add_insns(dcpi_diff_t *d, int side, const dcpi_lstsel_t *sel, int col)
{
    int rc = 0;
    for (size_t i = 0; i < sel->ls->n && rc == 0; i++) {
        const dcpi_lst_insn_t *in = &sel->ls->insns[i];
        char key[512];
        snprintf(key, sizeof key, "0x%" PRIx64 "  %s", in->addr, dcpi_lst_insn_text(in));
        if (insn_count(in, col))
            rc = dcpi_diff_add(d, side, "", key, insn_count(in, col));
    }
    return rc;
}

static void value_label(const dcpi_ventry_t *e, char *buf, size_t len)
{
    if (dcpi_listing_value_missing(e))
        snprintf(buf, len, "missing");
    else if (e->context0 || e->context1)
        snprintf(buf, len, "0x%" PRIx64 " @0x%" PRIx64 ",0x%" PRIx64, e->value, e->context0,
                 e->context1);
    else
        snprintf(buf, len, "0x%" PRIx64, e->value);
}

int dcpi_diff_add_values(dcpi_diff_t *d, const char *group, const dcpi_vsummary_t *va,
                         const dcpi_vsummary_t *vb)
{
    int rc = 0;
    char label[128];
    for (uint32_t i = 0; i < va->n && rc == 0; i++) {
        const dcpi_ventry_t *e = &va->e[i];
        value_label(e, label, sizeof label);
        uint64_t b = dcpi_vsummary_count(vb, e->value, e->context0, e->context1);
        rc = dcpi_diff_add_row(d, group, label, e->count, va->vtot, b, vb->vtot);
    }
    for (uint32_t i = 0; i < vb->n && rc == 0; i++) {
        const dcpi_ventry_t *e = &vb->e[i];
        if (dcpi_vsummary_count(va, e->value, e->context0, e->context1))
            continue;
        value_label(e, label, sizeof label);
        rc = dcpi_diff_add_row(d, group, label, 0, va->vtot, e->count, vb->vtot);
    }
    return rc;
}

/* Index of value profile name in sel, or -1. */
static int vp_index(const dcpi_lstsel_t *sel, const char *name)
{
    for (size_t v = 0; v < sel->nvp; v++)
        if (!strcmp(sel->vpnames[v], name))
            return (int)v;
    return -1;
}

/* -vtrace NAME that a set lacks: "set X has no value profile 'NAME' of PATH in epoch E (value
 * profiles there: a, b)". 0 when both sets have it (or no name was given). */
static int check_vpname(const dcpi_diff_proc_t *o, const dcpi_lstsel_t sel[2], char *err)
{
    for (int side = 0; o->vpname && side < 2; side++) {
        if (vp_index(&sel[side], o->vpname) >= 0)
            continue;
        char names[256] = "";
        size_t used = 0;
        for (size_t v = 0; v < sel[side].nvp && used < sizeof names; v++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", v ? ", " : "",
                                     sel[side].vpnames[v]);
        return dcpi__errf(err, DCPI_ENOENT,
                          "set %s has no value profile '%s' of %s in epoch %s (value profiles "
                          "there: %s; -vtrace takes a profile's name, not a plugin file)",
                          set_label[side], o->vpname, sel[side].path, sel[side].epoch,
                          names[0] ? names : "none");
    }
    return 0;
}

static int add_vprofs(dcpi_diff_t *d, const dcpi_diff_proc_t *o, dcpi_lstsel_t sel[2], char *err)
{
    size_t shared = 0;
    int rc = check_vpname(o, sel, err);
    if (rc < 0)
        return rc;
    for (size_t va = 0; va < sel[0].nvp && rc == 0; va++) {
        const char *name = sel[0].vpnames[va];
        int vb = vp_index(&sel[1], name);
        if (vb < 0 || (o->vpname && strcmp(o->vpname, name) != 0))
            continue;
        for (size_t i = 0; i < sel[0].ls->n && rc == 0; i++) {
            const dcpi_lst_insn_t *ia = &sel[0].ls->insns[i];
            const dcpi_lst_insn_t *ib = dcpi_listing_find(sel[1].ls, ia->addr);
            const dcpi_vsummary_t *sa = ia->vs ? ia->vs[va] : NULL;
            const dcpi_vsummary_t *sb = ib && ib->vs ? ib->vs[vb] : NULL;
            if (!sa || !sb || !sa->vtot || !sb->vtot)
                continue;
            char group[600];
            snprintf(group, sizeof group, "0x%" PRIx64 " %s [%s]", ia->addr, dcpi_lst_insn_text(ia),
                     name);
            rc = dcpi_diff_add_values(d, group, sa, sb);
            shared++;
        }
    }
    if (rc == 0 && shared == 0)
        return dcpi__errf(err, DCPI_ENOENT,
                          "no instruction of %s has values%s%s in both sets (value profiles: set "
                          "A %zu, set B %zu)",
                          sel[0].proc, o->vpname ? " of " : "", o->vpname ? o->vpname : "",
                          sel[0].nvp, sel[1].nvp);
    return rc;
}

static int same_build(const dcpi_diff_proc_t *o, dcpi_lstsel_t sel[2], char *err)
{
    if (!strcmp(sel[0].info.id, sel[1].info.id))
        return 0;
    return dcpi__errf(err, DCPI_EINVAL,
                      "%s compares instructions of one build: set A profiled %s id %s, set B %s "
                      "id %s (use -source or the procedure view)",
                      o->view == DCPI_DIFF_ASM ? "-asm" : "-vprof", sel[0].path, sel[0].info.id,
                      sel[1].path, sel[1].info.id);
}

int dcpi_diff_add_proc(dcpi_diff_t *d, const dcpi_diff_proc_t *o, const dcpi_diff_set_t sets[2],
                       char *err)
{
    dcpi_lstsel_t sel[2] = {{0}, {0}};
    int rc = open_listing(o, &sets[0], 0, &sel[0], err);
    if (rc == 0)
        rc = open_listing(o, &sets[1], 1, &sel[1], err);
    if (rc == 0 && o->view != DCPI_DIFF_SOURCE)
        rc = same_build(o, sel, err);
    uint64_t tot[2] = {sets[0].set->events[sets[0].event].total,
                       sets[1].set->events[sets[1].event].total};
    for (int side = 0; side < 2 && rc == 0 && o->view != DCPI_DIFF_VPROF; side++) {
        int col = column(&sel[side], sets[side].event);
        if (o->within)
            tot[side] = col < 0 ? 0 : sel[side].ls->proc_total[col];
        if (o->view == DCPI_DIFF_SOURCE)
            rc = add_lines(d, side, &sel[side], col, err);
        else
            rc = add_insns(d, side, &sel[side], col);
    }
    if (rc == 0 && o->view == DCPI_DIFF_VPROF)
        rc = add_vprofs(d, o, sel, err);
    d->na = tot[0];
    d->nb = tot[1];
    dcpi_lstsel_free(&sel[0]);
    dcpi_lstsel_free(&sel[1]);
    return rc;
}
