/*
 * symelf.c - symbol tables of ELF files: .symtab/.dynsym read with libelf (with a separate debug
 * file, symdebug.c, when the file has no .symtab), NAME@plt entries, and the functions no symbol
 * names, from .eh_frame's function starts.
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

/* ---- ELF -------------------------------------------------------------------------------- */

static int bind_rank(unsigned bind)
{
    switch (bind) {
    case STB_GLOBAL:
    case STB_GNU_UNIQUE:
        return 0;
    case STB_WEAK:
        return 1;
    default:
        return 2;
    }
}

/* The name at offset off of the string table strtab, read with pread into buf[cap] when the file
 * is the builder's (no page of the string table mapped: the names of a symbol table are spread
 * over all of it, tens of MB in a large program, and every name read through the mapping would
 * fault in a 64 KiB window around it); through libelf otherwise, or for a longer name. NULL when
 * it is no name (as elf_strptr: off past the table, or no NUL before its end). */
static const char *sym_name(const builder_t *b, Elf *e, size_t strtab, size_t off, char *buf,
                            size_t cap)
{
    GElf_Shdr sh;
    Elf_Scn *scn = b->map ? elf_getscn(e, strtab) : NULL;
    if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB || off >= sh.sh_size ||
        sh.sh_offset > b->maplen || sh.sh_size > b->maplen - sh.sh_offset)
        return elf_strptr(e, strtab, off);
    size_t want = sh.sh_size - off < cap ? (size_t)(sh.sh_size - off) : cap;
    ssize_t n = pread(b->fd, buf, want, (off_t)(sh.sh_offset + off));
    if (n > 0 && memchr(buf, '\0', (size_t)n))
        return buf;
    if (n == (ssize_t)want && want == cap)
        return elf_strptr(e, strtab, off); /* longer than buf */
    return n == (ssize_t)want ? NULL : elf_strptr(e, strtab, off);
}

static int add_section_syms(builder_t *b, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
    char buf[1024];
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data || sh->sh_entsize == 0)
        return 0;
    size_t count = sh->sh_size / sh->sh_entsize;
    for (size_t i = 0; i < count; i++) {
        if (i % DROP_EVERY == DROP_EVERY - 1)
            dcpi__sym_drop_map(b);
        GElf_Sym sym;
        if (!gelf_getsym(data, (int)i, &sym))
            break;
        unsigned type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
            sym.st_value == 0)
            continue;
        const char *name = sym_name(b, e, sh->sh_link, sym.st_name, buf, sizeof buf);
        if (!name || !*name)
            continue;
        int rc = dcpi__sym_add_named(b, sym.st_value, sym.st_size,
                                     bind_rank(GELF_ST_BIND(sym.st_info)), name);
        GElf_Shdr in;
        Elf_Scn *home = sym.st_shndx < SHN_LORESERVE ? elf_getscn(e, sym.st_shndx) : NULL;
        if (rc == 0 && sym.st_size == 0 && home && gelf_getshdr(home, &in) &&
            sym.st_value >= in.sh_addr && sym.st_value < in.sh_addr + in.sh_size)
            b->v[b->n - 1].limit = in.sh_addr + in.sh_size; /* _init does not cover the PLT */
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Add the symbols of the sections of type want_symtab/want_dynsym; *has_symtab says whether
 * a .symtab was seen. */
int dcpi__sym_add_elf(builder_t *b, Elf *e, int want_dynsym, int *has_symtab)
{
    Elf_Scn *scn = NULL;
    *has_symtab = 0;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type != SHT_SYMTAB && !(want_dynsym && sh.sh_type == SHT_DYNSYM))
            continue;
        *has_symtab |= sh.sh_type == SHT_SYMTAB;
        int rc = add_section_syms(b, e, scn, &sh);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The section named name, or NULL. */
static Elf_Scn *section_named(Elf *e, const char *name, GElf_Shdr *sh)
{
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        const char *n;
        if (gelf_getshdr(scn, sh) && (n = elf_strptr(e, shstrndx, sh->sh_name)) && !strcmp(n, name))
            return scn;
    }
    return NULL;
}

/* NAME@plt for every PLT entry, from the .rela.plt relocations, as perf names them: entry i at
 * .plt.sec + 16 i (IBT binaries) or .plt + 16 (i + 1) (after the PLT0 header). */
static int add_plt_syms(builder_t *b, Elf *e)
{
    GElf_Shdr rsh, psh, dsh;
    Elf_Scn *rel = section_named(e, ".rela.plt", &rsh);
    Elf_Scn *plt = section_named(e, ".plt.sec", &psh);
    uint64_t first = 0;
    if (!plt) {
        plt = section_named(e, ".plt", &psh);
        first = 16;
    }
    Elf_Scn *dyn = rel ? elf_getscn(e, rsh.sh_link) : NULL;
    Elf_Data *rd = rel ? elf_getdata(rel, NULL) : NULL, *dd = dyn ? elf_getdata(dyn, NULL) : NULL;
    if (!plt || !rd || !dd || !gelf_getshdr(dyn, &dsh) || rsh.sh_type != SHT_RELA ||
        rsh.sh_entsize == 0)
        return 0;
    size_t n = rsh.sh_size / rsh.sh_entsize;
    for (size_t i = 0; i < n && first + 16 * (i + 1) <= psh.sh_size; i++) {
        GElf_Rela r;
        GElf_Sym sym;
        if (!gelf_getrela(rd, (int)i, &r) || GELF_R_SYM(r.r_info) == 0 ||
            !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym))
            continue; /* IRELATIVE and the like name nothing */
        const char *name = elf_strptr(e, dsh.sh_link, sym.st_name);
        char buf[512];
        if (!name || !*name || snprintf(buf, sizeof buf, "%s@plt", name) >= (int)sizeof buf)
            continue;
        int rc = dcpi__sym_add_named(b, psh.sh_addr + first + 16 * i, 16, 2, buf);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The GOT slot an entry of .plt.got jumps through: `[endbr64] [bnd] jmp *disp32(%rip)`. */
static int got_slot(const unsigned char *p, size_t len, uint64_t at, uint64_t *slot)
{
    size_t i = 0;
    if (len >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
        i = 4; /* endbr64 */
    if (i < len && p[i] == 0xf2)
        i++; /* bnd */
    if (i + 6 > len || p[i] != 0xff || p[i + 1] != 0x25)
        return 0;
    int32_t disp = (int32_t)((uint32_t)p[i + 2] | (uint32_t)p[i + 3] << 8 |
                             (uint32_t)p[i + 4] << 16 | (uint32_t)p[i + 5] << 24);
    *slot = at + i + 6 + (uint64_t)(int64_t)disp;
    return 1;
}

/* NAME@plt for the entries of .plt.got (calls through GOT slots the dynamic relocations of
 * .rela.dyn fill, e.g. __cxa_finalize), as objdump and perf name them. */
static int add_plt_got_syms(builder_t *b, Elf *e)
{
    GElf_Shdr gsh, rsh, dsh;
    Elf_Scn *got = section_named(e, ".plt.got", &gsh);
    Elf_Scn *rel = section_named(e, ".rela.dyn", &rsh);
    Elf_Data *gd = got ? elf_getdata(got, NULL) : NULL, *rd = rel ? elf_getdata(rel, NULL) : NULL;
    Elf_Scn *dyn = rel ? elf_getscn(e, rsh.sh_link) : NULL;
    Elf_Data *dd = dyn ? elf_getdata(dyn, NULL) : NULL;
    size_t step = gsh.sh_entsize ? gsh.sh_entsize : 8;
    if (!gd || !gd->d_buf || !rd || !dd || !gelf_getshdr(dyn, &dsh) || rsh.sh_entsize == 0)
        return 0;
    for (size_t off = 0; off + step <= gd->d_size; off += step) {
        uint64_t slot;
        if (!got_slot((const unsigned char *)gd->d_buf + off, step, gsh.sh_addr + off, &slot))
            continue;
        for (size_t i = 0; i < rsh.sh_size / rsh.sh_entsize; i++) {
            GElf_Rela r;
            GElf_Sym sym;
            if (!gelf_getrela(rd, (int)i, &r) || r.r_offset != slot || GELF_R_SYM(r.r_info) == 0 ||
                !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym))
                continue;
            const char *name = elf_strptr(e, dsh.sh_link, sym.st_name);
            char buf[512];
            if (name && *name && snprintf(buf, sizeof buf, "%s@plt", name) < (int)sizeof buf) {
                int rc = dcpi__sym_add_named(b, gsh.sh_addr + off, step, 2, buf);
                if (rc < 0)
                    return rc;
            }
            break;
        }
    }
    return 0;
}

/* An .eh_frame_hdr pointer of encoding enc (DW_EH_PE_*: udata4/sdata4/udata8/sdata8, absolute
 * or datarel / pcrel against the section) at p; 0 when the encoding is not one of those. */
static int ehhdr_value(const unsigned char *p, const unsigned char *end, unsigned enc,
                       uint64_t hdr_addr, uint64_t at_addr, uint64_t *v, size_t *used)
{
    size_t n = (enc & 0x0f) == 0x03 || (enc & 0x0f) == 0x0b   ? 4
               : (enc & 0x0f) == 0x04 || (enc & 0x0f) == 0x0c ? 8
                                                              : 0;
    if (n == 0 || p + n > end)
        return 0;
    uint64_t raw = 0;
    for (size_t i = 0; i < n; i++)
        raw |= (uint64_t)p[i] << (8 * i);
    if ((enc & 0x0f) == 0x0b && (raw & 0x80000000u))
        raw |= 0xffffffff00000000ull; /* sdata4 */
    switch (enc & 0x70) {
    case 0x00:
        *v = raw;
        break;
    case 0x10: /* pcrel */
        *v = at_addr + raw;
        break;
    case 0x30: /* datarel: from .eh_frame_hdr */
        *v = hdr_addr + raw;
        break;
    default:
        return 0;
    }
    *used = n;
    return 1;
}

/* The function starts of .eh_frame_hdr's search table (sorted), malloc'd into *starts. */
static size_t eh_frame_starts(Elf *e, uint64_t **starts)
{
    GElf_Shdr sh;
    Elf_Scn *scn = section_named(e, ".eh_frame_hdr", &sh);
    Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
    *starts = NULL;
    if (!d || !d->d_buf || d->d_size < 4)
        return 0;
    const unsigned char *p = d->d_buf, *end = p + d->d_size;
    if (p[0] != 1 || p[2] == 0xff || p[3] == 0xff)
        return 0; /* version 1 with a count and a table */
    uint64_t v, count;
    size_t used, at = 4;
    if (!ehhdr_value(p + at, end, p[1], sh.sh_addr, sh.sh_addr + at, &v, &used))
        return 0;
    at += used;
    if (!ehhdr_value(p + at, end, p[2], sh.sh_addr, sh.sh_addr + at, &count, &used) ||
        count > d->d_size)
        return 0;
    at += used;
    uint64_t *s = malloc((count ? count : 1) * sizeof *s);
    size_t n = 0;
    for (uint64_t i = 0; s && i < count; i++) {
        uint64_t fde;
        if (!ehhdr_value(p + at, end, p[3], sh.sh_addr, sh.sh_addr + at, &s[n], &used))
            break;
        at += used;
        if (!ehhdr_value(p + at, end, p[3], sh.sh_addr, sh.sh_addr + at, &fde, &used))
            break;
        at += used;
        n++;
    }
    *starts = s;
    return s ? n : 0;
}

int dcpi__sym_elf_has_symtab(Elf *e)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
            return 1;
    }
    return 0;
}

/* Functions no symbol covers (stripped code) named from .eh_frame's function starts,
 * "BASENAME+0xADDR" up to the next start: merged into *st (both sorted by address; a start no
 * symbol covers is at no symbol's address), their names in st->pool2. The table's own names are
 * neither copied nor demangled again. */
static int add_unnamed_functions(dcpi_symtab_t **st, Elf *e, const char *path);

/* How many of the n starts no symbol of st covers (*plen: their names' bytes). */
static size_t count_unnamed(const dcpi_symtab_t *st, const uint64_t *starts, size_t n,
                            const char *base, size_t *plen)
{
    char name[512];
    size_t extra = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = i + 1 < n && starts[i + 1] == starts[i];
        if (dup || dcpi_symtab_lookup(st, starts[i]))
            continue; /* a duplicate start collapses into its last copy, as dcpi__sym_finish does */
        extra++;
        *plen +=
            (size_t)snprintf(name, sizeof name, "%s+0x%llx", base, (unsigned long long)starts[i]) +
            1;
    }
    return extra;
}

static int add_unnamed_functions(dcpi_symtab_t **st, Elf *e, const char *path)
{
    uint64_t *starts = NULL;
    size_t n = eh_frame_starts(e, &starts), plen = 0;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t extra = count_unnamed(*st, starts, n, base, &plen);
    if (extra == 0) {
        free(starts);
        return 0;
    }
    dcpi_symtab_t *old = *st;
    size_t total = old->n + extra;
    dcpi_symbol_t *syms = calloc(total, sizeof *syms);
    const char **raw = calloc(total, sizeof *raw);
    char *pool = malloc(plen);
    if (!syms || !raw || !pool) {
        free(syms);
        free(raw);
        free(pool);
        free(starts);
        return DCPI_ENOMEM;
    }
    size_t j = 0, k = 0, at = 0; /* j: old symbols merged so far; k: the new table */
    for (size_t i = 0; i < n; i++) {
        if ((i + 1 < n && starts[i + 1] == starts[i]) || dcpi_symtab_lookup(old, starts[i]))
            continue;
        for (; j < old->n && old->syms[j].addr < starts[i]; j++, k++) {
            syms[k] = old->syms[j];
            raw[k] = old->raw[j];
        }
        uint64_t end = i + 1 < n ? starts[i + 1] : starts[i] + 1;
        if (j < old->n && old->syms[j].addr < end)
            end = old->syms[j].addr; /* never past the next real symbol */
        int len = snprintf(pool + at, plen - at, "%s+0x%llx", base, (unsigned long long)starts[i]);
        syms[k++] = (dcpi_symbol_t){starts[i], end - starts[i], pool + at};
        at += (size_t)len + 1;
    }
    for (; j < old->n; j++, k++) {
        syms[k] = old->syms[j];
        raw[k] = old->raw[j];
    }
    free(old->syms);
    free(old->raw);
    free(old->pool2);
    old->syms = syms;
    old->raw = raw;
    old->pool2 = pool;
    old->n = k;
    free(starts);
    return 0;
}

int dcpi_symtab_open(const char *path, dcpi_symtab_t **out, char *err)
{
    if (!path || !out)
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    *out = NULL;
    dcpi__elf_init();
    builder_t b = {0};
    elf_file_t f = {.fd = -1};
    int rc = dcpi__sym_elf_open(path, &f);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", path,
                          rc == DCPI_EINVAL ? "not a regular file" : strerror(-rc));
    int has_symtab = 0;
    if (f.elf) {
        dcpi__sym_reads(&b, &f);
        rc = dcpi__sym_add_elf(&b, f.elf, 1, &has_symtab);
        dcpi__sym_drop_map(&b);
        if (rc == 0 && !has_symtab)
            rc = dcpi__sym_add_debug(&b, path, &f);
        dcpi__sym_reads(&b, &f);
        if (rc == 0)
            rc = add_plt_syms(&b, f.elf);
        if (rc == 0)
            rc = add_plt_got_syms(&b, f.elf);
        dcpi__sym_drop_map(&b);
        b.map = NULL;
    }
    if (rc == 0)
        rc = dcpi__sym_finish(&b, out);
    if (rc == 0 && f.elf)
        rc = add_unnamed_functions(out, f.elf, path);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    dcpi__sym_builder_free(&b);
    dcpi__sym_elf_close(&f);
    return rc;
}
