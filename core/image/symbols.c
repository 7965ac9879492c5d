/*
 * symbols.c - function symbol tables: ELF .symtab/.dynsym read with libelf (with a separate
 * debug file found by build-id, .gnu_debuglink or debuginfod when the file has no .symtab) and
 * kallsyms files (plain or gzip). Entries are sorted by address and collapsed to one per address;
 * C++ names are demangled with the C++ runtime's __cxa_demangle and the raw name is kept for
 * dcpi_symtab_find.
 */
#include "core/image/symbols.h"

#include <elfutils/libdwelf.h>
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
#include "dcpi/api.h"
#include "dcpi/errno.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

#define NO_RAW     SIZE_MAX
#define DEBUG_ROOT "/usr/lib/debug"

/* One candidate symbol while a table is built; names are offsets into the builder's pool. */
typedef struct ent {
    uint64_t addr, size;
    uint64_t limit;   /* size 0: the end of its section (0: unknown) */
    size_t name, raw; /* raw is NO_RAW when the name was not demangled */
    int rank;         /* lower wins at one address: global 0, weak 1, local 2 */
} ent_t;

typedef struct builder {
    ent_t *v;
    size_t n, cap;
    char *pool;
    size_t plen, pcap;
    void *map; /* the ELF file being read (its own private mapping), or NULL */
    size_t maplen;
    int fd; /* that file, to read names with pread */
} builder_t;

#define DROP_EVERY 8192 /* symbols read between two drops of the file's pages */

struct dcpi_symtab {
    dcpi_symbol_t *syms;
    const char **raw; /* raw (mangled) name, or NULL when it equals syms[i].name */
    size_t n;
    char *pool;
    char *pool2; /* the names of functions no symbol named (add_unnamed_functions) */
};

char *dcpi_demangle(const char *name)
{
    if (!name || strncmp(name, "_Z", 2) != 0)
        return NULL;
    int status = 0;
    char *out = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* ---- builder ---------------------------------------------------------------------------- */

static size_t pool_add(builder_t *b, const char *s, size_t len)
{
    if (len >= SIZE_MAX - b->plen ||
        dcpi__grow((void **)&b->pool, &b->pcap, b->plen + len + 1, 1) < 0)
        return NO_RAW;
    size_t at = b->plen;
    memcpy(b->pool + at, s, len);
    b->pool[at + len] = '\0';
    b->plen += len + 1;
    return at;
}

static int push_ent(builder_t *b, ent_t e)
{
    if (dcpi__grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v) < 0)
        return DCPI_ENOMEM;
    b->v[b->n++] = e;
    return 0;
}

/* name demangled when it is C++, keeping a suffix from '@' ("_Znwm@plt" -> "operator
 * new(unsigned long)@plt", as objdump names it); NULL when it is not C++ (or no memory). */
static char *demangle_suffixed(const char *name)
{
    const char *at = strchr(name, '@');
    if (!at)
        return dcpi_demangle(name);
    char *head = strndup(name, (size_t)(at - name));
    char *dem = head ? dcpi_demangle(head) : NULL;
    char *out = NULL;
    if (dem && asprintf(&out, "%s%s", dem, at) < 0)
        out = NULL;
    free(dem);
    free(head);
    return out;
}

/* Add a symbol whose name is copied into the pool, demangled when it is C++. */
static int add_named(builder_t *b, uint64_t addr, uint64_t size, int rank, const char *name)
{
    ent_t e = {.addr = addr, .size = size, .rank = rank, .raw = NO_RAW};
    char *dem = demangle_suffixed(name);
    if (dem) {
        e.raw = pool_add(b, name, strlen(name));
        e.name = pool_add(b, dem, strlen(dem));
        free(dem);
        if (e.raw == NO_RAW)
            return DCPI_ENOMEM;
    } else {
        e.name = pool_add(b, name, strlen(name));
    }
    if (e.name == NO_RAW)
        return DCPI_ENOMEM;
    return push_ent(b, e);
}

static int cmp_ent(const void *pa, const void *pb, void *pool)
{
    const ent_t *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    const char *na = (const char *)pool + a->name, *nb = (const char *)pool + b->name;
    size_t la = strlen(na), lb = strlen(nb);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(na, nb);
}

/* Count the distinct addresses of the sorted entries. */
static size_t count_unique(const builder_t *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += (i == 0 || b->v[i].addr != b->v[i - 1].addr);
    return n;
}

/* Sort, collapse one symbol per address (the best-ranked; its size, or the group's largest when
 * it has none) and hand the pool over to a new table. */
static int finish(builder_t *b, dcpi_symtab_t **out)
{
    dcpi_symtab_t *st = calloc(1, sizeof *st);
    if (!st)
        return DCPI_ENOMEM;
    if (b->n > 1)
        qsort_r(b->v, b->n, sizeof *b->v, cmp_ent, b->pool);
    size_t n = count_unique(b);
    st->syms = calloc(n ? n : 1, sizeof *st->syms);
    st->raw = calloc(n ? n : 1, sizeof *st->raw);
    if (!st->syms || !st->raw) {
        dcpi_symtab_free(st);
        return DCPI_ENOMEM;
    }
    uint64_t *limit = calloc(n ? n : 1, sizeof *limit);
    if (!limit) {
        dcpi_symtab_free(st);
        return DCPI_ENOMEM;
    }
    for (size_t i = 0; i < b->n; i++) {
        const ent_t *e = &b->v[i];
        if (i > 0 && e->addr == b->v[i - 1].addr) {
            dcpi_symbol_t *last = &st->syms[st->n - 1];
            if (last->size == 0 && e->size > last->size)
                last->size = e->size;
            if (!limit[st->n - 1])
                limit[st->n - 1] = e->limit;
            continue;
        }
        st->syms[st->n] = (dcpi_symbol_t){e->addr, e->size, b->pool + e->name};
        st->raw[st->n] = e->raw == NO_RAW ? NULL : b->pool + e->raw;
        limit[st->n] = e->limit;
        st->n++;
    }
    /* A symbol without size covers up to the next symbol, never past its section's end (as
     * perf: a zero-size _init does not swallow the PLT after .init). */
    for (size_t i = 0; i < st->n; i++)
        if (st->syms[i].size == 0 && limit[i]) {
            uint64_t end = limit[i];
            if (i + 1 < st->n && st->syms[i + 1].addr < end)
                end = st->syms[i + 1].addr;
            st->syms[i].size = end - st->syms[i].addr;
        }
    free(limit);
    st->pool = b->pool;
    b->pool = NULL;
    *out = st;
    return 0;
}

static void builder_free(builder_t *b)
{
    free(b->v);
    free(b->pool);
}

/* Give back the pages of the ELF file read so far: what is kept of it is copied into the pool,
 * so its symbol table (MBs in a large C++ or Haskell program) is never resident at once. The
 * mapping stays valid: a page read again faults in from the file (the page cache). */
static void drop_map(const builder_t *b)
{
    if (b->map)
        (void)madvise(b->map, b->maplen, MADV_DONTNEED);
}

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
            drop_map(b);
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
        int rc =
            add_named(b, sym.st_value, sym.st_size, bind_rank(GELF_ST_BIND(sym.st_info)), name);
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
static int add_elf_syms(builder_t *b, Elf *e, int want_dynsym, int *has_symtab)
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
        int rc = add_named(b, psh.sh_addr + first + 16 * i, 16, 2, buf);
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
                int rc = add_named(b, gsh.sh_addr + off, step, 2, buf);
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

static int elf_has_symtab(Elf *e)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
            return 1;
    }
    return 0;
}

typedef struct elf_file {
    int fd;
    Elf *elf;
    struct stat st;
    void *map; /* the whole file, mapped privately (libelf reads it through elf_memory) */
    size_t len;
} elf_file_t;

static void elf_file_close(elf_file_t *f)
{
    elf_end(f->elf);
    if (f->map)
        munmap(f->map, f->len);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    f->elf = NULL;
    f->map = NULL;
}

/* Read f's symbols next into b, with its pages dropped as they are read (drop_map); only for a
 * little-endian file, which libelf reads in place without converting (nothing it wrote into
 * the private mapping could be lost). */
static void builder_reads(builder_t *b, const elf_file_t *f)
{
    const unsigned char *id = f->map;
    int native = f->map && f->len > EI_DATA && id[EI_DATA] == ELFDATA2LSB;
    b->map = native ? f->map : NULL;
    b->maplen = native ? f->len : 0;
    b->fd = f->fd;
}

/* Open path; returns 0 (f->elf NULL when it is not ELF) or -errno mapped to DCPI_E*. */
static int elf_file_open(const char *path, elf_file_t *f)
{
    f->elf = NULL;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        return dcpi__errno_code(errno);
    if (fstat(f->fd, &f->st) != 0 || !S_ISREG(f->st.st_mode)) {
        elf_file_close(f);
        return DCPI_EINVAL;
    }
    /* Mapped here rather than by elf_begin (ELF_C_READ_MMAP) so that drop_map knows the mapping
     * is the file's and nothing else (libelf falls back to malloc'd copies when it cannot map);
     * writable private pages, as libelf's own ELF_C_READ_MMAP_PRIVATE. */
    f->len = (size_t)f->st.st_size;
    f->map = f->len ? mmap(NULL, f->len, PROT_READ | PROT_WRITE, MAP_PRIVATE, f->fd, 0) : NULL;
    if (f->map == MAP_FAILED)
        f->map = NULL;
    f->elf = f->map ? elf_memory(f->map, f->len) : NULL;
    if (f->elf && elf_kind(f->elf) != ELF_K_ELF) {
        elf_end(f->elf);
        f->elf = NULL;
    }
    return 0;
}

/* Is the file at cand a usable debug file for main (another file, ELF with a .symtab, same
 * build-id when both have one)? On success it stays open in *dbg. */
static int try_debug_file(const char *cand, const elf_file_t *main, elf_file_t *dbg)
{
    if (elf_file_open(cand, dbg) != 0)
        return 0;
    if (!dbg->elf || (dbg->st.st_dev == main->st.st_dev && dbg->st.st_ino == main->st.st_ino))
        goto reject;
    const void *mid = NULL, *did = NULL;
    ssize_t mn = dwelf_elf_gnu_build_id(main->elf, &mid);
    ssize_t dn = dwelf_elf_gnu_build_id(dbg->elf, &did);
    if (mn > 0 && dn > 0 && (mn != dn || memcmp(mid, did, (size_t)mn) != 0))
        goto reject;
    if (!elf_has_symtab(dbg->elf))
        goto reject;
    return 1;
reject:
    elf_file_close(dbg);
    return 0;
}

static int try_build_id_path(const elf_file_t *main, elf_file_t *dbg)
{
    const unsigned char *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(main->elf, (const void **)&id);
    if (n < 2 || n > 64)
        return 0;
    char path[PATH_MAX];
    int at = snprintf(path, sizeof path, DEBUG_ROOT "/.build-id/%02x/", id[0]);
    for (ssize_t i = 1; i < n; i++)
        at += snprintf(path + at, sizeof path - (size_t)at, "%02x", id[i]);
    snprintf(path + at, sizeof path - (size_t)at, ".debug");
    return try_debug_file(path, main, dbg);
}

/* The .gnu_debuglink name in the file's directory, in its .debug/ and under DEBUG_ROOT. */
static int try_debuglink(const char *path, const elf_file_t *main, elf_file_t *dbg)
{
    GElf_Word crc = 0;
    const char *link = dwelf_elf_gnu_debuglink(main->elf, &crc);
    if (!link || !*link || strchr(link, '/'))
        return 0;
    char *real = realpath(path, NULL);
    if (!real)
        return 0;
    char *slash = strrchr(real, '/');
    const char *dir = slash == real ? "" : real;
    *slash = '\0';
    const char *fmts[] = {"%s/%s", "%s/.debug/%s", DEBUG_ROOT "%s/%s"};
    int found = 0;
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0] && !found; i++) {
        char cand[PATH_MAX];
        if (snprintf(cand, sizeof cand, fmts[i], dir, link) < (int)sizeof cand)
            found = try_debug_file(cand, main, dbg);
    }
    free(real);
    return found;
}

/* The debug file of the build-id from the debuginfod servers of DEBUGINFOD_URLS (cached). */
static int try_debuginfod(const char *path, const elf_file_t *main, elf_file_t *dbg)
{
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(main->elf, &id);
    char *cached = NULL;
    if (n <= 0 || dcpi__debuginfod_find(id, (size_t)n, path, &cached) < 0)
        return 0;
    int found = try_debug_file(cached, main, dbg);
    free(cached);
    return found;
}

static int add_debug_syms(builder_t *b, const char *path, const elf_file_t *main)
{
    elf_file_t dbg = {.fd = -1};
    if (!try_build_id_path(main, &dbg) && !try_debuglink(path, main, &dbg) &&
        !try_debuginfod(path, main, &dbg))
        return 0;
    int has = 0;
    builder_reads(b, &dbg);
    int rc = add_elf_syms(b, dbg.elf, 0, &has);
    b->map = NULL;
    elf_file_close(&dbg);
    return rc;
}

/* Functions no symbol covers (stripped code) named from .eh_frame's function starts,
 * "BASENAME+0xADDR" up to the next start: merged into *st (both sorted by address; a start no
 * symbol covers is at no symbol's address), their names in st->pool2. The table's own names are
 * neither copied nor demangled again. */
static int add_unnamed_functions(dcpi_symtab_t **st, Elf *e, const char *path)
{
    uint64_t *starts = NULL;
    size_t n = eh_frame_starts(e, &starts), extra = 0, plen = 0;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char name[512];
    for (size_t i = 0; i < n; i++) {
        int dup = i + 1 < n && starts[i + 1] == starts[i];
        if (dup || dcpi_symtab_lookup(*st, starts[i]))
            continue; /* a duplicate start collapses into its last copy, as finish() would */
        extra++;
        plen +=
            (size_t)snprintf(name, sizeof name, "%s+0x%llx", base, (unsigned long long)starts[i]) +
            1;
    }
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
    int rc = elf_file_open(path, &f);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", path,
                          rc == DCPI_EINVAL ? "not a regular file" : strerror(-rc));
    int has_symtab = 0;
    if (f.elf) {
        builder_reads(&b, &f);
        rc = add_elf_syms(&b, f.elf, 1, &has_symtab);
        drop_map(&b);
        if (rc == 0 && !has_symtab)
            rc = add_debug_syms(&b, path, &f);
        builder_reads(&b, &f);
        if (rc == 0)
            rc = add_plt_syms(&b, f.elf);
        if (rc == 0)
            rc = add_plt_got_syms(&b, f.elf);
        drop_map(&b);
        b.map = NULL;
    }
    if (rc == 0)
        rc = finish(&b, out);
    if (rc == 0 && f.elf)
        rc = add_unnamed_functions(out, f.elf, path);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    builder_free(&b);
    elf_file_close(&f);
    return rc;
}

/* ---- by build-id, the file gone --------------------------------------------------------- */

/* The hex build-id into id[cap]: its length in bytes, or 0 when it is not one. */
static size_t parse_hex_id(const char *hex, unsigned char *id, size_t cap)
{
    size_t n = strlen(hex);
    if (n < 4 || n % 2 || n / 2 > cap || strspn(hex, "0123456789abcdef") != n)
        return 0;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        id[i] = (unsigned char)v;
    }
    return n / 2;
}

/* Open cand into dbg when it is ELF with a .symtab and build-id id[n]. */
static int open_debug_with_id(const char *cand, const unsigned char *id, size_t n, elf_file_t *dbg)
{
    if (elf_file_open(cand, dbg) != 0)
        return 0;
    const void *did = NULL;
    ssize_t dn = dbg->elf ? dwelf_elf_gnu_build_id(dbg->elf, &did) : -1;
    if (dn == (ssize_t)n && memcmp(did, id, n) == 0 && elf_has_symtab(dbg->elf))
        return 1;
    elf_file_close(dbg);
    return 0;
}

/* The debug file of build-id id[n]: DEBUG_ROOT/.build-id, then debuginfod (DEBUGINFOD_URLS). */
static int find_debug_by_id(const char *hex, const unsigned char *id, size_t n, const char *path,
                            elf_file_t *dbg)
{
    char cand[PATH_MAX];
    snprintf(cand, sizeof cand, DEBUG_ROOT "/.build-id/%.2s/%s.debug", hex, hex + 2);
    if (open_debug_with_id(cand, id, n, dbg))
        return 1;
    char *cached = NULL;
    if (dcpi__debuginfod_find(id, n, path, &cached) < 0)
        return 0;
    int found = open_debug_with_id(cached, id, n, dbg);
    free(cached);
    return found;
}

int dcpi_symtab_open_buildid(const char *hexid, const char *path, dcpi_symtab_t **out, char *err)
{
    if (!hexid || !out)
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    *out = NULL;
    unsigned char id[64];
    size_t n = parse_hex_id(hexid, id, sizeof id);
    if (n == 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: not a build-id", hexid);
    dcpi__elf_init();
    elf_file_t dbg = {.fd = -1};
    if (!find_debug_by_id(hexid, id, n, path, &dbg))
        return dcpi__errf(err, DCPI_ENOENT, "%s: no debug file for build-id %s", path, hexid);
    builder_t b = {0};
    int has = 0;
    builder_reads(&b, &dbg);
    int rc = add_elf_syms(&b, dbg.elf, 0, &has);
    b.map = NULL;
    if (rc == 0)
        rc = finish(&b, out);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    builder_free(&b);
    elf_file_close(&dbg);
    return rc;
}

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

/* Every line of the pool; a line that is not a kallsyms line (a damaged snapshot: binary, cut
 * or another format) fails the whole file with DCPI_EFORMAT and its number in *bad. */
static int parse_kallsyms(builder_t *b, size_t *bad)
{
    char *p = b->pool, *end = b->pool + b->plen;
    for (size_t lineno = 1; p < end; lineno++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        ent_t e;
        int kept = memchr(p, '\0', (size_t)(stop - p)) ? -1 : 0;
        if (nl)
            *nl = '\0';
        if (kept == 0 && (nl || stop > p))
            kept = parse_kallsyms_line(p, &e, b->pool);
        if (kept < 0) {
            *bad = lineno;
            return DCPI_EFORMAT;
        }
        if (kept > 0) {
            int rc = push_ent(b, e);
            if (rc < 0)
                return rc;
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int dcpi_symtab_open_kallsyms(const char *path, dcpi_symtab_t **out, char *err)
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
    rc = parse_kallsyms(&b, &bad);
    if (rc == 0)
        rc = finish(&b, out);
    if (rc == DCPI_EFORMAT)
        dcpi__errf(err, rc, "%s: line %zu is not a symbol line (ADDRESS TYPE NAME)", path, bad);
    else if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    builder_free(&b);
    return rc;
}

/* ---- a given list (the fleet's symbols) ------------------------------------------------- */

int dcpi_symtab_from_list(const dcpi_symbol_t *v, size_t n, dcpi_symtab_t **out)
{
    builder_t b = {0};
    *out = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        ent_t e = {.addr = v[i].addr, .size = v[i].size, .rank = 0, .raw = NO_RAW};
        e.name = pool_add(&b, v[i].name, strlen(v[i].name));
        rc = e.name == NO_RAW ? DCPI_ENOMEM : push_ent(&b, e);
    }
    if (rc == 0)
        rc = finish(&b, out);
    builder_free(&b);
    return rc;
}

/* ---- perf maps ---------------------------------------------------------------------------- */

/* Parse one line in place: "START SIZE NAME" (hex, hex, the rest). 1 to keep it, 0 to leave it
 * out (size 0), -1 when it is no such line. */
static int parse_perfmap_line(char *line, ent_t *e, const char *pool)
{
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

int dcpi_symtab_open_perfmap(const char *path, dcpi_symtab_t **out, char *err)
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
    char *p = b.pool, *end = b.pool + b.plen;
    size_t lineno = 1;
    for (; rc == 0 && p < end; lineno++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        int kept = memchr(p, '\0', (size_t)(stop - p)) ? -1 : 0;
        if (nl)
            *nl = '\0';
        ent_t e;
        if (kept == 0 && stop > p)
            kept = parse_perfmap_line(p, &e, b.pool);
        if (kept < 0)
            rc = DCPI_EFORMAT;
        else if (kept > 0)
            rc = push_ent(&b, e);
        p = nl ? nl + 1 : end;
    }
    if (rc == 0)
        rc = finish(&b, out);
    if (rc == DCPI_EFORMAT)
        dcpi__errf(err, rc, "%s: line %zu is not a perf map line (START SIZE NAME)", path,
                   lineno - 1);
    else if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    builder_free(&b);
    return rc;
}

/* ---- queries ---------------------------------------------------------------------------- */

void dcpi_symtab_free(dcpi_symtab_t *st)
{
    if (!st)
        return;
    free(st->syms);
    free(st->raw);
    free(st->pool);
    free(st->pool2);
    free(st);
}

const dcpi_symbol_t *dcpi_symtab_lookup(const dcpi_symtab_t *st, uint64_t addr)
{
    if (!st || st->n == 0 || addr < st->syms[0].addr)
        return NULL;
    size_t lo = 0, hi = st->n; /* find the last symbol with syms[i].addr <= addr */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->syms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    const dcpi_symbol_t *s = &st->syms[lo];
    if (s->size > 0 && addr - s->addr >= s->size)
        return NULL;
    return s;
}

const dcpi_symbol_t *dcpi_symtab_find(const dcpi_symtab_t *st, const char *name)
{
    if (!st || !name)
        return NULL;
    for (size_t i = 0; i < st->n; i++) {
        if (strcmp(st->syms[i].name, name) == 0 || (st->raw[i] && strcmp(st->raw[i], name) == 0))
            return &st->syms[i];
    }
    return NULL;
}

size_t dcpi_symtab_count(const dcpi_symtab_t *st)
{
    return st ? st->n : 0;
}

const dcpi_symbol_t *dcpi_symtab_get(const dcpi_symtab_t *st, size_t i)
{
    return st && i < st->n ? &st->syms[i] : NULL;
}
