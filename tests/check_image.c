/*
 * check_image.c - image identity (build-id / hash fallback), text range, PT_LOAD address
 * mapping, kernel id and database directory names, checked against binaries compiled with gcc
 * at test time and against readelf / objcopy output.
 */
#include <check.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/image/image.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

static const char *prog_src = "#include <stdio.h>\n"
                              "int counter;\n"
                              "int work(int x) { return x * 7 + counter; }\n"
                              "int main(int argc, char **argv) { printf(\"%d\\n\", work(argc)); "
                              "return 0; }\n";

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_image.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* Compile prog_src into tmpdir/name with extra gcc flags; returns the binary's path. */
static const char *build(const char *name, const char *flags)
{
    static char bin[512];
    char src[512], cmd[2048];
    snprintf(src, sizeof src, "%s/%s.c", tmpdir, name);
    snprintf(bin, sizeof bin, "%s/%s", tmpdir, name);
    write_text(src, prog_src);
    snprintf(cmd, sizeof cmd, "gcc -O1 %s -o '%s' '%s'", flags, bin, src);
    ck_assert_msg(system(cmd) == 0, "compile failed: %s", cmd);
    return bin;
}

/* Run cmd and return its whole stdout (malloc'd). */
static char *run_capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (cap - n < 1024)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    return buf;
}

static int is_lower_hex(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
            return 0;
    return 1;
}

/* Independent NT_GNU_BUILD_ID parser over the raw bytes of the .note.gnu.build-id section. */
static void note_build_id(const char *bin, char *out)
{
    char raw[600], cmd[1400];
    snprintf(raw, sizeof raw, "%s.note", bin);
    snprintf(cmd, sizeof cmd, "objcopy -O binary --only-section=.note.gnu.build-id '%s' '%s'", bin,
             raw);
    ck_assert_int_eq(system(cmd), 0);
    unsigned char buf[256];
    FILE *f = fopen(raw, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_ge(n, 16);
    uint32_t namesz, descsz, type;
    memcpy(&namesz, buf, 4);
    memcpy(&descsz, buf + 4, 4);
    memcpy(&type, buf + 8, 4);
    ck_assert_uint_eq(type, 3);
    ck_assert_uint_eq(namesz, 4);
    ck_assert_str_eq((const char *)buf + 12, "GNU");
    ck_assert_uint_le(16 + descsz, n);
    for (uint32_t i = 0; i < descsz; i++)
        sprintf(out + 2 * i, "%02x", buf[16 + i]);
}

/* The "Build ID: ..." readelf -n prints. */
static void readelf_build_id(const char *bin, char *out)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "readelf -n '%s'", bin);
    char *txt = run_capture(cmd);
    char *p = strstr(txt, "Build ID: ");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sscanf(p + 10, "%47[0-9a-f]", out), 1);
    free(txt);
}

START_TEST(test_build_id)
{
    make_tmpdir();
    const char *bin = build("withid", "-Wl,--build-id=sha1");
    dcpi_image_info_t img;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_image_probe(bin, &img, err), 0);
    char want_readelf[64] = "", want_note[64] = "";
    readelf_build_id(bin, want_readelf);
    note_build_id(bin, want_note);
    ck_assert_int_eq(img.is_elf, 1);
    ck_assert_int_eq(img.id_is_buildid, 1);
    ck_assert_uint_eq(strlen(img.id), 40);
    ck_assert_str_eq(img.id, want_readelf);
    ck_assert_str_eq(img.id, want_note);
    remove_tmpdir();
}
END_TEST

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= ((const unsigned char *)p)[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The documented fallback: FNV-1a 64 of "PATH\0SIZE\0SEC\0NSEC" (decimal numbers). */
static void expected_hash(const char *path, char *out)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s%c%lld%c%lld%c%ld", path, 0, (long long)st.st_size, 0,
                     (long long)st.st_mtim.tv_sec, 0, (long)st.st_mtim.tv_nsec);
    sprintf(out, "%016" PRIx64, fnv1a(0xcbf29ce484222325ULL, buf, (size_t)n));
}

START_TEST(test_no_build_id_hash)
{
    make_tmpdir();
    const char *bin = build("noid", "-Wl,--build-id=none");
    dcpi_image_info_t a, b;
    ck_assert_int_eq(dcpi_image_probe(bin, &a, NULL), 0);
    ck_assert_int_eq(a.is_elf, 1);
    ck_assert_int_eq(a.id_is_buildid, 0);
    ck_assert_uint_eq(strlen(a.id), 16);
    ck_assert(is_lower_hex(a.id));
    char want[32];
    expected_hash(bin, want);
    ck_assert_str_eq(a.id, want);
    /* Same file, same id; rebuilt with another mtime, another id. */
    ck_assert_int_eq(dcpi_image_probe(bin, &b, NULL), 0);
    ck_assert_str_eq(a.id, b.id);
    bin = build("noid", "-Wl,--build-id=none");
    struct timespec ts[2] = {{.tv_sec = 1000000000, .tv_nsec = 5},
                             {.tv_sec = 1000000000, .tv_nsec = 5}};
    ck_assert_int_eq(utimensat(AT_FDCWD, bin, ts, 0), 0);
    ck_assert_int_eq(dcpi_image_probe(bin, &b, NULL), 0);
    ck_assert_str_ne(a.id, b.id);
    expected_hash(bin, want);
    ck_assert_str_eq(b.id, want);
    remove_tmpdir();
}
END_TEST

typedef struct load {
    uint64_t off, vaddr, filesz, memsz;
    int exec;
} load_t;

/* The LOAD lines of readelf -lW. */
static int readelf_loads(const char *bin, load_t *out, int max)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "readelf -lW '%s'", bin);
    char *txt = run_capture(cmd);
    int n = 0;
    for (char *line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
        uint64_t off, va, pa, fs, ms;
        int end = 0;
        if (sscanf(line, " LOAD %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 "%n",
                   &off, &va, &pa, &fs, &ms, &end) != 5 ||
            n == max)
            continue;
        /* The flags ("R E", "RW ", ...) sit between MemSiz and Align. */
        char *align = strstr(line + end, " 0x");
        char *flags = line + end;
        int exec = 0;
        for (; align && flags < align; flags++)
            exec |= *flags == 'E';
        out[n++] = (load_t){off, va, fs, ms, exec};
    }
    free(txt);
    return n;
}

static void check_loads(const char *bin)
{
    dcpi_image_info_t img;
    ck_assert_int_eq(dcpi_image_probe(bin, &img, NULL), 0);
    load_t l[DCPI_IMAGE_MAXSEG];
    int n = readelf_loads(bin, l, DCPI_IMAGE_MAXSEG);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(img.nseg, n);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_uint_eq(img.seg[i].offset, l[i].off);
        ck_assert_uint_eq(img.seg[i].vaddr, l[i].vaddr);
        ck_assert_uint_eq(img.seg[i].filesz, l[i].filesz);
        ck_assert_uint_eq(img.seg[i].memsz, l[i].memsz);
        ck_assert_int_eq((img.seg[i].flags & 1) != 0, l[i].exec); /* PF_X == 1 */
        if (l[i].exec) {
            lo = l[i].vaddr < lo ? l[i].vaddr : lo;
            hi = l[i].vaddr + l[i].memsz > hi ? l[i].vaddr + l[i].memsz : hi;
        }
    }
    ck_assert_uint_ne(lo, UINT64_MAX);
    ck_assert_uint_eq(img.tstart, lo);
    ck_assert_uint_eq(img.tsize, hi - lo);
}

START_TEST(test_text_range)
{
    make_tmpdir();
    check_loads(build("pie", "-fPIE -pie"));
    check_loads(build("nopie", "-fno-PIE -no-pie"));
    check_loads("/bin/sh");
    remove_tmpdir();
}
END_TEST

/* The address nm prints for sym. */
static uint64_t nm_addr(const char *bin, const char *sym)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "nm '%s' | awk '$3 == \"%s\" { print $1 }'", bin, sym);
    char *txt = run_capture(cmd);
    uint64_t a = strtoull(txt, NULL, 16);
    free(txt);
    ck_assert_uint_ne(a, 0);
    return a;
}

static void check_round_trip(const char *bin, int pie)
{
    dcpi_image_info_t img;
    ck_assert_int_eq(dcpi_image_probe(bin, &img, NULL), 0);
    for (int i = 0; i < img.nseg; i++) {
        const dcpi_segment_t *s = &img.seg[i];
        if (s->filesz == 0)
            continue;
        uint64_t offs[3] = {s->offset, s->offset + s->filesz / 2, s->offset + s->filesz - 1};
        for (int k = 0; k < 3; k++) {
            uint64_t va = dcpi_image_file_to_vaddr(&img, offs[k]), back = 0;
            ck_assert_uint_eq(va, offs[k] - s->offset + s->vaddr);
            ck_assert_int_eq(dcpi_image_vaddr_to_file(&img, va, &back), 0);
            ck_assert_uint_eq(back, offs[k]);
        }
    }
    /* main's vaddr (from nm) maps to a file offset and back. */
    uint64_t main_va = nm_addr(bin, "main"), off = 0;
    if (!pie)
        ck_assert_uint_ge(main_va, 0x400000);
    ck_assert_int_eq(dcpi_image_vaddr_to_file(&img, main_va, &off), 0);
    ck_assert_uint_eq(dcpi_image_file_to_vaddr(&img, off), main_va);
    ck_assert(main_va >= img.tstart && main_va < img.tstart + img.tsize);
    /* .bss (counter) has no file bytes; an offset past every segment maps to itself. */
    uint64_t bss = nm_addr(bin, "counter");
    ck_assert_int_eq(dcpi_image_vaddr_to_file(&img, bss, &off), DCPI_ENOENT);
    ck_assert_uint_eq(dcpi_image_file_to_vaddr(&img, 0x7fffffff0ULL), 0x7fffffff0ULL);
}

START_TEST(test_round_trip)
{
    make_tmpdir();
    check_round_trip(build("pie", "-fPIE -pie"), 1);
    check_round_trip(build("nopie", "-fno-PIE -no-pie"), 0);
    remove_tmpdir();
}
END_TEST

START_TEST(test_not_elf)
{
    make_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/script.sh", tmpdir);
    write_text(path, "#!/bin/sh\necho hello\n");
    dcpi_image_info_t img;
    ck_assert_int_eq(dcpi_image_probe(path, &img, NULL), 0);
    ck_assert_int_eq(img.is_elf, 0);
    ck_assert_int_eq(img.id_is_buildid, 0);
    ck_assert_uint_eq(img.tstart, 0);
    ck_assert_uint_eq(img.tsize, 21);
    ck_assert_int_eq(img.nseg, 0);
    char want[32];
    expected_hash(path, want);
    ck_assert_str_eq(img.id, want);
    ck_assert_uint_eq(dcpi_image_file_to_vaddr(&img, 7), 7);
    uint64_t off;
    ck_assert_int_eq(dcpi_image_vaddr_to_file(&img, 7, &off), DCPI_ENOENT);
    remove_tmpdir();
}
END_TEST

START_TEST(test_errors)
{
    dcpi_image_info_t img;
    char err[DCPI_ERRLEN] = "";
    const char *missing = "/nonexistent/dir/prog-xyz";
    ck_assert_int_eq(dcpi_image_probe(missing, &img, err), DCPI_ENOENT);
    ck_assert_str_eq(err, "/nonexistent/dir/prog-xyz: No such file or directory");
    ck_assert_int_eq(dcpi_image_probe(missing, &img, NULL), DCPI_ENOENT);
    ck_assert_int_eq(dcpi_image_probe("/tmp", &img, err), DCPI_EINVAL);
    ck_assert_str_eq(err, "/tmp: not a regular file");
    ck_assert_int_eq(dcpi_image_probe(NULL, &img, err), DCPI_EINVAL);
}
END_TEST

START_TEST(test_kernel_id)
{
    char a[DCPI_IMAGE_IDLEN], b[DCPI_IMAGE_IDLEN];
    dcpi_image_kernel_id(a);
    dcpi_image_kernel_id(b);
    ck_assert(is_lower_hex(a));
    ck_assert_str_eq(a, b);
    ck_assert(strlen(a) == 40 || strlen(a) == 16 || strlen(a) == 32);
    /* With /sys/kernel/notes readable, the id is its build-id, as an independent grep finds it. */
    char *hex = run_capture("od -An -tx1 -v /sys/kernel/notes 2>/dev/null | tr -d ' \\n' | "
                            "grep -o '040000001400000003000000474e5500[0-9a-f]\\{40\\}' | "
                            "head -1 | cut -c33-");
    if (strlen(hex) >= 40) {
        hex[40] = '\0';
        ck_assert_str_eq(a, hex);
    } else {
        fprintf(stderr,
                "check_image: no 20-byte build-id in /sys/kernel/notes, id %s is the "
                "/proc/version hash\n",
                a);
    }
    free(hex);
}
END_TEST

START_TEST(test_dirname)
{
    char out[128];
    dcpi_image_dirname("/usr/lib/x86_64-linux-gnu/libc.so.6", "abc123", out, sizeof out);
    ck_assert_str_eq(out, "libc.so.6_abc123");
    dcpi_image_dirname("[vdso]", "00ff", out, sizeof out);
    ck_assert_str_eq(out, "vdso_00ff");
    dcpi_image_dirname("/tmp/my prog:1(x)", "ab", out, sizeof out);
    ck_assert_str_eq(out, "my_prog_1_x__ab");
    dcpi_image_dirname("rel/g++-12.x_y", "ab", out, sizeof out);
    ck_assert_str_eq(out, "g++-12.x_y_ab");
    dcpi_image_dirname("/dir/", "ab", out, sizeof out);
    ck_assert_str_eq(out, "unknown_ab");
    dcpi_image_dirname("/usr/bin/ls", "0123456789", out, 8);
    ck_assert_str_eq(out, "ls_0123");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("image");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_build_id);
    tcase_add_test(tc, test_no_build_id_hash);
    tcase_add_test(tc, test_text_range);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_not_elf);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_kernel_id);
    tcase_add_test(tc, test_dirname);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
