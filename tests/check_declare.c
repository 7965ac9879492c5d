/*
 * check_declare.c - declarative plugins (core/plugin/declare.h) through the loader: a repeated
 * key, an unknown mnemonic (with the nearest name), an unknown class are one-line errors;
 * condition-code aliases (ja, jna, cmove, setne) select Zydis's keys; operand= takes a list and a
 * negation (the indirect calls in one plugin); label= prints names for values and keep= counts
 * every other value as "other"; -vtrace NAME finds NAME.vp.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/plugin/vploader.h"
#include "dcpi/errno.h"
#include "trace/trace.h"

static dcpi_vp_set_t *set;

static void setup(void)
{
    ck_assert_int_eq(dcpi_vp_set_new(&set), 0);
}

static void teardown(void)
{
    dcpi_vp_set_free(set);
    set = NULL;
}

/* The spec's load error (DCPI_EINVAL) must contain want. */
static void refused(const char *spec, const char *want)
{
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_vp_load(set, spec, NULL, err) == DCPI_EINVAL, "%s: accepted", spec);
    ck_assert_msg(strstr(err, want) != NULL, "'%s': got '%s', wanted '%s'", spec, err, want);
    ck_assert_ptr_null(strchr(err, '\n'));
}

static const vp_dispatch_t *load(const char *spec)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_vp_t *vp = NULL;
    ck_assert_msg(dcpi_vp_load(set, spec, &vp, err) == 0, "%s: %s", spec, err);
    return dcpi_vp_dispatch(vp);
}

START_TEST(test_refusals)
{
    refused("name=x select=mnemonic:div select=mnemonic:idiv",
            "select= given twice (each key once; a list goes in one value");
    refused("name=x select=mnemonic:div format=dec format=hex", "format= given twice");
    refused("name=x select=mnemonic:jx", "select=mnemonic:jx: no instruction has this mnemonic");
    refused("name=x select=mnemonic:imull", "(did you mean imul? mnemonics as Zydis names them");
    refused("name=x select=class:loads", "select=class:loads: no such class");
    refused("name=x select=mnemonic:call operand=!any", "bad value for operand: '!any'");
    refused("name=x select=mnemonic:call operand=reg,foo", "bad value for operand");
    refused("name=x select=mnemonic:jbe label=1", "bad value for label: '1'");
    refused("name=x select=mnemonic:div keep=ten", "bad value for keep: 'ten'");
}
END_TEST

/* Whether spec's table has a vlist for the key of mnemonic (memform none). */
static int selects(const vp_dispatch_t *d, const char *mnemonic)
{
    trace_vlist_table_t *spec = d->vp_prof_init();
    ck_assert_ptr_nonnull(spec);
    int r = trace_vlist_table_get(spec, trace_opc_lookup(mnemonic, TRACE_MEM_NONE), NULL) >= 0;
    d->vp_prof_done();
    return r;
}

START_TEST(test_aliases)
{
    const vp_dispatch_t *d = load("name=a select=mnemonic:ja,JNA,cmove,setne,jc");
    ck_assert(selects(d, "jnbe"));
    ck_assert(selects(d, "jbe"));
    ck_assert(selects(d, "cmovz"));
    ck_assert(selects(d, "setnz"));
    ck_assert(selects(d, "jb"));
    ck_assert(!selects(d, "jz"));
}
END_TEST

/* The filter of spec on one instruction's bytes. */
static int admits(const vp_dispatch_t *d, const uint8_t *bytes, size_t len)
{
    trace_inst_t inst;
    trace_vlist_table_t *spec = d->vp_prof_init();
    ck_assert_ptr_nonnull(spec);
    ck_assert_int_eq(trace_inst_decode(bytes, len, &inst), (int)len);
    trace_inst_filter_fn f = trace_vlist_table_get_filter(spec);
    ck_assert_ptr_nonnull(f);
    int r = f(&inst);
    d->vp_prof_done();
    return r;
}

START_TEST(test_operand_list)
{
    static const uint8_t direct[] = {0xe8, 0, 0, 0, 0}, reg[] = {0xff, 0xd2}, mem[] = {0xff, 0x13};
    const vp_dispatch_t *not_imm = load("name=n select=mnemonic:call operand=!imm");
    ck_assert(!admits(not_imm, direct, sizeof direct));
    ck_assert(admits(not_imm, reg, sizeof reg));
    ck_assert(admits(not_imm, mem, sizeof mem));
    const vp_dispatch_t *list = load("name=l select=mnemonic:call operand=reg,mem");
    ck_assert(!admits(list, direct, sizeof direct));
    ck_assert(admits(list, reg, sizeof reg));
    ck_assert(admits(list, mem, sizeof mem));
    const vp_dispatch_t *not2 = load("name=m select=mnemonic:call operand=not-reg,mem");
    ck_assert(admits(not2, direct, sizeof direct));
    ck_assert(!admits(not2, reg, sizeof reg));
}
END_TEST

/* Values through vp_prof_process (a trace of one div per value) and vp_format2. */
START_TEST(test_label_keep)
{
    static const uint8_t div[] = {0x48, 0xf7, 0xf1}; /* div rcx */
    static const uint64_t in[] = {10, 7, 3, 10, 5};
    static uint8_t buf[4096];
    const vp_dispatch_t *d =
        load("name=k select=mnemonic:div capture=ra format=dec keep=10,7 label=10:ten,-1:minus1");
    trace_vlist_table_t *spec = d->vp_prof_init();
    ck_assert_ptr_nonnull(spec);
    trace_encoder_t enc;
    trace_inst_t inst;
    trace_value_t kind = TRACE_REGA;
    ck_assert_int_eq(trace_inst_decode(div, sizeof div, &inst), 3);
    trace_encoder_init(&enc, buf, sizeof buf);
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        ck_assert_int_eq(trace_encoder_burst(&enc, 1, 1, i, 0), 0);
        ck_assert_int_eq(trace_encoder_entry(&enc, &inst, 0x1000, 0, 0, 1, &kind, &in[i], 0), 0);
    }
    trace_parser_t p;
    trace_parser_init(&p, buf, trace_encoder_size(&enc));
    vsample_t *vs = NULL;
    ck_assert_int_eq(d->vp_prof_process(1, &p, &vs), 5);
    ck_assert_uint_eq(vs[0].value, 10);
    ck_assert_uint_eq(vs[1].value, 7);
    ck_assert_uint_eq(vs[2].value, vs[4].value); /* 3 and 5: both "other" */
    ck_assert_uint_ne(vs[2].value, 10);
    ck_assert_str_eq(d->vp_format2(NULL, &inst, vs[0].value), "ten");
    ck_assert_str_eq(d->vp_format2(NULL, &inst, vs[1].value), "7");
    ck_assert_str_eq(d->vp_format2(NULL, &inst, vs[2].value), "other");
    d->vp_prof_done();
    /* keep= naming 2^64-1 itself: "other" is another value */
    const vp_dispatch_t *d2 = load("name=k2 select=mnemonic:div keep=-1,0");
    ck_assert_str_eq(d2->vp_format2(NULL, &inst, UINT64_MAX), "0xffffffffffffffff");
    ck_assert_str_eq(d2->vp_format2(NULL, &inst, UINT64_MAX - 1), "other");
}
END_TEST

/* -vtrace NAME finds NAME.vp (after NAME.so) in the search directories. */
START_TEST(test_short_name_vp)
{
    char dir[] = "/tmp/check_declare.XXXXXX", path[256], err[DCPI_ERRLEN] = "";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/vp-mine.vp", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("# a file plugin\nname=vp-mine\nselect=mnemonic:div capture=ra\n", f);
    fclose(f);
    setenv(DCPI_VP_PATH_ENV, dir, 1);
    char found[512];
    ck_assert_int_eq(dcpi_vp_resolve("vp-mine", found, sizeof found), 0);
    ck_assert_str_eq(found, path);
    dcpi_vp_t *vp = NULL;
    dcpi_vp_set_allow_insecure(set, 1);
    ck_assert_msg(dcpi_vp_load(set, "vp-mine", &vp, err) == 0, "%s", err);
    ck_assert_str_eq(dcpi_vp_name(vp), "vp-mine");
    ck_assert_str_eq(dcpi_vp_path(vp), path);
    unlink(path);
    rmdir(dir);
    unsetenv(DCPI_VP_PATH_ENV);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("declare");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_aliases);
    tcase_add_test(tc, test_operand_list);
    tcase_add_test(tc, test_label_keep);
    tcase_add_test(tc, test_short_name_vp);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
