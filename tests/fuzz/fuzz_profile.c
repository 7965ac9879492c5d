/*
 * tests/fuzz/fuzz_profile.c - libFuzzer harness for the PC profile parser (dcpi_profile_parse,
 * core/store/profile.c, dcpiformat 0.07). Besides "no crash, no leak" it checks the properties
 * every accepted file must have: the getters agree with each other, encode succeeds, and the
 * encoded bytes parse back to the same header lines and samples, and encode to the same bytes
 * again. A rejected file must come with a one-line "NAME: reason" message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"
#include "fuzz_util.h"

#define NAME "fuzz.prof"

static void check_same(const dcpi_profile_t *a, const dcpi_profile_t *b)
{
    FUZZ_CHECK(dcpi_profile_nlines(a) == dcpi_profile_nlines(b));
    for (size_t i = 0; i < dcpi_profile_nlines(a); i++) {
        const char *ka, *va, *kb, *vb;
        dcpi_profile_line(a, i, &ka, &va);
        dcpi_profile_line(b, i, &kb, &vb);
        FUZZ_CHECK(strcmp(ka, kb) == 0 && strcmp(va, vb) == 0);
    }
    size_t na, nb;
    const dcpi_profile_entry_t *ea = dcpi_profile_entries(a, &na);
    const dcpi_profile_entry_t *eb = dcpi_profile_entries(b, &nb);
    FUZZ_CHECK(na == nb);
    FUZZ_CHECK(na == 0 || memcmp(ea, eb, na * sizeof *ea) == 0);
    FUZZ_CHECK(dcpi_profile_total(a) == dcpi_profile_total(b));
}

static void check_getters(const dcpi_profile_t *p)
{
    size_t n;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(p, &n);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(e[i].count > 0);
        FUZZ_CHECK(i == 0 || e[i - 1].offset < e[i].offset);
        FUZZ_CHECK(dcpi_profile_count_at(p, e[i].offset) == e[i].count);
        sum += e[i].count;
    }
    FUZZ_CHECK(sum == dcpi_profile_total(p));
    uint64_t v;
    FUZZ_CHECK(dcpi_profile_get_u64(p, "period", &v) == 0);
    FUZZ_CHECK(dcpi_profile_get_hex(p, "tstart", &v) == 0);
    FUZZ_CHECK(dcpi_profile_get(p, "image") != NULL);
}

/* encode(p) parses back to p, and encoding that gives the same bytes. */
static void check_round_trip(const dcpi_profile_t *p)
{
    char err[DCPI_ERRLEN] = "";
    void *buf = NULL, *buf2 = NULL;
    size_t len = 0, len2 = 0;
    dcpi_profile_t *q = NULL;
    int rc = dcpi_profile_encode(p, &buf, &len, err);
    if (rc == DCPI_ENOMEM)
        return;
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(len % 4 == 0);
    rc = dcpi_profile_parse(buf, len, NAME, &q, err);
    if (rc == DCPI_ENOMEM)
        goto out;
    FUZZ_CHECK(rc == 0);
    check_same(p, q);
    if (dcpi_profile_encode(q, &buf2, &len2, err) == 0)
        FUZZ_CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
out:
    free(buf2);
    dcpi_profile_free(q);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_profile_t *p = NULL;
    int rc = dcpi_profile_parse(data, size, NAME, &p, err);
    if (rc < 0) {
        FUZZ_CHECK(p == NULL);
        fuzz_check_rejection(rc, err, NAME);
        return 0;
    }
    check_getters(p);
    check_round_trip(p);
    dcpi_profile_free(p);
    return 0;
}
