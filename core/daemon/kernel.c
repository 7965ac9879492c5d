/*
 * kernel.c - what dcpid knows of the kernel and the machine: the nominal CPU clock, the
 * kernel's text range and identity (kernel samples are offsets from its start: d->kern), found
 * at setup; the text symbols of /proc/kallsyms written into each epoch once it has a kernel
 * profile (one snapshot per content in DB/.symcache), the vDSO's bytes beside its profile. A
 * part (part.h): setup, written and epoch.
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
#include "core/daemon/symcache.h"
#include "core/image/image.h"
#include "dcpi/errno.h"

/* The part's state: what of the kernel the current epoch has written. */
typedef struct kernel_part {
    int kallsyms_done, vdso_done;
} kernel_part_t;

static unsigned cpuspeed(void)
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
static void kernel_range(daemon_t *d)
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

static void write_kallsyms(daemon_t *d, kernel_part_t *k, const char *dirname)
{
    char dir[4200], path[4400];
    (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/%s", d->db, d->epoch, d->platform, dirname);
    if (dcpi__symcache_has(dir, "kallsyms")) {
        k->kallsyms_done = 1;
        return;
    }
    (void)dcpi__pathf(path, sizeof path, "%s/kallsyms.gz", dir);
    void *text = NULL;
    size_t len = 0;
    char err[DCPI_ERRLEN] = "";
    /* /proc files report size 0: dcpi__read_file reads to EOF whatever the size says. */
    if (dcpi__read_file("/proc/kallsyms", 0, &text, &len, err) == 0 &&
        shared_copy(d, path, text, keep_text_lines(text, len), err) == 0)
        k->kallsyms_done = 1;
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

static void write_vdso(daemon_t *d, kernel_part_t *k, const char *dirname)
{
    char path[4400], err[DCPI_ERRLEN];
    const void *bytes;
    size_t len;
    (void)dcpi__pathf(path, sizeof path, "%s/%s/%s/%s/vdso.so", d->db, d->epoch, d->platform,
                      dirname);
    if (access(path, F_OK) == 0 || own_vdso(&bytes, &len) < 0) {
        k->vdso_done = 1;
        return;
    }
    if (dcpi__write_atomic(path, bytes, len, err) == 0)
        k->vdso_done = 1;
    else
        dcpi__log(DCPI_LOG_ERR, "%s", err);
}

/* The machine's clock and the kernel's text (before the stacks of -g, which need it). */
static int kernel_setup(daemon_t *d, void *self, char *err)
{
    d->cpuspeed = cpuspeed();
    kernel_range(d);
    return 0;
}

/* A flushed image: the kernel's symbols, the vDSO's bytes, once per epoch. */
static void kernel_written(daemon_t *d, void *self, const dcpi__group_t *g)
{
    kernel_part_t *k = self;
    if (g->image == DCPI_AGG_IMAGE_KERNEL && !k->kallsyms_done)
        write_kallsyms(d, k, g->dirname);
    if (!k->vdso_done && g->image != DCPI_AGG_IMAGE_UNKNOWN && strcmp(g->path, "[vdso]") == 0)
        write_vdso(d, k, g->dirname);
}

static int kernel_epoch(daemon_t *d, void *self, char *err)
{
    *(kernel_part_t *)self = (kernel_part_t){0};
    return 0;
}

DCPI_DAEMON_PART(kernel, .order = 10, .size = sizeof(kernel_part_t), .setup = kernel_setup,
                 .written = kernel_written, .epoch = kernel_epoch);
