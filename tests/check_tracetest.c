/*
 * check_tracetest.c - trace/trace-test.c, the plugin unit-test kit (dcpi/trace-test.h): what a
 * test appends is what the plugin's parser reads back (instruction, pc, values, missing bits,
 * contexts, pid/tid/time), the limits dcpid has (VSAMPLE_BUFFER_SIZE entries, one pid), and
 * trace_test_run's checks of the rules dcpid's worker enforces; and samples/vp-divisor's own
 * unit test, built against this tree, passes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcpi/errno.h"
#include "dcpi/trace-test.h"

static const uint8_t div_rcx[] = {0x48, 0xf7, 0xf1};  /* div rcx */
static const uint8_t mov_load[] = {0x48, 0x8b, 0x03}; /* mov rax, [rbx] */

START_TEST(test_round_trip)
{
    trace_test_t *t = trace_test_new(77);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(trace_test_burst(t, 78, 1000, 1), 0);
    trace_value_t k[2] = {TRACE_REGA, TRACE_EA};
    uint64_t v[2] = {10, 0x5000};
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x401000, 0x11, 0x22, 2, k, v, 0), 0);
    v[0] = 0;
    ck_assert_int_eq(trace_test_entry(t, mov_load, 3, 0x401003, 0x33, 0x44, 2, k, v, 1u), 0);
    ck_assert_uint_eq(trace_test_entries(t), 2);
    trace_parser_t *p = trace_test_parser(t);
    trace_inst_t inst;
    uint64_t pc, c0, c1, a, b;
    ck_assert_int_eq(trace_parser_next(p, &inst, &pc, &c0, &c1, 2, &a, &b), 2);
    ck_assert_str_eq(inst.mnemonic, "div");
    ck_assert_uint_eq(pc, 0x401000);
    ck_assert_uint_eq(c0, 0x11);
    ck_assert_uint_eq(c1, 0x22);
    ck_assert_uint_eq(a, 10);
    ck_assert_uint_eq(b, 0x5000);
    ck_assert_uint_eq(trace_parser_missing(p), 0);
    ck_assert_uint_eq(trace_parser_get_pid(p), 77);
    ck_assert_uint_eq(trace_parser_get_tid(p), 78);
    ck_assert_uint_eq(trace_parser_get_time(p), 1000);
    ck_assert_uint_eq(trace_parser_burst_index(p), 0);
    ck_assert_str_eq(trace_parser_backend(p), ""); /* not set */
    ck_assert_int_eq(trace_parser_next(p, &inst, &pc, &c0, &c1, 2, &a, &b), 2);
    ck_assert_uint_eq(trace_parser_burst_index(p), 1);
    ck_assert_str_eq(inst.mnemonic, "mov");
    ck_assert_uint_eq(trace_parser_missing(p), 1);
    ck_assert_uint_eq(a, 0);
    ck_assert_int_eq(trace_parser_next(p, NULL, &pc, NULL, NULL, 0), TRACE_PARSE_END);
    /* reset: empty, and an implicit burst (tid = pid, no contexts) */
    trace_test_reset(t);
    ck_assert_uint_eq(trace_test_entries(t), 0);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x401000, 0x11, 0x22, 0, NULL, NULL, 0), 0);
    p = trace_test_parser(t);
    ck_assert_int_eq(trace_parser_next(p, NULL, &pc, &c0, &c1, 0), 0);
    ck_assert_uint_eq(c0, 0); /* no contexts in the implicit burst */
    ck_assert_uint_eq(trace_parser_get_tid(p), 77);
    /* a second burst starts its index again; the backend as set */
    ck_assert_int_eq(trace_test_backend(t, "step"), 0);
    ck_assert_int_eq(trace_test_backend(t, "nope"), DCPI_EINVAL);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x401003, 0, 0, 0, NULL, NULL, 0), 0);
    ck_assert_int_eq(trace_test_burst(t, 79, 2000, 0), 0);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x401000, 0, 0, 0, NULL, NULL, 0), 0);
    p = trace_test_parser(t);
    ck_assert_str_eq(trace_parser_backend(p), "step");
    unsigned idx[3];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(trace_parser_next(p, NULL, &pc, NULL, NULL, 0), 0);
        idx[i] = trace_parser_burst_index(p);
    }
    ck_assert_uint_eq(idx[0], 0);
    ck_assert_uint_eq(idx[1], 1);
    ck_assert_uint_eq(idx[2], 0);
    ck_assert_uint_eq(trace_parser_get_tid(p), 79);
    trace_test_free(t);
}
END_TEST

START_TEST(test_limits)
{
    trace_test_t *t = trace_test_new(1);
    trace_value_t k = TRACE_RCX;
    uint64_t v = 1;
    ck_assert_int_eq(trace_test_entry(t, "\x0f\x0b\x0f", 1, 0, 0, 0, 0, NULL, NULL, 0),
                     DCPI_EFORMAT);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0, 0, 0, 8, &k, &v, 0), DCPI_EINVAL);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0, 0, 0, 1, NULL, NULL, 0), DCPI_EINVAL);
    ck_assert_int_eq(trace_test_burst(t, 1, 0, 2), DCPI_EINVAL);
    for (unsigned i = 0; i < VSAMPLE_BUFFER_SIZE; i++)
        ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x1000 + 3 * i, 0, 0, 1, &k, &v, 0), 0);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x9000, 0, 0, 1, &k, &v, 0), DCPI_EFULL);
    trace_test_free(t);
}
END_TEST

/* trace_parser_collect and trace_vlist_table_select1 (SDK 2), the loop and spec of most
 * plugins. */
static int is_div(const trace_opc_info_t *info)
{
    return strcmp(info->mnemonic, "div") == 0;
}

START_TEST(test_collect_and_select1)
{
    trace_test_t *t = trace_test_new(9);
    trace_value_t k = TRACE_REGA;
    uint64_t v = 7, zero = 0;
    ck_assert_int_eq(trace_test_burst(t, 9, 0, 1), 0);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x401000, 0x10, 0x20, 1, &k, &v, 0), 0);
    ck_assert_int_eq(trace_test_entry(t, div_rcx, 3, 0x401000, 0x10, 0x20, 1, &k, &zero, 1u), 0);
    vsample_t out[4];
    ck_assert_int_eq(trace_parser_collect(trace_test_parser(t), out, 4, 0), 1);
    ck_assert_uint_eq(out[0].value, 7);
    ck_assert_uint_eq(out[0].context0, 0x10);
    ck_assert_int_eq(trace_parser_collect(trace_test_parser(t), out, 4, TRACE_COLLECT_MISSING), 2);
    ck_assert_uint_eq(out[1].context0, VP_CONTEXT_MISSING);
    ck_assert_uint_eq(out[1].value, 0);
    ck_assert_int_eq(trace_parser_collect(trace_test_parser(t), out, 1, TRACE_COLLECT_MISSING), 1);
    trace_test_free(t);
    trace_vlist_table_t *spec = trace_vlist_table_select1(is_div, TRACE_REGA);
    ck_assert_ptr_nonnull(spec);
    trace_value_t got[TRACE_VLIST_MAX];
    ck_assert_int_eq(trace_vlist_table_get(spec, trace_opc_lookup("div", TRACE_MEM_NONE), got), 1);
    ck_assert_int_eq(got[0], TRACE_REGA);
    ck_assert_int_eq(trace_vlist_table_get(spec, trace_opc_lookup("mov", TRACE_MEM_NONE), got), -1);
    trace_vlist_table_free(spec);
    ck_assert_ptr_null(trace_vlist_table_select1(is_div, (trace_value_t)999));
}
END_TEST

static vsample_t buf[VSAMPLE_BUFFER_SIZE];
static int ret;
static int fake_process(unsigned pid, trace_parser_t *p, vsample_t **out)
{
    (void)pid;
    (void)p;
    *out = ret == 1 ? NULL : buf;
    return ret == 1 ? 1 : ret;
}

START_TEST(test_run_rules)
{
    trace_test_t *t = trace_test_new(5);
    vp_dispatch_t d = {VP_DISPATCH_HEADER, .vp_prof_process = fake_process};
    vsample_t *out = NULL;
    ret = 3;
    ck_assert_int_eq(trace_test_run(t, &d, &out), 3);
    ck_assert_ptr_eq(out, buf);
    ret = VSAMPLE_BUFFER_SIZE + 1;
    ck_assert_int_eq(trace_test_run(t, &d, &out), DCPI_EPLUGIN);
    ret = 1; /* a count with a NULL buffer */
    ck_assert_int_eq(trace_test_run(t, &d, &out), DCPI_EPLUGIN);
    ret = DCPI_EFORMAT;
    ck_assert_int_eq(trace_test_run(t, &d, &out), DCPI_EFORMAT);
    vp_dispatch_t none = {.abi_version = VP_ABI_VERSION, .struct_size = sizeof none};
    ck_assert_int_eq(trace_test_run(t, &none, &out), DCPI_EPLUGIN);
    trace_test_free(t);
}
END_TEST

/* samples/vp-divisor/test_vp_divisor.c, built against this tree as its README says, passes. */
START_TEST(test_sample_unit_test)
{
    char cmd[4096];
    /* a sanitizer build of libdcpi needs its users built with the same runtime */
    snprintf(cmd, sizeof cmd,
             "SAN=; ldd '%s/libdcpi.so' | grep -q libasan && SAN=-fsanitize=address,undefined; "
             "cd '%s/../samples/vp-divisor' && cc $SAN -O2 -Wall -Wextra -Werror -I'%s/../include' "
             "-I'%s/include' -o /tmp/dcpi-check-tracetest.$$ test_vp_divisor.c -L'%s' "
             "-Wl,-rpath,'%s' -ldcpi && /tmp/dcpi-check-tracetest.$$ >/dev/null; rc=$?; "
             "rm -f /tmp/dcpi-check-tracetest.$$; exit $rc",
             DCPI_TEST_BIN, DCPI_TEST_DATA "/..", DCPI_TEST_DATA "/..", DCPI_TEST_BIN,
             DCPI_TEST_BIN, DCPI_TEST_BIN);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tracetest");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_run_rules);
    tcase_add_test(tc, test_collect_and_select1);
    tcase_add_test(tc, test_sample_unit_test);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
