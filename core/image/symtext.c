/*
 * symtext.c - symbol tables from text: kallsyms files (plain or gzip) and perf maps
 * (/tmp/perf-PID.map of JIT compilers), each a parser of one line over one reader of the
 * file's lines (open_lines).
 */
#include "core/image/symbols.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/image/debuginfod.h"
#include "core/image/image.h"
#include "core/image/symbols-int.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

/* ---- kallsyms --------------------------------------------------------------------------- */

static int kallsyms_rank(char type)
{
    return type == 'T' ? 0 : (type == 'W' || type == 'w') ? 1 : 2;
}

/* Parse one NUL-terminated line in place: "ADDR TYPE NAME[\t[MOD]]". Returns 1 to keep it, 0 to
 * leave it out (not code, or address 0 as kptr_restrict shows it), -1 when it is no such line. */
static int parse_kallsyms_line(char *line, ent_t *e, const char *pool)
{
    char *end = NULL;
    uint64_t addr = strtoull(line, &end, 16);
    if (end == line || *end != ' ' || !end[1] || end[2] != ' ' || !end[3])
        return -1;
    char type = end[1];
    if (addr == 0 || !strchr("tTwW", type))
        return 0;
    char *name = end + 3;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        if ((*c < 0x20 && *c != '\t') || *c == 0x7f)
            return -1; /* control bytes in a name: damaged, never printed raw */
    char *tab = strchr(name, '\t');
    if (tab)
        *tab = ' '; /* "name\t[mod]" becomes "name [mod]" */
    *e = (ent_t){
        .addr = addr, .name = (size_t)(name - pool), .raw = NO_RAW, .rank = kallsyms_rank(type)};
    return 1;
}

/* ---- perf maps ---------------------------------------------------------------------------- */

/* Parse one line in place: "START SIZE NAME" (hex, hex, the rest). 1 to keep it, 0 to leave it
 * out (size 0, an empty line), -1 when it is no such line. */
static int parse_perfmap_line(char *line, ent_t *e, const char *pool)
{
    if (!*line)
        return 0; /* an empty line */
    char *end = NULL, *end2 = NULL;
    uint64_t addr = strtoull(line, &end, 16);
    if (end == line || *end != ' ')
        return -1;
    uint64_t size = strtoull(end + 1, &end2, 16);
    if (end2 == end + 1 || *end2 != ' ' || !end2[1])
        return -1;
    for (const unsigned char *c = (const unsigned char *)end2 + 1; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return -1; /* control bytes in a name: damaged, never printed raw */
    if (size == 0 || addr == 0)
        return 0;
    *e = (ent_t){.addr = addr, .size = size, .name = (size_t)(end2 + 1 - pool), .raw = NO_RAW};
    return 1;
}

/* ---- both: a file of lines --------------------------------------------------------------- */

typedef int (*parse_line_fn)(char *line, ent_t *e, const char *pool);

/* Every line of the pool through parse; a line it refuses (a damaged file: binary, cut or
 * another format) fails the whole file with DCPI_EFORMAT and its number in *bad. */
static int parse_lines(builder_t *b, parse_line_fn parse, size_t *bad)
{
    char *p = b->pool, *end = b->pool + b->plen;
    for (size_t lineno = 1; p < end; lineno++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        ent_t e;
        int kept = memchr(p, '\0', (size_t)(stop - p)) ? -1 : 0;
        if (nl)
            *nl = '\0';
        if (kept == 0)
            kept = parse(p, &e, b->pool);
        if (kept < 0) {
            *bad = lineno;
            return DCPI_EFORMAT;
        }
        if (kept > 0) {
            int rc = dcpi__sym_push(b, e);
            if (rc < 0)
                return rc;
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* The table of the file at path (plain or gzip), line by line through parse; form names the
 * lines' form in the error of a line that is not one. */
static int open_lines(const char *path, parse_line_fn parse, const char *form, dcpi_symtab_t **out,
                      char *err)
{
    if (!path || !out)
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    *out = NULL;
    builder_t b = {0};
    void *text = NULL;
    int rc = dcpi__read_file_gz(path, 0, &text, &b.plen, err);
    if (rc < 0)
        return rc;
    b.pool = text;
    size_t bad = 0;
    rc = parse_lines(&b, parse, &bad);
    if (rc == 0)
        rc = dcpi__sym_finish(&b, out);
    if (rc == DCPI_EFORMAT)
        dcpi__errf(err, rc, "%s: line %zu is not a %s", path, bad, form);
    else if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    dcpi__sym_builder_free(&b);
    return rc;
}

int dcpi_symtab_open_kallsyms(const char *path, dcpi_symtab_t **out, char *err)
{
    return open_lines(path, parse_kallsyms_line, "symbol line (ADDRESS TYPE NAME)", out, err);
}

int dcpi_symtab_open_perfmap(const char *path, dcpi_symtab_t **out, char *err)
{
    return open_lines(path, parse_perfmap_line, "perf map line (START SIZE NAME)", out, err);
}
