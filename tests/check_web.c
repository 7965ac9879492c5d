/*
 * check_web.c - dcpiweb's server parts without a socket: the query string into a selection
 * (every parameter known, given once, of its form: nothing that names a path or carries a
 * control character), the -http address, the routing of a path to its file or a 404, the
 * one-line error replies, and a view of an empty database directory answering 400.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/errno.h"
#include "web/parts.h"

static dcpi__web_sel_t fresh(void)
{
    return (dcpi__web_sel_t){.pid = -1};
}

START_TEST(test_params_ok)
{
    dcpi__web_sel_t s = fresh();
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi__web_param(&s, "view", "list", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "epoch", "20261129012429..latest", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "since", "2026-01-31T12:00", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "pid", "4194304", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "proc", "<img src=x onerror=alert(1)>", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "comm", "c\"o'm", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "hosts", "h1,h\"2'x", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "i", "1", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "rows", "200", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "diff", "h1,h2@2026-01-01..2026-02-01", err), 0);
    ck_assert_str_eq(s.diff, "h1,h2@2026-01-01..2026-02-01");
    ck_assert_str_eq(s.view, "list");
    ck_assert_str_eq(s.epoch, "20261129012429..latest");
    ck_assert_int_eq(s.pid, 4194304);
    ck_assert_str_eq(s.proc, "<img src=x onerror=alert(1)>");
    ck_assert_int_eq(s.by_image, 1);
    ck_assert_uint_eq(s.rows, 200);
}
END_TEST

static void bad(const char *key, const char *value, const char *want)
{
    dcpi__web_sel_t s = fresh();
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi__web_param(&s, key, value, err), DCPI_EINVAL);
    ck_assert_msg(strstr(err, want) != NULL, "%s=%s: '%s' lacks '%s'", key, value, err, want);
    ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(test_params_bad)
{
    bad("epoch", "../../etc", "parameter 'epoch' wants letters");
    bad("epoch", "/etc", "parameter 'epoch' wants");
    bad("epoch", ".hidden", "parameter 'epoch' wants");
    bad("platform", "..", "parameter 'platform' wants");
    bad("platform", "a/b", "parameter 'platform' wants");
    bad("event", "", "parameter 'event' wants");
    bad("pid", "-1", "a process id");
    bad("pid", "4194305", "a process id");
    bad("pid", "12a", "a process id");
    bad("rows", "0", "from 1 to 200");
    bad("i", "2", "0 or 1");
    bad("view", "<script>", "one of procs");
    bad("comm", "a\tb", "without control characters");
    bad("proc", "a\nb", "without control characters");
    bad("nosuch", "1", "unknown parameter 'nosuch'");
    bad("diff", "h\"x", "parameter 'diff' wants letters, digits and ._:+-@,");
    bad("diff", "../x", "parameter 'diff' wants");
    bad("diff", "a/b", "parameter 'diff' wants");
    bad("epoch", NULL, "parameter 'epoch' wants");
    char long_text[DCPI_WEB_VALUE_MAX + 2];
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    bad("proc", long_text, "at most 1024 bytes");
}
END_TEST

/* The diff's second set: a database's epoch, or the fleet's HOSTS@SINCE..UNTIL (dcpidiff's). */
START_TEST(test_diff_sel)
{
    dcpi_web_opts_t o = {.tool = "dcpiweb", .fleet_url = "http://127.0.0.1:1/"};
    dcpi__web_sel_t s = fresh(), b;
    char buf[DCPI_WEB_SETLEN];
    const char *epoch = "x";
    s.hosts = "h9";
    s.since = "1h";
    s.diff = "h1,h2@2026-01-01..2026-02-01";
    dcpi__web_diff_sel(&o, &s, &b, buf, &epoch);
    ck_assert_ptr_null(epoch);
    ck_assert_ptr_null(b.diff);
    ck_assert_str_eq(b.hosts, "h1,h2");
    ck_assert_str_eq(b.since, "2026-01-01");
    ck_assert_str_eq(b.until, "2026-02-01");
    s.diff = "@24h";
    dcpi__web_diff_sel(&o, &s, &b, buf, &epoch);
    ck_assert_ptr_null(b.hosts); /* the server's -host: every host without one */
    ck_assert_str_eq(b.since, "24h");
    ck_assert_ptr_null(b.until);
    s.diff = "h3";
    dcpi__web_diff_sel(&o, &s, &b, buf, &epoch);
    ck_assert_str_eq(b.hosts, "h3");
    ck_assert_ptr_null(b.since);
    o.fleet_url = NULL; /* a database: the epoch, and the first set's window only */
    s.diff = "latest-1";
    dcpi__web_diff_sel(&o, &s, &b, buf, &epoch);
    ck_assert_str_eq(epoch, "latest-1");
    ck_assert_str_eq(b.hosts, "h9");
    ck_assert_ptr_null(b.since);
}
END_TEST

START_TEST(test_params_twice)
{
    dcpi__web_sel_t s = fresh();
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi__web_param(&s, "epoch", "latest", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "epoch", "all", err), DCPI_EINVAL);
    ck_assert_str_eq(err, "parameter 'epoch' given twice");
    ck_assert_int_eq(dcpi__web_param(&s, "pid", "0", err), 0);
    ck_assert_int_eq(dcpi__web_param(&s, "pid", "1", err), DCPI_EINVAL);
}
END_TEST

START_TEST(test_addr)
{
    char host[64];
    unsigned port = 1;
    int lo = 0;
    ck_assert_int_eq(dcpi_web_parse_addr("127.0.0.1:8088", host, &port, &lo), 0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_uint_eq(port, 8088);
    ck_assert_int_eq(lo, 1);
    ck_assert_int_eq(dcpi_web_parse_addr("localhost:0", host, &port, &lo), 0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_int_eq(lo, 1);
    ck_assert_int_eq(dcpi_web_parse_addr("[::1]:80", host, &port, &lo), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_int_eq(lo, 1);
    ck_assert_int_eq(dcpi_web_parse_addr("0.0.0.0:80", host, &port, &lo), 0);
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(dcpi_web_parse_addr("10.1.2.3:65535", host, &port, &lo), 0);
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(dcpi_web_parse_addr("127.0.0.1", host, &port, &lo), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_web_parse_addr("127.0.0.1:65536", host, &port, &lo), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_web_parse_addr("127.0.0.1:-1", host, &port, &lo), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_web_parse_addr("example.com:80", host, &port, &lo), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_web_parse_addr(":80", host, &port, &lo), DCPI_EINVAL);
}
END_TEST

START_TEST(test_route_files)
{
    dcpi_web_opts_t o = {.tool = "dcpiweb", .db = "/nonexistent"};
    dcpi__web_sel_t s = fresh();
    dcpi__web_reply_t r;
    dcpi__web_route(&o, "/", &s, &r);
    ck_assert_uint_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.type, "text/html"));
    ck_assert_ptr_nonnull(strstr(r.body, "/static/report.js"));
    free(r.body);
    dcpi__web_route(&o, "/static/report.js", &s, &r);
    ck_assert_uint_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "function Grid("));
    ck_assert_ptr_null(strstr(r.body, "main();\n")); /* the page's own start is not in it */
    free(r.body);
    dcpi__web_route(&o, "/../etc/passwd", &s, &r);
    ck_assert_uint_eq(r.status, 404);
    ck_assert_str_eq(r.body, "dcpiweb: no such page (try /)\n");
    free(r.body);
}
END_TEST

START_TEST(test_route_empty_db)
{
    char dir[] = "/tmp/check_web.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    dcpi_web_opts_t o = {.tool = "dcpiweb", .db = dir};
    dcpi__web_sel_t s = fresh();
    dcpi__web_reply_t r;
    dcpi__web_route(&o, "/api/prof.json", &s, &r);
    ck_assert_uint_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.type, "text/plain"));
    ck_assert_int_eq(strncmp(r.body, "dcpiweb: ", 9), 0);
    ck_assert_ptr_eq(strchr(r.body, '\n'), r.body + r.len - 1); /* one line */
    free(r.body);
    dcpi__web_route(&o, "/api/info.json", &s, &r);
    ck_assert_uint_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\"epochs\":[]"));
    free(r.body);
    rmdir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("web");
    TCase *tc = tcase_create("query");
    tcase_add_test(tc, test_params_ok);
    tcase_add_test(tc, test_params_bad);
    tcase_add_test(tc, test_params_twice);
    tcase_add_test(tc, test_diff_sel);
    tcase_add_test(tc, test_addr);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("route");
    tcase_add_test(tr, test_route_files);
    tcase_add_test(tr, test_route_empty_db);
    suite_add_tcase(s, tr);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
