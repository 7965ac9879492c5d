/*
 * record.c - the recorder of dcpid -vrecord (docs/dcpireplay.md "RECORDING"; see values.h,
 * values-int.h): every decoded sample is a candidate of the recorder; admitted ones get an entry
 * in the recorder's trace with the recording vlist of their key (the union of the plugins'
 * vlists, then up to 7 values of REGC, EA, REGA, REGB, BR_TAKEN, BR_TARGET, RFLAGS) and a MAP
 * for their mapping; the others a SEEN count (regs.c encodes them). Here: the recording vlists,
 * the MAPs, handing the trace over to the segment (core/store/tracefile.h), one segment per
 * epoch.
 */
#include "core/values/values-int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/log.h"
#include "core/image/image.h"
#include "dcpi/errno.h"

/* The recording vlist of every key: the union of the plugins' vlists, then the extras. */
int dcpi__values_rec_build(dcpi_values_t *vt)
{
    static const uint8_t extra[] = {TRACE_REGC,     TRACE_EA,        TRACE_REGA,  TRACE_REGB,
                                    TRACE_BR_TAKEN, TRACE_BR_TARGET, TRACE_RFLAGS};
    dcpi_values_recorder_t *r = &vt->rec;
    r->buf = malloc(DCPI_VALUES_BUF_BYTES);
    r->nval = malloc(vt->nkeys);
    r->kinds = calloc(vt->nkeys, sizeof *r->kinds);
    if (!r->buf || !r->nval || !r->kinds)
        return DCPI_ENOMEM;
    for (trace_opc_t k = 0; k < vt->nkeys; k++) {
        int n = 0;
        for (unsigned i = 0; i < vt->npl; i++)
            for (int j = 0; j < vt->pl[i].nval[k]; j++)
                if (!memchr(r->kinds[k], vt->pl[i].kinds[k][j], (size_t)n) && n < TRACE_VLIST_MAX)
                    r->kinds[k][n++] = vt->pl[i].kinds[k][j];
        for (size_t j = 0; j < sizeof extra && n < TRACE_VLIST_MAX; j++)
            if (!memchr(r->kinds[k], extra[j], (size_t)n))
                r->kinds[k][n++] = extra[j];
        r->nval[k] = (int8_t)n;
        trace_value_t v[TRACE_VLIST_MAX];
        for (int j = 0; j < n; j++)
            v[j] = (trace_value_t)r->kinds[k][j];
        vt->regs_mask |= dcpi_capture_perf_mask(v, n);
    }
    trace_encoder_init(&r->enc, r->buf, DCPI_VALUES_BUF_BYTES);
    return 0;
}

/* Start an empty recorder trace. */
static void rec_reset(dcpi_values_recorder_t *r)
{
    trace_encoder_init(&r->enc, r->buf, DCPI_VALUES_BUF_BYTES);
    r->any_cluster = 0;
}

void dcpi__values_rec_cluster(dcpi_values_t *vt, uint64_t cluster)
{
    dcpi_values_recorder_t *r = &vt->rec;
    unsigned n = trace_encoder_entries(&r->enc);
    if (n == 0 || n > VSAMPLE_BUFFER_SIZE)
        return; /* (dcpi__values_write hands over at VSAMPLE_BUFFER_SIZE entries) */
    r->clusters[n - 1] = cluster;
    r->any_cluster |= cluster != 0;
}

/* Write the recorder's pending trace into the segment (with the CLUSTER record of its entries'
 * clusters when one is not 0) and start a new one. */
void dcpi__values_rec_hand_over(dcpi_values_t *vt)
{
    dcpi_values_recorder_t *r = &vt->rec;
    if (!r->tf)
        return;
    unsigned n = trace_encoder_entries(&r->enc);
    int cl = r->any_cluster && n <= VSAMPLE_BUFFER_SIZE;
    if (n) {
        int rc =
            dcpi_tracefile_trace_clustered(r->tf, r->enc.pid, r->buf, trace_encoder_size(&r->enc),
                                           cl ? r->clusters : NULL, cl ? n : 0);
        if (rc < 0 && rc != DCPI_EFULL && !r->error_logged++)
            dcpi__log(DCPI_LOG_ERR, "vrecord: %s: %s", dcpi_tracefile_path(r->tf),
                      dcpi_strerror(rc));
    }
    rec_reset(r);
}

/* Hand the recorder's trace over and close its segment; refusals and errors are logged. */
static void rec_close(dcpi_values_t *vt)
{
    char err[DCPI_ERRLEN] = "";
    if (!vt->rec.tf)
        return;
    dcpi__values_rec_hand_over(vt);
    dcpi_tracefile_stats_t st;
    dcpi_tracefile_stats(vt->rec.tf, &st);
    int rc = dcpi_tracefile_close(vt->rec.tf, err);
    vt->rec.tf = NULL;
    if (rc == DCPI_EFULL)
        dcpi__log(DCPI_LOG_ERR,
                  "vrecord: %" PRIu64 " records (%" PRIu64 " bytes) not recorded: -vrecord-max "
                  "reached (%s)",
                  st.refused, st.refused_bytes, err);
    else if (rc < 0)
        dcpi__log(DCPI_LOG_ERR, "vrecord: %s", err);
}

void dcpi__values_rec_free(dcpi_values_t *vt)
{
    rec_close(vt);
    free(vt->rec.buf);
    free(vt->rec.nval);
    free(vt->rec.kinds);
}

void dcpi__values_rec_pid_event(dcpi_values_t *vt, pid_t pid)
{
    if (!vt->rec.tf)
        return;
    if (trace_encoder_entries(&vt->rec.enc) && vt->rec.enc.pid == (unsigned)pid)
        dcpi__values_rec_hand_over(vt);
    dcpi_tracefile_forget_pid(vt->rec.tf, (unsigned)pid);
    if (vt->rec.map_pid == (uint32_t)pid)
        vt->rec.map_pid = 0;
}

/* The recorder's MAP for the mapping of s->ip (written when it changes). */
void dcpi__values_rec_map(dcpi_values_t *vt, const dcpi_image_t *img, uint64_t start,
                          uint64_t pgoff, const dcpi_values_sample_t *s)
{
    dcpi_values_recorder_t *r = &vt->rec;
    if (r->map_pid == s->pid && s->ip >= r->map_lo && s->ip < r->map_hi)
        return;
    uint64_t lo, hi, delta;
    char dirname[512];
    if (dcpi_tracefile_map_range(&img->info, s->ip, start, pgoff, &lo, &hi, &delta) < 0)
        return; /* below tstart: replay counts its vsamples as lost */
    dcpi_image_dirname(img->path, img->info.id, dirname, sizeof dirname);
    if (dcpi_tracefile_map(r->tf, s->pid, lo, hi, delta, img->info.id, dirname, img->path,
                           img->info.tstart, img->info.tsize) == 0) {
        r->map_pid = s->pid;
        r->map_lo = lo;
        r->map_hi = hi;
    }
}

int dcpi_values_new_epoch(dcpi_values_t *vt, const dcpi_values_flush_info_t *fi, char *err)
{
    char dir[4096];
    if (!vt->o.record)
        return 0;
    rec_close(vt);
    if (snprintf(dir, sizeof dir, "%s/%s/%s/%s", fi->db, fi->epoch, fi->platform,
                 DCPI_TRACEFILE_DIR) >= (int)sizeof dir)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", dir);
    dcpi_tracefile_meta_t meta = {.epoch = fi->epoch,
                                  .platform = fi->platform,
                                  .event = fi->event,
                                  .period = fi->period,
                                  .cpuspeed = fi->cpuspeed,
                                  .cpucount = fi->cpucount,
                                  .contexts = vt->o.contexts,
                                  .hotsize = vt->o.hotsize};
    vt->rec.map_pid = 0;
    vt->rec.error_logged = 0;
    rec_reset(&vt->rec);
    return dcpi_tracefile_open(dir, &meta, vt->o.record_max, &vt->rec.tf, err);
}

int dcpi_values_record_stats(const dcpi_values_t *vt, struct dcpi_tracefile_stats *out)
{
    if (!vt->rec.tf)
        return DCPI_ENOENT;
    dcpi_tracefile_stats(vt->rec.tf, out);
    return 0;
}
