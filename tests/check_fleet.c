/*
 * check_fleet.c - core/fleet without a server: every byte of a hostile name survives a SQL
 * literal and a TabSeparated field (escaped as ClickHouse reads them, read back as it writes
 * them), batches survive their spool file and refuse a damaged one, batch ids are deterministic,
 * a flush's write-ahead copy (.prep) is not sent until committed or recovered, URLs with
 * credentials or a bad database name are refused, and a hotlist's cluster counters ride on its
 * summary row (a section of its own, so a batch without any keeps an older dcpi's id).
 */
#include <check.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fleet/batch.h"
#include "core/fleet/conn.h"
#include "core/fleet/push.h"
#include "core/fleet/schema.h"
#include "core/fleet/sql.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"

static const char *const hostile[] = {
    "plain",     "q'uote", "dq\"uote",    "back\\slash",          "tab\there",
    "new\nline", "cr\rx",  "\\t literal", "all' \" \\ \t \n \\n", "\x01\x1f\x7f high \xc3\xa9",
    ""};

/* The value ClickHouse would store for a literal: undo the literal's escapes as its lexer does. */
static char *unquote(const char *lit)
{
    size_t n = strlen(lit);
    ck_assert(n >= 2 && lit[0] == '\'' && lit[n - 1] == '\'');
    if (n == 2)
        return strdup("");
    char *copy = strndup(lit + 1, n - 2), *cur = copy, *f[1];
    /* the literal's escapes (\' \\ \xHH) are a subset of what the TSV reader undoes */
    ck_assert_int_eq(dcpi_fleet_tsv_line(&cur, f, 1), 1);
    char *out = strdup(f[0]);
    free(copy);
    return out;
}

START_TEST(test_sql_literals)
{
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
        dcpi_fbuf_t b = {0};
        dcpi_fbuf_sqlstr(&b, hostile[i]);
        ck_assert_int_eq(dcpi_fbuf_ok(&b), 0);
        /* nothing inside can end the literal or the line */
        for (size_t k = 1; k + 1 < b.n; k++) {
            ck_assert(b.p[k] != '\n' && b.p[k] != '\t' && b.p[k] != '\r');
            if (b.p[k] == '\'')
                ck_assert(b.p[k - 1] == '\\');
        }
        char *back = unquote(b.p);
        ck_assert_str_eq(back, hostile[i]);
        free(back);
        dcpi_fbuf_free(&b);
    }
}
END_TEST

START_TEST(test_tsv_fields)
{
    dcpi_fbuf_t b = {0};
    size_t n = sizeof hostile / sizeof *hostile;
    for (size_t i = 0; i < n; i++) {
        dcpi_fbuf_tsv(&b, hostile[i]);
        dcpi_fbuf_str(&b, i + 1 < n ? "\t" : "\n");
    }
    dcpi_fbuf_str(&b, "second\tline\n");
    char *cur = b.p, *f[16];
    ck_assert_int_eq(dcpi_fleet_tsv_line(&cur, f, 16), (int)n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(f[i], hostile[i]);
    ck_assert_int_eq(dcpi_fleet_tsv_line(&cur, f, 16), 2);
    ck_assert_str_eq(f[1], "line");
    ck_assert_int_eq(dcpi_fleet_tsv_line(&cur, f, 16), 0);
    char text[] = "a\tb\tc\n", *c2 = text;
    ck_assert_int_eq(dcpi_fleet_tsv_line(&c2, f, 2), -1); /* more fields than room */
    dcpi_fbuf_free(&b);
}
END_TEST

static void fill(dcpi_fleet_batch_t *b, const char *host)
{
    ck_assert_int_eq(dcpi_fleet_batch_init(b, host, "epoch"), 0);
    snprintf(b->epoch, sizeof b->epoch, "%s", "2026\t11");
    dcpi_fleet_key_t k = {.host = b->host,
                          .epoch = "202611250000",
                          .platform = "p\tq",
                          .event = "cpu-clock",
                          .estart = 1795564800,
                          .eend = 1795565400,
                          .period = 1000,
                          .duty = 0.25};
    dcpi_fleet_batch_key(b, DCPI_FLEET_T_SAMPLES, &k);
    dcpi_fbuf_str(&b->t[DCPI_FLEET_T_SAMPLES], "id\t/bin/x\t0\t4096\t100\t16\t1\tc\t5\n");
    int img = dcpi_fleet_batch_symreq(b, "ab12", 0, "/bin/we'ird\tpath", "", 4096, 100);
    ck_assert_int_ge(img, 0);
    ck_assert_int_eq(dcpi_fleet_batch_symreq(b, "ab12", 0, "/bin/we'ird\tpath", "", 4096, 100),
                     img);
    dcpi_fleet_batch_page(b, img, 4096 + 16);
    dcpi_fleet_batch_page(b, img, 4096 + 9000);
    ck_assert_int_eq(dcpi_fleet_batch_seal(b, 1795564800, "202611250000"), 0);
}

START_TEST(test_batch_ids_and_spool_file)
{
    dcpi_fleet_batch_t a, b, c, d;
    fill(&a, "h'1\\x");
    fill(&b, "h'1\\x");
    fill(&c, "h2");
    ck_assert_uint_eq(a.slot, b.slot);
    ck_assert_uint_eq(a.batch, b.batch);
    ck_assert_uint_ne(a.slot, c.slot);
    ck_assert_str_eq(a.day, "2026-11-25");
    ck_assert_ptr_nonnull(strstr(a.symreq.p, "\t1,3\n")); /* pages 0x1 and 0x3 */
    dcpi_fbuf_t f = {0};
    ck_assert_int_eq(dcpi_fleet_batch_encode(&a, &f), 0);
    ck_assert_int_eq(dcpi_fleet_batch_decode(f.p, f.n, "f", &d, NULL), 0);
    ck_assert_str_eq(d.host, a.host);
    ck_assert_str_eq(d.epoch, a.epoch);
    ck_assert_uint_eq(d.batch, a.batch);
    ck_assert_uint_eq(d.rows, a.rows);
    for (int t = 0; t < DCPI_FLEET_NT; t++)
        ck_assert_uint_eq(d.t[t].n, a.t[t].n);
    ck_assert_mem_eq(d.t[0].p, a.t[0].p, a.t[0].n);
    ck_assert_str_eq(d.symreq.p, a.symreq.p);
    dcpi_fleet_batch_free(&d);
    char err[DCPI_ERRLEN];
    for (size_t cut = 0; cut < f.n; cut += 7) /* every truncation is refused, none half read */
        ck_assert_int_eq(dcpi_fleet_batch_decode(f.p, cut, "f", &d, err), DCPI_EFORMAT);
    ck_assert_str_eq(err, "f: not a complete dcpi batch file");
    dcpi_fbuf_free(&f);
    dcpi_fleet_batch_free(&a);
    dcpi_fleet_batch_free(&b);
    dcpi_fleet_batch_free(&c);
}
END_TEST

/* The vmiss table (schema 3) is in a batch's id and spool file only when it has rows: a batch
 * without missing-value marks has the file (and id) of an older dcpi, which still reads; one with
 * marks has another id and round-trips them. */
START_TEST(test_batch_vmiss_optional)
{
    dcpi_fleet_batch_t a, m, d;
    fill(&a, "h");
    fill(&m, "h");
    dcpi_fbuf_t f = {0}, g = {0};
    ck_assert_int_eq(dcpi_fleet_batch_encode(&a, &f), 0);
    ck_assert_ptr_null(strstr(f.p, "table vmiss"));
    ck_assert_ptr_nonnull(strstr(f.p, "table loss 0\ntable symreq "));
    dcpi_fleet_key_t k = {.host = "h", .epoch = "202611250000", .platform = "p", .event = "e"};
    dcpi_fleet_batch_key(&m, DCPI_FLEET_T_VMISS, &k);
    dcpi_fbuf_str(&m.t[DCPI_FLEET_T_VMISS],
                  "id\t/bin/x\t0\t4096\t100\tvp\t16\tnot executed while armed (3 arms)\n");
    ck_assert_int_eq(dcpi_fleet_batch_seal(&m, 1795564800, "202611250000"), 0);
    ck_assert_uint_eq(m.slot, a.slot);
    ck_assert_uint_ne(m.batch, a.batch);
    ck_assert_int_eq(dcpi_fleet_batch_encode(&m, &g), 0);
    ck_assert_ptr_nonnull(strstr(g.p, "table vmiss "));
    ck_assert_int_eq(dcpi_fleet_batch_decode(g.p, g.n, "g", &d, NULL), 0);
    ck_assert_uint_eq(d.t[DCPI_FLEET_T_VMISS].n, m.t[DCPI_FLEET_T_VMISS].n);
    ck_assert_mem_eq(d.t[DCPI_FLEET_T_VMISS].p, m.t[DCPI_FLEET_T_VMISS].p,
                     d.t[DCPI_FLEET_T_VMISS].n);
    ck_assert_uint_eq(d.rows, m.rows);
    dcpi_fleet_batch_free(&d);
    ck_assert_int_eq(dcpi_fleet_batch_decode(f.p, f.n, "f", &d, NULL), 0); /* no vmiss table */
    ck_assert_uint_eq(d.t[DCPI_FLEET_T_VMISS].n, 0);
    dcpi_fleet_batch_free(&d);
    dcpi_fbuf_free(&f);
    dcpi_fbuf_free(&g);
    dcpi_fleet_batch_free(&a);
    dcpi_fleet_batch_free(&m);
}
END_TEST

/* The fields of each line of rows (all lines must have as many): 0 when empty. */
static int fields_per_line(const dcpi_fbuf_t *rows)
{
    int per = 0, lines = 0, n = 1;
    for (size_t i = 0; i < rows->n; i++) {
        if (rows->p[i] == '\t')
            n++;
        else if (rows->p[i] == '\n') {
            ck_assert(lines == 0 || n == per);
            per = n;
            lines++;
            n = 1;
        }
    }
    return per;
}

static int cols_of(const char *cols)
{
    int n = 1;
    for (; *cols; cols++)
        n += *cols == ',';
    return n;
}

/* A database of one epoch with a value profile: 0x10 with cluster information when clustered
 * (one cluster of 4 samples: three of 7, one of 9), 0x20 without (5 samples of 3). */
static void vprof_db(const char *db, int clustered)
{
    char dir[512], path[600], err[DCPI_ERRLEN] = "";
    snprintf(dir, sizeof dir, "mkdir -p %s/202611250000/p/x_ab12", db);
    ck_assert_int_eq(system(dir), 0);
    dcpi_vprof_t *vp = NULL;
    ck_assert_int_eq(dcpi_vprof_new(4, &vp), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "image", "ab12"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "path", "/bin/x"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "epoch", "202611250000"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "platform", "p"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "period", "1000"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "tstart", "0x1000"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "tsize", "4096"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "cpuspeed", "2400"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "vprof", "vp"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "contexts", "0"), 0);
    dcpi_vsummary_t *s = dcpi_vprof_at(vp, 0x10, 1);
    dcpi_vsummary_add(s, 7, 0, 0, 3);
    dcpi_vsummary_add(s, 9, 0, 0, 1);
    if (clustered)
        dcpi_vsummary_cluster(s, 1, 4, 16, 10);
    dcpi_vsummary_add(dcpi_vprof_at(vp, 0x20, 1), 3, 0, 0, 5);
    snprintf(path, sizeof path, "%s/202611250000/p/x_ab12/vp.vprof", db);
    ck_assert_msg(dcpi_vprof_write(path, vp, err) == 0, "write: %s", err);
    dcpi_vprof_free(vp);
}

/* A hotlist with cluster information: its summary row (and only it) carries K, N, S, D, in the
 * hotclust section inserted into hotlists with the schema 4 columns; a batch without any has
 * no such section (an older dcpi's id and spool file), and the section round-trips. */
START_TEST(test_batch_hotlist_clusters)
{
    char tmp[] = "/tmp/check-fleet-rows.XXXXXX", db[64], db0[64], err[DCPI_ERRLEN] = "", cmd[80];
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    snprintf(db, sizeof db, "%s/c", tmp);
    snprintf(db0, sizeof db0, "%s/n", tmp);
    vprof_db(db, 1);
    vprof_db(db0, 0);
    dcpi_fleet_batch_t b, b0, d;
    ck_assert_int_eq(dcpi_fleet_batch_init(&b, "h", "values"), 0);
    ck_assert_int_eq(dcpi_fleet_batch_init(&b0, "h", "values"), 0);
    ck_assert_msg(dcpi_fleet_batch_values(&b, db, "202611250000", "p", 0, err) == 0, "%s", err);
    ck_assert_msg(dcpi_fleet_batch_values(&b0, db0, "202611250000", "p", 0, err) == 0, "%s", err);

    const dcpi_fbuf_t *hc = &b.t[DCPI_FLEET_T_HOTCLUST], *hl = &b.t[DCPI_FLEET_T_HOTLISTS];
    ck_assert_str_eq(dcpi_fleet_table(DCPI_FLEET_T_HOTCLUST), "hotlists");
    ck_assert_str_eq(dcpi_fleet_table_cols(DCPI_FLEET_T_HOTCLUST), DCPI_FLEET_HOTCLUST_COLS);
    ck_assert_int_eq(fields_per_line(hc), cols_of(DCPI_FLEET_HOTCLUST_COLS));
    ck_assert_int_eq(fields_per_line(hl), cols_of(DCPI_FLEET_HOTLISTS_COLS));
    /* one row: 0x10's summary (entry 0, err 0, vtot 4, seen 4, backend "") with 1, 4, 16, 10 */
    ck_assert_msg(strstr(hc->p, "\t16\t0\t0\t0\t0\t0\t0\t4\t4\t\t1\t4\t16\t10\n"), "%s", hc->p);
    ck_assert_ptr_eq(strchr(hc->p, '\n'), hc->p + hc->n - 1);
    /* the rest: 0x10's two entries, 0x20's summary and entry, without counters */
    int lines = 0;
    for (size_t i = 0; i < hl->n; i++)
        lines += hl->p[i] == '\n';
    ck_assert_int_eq(lines, 4);
    ck_assert_ptr_nonnull(strstr(hl->p, "\t32\t0\t0\t0\t0\t0\t0\t5\t5\t\n"));
    ck_assert_ptr_nonnull(strstr(hl->p, "\t16\t1\t7\t0\t0\t3\t0\t0\t0\t\n"));
    ck_assert_uint_eq(b0.t[DCPI_FLEET_T_HOTCLUST].n, 0);
    ck_assert_uint_eq(b.rows, b0.rows);
    ck_assert_uint_eq(b.slot, b0.slot);
    ck_assert_uint_ne(b.batch, b0.batch);

    dcpi_fbuf_t f = {0}, f0 = {0};
    ck_assert_int_eq(dcpi_fleet_batch_encode(&b0, &f0), 0);
    ck_assert_ptr_null(strstr(f0.p, "table hotclust"));
    ck_assert_int_eq(dcpi_fleet_batch_encode(&b, &f), 0);
    ck_assert_ptr_nonnull(strstr(f.p, "table hotclust "));
    ck_assert_int_eq(dcpi_fleet_batch_decode(f.p, f.n, "f", &d, NULL), 0);
    ck_assert_uint_eq(d.batch, b.batch);
    ck_assert_uint_eq(d.t[DCPI_FLEET_T_HOTCLUST].n, hc->n);
    ck_assert_mem_eq(d.t[DCPI_FLEET_T_HOTCLUST].p, hc->p, hc->n);
    ck_assert_uint_eq(d.t[DCPI_FLEET_T_HOTLISTS].n, hl->n);
    dcpi_fleet_batch_free(&d);
    ck_assert_int_eq(dcpi_fleet_batch_decode(f0.p, f0.n, "f0", &d, NULL), 0);
    ck_assert_uint_eq(d.t[DCPI_FLEET_T_HOTCLUST].n, 0);
    dcpi_fleet_batch_free(&d);
    dcpi_fbuf_free(&f);
    dcpi_fbuf_free(&f0);
    dcpi_fleet_batch_free(&b);
    dcpi_fleet_batch_free(&b0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A .prep file is invisible to the sender until dcpi_spool_commit, or dcpi_spool_recover after
 * the process that wrote it died; dcpi_spool_replace keeps its name. */
START_TEST(test_spool_write_ahead)
{
    char dir[] = "/tmp/check-fleet-spool.XXXXXX", err[DCPI_ERRLEN], path[4400], cmd[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    dcpi_fleet_batch_t a, c;
    fill(&a, "h1");
    fill(&c, "h2");
    dcpi_spool_stats_t st = {0};
    ck_assert_int_eq(dcpi_spool_prepare(dir, 0, &a, path, sizeof path, &st, err), 0);
    ck_assert_ptr_nonnull(strstr(path, ".prep"));
    dcpi_spool_count(dir, &st);
    ck_assert_uint_eq(st.queued, 0); /* not sent while the flush writes its files */
    ck_assert_int_eq(dcpi_spool_replace(path, &c, err), 0);
    ck_assert_int_eq(dcpi_spool_commit(path, err), 0);
    dcpi_spool_count(dir, &st);
    ck_assert_uint_eq(st.queued, 1);
    ck_assert_int_eq(dcpi_spool_commit(path, err), DCPI_ENOENT); /* once */
    ck_assert_int_eq(dcpi_spool_prepare(dir, 0, &a, path, sizeof path, &st, err), 0);
    dcpi_spool_recover(dir); /* its writer was killed: the next dcpid -push sends it */
    dcpi_spool_count(dir, &st);
    ck_assert_uint_eq(st.queued, 2);
    dcpi_fleet_batch_free(&a);
    dcpi_fleet_batch_free(&c);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_urls)
{
    dcpi_fleet_t *f = NULL;
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi_fleet_open("http://u:p@h:1/", &f, err), DCPI_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "credentials in a URL"));
    ck_assert_int_eq(dcpi_fleet_open("ftp://h/", &f, err), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_fleet_open("http://h:1/?database=a;DROP", &f, err), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_fleet_open("http://h:1/?x=1&database=fl_2", &f, err), 0);
    ck_assert_str_eq(dcpi_fleet_dbname(f), "fl_2");
    ck_assert_str_eq(dcpi_fleet_url(f), "http://h:1/");
    dcpi_fleet_close(f);
    ck_assert_int_eq(dcpi_fleet_open("https://h:8443", &f, err), 0);
    ck_assert_str_eq(dcpi_fleet_dbname(f), "dcpi");
    dcpi_fleet_close(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fleet");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sql_literals);
    tcase_add_test(tc, test_tsv_fields);
    tcase_add_test(tc, test_batch_ids_and_spool_file);
    tcase_add_test(tc, test_batch_vmiss_optional);
    tcase_add_test(tc, test_batch_hotlist_clusters);
    tcase_add_test(tc, test_spool_write_ahead);
    tcase_add_test(tc, test_urls);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
