/*
 * gmon.c - read and write gprof's gmon.out (core/formats/gmon.h) with one-line errors for malformed
 * files.
 */
#include "core/formats/gmon.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/store/header.h"
#include "dcpi/errno.h"

#define HDR_SIZE  20
#define HIST_HEAD 40
#define ARC_SIZE  20

enum { TAG_HIST = 0, TAG_ARC = 1, TAG_BB = 2 };

int dcpi_gmon_new(dcpi_gmon_t **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : DCPI_ENOMEM;
}

void dcpi_gmon_free(dcpi_gmon_t *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nhists; i++)
        free(g->hists[i].bins);
    free(g->hists);
    free(g->arcs);
    free(g);
}

int dcpi_gmon_add_hist(dcpi_gmon_t *g, uint64_t low, uint64_t high, uint32_t nbins, uint32_t rate,
                       dcpi_gmon_hist_t **out)
{
    if (high <= low || nbins == 0)
        return DCPI_EINVAL;
    if (dcpi__grow((void **)&g->hists, &g->cap_hists, g->nhists + 1, sizeof(*g->hists)) < 0)
        return DCPI_ENOMEM;
    uint16_t *bins = calloc(nbins, sizeof(*bins));
    if (!bins)
        return DCPI_ENOMEM;
    dcpi_gmon_hist_t *h = &g->hists[g->nhists++];
    *h = (dcpi_gmon_hist_t){.low = low,
                            .high = high,
                            .nbins = nbins,
                            .rate = rate,
                            .dimen = "seconds",
                            .abbrev = 's',
                            .bins = bins};
    if (out)
        *out = h;
    return 0;
}

int dcpi_gmon_add_arc(dcpi_gmon_t *g, uint64_t from, uint64_t self, uint32_t count)
{
    if (dcpi__grow((void **)&g->arcs, &g->cap_arcs, g->narcs + 1, sizeof(*g->arcs)) < 0)
        return DCPI_ENOMEM;
    g->arcs[g->narcs++] = (dcpi_gmon_arc_t){from, self, count};
    return 0;
}

uint64_t dcpi_gmon_bin_addr(const dcpi_gmon_hist_t *h, uint32_t i)
{
    unsigned __int128 span = h->high - h->low;
    return h->low + (uint64_t)(span * i / h->nbins);
}

/* ---- reading ---- */

static int read_hist(dcpi_gmon_t *g, const unsigned char *b, size_t left, size_t *used,
                     const char *name, size_t pos, char *err)
{
    if (left < HIST_HEAD)
        return dcpi__errf(err, DCPI_ETRUNC, "%s: truncated histogram record at byte %zu", name,
                          pos);
    uint64_t low = dcpi__get_le64(b), high = dcpi__get_le64(b + 8);
    uint32_t nbins = dcpi__get_le32(b + 16), rate = dcpi__get_le32(b + 20);
    if (high <= low || nbins == 0)
        return dcpi__errf(err, DCPI_EFORMAT,
                          "%s: histogram at byte %zu out of range (low_pc %#" PRIx64
                          ", high_pc %#" PRIx64 ", %u bins)",
                          name, pos, low, high, nbins);
    if ((left - HIST_HEAD) / 2 < nbins)
        return dcpi__errf(err, DCPI_ETRUNC, "%s: truncated histogram at byte %zu (%u bins)", name,
                          pos, nbins);
    if (g->nhists && (g->hists[0].rate != rate || memcmp(g->hists[0].dimen, b + 24, 15) != 0))
        return dcpi__errf(err, DCPI_EFORMAT,
                          "%s: histogram at byte %zu disagrees on rate or dimension", name, pos);
    dcpi_gmon_hist_t *h = NULL;
    if (dcpi_gmon_add_hist(g, low, high, nbins, rate, &h) < 0)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", name);
    memcpy(h->dimen, b + 24, 15);
    h->dimen[15] = 0;
    h->abbrev = (char)b[39];
    for (uint32_t i = 0; i < nbins; i++)
        h->bins[i] = dcpi__get_le16(b + HIST_HEAD + 2 * i);
    *used = HIST_HEAD + 2 * (size_t)nbins;
    return 0;
}

static int read_record(dcpi_gmon_t *g, const unsigned char *b, size_t len, size_t *pos,
                       const char *name, char *err)
{
    size_t p = *pos + 1, left = len - p, used = 0;
    int rc = 0;
    switch (b[*pos]) {
    case TAG_HIST:
        rc = read_hist(g, b + p, left, &used, name, *pos, err);
        break;
    case TAG_ARC:
        if (left < ARC_SIZE)
            return dcpi__errf(err, DCPI_ETRUNC, "%s: truncated arc record at byte %zu", name, *pos);
        if (dcpi_gmon_add_arc(g, dcpi__get_le64(b + p), dcpi__get_le64(b + p + 8),
                              dcpi__get_le32(b + p + 16)))
            return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", name);
        used = ARC_SIZE;
        break;
    case TAG_BB:
        if (left < 4 || (left - 4) / 16 < dcpi__get_le32(b + p))
            return dcpi__errf(err, DCPI_ETRUNC, "%s: truncated basic-block record at byte %zu",
                              name, *pos);
        g->nbb += dcpi__get_le32(b + p);
        used = 4 + 16 * (size_t)dcpi__get_le32(b + p);
        break;
    default:
        return dcpi__errf(err, DCPI_EFORMAT, "%s: unknown record tag %u at byte %zu", name, b[*pos],
                          *pos);
    }
    *pos = p + used;
    return rc;
}

int dcpi_gmon_parse(const void *buf, size_t len, const char *name, dcpi_gmon_t **out, char *err)
{
    const unsigned char *b = buf;
    if (len < 4 || memcmp(b, "gmon", 4) != 0)
        return dcpi__errf(err, DCPI_EFORMAT, "%s: not a gmon.out file (no \"gmon\" magic)", name);
    if (len < HDR_SIZE)
        return dcpi__errf(err, DCPI_ETRUNC, "%s: truncated header", name);
    if (dcpi__get_le32(b + 4) != DCPI_GMON_VERSION)
        return dcpi__errf(err, DCPI_EVERSION, "%s: gmon version %" PRIu32 ", want 1", name,
                          dcpi__get_le32(b + 4));
    dcpi_gmon_t *g = NULL;
    if (dcpi_gmon_new(&g) < 0)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", name);
    size_t pos = HDR_SIZE;
    int rc = 0;
    while (rc == 0 && pos < len)
        rc = read_record(g, b, len, &pos, name, err);
    if (rc < 0) {
        dcpi_gmon_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int dcpi_gmon_read(const char *path, dcpi_gmon_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = dcpi_gmon_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

/* ---- writing ---- */

int dcpi_gmon_encode(const dcpi_gmon_t *g, void **buf, size_t *len)
{
    size_t size = HDR_SIZE + g->narcs * (1 + ARC_SIZE);
    for (size_t i = 0; i < g->nhists; i++)
        size += 1 + HIST_HEAD + 2 * (size_t)g->hists[i].nbins;
    unsigned char *b = calloc(1, size), *p = b;
    if (!b)
        return DCPI_ENOMEM;
    memcpy(p, "gmon", 4);
    p = dcpi__put_le32(p + 4, DCPI_GMON_VERSION) + 12;
    for (size_t i = 0; i < g->nhists; i++) {
        const dcpi_gmon_hist_t *h = &g->hists[i];
        *p++ = TAG_HIST;
        p = dcpi__put_le64(p, h->low);
        p = dcpi__put_le64(p, h->high);
        p = dcpi__put_le32(p, h->nbins);
        p = dcpi__put_le32(p, h->rate);
        memcpy(p, h->dimen, strnlen(h->dimen, 15));
        p[15] = (unsigned char)h->abbrev;
        p += 16;
        for (uint32_t k = 0; k < h->nbins; k++)
            p = dcpi__put_le16(p, h->bins[k]);
    }
    for (size_t i = 0; i < g->narcs; i++) {
        *p++ = TAG_ARC;
        p = dcpi__put_le64(p, g->arcs[i].from);
        p = dcpi__put_le64(p, g->arcs[i].self);
        p = dcpi__put_le32(p, g->arcs[i].count);
    }
    *buf = b;
    *len = size;
    return 0;
}

int dcpi_gmon_write(const char *path, const dcpi_gmon_t *g, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi_gmon_encode(g, &buf, &len);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    rc = dcpi__write_output(path, buf, len, err);
    free(buf);
    return rc;
}
