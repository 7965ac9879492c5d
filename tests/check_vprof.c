/*
 * check_vprof.c - value-profile files: round trip, pinned golden bytes, every malformed case
 * with its code and the file named, merge_write (sums, unknown lines, refusals leave the file
 * byte-identical), header padding, offset map order; vpdb-0.02 (cluster counters): round trip,
 * the version picked by content, each read-time check, merge_write across versions, dcpicat's
 * record line.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dcpi/errno.h"
#include "dcpi/api.h"
#include "core/store/profcat.h"
#include "core/store/vprof.h"

static void set_header(dcpi_vprof_t *vp, const char *image)
{
    ck_assert_int_eq(dcpi_vprof_set(vp, "image", image), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "epoch", "202611210752"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "platform", "host1"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "event", "cpu-clock"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "period", "100000"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "tstart", "0x401000"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "tsize", "4096"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "cpuspeed", "2400"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "vprof", "classic"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "contexts", "1"), 0);
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

/* nrec offsets in random order, each with skewed values (some summaries overflow). */
static dcpi_vprof_t *generated(uint64_t seed, unsigned hotsize, unsigned nrec)
{
    dcpi_vprof_t *vp = NULL;
    ck_assert_int_eq(dcpi_vprof_new(hotsize, &vp), 0);
    set_header(vp, "deadbeef");
    rng_state = seed;
    for (unsigned i = 0; i < nrec * 20; i++) {
        uint32_t off = (uint32_t)(rng() % nrec) * 4;
        dcpi_vsummary_t *s = dcpi_vprof_at(vp, off, 1);
        ck_assert_ptr_nonnull(s);
        uint64_t r = rng();
        dcpi_vsummary_add(s, (r % 7) * (r % 5) * 0x1000, r % 2, 0, 1 + r % 3);
        if (r % 4 == 0)
            dcpi_vsummary_seen(s, 2);
    }
    return vp;
}

static void encode(const dcpi_vprof_t *vp, void **buf, size_t *len)
{
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_vprof_encode(vp, buf, len, err) == 0, "encode: %s", err);
}

/* Offset of the body: the byte after "\nsamples\n". */
static size_t body_of(const void *buf, size_t len)
{
    const char *p = memmem(buf, len, "\nsamples\n", 9);
    ck_assert_ptr_nonnull(p);
    return (size_t)(p - (const char *)buf) + 9;
}

static void assert_same(const dcpi_vprof_t *a, const dcpi_vprof_t *b)
{
    ck_assert_uint_eq(dcpi_vprof_count(a), dcpi_vprof_count(b));
    for (size_t i = 0; i < dcpi_vprof_count(a); i++) {
        uint32_t oa, ob;
        const dcpi_vsummary_t *sa, *sb;
        dcpi_vprof_entry(a, i, &oa, &sa);
        dcpi_vprof_entry(b, i, &ob, &sb);
        ck_assert_uint_eq(oa, ob);
        ck_assert_uint_eq(sa->n, sb->n);
        ck_assert_uint_eq(sa->vtot, sb->vtot);
        ck_assert_uint_eq(sa->seen, sb->seen);
        ck_assert_uint_eq(sa->err, sb->err);
        for (uint32_t k = 0; k < sa->n; k++)
            ck_assert_uint_eq(
                dcpi_vsummary_count(sb, sa->e[k].value, sa->e[k].context0, sa->e[k].context1),
                sa->e[k].count);
    }
}

START_TEST(test_roundtrip)
{
    for (unsigned round = 0; round < 6; round++) {
        dcpi_vprof_t *vp = generated(1000 + round, 2 + round * 3, 50 + round * 40), *q = NULL;
        char path[16];
        memset(path, 'p', sizeof(path));
        path[round + 1] = '\0'; /* header lengths differ by one byte each round */
        ck_assert_int_eq(dcpi_vprof_set(vp, "path", path), 0);
        ck_assert_int_eq(dcpi_vprof_set(vp, "x-note", "kept as is"), 0);
        void *buf, *buf2;
        size_t len, len2;
        encode(vp, &buf, &len);
        ck_assert_uint_eq(body_of(buf, len) % 4, 0);
        char err[DCPI_ERRLEN] = "";
        ck_assert_msg(dcpi_vprof_parse(buf, len, "rt.vprof", &q, err) == 0, "%s", err);
        assert_same(vp, q);
        ck_assert_str_eq(dcpi_vprof_get(q, "x-note"), "kept as is");
        ck_assert_uint_eq(dcpi_vprof_hotsize(q), 2 + round * 3);
        encode(q, &buf2, &len2);
        ck_assert_uint_eq(len, len2);
        ck_assert_int_eq(memcmp(buf, buf2, len), 0);
        free(buf);
        free(buf2);
        dcpi_vprof_free(vp);
        dcpi_vprof_free(q);
    }
}
END_TEST

START_TEST(test_map_order_and_set)
{
    dcpi_vprof_t *vp = NULL;
    ck_assert_int_eq(dcpi_vprof_new(0, &vp), 0);
    ck_assert_str_eq(dcpi_vprof_get(vp, "hotsize"), "16");
    ck_assert_int_eq(dcpi_vprof_set(vp, "hotsize", "8"), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_vprof_set(vp, "contexts", "2"), DCPI_EINVAL);
    ck_assert_int_eq(dcpi_vprof_set(vp, "vprof", "a/b"), DCPI_EINVAL);
    ck_assert_ptr_null(dcpi_vprof_at(vp, 8, 0));
    uint32_t offs[] = {400, 8, 1000, 12, 4, 999999};
    for (int i = 0; i < 6; i++)
        dcpi_vsummary_add(dcpi_vprof_at(vp, offs[i], 1), offs[i], 0, 0, 1);
    ck_assert_ptr_eq(dcpi_vprof_at(vp, 400, 0), dcpi_vprof_at(vp, 400, 1));
    ck_assert_uint_eq(dcpi_vprof_count(vp), 6);
    uint32_t want[] = {4, 8, 12, 400, 1000, 999999}, off;
    const dcpi_vsummary_t *s;
    for (size_t i = 0; i < 6; i++) {
        dcpi_vprof_entry(vp, i, &off, &s);
        ck_assert_uint_eq(off, want[i]);
        ck_assert_uint_eq(s->e[0].value, want[i]);
    }
    void *buf;
    size_t len;
    char err[DCPI_ERRLEN] = "";
    ck_assert_int_eq(dcpi_vprof_encode(vp, &buf, &len, err), DCPI_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "missing required key \"image\""));
    dcpi_vprof_free(vp);
}
END_TEST

/* The golden file's content: hotsize 4, three records (exact, overflowing, thinned only). */
static dcpi_vprof_t *golden_profile(void)
{
    dcpi_vprof_t *vp = NULL;
    ck_assert_int_eq(dcpi_vprof_new(4, &vp), 0);
    set_header(vp, "deadbeef");
    ck_assert_int_eq(dcpi_vprof_set(vp, "lost", "3"), 0);
    ck_assert_int_eq(dcpi_vprof_set(vp, "label", "golden"), 0);
    dcpi_vsummary_t *a = dcpi_vprof_at(vp, 0x10, 1);
    dcpi_vsummary_add(a, 0x2a, 1, 0, 5);
    dcpi_vsummary_add(a, 0x7, 0, 0, 2);
    dcpi_vsummary_seen(a, 3);
    dcpi_vsummary_t *b = dcpi_vprof_at(vp, 0x24, 1);
    for (uint64_t v = 1; v <= 6; v++)
        dcpi_vsummary_add(b, v, 0, 0, v);
    dcpi_vsummary_seen(dcpi_vprof_at(vp, 0x30, 1), 9);
    return vp;
}

START_TEST(test_golden)
{
    const char *path = DCPI_TEST_DATA "/golden.vprof";
    dcpi_vprof_t *vp = golden_profile(), *q = NULL;
    void *buf;
    size_t len;
    encode(vp, &buf, &len);
    if (getenv("DCPI_REGEN_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
        fclose(f);
    }
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_vprof_read(path, &q, err) == 0, "%s", err);
    void *gold;
    size_t glen;
    encode(q, &gold, &glen);
    ck_assert_uint_eq(glen, len);
    ck_assert_int_eq(memcmp(gold, buf, len), 0);
    ck_assert_uint_eq(len, 516);
    ck_assert_uint_eq(body_of(buf, len), 204);
    /* contents as documented */
    ck_assert_uint_eq(dcpi_vprof_count(q), 3);
    const dcpi_vsummary_t *s;
    uint32_t off;
    dcpi_vprof_entry(q, 0, &off, &s);
    ck_assert_uint_eq(off, 0x10);
    ck_assert_uint_eq(s->vtot, 7);
    ck_assert_uint_eq(s->seen, 10);
    ck_assert_uint_eq(s->err, 0);
    ck_assert_uint_eq(s->e[0].value, 0x2a);
    ck_assert_uint_eq(s->e[0].context0, 1);
    ck_assert_uint_eq(s->e[0].count, 5);
    dcpi_vprof_entry(q, 1, &off, &s);
    ck_assert_uint_eq(off, 0x24);
    ck_assert_uint_eq(s->vtot, 21);
    ck_assert_uint_eq(s->err, 2);
    ck_assert_uint_eq(s->n, 4);
    ck_assert_uint_eq(s->e[0].value, 6); /* 5 replaced 1 (1 + 5), then 6 replaced 2 (2 + 6) */
    ck_assert_uint_eq(s->e[0].count, 8);
    ck_assert_uint_eq(s->e[3].value, 3);
    ck_assert_uint_eq(s->e[3].count, 3);
    dcpi_vprof_entry(q, 2, &off, &s);
    ck_assert_uint_eq(off, 0x30);
    ck_assert_uint_eq(s->vtot, 0);
    ck_assert_uint_eq(s->seen, 9);
    ck_assert_str_eq(dcpi_vprof_get(q, "label"), "golden");
    free(buf);
    free(gold);
    dcpi_vprof_free(vp);
    dcpi_vprof_free(q);
}
END_TEST

/* ---- malformed files --------------------------------------------------------------------- */

static void put32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *b, uint64_t v)
{
    put32(b, (uint32_t)v);
    put32(b + 4, (uint32_t)(v >> 32));
}

/* Parse buf (len bytes) as "bad.vprof": expect code and a message naming the file and
 * containing needle. */
static void expect_bad(const void *buf, size_t len, int code, const char *needle)
{
    dcpi_vprof_t *q = NULL;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_vprof_parse(buf, len, "bad.vprof", &q, err);
    ck_assert_msg(rc == code, "want %s got %s (%s)", dcpi_err_name(code), dcpi_err_name(rc), err);
    ck_assert_ptr_null(q);
    ck_assert_msg(strncmp(err, "bad.vprof: ", 11) == 0, "message \"%s\" does not name the file",
                  err);
    ck_assert_msg(strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
    ck_assert_ptr_null(strchr(err, '\n'));
}

/* A golden-profile file with the header text replaced by text. */
static void expect_bad_header(const char *text, int code, const char *needle)
{
    dcpi_vprof_t *vp = golden_profile();
    void *buf;
    size_t len;
    encode(vp, &buf, &len);
    size_t body = body_of(buf, len), tl = strlen(text);
    char *nb = malloc(tl + len - body);
    memcpy(nb, text, tl);
    memcpy(nb + tl, (char *)buf + body, len - body);
    expect_bad(nb, tl + len - body, code, needle);
    free(nb);
    free(buf);
    dcpi_vprof_free(vp);
}

#define HDR_COMMON                                                                                 \
    "image deadbeef\nepoch 202611210752\nplatform host1\nevent cpu-clock\nperiod 100000\n"         \
    "tstart 0x401000\ntsize 4096\ncpuspeed 2400\ncontexts 1\n"

START_TEST(test_bad_header)
{
    const char *noterm = "version vpdb-0.01\n" HDR_COMMON "vprof classic\nhotsize 4\n";
    expect_bad(noterm, strlen(noterm), DCPI_EFORMAT, "no \"samples\" line");
    expect_bad_header("version vpdb-0.01\n" HDR_COMMON "hotsize 4\nsamples\n", DCPI_EFORMAT,
                      "missing required key \"vprof\"");
    expect_bad_header("version vpdb-0.01\n" HDR_COMMON "vprof a\nhotsize 4\nhotsize 4\nsamples\n",
                      DCPI_EFORMAT, "\"hotsize\" repeated");
    expect_bad_header("version vpdb-0.03\n" HDR_COMMON "vprof a\nhotsize 4\nsamples\n",
                      DCPI_EVERSION, "(only vpdb-0.01 and vpdb-0.02 are read)");
    expect_bad_header("version pdb-0.07\n" HDR_COMMON "vprof a\nhotsize 4\nsamples\n", DCPI_EFORMAT,
                      "bad value for \"version\"");
    expect_bad_header("version vpdb-0.01\n" HDR_COMMON "vprof a\nhotsize 0\nsamples\n",
                      DCPI_EFORMAT, "hotsize 0");
    expect_bad_header("version vpdb-0.01\n" HDR_COMMON "vprof a\nhotsize 4\ncontexts 1\nsamples\n",
                      DCPI_EFORMAT, "\"contexts\" repeated");
    /* a smaller hotsize than the records need */
    expect_bad_header("version vpdb-0.01\n" HDR_COMMON "vprof a\nhotsize 3\nsamples\n",
                      DCPI_EFORMAT, "has 4 values, hotsize is 3");
}
END_TEST

/* Golden bytes with one change made by mutate, expected to fail. */
typedef void (*mutate_fn)(unsigned char *body, size_t *len);

static void expect_bad_body(mutate_fn mutate, int code, const char *needle)
{
    dcpi_vprof_t *vp = golden_profile();
    void *buf;
    size_t len;
    encode(vp, &buf, &len);
    buf = realloc(buf, len + 64);
    size_t body = body_of(buf, len), blen = len - body;
    mutate((unsigned char *)buf + body, &blen);
    expect_bad(buf, body + blen, code, needle);
    free(buf);
    dcpi_vprof_free(vp);
}

/* Body layout of the golden profile: record 0x10 at 0 (2 values, 96 bytes), record 0x24 at 96
 * (4 values, 160 bytes), record 0x30 at 256 (32 bytes), footer at 288 (24 bytes). */
static void m_cut_record(unsigned char *b, size_t *len)
{
    (void)b;
    *len = 96 + 100;
}
static void m_cut_footer(unsigned char *b, size_t *len)
{
    (void)b;
    *len -= 4;
}
static void m_tiny(unsigned char *b, size_t *len)
{
    (void)b;
    *len = 10;
}
static void m_nv(unsigned char *b, size_t *len)
{
    (void)len;
    put32(b + 4, 5);
}
static void m_dup_offset(unsigned char *b, size_t *len)
{
    (void)len;
    put32(b + 96, 0x10);
}
static void m_unsorted(unsigned char *b, size_t *len)
{
    (void)len;
    put32(b + 256, 0x20);
}
static void m_vtot(unsigned char *b, size_t *len)
{
    (void)len;
    put64(b + 8, 6); /* counts 5 + 2 > 6 */
    put64(b + 288 + 8, 6 + 21);
}
static void m_seen(unsigned char *b, size_t *len)
{
    (void)len;
    put64(b + 16, 6); /* < vtot 7 */
}
static void m_dup_value(unsigned char *b, size_t *len)
{
    (void)len;
    /* record 0x24, err 2: make its 4th entry's key equal to the 1st's (counts 8, 6, 4, 3) */
    memcpy(b + 96 + 32 + 3 * 32, b + 96 + 32, 24);
}
static void m_order(unsigned char *b, size_t *len)
{
    (void)len;
    put64(b + 32 + 32 + 24, 6); /* second value's count 2 -> 6 > first's 5 */
}
static void m_zero(unsigned char *b, size_t *len)
{
    (void)len;
    put64(b + 32 + 32 + 24, 0);
}
static void m_footer(unsigned char *b, size_t *len)
{
    (void)len;
    put64(b + 288 + 16, 1234);
}
static void m_footer_pad(unsigned char *b, size_t *len)
{
    (void)len;
    put32(b + 288 + 4, 1);
}
static void m_trailing(unsigned char *b, size_t *len)
{
    memset(b + *len, 0, 5);
    *len += 5;
}

START_TEST(test_bad_body)
{
    expect_bad_body(m_cut_record, DCPI_ETRUNC, "record at offset 0x24 (4 values) is truncated");
    /* a cut footer leaves the last record without room for one: reported there */
    expect_bad_body(m_cut_footer, DCPI_ETRUNC, "record at offset 0x30 (0 values) is truncated");
    expect_bad_body(m_tiny, DCPI_ETRUNC, "footer truncated (10 of 24 bytes)");
    expect_bad_body(m_nv, DCPI_EFORMAT, "has 5 values, hotsize is 4");
    expect_bad_body(m_dup_offset, DCPI_EFORMAT, "record at offset 0x10 not after record at 0x10");
    expect_bad_body(m_unsorted, DCPI_EFORMAT, "record at offset 0x20 not after record at 0x24");
    expect_bad_body(m_vtot, DCPI_EFORMAT, "exceed vtot 6");
    expect_bad_body(m_seen, DCPI_EFORMAT, "seen 6 < vtot 7");
    expect_bad_body(m_dup_value, DCPI_EFORMAT, "listed twice");
    expect_bad_body(m_order, DCPI_EFORMAT, "out of order");
    expect_bad_body(m_zero, DCPI_EFORMAT, "count 0");
    expect_bad_body(m_footer, DCPI_EFORMAT, "footer says");
    expect_bad_body(m_footer_pad, DCPI_EFORMAT, "pad 1");
    expect_bad_body(m_trailing, DCPI_EFORMAT, "5 trailing bytes");
}
END_TEST

/* ---- merge_write ------------------------------------------------------------------------- */

static char tmpdir[64];

static void setup_tmp(void)
{
    strcpy(tmpdir, "/tmp/check_vprof.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

START_TEST(test_merge_write)
{
    setup_tmp();
    char path[128], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/classic.vprof", tmpdir);
    dcpi_vprof_t *a = golden_profile(), *b = golden_profile(), *r = NULL;
    ck_assert_int_eq(dcpi_vprof_set(b, "lost", "4"), 0);
    ck_assert_int_eq(dcpi_vprof_set(b, "x-run", "second"), 0);
    dcpi_vsummary_add(dcpi_vprof_at(b, 0x10, 1), 0x2a, 1, 0, 10);
    dcpi_vsummary_add(dcpi_vprof_at(b, 0x40, 1), 0x99, 0, 0, 1);
    ck_assert_msg(dcpi_vprof_merge_write(path, a, err) == 0, "%s", err); /* creates */
    ck_assert_msg(dcpi_vprof_merge_write(path, b, err) == 0, "%s", err);
    ck_assert_msg(dcpi_vprof_read(path, &r, err) == 0, "%s", err);
    ck_assert_str_eq(dcpi_vprof_get(r, "version"), "vpdb-0.01"); /* no cluster counters */
    ck_assert_str_eq(dcpi_vprof_get(r, "lost"), "7");
    ck_assert_str_eq(dcpi_vprof_get(r, "label"), "golden");
    ck_assert_str_eq(dcpi_vprof_get(r, "x-run"), "second");
    ck_assert_uint_eq(dcpi_vprof_count(r), 4);
    const dcpi_vsummary_t *s = dcpi_vprof_at(r, 0x10, 0);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 0x2a, 1, 0), 20);
    ck_assert_uint_eq(dcpi_vsummary_count(s, 0x7, 0, 0), 4);
    ck_assert_uint_eq(s->vtot, 24);
    ck_assert_uint_eq(s->seen, 30);
    ck_assert_uint_eq(s->err, 0);
    s = dcpi_vprof_at(r, 0x24, 0);
    ck_assert_uint_eq(s->vtot, 42);
    ck_assert_uint_eq(s->err, 4); /* both sides had err 2, same keys: nothing dropped */
    ck_assert_uint_eq(dcpi_vsummary_count(s, 6, 0, 0), 16);
    ck_assert_uint_eq(dcpi_vprof_at(r, 0x30, 0)->seen, 18);
    ck_assert_uint_eq(dcpi_vprof_at(r, 0x40, 0)->vtot, 1);

    /* refusals leave the file byte-identical */
    size_t len0, len1;
    void *before = slurp(path, &len0);
    dcpi_vprof_t *c = golden_profile();
    ck_assert_int_eq(dcpi_vprof_set(c, "image", "feedface"), 0);
    ck_assert_int_eq(dcpi_vprof_merge_write(path, c, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "classic.vprof: existing value profile has image"));
    ck_assert_int_eq(dcpi_vprof_set(c, "image", "deadbeef"), 0);
    ck_assert_int_eq(dcpi_vprof_set(c, "vprof", "addr"), 0);
    ck_assert_int_eq(dcpi_vprof_merge_write(path, c, err), DCPI_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err, "vprof \"classic\""));
    void *after = slurp(path, &len1);
    ck_assert_uint_eq(len0, len1);
    ck_assert_int_eq(memcmp(before, after, len0), 0);
    /* an in-memory merge refuses the same mismatch */
    ck_assert_int_eq(dcpi_vprof_merge(r, c), DCPI_EINVAL);

    /* a malformed existing file is an error and stays as it is */
    FILE *f = fopen(path, "wb");
    fwrite(before, 1, len0 - 1, f);
    fclose(f);
    ck_assert_int_eq(dcpi_vprof_merge_write(path, a, err), DCPI_ETRUNC);
    ck_assert_ptr_nonnull(strstr(err, "classic.vprof: "));
    free(after);
    after = slurp(path, &len1);
    ck_assert_uint_eq(len1, len0 - 1);
    ck_assert_int_eq(memcmp(before, after, len1), 0);

    unlink(path);
    rmdir(tmpdir);
    free(before);
    free(after);
    dcpi_vprof_free(a);
    dcpi_vprof_free(b);
    dcpi_vprof_free(c);
    dcpi_vprof_free(r);
}
END_TEST

START_TEST(test_merge_memory_hotsize)
{
    /* dst keeps its hotsize; src's larger summaries are cut to it */
    dcpi_vprof_t *d = generated(5, 4, 30), *s = generated(6, 16, 30);
    uint64_t vtot = 0;
    for (size_t i = 0; i < dcpi_vprof_count(d); i++) {
        const dcpi_vsummary_t *x;
        dcpi_vprof_entry(d, i, NULL, &x);
        vtot += x->vtot;
    }
    for (size_t i = 0; i < dcpi_vprof_count(s); i++) {
        const dcpi_vsummary_t *x;
        dcpi_vprof_entry(s, i, NULL, &x);
        vtot += x->vtot;
    }
    ck_assert_int_eq(dcpi_vprof_merge(d, s), 0);
    ck_assert_uint_eq(dcpi_vprof_hotsize(d), 4);
    ck_assert_str_eq(dcpi_vprof_get(d, "hotsize"), "4");
    uint64_t got = 0;
    for (size_t i = 0; i < dcpi_vprof_count(d); i++) {
        const dcpi_vsummary_t *x;
        dcpi_vprof_entry(d, i, NULL, &x);
        ck_assert_uint_le(x->n, 4);
        got += x->vtot;
    }
    ck_assert_uint_eq(got, vtot);
    void *buf;
    size_t len;
    encode(d, &buf, &len); /* and the result is a valid file */
    dcpi_vprof_t *q = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_vprof_parse(buf, len, "m.vprof", &q, err) == 0, "%s", err);
    assert_same(d, q);
    free(buf);
    dcpi_vprof_free(q);
    dcpi_vprof_free(d);
    dcpi_vprof_free(s);
}
END_TEST

/* The oracle's window keys are summed by a merge; oracle-all stays 1 only when both say so. */
START_TEST(test_merge_oracle_windows)
{
    dcpi_vprof_t *d = generated(5, 4, 10), *s = generated(6, 4, 10), *p = generated(7, 4, 10);
    ck_assert_int_eq(dcpi_vprof_set(d, "oracle-all", "0"), 0);
    ck_assert_int_eq(dcpi_vprof_set(d, "oracle-windows", "3"), 0);
    ck_assert_int_eq(dcpi_vprof_set(d, "oracle-execs", "30"), 0);
    ck_assert_int_eq(dcpi_vprof_set(d, "oracle-sumsq", "400"), 0);
    ck_assert_int_eq(dcpi_vprof_set(s, "oracle-all", "0"), 0);
    ck_assert_int_eq(dcpi_vprof_set(s, "oracle-windows", "2"), 0);
    ck_assert_int_eq(dcpi_vprof_set(s, "oracle-execs", "20"), 0);
    ck_assert_int_eq(dcpi_vprof_set(s, "oracle-sumsq", "250"), 0);
    ck_assert_int_eq(dcpi_vprof_merge(d, s), 0);
    ck_assert_str_eq(dcpi_vprof_get(d, "oracle-windows"), "5");
    ck_assert_str_eq(dcpi_vprof_get(d, "oracle-execs"), "50");
    ck_assert_str_eq(dcpi_vprof_get(d, "oracle-sumsq"), "650");
    ck_assert_str_eq(dcpi_vprof_get(d, "oracle-all"), "0");
    /* a whole-run oracle merged into a profile without the keys: no longer every execution */
    ck_assert_int_eq(dcpi_vprof_set(s, "oracle-all", "1"), 0);
    ck_assert_int_eq(dcpi_vprof_merge(p, s), 0);
    ck_assert_str_eq(dcpi_vprof_get(p, "oracle-all"), "0");
    ck_assert_str_eq(dcpi_vprof_get(p, "oracle-windows"), "2");
    /* two whole-run ones stay whole-run; the keys survive encode and parse */
    dcpi_vprof_t *a = generated(8, 4, 10), *b = generated(9, 4, 10);
    ck_assert_int_eq(dcpi_vprof_set(a, "oracle-all", "1"), 0);
    ck_assert_int_eq(dcpi_vprof_set(b, "oracle-all", "1"), 0);
    ck_assert_int_eq(dcpi_vprof_merge(a, b), 0);
    ck_assert_str_eq(dcpi_vprof_get(a, "oracle-all"), "1");
    void *buf;
    size_t len;
    encode(d, &buf, &len);
    dcpi_vprof_t *q = NULL;
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_vprof_parse(buf, len, "o.vprof", &q, err) == 0, "%s", err);
    ck_assert_str_eq(dcpi_vprof_get(q, "oracle-sumsq"), "650");
    free(buf);
    dcpi_vprof_free(q);
    dcpi_vprof_free(a);
    dcpi_vprof_free(b);
    dcpi_vprof_free(p);
    dcpi_vprof_free(d);
    dcpi_vprof_free(s);
}
END_TEST

/* ---- vpdb-0.02: cluster counters ------------------------------------------------------------ */

/* The golden profile with cluster counters: 0x10 fully clustered (clusters of 3 and 4), 0x24
 * partly (10 of its 21 samples in 3 clusters), 0x30 (thinned only) none. */
static dcpi_vprof_t *clustered_profile(void)
{
    dcpi_vprof_t *vp = golden_profile();
    dcpi_vsummary_cluster(dcpi_vprof_at(vp, 0x10, 0), 2, 7, 25, 13);
    dcpi_vsummary_cluster(dcpi_vprof_at(vp, 0x24, 0), 3, 10, 40, 20);
    return vp;
}

static void assert_clusters(const dcpi_vprof_t *vp, uint32_t off, uint64_t k, uint64_t n,
                            uint64_t sq, uint64_t d)
{
    const dcpi_vsummary_t *s = dcpi_vprof_at((dcpi_vprof_t *)vp, off, 0);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->clusters, k);
    ck_assert_uint_eq(s->chits, n);
    ck_assert_uint_eq(s->csq, sq);
    ck_assert_uint_eq(s->cagree, d);
}

static int starts_with(const void *buf, size_t len, const char *text)
{
    return len >= strlen(text) && memcmp(buf, text, strlen(text)) == 0;
}

START_TEST(test_clusters_roundtrip)
{
    dcpi_vprof_t *vp = clustered_profile(), *q = NULL;
    void *buf, *buf2, *old;
    size_t len, len2, oldlen;
    encode(vp, &buf, &len);
    ck_assert(starts_with(buf, len, "version vpdb-0.02\n"));
    /* same header length as 0.01 (same version length); each of the 3 records 32 bytes more */
    dcpi_vprof_t *g = golden_profile();
    encode(g, &old, &oldlen);
    ck_assert(starts_with(old, oldlen, "version vpdb-0.01\n"));
    ck_assert_uint_eq(oldlen, 516);
    ck_assert_uint_eq(body_of(buf, len), 204);
    ck_assert_uint_eq(len, 516 + 3 * 32);
    char err[DCPI_ERRLEN] = "";
    ck_assert_msg(dcpi_vprof_parse(buf, len, "c.vprof", &q, err) == 0, "%s", err);
    assert_same(vp, q);
    ck_assert_str_eq(dcpi_vprof_get(q, "version"), "vpdb-0.02");
    assert_clusters(q, 0x10, 2, 7, 25, 13);
    assert_clusters(q, 0x24, 3, 10, 40, 20);
    assert_clusters(q, 0x30, 0, 0, 0, 0);
    /* the counters sit after err: record 0x10's at body + 32 */
    const unsigned char *b = (const unsigned char *)buf + 204;
    ck_assert_uint_eq(b[32], 2);
    ck_assert_uint_eq(b[40], 7);
    ck_assert_uint_eq(b[48], 25);
    ck_assert_uint_eq(b[56], 13);
    ck_assert_uint_eq(b[64], 0x2a); /* then the first entry */
    encode(q, &buf2, &len2);
    ck_assert_uint_eq(len2, len);
    ck_assert_int_eq(memcmp(buf, buf2, len), 0);
    free(buf2);
    /* a read 0.02 profile that loses its counters is written as 0.01 again, byte for byte */
    for (size_t i = 0; i < dcpi_vprof_count(q); i++) {
        const dcpi_vsummary_t *s;
        dcpi_vprof_entry(q, i, NULL, &s);
        dcpi_vsummary_t *w = (dcpi_vsummary_t *)s;
        w->clusters = w->chits = w->csq = w->cagree = 0;
    }
    encode(q, &buf2, &len2);
    ck_assert_uint_eq(len2, oldlen);
    ck_assert_int_eq(memcmp(buf2, old, oldlen), 0);
    free(buf2);
    /* an empty summary's counters do not make the file 0.02 (it is not written) */
    dcpi_vsummary_cluster(dcpi_vprof_at(g, 0x50, 1), 1, 1, 1, 1);
    encode(g, &buf2, &len2);
    ck_assert_uint_eq(len2, oldlen);
    ck_assert_int_eq(memcmp(buf2, old, oldlen), 0);
    free(buf2);
    free(buf);
    free(old);
    dcpi_vprof_free(g);
    dcpi_vprof_free(vp);
    dcpi_vprof_free(q);
}
END_TEST

/* dcpicat's block of vp without its header. */
static char *cat(const dcpi_vprof_t *vp)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    ck_assert_ptr_nonnull(f);
    dcpi_profcat_print_vprof(f, vp, "c.vprof", false);
    fclose(f);
    return text;
}

START_TEST(test_clusters_cat)
{
    /* dcpicat shows the counters of a record that has them, and no more than before otherwise */
    dcpi_vprof_t *vp = clustered_profile(), *g = golden_profile();
    char *a = cat(vp), *b = cat(g);
    ck_assert_ptr_nonnull(strstr(a, "0x10 vtot 7 seen 10 err 0 clusters 2 chits 7 csq 25 "
                                    "cagree 13\n"));
    ck_assert_ptr_nonnull(strstr(a, "\n0x30 vtot 0 seen 9 err 0\n"));
    ck_assert_ptr_nonnull(strstr(b, "0x10 vtot 7 seen 10 err 0\n"));
    ck_assert_ptr_null(strstr(b, "clusters"));
    free(a);
    free(b);
    dcpi_vprof_free(vp);
    dcpi_vprof_free(g);
}
END_TEST

START_TEST(test_clusters_write_read)
{
    setup_tmp();
    char path[128], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/c.vprof", tmpdir);
    dcpi_vprof_t *vp = clustered_profile(), *q = NULL;
    ck_assert_msg(dcpi_vprof_write(path, vp, err) == 0, "%s", err);
    size_t len;
    void *raw = slurp(path, &len);
    ck_assert(starts_with(raw, len, "version vpdb-0.02\n"));
    ck_assert_msg(dcpi_vprof_read(path, &q, err) == 0, "%s", err);
    assert_same(vp, q);
    assert_clusters(q, 0x10, 2, 7, 25, 13);
    assert_clusters(q, 0x24, 3, 10, 40, 20);
    /* counters the reader would refuse are not written */
    dcpi_vsummary_cluster(dcpi_vprof_at(vp, 0x10, 0), 6, 1, 1, 1); /* chits 8 of vtot 7 */
    ck_assert_int_eq(dcpi_vprof_write(path, vp, err), DCPI_EINVAL);
    ck_assert_str_eq(err, "value profile: record at offset 0x10: chits 8 > vtot 7");
    free(raw);
    unlink(path);
    rmdir(tmpdir);
    dcpi_vprof_free(vp);
    dcpi_vprof_free(q);
}
END_TEST

/* Clustered-profile bytes with one change, expected to fail. Body layout (0.02): record 0x10 at
 * 0 (head 64, 2 values: 128 bytes; counters at 32, 40, 48, 56), record 0x24 at 128 (192
 * bytes), record 0x30 at 320 (64 bytes), footer at 384. */
static void expect_bad_clusters(uint64_t at, uint64_t value, const char *needle)
{
    dcpi_vprof_t *vp = clustered_profile();
    void *buf;
    size_t len;
    encode(vp, &buf, &len);
    size_t body = body_of(buf, len);
    ck_assert_uint_eq(len - body, 408);
    put64((unsigned char *)buf + body + at, value);
    expect_bad(buf, len, DCPI_EFORMAT, needle);
    free(buf);
    dcpi_vprof_free(vp);
}

START_TEST(test_bad_clusters)
{
    /* record 0x10: K 2, N 7, S 25, D 13, vtot 7 */
    expect_bad_clusters(32, 0, "record at offset 0x10: chits 7 in 0 clusters");
    expect_bad_clusters(32, 8, "record at offset 0x10: clusters 8 > chits 7");
    expect_bad_clusters(40, 8, "record at offset 0x10: chits 8 > vtot 7");
    expect_bad_clusters(56, 6, "record at offset 0x10: chits 7 > cagree 6");
    expect_bad_clusters(48, 12, "record at offset 0x10: cagree 13 > csq 12");
    expect_bad_clusters(40, 0, "record at offset 0x10: chits 0 but clusters 2, csq 25, cagree 13");
    /* record 0x30 (no cluster info): every counter must be 0 */
    expect_bad_clusters(320 + 32, 1, "record at offset 0x30: chits 0 but clusters 1");
    expect_bad_clusters(320 + 48, 1, "record at offset 0x30: chits 0 but clusters 0, csq 1");
    expect_bad_clusters(320 + 56, 1, "cagree 1");
    /* a 0.01 body under a 0.02 header: the first entry is taken for the counters */
    expect_bad_header("version vpdb-0.02\n" HDR_COMMON "vprof a\nhotsize 4\nsamples\n",
                      DCPI_EFORMAT, "record at offset 0x10: clusters 42 > chits 1");
}
END_TEST

/* Write first with merge_write, merge second into it; the result as read. */
static dcpi_vprof_t *merged_file(dcpi_vprof_t *first, dcpi_vprof_t *second, char *version)
{
    setup_tmp();
    char path[128], err[DCPI_ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/classic.vprof", tmpdir);
    ck_assert_msg(dcpi_vprof_merge_write(path, first, err) == 0, "%s", err);
    ck_assert_msg(dcpi_vprof_merge_write(path, second, err) == 0, "%s", err);
    size_t len;
    char *raw = slurp(path, &len);
    ck_assert_ptr_nonnull(memchr(raw, '\n', len));
    memcpy(version, raw, (size_t)((char *)memchr(raw, '\n', len) - raw));
    version[(char *)memchr(raw, '\n', len) - raw] = '\0';
    dcpi_vprof_t *r = NULL;
    ck_assert_msg(dcpi_vprof_read(path, &r, err) == 0, "%s", err);
    free(raw);
    unlink(path);
    rmdir(tmpdir);
    return r;
}

static void assert_mixed_merge(const dcpi_vprof_t *r)
{
    /* 0x10: clustered (2, 7, 25, 13) + plain vtot 7 (7 single-sample clusters) */
    assert_clusters(r, 0x10, 9, 14, 32, 20);
    ck_assert_uint_eq(dcpi_vprof_at((dcpi_vprof_t *)r, 0x10, 0)->vtot, 14);
    /* 0x24: partial (3, 10, 40, 20) of vtot 21 -> (14, 21, 51, 31), + plain vtot 21 */
    assert_clusters(r, 0x24, 35, 42, 72, 52);
    /* 0x30: no values on either side: no info */
    assert_clusters(r, 0x30, 0, 0, 0, 0);
}

START_TEST(test_clusters_merge_write)
{
    char version[64];
    /* 0.02 into a 0.01 file */
    dcpi_vprof_t *plain = golden_profile(), *cl = clustered_profile();
    dcpi_vprof_t *r = merged_file(plain, cl, version);
    ck_assert_str_eq(version, "version vpdb-0.02");
    assert_mixed_merge(r);
    dcpi_vprof_free(r);
    /* 0.01 into a 0.02 file */
    r = merged_file(cl, plain, version);
    ck_assert_str_eq(version, "version vpdb-0.02");
    assert_mixed_merge(r);
    dcpi_vprof_free(r);
    /* 0.02 into 0.02: the counters add */
    r = merged_file(cl, cl, version);
    ck_assert_str_eq(version, "version vpdb-0.02");
    assert_clusters(r, 0x10, 4, 14, 50, 26);
    assert_clusters(r, 0x24, 28, 42, 102, 62);
    dcpi_vprof_free(r);
    /* 0.01 into 0.01 stays 0.01 */
    r = merged_file(plain, plain, version);
    ck_assert_str_eq(version, "version vpdb-0.01");
    assert_clusters(r, 0x10, 0, 0, 0, 0);
    dcpi_vprof_free(r);
    dcpi_vprof_free(plain);
    dcpi_vprof_free(cl);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vprof");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_map_order_and_set);
    tcase_add_test(tc, test_golden);
    tcase_add_test(tc, test_bad_header);
    tcase_add_test(tc, test_bad_body);
    tcase_add_test(tc, test_merge_write);
    tcase_add_test(tc, test_merge_memory_hotsize);
    tcase_add_test(tc, test_merge_oracle_windows);
    tcase_add_test(tc, test_clusters_roundtrip);
    tcase_add_test(tc, test_clusters_write_read);
    tcase_add_test(tc, test_clusters_cat);
    tcase_add_test(tc, test_bad_clusters);
    tcase_add_test(tc, test_clusters_merge_write);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
