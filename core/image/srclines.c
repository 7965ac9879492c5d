/*
 * srclines.c - ELF vaddr to (source file, line) through libdwfl: the file is reported offline,
 * libdwfl finds its DWARF (in the file, by build-id under the debug directories, through
 * .gnu_debuglink, or, with DEBUGINFOD_URLS set, from debuginfod: libdw's own client, loaded by
 * libdw as core/image/debuginfod.c loads dcpi's, with the same cache, so a debug file fetched
 * for the symbols is not fetched again) and answers lookups from the CU line tables. Source
 * files are read whole.
 */
#include "core/image/srclines.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

struct dcpi_srclines {
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf_Addr bias; /* module address = DWARF address + bias */
};

static char *debuginfo_path;

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

/* DCPI_EFORMAT unless the file exists and is readable (then -errno). */
static int unreadable(const char *path, char *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return dcpi__errf(err, -errno, "%s: %s", path, strerror(errno));
    return dcpi__errf(err, DCPI_EFORMAT, "%s: %s", path, dwfl_errmsg(-1));
}

int dcpi_srclines_open(const char *path, dcpi_srclines_t **out, char *err)
{
    if (!path || !out)
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    *out = NULL;
    dcpi_srclines_t *sl = calloc(1, sizeof(*sl));
    if (!sl)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", path);
    int rc = 0;
    sl->dwfl = dwfl_begin(&offline_callbacks);
    if (!sl->dwfl) {
        rc = dcpi__errf(err, DCPI_ENOMEM, "%s: %s", path, dwfl_errmsg(-1));
        goto out_sl;
    }
    dwfl_report_begin(sl->dwfl);
    sl->mod = dwfl_report_offline(sl->dwfl, path, path, -1);
    dwfl_report_end(sl->dwfl, NULL, NULL);
    if (!sl->mod) {
        rc = unreadable(path, err);
        goto out_sl;
    }
    if (!dwfl_module_getdwarf(sl->mod, &sl->bias)) {
        rc = dcpi__errf(err, DCPI_ENOENT, "%s: no DWARF line information", path);
        goto out_sl;
    }
    *out = sl;
    return 0;
out_sl:
    dcpi_srclines_free(sl);
    return rc;
}

void dcpi_srclines_free(dcpi_srclines_t *sl)
{
    if (!sl)
        return;
    if (sl->dwfl)
        dwfl_end(sl->dwfl);
    free(sl);
}

int dcpi_srclines_lookup(const dcpi_srclines_t *sl, uint64_t addr, const char **file, int *line)
{
    *file = NULL;
    *line = 0;
    if (!sl)
        return DCPI_ENOENT;
    Dwfl_Line *dl = dwfl_module_getsrc(sl->mod, addr + sl->bias);
    if (!dl)
        return DCPI_ENOENT;
    int lineno = 0;
    const char *name = dwfl_lineinfo(dl, NULL, &lineno, NULL, NULL, NULL);
    if (!name || lineno <= 0)
        return DCPI_ENOENT;
    *file = name;
    *line = lineno;
    return 0;
}

/* ---- source text ---- */

int dcpi_srctext_read(const char *path, dcpi_srctext_t *out)
{
    *out = (dcpi_srctext_t){0};
    size_t len = 0;
    void *text = NULL;
    int rc = dcpi__read_file(path, 0, &text, &len, NULL);
    if (rc < 0)
        return rc;
    out->buf = text;
    size_t nl = 1;
    for (size_t i = 0; i < len; i++)
        nl += out->buf[i] == '\n';
    out->lines = malloc(nl * sizeof(*out->lines));
    if (!out->lines) {
        dcpi_srctext_free(out);
        return DCPI_ENOMEM;
    }
    char *p = out->buf, *end = out->buf + len;
    while (p < end) {
        char *e = memchr(p, '\n', (size_t)(end - p));
        if (e)
            *e = '\0';
        out->lines[out->n++] = p;
        p = e ? e + 1 : end;
    }
    return 0;
}

void dcpi_srctext_free(dcpi_srctext_t *t)
{
    if (!t)
        return;
    free(t->lines);
    free(t->buf);
    *t = (dcpi_srctext_t){0};
}

const char *dcpi_srctext_line(const dcpi_srctext_t *t, int i)
{
    if (!t || i < 1 || (size_t)i > t->n)
        return NULL;
    return t->lines[i - 1];
}
