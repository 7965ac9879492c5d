/*
 * tests/fuzz/fuzz_procs.c - libFuzzer harness for the per-process count files ("<event>.procs",
 * dcpi_procprof_parse in core/store/procprof.c). An accepted file must encode, and its encoding
 * must parse back to the same (normalized) entries and encode to the same bytes again; a
 * rejected one comes with a one-line "NAME: reason" message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/procprof.h"
#include "dcpi/errno.h"
#include "fuzz_util.h"

#define NAME "fuzz.procs"

static void check_round_trip(dcpi_procprof_t *p)
{
    unsigned char *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    dcpi_procprof_t q = {0};
    if (dcpi_procprof_encode(p, &buf, &len) < 0)
        return; /* out of memory */
    for (size_t i = 0; i < p->n; i++)
        FUZZ_CHECK(p->e[i].count > 0 && p->e[i].comm[0] && strlen(p->e[i].comm) < 16);
    int rc = dcpi_procprof_parse(buf, len, NAME, &q, NULL);
    if (rc == DCPI_ENOMEM)
        goto out;
    FUZZ_CHECK(rc == 0);
    dcpi_procprof_normalize(&q);
    FUZZ_CHECK(q.n == p->n);
    FUZZ_CHECK(q.n == 0 || memcmp(q.e, p->e, q.n * sizeof *q.e) == 0);
    if (dcpi_procprof_encode(&q, &buf2, &len2) == 0)
        FUZZ_CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
out:
    free(buf2);
    dcpi_procprof_free(&q);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dcpi_procprof_t p = {0};
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_procprof_parse(data, size, NAME, &p, err);
    if (rc == 0)
        check_round_trip(&p);
    else
        fuzz_check_rejection(rc, err, NAME);
    dcpi_procprof_free(&p);
    return 0;
}
