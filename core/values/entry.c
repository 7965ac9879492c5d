/*
 * entry.c - the sink's way in for a CPU state (see values.h): the user registers right before an
 * instruction runs, taken by the regs backend (a PC sample, regs.c: dcpi_values_sample) or the
 * bp backend (a breakpoint's sample, bparm.c: dcpi__values_take always admitted), into the
 * plugins' traces and the recorder's.
 *
 * Per sample:
 *   1. resolve the ip (image, offset, mapping) and read up to 15 code bytes from the image file
 *      (one fd per image, pread, a direct-mapped cache of 4096 places) or, when the file cannot be
 *      read, from the process (process_vm_readv); failure counts as "without code";
 *   2. decode; for each enabled plugin with a vlist for the key the sample is a candidate; if
 *      the per-CPU token bucket admits the sample, compute the vlist's values
 *      (core/capture/capture.h) and append a burst (pid, tid, time) and one entry to the
 *      plugin's trace; otherwise it is only "seen" in the instruction's summary;
 *   3. the traces go on through the pipeline (pipeline.c): hand-over, merge, flush.
 * With -vrecord, the recorder (record.c) is one more candidate, decided once for all.
 */
#include "core/values/values-int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/image/image.h"
#include "dcpi/errno.h"

#define FD_UNTRIED (-2)
#define FD_FAILED  (-1)

/* ---------------------------------------------------------------- reading code */

int dcpi_values_image_fd(dcpi_values_t *vt, const dcpi_image_t *img)
{
    if (img->index >= vt->nfds) {
        if (img->index > UINT_MAX - 16)
            return FD_FAILED;
        unsigned n = img->index + 16;
        int *f = reallocarray(vt->fds, n, sizeof *f);
        if (!f)
            return FD_FAILED;
        for (unsigned i = vt->nfds; i < n; i++)
            f[i] = FD_UNTRIED;
        vt->fds = f;
        vt->nfds = n;
    }
    int *fd = &vt->fds[img->index];
    if (*fd == FD_UNTRIED) {
        *fd = img->probed_ok && img->path[0] == '/' ? open(img->path, O_RDONLY | O_CLOEXEC) : -1;
        if (*fd < 0)
            *fd = FD_FAILED;
    }
    return *fd;
}

/* Up to 15 bytes at ip: from the image file when it can be read, else from the process. */
static ssize_t read_code(dcpi_values_t *vt, const dcpi_image_t *img, uint64_t start, uint64_t pgoff,
                         const dcpi_values_sample_t *s, uint8_t *buf)
{
    uint64_t off = s->ip - start + pgoff;
    dcpi_values_code_slot_t *c =
        &vt->code[(off ^ (off >> 12) ^ img->index * 0x9e37u) % DCPI_VALUES_CODE_SLOTS];
    if (c->image_plus1 == img->index + 1 && c->off == off) {
        memcpy(buf, c->bytes, c->len);
        return c->len;
    }
    int fd = dcpi_values_image_fd(vt, img);
    if (fd >= 0) {
        ssize_t n = pread(fd, buf, 15, (off_t)off);
        if (n > 0) { /* files do not change under a mapping: cache them */
            *c = (dcpi_values_code_slot_t){
                .off = off, .image_plus1 = img->index + 1, .len = (uint8_t)n};
            memcpy(c->bytes, buf, (size_t)n);
            return n;
        }
    }
    struct iovec local = {buf, 15}, remote = {(void *)(uintptr_t)s->ip, 15};
    ssize_t n = process_vm_readv((pid_t)s->pid, &local, 1, &remote, 1, 0);
    if (n <= 0) { /* the 15 bytes may cross into an unmapped page: try up to its end */
        size_t left = 4096 - (s->ip & 4095);
        remote.iov_len = local.iov_len = left < 15 ? left : 15;
        n = process_vm_readv((pid_t)s->pid, &local, 1, &remote, 1, 0);
    }
    return n;
}

void dcpi__values_close_code(dcpi_values_t *vt)
{
    for (unsigned i = 0; i < vt->nfds; i++)
        if (vt->fds[i] >= 0)
            close(vt->fds[i]);
    free(vt->fds);
}

/* ---------------------------------------------------------------- one sample */

static int admit(dcpi_values_t *vt, const dcpi_values_sample_t *s)
{
    dcpi_values_bucket_t *b = &vt->cpu[s->cpu % DCPI_VALUES_MAXCPU];
    if (b->last == 0) {
        b->tokens = vt->burst;
    } else if (s->time > b->last) {
        b->tokens += (double)(s->time - b->last) * vt->o.rate / 1e9;
        if (b->tokens > vt->burst)
            b->tokens = vt->burst;
    }
    if (s->time > b->last || b->last == 0)
        b->last = s->time;
    if (b->tokens < 1)
        return 0;
    b->tokens -= 1;
    return 1;
}

/* One entry (and its burst) into e. 0 or DCPI_EFULL / DCPI_E*. */
static int append(dcpi_values_t *vt, trace_encoder_t *e, const dcpi_insn_t *insn,
                  const dcpi_values_sample_t *s, const trace_value_t *kinds, int n,
                  const uint64_t *values, unsigned missing)
{
    int rc = trace_encoder_burst(e, s->pid, s->tid, s->time, vt->o.contexts);
    return rc ? rc
              : trace_encoder_entry(e, &insn->inst, s->ip, s->context0, s->context1, n, kinds,
                                    values, missing);
}

/* The n values of a vlist (kinds as stored per key) for the sample: kinds[] and values[] filled,
 * the missing bits returned. */
static unsigned capture(const dcpi_insn_t *insn, const dcpi_values_sample_t *s,
                        const uint8_t *stored, int n, trace_value_t *kinds, uint64_t *values)
{
    unsigned missing = 0;
    for (int i = 0; i < n; i++)
        kinds[i] = (trace_value_t)stored[i];
    dcpi_capture_values(insn, &s->regs, kinds, n, values, &missing);
    return missing;
}

/* Append the sample's entry to p's trace (the sink's put: hand-over, full, lost). */
static void encode(dcpi_values_t *vt, dcpi_values_plugin_t *p, const dcpi_insn_t *insn,
                   const dcpi_values_sample_t *s, unsigned image)
{
    trace_opc_t k = insn->inst.opc;
    int n = p->nval[k];
    trace_value_t kinds[TRACE_VLIST_MAX];
    uint64_t values[TRACE_VLIST_MAX];
    unsigned missing = capture(insn, s, p->kinds[k], n, kinds, values);
    dcpi_values_put_t e = {.pid = s->pid,
                           .tid = s->tid,
                           .time = s->time,
                           .contexts = vt->o.contexts,
                           .inst = &insn->inst,
                           .pc = s->ip,
                           .c0 = s->context0,
                           .c1 = s->context1,
                           .n = n,
                           .kinds = kinds,
                           .values = values,
                           .missing = missing,
                           .cluster = s->cluster};
    dcpi__values_put(vt, p, &e, image);
}

typedef struct rec_arg {
    dcpi_values_t *vt;
    const dcpi_insn_t *insn;
    const dcpi_values_sample_t *s;
    const dcpi_image_t *img;
    uint64_t start, pgoff;
    const trace_value_t *kinds;
    int n;
    const uint64_t *values;
    unsigned missing;
} rec_arg_t;

static void rec_hand_over(dcpi_values_t *vt, void *owner)
{
    (void)owner;
    dcpi__values_rec_hand_over(vt);
}

/* The recorder's MAP of the sample's mapping (first try only), then its entry and the entry's
 * cluster: 0 or DCPI_EFULL / DCPI_E*. */
static int rec_write(void *arg, int retry)
{
    const rec_arg_t *a = arg;
    if (!retry)
        dcpi__values_rec_map(a->vt, a->img, a->start, a->pgoff, a->s);
    int rc = append(a->vt, &a->vt->rec.enc, a->insn, a->s, a->kinds, a->n, a->values, a->missing);
    if (rc == 0)
        dcpi__values_rec_cluster(a->vt, a->s->cluster);
    return rc;
}

/* Append the sample's entry with the recording vlist to the recorder's trace. */
static void rec_encode(dcpi_values_t *vt, const dcpi_insn_t *insn, const dcpi_values_sample_t *s,
                       const dcpi_image_t *img, uint64_t start, uint64_t pgoff)
{
    dcpi_values_recorder_t *r = &vt->rec;
    trace_opc_t k = insn->inst.opc;
    int n = r->nval[k];
    trace_value_t kinds[TRACE_VLIST_MAX];
    uint64_t values[TRACE_VLIST_MAX];
    rec_arg_t a = {.vt = vt,
                   .insn = insn,
                   .s = s,
                   .img = img,
                   .start = start,
                   .pgoff = pgoff,
                   .kinds = kinds,
                   .n = n,
                   .values = values,
                   .missing = capture(insn, s, r->kinds[k], n, kinds, values)};
    dcpi__values_writer_t w = {
        .enc = &r->enc, .pid = s->pid, .hand_over = rec_hand_over, .write = rec_write, .arg = &a};
    dcpi__values_write(vt, &w);
}

void dcpi_values_sample(dcpi_values_t *vt, const dcpi_values_sample_t *s)
{
    dcpi__values_take(vt, s, 0);
}

/* The sample's image, offset, mapping and decoded instruction: 0, or -1 (counted). */
static int decode_sample(dcpi_values_t *vt, const dcpi_values_sample_t *s, dcpi_image_t **img,
                         uint32_t *off, uint64_t *start, uint64_t *pgoff, dcpi_insn_t *insn)
{
    uint8_t code[15];
    if (dcpi_loadmap_resolve(vt->lm, (pid_t)s->pid, s->ip, img, off) < 0 ||
        dcpi_loadmap_lookup(vt->lm, (pid_t)s->pid, s->ip, img, start, pgoff) < 0) {
        vt->unresolved++;
        return -1;
    }
    ssize_t len = read_code(vt, *img, *start, *pgoff, s, code);
    if (len <= 0) {
        vt->nocode++;
        return -1;
    }
    if (dcpi_capture_decode(code, (size_t)len, s->ip, insn) < 0 || insn->inst.opc >= vt->nkeys) {
        vt->unresolved++;
        return -1;
    }
    return 0;
}

int dcpi_values_oracle_sample(dcpi_values_t *vt, const dcpi_values_sample_t *s)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    uint32_t off;
    dcpi_insn_t insn;
    int took = 0;
    if (decode_sample(vt, s, &img, &off, &start, &pgoff, &insn) < 0)
        return 0;
    for (unsigned i = vt->npl; i < vt->npl + vt->nor; i++) {
        dcpi_values_plugin_t *p = &vt->pl[i];
        if (p->st.disabled || p->nval[insn.inst.opc] < 0 ||
            !dcpi__values_admits(vt, p, img, off, &insn.inst))
            continue;
        p->st.seen++;
        encode(vt, p, &insn, s, img->index);
        took = 1;
    }
    return took;
}

void dcpi__values_take(dcpi_values_t *vt, const dcpi_values_sample_t *s, int always)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    uint32_t off;
    dcpi_insn_t insn;
    if (decode_sample(vt, s, &img, &off, &start, &pgoff, &insn) < 0)
        return;
    int admitted = -1; /* decided at the first candidate (the recorder is one for all) */
    if (vt->rec.tf) {
        admitted = always || admit(vt, s);
        if (admitted)
            rec_encode(vt, &insn, s, img, start, pgoff);
        else
            dcpi_tracefile_seen(vt->rec.tf, s->pid, s->ip, insn.inst.opc, 1);
    }
    for (unsigned i = 0; i < vt->npl; i++) {
        dcpi_values_plugin_t *p = &vt->pl[i];
        if (p->st.disabled || p->nval[insn.inst.opc] < 0 ||
            !dcpi__values_admits(vt, p, img, off, &insn.inst))
            continue;
        p->st.seen++;
        if (admitted < 0)
            admitted = always || admit(vt, s);
        if (admitted) {
            encode(vt, p, &insn, s, img->index);
            continue;
        }
        dcpi_vsummary_t *sum = dcpi__values_summary_at(vt, p, img->index, off);
        if (sum)
            dcpi_vsummary_seen(sum, 1);
        else
            dcpi__values_lose(p, img->index, 1);
    }
}
