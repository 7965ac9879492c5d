/*
 * test_vp_divisor.c - the unit test of vp-divisor.c with dcpi's test kit (dcpi/trace-test.h):
 * a trace of divisions as a backend would capture them, run through the plugin's own
 * vp_prof_process; exit 0 when every check holds.
 */
#include <stdio.h>
#include <dcpi/trace-test.h>

#include "vp-divisor.c" /* the plugin under test, statics included */

static int fails;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

int main(void)
{
    static const uint8_t div_rcx[] = {0x48, 0xf7, 0xf1}; /* div rcx */
    static const uint64_t divisors[] = {10, 10, 7, 3};
    trace_value_t kind = TRACE_REGA;
    CHECK(_dispatch.vp_prof_init() != NULL);
    trace_test_t *t = trace_test_new(4242);
    CHECK(t != NULL);
    if (!t)
        return 1;
    for (int i = 0; i < 4; i++)
        CHECK(trace_test_entry(t, div_rcx, sizeof div_rcx, 0x401000, 0, 0, 1, &kind, &divisors[i], 0) == 0);
    uint64_t zero = 0; /* a divisor the backend could not see: skipped, not counted as 0 */
    CHECK(trace_test_entry(t, div_rcx, sizeof div_rcx, 0x401000, 0, 0, 1, &kind, &zero, 1u) == 0);
    vsample_t *out = NULL;
    int n = trace_test_run(t, &_dispatch, &out);
    CHECK(n == 4);
    for (int i = 0; i < n && i < 4; i++) {
        CHECK(out[i].pc == 0x401000);
        CHECK(out[i].value == divisors[i]);
    }
    CHECK(strcmp(_dispatch.vp_format(NULL, 10), "10") == 0);
    trace_test_free(t);
    _dispatch.vp_prof_done();
    printf("%s: %d checks failed\n", fails ? "FAIL" : "ok", fails);
    return fails != 0;
}
