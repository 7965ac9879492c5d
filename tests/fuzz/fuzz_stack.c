/*
 * tests/fuzz/fuzz_stack.c - libFuzzer harness for the stack profile reader
 * (dcpi_stackprof_parse, core/store/stackprof-file.c, stk-0.01). Checks, for every accepted file:
 * chains have 1..DCPI_STACK_MAXFRAMES frames, a non-zero count and known image indexes, the total
 * is the sum of the counts; encode succeeds and parses back to the same images and chains, and
 * encodes to the same bytes again; merging into an empty profile keeps the total. A rejected
 * file gives one line "NAME: reason" and a documented code.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/stackprof.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

#define NAME "fuzz.stk"

static void check_chains(const dcpi_stackprof_t *sp)
{
    size_t nimg = dcpi_stackprof_nimages(sp);
    uint64_t total = 0;
    for (size_t i = 0; i < dcpi_stackprof_count(sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t count;
        dcpi_stackprof_chain(sp, i, &f, &n, &count);
        FUZZ_CHECK(n >= 1 && n <= DCPI_STACK_MAXFRAMES && count > 0);
        for (unsigned k = 0; k < n; k++)
            FUZZ_CHECK(f[k].image == DCPI_STACK_NOIMAGE || f[k].image < nimg);
        total += count;
    }
    FUZZ_CHECK(total == dcpi_stackprof_total(sp));
    for (size_t i = 0; i < nimg; i++) {
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(sp, i);
        FUZZ_CHECK(im && im->id && im->id[0] && im->dir && im->dir[0] && !strchr(im->dir, '/'));
    }
}

static void check_same(const dcpi_stackprof_t *a, const dcpi_stackprof_t *b)
{
    FUZZ_CHECK(dcpi_stackprof_nimages(a) == dcpi_stackprof_nimages(b));
    for (size_t i = 0; i < dcpi_stackprof_nimages(a); i++) {
        const dcpi_stack_image_t *x = dcpi_stackprof_image_get(a, i);
        const dcpi_stack_image_t *y = dcpi_stackprof_image_get(b, i);
        FUZZ_CHECK(strcmp(x->id, y->id) == 0 && strcmp(x->dir, y->dir) == 0);
        FUZZ_CHECK(x->tstart == y->tstart && x->tsize == y->tsize);
    }
    FUZZ_CHECK(dcpi_stackprof_count(a) == dcpi_stackprof_count(b));
    for (size_t i = 0; i < dcpi_stackprof_count(a); i++) {
        const dcpi_frame_t *fa, *fb;
        unsigned na, nb;
        uint64_t ca, cb;
        dcpi_stackprof_chain(a, i, &fa, &na, &ca);
        dcpi_stackprof_chain(b, i, &fb, &nb, &cb);
        FUZZ_CHECK(na == nb && ca == cb && memcmp(fa, fb, na * sizeof fa[0]) == 0);
    }
}

static void check_round_trip(const dcpi_stackprof_t *sp)
{
    char err[DCPI_ERRLEN] = "";
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    dcpi_stackprof_t *q = NULL;
    int rc = dcpi_stackprof_encode(sp, &buf, &len, err);
    if (rc == DCPI_ENOMEM)
        return;
    FUZZ_CHECK(rc == 0);
    rc = dcpi_stackprof_parse(buf, len, NAME, &q, err);
    FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM);
    if (rc == 0) {
        check_same(sp, q);
        if (dcpi_stackprof_encode(q, &buf2, &len2, err) == 0)
            FUZZ_CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
    }
    free(buf2);
    dcpi_stackprof_free(q);
    free(buf);
}

static void check_merge(const dcpi_stackprof_t *sp)
{
    dcpi_stackprof_t *dst = NULL;
    if (dcpi_stackprof_new(0, &dst) < 0)
        return;
    int rc = dcpi_stackprof_merge(dst, sp);
    FUZZ_CHECK(rc == 0 || rc == DCPI_ENOMEM);
    if (rc == 0)
        FUZZ_CHECK(dcpi_stackprof_total(dst) == dcpi_stackprof_total(sp));
    dcpi_stackprof_free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_stackprof_t *sp = NULL;
    int rc = dcpi_stackprof_parse(data, size, NAME, &sp, err);
    if (rc < 0) {
        FUZZ_CHECK(sp == NULL);
        fuzz_check_rejection(rc, err, NAME);
        return 0;
    }
    check_chains(sp);
    check_round_trip(sp);
    check_merge(sp);
    dcpi_stackprof_free(sp);
    return 0;
}
