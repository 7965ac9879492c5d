/*
 * tests/fuzz/fuzz_gperf.c - libFuzzer harness for the gperftools CPU profile reader
 * (dcpi_gperf_parse, core/formats/gperf.c). Checks, for every accepted file: records point inside
 * the PC array, the total is the sum of the counts, every mapping has start < end and is found by
 * dcpi_gperf_map_find; encode succeeds and parses back to the same slot size, period, records,
 * PCs and text. A rejected file gives one line "NAME: reason" and a documented code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/formats/gperf.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

#define NAME "fuzz.prof"

static void check_profile(const dcpi_gperf_t *g)
{
    FUZZ_CHECK(g->slot == 4 || g->slot == 8);
    uint64_t total = 0;
    for (size_t r = 0; r < g->nrecs; r++) {
        const dcpi_gperf_rec_t *rec = &g->recs[r];
        FUZZ_CHECK(rec->npcs >= 1);
        FUZZ_CHECK(rec->first <= g->npcs && rec->npcs <= g->npcs - rec->first);
        FUZZ_CHECK(g->pcs[rec->first] != 0);
        total += rec->count;
    }
    FUZZ_CHECK(total == g->total);
    FUZZ_CHECK(g->text != NULL);
    for (size_t m = 0; m < g->nmaps; m++) {
        const dcpi_gperf_map_t *map = &g->maps[m];
        FUZZ_CHECK(map->start < map->end && map->path != NULL);
        const dcpi_gperf_map_t *f = dcpi_gperf_map_find(g, map->start);
        FUZZ_CHECK(f != NULL && f->start <= map->start && map->start < f->end);
    }
}

static void check_same(const dcpi_gperf_t *a, const dcpi_gperf_t *b)
{
    FUZZ_CHECK(a->slot == b->slot && a->period_us == b->period_us);
    FUZZ_CHECK(a->nrecs == b->nrecs && a->npcs == b->npcs && a->total == b->total);
    for (size_t r = 0; r < a->nrecs; r++) {
        const dcpi_gperf_rec_t *x = &a->recs[r], *y = &b->recs[r];
        FUZZ_CHECK(x->count == y->count && x->npcs == y->npcs);
        FUZZ_CHECK(memcmp(&a->pcs[x->first], &b->pcs[y->first], x->npcs * sizeof a->pcs[0]) == 0);
    }
    FUZZ_CHECK(strcmp(a->text, b->text) == 0);
    FUZZ_CHECK(a->nmaps == b->nmaps);
}

static void check_round_trip(const dcpi_gperf_t *g)
{
    void *buf = NULL;
    size_t len = 0;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_gperf_encode(g, &buf, &len);
    if (rc == DCPI_ENOMEM)
        return;
    FUZZ_CHECK(rc == 0);
    dcpi_gperf_t *h = NULL;
    rc = dcpi_gperf_parse(buf, len, NAME, &h, err);
    FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM);
    if (rc == 0)
        check_same(g, h);
    dcpi_gperf_free(h);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_gperf_t *g = NULL;
    int rc = dcpi_gperf_parse(data, size, NAME, &g, err);
    if (rc < 0) {
        FUZZ_CHECK(g == NULL);
        fuzz_check_rejection(rc, err, NAME);
        return 0;
    }
    check_profile(g);
    check_round_trip(g);
    dcpi_gperf_free(g);
    return 0;
}
