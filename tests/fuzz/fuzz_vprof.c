/*
 * tests/fuzz/fuzz_vprof.c - libFuzzer harness for the value-profile parser (dcpi_vprof_parse,
 * core/store/vprof.c, vpdb-0.01 and 0.02). Checks, for every accepted file: the summaries keep the
 * documented invariants (n <= hotsize, seen >= vtot, offsets increasing), encode succeeds and the
 * encoded bytes parse back to the same header and summaries and encode to the same bytes; merging
 * the profile into an empty copy of itself succeeds. A rejected file gives a "NAME: reason" line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/vprof.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

#define NAME "fuzz.vprof"

static void check_summaries(const dcpi_vprof_t *vp)
{
    unsigned hot = dcpi_vprof_hotsize(vp);
    uint32_t prev = 0;
    for (size_t i = 0; i < dcpi_vprof_count(vp); i++) {
        uint32_t off;
        const dcpi_vsummary_t *s;
        dcpi_vprof_entry(vp, i, &off, &s);
        FUZZ_CHECK(i == 0 || off > prev);
        prev = off;
        FUZZ_CHECK(s != NULL && s->n <= s->cap && s->cap == hot);
        FUZZ_CHECK(s->seen >= s->vtot);
    }
}

static void check_same(const dcpi_vprof_t *a, const dcpi_vprof_t *b)
{
    FUZZ_CHECK(dcpi_vprof_nlines(a) == dcpi_vprof_nlines(b));
    for (size_t i = 0; i < dcpi_vprof_nlines(a); i++) {
        const char *ka, *va, *kb, *vb;
        dcpi_vprof_line(a, i, &ka, &va);
        dcpi_vprof_line(b, i, &kb, &vb);
        FUZZ_CHECK(strcmp(ka, kb) == 0 && strcmp(va, vb) == 0);
    }
    /* Empty summaries are not written, so compare b against a's non-empty ones. */
    size_t j = 0;
    for (size_t i = 0; i < dcpi_vprof_count(a); i++) {
        uint32_t oa, ob;
        const dcpi_vsummary_t *sa, *sb;
        dcpi_vprof_entry(a, i, &oa, &sa);
        if (sa->n == 0 && sa->seen == 0)
            continue;
        FUZZ_CHECK(j < dcpi_vprof_count(b));
        dcpi_vprof_entry(b, j++, &ob, &sb);
        FUZZ_CHECK(oa == ob && sa->n == sb->n && sa->vtot == sb->vtot && sa->seen == sb->seen &&
                   sa->err == sb->err);
        FUZZ_CHECK(sa->n == 0 || memcmp(sa->e, sb->e, sa->n * sizeof sa->e[0]) == 0);
    }
    FUZZ_CHECK(j == dcpi_vprof_count(b));
}

static void check_round_trip(const dcpi_vprof_t *vp)
{
    char err[DCPI_ERRLEN] = "";
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    dcpi_vprof_t *q = NULL;
    int rc = dcpi_vprof_encode(vp, &buf, &len, err);
    if (rc == DCPI_ENOMEM)
        return;
    FUZZ_CHECK(rc == 0);
    rc = dcpi_vprof_parse(buf, len, NAME, &q, err);
    if (rc == DCPI_ENOMEM)
        goto out;
    FUZZ_CHECK(rc == 0);
    check_same(vp, q);
    if (dcpi_vprof_encode(q, &buf2, &len2, err) == 0)
        FUZZ_CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
out:
    free(buf2);
    dcpi_vprof_free(q);
    free(buf);
}

/* Merging into an empty profile with the same hotsize keeps every summary's vtot and seen. */
static void check_merge(const dcpi_vprof_t *vp)
{
    dcpi_vprof_t *dst = NULL;
    if (dcpi_vprof_new(dcpi_vprof_hotsize(vp), &dst) < 0)
        return;
    int rc = dcpi_vprof_merge(dst, vp);
    FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM);
    if (rc == 0) {
        for (size_t i = 0; i < dcpi_vprof_count(vp); i++) {
            uint32_t off;
            const dcpi_vsummary_t *s, *d;
            dcpi_vprof_entry(vp, i, &off, &s);
            d = dcpi_vprof_at(dst, off, 0);
            if (!d)
                FUZZ_CHECK(s->n == 0 && s->vtot == 0 && s->seen == 0);
            else
                FUZZ_CHECK(d->vtot == s->vtot && d->seen == s->seen);
        }
    }
    dcpi_vprof_free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_vprof_t *vp = NULL;
    int rc = dcpi_vprof_parse(data, size, NAME, &vp, err);
    if (rc < 0) {
        FUZZ_CHECK(vp == NULL);
        fuzz_check_rejection(rc, err, NAME);
        return 0;
    }
    check_summaries(vp);
    check_round_trip(vp);
    check_merge(vp);
    dcpi_vprof_free(vp);
    return 0;
}
