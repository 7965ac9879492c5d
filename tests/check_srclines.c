/*
 * check_srclines.c - DWARF line lookups: a gcc -g -O0 program in a temporary directory, its
 * functions' addresses (nm) and a few addresses inside them mapped to file and line, compared
 * with addr2line; a program without -g, a missing file, and the source text reader.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/image/srclines.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

static const char *main_src = "#include \"helper.h\"\n"
                              "\n"
                              "int first(int x)\n"
                              "{\n"
                              "    int y = x * 3;\n"
                              "    return y + 1;\n"
                              "}\n"
                              "\n"
                              "int main(int argc, char **argv)\n"
                              "{\n"
                              "    (void)argv;\n"
                              "    return first(argc) + second(argc) > 100;\n"
                              "}\n";

static const char *helper_h = "int second(int x);\n";

static const char *helper_src = "#include \"helper.h\"\n"
                                "int second(int x)\n"
                                "{\n"
                                "    return x ^ 5;\n"
                                "}\n";

static char tmpdir[256];
static char prog[512];

static void write_file(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void shell(const char *cmd)
{
    ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

/* The first line of a command's output (without '\n'), into out. */
static void capture(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    out[0] = '\0';
    ck_assert_ptr_nonnull(fgets(out, (int)len, p));
    out[strcspn(out, "\n")] = '\0';
    pclose(p);
}

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_srclines.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    write_file("main.c", main_src);
    write_file("helper.h", helper_h);
    write_file("helper.c", helper_src);
    snprintf(prog, sizeof prog, "%s/prog", tmpdir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && gcc -g -O0 -o prog main.c helper.c", tmpdir);
    shell(cmd);
    snprintf(cmd, sizeof cmd, "cd '%s' && gcc -O0 -g0 -o nodebug main.c helper.c", tmpdir);
    shell(cmd);
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* Address of a function (nm), and its size into *size when not NULL (nm -S). */
static uint64_t sym_addr_size(const char *name, uint64_t *size)
{
    char cmd[1024], out[256];
    snprintf(cmd, sizeof cmd, "nm -S '%s' | awk '$4 == \"%s\" {print $1, $2}'", prog, name);
    capture(cmd, out, sizeof out);
    ck_assert_msg(out[0], "no symbol %s in %s", name, prog);
    char *end = NULL;
    uint64_t addr = strtoull(out, &end, 16);
    if (size)
        *size = strtoull(end, NULL, 16);
    return addr;
}

static uint64_t sym_addr(const char *name)
{
    return sym_addr_size(name, NULL);
}

/* addr2line's "FILE:LINE" for addr; discriminators (" (discriminator N)") are cut off. */
static void addr2line(uint64_t addr, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "addr2line -e '%s' 0x%llx", prog, (unsigned long long)addr);
    capture(cmd, out, len);
    out[strcspn(out, " ")] = '\0';
}

static void check_against_addr2line(const dcpi_srclines_t *sl, uint64_t addr)
{
    char want[1024], got[1024];
    const char *file = NULL;
    int line = 0;
    addr2line(addr, want, sizeof want);
    ck_assert_int_eq(dcpi_srclines_lookup(sl, addr, &file, &line), 0);
    snprintf(got, sizeof got, "%s:%d", file, line);
    ck_assert_msg(strcmp(got, want) == 0, "0x%llx: dcpi says %s, addr2line says %s",
                  (unsigned long long)addr, got, want);
}

START_TEST(functions_map_to_their_lines)
{
    dcpi_srclines_t *sl = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_srclines_open(prog, &sl, err) == 0, "%s", err);
    const char *file = NULL;
    int line = 0;
    char want_main[600], want_helper[600];
    snprintf(want_main, sizeof want_main, "%s/main.c", tmpdir);
    snprintf(want_helper, sizeof want_helper, "%s/helper.c", tmpdir);

    ck_assert_int_eq(dcpi_srclines_lookup(sl, sym_addr("first"), &file, &line), 0);
    ck_assert_str_eq(file, want_main);
    ck_assert_int_eq(line, 4); /* the opening brace: the prologue's line at -O0 */
    ck_assert_int_eq(dcpi_srclines_lookup(sl, sym_addr("second"), &file, &line), 0);
    ck_assert_str_eq(file, want_helper);
    ck_assert_int_eq(line, 3);
    ck_assert_int_eq(dcpi_srclines_lookup(sl, sym_addr("main"), &file, &line), 0);
    ck_assert_str_eq(file, want_main);
    ck_assert_int_eq(line, 10);
    dcpi_srclines_free(sl);
}
END_TEST

START_TEST(every_byte_agrees_with_addr2line)
{
    dcpi_srclines_t *sl = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_srclines_open(prog, &sl, err) == 0, "%s", err);
    static const char *funcs[] = {"first", "second", "main"};
    int lines_seen = 0, last = 0;
    for (size_t f = 0; f < sizeof funcs / sizeof *funcs; f++) {
        uint64_t size = 0, a = sym_addr_size(funcs[f], &size);
        ck_assert_uint_gt(size, 4);
        for (uint64_t off = 0; off < size; off += 3) {
            check_against_addr2line(sl, a + off);
            const char *file = NULL;
            int line = 0;
            dcpi_srclines_lookup(sl, a + off, &file, &line);
            lines_seen += line != last;
            last = line;
        }
    }
    ck_assert_int_ge(lines_seen, 5); /* the addresses did cover several lines */
    dcpi_srclines_free(sl);
}
END_TEST

START_TEST(outside_any_line_table)
{
    dcpi_srclines_t *sl = NULL;
    ck_assert_int_eq(dcpi_srclines_open(prog, &sl, NULL), 0);
    const char *file = "x";
    int line = 7;
    ck_assert_int_eq(dcpi_srclines_lookup(sl, 0x10, &file, &line), DCPI_ENOENT);
    ck_assert_ptr_null(file);
    ck_assert_int_eq(line, 0);
    dcpi_srclines_free(sl);
}
END_TEST

START_TEST(no_debug_info_is_enoent)
{
    char path[600], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/nodebug", tmpdir);
    dcpi_srclines_t *sl = (dcpi_srclines_t *)1;
    ck_assert_int_eq(dcpi_srclines_open(path, &sl, err), DCPI_ENOENT);
    ck_assert_ptr_null(sl);
    ck_assert_msg(strstr(err, "nodebug: no DWARF line information"), "err: %s", err);
}
END_TEST

START_TEST(missing_file_is_an_error)
{
    char path[600], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/does-not-exist", tmpdir);
    dcpi_srclines_t *sl = NULL;
    ck_assert_int_eq(dcpi_srclines_open(path, &sl, err), DCPI_ENOENT);
    ck_assert_msg(strstr(err, "does-not-exist: No such file"), "err: %s", err);
    snprintf(path, sizeof path, "%s/main.c", tmpdir); /* not ELF */
    ck_assert_int_lt(dcpi_srclines_open(path, &sl, err), 0);
    ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "err: %s", err);
}
END_TEST

START_TEST(source_text_lines)
{
    char path[600];
    snprintf(path, sizeof path, "%s/main.c", tmpdir);
    dcpi_srctext_t t;
    ck_assert_int_eq(dcpi_srctext_read(path, &t), 0);
    ck_assert_uint_eq(t.n, 13);
    ck_assert_str_eq(dcpi_srctext_line(&t, 3), "int first(int x)");
    ck_assert_str_eq(dcpi_srctext_line(&t, 13), "}");
    ck_assert_str_eq(dcpi_srctext_line(&t, 2), "");
    ck_assert_ptr_null(dcpi_srctext_line(&t, 0));
    ck_assert_ptr_null(dcpi_srctext_line(&t, 14));
    dcpi_srctext_free(&t);
    snprintf(path, sizeof path, "%s/none.c", tmpdir);
    ck_assert_int_eq(dcpi_srctext_read(path, &t), DCPI_ENOENT);
}
END_TEST

static Suite *srclines_suite(void)
{
    Suite *s = suite_create("srclines");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, functions_map_to_their_lines);
    tcase_add_test(tc, every_byte_agrees_with_addr2line);
    tcase_add_test(tc, outside_any_line_table);
    tcase_add_test(tc, no_debug_info_is_enoent);
    tcase_add_test(tc, missing_file_is_an_error);
    tcase_add_test(tc, source_text_lines);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    /* gcc (build-essential) and binutils are installed by make test-deps: missing is a failure. */
    if (system("command -v gcc >/dev/null && command -v addr2line >/dev/null && "
               "command -v nm >/dev/null") != 0) {
        printf(
            "FAIL: gcc or binutils (nm, addr2line) not installed (make test-deps installs them)\n");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(srclines_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
