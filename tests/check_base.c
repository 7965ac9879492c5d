/*
 * check_base.c - core/base: the one error formatter and errno mapping, checked growth, byte
 * order, the FNV-1a hash, the path formatter, the whole-file reader and its gunzipping twin,
 * the streamed writers (gzip as it comes, a file copied through a temporary file).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/hash.h"
#include "core/base/mem.h"
#include "core/base/units.h"
#include "dcpi/errno.h"

START_TEST(test_errf)
{
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi__errf(err, DCPI_EFORMAT, "%s: bad %d", "f.prof", 7), DCPI_EFORMAT);
    ck_assert_str_eq(err, "f.prof: bad 7");
    ck_assert_int_eq(dcpi__errf(NULL, DCPI_EIO, "nothing written"), DCPI_EIO);
    char big[2 * DCPI_ERRLEN];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    dcpi__errf(err, DCPI_EINVAL, "%s", big); /* cut to the buffer, NUL-terminated */
    ck_assert_uint_eq(strlen(err), DCPI_ERRLEN - 1);
}
END_TEST

START_TEST(test_errno_code)
{
    static const struct {
        int e, code;
    } map[] = {
        {ENOENT, DCPI_ENOENT},       {ENOTDIR, DCPI_ENOENT}, {ELOOP, DCPI_ENOENT},
        {ENAMETOOLONG, DCPI_ENOENT}, {ENOSPC, DCPI_ENOSPC},  {EDQUOT, DCPI_ENOSPC},
        {EPERM, DCPI_EPERM},         {EROFS, DCPI_EPERM},    {EINVAL, DCPI_EINVAL},
        {EISDIR, DCPI_EINVAL},       {ENOMEM, DCPI_ENOMEM},  {EEXIST, DCPI_EEXIST},
        {EACCES, DCPI_EACCES},       {EBUSY, DCPI_EBUSY},    {ESRCH, DCPI_ESRCH},
        {EMFILE, DCPI_EIO},          {EPIPE, DCPI_EIO},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        ck_assert_msg(dcpi__errno_code(map[i].e) == map[i].code, "errno %d -> %d, expected %d",
                      map[i].e, dcpi__errno_code(map[i].e), map[i].code);
}
END_TEST

START_TEST(test_grow)
{
    uint32_t *a = NULL;
    size_t cap = 0;
    ck_assert_int_eq(dcpi__grow((void **)&a, &cap, 1, sizeof *a), 0);
    ck_assert_uint_eq(cap, 16);
    ck_assert_int_eq(dcpi__grow((void **)&a, &cap, 16, sizeof *a), 0); /* fits: unchanged */
    ck_assert_uint_eq(cap, 16);
    ck_assert_int_eq(dcpi__grow((void **)&a, &cap, 100, sizeof *a), 0);
    ck_assert_uint_eq(cap, 128);
    a[99] = 7; /* the memory is there */
    uint32_t *keep = a;
    /* a size that overflows size_t fails like an allocation failure, leaving the array alone */
    ck_assert_int_eq(dcpi__grow((void **)&a, &cap, SIZE_MAX / 2 + 2, sizeof *a), DCPI_ENOMEM);
    ck_assert_ptr_eq(a, keep);
    ck_assert_uint_eq(cap, 128);
    ck_assert_int_eq(dcpi__grow((void **)&a, &cap, SIZE_MAX / 4, 1u << 20), DCPI_ENOMEM);
    ck_assert_uint_eq(cap, 128);
    free(a);
}
END_TEST

START_TEST(test_bytes)
{
    unsigned char b[8];
    ck_assert_ptr_eq(dcpi__put_le32(b, 0x11223344u), b + 4);
    ck_assert_uint_eq(b[0], 0x44);
    ck_assert_uint_eq(b[3], 0x11);
    ck_assert_uint_eq(dcpi__get_le32(b), 0x11223344u);
    dcpi__put_le64(b, 0x0102030405060708ull);
    ck_assert_uint_eq(b[0], 0x08);
    ck_assert_uint_eq(b[7], 0x01);
    ck_assert_uint_eq(dcpi__get_le64(b), 0x0102030405060708ull);
    dcpi__put_le16(b + 1, 0xbeef); /* unaligned */
    ck_assert_uint_eq(dcpi__get_le16(b + 1), 0xbeef);
    ck_assert_uint_eq(b[1], 0xef);
}
END_TEST

START_TEST(test_fnv1a)
{
    /* the published 64-bit FNV-1a test vectors */
    ck_assert_uint_eq(dcpi__fnv1a(DCPI_FNV64_OFFSET, "", 0), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(dcpi__fnv1a(DCPI_FNV64_OFFSET, "a", 1), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(dcpi__fnv1a(DCPI_FNV64_OFFSET, "foobar", 6), 0x85944171f73967e8ull);
    /* continuing a hash is hashing the concatenation */
    ck_assert_uint_eq(dcpi__fnv1a(dcpi__fnv1a(DCPI_FNV64_OFFSET, "foo", 3), "bar", 3),
                      0x85944171f73967e8ull);
}
END_TEST

START_TEST(test_pathf)
{
    char p[8];
    ck_assert_int_eq(dcpi__pathf(p, sizeof p, "%s/%d", "ab", 12), 0);
    ck_assert_str_eq(p, "ab/12");
    ck_assert_int_eq(dcpi__pathf(p, sizeof p, "%s/%s", "abcd", "efgh"), DCPI_ERANGE);
    ck_assert_uint_eq(strlen(p), sizeof p - 1);
}
END_TEST

START_TEST(test_read_file)
{
    char err[DCPI_ERRLEN] = "";
    void *buf = NULL;
    size_t len = 0;
    /* /proc files report size 0: the reader reads to the end anyway */
    ck_assert_int_eq(dcpi__read_file("/proc/self/status", 0, &buf, &len, err), 0);
    ck_assert_uint_gt(len, 0);
    ck_assert_ptr_nonnull(memmem(buf, len, "Name:", 5));
    free(buf);
    buf = NULL;
    ck_assert_int_eq(dcpi__read_file("/nonexistent/dcpi-check", 0, &buf, &len, err), DCPI_ENOENT);
    ck_assert_ptr_null(buf);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/dcpi-check"));
}
END_TEST

/* A text of n lines "LINE i", malloc'd, its length in *len. */
static char *lines_text(int n, size_t *len)
{
    char *text = NULL;
    FILE *m = open_memstream(&text, len);
    for (int i = 0; i < n; i++)
        fprintf(m, "ffffffff8100%04x T func_%d\n", i, i);
    fclose(m);
    return text;
}

static void put_file(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

/* plain and gzip files read alike; the gzip one is what zlib's own gzread reads too */
START_TEST(test_read_file_gz)
{
    char dir[] = "/tmp/dcpi-check-gz.XXXXXX", plain[64], gz[64], err[DCPI_ERRLEN] = "";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(plain, sizeof plain, "%s/plain", dir);
    snprintf(gz, sizeof gz, "%s/text.gz", dir);
    size_t tlen = 0, len = 0;
    char *text = lines_text(5000, &tlen);
    void *buf = NULL;
    put_file(plain, text, tlen);
    ck_assert_int_eq(dcpi__read_file_gz(plain, 0, &buf, &len, err), 0);
    ck_assert_uint_eq(len, tlen);
    ck_assert_mem_eq(buf, text, tlen);
    free(buf);

    ck_assert_int_eq(dcpi__write_atomic_gz(gz, text, tlen, err), 0);
    void *raw = NULL;
    size_t rlen = 0;
    ck_assert_int_eq(dcpi__read_file(gz, 0, &raw, &rlen, err), 0);
    ck_assert_uint_lt(rlen, tlen / 4); /* compressed */
    ck_assert_int_eq(((unsigned char *)raw)[0], 0x1f);
    ck_assert_int_eq(((unsigned char *)raw)[1], 0x8b);
    gzFile zf = gzopen(gz, "rb");
    ck_assert_ptr_nonnull(zf);
    char *back = malloc(tlen + 1);
    ck_assert_int_eq(gzread(zf, back, (unsigned)tlen + 1), (int)tlen);
    gzclose(zf);
    ck_assert_mem_eq(back, text, tlen);
    free(back);
    ck_assert_int_eq(dcpi__read_file_gz(gz, 0, &buf, &len, err), 0);
    ck_assert_uint_eq(len, tlen);
    ck_assert_mem_eq(buf, text, tlen);
    ck_assert_int_eq(((char *)buf)[len], '\0');
    free(buf);

    /* two members, as gzip -c a b > c writes: one text */
    char *two = malloc(2 * rlen);
    memcpy(two, raw, rlen);
    memcpy(two + rlen, raw, rlen);
    ck_assert_int_eq(dcpi__gunzip(two, 2 * rlen, &buf, &len, NULL), 0);
    ck_assert_uint_eq(len, 2 * tlen);
    ck_assert_mem_eq((char *)buf + tlen, text, tlen);
    free(buf);
    free(two);
    free(raw);
    free(text);
    remove(plain);
    remove(gz);
    rmdir(dir);
}
END_TEST

/* corrupt or truncated gzip data: one line naming the file and the reason, nothing returned */
START_TEST(test_read_file_gz_bad)
{
    char dir[] = "/tmp/dcpi-check-gz.XXXXXX", path[64], want[128], err[DCPI_ERRLEN] = "";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/bad.gz", dir);
    size_t tlen = 0, zlen = 0, len = 0;
    char *text = lines_text(2000, &tlen);
    void *z = NULL, *buf = NULL;
    ck_assert_int_eq(dcpi__gzip(text, tlen, &z, &zlen), 0);
    unsigned char *zb = z;

    zb[zlen - 6] ^= 0xff; /* the CRC-32 of the trailer */
    put_file(path, z, zlen);
    ck_assert_int_eq(dcpi__read_file_gz(path, 0, &buf, &len, err), DCPI_EFORMAT);
    ck_assert_ptr_null(buf);
    snprintf(want, sizeof want, "%s: corrupt gzip data (incorrect data check)", path);
    ck_assert_str_eq(err, want);
    zb[zlen - 6] ^= 0xff;

    zb[2] = 7; /* compression method: not deflate */
    put_file(path, z, zlen);
    ck_assert_int_eq(dcpi__read_file_gz(path, 0, &buf, &len, err), DCPI_EFORMAT);
    snprintf(want, sizeof want, "%s: corrupt gzip data (unknown compression method)", path);
    ck_assert_str_eq(err, want);
    zb[2] = 8;

    put_file(path, z, zlen / 2);
    ck_assert_int_eq(dcpi__read_file_gz(path, 0, &buf, &len, err), DCPI_ETRUNC);
    snprintf(want, sizeof want, "%s: truncated gzip data", path);
    ck_assert_str_eq(err, want);

    char *junk = malloc(zlen + 4);
    memcpy(junk, z, zlen);
    memcpy(junk + zlen, "junk", 4);
    put_file(path, junk, zlen + 4);
    ck_assert_int_eq(dcpi__read_file_gz(path, 0, &buf, &len, err), DCPI_EFORMAT);
    snprintf(want, sizeof want, "%s: corrupt gzip data (data after the end of the gzip stream)",
             path);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(strchr(err, '\n'));
    ck_assert_ptr_null(buf);
    free(junk);
    free(z);
    free(text);
    remove(path);
    rmdir(dir);
}
END_TEST

/* A fill of 600 pieces: the lines of lines_text(30000) in 50-line pieces; fails at piece stop. */
typedef struct pieces {
    const char *text;
    size_t len, stop;
} pieces_t;

static int put_pieces(void *arg, dcpi__gzout_t *out)
{
    const pieces_t *p = arg;
    size_t at = 0, piece = 0;
    while (at < p->len) {
        if (piece++ == p->stop)
            return DCPI_EIO;
        size_t end = at;
        for (int k = 0; k < 50 && end < p->len; k++)
            end = (size_t)(strchr(p->text + end, '\n') - p->text) + 1;
        int rc = dcpi__gzput(out, p->text + at, end - at);
        if (rc < 0)
            return rc;
        at = end;
    }
    return 0;
}

/* Files in dir (the temporary files left behind count). */
static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

/* gzip written as it comes reads back whole (zlib's gzread too); a fill that fails leaves the
 * old file as it was and no temporary file; a copy through a temporary file is byte-identical */
START_TEST(test_streamed_writers)
{
    char dir[] = "/tmp/dcpi-check-gzfill.XXXXXX", gz[64], copy[64], err[DCPI_ERRLEN] = "";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(gz, sizeof gz, "%s/text.gz", dir);
    snprintf(copy, sizeof copy, "%s/copy", dir);
    size_t tlen = 0, len = 0;
    char *text = lines_text(30000, &tlen);
    pieces_t p = {text, tlen, SIZE_MAX};
    ck_assert_int_eq(dcpi__write_atomic_gz_fill(gz, put_pieces, &p, err), 0);
    void *buf = NULL;
    ck_assert_int_eq(dcpi__read_file_gz(gz, 0, &buf, &len, err), 0);
    ck_assert_uint_eq(len, tlen);
    ck_assert_mem_eq(buf, text, tlen);
    free(buf);
    gzFile zf = gzopen(gz, "rb");
    char *back = malloc(tlen + 1);
    ck_assert_int_eq(gzread(zf, back, (unsigned)tlen + 1), (int)tlen);
    gzclose(zf);
    ck_assert_mem_eq(back, text, tlen);
    free(back);

    void *before = NULL, *after = NULL;
    size_t blen = 0, alen = 0;
    ck_assert_int_eq(dcpi__read_file(gz, 0, &before, &blen, err), 0);
    p.stop = 300;
    ck_assert_int_eq(dcpi__write_atomic_gz_fill(gz, put_pieces, &p, err), DCPI_EIO);
    ck_assert_ptr_nonnull(strstr(err, gz));
    ck_assert_int_eq(dcpi__read_file(gz, 0, &after, &alen, err), 0);
    ck_assert_uint_eq(alen, blen);
    ck_assert_mem_eq(after, before, blen);
    ck_assert_int_eq(count_files(dir), 1);

    dcpi__atomic_t a;
    int in = open(gz, O_RDONLY);
    ck_assert_int_ge(in, 0);
    ck_assert_int_eq(dcpi__atomic_open(&a, copy, err), 0);
    ck_assert_int_eq(dcpi__copy_fd(in, a.fd), 0);
    ck_assert_int_eq(access(copy, F_OK), -1); /* not in place before the commit */
    ck_assert_int_eq(dcpi__atomic_commit(&a, err), 0);
    close(in);
    free(after);
    ck_assert_int_eq(dcpi__read_file(copy, 0, &after, &alen, err), 0);
    ck_assert_uint_eq(alen, blen);
    ck_assert_mem_eq(after, before, blen);
    ck_assert_int_eq(dcpi__atomic_open(&a, copy, err), 0);
    dcpi__atomic_abort(&a);
    ck_assert_int_eq(count_files(dir), 2);
    free(before);
    free(after);
    free(text);
    remove(gz);
    remove(copy);
    rmdir(dir);
}
END_TEST

START_TEST(test_units)
{
    uint64_t v = 0;
    ck_assert_int_eq(dcpi__parse_duration("90s", 0, &v), 0);
    ck_assert_uint_eq(v, 90);
    ck_assert_int_eq(dcpi__parse_duration("10m", 0, &v), 0);
    ck_assert_uint_eq(v, 600);
    ck_assert_int_eq(dcpi__parse_duration("2h", 0, &v), 0);
    ck_assert_uint_eq(v, 7200);
    ck_assert_int_eq(dcpi__parse_duration("7d", 0, &v), 0);
    ck_assert_uint_eq(v, 604800);
    ck_assert_int_eq(dcpi__parse_duration("2w", 0, &v), 0);
    ck_assert_uint_eq(v, 1209600);
    ck_assert_int_eq(dcpi__parse_duration("45", 1, &v), 0);
    ck_assert_uint_eq(v, 45);
    ck_assert_int_eq(dcpi__parse_duration("45", 0, &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_duration("0s", 0, &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_duration("-5s", 0, &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_duration("5x", 0, &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_duration("s", 0, &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_duration("99999999999999999999w", 0, &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_size("500M", &v), 0);
    ck_assert_uint_eq(v, 500ull << 20);
    ck_assert_int_eq(dcpi__parse_size("2GiB", &v), 0);
    ck_assert_uint_eq(v, 2ull << 30);
    ck_assert_int_eq(dcpi__parse_size("3kB", &v), 0);
    ck_assert_uint_eq(v, 3072);
    ck_assert_int_eq(dcpi__parse_size("1T", &v), 0);
    ck_assert_uint_eq(v, 1ull << 40);
    ck_assert_int_eq(dcpi__parse_size("100B", &v), 0);
    ck_assert_uint_eq(v, 100);
    ck_assert_int_eq(dcpi__parse_size("100", &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_size("1Q", &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_size("1MX", &v), DCPI_EINVAL);
    ck_assert_int_eq(dcpi__parse_size("99999999999T", &v), DCPI_EINVAL);
    char buf[32];
    dcpi__format_size(512, buf, sizeof buf);
    ck_assert_str_eq(buf, "512");
    dcpi__format_size(1536, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.5K");
    dcpi__format_size(20ull << 20, buf, sizeof buf);
    ck_assert_str_eq(buf, "20.0M");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("base");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_errf);
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_errno_code);
    tcase_add_test(tc, test_grow);
    tcase_add_test(tc, test_bytes);
    tcase_add_test(tc, test_fnv1a);
    tcase_add_test(tc, test_pathf);
    tcase_add_test(tc, test_read_file);
    tcase_add_test(tc, test_read_file_gz);
    tcase_add_test(tc, test_read_file_gz_bad);
    tcase_add_test(tc, test_streamed_writers);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
