/*
 * check_report.c - dcpireport's page (core/report/report.h): JSON strings that cannot end
 * their <script> element (</script>, <!--, &, quotes, control characters, U+2028, bytes that are
 * not UTF-8), HTML text escapes, the flame graph's tree of a stack profile whose frames lie in
 * this test program (chains merged by name from the outermost caller, children by count, a
 * frame under the minimum share left out and counted), and the page of an empty epoch.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "core/report/report.h"
#include "core/base/fsutil.h"
#include "core/image/image.h"
#include "core/image/symbols.h"
#include "core/store/stackprof.h"
#include "dcpi/errno.h"

/* What fn wrote into a FILE, as a malloc'd string. */
static char *capture_str(const char *s, void (*fn)(FILE *, const char *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(m);
    fn(m, s);
    fclose(m);
    return buf;
}

static void check_json(const char *in, const char *want)
{
    char *got = capture_str(in, dcpi_report_json_str);
    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(test_json_str)
{
    check_json("hot_mul", "\"hot_mul\"");
    check_json("</script><!--", "\"\\u003c/script\\u003e\\u003c!--\"");
    check_json("long spin<int>(int&, long)", "\"long spin\\u003cint\\u003e(int\\u0026, long)\"");
    check_json("a\"b\\c\n\t\x01", "\"a\\\"b\\\\c\\u000a\\u0009\\u0001\"");
    check_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
               "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    check_json("x\xe2\x80\xa8y", "\"x\\u2028y\"");
    check_json("\xff\xc3(\xe2\x82", "\"\\ufffd\\ufffd(\\ufffd\\ufffd\""); /* bad, cut short */
    check_json("\xc0\xaf\xed\xa0\x80",
               "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""); /* overlong, surrogate */
    char *got = capture_str(NULL, dcpi_report_json_str);
    ck_assert_str_eq(got, "null");
    free(got);
}
END_TEST

START_TEST(test_html_text)
{
    char *got = capture_str("a<b>&\"c'", dcpi_report_html_text);
    ck_assert_str_eq(got, "a&lt;b&gt;&amp;&quot;c&#39;");
    free(got);
}
END_TEST

/* ---- flame graph ---- */

static char g_dir[] = "/tmp/check-report.XXXXXX";

__attribute__((noinline, used)) int report_leaf_a(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline, used)) int report_leaf_b(int x)
{
    return x * 5 + 2;
}

/* The offset from tstart of a point inside function name of this program. */
static uint32_t off_in(const dcpi_symtab_t *st, const dcpi_image_info_t *info, const char *name)
{
    const dcpi_symbol_t *s = dcpi_symtab_find(st, name);
    ck_assert_msg(s != NULL, "no symbol %s", name);
    return (uint32_t)(s->addr + 1 - info->tstart);
}

/* DB/202601010000/p1/stacks/cpu-clock.stk: 3 x (leaf_a <- main), 1 x (leaf_b <- main). */
static void write_stacks(const char *exe)
{
    dcpi_image_info_t info;
    dcpi_symtab_t *st = NULL;
    char err[DCPI_ERRLEN] = "", path[4096];
    ck_assert_int_eq(dcpi_image_probe(exe, &info, err), 0);
    ck_assert_int_eq(dcpi_symtab_open(exe, &st, err), 0);
    dcpi_stackprof_t *sp = NULL;
    ck_assert_int_eq(dcpi_stackprof_new(0, &sp), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "epoch", "202601010000"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "platform", "p1"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_stackprof_set(sp, "period", "1000000"), 0);
    int img = dcpi_stackprof_image(sp, info.id, "prog_x", exe, info.tstart, info.tsize);
    ck_assert_int_ge(img, 0);
    uint32_t m = off_in(st, &info, "main");
    dcpi_frame_t a[] = {{(uint32_t)img, off_in(st, &info, "report_leaf_a")}, {(uint32_t)img, m}};
    dcpi_frame_t b[] = {{(uint32_t)img, off_in(st, &info, "report_leaf_b")}, {(uint32_t)img, m}};
    ck_assert_int_eq(dcpi_stackprof_add(sp, a, 2, 3), 0);
    ck_assert_int_eq(dcpi_stackprof_add(sp, b, 2, 1), 0);
    snprintf(path, sizeof path, "%s/202601010000/p1/stacks", g_dir);
    ck_assert_int_eq(dcpi__mkdirs(path, 0755), 0);
    dcpi_stackprof_path(g_dir, "202601010000", "p1", "cpu-clock", path, sizeof path);
    ck_assert_msg(dcpi_stackprof_write(path, sp, err) == 0, "%s", err);
    dcpi_stackprof_free(sp);
    dcpi_symtab_free(st);
}

static char *flame_json(double min)
{
    dcpi_profset_event_t ev = {.name = "cpu-clock", .total = 4};
    dcpi_profset_t set = {.events = &ev, .nevents = 1};
    dcpi_report_opts_t o = {
        .tool = "check", .db = g_dir, .epoch = "202601010000", .flame_min = min};
    char err[DCPI_ERRLEN] = "", *buf = NULL;
    size_t len = 0;
    dcpi_procs_table_t rows = {.sort = 0}; /* no procedure rows: the calls view is empty */
    FILE *m = open_memstream(&buf, &len);
    ck_assert_msg(dcpi__report_flame(m, &set, &o, &rows, err) == 0, "%s", err);
    fclose(m);
    return buf;
}

START_TEST(test_flame)
{
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    write_stacks(exe);
    /* all(4) -> main(4) -> report_leaf_a(3), report_leaf_b(1): (name, image, count, depth) */
    char *j = flame_json(0);
    ck_assert_msg(strstr(j, "\"total\":4,\"chains\":2") != NULL, "%s", j);
    ck_assert_msg(strstr(j, "\"nodes\":[0,0,4,0,1,1,4,1,2,1,3,2,3,1,1,2]") != NULL, "%s", j);
    ck_assert_msg(strstr(j, "\"names\":[\"all\",\"main\",\"report_leaf_a\",\"report_leaf_b\"]"),
                  "%s", j);
    ck_assert_msg(strstr(j, "\"hidden\":0,\"hidden_samples\":0") != NULL, "%s", j);
    free(j);
    j = flame_json(30.0); /* leaf_b has 25% */
    ck_assert_msg(strstr(j, "\"nodes\":[0,0,4,0,1,1,4,1,2,1,3,2]") != NULL, "%s", j);
    ck_assert_msg(strstr(j, "\"frames\":3,\"hidden\":1,\"hidden_samples\":1") != NULL, "%s", j);
    free(j);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_flame_none)
{
    strcpy(g_dir, "/tmp/check-report.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
    char path[4096];
    snprintf(path, sizeof path, "%s/202601010000/p1", g_dir);
    ck_assert_int_eq(dcpi__mkdirs(path, 0755), 0);
    char *j = flame_json(0.1);
    ck_assert_msg(
        strncmp(j, "\"flame\":null,\"flame_none\":\"the epoch has no stack profile", 56) == 0, "%s",
        j);
    free(j);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_empty_page)
{
    dcpi_profset_t set = {0};
    dcpi_report_opts_t o = {.tool = "check", .db = "/nonexistent", .epoch = "E<1>", .top = 10};
    char err[DCPI_ERRLEN] = "", *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ck_assert_int_eq(dcpi_report_write(&set, &o, m, err), 0);
    fclose(m);
    ck_assert_msg(strstr(buf, "<title>dcpireport: E&lt;1&gt;</title>") != NULL, "%.400s", buf);
    ck_assert(strstr(buf, "content=\"default-src 'none'; ") != NULL);
    ck_assert(strstr(buf, "\"epoch\":\"E\\u003c1\\u003e\",") != NULL);
    ck_assert(strstr(buf, "\"events\":[],\"warnings\":[]}</script>") != NULL);
    ck_assert(strstr(buf, "</html>\n") != NULL);
    free(buf);
}
END_TEST

START_TEST(test_loss_warning)
{
    dcpi_profset_event_t ev = {.name = "cpu-clock", .total = 750, .lost = 250};
    char line[256] = "";
    ck_assert_int_eq(dcpi_procs_loss_warning(&ev, line, sizeof line), 1);
    ck_assert_str_eq(line, "warning: cpu-clock lost 25.0% of its samples (250 of 1000): the "
                           "shares below are of the samples kept");
    ev.lost = 7; /* 7 of 757: under 1% */
    ck_assert_int_eq(dcpi_procs_loss_warning(&ev, line, sizeof line), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("escapes");
    tcase_add_test(tc, test_json_str);
    tcase_add_test(tc, test_html_text);
    suite_add_tcase(s, tc);
    tc = tcase_create("page");
    tcase_add_test(tc, test_flame);
    tcase_add_test(tc, test_flame_none);
    tcase_add_test(tc, test_empty_page);
    tcase_add_test(tc, test_loss_warning);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
