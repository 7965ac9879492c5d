/*
 * check_vlist.c - trace specifications: every builder rule of dcpi/trace-vlist.h (limits,
 * merging without duplicates, pick-value and select semantics) and value names.
 */
#include <check.h>
#include <string.h>

#include "dcpi/errno.h"
#include "dcpi/insn.h"
#include "dcpi/trace-vlist.h"

static unsigned count_valid_keys(void)
{
    unsigned n = 0;
    for (trace_opc_t k = 0; k < trace_opc_count(); k++) {
        n += trace_opc_info(k) != NULL;
    }
    return n;
}

START_TEST(test_vlist_limit)
{
    trace_vlist_t *v = trace_vlist_alloc();
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(trace_vlist_count(v), 0);
    for (int i = 0; i < TRACE_VLIST_MAX; i++) {
        ck_assert_int_eq(trace_add_value_to_vlist(v, (trace_value_t)(TRACE_RAX + i)), 0);
    }
    ck_assert_int_eq(trace_add_value_to_vlist(v, TRACE_EA), DCPI_EFULL);
    ck_assert_int_eq(trace_vlist_count(v), TRACE_VLIST_MAX);
    for (int i = 0; i < TRACE_VLIST_MAX; i++) {
        ck_assert_int_eq(trace_vlist_value(v, i), TRACE_RAX + i);
    }
    ck_assert_int_eq(trace_vlist_value(v, TRACE_VLIST_MAX), TRACE_NONE);
    ck_assert_int_eq(trace_vlist_value(v, -1), TRACE_NONE);
    trace_vlist_free(v);
}
END_TEST

START_TEST(test_vlist_invalid_values)
{
    trace_vlist_t *v = trace_vlist_alloc();
    ck_assert_int_eq(trace_add_value_to_vlist(v, TRACE_NONE), DCPI_EINVAL);
    ck_assert_int_eq(trace_add_value_to_vlist(v, TRACE_VALUE_COUNT), DCPI_EINVAL);
    ck_assert_int_eq(trace_add_value_to_vlist(NULL, TRACE_RAX), DCPI_EINVAL);
    ck_assert_int_eq(trace_vlist_count(v), 0);
    trace_vlist_free(v);
    trace_vlist_free(NULL);
    trace_vlist_table_free(NULL);
}
END_TEST

START_TEST(test_add_by_opc)
{
    trace_vlist_table_t *t = trace_vlist_table_alloc();
    trace_vlist_t *a = trace_vlist_alloc(), *b = trace_vlist_alloc(), *big = trace_vlist_alloc();
    trace_opc_t k = trace_opc_lookup("mov", TRACE_MEM_READ);
    trace_value_t got[TRACE_VLIST_MAX];
    ck_assert_int_eq(trace_vlist_table_get(t, k, NULL), -1);
    /* An empty vlist creates the key with the basic entry only. */
    ck_assert_int_eq(trace_add_vlist_by_opc(t, k, a), 0);
    ck_assert_int_eq(trace_vlist_table_get(t, k, NULL), 0);
    trace_add_value_to_vlist(a, TRACE_EA);
    trace_add_value_to_vlist(a, TRACE_RAX);
    trace_add_value_to_vlist(b, TRACE_RAX);
    trace_add_value_to_vlist(b, TRACE_MEMVAL);
    ck_assert_int_eq(trace_add_vlist_by_opc(t, k, a), 0);
    ck_assert_int_eq(trace_add_vlist_by_opc(t, k, b), 0);
    ck_assert_int_eq(trace_vlist_table_get(t, k, got), 3);
    ck_assert_int_eq(got[0], TRACE_EA);
    ck_assert_int_eq(got[1], TRACE_RAX);
    ck_assert_int_eq(got[2], TRACE_MEMVAL);
    ck_assert_int_eq(got[3], TRACE_NONE);
    /* 3 present + 5 new > 7: refused, key unchanged. */
    for (int i = 0; i < 5; i++) {
        trace_add_value_to_vlist(big, (trace_value_t)(TRACE_R8 + i));
    }
    ck_assert_int_eq(trace_add_vlist_by_opc(t, k, big), DCPI_EFULL);
    ck_assert_int_eq(trace_vlist_table_get(t, k, got), 3);
    ck_assert_int_eq(got[2], TRACE_MEMVAL);
    ck_assert_int_eq(got[3], TRACE_NONE);
    /* 3 + 4 new = 7 fits. */
    trace_vlist_t *four = trace_vlist_alloc();
    for (int i = 0; i < 4; i++) {
        trace_add_value_to_vlist(four, (trace_value_t)(TRACE_R8 + i));
    }
    trace_add_value_to_vlist(four, TRACE_EA); /* duplicate: not counted */
    ck_assert_int_eq(trace_add_vlist_by_opc(t, k, four), 0);
    ck_assert_int_eq(trace_vlist_table_get(t, k, got), 7);
    ck_assert_int_eq(got[6], TRACE_R11);
    /* Invalid keys. */
    ck_assert_int_eq(trace_add_vlist_by_opc(t, 0, a), DCPI_EINVAL);
    ck_assert_int_eq(trace_add_vlist_by_opc(t, trace_opc_count(), a), DCPI_EINVAL);
    ck_assert_int_eq(trace_add_vlist_by_opc(t, TRACE_OPC_INVALID, a), DCPI_EINVAL);
    ck_assert_int_eq(trace_vlist_table_get(t, 0, NULL), -1);
    /* Other keys untouched. */
    ck_assert_int_eq(trace_vlist_table_get(t, k + 1, NULL), -1);
    trace_vlist_free(four);
    trace_vlist_free(big);
    trace_vlist_free(b);
    trace_vlist_free(a);
    trace_vlist_table_free(t);
}
END_TEST

static unsigned pick_calls;
static trace_opc_t pick_ignored;

static int pick(const trace_opc_info_t *info)
{
    pick_calls++;
    if (info->opc == pick_ignored) {
        return -1;
    }
    if (info->iclass == TRACE_CLASS_LOAD || info->iclass == TRACE_CLASS_STORE) {
        return TRACE_EA;
    }
    return info->iclass == TRACE_CLASS_BRANCH ? TRACE_BR_TAKEN : TRACE_NONE;
}

START_TEST(test_pick_value)
{
    trace_vlist_table_t *t = trace_vlist_table_alloc();
    trace_vlist_t *v = trace_vlist_alloc();
    trace_value_t got[TRACE_VLIST_MAX];
    trace_opc_t load = trace_opc_lookup("mov", TRACE_MEM_READ);
    trace_opc_t add = trace_opc_lookup("add", TRACE_MEM_NONE);
    trace_opc_t jnz = trace_opc_lookup("jnz", TRACE_MEM_NONE);
    pick_ignored = trace_opc_lookup("sub", TRACE_MEM_NONE);
    /* Pick replaces what was there. */
    trace_add_value_to_vlist(v, TRACE_RAX);
    trace_add_value_to_vlist(v, TRACE_RBX);
    ck_assert_int_eq(trace_add_vlist_by_opc(t, load, v), 0);
    ck_assert_int_eq(trace_add_vlist_by_opc(t, pick_ignored, v), 0);
    pick_calls = 0;
    ck_assert_int_eq(trace_set_vlist_by_pick_value(t, pick), 0);
    ck_assert_uint_eq(pick_calls, count_valid_keys());
    ck_assert_int_eq(trace_vlist_table_get(t, load, got), 1);
    ck_assert_int_eq(got[0], TRACE_EA);
    ck_assert_int_eq(got[1], TRACE_NONE);
    ck_assert_int_eq(trace_vlist_table_get(t, add, NULL), 0);
    ck_assert_int_eq(trace_vlist_table_get(t, jnz, got), 1);
    ck_assert_int_eq(got[0], TRACE_BR_TAKEN);
    ck_assert_int_eq(trace_vlist_table_get(t, pick_ignored, NULL), -1);
    ck_assert_int_eq(trace_set_vlist_by_pick_value(t, NULL), DCPI_EINVAL);
    ck_assert_int_eq(trace_set_vlist_by_pick_value(NULL, pick), DCPI_EINVAL);
    trace_vlist_free(v);
    trace_vlist_table_free(t);
}
END_TEST

static unsigned select_calls;

static int select_loads(const trace_opc_info_t *info)
{
    select_calls++;
    return info->iclass == TRACE_CLASS_LOAD;
}

static int select_all(const trace_opc_info_t *info)
{
    return 1;
}

START_TEST(test_select)
{
    trace_vlist_table_t *t = trace_vlist_table_alloc();
    trace_vlist_t *v = trace_vlist_alloc(), *six = trace_vlist_alloc();
    trace_value_t got[TRACE_VLIST_MAX];
    trace_opc_t load = trace_opc_lookup("mov", TRACE_MEM_READ);
    trace_opc_t store = trace_opc_lookup("mov", TRACE_MEM_WRITE);
    trace_opc_t pop = trace_opc_lookup("pop", TRACE_MEM_READ);
    trace_add_value_to_vlist(v, TRACE_EA);
    select_calls = 0;
    ck_assert_int_eq(trace_add_vlist_by_select(t, select_loads, v), 0);
    ck_assert_uint_eq(select_calls, count_valid_keys());
    ck_assert_int_eq(trace_vlist_table_get(t, load, got), 1);
    ck_assert_int_eq(got[0], TRACE_EA);
    ck_assert_int_eq(trace_vlist_table_get(t, pop, NULL), 1);
    ck_assert_int_eq(trace_vlist_table_get(t, store, NULL), -1);
    /* Count exactly the selected keys. */
    unsigned with = 0, loads = 0;
    for (trace_opc_t k = 0; k < trace_opc_count(); k++) {
        const trace_opc_info_t *info = trace_opc_info(k);
        with += trace_vlist_table_get(t, k, NULL) >= 0;
        loads += info != NULL && info->iclass == TRACE_CLASS_LOAD;
    }
    ck_assert_uint_eq(with, loads);
    ck_assert_uint_gt(loads, 10);
    /* Six more on every key: loads would reach 7 (fits), so all succeed; again: all refuse. */
    for (int i = 0; i < 6; i++) {
        trace_add_value_to_vlist(six, (trace_value_t)(TRACE_RAX + i));
    }
    ck_assert_int_eq(trace_add_vlist_by_select(t, select_all, six), 0);
    ck_assert_int_eq(trace_vlist_table_get(t, load, NULL), 7);
    ck_assert_int_eq(trace_vlist_table_get(t, store, NULL), 6);
    trace_vlist_t *one = trace_vlist_alloc();
    trace_add_value_to_vlist(one, TRACE_LATENCY);
    ck_assert_int_eq(trace_add_vlist_by_select(t, select_all, one), DCPI_EFULL);
    ck_assert_int_eq(trace_vlist_table_get(t, load, got), 7); /* full: unchanged */
    ck_assert_int_eq(got[0], TRACE_EA);
    ck_assert_int_eq(trace_vlist_table_get(t, store, got), 7); /* had room: updated */
    ck_assert_int_eq(got[6], TRACE_LATENCY);
    ck_assert_int_eq(trace_add_vlist_by_select(t, NULL, one), DCPI_EINVAL);
    trace_vlist_free(one);
    trace_vlist_free(six);
    trace_vlist_free(v);
    trace_vlist_table_free(t);
}
END_TEST

START_TEST(test_value_names)
{
    for (int v = 0; v < TRACE_VALUE_COUNT; v++) {
        trace_value_t back = TRACE_VALUE_COUNT;
        const char *name = trace_value_name((trace_value_t)v);
        ck_assert_int_eq(trace_value_from_name(name, &back), 0);
        ck_assert_int_eq(back, v);
    }
    trace_value_t out;
    ck_assert_str_eq(trace_value_name(TRACE_REGA), "ra");
    ck_assert_str_eq(trace_value_name(TRACE_BR_TARGET), "target");
    ck_assert_str_eq(trace_value_name(TRACE_R15), "r15");
    ck_assert_int_eq(trace_value_from_name("EA", &out), 0);
    ck_assert_int_eq(out, TRACE_EA);
    ck_assert_int_eq(trace_value_from_name("r16", &out), DCPI_EINVAL);
    ck_assert_int_eq(trace_value_from_name(NULL, &out), DCPI_EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vlist");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_vlist_limit);
    tcase_add_test(tc, test_vlist_invalid_values);
    tcase_add_test(tc, test_add_by_opc);
    tcase_add_test(tc, test_pick_value);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_value_names);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
