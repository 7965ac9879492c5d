/*
 * tp-common.h - shared pieces of the loader's test plugins (the .c files of tests/plugins): a
 * hook log and trivial required entries, so each test plugin differs from good.c in one rule.
 *
 * The hook log: when $DCPI_TEST_HOOK_LOG names a file, tp_log appends one line to it, so the
 * tests can see which hooks ran and in which order (each Check test runs in its own process).
 */
#ifndef DCPI_TESTS_TP_COMMON_H
#define DCPI_TESTS_TP_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include "dcpi/vprofiler.h"

static inline void tp_log(const char *what, const char *name)
{
    const char *path = getenv("DCPI_TEST_HOOK_LOG");
    if (!path)
        return;
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "%s %s\n", what, name);
    fclose(f);
}

/* The loader never calls these; they only have to exist. */
static inline trace_vlist_table_t *tp_prof_init(void)
{
    return NULL;
}

static inline int tp_prof_process(unsigned pid, trace_parser_t *parser, vsample_t **vsamples)
{
    (void)pid;
    (void)parser;
    *vsamples = NULL;
    return 0;
}

static inline const char *tp_preface(const trace_inst_t *inst)
{
    (void)inst;
    return "tp";
}

/* A plugin whose hooks log "load NAME" / "unload NAME". */
#define TP_HOOKS(NAME)                                                                             \
    static const char *tp_name(void)                                                               \
    {                                                                                              \
        return NAME;                                                                               \
    }                                                                                              \
    static int tp_load(void)                                                                       \
    {                                                                                              \
        tp_log("load", NAME);                                                                      \
        return 0;                                                                                  \
    }                                                                                              \
    static void tp_unload(void)                                                                    \
    {                                                                                              \
        tp_log("unload", NAME);                                                                    \
    }

#endif
