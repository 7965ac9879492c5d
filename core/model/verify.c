/*
 * verify.c - -strict's check of an epoch before a tool prints anything: every file a tool may
 * read besides the profiles (their splits by process, value profiles, stack files, the symbol
 * snapshots dcpid kept) parses, else the first damaged one is the error (see profset.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/base/err.h"
#include "core/model/profset.h"
#include "core/store/db.h"
#include "core/store/procprof.h"
#include "core/store/stackprof.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"

/* Parse one file of a kind (suffix); 0 or the error with "FILE: reason" in err. */
static int parse_one(const char *suffix, const char *path, char *err)
{
    int rc;
    if (!strcmp(suffix, DCPI_PROCPROF_SUFFIX)) {
        dcpi_procprof_t pp = {0};
        rc = dcpi_procprof_read(path, &pp, err);
        if (rc == 0 && pp.torn) /* a writer killed in a flush: that flush's split is lost */
            rc = dcpi__errf(err, DCPI_ETRUNC, "%s: %zu bytes of an unfinished append at its end",
                            path, pp.torn);
        dcpi_procprof_free(&pp);
    } else if (!strcmp(suffix, ".vprof")) {
        dcpi_vprof_t *vp = NULL;
        rc = dcpi_vprof_read(path, &vp, err);
        dcpi_vprof_free(vp);
    } else {
        dcpi_stackprof_t *sp = NULL;
        rc = dcpi_stackprof_read(path, &sp, err);
        dcpi_stackprof_free(sp);
    }
    if (rc < 0 && err && !*err)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    return rc;
}

static int verify_kind(const char *db, const char *epoch, const char *platform, const char *suffix,
                       char *err)
{
    dcpi_db_file_t *files = NULL;
    size_t n = 0;
    int rc = dcpi_db_list_files(db, epoch, platform, suffix, &files, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (err)
            err[0] = '\0';
        rc = parse_one(suffix, files[i].path, err);
    }
    free(files);
    return rc;
}

static int verify_symbols(const dcpi_profset_t *set, char *err)
{
    for (size_t i = 0; i < set->nimages; i++) {
        dcpi_symtab_t *st = NULL;
        char why[DCPI_ERRLEN] = "";
        int damaged = 0;
        int rc = dcpi_profset_open_symbols(&set->images[i], &st, why, &damaged);
        dcpi_symtab_free(st);
        if (rc < 0 && damaged)
            return dcpi__errf(err, rc, "%s", why);
    }
    return 0;
}

int dcpi_profset_verify(const char *db, const char *epoch, const char *platform,
                        const dcpi_profset_t *set, char *err)
{
    static const char *const kinds[] = {DCPI_PROCPROF_SUFFIX, ".vprof", ".stk"};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < sizeof(kinds) / sizeof(kinds[0]); k++)
        rc = verify_kind(db, epoch, platform, kinds[k], err);
    return rc < 0 ? rc : verify_symbols(set, err);
}
