/*
 * symdebug.c - ELF files opened for their symbols (mapped privately, pages given back as they
 * are read) and their separate debug files: by build-id under /usr/lib/debug, by
 * .gnu_debuglink, from debuginfod; and the symbols of a build-id whose file is gone.
 */
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

void dcpi__sym_elf_close(elf_file_t *f)
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
void dcpi__sym_reads(builder_t *b, const elf_file_t *f)
{
    const unsigned char *id = f->map;
    int native = f->map && f->len > EI_DATA && id[EI_DATA] == ELFDATA2LSB;
    b->map = native ? f->map : NULL;
    b->maplen = native ? f->len : 0;
    b->fd = f->fd;
}

/* Open path; returns 0 (f->elf NULL when it is not ELF) or -errno mapped to DCPI_E*. */
int dcpi__sym_elf_open(const char *path, elf_file_t *f)
{
    f->elf = NULL;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        return dcpi__errno_code(errno);
    if (fstat(f->fd, &f->st) != 0 || !S_ISREG(f->st.st_mode)) {
        dcpi__sym_elf_close(f);
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
    if (dcpi__sym_elf_open(cand, dbg) != 0)
        return 0;
    if (!dbg->elf || (dbg->st.st_dev == main->st.st_dev && dbg->st.st_ino == main->st.st_ino))
        goto reject;
    const void *mid = NULL, *did = NULL;
    ssize_t mn = dwelf_elf_gnu_build_id(main->elf, &mid);
    ssize_t dn = dwelf_elf_gnu_build_id(dbg->elf, &did);
    if (mn > 0 && dn > 0 && (mn != dn || memcmp(mid, did, (size_t)mn) != 0))
        goto reject;
    if (!dcpi__sym_elf_has_symtab(dbg->elf))
        goto reject;
    return 1;
reject:
    dcpi__sym_elf_close(dbg);
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

int dcpi__sym_add_debug(builder_t *b, const char *path, const elf_file_t *main)
{
    elf_file_t dbg = {.fd = -1};
    if (!try_build_id_path(main, &dbg) && !try_debuglink(path, main, &dbg) &&
        !try_debuginfod(path, main, &dbg))
        return 0;
    int has = 0;
    dcpi__sym_reads(b, &dbg);
    int rc = dcpi__sym_add_elf(b, dbg.elf, 0, &has);
    b->map = NULL;
    dcpi__sym_elf_close(&dbg);
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
    if (dcpi__sym_elf_open(cand, dbg) != 0)
        return 0;
    const void *did = NULL;
    ssize_t dn = dbg->elf ? dwelf_elf_gnu_build_id(dbg->elf, &did) : -1;
    if (dn == (ssize_t)n && memcmp(did, id, n) == 0 && dcpi__sym_elf_has_symtab(dbg->elf))
        return 1;
    dcpi__sym_elf_close(dbg);
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
    dcpi__sym_reads(&b, &dbg);
    int rc = dcpi__sym_add_elf(&b, dbg.elf, 0, &has);
    b.map = NULL;
    if (rc == 0)
        rc = dcpi__sym_finish(&b, out);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    dcpi__sym_builder_free(&b);
    dcpi__sym_elf_close(&dbg);
    return rc;
}
