/*
 * check_skip.h - skips are skips: how a Check suite runs test cases that need something of the
 * machine (root, a tmpfs mount, ptrace, a CPU feature, a file outside the repository).
 *
 * Such a case gets its own TCase, made with dcpi_check_tcase(NAME) (a TCase tagged with its own
 * name), and a need in main's table: {NAME, why_not}, where why_not() really tries what the case
 * needs, in the parent before any case runs, and returns NULL when it is there or a line saying
 * what is missing and why the case needs it. main ends with
 *     return dcpi_check_run(s, needs, n);
 * which
 *   - with CK_RUN_CASE=NAME (ctest's check_SUITE_NAME entry): prints "SKIP: NAME: why" and
 *     returns 77 (ctest's SKIP_RETURN_CODE) when the need fails, otherwise runs that case only;
 *   - without it (ctest's check_SUITE entry, which sets CK_EXCLUDE_CASE to the cases registered
 *     on their own; Check 0.15 has no CK_EXCLUDE_CASE, so it is read here and the cases are left
 *     out by tag): runs every other case, and when a need fails leaves its case out, prints
 *     "SKIP: NAME: why" and returns 77 if the rest passed, so that no run says "passed" for a
 *     case that did not run;
 *   - returns 1 when a test failed or when no test ran at all (a misspelt case name).
 * Something this project always builds (dcpicat, the tools, the plugins) is never a need: a test
 * asserts it is there and fails when it is not.
 */
#ifndef DCPI_CHECK_SKIP_H
#define DCPI_CHECK_SKIP_H

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dcpi_check_need {
    const char *tcase;            /* the TCase's name (and tag) */
    const char *(*why_not)(void); /* NULL when the need is met, else what is missing and why */
};

/* A TCase named and tagged NAME: dcpi_check_run leaves it out by its tag. */
static inline TCase *dcpi_check_tcase(const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_tags(tc, name);
    return tc;
}

/* Is name one of the space-separated words of list? */
static inline int dcpi_check_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        p += strspn(p, " ");
        size_t w = strcspn(p, " ");
        if (w == n && strncmp(p, name, n) == 0)
            return 1;
        p += w;
    }
    return 0;
}

static inline int dcpi_check_run(Suite *s, const struct dcpi_check_need *needs, size_t n)
{
    const char *only = getenv("CK_RUN_CASE");
    const char *excluded = getenv("CK_EXCLUDE_CASE");
    char exclude[1024] = "";
    int skipped = 0;
    if (only && !*only)
        only = NULL;
    for (size_t i = 0; i < n; i++) {
        if (only ? strcmp(only, needs[i].tcase) != 0 : dcpi_check_listed(excluded, needs[i].tcase))
            continue;
        const char *why = needs[i].why_not();
        if (!why)
            continue;
        printf("SKIP: %s: %s\n", needs[i].tcase, why);
        fflush(stdout);
        if (only) {
            srunner_free(srunner_create(s)); /* frees the suite (LeakSanitizer) */
            return 77;
        }
        skipped++;
        strncat(exclude, " ", sizeof exclude - strlen(exclude) - 1);
        strncat(exclude, needs[i].tcase, sizeof exclude - strlen(exclude) - 1);
    }
    if (!only && excluded) { /* registered as ctest entries of their own */
        strncat(exclude, " ", sizeof exclude - strlen(exclude) - 1);
        strncat(exclude, excluded, sizeof exclude - strlen(exclude) - 1);
    }
    SRunner *sr = srunner_create(s);
    srunner_run_tagged(sr, NULL, only, NULL, exclude[strspn(exclude, " ")] ? exclude : NULL,
                       CK_NORMAL);
    int ran = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (ran == 0) {
        printf("FAIL: no test ran (CK_RUN_CASE=%s): no such test case?\n", only ? only : "");
        return 1;
    }
    if (failed)
        return 1;
    if (skipped)
        printf("%d test case%s skipped (see SKIP above); the rest passed\n", skipped,
               skipped > 1 ? "s" : "");
    return skipped ? 77 : 0;
}

#endif
