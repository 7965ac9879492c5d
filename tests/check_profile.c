/*
 * check_profile.c - the PC profile file format (core/store/profile.c), the atomic file helpers
 * (core/base/fsutil.c) and the dcpicat tool: header grammar, chunk encoding, golden bytes, every
 * malformed case, atomic replacement and merging.
 *
 * DCPI_GOLDEN_OUT=PATH makes test_golden write the golden file instead of comparing (used once to
 * create tests/data/golden-0.07.prof, which was then checked by hand with xxd).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_skip.h"
#include "core/base/fsutil.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"

/* The required header, one line per key, in the order dcpi writes it. */
static const char *const base_lines[] = {
    "version pdb-0.07", "image 0123456789abcdef", "epoch 202401021234", "platform testhost",
    "event cpu-clock",  "period 1000000",         "tstart 0x401000",    "tsize 8192",
    "cpuspeed 2400",
};
#define NBASE (sizeof(base_lines) / sizeof(base_lines[0]))

/* ---- helpers ------------------------------------------------------------------------------ */

struct buf {
    char data[1 << 16];
    size_t len;
};

static void buf_add(struct buf *b, const void *p, size_t n)
{
    ck_assert_uint_le(b->len + n, sizeof(b->data));
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void buf_str(struct buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

static void buf_u32(struct buf *b, uint32_t v)
{
    unsigned char le[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24};
    buf_add(b, le, 4);
}

/* The base header with line skip left out (or -1) and line dup written twice, then "samples". */
static void header_with(struct buf *b, int skip, int dup)
{
    for (int i = 0; i < (int)NBASE; i++) {
        if (i == skip)
            continue;
        buf_str(b, base_lines[i]);
        buf_str(b, "\n");
        if (i == dup) {
            buf_str(b, base_lines[i]);
            buf_str(b, "\n");
        }
    }
    buf_str(b, "samples\n");
}

/* Body from a list of u32 values. */
static void body_u32(struct buf *b, const uint32_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf_u32(b, v[i]);
}

static int parse_buf(const struct buf *b, char *err)
{
    dcpi_profile_t *p = NULL;
    err[0] = '\0';
    int rc = dcpi_profile_parse(b->data, b->len, "bad.prof", &p, err);
    if (rc == 0)
        ck_assert_ptr_nonnull(p);
    dcpi_profile_free(p);
    return rc;
}

/* The error must be code and name the file. */
static void expect_error(const struct buf *b, int code, const char *needle)
{
    char err[DCPI_ERRLEN];
    int rc = parse_buf(b, err);
    ck_assert_msg(rc == code, "expected %s, got %s (%s)", dcpi_err_name(code), dcpi_err_name(rc),
                  err);
    ck_assert_msg(strncmp(err, "bad.prof: ", 10) == 0, "message does not name the file: %s", err);
    if (needle)
        ck_assert_msg(strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
}

static dcpi_profile_t *base_profile(void)
{
    dcpi_profile_t *p = NULL;
    ck_assert_int_eq(dcpi_profile_new(&p), 0);
    for (size_t i = 0; i < NBASE; i++) {
        char key[32];
        const char *sp = strchr(base_lines[i], ' ');
        snprintf(key, sizeof(key), "%.*s", (int)(sp - base_lines[i]), base_lines[i]);
        ck_assert_int_eq(dcpi_profile_set(p, key, sp + 1), 0);
    }
    return p;
}

static dcpi_profile_t *roundtrip(const dcpi_profile_t *p, void **enc, size_t *len)
{
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_profile_encode(p, enc, len, err), 0);
    dcpi_profile_t *q = NULL;
    int rc = dcpi_profile_parse(*enc, *len, "rt.prof", &q, err);
    ck_assert_msg(rc == 0, "reparse failed: %s", err);
    return q;
}

static void assert_same_samples(const dcpi_profile_t *a, const dcpi_profile_t *b)
{
    size_t na, nb;
    const dcpi_profile_entry_t *ea = dcpi_profile_entries(a, &na);
    const dcpi_profile_entry_t *eb = dcpi_profile_entries(b, &nb);
    ck_assert_uint_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        ck_assert_uint_eq(ea[i].offset, eb[i].offset);
        ck_assert_uint_eq(ea[i].count, eb[i].count);
    }
    ck_assert_uint_eq(dcpi_profile_total(a), dcpi_profile_total(b));
}

/* Offset of the first byte after the "samples" line. */
static size_t body_start(const char *enc, size_t len)
{
    const char *s = memmem(enc, len, "\nsamples", 8);
    ck_assert_ptr_nonnull(s);
    const char *nl = memchr(s + 1, '\n', len - (size_t)(s + 1 - enc));
    ck_assert_ptr_nonnull(nl);
    return (size_t)(nl + 1 - enc);
}

static char *make_tmpdir(void)
{
    char *dir = strdup("/tmp/check_profile.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

/* Number of directory entries other than . and .. whose name contains sub. */
static int count_entries(const char *dir, const char *sub)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, sub))
            n++;
    closedir(d);
    return n;
}

static size_t slurp(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = fread(out, 1, cap, f);
    fclose(f);
    return n;
}

/* ---- header grammar ----------------------------------------------------------------------- */

START_TEST(test_required_missing)
{
    for (int i = 0; i < (int)NBASE; i++) {
        struct buf b = {.len = 0};
        header_with(&b, i, -1);
        body_u32(&b, (uint32_t[]){0, 0}, 2);
        char key[32];
        snprintf(key, sizeof(key), "\"%.*s\"", (int)strcspn(base_lines[i], " "), base_lines[i]);
        expect_error(&b, DCPI_EFORMAT, key);
    }
}
END_TEST

START_TEST(test_required_repeated)
{
    for (int i = 0; i < (int)NBASE; i++) {
        struct buf b = {.len = 0};
        header_with(&b, -1, i);
        body_u32(&b, (uint32_t[]){0, 0}, 2);
        char key[32];
        snprintf(key, sizeof(key), "\"%.*s\" repeated", (int)strcspn(base_lines[i], " "),
                 base_lines[i]);
        expect_error(&b, DCPI_EFORMAT, key);
    }
}
END_TEST

/* One replacement line for a base key, or an extra line, and the expected code. */
struct bad_value {
    int replace; /* index in base_lines, or -1: extra line appended */
    const char *line;
    int code;
};

START_TEST(test_bad_values)
{
    static const struct bad_value cases[] = {
        {1, "image xyz", DCPI_EFORMAT},
        {2, "epoch 12345", DCPI_EFORMAT},
        {2, "epoch 20240102123", DCPI_EFORMAT},
        {2, "epoch 2024010212a4", DCPI_EFORMAT},
        {5, "period -5", DCPI_EFORMAT},
        {5, "period 12a", DCPI_EFORMAT},
        {5, "period 99999999999999999999999", DCPI_EFORMAT},
        {6, "tstart 0xzz", DCPI_EFORMAT},
        {6, "tstart 0x", DCPI_EFORMAT},
        {7, "tsize 1.5", DCPI_EFORMAT},
        {8, "cpuspeed fast", DCPI_EFORMAT},
        {0, "version pdb-1.01", DCPI_EVERSION},
        {0, "version pdb-0.06", DCPI_EVERSION},
        {0, "version 0.07", DCPI_EFORMAT},
        {-1, "lost many", DCPI_EFORMAT},
        {-1, "cpucount two", DCPI_EFORMAT},
        {-1, "cpuamask 0xg", DCPI_EFORMAT},
        {-1, "label", DCPI_EFORMAT},      /* a line without a value */
        {-1, "label   ", DCPI_EFORMAT},   /* blanks are no value */
        {-1, " label x", DCPI_EFORMAT},   /* not starting with a word */
        {-1, "", DCPI_EFORMAT},           /* empty line */
        {-1, "samples 12", DCPI_EFORMAT}, /* "samples" is reserved */
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct buf b = {.len = 0};
        for (int i = 0; i < (int)NBASE; i++) {
            buf_str(&b, i == cases[c].replace ? cases[c].line : base_lines[i]);
            buf_str(&b, "\n");
        }
        if (cases[c].replace < 0) {
            buf_str(&b, cases[c].line);
            buf_str(&b, "\n");
        }
        buf_str(&b, "samples\n");
        body_u32(&b, (uint32_t[]){0, 0}, 2);
        char err[DCPI_ERRLEN];
        int rc = parse_buf(&b, err);
        ck_assert_msg(rc == cases[c].code, "\"%s\": expected %s, got %s (%s)", cases[c].line,
                      dcpi_err_name(cases[c].code), dcpi_err_name(rc), err);
        ck_assert_msg(strncmp(err, "bad.prof: ", 10) == 0, "no file name: %s", err);
    }
}
END_TEST

START_TEST(test_nul_and_tabs)
{
    struct buf b = {.len = 0};
    header_with(&b, -1, -1);
    body_u32(&b, (uint32_t[]){0, 0}, 2);
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(parse_buf(&b, err), 0);
    b.data[3] = '\0'; /* inside "version" */
    expect_error(&b, DCPI_EFORMAT, "NUL");

    /* Tabs and several blanks separate key and value; the terminator may carry blanks. */
    struct buf t = {.len = 0};
    for (size_t i = 0; i < NBASE; i++) {
        size_t k = strcspn(base_lines[i], " ");
        buf_add(&t, base_lines[i], k);
        buf_str(&t, " \t ");
        buf_str(&t, base_lines[i] + k + 1);
        buf_str(&t, "\n");
    }
    buf_str(&t, "samples \t \n");
    body_u32(&t, (uint32_t[]){0, 0}, 2);
    dcpi_profile_t *p = NULL;
    ck_assert_int_eq(dcpi_profile_parse(t.data, t.len, "tabs.prof", &p, err), 0);
    ck_assert_str_eq(dcpi_profile_get(p, "event"), "cpu-clock");
    ck_assert_str_eq(dcpi_profile_get(p, "tstart"), "0x401000");
    uint64_t v = 0;
    ck_assert_int_eq(dcpi_profile_get_hex(p, "tstart", &v), 0);
    ck_assert_uint_eq(v, 0x401000);
    ck_assert_int_eq(dcpi_profile_get_u64(p, "period", &v), 0);
    ck_assert_uint_eq(v, 1000000);
    ck_assert_int_eq(dcpi_profile_get_u64(p, "platform", &v), DCPI_EFORMAT);
    ck_assert_int_eq(dcpi_profile_get_u64(p, "nosuchkey", &v), DCPI_ENOENT);
    dcpi_profile_free(p);
}
END_TEST

START_TEST(test_set_rules)
{
    dcpi_profile_t *p = base_profile();
    ck_assert_int_eq(dcpi_profile_set(p, "period", "abc"), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_profile_set(p, "version", "pdb-1.01"), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_profile_set(p, "bad key", "x"), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_profile_set(p, "", "x"), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_profile_set(p, "label", "a\nb"), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_profile_set(p, "label", ""), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_profile_set(p, "label", "trailing "), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_profile_set(p, "samples", "x"), DCPI_EINVAL);
    ck_assert_uint_eq(dcpi_profile_nlines(p), NBASE);
    /* Replacing keeps the line's position. */
    ck_assert_int_eq(dcpi_profile_setf(p, "platform", "host-%d", 7), 0);
    const char *k, *v;
    dcpi_profile_line(p, 3, &k, &v);
    ck_assert_str_eq(k, "platform");
    ck_assert_str_eq(v, "host-7");
    ck_assert_uint_eq(dcpi_profile_nlines(p), NBASE);
    ck_assert_int_eq(dcpi_profile_set(p, "label", "x y"), 0);
    dcpi_profile_line(p, NBASE, &k, &v);
    ck_assert_str_eq(k, "label");
    ck_assert_str_eq(v, "x y");
    dcpi_profile_line(p, NBASE + 1, &k, &v);
    ck_assert_ptr_null(k);
    dcpi_profile_free(p);

    /* Encoding needs every required key but supplies "version" itself. */
    ck_assert_int_eq(dcpi_profile_new(&p), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "image", "ab"), 0);
    void *enc = NULL;
    size_t len = 0;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_profile_encode(p, &enc, &len, err), DCPI_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "\"epoch\""));
    dcpi_profile_free(p);
    p = base_profile();
    dcpi_profile_t *nov = NULL;
    ck_assert_int_eq(dcpi_profile_new(&nov), 0);
    for (size_t i = 1; i < NBASE; i++) {
        dcpi_profile_line(p, i, &k, &v);
        ck_assert_int_eq(dcpi_profile_set(nov, k, v), 0);
    }
    ck_assert_int_eq(dcpi_profile_encode(nov, &enc, &len, err), 0);
    ck_assert_int_eq(memcmp(enc, "version pdb-0.07\nimage ", 23), 0);
    free(enc);
    dcpi_profile_free(nov);
    dcpi_profile_free(p);
}
END_TEST

START_TEST(test_unknown_lines_preserved)
{
    struct buf b = {.len = 0};
    buf_str(&b, "version pdb-0.07\nfuture  alpha beta\nimage 0123456789abcdef\n"
                "epoch 202401021234\nplatform testhost\nx-note one\nevent cpu-clock\n"
                "period 1000000\ntstart 0x401000\ntsize 8192\ncpuspeed 2400\n"
                "path /usr/bin/true\nfuture gamma\nsamples\n");
    body_u32(&b, (uint32_t[]){0, 0}, 2);
    dcpi_profile_t *p = NULL;
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi_profile_parse(b.data, b.len, "u.prof", &p, err), 0);
    void *enc = NULL;
    size_t len = 0;
    dcpi_profile_t *q = roundtrip(p, &enc, &len);
    ck_assert_uint_eq(dcpi_profile_nlines(q), 13);
    const char *k, *v;
    dcpi_profile_line(q, 1, &k, &v);
    ck_assert_str_eq(k, "future");
    ck_assert_str_eq(v, "alpha beta");
    dcpi_profile_line(q, 5, &k, &v);
    ck_assert_str_eq(k, "x-note");
    dcpi_profile_line(q, 12, &k, &v);
    ck_assert_str_eq(v, "gamma");
    ck_assert_ptr_nonnull(memmem(enc, len, "future alpha beta\n", 18));
    free(enc);
    dcpi_profile_free(q);
    dcpi_profile_free(p);
}
END_TEST

START_TEST(test_padding)
{
    for (int extra = 0; extra < 12; extra++) {
        dcpi_profile_t *p = base_profile();
        char plat[32];
        snprintf(plat, sizeof(plat), "h%.*s", extra, "abcdefghijklmnop");
        ck_assert_int_eq(dcpi_profile_set(p, "platform", plat), 0);
        ck_assert_int_eq(dcpi_profile_add(p, 4, 1), 0);
        void *enc = NULL;
        size_t len = 0;
        dcpi_profile_t *q = roundtrip(p, &enc, &len);
        size_t start = body_start(enc, len);
        ck_assert_uint_eq(start % 4, 0);
        ck_assert_uint_eq(len - start, 8 + 4 + 8);
        ck_assert_int_eq(memcmp((char *)enc + start - 9, "\nsamples\n", 9), 0);
        /* The pad sits at the end of the last header line, and never inside a value. */
        ck_assert_str_eq(dcpi_profile_get(q, "cpuspeed"), "2400");
        ck_assert_str_eq(dcpi_profile_get(q, "platform"), plat);
        const char *cs = memmem(enc, len, "cpuspeed 2400", 13);
        ck_assert_ptr_nonnull(cs);
        for (const char *c = cs + 13; *c != '\n'; c++)
            ck_assert_int_eq(*c, ' ');
        /* Re-encoding the parsed profile gives the same bytes. */
        void *enc2 = NULL;
        size_t len2 = 0;
        char err[DCPI_ERRLEN];
        ck_assert_int_eq(dcpi_profile_encode(q, &enc2, &len2, err), 0);
        ck_assert_uint_eq(len, len2);
        ck_assert_int_eq(memcmp(enc, enc2, len), 0);
        free(enc2);
        free(enc);
        dcpi_profile_free(q);
        dcpi_profile_free(p);
    }
}
END_TEST

/* ---- samples and chunks ------------------------------------------------------------------- */

/* Encoded body size under the documented chunk rule: gaps of <= 2 zero offsets stay inside. */
static size_t expected_body(const dcpi_profile_entry_t *e, size_t n)
{
    size_t size = 8;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && e[j].offset - e[j - 1].offset - 1 <= 2)
            j++;
        size += 8 + 4 * ((size_t)e[j - 1].offset - e[i].offset + 1);
        i = j;
    }
    return size;
}

START_TEST(test_chunks_random)
{
    srand(12345);
    enum { N = 1000 };
    uint32_t off[N], cnt[N], order[N];
    uint32_t o = (uint32_t)(rand() % 50);
    uint64_t total = 0;
    for (int i = 0; i < N; i++) {
        off[i] = o;
        cnt[i] = 1 + (uint32_t)(rand() % 1000);
        total += cnt[i];
        order[i] = (uint32_t)i;
        o += 1 + (uint32_t)(rand() % 6); /* gaps of 0..5 zero offsets */
    }
    for (int i = N - 1; i > 0; i--) { /* add in a shuffled order */
        int j = rand() % (i + 1);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    dcpi_profile_t *p = base_profile();
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(dcpi_profile_add(p, off[order[i]], cnt[order[i]]), 0);
    ck_assert_uint_eq(dcpi_profile_total(p), total);
    size_t n;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(p, &n);
    ck_assert_uint_eq(n, N);
    for (int i = 0; i < N; i++) {
        ck_assert_uint_eq(e[i].offset, off[i]);
        ck_assert_uint_eq(e[i].count, cnt[i]);
    }
    void *enc = NULL;
    size_t len = 0;
    dcpi_profile_t *q = roundtrip(p, &enc, &len);
    assert_same_samples(p, q);
    ck_assert_uint_eq(len - body_start(enc, len), expected_body(e, n));
    const unsigned char *foot = (unsigned char *)enc + len - 8;
    ck_assert_uint_eq(foot[0] | foot[1] << 8, N);
    ck_assert_uint_eq(dcpi_profile_count_at(q, off[17]), cnt[17]);
    ck_assert_uint_eq(dcpi_profile_count_at(q, off[17] + 1 == off[18] ? off[0] : off[17] + 1),
                      off[17] + 1 == off[18] ? cnt[0] : 0);
    free(enc);
    dcpi_profile_free(q);
    dcpi_profile_free(p);
}
END_TEST

START_TEST(test_chunks_edges)
{
    static const uint32_t sets[][3] = {
        {0, 0, 0},                       /* empty profile */
        {1, 0, 0},                       /* offset 0 alone */
        {1, UINT32_MAX, 0},              /* the last offset */
        {2, UINT32_MAX - 1, UINT32_MAX}, /* one chunk ending at 2^32 - 1 */
        {2, UINT32_MAX - 4, UINT32_MAX}, /* two chunks near the top */
        {1, 123456, 0},                  /* single entry */
        {2, 0, UINT32_MAX},              /* both ends */
    };
    for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
        dcpi_profile_t *p = base_profile();
        for (uint32_t i = 0; i < sets[s][0]; i++)
            ck_assert_int_eq(dcpi_profile_add(p, sets[s][1 + i], 7 + i), 0);
        void *enc = NULL;
        size_t len = 0;
        dcpi_profile_t *q = roundtrip(p, &enc, &len);
        assert_same_samples(p, q);
        size_t n;
        const dcpi_profile_entry_t *e = dcpi_profile_entries(p, &n);
        ck_assert_uint_eq(n, sets[s][0]);
        ck_assert_uint_eq(len - body_start(enc, len), expected_body(e, n));
        free(enc);
        dcpi_profile_free(q);
        dcpi_profile_free(p);
    }
}
END_TEST

START_TEST(test_saturation)
{
    dcpi_profile_t *p = base_profile();
    ck_assert_int_eq(dcpi_profile_add(p, 8, UINT32_MAX - 1), 0);
    ck_assert_int_eq(dcpi_profile_add(p, 8, 5), DCPI_ERANGE);
    ck_assert_uint_eq(dcpi_profile_count_at(p, 8), UINT32_MAX);
    ck_assert_int_eq(dcpi_profile_add(p, 12, UINT32_MAX), 0);
    ck_assert_int_eq(dcpi_profile_add(p, 12, 0), 0);
    ck_assert_uint_eq(dcpi_profile_total(p), 2ULL * UINT32_MAX);
    void *enc = NULL;
    size_t len = 0;
    dcpi_profile_t *q = roundtrip(p, &enc, &len); /* footer total saturates at UINT32_MAX */
    const unsigned char *f = (unsigned char *)enc + len - 4;
    ck_assert_uint_eq((uint32_t)f[0] | f[1] << 8 | f[2] << 16 | (uint32_t)f[3] << 24, UINT32_MAX);
    assert_same_samples(p, q);
    free(enc);
    dcpi_profile_free(q);
    dcpi_profile_free(p);
}
END_TEST

START_TEST(test_add_many_fast)
{
    /* 200000 distinct offsets in random order, then updates: O(n^2) would take minutes and run
     * into ctest's timeout (speed itself is measured in bench/, not asserted here). */
    enum { N = 200000 };
    dcpi_profile_t *p = NULL;
    ck_assert_int_eq(dcpi_profile_new(&p), 0);
    for (int i = 0; i < N; i++) /* an odd multiplier permutes 32-bit offsets: no repeats */
        ck_assert_int_eq(dcpi_profile_add(p, (uint32_t)i * 2654435761u, 1), 0);
    for (int i = 0; i < N; i += 2)
        ck_assert_int_eq(dcpi_profile_add(p, (uint32_t)i * 2654435761u, 2), 0);
    size_t n;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(p, &n);
    ck_assert_uint_eq(n, N);
    for (size_t i = 1; i < n; i++)
        ck_assert_uint_lt(e[i - 1].offset, e[i].offset);
    ck_assert_uint_eq(dcpi_profile_total(p), N + N);
    ck_assert_uint_eq(dcpi_profile_count_at(p, 2 * 2654435761u), 3);
    dcpi_profile_free(p);
}
END_TEST

/* ---- golden file -------------------------------------------------------------------------- */

static dcpi_profile_t *golden_profile(void)
{
    dcpi_profile_t *p = base_profile();
    ck_assert_int_eq(dcpi_profile_set(p, "path", "/usr/bin/true"), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "lost", "3"), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "label", "golden run 1"), 0);
    /* One chunk 0..6 with gaps of 1 and 2 zero offsets, then chunks for gaps of 3 and more. */
    static const uint32_t e[][2] = {{0, 5},  {1, 7},           {3, 2},         {6, 1},
                                    {10, 9}, {0x1000, 100000}, {0xfffffff0, 4}};
    for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
        ck_assert_int_eq(dcpi_profile_add(p, e[i][0], e[i][1]), 0);
    return p;
}

START_TEST(test_golden)
{
    dcpi_profile_t *p = golden_profile();
    void *enc = NULL;
    size_t len = 0;
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(dcpi_profile_encode(p, &enc, &len, err), 0);
    const char *out = getenv("DCPI_GOLDEN_OUT");
    if (out) {
        FILE *f = fopen(out, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(enc, 1, len, f), len);
        fclose(f);
    }
    static char want[4096];
    size_t wlen = slurp(DCPI_TEST_DATA "/golden-0.07.prof", want, sizeof(want));
    ck_assert_uint_eq(len, wlen);
    ck_assert_int_eq(memcmp(enc, want, len), 0);
    dcpi_profile_t *q = NULL;
    ck_assert_int_eq(dcpi_profile_read(DCPI_TEST_DATA "/golden-0.07.prof", &q, err), 0);
    assert_same_samples(p, q);
    ck_assert_uint_eq(dcpi_profile_total(q), 100028);
    ck_assert_str_eq(dcpi_profile_get(q, "label"), "golden run 1");
    free(enc);
    dcpi_profile_free(q);
    dcpi_profile_free(p);
}
END_TEST

/* ---- malformed files ---------------------------------------------------------------------- */

static void bad_body(const uint32_t *v, size_t n, int code, const char *needle)
{
    struct buf b = {.len = 0};
    header_with(&b, -1, -1);
    body_u32(&b, v, n);
    expect_error(&b, code, needle);
}

START_TEST(test_malformed)
{
    struct buf b = {.len = 0};
    /* Missing terminator. */
    for (size_t i = 0; i < NBASE; i++) {
        buf_str(&b, base_lines[i]);
        buf_str(&b, "\n");
    }
    expect_error(&b, DCPI_EFORMAT, "samples");
    b.len = 0;
    buf_str(&b, "sampl");
    expect_error(&b, DCPI_EFORMAT, "samples");

    /* Zero counts inside a chunk are fine on read. */
    struct buf ok = {.len = 0};
    header_with(&ok, -1, -1);
    body_u32(&ok, (uint32_t[]){4, 3, 1, 0, 2, 2, 3}, 7);
    char err[DCPI_ERRLEN];
    ck_assert_msg(parse_buf(&ok, err) == 0, "%s", err);

    bad_body((uint32_t[]){4, 3, 1, 0}, 4, DCPI_ETRUNC, "truncated");    /* cut chunk */
    bad_body((uint32_t[]){4, 3, 1, 0, 2}, 5, DCPI_ETRUNC, "truncated"); /* no footer */
    bad_body((uint32_t[]){0}, 1, DCPI_ETRUNC, "footer");                /* half footer */
    bad_body(NULL, 0, DCPI_ETRUNC, "footer");                           /* no body */
    bad_body((uint32_t[]){4, 3, 1, 1, 1, 6, 1, 1, 4, 4}, 10, DCPI_EFORMAT, "overlaps");
    bad_body((uint32_t[]){10, 1, 1, 4, 1, 1, 2, 2}, 8, DCPI_EFORMAT, "not after");
    bad_body((uint32_t[]){4, 1, 1, 4, 1, 1, 2, 2}, 8, DCPI_EFORMAT, "not after"); /* same */
    bad_body((uint32_t[]){4, 2, 1, 1, 3, 2}, 6, DCPI_EFORMAT, "footer says 3 offsets/2 samples");
    bad_body((uint32_t[]){4, 2, 1, 1, 2, 3}, 6, DCPI_EFORMAT, "chunks hold 2/2");
    bad_body((uint32_t[]){4, 2, 1, 1, 2, 2, 0}, 7, DCPI_EFORMAT, "4 trailing bytes");
    bad_body((uint32_t[]){4, 2, 1, 1, 2, 2, 0, 0, 0, 0}, 10, DCPI_EFORMAT, "trailing");
    bad_body((uint32_t[]){0, 0, 0xff}, 3, DCPI_EFORMAT, "trailing");
    bad_body((uint32_t[]){4, 0, 0, 0}, 4, DCPI_EFORMAT, "0 counts");
    bad_body((uint32_t[]){0xfffffffe, 3, 1, 1, 1, 3, 3}, 7, DCPI_EFORMAT, "2^32");

    /* Wrong version, and a version that is not a version at all. */
    b.len = 0;
    buf_str(&b, "version pdb-1.01\n");
    header_with(&b, 0, -1);
    body_u32(&b, (uint32_t[]){0, 0}, 2);
    expect_error(&b, DCPI_EVERSION, "pdb-1.01");
}
END_TEST

START_TEST(test_read_names_file)
{
    char *dir = make_tmpdir();
    char path[512], err[DCPI_ERRLEN];
    snprintf(path, sizeof(path), "%s/short.prof", dir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("version pdb-0.07\nimage 12\n", f);
    fclose(f);
    dcpi_profile_t *p = NULL;
    ck_assert_int_eq(dcpi_profile_read(path, &p, err), DCPI_EFORMAT);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
    snprintf(path, sizeof(path), "%s/none.prof", dir);
    ck_assert_int_eq(dcpi_profile_read(path, &p, err), DCPI_ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "none.prof: "));
    unlink(path);
    snprintf(path, sizeof(path), "%s/short.prof", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}
END_TEST

/* ---- atomic writes and merging ------------------------------------------------------------ */

START_TEST(test_write_replace)
{
    char *dir = make_tmpdir();
    char path[512], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/a.prof", dir);
    dcpi_profile_t *p = base_profile(), *q = NULL;
    ck_assert_int_eq(dcpi_profile_add(p, 16, 3), 0);
    ck_assert_int_eq(dcpi_profile_write(path, p, err), 0);
    ck_assert_int_eq(dcpi_profile_add(p, 20, 4), 0);
    ck_assert_int_eq(dcpi_profile_write(path, p, err), 0);
    ck_assert_int_eq(dcpi_profile_read(path, &q, err), 0);
    assert_same_samples(p, q);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);
    ck_assert_int_eq(count_entries(dir, ""), 1);
    dcpi_profile_free(q);
    dcpi_profile_free(p);
    unlink(path);
    rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_symlink_refused)
{
    char *dir = make_tmpdir();
    char link[512], victim[512], err[DCPI_ERRLEN] = "", got[64];
    snprintf(link, sizeof(link), "%s/b.prof", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    FILE *f = fopen(victim, "w");
    fputs("keep me", f);
    fclose(f);
    ck_assert_int_eq(symlink(victim, link), 0);
    dcpi_profile_t *p = base_profile();
    ck_assert_int_eq(dcpi_profile_write(link, p, err), DCPI_EPERM);
    ck_assert_str_eq(strchr(err, ':'), ": is a symbolic link, refusing to replace it");
    ck_assert_int_eq(strncmp(err, link, strlen(link)), 0);
    ck_assert_int_eq(dcpi_profile_merge_write(link, p, err), DCPI_EPERM);
    size_t n = slurp(victim, got, sizeof(got));
    ck_assert_uint_eq(n, 7);
    ck_assert_int_eq(memcmp(got, "keep me", 7), 0);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    void *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(dcpi__read_file(link, 1, &buf, &len, err), DCPI_EPERM);
    ck_assert_int_eq(dcpi__read_file(link, 0, &buf, &len, err), 0);
    ck_assert_uint_eq(len, 7);
    ck_assert_str_eq(buf, "keep me");
    free(buf);
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);
    dcpi_profile_free(p);
    unlink(link);
    unlink(victim);
    rmdir(dir);
    free(dir);
}
END_TEST

START_TEST(test_merge_write)
{
    char *dir = make_tmpdir();
    char path[512], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/m.prof", dir);
    dcpi_profile_t *a = base_profile(), *b = base_profile(), *r = NULL;
    dcpi_profile_set(a, "lost", "5");
    dcpi_profile_set(a, "label", "first");
    dcpi_profile_add(a, 0, 1);
    dcpi_profile_add(a, 100, 10);
    ck_assert_int_eq(dcpi_profile_merge_write(path, a, err), 0); /* no file yet: plain write */
    dcpi_profile_set(b, "lost", "7");
    dcpi_profile_set(b, "label", "second");
    dcpi_profile_set(b, "epoch", "202501010000"); /* the existing epoch wins */
    dcpi_profile_set(b, "period", "0001000000");  /* same number, other spelling */
    dcpi_profile_set(b, "path", "/bin/x");
    dcpi_profile_add(b, 100, 5);
    dcpi_profile_add(b, 200, 2);
    ck_assert_msg(dcpi_profile_merge_write(path, b, err) == 0, "%s", err);
    ck_assert_int_eq(dcpi_profile_read(path, &r, err), 0);
    ck_assert_uint_eq(dcpi_profile_count_at(r, 0), 1);
    ck_assert_uint_eq(dcpi_profile_count_at(r, 100), 15);
    ck_assert_uint_eq(dcpi_profile_count_at(r, 200), 2);
    ck_assert_uint_eq(dcpi_profile_total(r), 18);
    ck_assert_str_eq(dcpi_profile_get(r, "lost"), "12");
    ck_assert_str_eq(dcpi_profile_get(r, "epoch"), "202401021234");
    ck_assert_str_eq(dcpi_profile_get(r, "path"), "/bin/x");
    /* Both unknown lines, old one first. */
    const char *k, *v;
    int labels = 0;
    for (size_t i = 0; i < dcpi_profile_nlines(r); i++) {
        dcpi_profile_line(r, i, &k, &v);
        if (strcmp(k, "label") == 0)
            ck_assert_str_eq(v, labels++ ? "second" : "first");
    }
    ck_assert_int_eq(labels, 2);
    ck_assert_uint_eq(dcpi_profile_count_at(b, 0), 0); /* p is not modified */
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);
    dcpi_profile_free(r);
    dcpi_profile_free(b);
    dcpi_profile_free(a);
    unlink(path);
    rmdir(dir);
    free(dir);
}
END_TEST

/* A refused merge leaves the existing file byte-identical and no temporary file behind. */
static void merge_refused(const char *key, const char *value, const char *body, int code)
{
    char *dir = make_tmpdir();
    char path[512], err[DCPI_ERRLEN] = "";
    static char before[8192], after[8192];
    snprintf(path, sizeof(path), "%s/r.prof", dir);
    dcpi_profile_t *a = base_profile(), *b = base_profile();
    dcpi_profile_add(a, 4, 4);
    ck_assert_int_eq(dcpi_profile_write(path, a, err), 0);
    if (body) {
        FILE *f = fopen(path, "ab");
        fputs(body, f);
        fclose(f);
    }
    size_t n1 = slurp(path, before, sizeof(before));
    if (key)
        ck_assert_int_eq(dcpi_profile_set(b, key, value), 0);
    dcpi_profile_add(b, 4, 1);
    ck_assert_int_eq(dcpi_profile_merge_write(path, b, err), code);
    ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
    if (key)
        ck_assert_ptr_nonnull(strstr(err, key));
    size_t n2 = slurp(path, after, sizeof(after));
    ck_assert_uint_eq(n1, n2);
    ck_assert_int_eq(memcmp(before, after, n1), 0);
    ck_assert_int_eq(count_entries(dir, ".tmp."), 0);
    dcpi_profile_free(b);
    dcpi_profile_free(a);
    unlink(path);
    rmdir(dir);
    free(dir);
}

START_TEST(test_merge_refused)
{
    merge_refused("event", "task-clock", NULL, DCPI_EFORMAT);
    merge_refused("image", "ffff", NULL, DCPI_EFORMAT);
    merge_refused("period", "500", NULL, DCPI_EFORMAT);
    merge_refused("tstart", "0x1000", NULL, DCPI_EFORMAT);
    merge_refused(NULL, NULL, "xx", DCPI_EFORMAT); /* malformed existing file: trailing bytes */
}
END_TEST

START_TEST(test_fsutil)
{
    char *dir = make_tmpdir();
    char path[512], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/x/y/z", dir);
    ck_assert_int_eq(dcpi__mkdirs(path, 0755), 0);
    ck_assert_int_eq(dcpi__mkdirs(path, 0755), 0);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    snprintf(path, sizeof(path), "%s/x/f", dir);
    ck_assert_int_eq(dcpi__write_atomic(path, "abc", 3, err), 0);
    ck_assert_int_eq(dcpi__write_atomic(path, "", 0, err), 0);
    void *buf = NULL;
    size_t len = 9;
    ck_assert_int_eq(dcpi__read_file(path, 1, &buf, &len, err), 0);
    ck_assert_uint_eq(len, 0);
    free(buf);
    snprintf(path, sizeof(path), "%s/x/f/sub", dir);
    ck_assert_int_lt(dcpi__mkdirs(path, 0755), 0); /* a file is in the way */
    snprintf(path, sizeof(path), "%s/x/y", dir);
    ck_assert_int_eq(dcpi__write_atomic(path, "a", 1, err), DCPI_EINVAL); /* a directory */
    snprintf(path, sizeof(path), "%s/nodir/f", dir);
    ck_assert_int_eq(dcpi__write_atomic(path, "a", 1, err), DCPI_ENOENT);
    ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(dir);
}
END_TEST

/* A full file system is made by mounting a 16 KiB tmpfs: the one way to get ENOSPC on demand. */
static const char *tmpfs_unmountable(void)
{
    static char why[300];
    char dir[] = "/tmp/check_profile.XXXXXX";
    if (!mkdtemp(dir))
        return "cannot create a directory in /tmp";
    int rc = mount("tmpfs", dir, "tmpfs", 0, "size=16k");
    int e = errno;
    if (rc == 0)
        umount(dir);
    rmdir(dir);
    if (rc == 0)
        return NULL;
    snprintf(why, sizeof why,
             "cannot mount a 16 KiB tmpfs (%s; needs root or CAP_SYS_ADMIN): the case fills it "
             "to get ENOSPC",
             strerror(e));
    return why;
}

START_TEST(test_enospc)
{
    char *dir = make_tmpdir();
    char path[512], err[DCPI_ERRLEN] = "";
    ck_assert_msg(mount("tmpfs", dir, "tmpfs", 0, "size=16k") == 0, "mount tmpfs on %s: %s", dir,
                  strerror(errno));
    size_t n = 1 << 20;
    char *big = calloc(1, n);
    snprintf(path, sizeof(path), "%s/big.prof", dir);
    int rc = dcpi__write_atomic(path, big, n, err);
    int left = count_entries(dir, "");
    ck_assert_int_eq(umount(dir), 0);
    rmdir(dir);
    free(dir);
    free(big);
    ck_assert_int_eq(rc, DCPI_ENOSPC);
    ck_assert_int_eq(strncmp(err, path, strlen(path)), 0);
    ck_assert_int_eq(left, 0); /* the temporary file is gone, no target was created */
}
END_TEST

/* ---- dcpicat ------------------------------------------------------------------------------ */

/* Run dcpicat with args; stdout into out, exit status returned. */
static int run_dcpicat(const char *args, char *out, size_t cap, const char *errfile)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "%s/dcpicat %s 2>%s", DCPI_TEST_BIN, args, errfile);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_dcpicat)
{
    /* Always built with the library: missing is a broken build, not a skip. */
    ck_assert_msg(access(DCPI_TEST_BIN "/dcpicat", X_OK) == 0, "%s/dcpicat not built: %s",
                  DCPI_TEST_BIN, strerror(errno));
    char *dir = make_tmpdir();
    char a[512], b[512], c[512], bad[512], errf[512], args[2200], err[DCPI_ERRLEN];
    static char out[8192], errtext[1024];
    snprintf(a, sizeof(a), "%s/cpu-clock.prof", dir);
    snprintf(b, sizeof(b), "%s/task-clock.prof", dir);
    snprintf(c, sizeof(c), "%s/other.prof", dir);
    snprintf(bad, sizeof(bad), "%s/bad.prof", dir);
    snprintf(errf, sizeof(errf), "%s/stderr", dir);
    dcpi_profile_t *p = golden_profile();
    ck_assert_int_eq(dcpi_profile_write(a, p, err), 0);
    dcpi_profile_free(p);
    p = base_profile();
    dcpi_profile_set(p, "event", "task-clock");
    dcpi_profile_set(p, "period", "250000");
    dcpi_profile_add(p, 1, 2);
    dcpi_profile_add(p, 2, 3);
    ck_assert_int_eq(dcpi_profile_write(b, p, err), 0);
    dcpi_profile_set(p, "image", "beef");
    ck_assert_int_eq(dcpi_profile_write(c, p, err), 0);
    dcpi_profile_free(p);
    FILE *f = fopen(bad, "w");
    fputs("version pdb-0.07\n", f);
    fclose(f);

    snprintf(args, sizeof(args), "%s %s", a, b);
    ck_assert_int_eq(run_dcpicat(args, out, sizeof(out), errf), 0);
    static const char want[] = "name                 true\n"
                               "image                0123456789abcdef\n"
                               "path                 /usr/bin/true\n"
                               "epoch                202401021234\n"
                               "platform             testhost\n"
                               "text_start           0x000000401000\n"
                               "text_size            0x000000002000\n"
                               "event                100028 cpu-clock:1000000:10000\n"
                               "event                5 task-clock:250000:10000\n"
                               "version              pdb-0.07\n"
                               "cpuspeed             2400\n"
                               "lost                 3\n"
                               "label                golden run 1\n"
                               "0x000000401000       5       0\n"
                               "0x000000401001       7       2\n"
                               "0x000000401002       0       3\n"
                               "0x000000401003       2       0\n"
                               "0x000000401006       1       0\n"
                               "0x00000040100a       9       0\n"
                               "0x000000402000  100000       0\n"
                               "0x000100400ff0       4       0\n";
    ck_assert_str_eq(out, want);

    /* Different images one after the other; a bad file is reported and skipped. */
    snprintf(args, sizeof(args), "-no_header %s %s %s", c, bad, b);
    ck_assert_int_eq(run_dcpicat(args, out, sizeof(out), errf), 1);
    ck_assert_str_eq(out, "0x000000401001       2\n0x000000401002       3\n"
                          "0x000000401001       2\n0x000000401002       3\n");
    size_t n = slurp(errf, errtext, sizeof(errtext) - 1);
    errtext[n] = '\0';
    ck_assert_ptr_nonnull(strstr(errtext, "dcpicat: "));
    ck_assert_ptr_nonnull(strstr(errtext, "bad.prof: "));
    ck_assert_ptr_eq(strchr(errtext, '\n'), errtext + n - 1); /* exactly one line */

    ck_assert_int_eq(run_dcpicat("-V", out, sizeof(out), errf), 0);
    ck_assert_str_eq(out, "dcpicat (dcpi) 0.1.0\n");
    ck_assert_int_eq(run_dcpicat("-h", out, sizeof(out), errf), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: dcpicat"));
    ck_assert_int_eq(run_dcpicat("-bogus", out, sizeof(out), errf), 2);
    ck_assert_int_eq(run_dcpicat("", out, sizeof(out), errf), 2);

    snprintf(args, sizeof(args), "rm -rf %s", dir);
    ck_assert_int_eq(system(args), 0);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_required_missing);
    tcase_add_test(tc, test_required_repeated);
    tcase_add_test(tc, test_bad_values);
    tcase_add_test(tc, test_nul_and_tabs);
    tcase_add_test(tc, test_set_rules);
    tcase_add_test(tc, test_unknown_lines_preserved);
    tcase_add_test(tc, test_padding);
    tcase_add_test(tc, test_chunks_random);
    tcase_add_test(tc, test_chunks_edges);
    tcase_add_test(tc, test_saturation);
    tcase_add_test(tc, test_add_many_fast);
    tcase_add_test(tc, test_golden);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_read_names_file);
    tcase_add_test(tc, test_write_replace);
    tcase_add_test(tc, test_symlink_refused);
    tcase_add_test(tc, test_merge_write);
    tcase_add_test(tc, test_merge_refused);
    tcase_add_test(tc, test_fsutil);
    tcase_add_test(tc, test_dcpicat);
    suite_add_tcase(s, tc);
    TCase *te = dcpi_check_tcase("enospc");
    tcase_add_test(te, test_enospc);
    suite_add_tcase(s, te);
    static const struct dcpi_check_need needs[] = {{"enospc", tmpfs_unmountable}};
    return dcpi_check_run(s, needs, sizeof needs / sizeof needs[0]);
}
