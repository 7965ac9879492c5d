/*
 * tests/fuzz/fuzz_gmon.c - libFuzzer harness for the gprof gmon.out reader (dcpi_gmon_parse,
 * core/formats/gmon.c). Checks, for every accepted file: histograms have low < high, at least one
 * bin, bin addresses non-decreasing inside [low, high); encode succeeds and parses back to the same
 * histograms (range, bins, rate, dimension) and arcs. A rejected file gives one line
 * "NAME: reason" and a documented code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/formats/gmon.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

#define NAME "gmon.out"

static void check_hist(const dcpi_gmon_hist_t *h)
{
    FUZZ_CHECK(h->low < h->high && h->nbins > 0 && h->bins != NULL);
    FUZZ_CHECK(memchr(h->dimen, '\0', sizeof h->dimen) != NULL);
    uint64_t prev = h->low;
    /* Every bin for small histograms, a sample of them for big ones. */
    uint32_t step = h->nbins > 4096 ? h->nbins / 4096 : 1;
    for (uint32_t i = 0; i < h->nbins; i += step) {
        uint64_t a = dcpi_gmon_bin_addr(h, i);
        FUZZ_CHECK(a >= prev && a < h->high);
        prev = a;
    }
}

static void check_same(const dcpi_gmon_t *a, const dcpi_gmon_t *b)
{
    FUZZ_CHECK(a->nhists == b->nhists && a->narcs == b->narcs);
    for (size_t i = 0; i < a->nhists; i++) {
        const dcpi_gmon_hist_t *x = &a->hists[i], *y = &b->hists[i];
        FUZZ_CHECK(x->low == y->low && x->high == y->high && x->nbins == y->nbins);
        FUZZ_CHECK(x->rate == y->rate && x->abbrev == y->abbrev);
        FUZZ_CHECK(strcmp(x->dimen, y->dimen) == 0);
        FUZZ_CHECK(memcmp(x->bins, y->bins, x->nbins * sizeof x->bins[0]) == 0);
    }
    for (size_t i = 0; i < a->narcs; i++)
        FUZZ_CHECK(a->arcs[i].from == b->arcs[i].from && a->arcs[i].self == b->arcs[i].self &&
                   a->arcs[i].count == b->arcs[i].count);
}

static void check_round_trip(const dcpi_gmon_t *g)
{
    void *buf = NULL;
    size_t len = 0;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_gmon_encode(g, &buf, &len);
    if (rc == DCPI_ENOMEM)
        return;
    FUZZ_CHECK(rc == 0);
    dcpi_gmon_t *h = NULL;
    rc = dcpi_gmon_parse(buf, len, NAME, &h, err);
    FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM);
    if (rc == 0)
        check_same(g, h);
    dcpi_gmon_free(h);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_gmon_t *g = NULL;
    int rc = dcpi_gmon_parse(data, size, NAME, &g, err);
    if (rc < 0) {
        FUZZ_CHECK(g == NULL);
        fuzz_check_rejection(rc, err, NAME);
        return 0;
    }
    for (size_t i = 0; i < g->nhists; i++)
        check_hist(&g->hists[i]);
    check_round_trip(g);
    dcpi_gmon_free(g);
    return 0;
}
