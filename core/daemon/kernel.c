/*
 * kernel.c - what dcpid knows of the kernel and the machine: the nominal CPU clock, the
 * kernel's text range and identity (kernel samples are offsets from its start), the text
 * symbols of /proc/kallsyms written into each epoch once it has a kernel profile, and the
 * database's symbol cache (DB/.symcache: gzip files, one per build-id or kernel snapshot).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/auxv.h>

#include "core/base/fsutil.h"
#include "core/base/hash.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/image/image.h"
#include "core/image/symbols.h"
#include "core/store/codecache.h"

unsigned dcpi__daemon_cpuspeed(void)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    char line[512];
    double mhz = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "cpu MHz", 7) == 0 && strchr(line, ':')) {
            mhz = atof(strchr(line, ':') + 1);
            break;
        }
    if (f)
        fclose(f);
    return (unsigned)(mhz + 0.5);
}

static int is_text_type(char t)
{
    return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/* Lowest and highest text symbol of the running kernel, from /proc/kallsyms. */
void dcpi__daemon_kernel_range(daemon_t *d)
{
    /* The core kernel's symbols come first in /proc/kallsyms, in address order, so the first
     * text symbol is the start of kernel text: reading the whole file (~10^5 lines) here would
     * cost most of dcpid's start-up. Modules load above it, well within 4 GiB, so kernel
     * profiles cover [tstart, tstart + 4 GiB): offsets are 32 bits. */
    FILE *f = fopen("/proc/kallsyms", "re");
    char line[512];
    uint64_t lo = UINT64_MAX;
    while (f && lo == UINT64_MAX && fgets(line, sizeof line, f)) {
        char type;
        unsigned long long a;
        if (sscanf(line, "%llx %c", &a, &type) == 2 && is_text_type(type) && a != 0)
            lo = a;
    }
    if (f)
        fclose(f);
    dcpi_image_kernel_id(d->kern.id);
    d->kern.ok = lo != UINT64_MAX;
    if (!d->kern.ok) {
        dcpi__log(DCPI_LOG_WARN, "/proc/kallsyms shows no addresses: kernel samples count as "
                                 "unknown");
        return;
    }
    d->kern.tstart = lo;
    d->kern.tsize = UINT32_MAX;
    dcpi__log(DCPI_LOG_INFO, "kernel text 0x%" PRIx64 " id %s", lo, d->kern.id);
}

/* Keep only the text symbols' lines of /proc/kallsyms in buf[0..len), in place; returns their
 * length. */
static size_t keep_text_lines(char *buf, size_t len)
{
    size_t n = 0;
    for (size_t at = 0; at < len;) {
        char *line = buf + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t l = nl ? (size_t)(nl - line) + 1 : len - at;
        at += l;
        /* "ADDR T name [mod]": the type follows the first space (no sscanf: this runs over
         * ~10^5 lines and dominated dcpid's CPU time). */
        const char *sp = memchr(line, ' ', l);
        if (!sp || sp == line || (size_t)(sp - line) + 2 >= l || !is_text_type(sp[1]) ||
            sp[2] != ' ')
            continue;
        /* BPF programs come and go ("bpf_prog_..." [bpf]): left out, so that the snapshots of
         * one kernel stay identical and share one file (DB/.symcache) */
        if (l >= 7 && memcmp(line + l - 7, "\t[bpf]\n", 7) == 0)
            continue;
        memmove(buf + n, line, l);
        n += l;
    }
    return n;
}

/* The snapshot, gzip-compressed, into path as a hard link to one copy per content in
 * DB/.symcache (kallsyms-KERNELID-HASH.gz, HASH of the uncompressed text): epochs of one kernel
 * with the same modules share one file (5 MB each, uncompressed, before). A filesystem without
 * hard links gets a copy. 0 or a negative DCPI_E* with err. */
static int shared_copy(daemon_t *d, const char *path, const char *text, size_t len, char *err)
{
    char dir[4200], cached[4400];
    (void)dcpi__pathf(dir, sizeof dir, "%s/.symcache", d->db);
    (void)dcpi__pathf(cached, sizeof cached, "%s/kallsyms-%.40s-%016" PRIx64 ".gz", dir, d->kern.id,
                      dcpi__fnv1a(DCPI_FNV64_OFFSET, text, len));
    if (access(cached, F_OK) != 0 &&
        (dcpi__mkdirs(dir, 0755) < 0 || dcpi__write_atomic_gz(cached, text, len, err) < 0))
        return dcpi__write_atomic_gz(path, text, len, err);
    if (link(cached, path) == 0)
        return 0;
    return dcpi__write_atomic_gz(path, text, len, err);
}

/* Whether DIR/NAME or DIR/NAME.gz exists (a database written before the cache was compressed
 * has NAME). */
static int exists_plain_or_gz(const char *dir, const char *name)
{
    char path[4400];
    (void)dcpi__pathf(path, sizeof path, "%s/%s.gz", dir, name);
    if (access(path, F_OK) == 0)
        return 1;
    (void)dcpi__pathf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

void dcpi__daemon_write_kallsyms(daemon_t *d, const char *dirname)
{
    char dir[4200], path[4400];
    (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/%s", d->db, d->epoch, d->platform, dirname);
    if (exists_plain_or_gz(dir, "kallsyms")) {
        d->kern.kallsyms_done = 1;
        return;
    }
    (void)dcpi__pathf(path, sizeof path, "%s/kallsyms.gz", dir);
    void *text = NULL;
    size_t len = 0;
    char err[DCPI_ERRLEN] = "";
    /* /proc files report size 0: dcpi__read_file reads to EOF whatever the size says. */
    if (dcpi__read_file("/proc/kallsyms", 0, &text, &len, err) == 0 &&
        shared_copy(d, path, text, keep_text_lines(text, len), err) == 0)
        d->kern.kallsyms_done = 1;
    else
        dcpi__log(DCPI_LOG_ERR, "%s", err);
    free(text);
}

/* The vDSO of this process (every process of one kernel maps the same image): its bytes from
 * AT_SYSINFO_EHDR over the [vdso] mapping's length (/proc/self/maps). */
static int own_vdso(const void **bytes, size_t *len)
{
    const void *base = (const void *)getauxval(AT_SYSINFO_EHDR);
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    *len = 0;
    while (base && f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
            lo == (unsigned long)(uintptr_t)base)
            *len = hi - lo;
    }
    if (f)
        fclose(f);
    *bytes = base;
    return base && *len ? 0 : DCPI_ENOENT;
}

void dcpi__daemon_write_vdso(daemon_t *d, const char *dirname)
{
    char path[4400], err[DCPI_ERRLEN];
    const void *bytes;
    size_t len;
    (void)dcpi__pathf(path, sizeof path, "%s/%s/%s/%s/vdso.so", d->db, d->epoch, d->platform,
                      dirname);
    if (access(path, F_OK) == 0 || own_vdso(&bytes, &len) < 0) {
        d->kern.vdso_done = 1;
        return;
    }
    if (dcpi__write_atomic(path, bytes, len, err) == 0)
        d->kern.vdso_done = 1;
    else
        dcpi__log(DCPI_LOG_ERR, "%s", err);
}

/* The image's code, once per DB, as DB/.codecache/ID (a copy of the ELF file read from src,
 * bounded: see core/store/codecache.h), so dcpilist -asm lists it after it is rebuilt or
 * deleted. */
static void cache_code(const char *db, const char *imgpath, const char *id, const char *src)
{
    static int said_full;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_codecache_add(db, src, id, err);
    if (rc == DCPI_EFULL && !said_full) {
        said_full = 1;
        dcpi__log(DCPI_LOG_WARN,
                  "code cache: %s (%llu MiB) or the cache (%llu MiB) would exceed its bound: "
                  "images are no longer kept for dcpilist after they change",
                  imgpath, (unsigned long long)(DCPI_CODECACHE_FILE_MAX >> 20),
                  (unsigned long long)(DCPI_CODECACHE_MAX >> 20));
    } else if (rc < 0 && rc != DCPI_ENOENT && rc != DCPI_EFULL) {
        dcpi__log(DCPI_LOG_WARN, "code cache: %s", err[0] ? err : dcpi_strerror(rc));
    }
}

/* The table's lines ("ADDR t NAME"), gzip-compressed as they are formatted: a C++ library's
 * text (tens of MB) is never whole in memory. */
static int put_syms(void *arg, dcpi__gzout_t *out)
{
    const dcpi_symtab_t *st = arg;
    char buf[65536];
    size_t len = 0;
    for (size_t i = 0; i < dcpi_symtab_count(st); i++) {
        const dcpi_symbol_t *sym = dcpi_symtab_get(st, i);
        if (!sym->addr || strchr(sym->name, '\n') || strchr(sym->name, '\t'))
            continue;
        size_t need = strlen(sym->name) + 24;
        if (len + need > sizeof buf) {
            int rc = dcpi__gzput(out, buf, len);
            if (rc < 0)
                return rc;
            len = 0;
        }
        if (need > sizeof buf) { /* a name longer than the buffer: in pieces */
            int n = snprintf(buf, sizeof buf, "%" PRIx64 " t ", sym->addr);
            int rc = dcpi__gzput(out, buf, (size_t)n);
            if (rc == 0)
                rc = dcpi__gzput(out, sym->name, strlen(sym->name));
            if (rc == 0)
                rc = dcpi__gzput(out, "\n", 1);
            if (rc < 0)
                return rc;
            continue;
        }
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%" PRIx64 " t %s\n", sym->addr,
                                sym->name);
    }
    return dcpi__gzput(out, buf, len);
}

/* The symbols of an image with a build-id, once per DB, as DB/.symcache/syms-ID.gz (kallsyms
 * format, ELF addresses, gzip), read from src, so its profiles stay named after the file is
 * upgraded, rebuilt or deleted (core/model/profset.c reads them when the file's id no longer
 * matches, or the file is gone). */
static void cache_syms(const char *db, const char *id, const char *src)
{
    char dir[4200], path[4400], err[DCPI_ERRLEN];
    (void)dcpi__pathf(dir, sizeof dir, "%s/.symcache", db);
    (void)dcpi__pathf(path, sizeof path, "syms-%s", id);
    if (exists_plain_or_gz(dir, path))
        return;
    (void)dcpi__pathf(path, sizeof path, "%s/syms-%s.gz", dir, id);
    dcpi_symtab_t *st = NULL;
    if (dcpi_symtab_open(src, &st, NULL) < 0)
        return;
    if (dcpi__mkdirs(dir, 0755) < 0 || dcpi__write_atomic_gz_fill(path, put_syms, st, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "symbol cache: %s", err);
    dcpi_symtab_free(st);
}

void dcpi__daemon_cache_image(const char *db, const char *path, const char *id, const char *src)
{
    cache_code(db, path, id, src);
    cache_syms(db, id, src);
}

void dcpi__daemon_keep_unnamed(void *ctx, const dcpi_image_t *img, const char *src)
{
    daemon_t *d = ctx;
    if (!img->info.id_is_buildid)
        return;
    dcpi__daemon_cache_image(d->db, img->path, img->info.id, src); /* now: src may go away */
}
