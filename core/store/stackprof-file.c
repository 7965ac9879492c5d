/*
 * stackprof-file.c - stack profile files (.stk, docs/stackformat.md; see stackprof.h):
 * parsing with full validation, encoding (chains sorted), atomic write and merge into a file,
 * and loading an epoch's file over its platforms. The chain table is in stackprof-chains.c.
 */
#include "core/store/stackprof-int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/bytes.h"
#include "core/base/damage.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

#define IMG_HEAD   32 /* tstart u64, tsize u64, idlen u32, dirlen u32, pathlen u32, pad u32 */
#define CHAIN_HEAD 12 /* count u64, nframes u32 */
#define FRAME_SIZE 8  /* image u32, offset u32 */
#define BODY_HEAD  8  /* nimages u32, nchains u32 */
#define FOOTER     16 /* total u64, nchains u32, nframes u32 */

static size_t pad4(size_t n)
{
    return (n + 3) & ~(size_t)3;
}

/* ---- encoding ---- */

static int cmp_frames(const dcpi_frame_t *a, unsigned na, const dcpi_frame_t *b, unsigned nb)
{
    for (unsigned i = 0; i < na && i < nb; i++) {
        if (a[i].image != b[i].image)
            return a[i].image < b[i].image ? -1 : 1;
        if (a[i].offset != b[i].offset)
            return a[i].offset < b[i].offset ? -1 : 1;
    }
    return na == nb ? 0 : na < nb ? -1 : 1;
}

static const dcpi_stackprof_t *g_sort_sp; /* qsort has no context argument in C11 */

static int cmp_index(const void *a, const void *b)
{
    const struct dcpi_stackprof_chain *x = &g_sort_sp->ch[*(const size_t *)a];
    const struct dcpi_stackprof_chain *y = &g_sort_sp->ch[*(const size_t *)b];
    return cmp_frames(&g_sort_sp->fr[x->first], x->n, &g_sort_sp->fr[y->first], y->n);
}

static size_t body_size(const dcpi_stackprof_t *sp)
{
    size_t n = BODY_HEAD + FOOTER;
    for (size_t i = 0; i < sp->nimg; i++)
        n += IMG_HEAD +
             pad4(strlen(sp->img[i].id) + strlen(sp->img[i].dir) + strlen(sp->img[i].path));
    return n + sp->nch * CHAIN_HEAD + sp->nfr * FRAME_SIZE;
}

/* The header to write: sp's lines with lost and truncated set to the running totals. */
static int out_header(const dcpi_stackprof_t *sp, dcpi_hdr_t *h)
{
    int rc = 0;
    for (size_t i = 0; i < sp->hdr.n && rc == 0; i++)
        rc = dcpi__hdr_append(h, sp->hdr.lines[i].key, sp->hdr.lines[i].value);
    char num[32];
    uint64_t lost = dcpi_stackprof_lost(sp), trunc = dcpi__stackprof_truncated(sp);
    if (rc == 0 && (lost || dcpi__hdr_get(h, "lost"))) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)lost);
        rc = dcpi__hdr_set(h, &dcpi__stackprof_spec, "lost", num);
    }
    if (rc == 0 && (trunc || dcpi__hdr_get(h, "truncated"))) {
        snprintf(num, sizeof(num), "%llu", (unsigned long long)trunc);
        rc = dcpi__hdr_set(h, &dcpi__stackprof_spec, "truncated", num);
    }
    return rc;
}

static unsigned char *put_str(unsigned char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static void encode_body(const dcpi_stackprof_t *sp, const size_t *order, unsigned char *p)
{
    dcpi__put_le32(p, (uint32_t)sp->nimg);
    dcpi__put_le32(p + 4, (uint32_t)sp->nch);
    p += BODY_HEAD;
    for (size_t i = 0; i < sp->nimg; i++) {
        const dcpi_stack_image_t *im = &sp->img[i];
        size_t len = strlen(im->id) + strlen(im->dir) + strlen(im->path);
        dcpi__put_le64(p, im->tstart);
        dcpi__put_le64(p + 8, im->tsize);
        dcpi__put_le32(p + 16, (uint32_t)strlen(im->id));
        dcpi__put_le32(p + 20, (uint32_t)strlen(im->dir));
        dcpi__put_le32(p + 24, (uint32_t)strlen(im->path));
        dcpi__put_le32(p + 28, 0);
        unsigned char *s = put_str(put_str(put_str(p + IMG_HEAD, im->id), im->dir), im->path);
        memset(s, 0, pad4(len) - len);
        p += IMG_HEAD + pad4(len);
    }
    for (size_t k = 0; k < sp->nch; k++) {
        const struct dcpi_stackprof_chain *c = &sp->ch[order[k]];
        dcpi__put_le64(p, c->count);
        dcpi__put_le32(p + 8, c->n);
        p += CHAIN_HEAD;
        for (uint32_t j = 0; j < c->n; j++, p += FRAME_SIZE) {
            dcpi__put_le32(p, sp->fr[c->first + j].image);
            dcpi__put_le32(p + 4, sp->fr[c->first + j].offset);
        }
    }
    dcpi__put_le64(p, sp->total);
    dcpi__put_le32(p + 8, (uint32_t)sp->nch);
    dcpi__put_le32(p + 12, (uint32_t)sp->nfr);
}

int dcpi_stackprof_encode(const dcpi_stackprof_t *sp, void **buf, size_t *len, char *err)
{
    if (!sp || !buf || !len)
        return DCPI_EINVAL;
    dcpi_hdr_t h = {0};
    size_t *order = NULL;
    unsigned char *out = NULL;
    int rc = out_header(sp, &h);
    if (rc == 0)
        rc = dcpi__hdr_check_required(&dcpi__stackprof_spec, &h, "stack profile", err);
    if (rc < 0)
        goto done;
    order = malloc((sp->nch ? sp->nch : 1) * sizeof(*order));
    size_t hsize = dcpi__hdr_size(&dcpi__stackprof_spec, &h), bsize = body_size(sp);
    out = order ? malloc(hsize + bsize + 1) : NULL;
    if (!out) {
        rc = DCPI_ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < sp->nch; i++)
        order[i] = i;
    g_sort_sp = sp;
    qsort(order, sp->nch, sizeof(*order), cmp_index);
    size_t hw = dcpi__hdr_encode(&dcpi__stackprof_spec, &h, (char *)out);
    encode_body(sp, order, out + hw);
    *buf = out;
    *len = hw + bsize;
    out = NULL;
done:
    free(out);
    free(order);
    dcpi__hdr_free(&h);
    return rc;
}

int dcpi_stackprof_write(const char *path, const dcpi_stackprof_t *sp, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi_stackprof_encode(sp, &buf, &len, err);
    if (rc == 0)
        rc = dcpi__write_atomic(path, buf, len, err);
    free(buf);
    return rc;
}

/* ---- parsing ---- */

typedef struct pstate {
    const unsigned char *p, *end;
    const char *name;
    char *err;
} pstate_t;

static int need(pstate_t *ps, size_t n, const char *what)
{
    if ((size_t)(ps->end - ps->p) < n)
        return dcpi__errf(ps->err, DCPI_ETRUNC, "%s: truncated %s", ps->name, what);
    return 0;
}

static int parse_string(pstate_t *ps, size_t n, char **out)
{
    *out = strndup((const char *)ps->p, n);
    if (!*out)
        return DCPI_ENOMEM;
    if (strlen(*out) != n)
        return dcpi__errf(ps->err, DCPI_EFORMAT, "%s: NUL byte in an image string", ps->name);
    ps->p += n;
    return 0;
}

static int parse_image(pstate_t *ps, dcpi_stackprof_t *sp, size_t i)
{
    int rc = need(ps, IMG_HEAD, "image record");
    if (rc < 0)
        return rc;
    uint64_t tstart = dcpi__get_le64(ps->p), tsize = dcpi__get_le64(ps->p + 8);
    uint32_t l[3] = {dcpi__get_le32(ps->p + 16), dcpi__get_le32(ps->p + 20),
                     dcpi__get_le32(ps->p + 24)};
    if (l[0] >= DCPI_STK_STR_MAX || l[1] >= DCPI_STK_STR_MAX || l[2] >= DCPI_STK_STR_MAX ||
        dcpi__get_le32(ps->p + 28))
        return dcpi__errf(ps->err, DCPI_EFORMAT, "%s: image %zu: bad string lengths", ps->name, i);
    ps->p += IMG_HEAD;
    size_t tot = (size_t)l[0] + l[1] + l[2];
    if ((rc = need(ps, pad4(tot), "image record")) < 0)
        return rc;
    const unsigned char *start = ps->p;
    char *s[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3 && rc == 0; k++)
        rc = parse_string(ps, l[k], &s[k]);
    if (rc == 0) {
        int idx = dcpi_stackprof_image(sp, s[0], s[1], s[2], tstart, tsize);
        if (idx == DCPI_ENOMEM)
            rc = idx;
        else if (idx < 0 || (size_t)idx != i)
            rc = dcpi__errf(ps->err, DCPI_EFORMAT,
                            "%s: image %zu: bad or repeated id or directory name", ps->name, i);
    }
    for (int k = 0; k < 3; k++)
        free(s[k]);
    ps->p = start + pad4(tot);
    return rc;
}

static int parse_chain(pstate_t *ps, dcpi_stackprof_t *sp, size_t k, dcpi_frame_t *f,
                       const dcpi_frame_t *prev, unsigned prevn, unsigned *nout)
{
    int rc = need(ps, CHAIN_HEAD, "chain");
    if (rc < 0)
        return rc;
    uint64_t count = dcpi__get_le64(ps->p);
    uint32_t n = dcpi__get_le32(ps->p + 8);
    ps->p += CHAIN_HEAD;
    if (n == 0 || n > DCPI_STACK_MAXFRAMES)
        return dcpi__errf(ps->err, DCPI_EFORMAT, "%s: chain %zu: %u frames (1 to %u)", ps->name, k,
                          n, DCPI_STACK_MAXFRAMES);
    if (count == 0)
        return dcpi__errf(ps->err, DCPI_EFORMAT, "%s: chain %zu: count 0", ps->name, k);
    if ((rc = need(ps, (size_t)n * FRAME_SIZE, "chain")) < 0)
        return rc;
    for (uint32_t j = 0; j < n; j++, ps->p += FRAME_SIZE) {
        f[j] = (dcpi_frame_t){dcpi__get_le32(ps->p), dcpi__get_le32(ps->p + 4)};
        if (f[j].image != DCPI_STACK_NOIMAGE && f[j].image >= sp->nimg)
            return dcpi__errf(ps->err, DCPI_EFORMAT,
                              "%s: chain %zu: image index %u out "
                              "of range",
                              ps->name, k, f[j].image);
    }
    if (k > 0 && cmp_frames(prev, prevn, f, n) >= 0)
        return dcpi__errf(ps->err, DCPI_EFORMAT,
                          "%s: chain %zu: chains unsorted or "
                          "repeated",
                          ps->name, k);
    *nout = n;
    return dcpi__stackprof_add_chain(sp, f, n, count) == DCPI_ENOMEM ? DCPI_ENOMEM : 0;
}

static int parse_chains(pstate_t *ps, dcpi_stackprof_t *sp, size_t nch)
{
    dcpi_frame_t *a = malloc(2 * DCPI_STACK_MAXFRAMES * sizeof(*a));
    if (!a)
        return DCPI_ENOMEM;
    dcpi_frame_t *cur = a, *prev = a + DCPI_STACK_MAXFRAMES;
    unsigned prevn = 0;
    int rc = 0;
    for (size_t k = 0; k < nch && rc == 0; k++) {
        unsigned n = 0;
        rc = parse_chain(ps, sp, k, cur, prev, prevn, &n);
        dcpi_frame_t *t = prev;
        prev = cur;
        cur = t;
        prevn = n;
    }
    free(a);
    return rc;
}

static int parse_footer(pstate_t *ps, const dcpi_stackprof_t *sp)
{
    int rc = need(ps, FOOTER, "footer");
    if (rc < 0)
        return rc;
    if (dcpi__get_le64(ps->p) != sp->total || dcpi__get_le32(ps->p + 8) != sp->nch ||
        dcpi__get_le32(ps->p + 12) != sp->nfr)
        return dcpi__errf(ps->err, DCPI_EFORMAT, "%s: footer does not match the chains", ps->name);
    ps->p += FOOTER;
    if (ps->p != ps->end)
        return dcpi__errf(ps->err, DCPI_EFORMAT, "%s: %zu trailing bytes", ps->name,
                          (size_t)(ps->end - ps->p));
    return 0;
}

static int parse_body(pstate_t *ps, dcpi_stackprof_t **out)
{
    int rc = need(ps, BODY_HEAD, "body");
    if (rc < 0)
        return rc;
    uint32_t nimg = dcpi__get_le32(ps->p), nch = dcpi__get_le32(ps->p + 4);
    ps->p += BODY_HEAD;
    if ((size_t)nch > (size_t)(ps->end - ps->p) / (CHAIN_HEAD + FRAME_SIZE) ||
        (size_t)nimg > (size_t)(ps->end - ps->p) / IMG_HEAD)
        return dcpi__errf(ps->err, DCPI_ETRUNC, "%s: truncated body (%u images, %u chains)",
                          ps->name, nimg, nch);
    rc = dcpi_stackprof_new(nch > DCPI_STACKPROF_DEFAULT_CHAINS ? nch : 0, out);
    dcpi_stackprof_t *sp = *out;
    if (rc == 0)
        sp->max_frames = SIZE_MAX; /* a file is read whole, whatever its depth */
    for (uint32_t i = 0; i < nimg && rc == 0; i++)
        rc = parse_image(ps, sp, i);
    if (rc == 0)
        rc = parse_chains(ps, sp, nch);
    return rc == 0 ? parse_footer(ps, sp) : rc;
}

int dcpi_stackprof_parse(const void *buf, size_t len, const char *name, dcpi_stackprof_t **out,
                         char *err)
{
    if (!buf || !out)
        return DCPI_EINVAL;
    *out = NULL;
    name = name ? name : "stack profile";
    dcpi_hdr_t h = {0};
    size_t body = 0;
    int rc = dcpi__hdr_parse(&dcpi__stackprof_spec, buf, len, name, &h, &body, err);
    if (rc == 0)
        rc = dcpi__hdr_check_required(&dcpi__stackprof_spec, &h, name, err) < 0 ? DCPI_EFORMAT : 0;
    dcpi_stackprof_t *sp = NULL;
    if (rc == 0) {
        pstate_t ps = {(const unsigned char *)buf + body, (const unsigned char *)buf + len, name,
                       err};
        rc = parse_body(&ps, &sp);
    }
    if (rc == 0) {
        sp->max_frames = sp->max_chains * DCPI_STACKPROF_FRAMES_PER_CHAIN;
        if (sp->nfr > sp->max_frames)
            sp->max_frames = sp->nfr;
        sp->hdr = h;
        *out = sp;
        return 0;
    }
    if (rc == DCPI_ENOMEM)
        dcpi__errf(err, rc, "%s: out of memory", name);
    dcpi__hdr_free(&h);
    dcpi_stackprof_free(sp);
    return rc;
}

int dcpi_stackprof_read(const char *path, dcpi_stackprof_t **out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 1, &buf, &len, err);
    if (rc == 0)
        rc = dcpi_stackprof_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

static int make_parent(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return dcpi__mkdirs(dir, 0755);
}

int dcpi_stackprof_merge_write(const char *path, const dcpi_stackprof_t *sp, char *err)
{
    if (!path || !sp)
        return DCPI_EINVAL;
    dcpi_stackprof_t *old = NULL;
    struct stat st;
    if (lstat(path, &st) < 0) {
        int rc = make_parent(path);
        if (rc < 0)
            return dcpi__errf(err, rc, "%s: cannot create its directory", path);
        return dcpi_stackprof_write(path, sp, err);
    }
    int rc = dcpi_stackprof_read(path, &old, err);
    if (rc == 0 && (rc = dcpi_stackprof_merge(old, sp)) < 0)
        dcpi__errf(err, rc == DCPI_EINVAL ? DCPI_EFORMAT : rc, "%s: %s", path,
                   rc == DCPI_EINVAL ? "event or period differ from the file's"
                                     : dcpi_strerror(rc));
    if (rc == DCPI_EINVAL)
        rc = DCPI_EFORMAT;
    if (rc == 0)
        rc = dcpi_stackprof_write(path, old, err);
    dcpi_stackprof_free(old);
    return rc;
}

/* ---- the database ---- */

void dcpi_stackprof_path(const char *db, const char *epoch, const char *platform, const char *event,
                         char *out, size_t len)
{
    snprintf(out, len, "%s/%s/%s/stacks/%s.stk", db, epoch, platform, event);
}

static int load_one(const char *path, dcpi_stackprof_t **acc, char *err)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    dcpi_stackprof_t *sp = NULL;
    int rc = dcpi_stackprof_read(path, &sp, err);
    if (rc < 0 && rc != DCPI_ENOMEM && dcpi__damage_skip(rc, "%s", err) == 0)
        return 0; /* damaged: named, left out, counted in the exit status (core/base/damage.h) */
    if (rc < 0)
        return rc;
    if (!*acc) {
        *acc = sp;
        return 0;
    }
    rc = dcpi_stackprof_merge(*acc, sp);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: cannot merge: %s", path,
                   rc == DCPI_EINVAL ? "period differs" : dcpi_strerror(rc));
    dcpi_stackprof_free(sp);
    return rc;
}

int dcpi_stackprof_load(const char *db, const char *epoch, const char *platform, const char *event,
                        dcpi_stackprof_t **out, char *err)
{
    if (!db || !epoch || !event || !out)
        return DCPI_EINVAL;
    *out = NULL;
    char **plats = NULL;
    size_t np = 0;
    int rc = 0;
    if (!platform)
        rc = dcpi_db_platforms(db, epoch, &plats, &np, err);
    char path[4096];
    for (size_t i = 0; rc == 0 && i < (platform ? 1 : np); i++) {
        dcpi_stackprof_path(db, epoch, platform ? platform : plats[i], event, path, sizeof(path));
        rc = load_one(path, out, err);
    }
    dcpi_db_free_list(plats, np);
    if (rc < 0) {
        dcpi_stackprof_free(*out);
        *out = NULL;
    }
    return rc;
}

int dcpi_stackprof_load_epochs(const char *db, const char *const *epochs, size_t nepochs,
                               const char *platform, const char *event, dcpi_stackprof_t **out,
                               char *err)
{
    if (!epochs || !out)
        return DCPI_EINVAL;
    *out = NULL;
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nepochs; k++) {
        dcpi_stackprof_t *one = NULL;
        rc = dcpi_stackprof_load(db, epochs[k], platform, event, &one, err);
        if (rc == 0 && one && !*out) {
            *out = one;
            continue;
        }
        if (rc == 0 && one && (rc = dcpi_stackprof_merge(*out, one)) < 0)
            dcpi__errf(err, rc, "%s: epoch %s: cannot merge its stacks of %s: %s", db, epochs[k],
                       event, rc == DCPI_EINVAL ? "period differs" : dcpi_strerror(rc));
        dcpi_stackprof_free(one);
    }
    if (rc < 0) {
        dcpi_stackprof_free(*out);
        *out = NULL;
    }
    return rc;
}
