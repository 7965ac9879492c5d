/*
 * check_loadmap.c - the loadmap: synthetic mappings of real files (resolve, overlap, munmap
 * split, fork/exec/exit, vdso, pseudo paths, image dedup) and a scan of this very process.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check_skip.h"
#include "core/image/loadmap.h"
#include "dcpi/errno.h"

#define TRUE_PATH    "/bin/true"
#define LIBC_PATH    "/lib/x86_64-linux-gnu/libc.so.6"
#define MISSING_PATH "/nonexistent/dcpi-test/libgone.so"

/* Pids above any pid_max, so /proc/<pid>/map_files never exists for them. */
#define PID_A 1000000001
#define PID_B 1000000002
#define RX    (PROT_READ | PROT_EXEC)

/* File offset and vaddr of the first executable PT_LOAD of path, read with libelf. */
static void elf_text(const char *path, uint64_t *off, uint64_t *vaddr)
{
    ck_assert(elf_version(EV_CURRENT) != EV_NONE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    ck_assert_ptr_nonnull(e);
    size_t n = 0;
    ck_assert_int_eq(elf_getphdrnum(e, &n), 0);
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) {
        GElf_Phdr ph;
        ck_assert_ptr_nonnull(gelf_getphdr(e, (int)i, &ph));
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            *off = ph.p_offset;
            *vaddr = ph.p_vaddr;
            found = 1;
        }
    }
    elf_end(e);
    close(fd);
    ck_assert(found);
}

/* st_value of the symbol name in the ELF file path (.symtab). */
static uint64_t elf_symbol(const char *path, const char *name)
{
    ck_assert(elf_version(EV_CURRENT) != EV_NONE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    ck_assert_ptr_nonnull(e);
    uint64_t value = 0;
    for (Elf_Scn *scn = elf_nextscn(e, NULL); scn && !value; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        gelf_getshdr(scn, &sh);
        if (sh.sh_type != SHT_SYMTAB)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            gelf_getsym(d, (int)i, &sym);
            const char *s = elf_strptr(e, sh.sh_link, sym.st_name);
            if (s && strcmp(s, name) == 0)
                value = sym.st_value;
        }
    }
    elf_end(e);
    close(fd);
    ck_assert_uint_ne(value, 0);
    return value;
}

static dcpi_loadmap_t *new_map(void)
{
    dcpi_loadmap_t *lm = NULL;
    ck_assert_int_eq(dcpi_loadmap_new(&lm), 0);
    ck_assert_ptr_nonnull(lm);
    return lm;
}

/* Map the text segment of path at start in pid, the way ld.so does (pgoff = its offset). */
static uint64_t map_text(dcpi_loadmap_t *lm, pid_t pid, const char *path, uint64_t start,
                         uint64_t len, uint64_t ino)
{
    uint64_t off, vaddr;
    elf_text(path, &off, &vaddr);
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, pid, start, len, off, 8, 1, ino, RX, path), 0);
    return off;
}

static void assert_resolves(dcpi_loadmap_t *lm, pid_t pid, uint64_t ip, const char *path,
                            uint32_t offset)
{
    dcpi_image_t *img = NULL;
    uint32_t off = 0;
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, pid, ip, &img, &off), 0);
    ck_assert_ptr_nonnull(img);
    ck_assert_str_eq(img->path, path);
    ck_assert_uint_eq(off, offset);
}

static void assert_unknown(dcpi_loadmap_t *lm, pid_t pid, uint64_t ip)
{
    dcpi_image_t *img = NULL;
    uint32_t off = 0;
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, pid, ip, &img, &off), DCPI_ENOENT);
}

START_TEST(test_resolve_inside_outside)
{
    dcpi_loadmap_t *lm = new_map();
    map_text(lm, PID_A, TRUE_PATH, 0x400000, 0x4000, 11);
    assert_resolves(lm, PID_A, 0x400000, TRUE_PATH, 0);
    assert_resolves(lm, PID_A, 0x401234, TRUE_PATH, 0x1234);
    assert_resolves(lm, PID_A, 0x403fff, TRUE_PATH, 0x3fff);
    assert_unknown(lm, PID_A, 0x3fffff);
    assert_unknown(lm, PID_A, 0x404000);
    assert_unknown(lm, PID_B, 0x401234); /* unknown pid */

    dcpi_image_t *img = dcpi_loadmap_image(lm, 0);
    ck_assert_ptr_nonnull(img);
    ck_assert_int_eq(img->probed_ok, 1);
    ck_assert_int_eq(img->info.is_elf, 1);
    ck_assert_uint_eq(img->index, 0);
    ck_assert_ptr_null(dcpi_loadmap_image(lm, 1));

    /* A mapping of the file's first (read-only) page lies before tstart: ERANGE. */
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_A, 0x500000, 0x1000, 0, 8, 1, 11, RX, TRUE_PATH), 0);
    uint32_t off;
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, PID_A, 0x500010, &img, &off), DCPI_ERANGE);
    ck_assert_uint_eq(dcpi_loadmap_nimages(lm), 1);

    /* Non-executable mappings are ignored. */
    ck_assert_int_eq(
        dcpi_loadmap_mmap(lm, PID_A, 0x600000, 0x1000, 0, 8, 1, 11, PROT_READ, TRUE_PATH), 0);
    assert_unknown(lm, PID_A, 0x600010);
    dcpi_loadmap_free(lm);
}
END_TEST

START_TEST(test_missing_file)
{
    dcpi_loadmap_t *lm = new_map();
    ck_assert_int_eq(
        dcpi_loadmap_mmap(lm, PID_A, 0x700000, 0x2000, 0x3000, 0, 0, 0, RX, MISSING_PATH), 0);
    /* Not probed: tstart 0 and identity file_to_vaddr, so offset = ip - start + pgoff. */
    assert_resolves(lm, PID_A, 0x700100, MISSING_PATH, 0x3100);
    dcpi_image_t *img = dcpi_loadmap_image(lm, 0);
    ck_assert_int_eq(img->probed_ok, 0);
    ck_assert_int_eq(img->info.is_elf, 0);
    ck_assert_uint_eq(img->info.tstart, 0);
    ck_assert_uint_eq(strlen(img->info.id), 16);
    ck_assert_uint_eq(strspn(img->info.id, "0123456789abcdef"), 16);
    dcpi_loadmap_stats_t st;
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.probe_failures, 1);
    ck_assert_uint_eq(st.images, 1);
    ck_assert_uint_eq(st.processes, 1);
    ck_assert_uint_eq(st.mappings, 1);
    dcpi_loadmap_free(lm);
}
END_TEST

START_TEST(test_overlap_replaces)
{
    dcpi_loadmap_t *lm = new_map();
    uint64_t loff = map_text(lm, PID_A, LIBC_PATH, 0x10000, 0x10000, 22);
    map_text(lm, PID_A, TRUE_PATH, 0x14000, 0x4000, 11);
    assert_resolves(lm, PID_A, 0x12000, LIBC_PATH, 0x2000);
    assert_resolves(lm, PID_A, 0x15000, TRUE_PATH, 0x1000);
    assert_resolves(lm, PID_A, 0x1a000, LIBC_PATH, 0xa000);
    dcpi_image_t *img;
    uint64_t start, pgoff;
    ck_assert_int_eq(dcpi_loadmap_lookup(lm, PID_A, 0x1a000, &img, &start, &pgoff), 0);
    ck_assert_uint_eq(start, 0x18000);
    ck_assert_uint_eq(pgoff, loff + 0x8000);
    dcpi_loadmap_stats_t st;
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.mappings, 3);

    /* A new mapping covering several old ones removes them all. */
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_A, 0x8000, 0x20000, 0, 0, 0, 0, RX, MISSING_PATH),
                     0);
    assert_resolves(lm, PID_A, 0x15000, MISSING_PATH, 0xd000);
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.mappings, 1);

    /* An anonymous executable mapping (JIT) over it makes that range unknown. */
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_A, 0x10000, 0x1000, 0, 0, 0, 0, RX, "//anon"), 0);
    assert_unknown(lm, PID_A, 0x10010);
    assert_resolves(lm, PID_A, 0x11000, MISSING_PATH, 0x9000);
    dcpi_loadmap_free(lm);
}
END_TEST

START_TEST(test_munmap_split)
{
    dcpi_loadmap_t *lm = new_map();
    uint64_t loff = map_text(lm, PID_A, LIBC_PATH, 0x10000, 0x10000, 22);
    ck_assert_int_eq(dcpi_loadmap_munmap(lm, PID_A, 0x14000, 0x2000), 0);
    assert_unknown(lm, PID_A, 0x14000);
    assert_unknown(lm, PID_A, 0x15fff);
    assert_resolves(lm, PID_A, 0x13000, LIBC_PATH, 0x3000);
    assert_resolves(lm, PID_A, 0x17000, LIBC_PATH, 0x7000);
    dcpi_image_t *img;
    uint64_t start, pgoff;
    ck_assert_int_eq(dcpi_loadmap_lookup(lm, PID_A, 0x17000, &img, &start, &pgoff), 0);
    ck_assert_uint_eq(start, 0x16000);
    ck_assert_uint_eq(pgoff, loff + 0x6000);
    dcpi_loadmap_stats_t st;
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.mappings, 2);

    /* Unmapping across both pieces trims the first and the second. */
    ck_assert_int_eq(dcpi_loadmap_munmap(lm, PID_A, 0x13000, 0x4000), 0);
    assert_resolves(lm, PID_A, 0x12fff, LIBC_PATH, 0x2fff);
    assert_unknown(lm, PID_A, 0x13000);
    assert_unknown(lm, PID_A, 0x16fff);
    assert_resolves(lm, PID_A, 0x17000, LIBC_PATH, 0x7000);
    /* And everything at once. */
    ck_assert_int_eq(dcpi_loadmap_munmap(lm, PID_A, 0, 0x100000), 0);
    assert_unknown(lm, PID_A, 0x17000);
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.mappings, 0);
    dcpi_loadmap_free(lm);
}
END_TEST

START_TEST(test_fork_exec_exit)
{
    dcpi_loadmap_t *lm = new_map();
    map_text(lm, PID_A, TRUE_PATH, 0x400000, 0x4000, 11);
    map_text(lm, PID_A, LIBC_PATH, 0x7f0000000000, 0x100000, 22);
    ck_assert_int_eq(dcpi_loadmap_fork(lm, PID_A, PID_B), 0);
    assert_resolves(lm, PID_B, 0x401000, TRUE_PATH, 0x1000);
    assert_resolves(lm, PID_B, 0x7f0000000100, LIBC_PATH, 0x100);
    dcpi_image_t *ia, *ib;
    uint32_t off;
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, PID_A, 0x401000, &ia, &off), 0);
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, PID_B, 0x401000, &ib, &off), 0);
    ck_assert_ptr_eq(ia, ib);
    dcpi_loadmap_stats_t st;
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.processes, 2);
    ck_assert_uint_eq(st.mappings, 4);
    ck_assert_uint_eq(st.images, 2);

    ck_assert_int_eq(dcpi_loadmap_exec(lm, PID_B), 0);
    assert_unknown(lm, PID_B, 0x401000);
    assert_unknown(lm, PID_B, 0x7f0000000100);
    assert_resolves(lm, PID_A, 0x401000, TRUE_PATH, 0x1000);
    assert_resolves(lm, PID_A, 0x7f0000000100, LIBC_PATH, 0x100);
    /* New MMAP2 records after exec work on the emptied pid. */
    map_text(lm, PID_B, LIBC_PATH, 0x400000, 0x4000, 22);
    assert_resolves(lm, PID_B, 0x401000, LIBC_PATH, 0x1000);

    ck_assert_int_eq(dcpi_loadmap_exit(lm, PID_A), 0);
    assert_unknown(lm, PID_A, 0x401000);
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.processes, 1);
    ck_assert_uint_eq(st.mappings, 1);
    ck_assert_uint_eq(st.images, 2); /* images live as long as the loadmap */
    /* Forking from an unknown parent is a no-op. */
    ck_assert_int_eq(dcpi_loadmap_fork(lm, PID_A, 1000000003), 0);
    assert_unknown(lm, 1000000003, 0x401000);
    dcpi_loadmap_free(lm);
}
END_TEST

START_TEST(test_vdso)
{
    dcpi_loadmap_t *lm = new_map();
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_A, 0x7fff0000, 0x2000, 0, 0, 0, 0, RX, "[vdso]"), 0);
    assert_resolves(lm, PID_A, 0x7fff0123, "[vdso]", 0x123);
    assert_resolves(lm, PID_A, 0x7fff1fff, "[vdso]", 0x1fff);
    dcpi_image_t *img = dcpi_loadmap_image(lm, 0);
    ck_assert_uint_eq(img->info.tstart, 0);
    ck_assert_uint_eq(strlen(img->info.id), 16);
    ck_assert_uint_eq(strspn(img->info.id, "0123456789abcdef"), 16);
    /* The same in another process is the same image. */
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_B, 0x7ffe0000, 0x2000, 0, 0, 0, 0, RX, "[vdso]"), 0);
    ck_assert_uint_eq(dcpi_loadmap_nimages(lm), 1);
    dcpi_loadmap_stats_t st;
    dcpi_loadmap_stats(lm, &st);
    ck_assert_uint_eq(st.probe_failures, 0);
    dcpi_loadmap_free(lm);
}
END_TEST

START_TEST(test_pseudo_paths_not_images)
{
    static const char *const paths[] = {
        "//anon", "[heap]", "[stack]", "[vsyscall]", "", "memfd:jit (deleted)", "[anon:v8]"};
    dcpi_loadmap_t *lm = new_map();
    uint64_t start = 0x100000;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++, start += 0x10000) {
        ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_A, start, 0x1000, 0, 0, 0, 0, RX, paths[i]), 0);
        assert_unknown(lm, PID_A, start + 0x10);
    }
    ck_assert_uint_eq(dcpi_loadmap_nimages(lm), 0);
    dcpi_loadmap_free(lm);
}
END_TEST

START_TEST(test_image_dedup)
{
    dcpi_loadmap_t *lm = new_map();
    map_text(lm, PID_A, TRUE_PATH, 0x400000, 0x4000, 11);
    map_text(lm, PID_B, TRUE_PATH, 0x500000, 0x4000, 11);
    map_text(lm, PID_B, TRUE_PATH, 0x600000, 0x4000, 11);
    ck_assert_uint_eq(dcpi_loadmap_nimages(lm), 1);
    /* Another inode with the same path is another image (the file was replaced). */
    map_text(lm, PID_B, TRUE_PATH, 0x700000, 0x4000, 12);
    map_text(lm, PID_B, LIBC_PATH, 0x800000, 0x4000, 22);
    ck_assert_uint_eq(dcpi_loadmap_nimages(lm), 3);
    for (unsigned i = 0; i < 3; i++)
        ck_assert_uint_eq(dcpi_loadmap_image(lm, i)->index, i);
    ck_assert_str_eq(dcpi_loadmap_image(lm, 2)->path, LIBC_PATH);
    /* Unknown identity (0:0 inode 0): dedup by path. */
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_A, 0x900000, 0x1000, 0, 0, 0, 0, RX, LIBC_PATH), 0);
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, PID_B, 0x900000, 0x1000, 0, 0, 0, 0, RX, LIBC_PATH), 0);
    ck_assert_uint_eq(dcpi_loadmap_nimages(lm), 4);
    dcpi_loadmap_free(lm);
}
END_TEST

__attribute__((noinline)) int loadmap_test_target(int x)
{
    return x * 3 + 1;
}

START_TEST(test_scan_self)
{
    dcpi_loadmap_t *lm = new_map();
    ck_assert_int_eq(dcpi_loadmap_scan_proc(lm, getpid()), 0);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';

    uint64_t off, vaddr;
    elf_text(exe, &off, &vaddr);
    uint64_t expect = elf_symbol(exe, "loadmap_test_target") - vaddr;
    dcpi_image_t *img = NULL;
    uint32_t got = 0;
    ck_assert_int_eq(
        dcpi_loadmap_resolve(lm, getpid(), (uint64_t)(uintptr_t)&loadmap_test_target, &img, &got),
        0);
    ck_assert_str_eq(img->path, exe);
    ck_assert_int_eq(img->probed_ok, 1);
    ck_assert_uint_eq(img->info.tstart, vaddr);
    ck_assert_uint_eq(got, expect);

    /* libc's own printf (RTLD_DEFAULT would give a sanitizer's interceptor under ASan). */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(libc);
    void *pf = dlsym(libc, "printf");
    ck_assert_ptr_nonnull(pf);
    dlclose(libc);
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, getpid(), (uint64_t)(uintptr_t)pf, &img, &got), 0);
    ck_assert_ptr_nonnull(strstr(img->path, "libc"));
    /* Stack and heap are not images. */
    int local = loadmap_test_target(1);
    assert_unknown(lm, getpid(), (uint64_t)(uintptr_t)&local);
    ck_assert_int_eq(dcpi_loadmap_scan_proc(lm, 1000000001), DCPI_ESRCH);
    dcpi_loadmap_free(lm);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    ck_assert_int_eq(system(cmd), 0);
}

/* The map_files entry of a page of /bin/true mapped here can be followed (CAP_SYS_ADMIN). */
static const char *map_files_unreadable(void)
{
    static char why[300];
    int fd = open(TRUE_PATH, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return "cannot open " TRUE_PATH;
    void *addr = mmap(NULL, 0x1000, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (addr == MAP_FAILED)
        return "cannot map " TRUE_PATH;
    char mf[128];
    struct stat st;
    snprintf(mf, sizeof mf, "/proc/self/map_files/%llx-%llx", (unsigned long long)(uintptr_t)addr,
             (unsigned long long)(uintptr_t)addr + 0x1000);
    int rc = stat(mf, &st), e = errno;
    munmap(addr, 0x1000);
    if (rc == 0)
        return NULL;
    snprintf(why, sizeof why,
             "%s cannot be followed (%s; needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE): the case "
             "probes a replaced, deleted file through it",
             mf, strerror(e));
    return why;
}

/* Drop the capabilities that open /proc/self/map_files from the effective set (they stay
 * permitted: saved is what set_caps restores), so that the fallback is tested as root too. */
static void drop_map_files_caps(struct __user_cap_data_struct saved[2])
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    ck_assert_int_eq(syscall(SYS_capget, &h, d), 0);
    memcpy(saved, d, sizeof d);
    d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
    d[40 / 32].effective &= ~(1u << (40 % 32)); /* CAP_CHECKPOINT_RESTORE (Linux 5.9) */
    ck_assert_int_eq(syscall(SYS_capset, &h, d), 0);
}

static void set_caps(struct __user_cap_data_struct d[2])
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    ck_assert_int_eq(syscall(SYS_capset, &h, d), 0);
}

/*
 * A mapped file replaced (renamed over) and then deleted: the image is still probed from the
 * mapped file through /proc/self/map_files when it can be followed (readable), else from the
 * path (the fallback).
 */
static void map_files_case(int readable)
{
    char path[] = "/tmp/check_loadmap.XXXXXX", other[] = "/tmp/check_loadmap.XXXXXX";
    int fd = mkstemp(path), ofd = mkstemp(other);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_ge(ofd, 0);
    close(ofd);
    copy_file(TRUE_PATH, path);
    copy_file(LIBC_PATH, other);
    uint64_t off, vaddr;
    elf_text(path, &off, &vaddr);
    void *addr = mmap(NULL, 0x3000, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)off);
    ck_assert_ptr_ne(addr, MAP_FAILED);
    close(fd);
    uint64_t start = (uint64_t)(uintptr_t)addr;
    ck_assert_int_eq(rename(other, path), 0); /* path now names libc, the mapping is true */

    dcpi_image_info_t truth;
    ck_assert_int_eq(dcpi_image_probe(TRUE_PATH, &truth, NULL), 0);
    char mf[128];
    snprintf(mf, sizeof mf, "/proc/self/map_files/%llx-%llx", (unsigned long long)start,
             (unsigned long long)start + 0x3000);
    struct stat st;
    ck_assert_msg((stat(mf, &st) == 0) == readable, "%s is %sreadable", mf, readable ? "not " : "");

    dcpi_loadmap_t *lm = new_map();
    ck_assert_int_eq(dcpi_loadmap_mmap(lm, getpid(), start, 0x3000, off, 0, 0, 0, RX, path), 0);
    dcpi_image_t *img = NULL;
    uint32_t got = 0;
    if (readable) {
        ck_assert_int_eq(dcpi_loadmap_resolve(lm, getpid(), start + 0x10, &img, &got), 0);
        ck_assert_str_eq(img->info.id, truth.id);
        ck_assert_uint_eq(got, 0x10);
    } else {
        /* The fallback probes the path, which now holds libc. */
        dcpi_image_info_t now;
        ck_assert_int_eq(dcpi_image_probe(LIBC_PATH, &now, NULL), 0);
        ck_assert_int_eq(dcpi_loadmap_lookup(lm, getpid(), start + 0x10, &img, NULL, NULL), 0);
        ck_assert_str_eq(img->info.id, now.id);
    }
    ck_assert_str_eq(img->path, path);
    dcpi_loadmap_free(lm);

    /* Deleted: /proc/self/maps says "PATH (deleted)". */
    ck_assert_int_eq(unlink(path), 0);
    lm = new_map();
    ck_assert_int_eq(dcpi_loadmap_scan_proc(lm, getpid()), 0);
    ck_assert_int_eq(dcpi_loadmap_resolve(lm, getpid(), start + 0x10, &img, &got), 0);
    char want[256];
    snprintf(want, sizeof want, "%s (deleted)", path);
    ck_assert_str_eq(img->path, want);
    ck_assert_int_eq(img->probed_ok, readable);
    ck_assert_uint_eq(got, readable ? 0x10 : off + 0x10);
    if (readable)
        ck_assert_str_eq(img->info.id, truth.id);
    dcpi_loadmap_free(lm);
    munmap(addr, 0x3000);
}

START_TEST(test_map_files)
{
    map_files_case(1);
}
END_TEST

/* Without the capability (dropped here when this process has it): probed from the path. */
START_TEST(test_map_files_fallback)
{
    struct __user_cap_data_struct saved[2];
    drop_map_files_caps(saved);
    map_files_case(0);
    set_caps(saved); /* for the next tests when CK_FORK=no */
}
END_TEST

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Scan every process; the time is printed (not asserted: it depends on the machine). */
START_TEST(test_scan_all)
{
    dcpi_loadmap_t *lm = new_map();
    double t0 = now_ms();
    ck_assert_int_eq(dcpi_loadmap_scan_proc(lm, -1), 0);
    double t1 = now_ms();
    dcpi_loadmap_stats_t st;
    dcpi_loadmap_stats(lm, &st);
    printf("loadmap: scanned all processes in %.2f ms: %lu processes, %lu mappings, "
           "%lu images, %lu probe failures\n",
           t1 - t0, st.processes, st.mappings, st.images, st.probe_failures);
    /* A second scan finds every image known: no probing, so it shows the parse cost. */
    ck_assert_int_eq(dcpi_loadmap_scan_proc(lm, -1), 0);
    printf("loadmap: rescan with all images known in %.2f ms\n", now_ms() - t1);
    ck_assert_uint_ge(st.processes, 1);
    ck_assert_uint_ge(st.images, 2);
    /* The scan of all includes this process. */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    dcpi_image_t *img = NULL;
    uint32_t off;
    ck_assert_int_eq(
        dcpi_loadmap_resolve(lm, getpid(), (uint64_t)(uintptr_t)&loadmap_test_target, &img, &off),
        0);
    ck_assert_str_eq(img->path, exe);
    dcpi_loadmap_free(lm);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loadmap");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_resolve_inside_outside);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_overlap_replaces);
    tcase_add_test(tc, test_munmap_split);
    tcase_add_test(tc, test_fork_exec_exit);
    tcase_add_test(tc, test_vdso);
    tcase_add_test(tc, test_pseudo_paths_not_images);
    tcase_add_test(tc, test_image_dedup);
    tcase_add_test(tc, test_scan_self);
    tcase_add_test(tc, test_map_files_fallback);
    tcase_add_test(tc, test_scan_all);
    suite_add_tcase(s, tc);
    TCase *tm = dcpi_check_tcase("map_files");
    tcase_add_test(tm, test_map_files);
    suite_add_tcase(s, tm);
    static const struct dcpi_check_need needs[] = {{"map_files", map_files_unreadable}};
    return dcpi_check_run(s, needs, sizeof needs / sizeof needs[0]);
}
