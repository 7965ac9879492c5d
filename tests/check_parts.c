/*
 * check_parts.c - core/daemon/parts: every part declared in core/daemon/ (a line starting with
 * DCPI_DAEMON_PART( in a .c file there) is registered, in this program and in dcpid (its
 * registration's symbol, nm), once each, sorted by order (no two parts share one).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/daemon/part.h"

#define MAXP 64

/* The names of the parts declared in core/daemon/'s sources into names; how many. */
static int declared(char names[][32], int max)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/../../core/daemon", DCPI_TEST_DATA);
    DIR *dp = opendir(dir);
    ck_assert_ptr_nonnull(dp);
    int n = 0;
    for (struct dirent *de; (de = readdir(dp)) != NULL;) {
        size_t l = strlen(de->d_name);
        if (l < 3 || strcmp(de->d_name + l - 2, ".c") != 0)
            continue;
        char path[8300], line[512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "DCPI_DAEMON_PART(", 17) == 0 && n < max)
                sscanf(line + 17, "%31[a-z0-9_]", names[n++]);
        fclose(f);
    }
    closedir(dp);
    return n;
}

START_TEST(test_registered)
{
    char names[MAXP][32];
    int n = declared(names, MAXP);
    ck_assert_int_ge(n, 9);
    size_t k;
    const dcpi__part_ops_t *const *t = dcpi__parts(&k);
    ck_assert_uint_eq(k, (size_t)n);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (size_t j = 0; j < k; j++)
            found += strcmp(t[j]->name, names[i]) == 0;
        ck_assert_msg(found == 1, "part %s registered %d times", names[i], found);
    }
    for (size_t j = 1; j < k; j++)
        ck_assert_msg(t[j - 1]->order < t[j]->order, "parts %s and %s: order %d, %d",
                      t[j - 1]->name, t[j]->name, t[j - 1]->order, t[j]->order);
    char list[512];
    dcpi__parts_names(list, sizeof list);
    ck_assert_ptr_nonnull(strstr(list, "kernel"));
    ck_assert_ptr_nonnull(strstr(list, "vtrace"));
}
END_TEST

/* dcpid links the same way: each declared part's registration is in it. */
START_TEST(test_in_dcpid)
{
    char names[MAXP][32], cmd[4400], line[512];
    int n = declared(names, MAXP);
    snprintf(cmd, sizeof cmd, "nm %s/dcpid", DCPI_TEST_BIN);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    int found[MAXP] = {0};
    while (fgets(line, sizeof line, p))
        for (int i = 0; i < n; i++) {
            char sym[96];
            snprintf(sym, sizeof sym, " part_%.31s_registered\n", names[i]);
            found[i] += strstr(line, sym) != NULL;
        }
    ck_assert_int_eq(pclose(p), 0);
    for (int i = 0; i < n; i++)
        ck_assert_msg(found[i] == 1, "dcpid: part %s: %d registrations", names[i], found[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("parts");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_registered);
    tcase_add_test(tc, test_in_dcpid);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
