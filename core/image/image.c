/*
 * image.c - image identity (ELF build-id or a hash of path, size and mtime), text range and
 * PT_LOAD segments of an executable file, read with libelf; the running kernel's build-id from
 * /sys/kernel/notes; the database directory name of an image.
 *
 * The fallback id is 16 lowercase hex digits of the 64-bit FNV-1a hash of the bytes
 * "PATH\0SIZE\0SEC\0NSEC" where PATH is the path as given and SIZE, SEC (st_mtim.tv_sec) and
 * NSEC (st_mtim.tv_nsec) are written in decimal; there is no trailing NUL.
 */
#include "core/image/image.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/hash.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

#define NT_GNU_BUILD_ID_TYPE 3

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init(void)
{
    elf_version(EV_CURRENT);
}

void dcpi__elf_init(void)
{
    pthread_once(&elf_once, elf_init);
}

static void hex_encode(const unsigned char *bytes, size_t n, char out[DCPI_IMAGE_IDLEN])
{
    static const char digits[] = "0123456789abcdef";
    if (n > (DCPI_IMAGE_IDLEN - 1) / 2)
        n = (DCPI_IMAGE_IDLEN - 1) / 2;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

static void hash_id(const char *path, const struct stat *st, char out[DCPI_IMAGE_IDLEN])
{
    char num[3][32];
    snprintf(num[0], sizeof num[0], "%jd", (intmax_t)st->st_size);
    snprintf(num[1], sizeof num[1], "%jd", (intmax_t)st->st_mtim.tv_sec);
    snprintf(num[2], sizeof num[2], "%ld", (long)st->st_mtim.tv_nsec);
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, path, strlen(path));
    for (int i = 0; i < 3; i++) {
        h = dcpi__fnv1a(h, "", 1);
        h = dcpi__fnv1a(h, num[i], strlen(num[i]));
    }
    snprintf(out, DCPI_IMAGE_IDLEN, "%016" PRIx64, h);
}

/* A PT_LOAD header that cannot describe a real mapping: more file than memory bytes, or a
 * range that wraps around 2^64 (its addresses would not map back and forth). */
static int bad_segment(const GElf_Phdr *ph)
{
    return ph->p_filesz > ph->p_memsz || ph->p_vaddr + ph->p_memsz < ph->p_vaddr ||
           ph->p_offset + ph->p_filesz < ph->p_offset;
}

/* Copy the PT_LOAD headers and compute the text range; DCPI_EFULL when there are too many,
 * DCPI_EFORMAT when a header is malformed (that segment is left out). */
static int read_segments(Elf *e, dcpi_image_info_t *out)
{
    size_t phnum = 0;
    if (elf_getphdrnum(e, &phnum) != 0)
        return DCPI_EFORMAT;
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t lost = 0, bad = 0;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (bad_segment(&ph)) {
            bad++;
            continue;
        }
        if (ph.p_flags & PF_X) {
            lo = ph.p_vaddr < lo ? ph.p_vaddr : lo;
            hi = ph.p_vaddr + ph.p_memsz > hi ? ph.p_vaddr + ph.p_memsz : hi;
        }
        if (out->nseg == DCPI_IMAGE_MAXSEG) {
            lost++;
            continue;
        }
        out->seg[out->nseg++] = (dcpi_segment_t){.vaddr = ph.p_vaddr,
                                                 .memsz = ph.p_memsz,
                                                 .offset = ph.p_offset,
                                                 .filesz = ph.p_filesz,
                                                 .flags = ph.p_flags};
    }
    if (lo != UINT64_MAX) {
        out->tstart = lo;
        out->tsize = hi - lo;
    }
    return bad ? DCPI_EFORMAT : lost ? DCPI_EFULL : 0;
}

static void read_build_id(Elf *e, dcpi_image_info_t *out)
{
    const void *bid = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(e, &bid);
    if (n > 0 && bid) {
        hex_encode(bid, (size_t)n, out->id);
        out->id_is_buildid = 1;
    }
}

/* Fill out from an open file; returns 0, DCPI_EFULL (segments dropped) or DCPI_EFORMAT. */
static int probe_fd(int fd, const char *path, const struct stat *st, dcpi_image_info_t *out)
{
    int rc = 0;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (e && elf_kind(e) == ELF_K_ELF) {
        out->is_elf = 1;
        rc = read_segments(e, out);
        read_build_id(e, out);
    } else {
        out->tsize = (uint64_t)st->st_size;
    }
    elf_end(e);
    if (!out->id_is_buildid)
        hash_id(path, st, out->id);
    return rc;
}

int dcpi_image_dynamic(const char *path)
{
    dcpi__elf_init();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dcpi__errno_code(errno);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t n = 0;
    int rc = e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0 ? 0 : DCPI_EFORMAT;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
            rc = 1;
    }
    elf_end(e);
    close(fd);
    return rc;
}

int dcpi_image_probe(const char *path, dcpi_image_info_t *out, char *err)
{
    if (!path || !out)
        return dcpi__errf(err, DCPI_EINVAL, "%s: invalid argument", path ? path : "(null)");
    memset(out, 0, sizeof *out);
    dcpi__elf_init();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return dcpi__errf(err, dcpi__errno_code(e), "%s: %s", path, strerror(e));
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        rc = dcpi__errf(err, dcpi__errno_code(e), "%s: %s", path, strerror(e));
        goto out_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = dcpi__errf(err, DCPI_EINVAL, "%s: not a regular file", path);
        goto out_fd;
    }
    rc = probe_fd(fd, path, &st, out);
    if (rc == DCPI_EFULL)
        dcpi__errf(err, rc, "%s: more than %d PT_LOAD segments, the rest dropped", path,
                   DCPI_IMAGE_MAXSEG);
    else if (rc < 0)
        dcpi__errf(err, rc, "%s: malformed ELF program headers", path);
out_fd:
    close(fd);
    return rc;
}

uint64_t dcpi_image_file_to_vaddr(const dcpi_image_info_t *img, uint64_t file_off)
{
    if (!img || !img->is_elf)
        return file_off;
    for (int i = 0; i < img->nseg; i++) {
        const dcpi_segment_t *s = &img->seg[i];
        if (file_off >= s->offset && file_off - s->offset < s->filesz)
            return file_off - s->offset + s->vaddr;
    }
    return file_off;
}

int dcpi_image_vaddr_to_file(const dcpi_image_info_t *img, uint64_t vaddr, uint64_t *file_off)
{
    if (!img || !file_off)
        return DCPI_EINVAL;
    for (int i = 0; i < img->nseg; i++) {
        const dcpi_segment_t *s = &img->seg[i];
        if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
            *file_off = vaddr - s->vaddr + s->offset;
            return 0;
        }
    }
    return DCPI_ENOENT;
}

/* Read up to cap bytes of a (possibly /proc or /sys) file; returns the length or -1. */
static ssize_t read_small(const char *path, unsigned char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    return (ssize_t)len;
}

/* Walk a sequence of ELF notes (native byte order) for NT_GNU_BUILD_ID "GNU". */
static int find_build_id_note(const unsigned char *buf, size_t len, char out[DCPI_IMAGE_IDLEN])
{
    size_t pos = 0;
    while (len - pos >= 12) {
        uint32_t namesz = dcpi__get_host32(buf + pos), descsz = dcpi__get_host32(buf + pos + 4);
        uint32_t type = dcpi__get_host32(buf + pos + 8);
        size_t name_at = pos + 12;
        size_t desc_at = name_at + (((size_t)namesz + 3) & ~(size_t)3);
        size_t next = desc_at + (((size_t)descsz + 3) & ~(size_t)3);
        if (desc_at > len || next > len || desc_at + descsz > len)
            return -1;
        if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 && memcmp(buf + name_at, "GNU", 4) == 0 &&
            descsz > 0) {
            hex_encode(buf + desc_at, descsz, out);
            return 0;
        }
        pos = next;
    }
    return -1;
}

void dcpi_image_kernel_id(char out[DCPI_IMAGE_IDLEN])
{
    unsigned char buf[4096];
    ssize_t n = read_small("/sys/kernel/notes", buf, sizeof buf);
    if (n > 0 && find_build_id_note(buf, (size_t)n, out) == 0)
        return;
    n = read_small("/proc/version", buf, sizeof buf);
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, buf, n > 0 ? (size_t)n : 0);
    snprintf(out, DCPI_IMAGE_IDLEN, "%016" PRIx64, h);
}

void dcpi_image_dirname(const char *path, const char *id, char *out, size_t len)
{
    if (!out || len == 0)
        return;
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : (path ? path : "");
    size_t blen = strlen(base);
    if (blen >= 2 && base[0] == '[' && base[blen - 1] == ']') {
        base++;
        blen -= 2;
    }
    if (blen == 0) {
        base = "unknown";
        blen = strlen(base);
    }
    char name[256];
    if (blen > sizeof name - 1)
        blen = sizeof name - 1;
    for (size_t i = 0; i < blen; i++) {
        char c = base[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '+' || c == '-';
        name[i] = ok ? c : '_';
    }
    name[blen] = '\0';
    snprintf(out, len, "%s_%s", name, id ? id : "");
}
