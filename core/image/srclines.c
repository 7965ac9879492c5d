/*
 * srclines.c - ELF vaddr to (source file, line) through libdwfl: the file is reported offline,
 * libdwfl finds its DWARF (in the file, by build-id under the debug directories, through
 * .gnu_debuglink, or, with DEBUGINFOD_URLS set, from debuginfod: libdw's own client, loaded by
 * libdw as core/image/debuginfod.c loads dcpi's, with the same cache, so a debug file fetched
 * for the symbols is not fetched again) and answers lookups from the CU line tables. Source
 * files are read whole.
 */
#include "core/image/srclines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
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

static Dwarf_Die *cu_of(const dcpi_srclines_t *sl, Dwarf_Addr a, Dwarf_Addr *cubias);

/* The line through the CU's table when libdwfl finds no CU (no .debug_aranges: clang). */
static int lookup_by_cu(const dcpi_srclines_t *sl, uint64_t addr, const char **file, int *line)
{
    Dwarf_Addr cubias = 0;
    Dwarf_Die *cu = cu_of(sl, addr + sl->bias, &cubias);
    Dwarf_Line *dl = cu ? dwarf_getsrc_die(cu, addr + sl->bias - cubias) : NULL;
    int lineno = 0;
    const char *name = dl ? dwarf_linesrc(dl, NULL, NULL) : NULL;
    if (!name || dwarf_lineno(dl, &lineno) != 0 || lineno <= 0)
        return DCPI_ENOENT;
    *file = name;
    *line = lineno;
    return 0;
}

int dcpi_srclines_lookup(const dcpi_srclines_t *sl, uint64_t addr, const char **file, int *line)
{
    *file = NULL;
    *line = 0;
    if (!sl)
        return DCPI_ENOENT;
    Dwfl_Line *dl = dwfl_module_getsrc(sl->mod, addr + sl->bias);
    if (!dl)
        return lookup_by_cu(sl, addr, file, line);
    int lineno = 0;
    const char *name = dwfl_lineinfo(dl, NULL, &lineno, NULL, NULL, NULL);
    if (!name || lineno <= 0)
        return DCPI_ENOENT;
    *file = name;
    *line = lineno;
    return 0;
}

/* ---- inline chains ---- */

#define DW_AT_GNU_DISCRIMINATOR 0x2136 /* not in elfutils' dwarf.h */

static const char *frame_name(Dwarf_Die *die)
{
    static const unsigned names[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
    Dwarf_Attribute a;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (dwarf_attr_integrate(die, names[i], &a))
            return dwarf_formstring(&a);
    return NULL;
}

static unsigned udata_of(Dwarf_Die *die, unsigned name)
{
    Dwarf_Attribute a;
    Dwarf_Word w = 0;
    if (dwarf_attr(die, name, &a) && dwarf_formudata(&a, &w) == 0)
        return (unsigned)w;
    return 0;
}

/* The leaf's line and discriminator from the CU's line table (libdwfl's own lookup needs
 * .debug_aranges, which clang does not write). */
static void leaf_position(Dwarf_Die *cu, Dwarf_Addr a, dcpi_srcframe_t *leaf)
{
    Dwarf_Line *line = dwarf_getsrc_die(cu, a);
    int lineno = 0;
    unsigned disc = 0;
    if (line && dwarf_lineno(line, &lineno) == 0 && lineno > 0)
        leaf->line = lineno;
    if (line && dwarf_linediscriminator(line, &disc) == 0)
        leaf->disc = disc;
}

static void reverse_frames(dcpi_srcframe_t *f, int n)
{
    for (int i = 0; i < n / 2; i++) {
        dcpi_srcframe_t t = f[i];
        f[i] = f[n - 1 - i];
        f[n - 1 - i] = t;
    }
}

static int is_function(Dwarf_Die *d)
{
    int tag = dwarf_tag(d);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* The CU holding module address a: through .debug_aranges, else (clang writes none) the
 * first CU whose ranges hold it. */
static Dwarf_Die *cu_of(const dcpi_srclines_t *sl, Dwarf_Addr a, Dwarf_Addr *cubias)
{
    Dwarf_Die *cu = dwfl_module_addrdie(sl->mod, a, cubias);
    if (cu)
        return cu;
    for (cu = dwfl_module_nextcu(sl->mod, NULL, cubias); cu;
         cu = dwfl_module_nextcu(sl->mod, cu, cubias))
        if (dwarf_haspc(cu, a - *cubias) == 1)
            return cu;
    return NULL;
}

/* The function scopes of the innermost function holding a, innermost first, through the
 * concrete DIE tree (dwarf_getscopes continues an inlined instance with its abstract
 * origin's scopes; dwarf_getscopes_die follows the DIEs' real parents). */
static int chain_of(Dwarf_Die *cu, Dwarf_Addr a, Dwarf_Die **chain)
{
    Dwarf_Die *scopes = NULL;
    int ns = dwarf_getscopes(cu, a, &scopes), n = -1;
    for (int i = 0; i < ns && n < 0; i++)
        if (is_function(&scopes[i]))
            n = dwarf_getscopes_die(&scopes[i], chain);
    free(scopes);
    return n;
}

int dcpi_srclines_frames(const dcpi_srclines_t *sl, uint64_t addr, dcpi_srcframe_t *f, int max)
{
    Dwarf_Addr cubias = 0;
    Dwarf_Die *cu = sl ? cu_of(sl, addr + sl->bias, &cubias) : NULL;
    Dwarf_Addr a = addr + (sl ? sl->bias : 0) - cubias; /* the DWARF address */
    Dwarf_Die *chain = NULL;
    int nc = cu ? chain_of(cu, a, &chain) : -1, n = 0;
    unsigned call_line = 0, call_disc = 0;
    for (int i = 0; i < nc && n < max; i++) { /* innermost scope first */
        if (!is_function(&chain[i]))
            continue;
        dcpi_srcframe_t *fr = &f[n++];
        *fr = (dcpi_srcframe_t){
            .name = frame_name(&chain[i]), .line = (int)call_line, .disc = call_disc};
        dwarf_decl_line(&chain[i], &fr->decl_line);
        if (n == 1)
            leaf_position(cu, a, fr);
        if (dwarf_tag(&chain[i]) == DW_TAG_subprogram)
            break;
        /* an inlined call: its position is in the next (outer) frame */
        call_line = udata_of(&chain[i], DW_AT_call_line);
        call_disc = udata_of(&chain[i], DW_AT_GNU_DISCRIMINATOR);
    }
    free(chain);
    if (n == 0)
        return DCPI_ENOENT;
    reverse_frames(f, n);
    return n;
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
