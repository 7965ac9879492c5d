/*
 * tests/fuzz/gen_corpus.c - writes the generated part of the seed corpora with dcpi's own
 * encoders (tests/fuzz/corpus/<harness>/gen-*): small valid PC profiles, value profiles and
 * value traces of several shapes, gperftools CPU profiles (64- and 32-bit slots), gmon.out,
 * stack profiles and recorded trace segments. Not built by CMake; tests/fuzz/gen_corpus.sh compiles
 * and runs it against a build's libdcpi_static.a, then adds the text and ELF seeds. Usage:
 * gen_corpus CORPUS_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/formats/gmon.h"
#include "core/formats/gperf.h"
#include "core/store/stackprof.h"
#include "core/store/tracefile.h"
#include "core/store/vprof.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"
#include "trace/trace.h"

static const char *corpus;

static int put(const char *harness, const char *name, const void *buf, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/gen-%s", corpus, harness, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

static const char *const base_keys[][2] = {
    {"image", "0123456789abcdef"},
    {"epoch", "202611210752"},
    {"platform", "host1"},
    {"event", "cpu-clock"},
    {"period", "100000"},
    {"tstart", "0x401000"},
    {"tsize", "4096"},
    {"cpuspeed", "2400"},
};

static int gen_profile(const char *name, int nsamples, int stride, int extra)
{
    dcpi_profile_t *p = NULL;
    char err[DCPI_ERRLEN];
    void *buf = NULL;
    size_t len = 0;
    if (dcpi_profile_new(&p) < 0)
        return -1;
    for (size_t i = 0; i < sizeof base_keys / sizeof base_keys[0]; i++)
        dcpi_profile_set(p, base_keys[i][0], base_keys[i][1]);
    if (extra) {
        dcpi_profile_set(p, "lost", "17");
        dcpi_profile_set(p, "path", "/usr/lib/x86_64-linux-gnu/libc.so.6");
        dcpi_profile_set(p, "label", "a label with words");
        dcpi_profile_set(p, "x-unknown", "kept as is");
    }
    for (int i = 0; i < nsamples; i++)
        dcpi_profile_add(p, (uint32_t)(i * stride + (i % 3)), (uint32_t)(1 + i * 7919 % 1000));
    if (extra)
        dcpi_profile_add(p, 0xfffffff0u, UINT32_MAX);
    int rc = dcpi_profile_encode(p, &buf, &len, err);
    if (rc == 0)
        rc = put("profile", name, buf, len);
    else
        fprintf(stderr, "profile %s: %s\n", name, err);
    free(buf);
    dcpi_profile_free(p);
    return rc;
}

static int gen_vprof(const char *name, unsigned hot, int nrec, int nvals, int ctx)
{
    dcpi_vprof_t *vp = NULL;
    char err[DCPI_ERRLEN];
    void *buf = NULL;
    size_t len = 0;
    if (dcpi_vprof_new(hot, &vp) < 0)
        return -1;
    for (size_t i = 0; i < sizeof base_keys / sizeof base_keys[0]; i++)
        dcpi_vprof_set(vp, base_keys[i][0], base_keys[i][1]);
    dcpi_vprof_set(vp, "vprof", "classic");
    dcpi_vprof_set(vp, "contexts", ctx ? "1" : "0");
    if (nrec > 2)
        dcpi_vprof_set(vp, "lost", "5");
    for (int r = 0; r < nrec; r++) {
        dcpi_vsummary_t *s = dcpi_vprof_at(vp, (uint32_t)(r * 12 + 4), 1);
        for (int v = 0; v < nvals; v++)
            dcpi_vsummary_add(s, (uint64_t)(v * v) << (r % 40), ctx ? (uint64_t)v : 0,
                              ctx ? (uint64_t)r : 0, (uint64_t)(nvals - v));
        dcpi_vsummary_seen(s, (uint64_t)r);
    }
    int rc = dcpi_vprof_encode(vp, &buf, &len, err);
    if (rc == 0)
        rc = put("vprof", name, buf, len);
    else
        fprintf(stderr, "vprof %s: %s\n", name, err);
    free(buf);
    dcpi_vprof_free(vp);
    return rc;
}

/* Instructions of the trace seeds (hex bytes). */
static const char *const insns[] = {"4889d8", "488b4308", "48894308", "480fafc3",
                                    "75f0",   "c3",       "f20f58c1", "4801d8"};

static int decode(const char *hex, trace_inst_t *inst)
{
    unsigned char b[16];
    int n = 0;
    unsigned v;
    while (n < 15 && sscanf(hex + 2 * n, "%2x", &v) == 1)
        b[n++] = (unsigned char)v;
    return trace_inst_decode(b, n, inst) == n ? 0 : -1;
}

/* One trace: nburst bursts of nent entries each; every shape knob is a flag. */
static int gen_trace(const char *name, int nburst, int nent, int ctx, int missing, int jumps)
{
    static trace_encoder_t e;
    static uint8_t buf[16384];
    trace_inst_t inst[sizeof insns / sizeof insns[0]];
    for (size_t i = 0; i < sizeof insns / sizeof insns[0]; i++)
        if (decode(insns[i], &inst[i]) < 0)
            return -1;
    trace_encoder_init(&e, buf, sizeof buf);
    uint64_t pc = 0x401000;
    for (int b = 0; b < nburst; b++) {
        if (trace_encoder_burst(&e, 77, 77 + (unsigned)b, 1000000ull * (unsigned)(b + 1),
                                ctx && b % 2 == 0) < 0)
            return -1;
        for (int i = 0; i < nent; i++) {
            const trace_inst_t *in = &inst[(unsigned)i % (sizeof inst / sizeof inst[0])];
            trace_value_t kinds[TRACE_VLIST_MAX];
            uint64_t vals[TRACE_VLIST_MAX];
            int nv = i % (TRACE_VLIST_MAX + 1);
            for (int k = 0; k < nv; k++) {
                kinds[k] = (trace_value_t)(1 + (i + k) % (TRACE_VALUE_COUNT - 1));
                vals[k] = (uint64_t)(i * 1000 + k) * (k % 2 ? 1 : 0x10001ull);
            }
            unsigned mask = missing && nv ? (1u << (i % nv)) : 0;
            if (trace_encoder_entry(&e, in, pc, (uint64_t)i, (uint64_t)-i, nv, kinds, vals, mask) <
                0)
                return -1;
            pc = jumps && i % 5 == 4 ? 0x401000 + (uint64_t)(i % 3) * 0x40 : pc + in->length;
        }
    }
    return put("trace", name, buf, trace_encoder_size(&e));
}

static int gen_gperf(const char *name, int slot, int nrec, int with_text)
{
    dcpi_gperf_t *g = NULL;
    void *buf = NULL;
    size_t len = 0;
    if (dcpi_gperf_new(10000, &g) < 0)
        return -1;
    g->slot = slot;
    for (int r = 0; r < nrec; r++) {
        uint64_t pcs[4] = {0x401000 + (uint64_t)r * 16, 0x401800, 0x402000 + (uint64_t)r, 0x7f0010};
        dcpi_gperf_add(g, (uint64_t)(r + 1) * 3, pcs, (uint32_t)(1 + r % 4));
    }
    if (with_text) {
        dcpi_gperf_add_text(g, "00400000-00403000 r-xp 00000000 08:01 1234 /usr/bin/work");
        dcpi_gperf_add_text(g, "7f0000-7f2000 r-xp 00001000 08:01 99 $build/lib/libx.so");
        dcpi_gperf_add_text(g, "00600000-00601000 rw-p 00000000 00:00 0");
    }
    int rc = dcpi_gperf_encode(g, &buf, &len);
    if (rc == 0)
        rc = put("gperf", name, buf, len);
    else
        fprintf(stderr, "gperf %s: %s\n", name, dcpi_strerror(rc));
    free(buf);
    dcpi_gperf_free(g);
    return rc;
}

static int gen_gmon(const char *name, int nhist, uint32_t nbins, int narcs)
{
    dcpi_gmon_t *g = NULL;
    void *buf = NULL;
    size_t len = 0;
    if (dcpi_gmon_new(&g) < 0)
        return -1;
    for (int h = 0; h < nhist; h++) {
        dcpi_gmon_hist_t *hist = NULL;
        uint64_t low = 0x401000 + (uint64_t)h * 0x1000;
        if (dcpi_gmon_add_hist(g, low, low + nbins * 2 + (uint64_t)h, nbins, 100, &hist) == 0)
            for (uint32_t i = 0; i < nbins; i++)
                hist->bins[i] = (uint16_t)(i * i % 7);
    }
    for (int a = 0; a < narcs; a++)
        dcpi_gmon_add_arc(g, 0x401010 + (uint64_t)a * 8, 0x401200 + (uint64_t)(a % 3) * 0x40,
                          (uint32_t)(a + 1));
    int rc = dcpi_gmon_encode(g, &buf, &len);
    if (rc == 0)
        rc = put("gmon", name, buf, len);
    free(buf);
    dcpi_gmon_free(g);
    return rc;
}

static int gen_stack(const char *name, int nimg, int nchains, int depth)
{
    dcpi_stackprof_t *sp = NULL;
    char err[DCPI_ERRLEN];
    void *buf = NULL;
    size_t len = 0;
    if (dcpi_stackprof_new(0, &sp) < 0)
        return -1;
    dcpi_stackprof_set(sp, "epoch", "202611210752");
    dcpi_stackprof_set(sp, "platform", "host1");
    dcpi_stackprof_set(sp, "event", "cpu-clock");
    dcpi_stackprof_set(sp, "period", "100000");
    if (nchains > 3)
        dcpi_stackprof_set(sp, "lost", "2");
    int idx[3] = {0, 0, 0};
    static const char *const ids[] = {"0123abcd", "deadbeef", "77"};
    static const char *const dirs[] = {"work_0123abcd", "libc.so.6_deadbeef", "vmlinux_77"};
    for (int i = 0; i < nimg && i < 3; i++)
        idx[i] = dcpi_stackprof_image(sp, ids[i], dirs[i], i == 1 ? "/lib/libc.so.6" : NULL,
                                      0x401000 + (uint64_t)i * 0x100000, 0x2000);
    for (int c = 0; c < nchains; c++) {
        dcpi_frame_t f[8];
        unsigned n = (unsigned)(1 + (c % depth));
        for (unsigned k = 0; k < n; k++)
            f[k] = (dcpi_frame_t){k == 3 ? DCPI_STACK_NOIMAGE : (uint32_t)idx[(c + k) % nimg],
                                  (uint32_t)(c * 16 + k * 4)};
        dcpi_stackprof_add(sp, f, n, (uint64_t)(c + 1));
    }
    int rc = dcpi_stackprof_encode(sp, &buf, &len, err);
    if (rc == 0)
        rc = put("stack", name, buf, len);
    else
        fprintf(stderr, "stack %s: %s\n", name, err);
    free(buf);
    dcpi_stackprof_free(sp);
    return rc;
}

/* A recorded trace segment: maps, traces (one compressible), seen pairs; closed or torn. */
static int gen_tracefile(const char *name, int ntraces, int close_it, int clustered)
{
    static uint64_t cl[512];
    char dir[] = "/tmp/dcpi-gen.XXXXXX", err[DCPI_ERRLEN];
    static uint8_t tbuf[8192];
    static trace_encoder_t e;
    if (!mkdtemp(dir))
        return -1;
    dcpi_tracefile_meta_t meta = {"202611210752", "host1", "cpu-clock", 100000, 2400, 2, 1, 16};
    dcpi_tracefile_t *w = NULL;
    int rc = dcpi_tracefile_open(dir, &meta, 0, &w, err);
    if (rc < 0) {
        fprintf(stderr, "tracefile: %s\n", err);
        rmdir(dir);
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", dcpi_tracefile_path(w));
    dcpi_tracefile_map(w, 77, 0x400000, 0x403000, 0, "0123abcd", "work_0123abcd", "/bin/work",
                       0x401000, 0x2000);
    trace_inst_t inst;
    decode("4889d8", &inst);
    for (int t = 0; t < ntraces; t++) {
        trace_encoder_init(&e, tbuf, sizeof tbuf);
        trace_encoder_burst(&e, 77, 77, 1000, 0);
        trace_value_t kinds[1] = {(trace_value_t)1};
        int n = 10 + t * 40;
        for (int i = 0; i < n; i++) {
            uint64_t v = (uint64_t)(i % 3);
            trace_encoder_entry(&e, &inst, 0x401000 + (uint64_t)(i % 4) * 3, 0, 0, 1, kinds, &v, 0);
            cl[i] = i % 5 ? (uint64_t)(t * 100 + i / 8 + 1) : 0;
        }
        dcpi_tracefile_seen(w, 77, 0x401003, inst.opc, (uint32_t)(t + 1));
        dcpi_tracefile_trace_clustered(w, 77, tbuf, trace_encoder_size(&e), cl,
                                       clustered ? (uint32_t)n : 0);
    }
    if (close_it)
        rc = dcpi_tracefile_close(w, err);
    FILE *f = fopen(path, "rb");
    size_t len = f ? fread(tbuf, 1, sizeof tbuf, f) : 0;
    if (f)
        fclose(f);
    if (!close_it)
        dcpi_tracefile_close(w, err); /* the file read above had no trailer yet */
    if (rc == 0 && len > 0)
        rc = put("tracefile", name, tbuf, len);
    unlink(path);
    rmdir(dir);
    return rc < 0 || len == 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus CORPUS_DIR\n");
        return 2;
    }
    corpus = argv[1];
    int bad = 0;
    bad |= gen_profile("empty.prof", 0, 0, 0);
    bad |= gen_profile("one.prof", 1, 0, 0);
    bad |= gen_profile("dense.prof", 40, 1, 0);
    bad |= gen_profile("sparse.prof", 12, 4000, 1);
    bad |= gen_vprof("empty.vprof", 0, 0, 0, 0);
    bad |= gen_vprof("small.vprof", 2, 2, 1, 0);
    bad |= gen_vprof("full.vprof", 4, 3, 9, 1);
    bad |= gen_vprof("many.vprof", 8, 12, 5, 1);
    bad |= gen_trace("empty-burst.bin", 1, 0, 0, 0, 0);
    bad |= gen_trace("line.bin", 1, 16, 0, 0, 0);
    bad |= gen_trace("ctx.bin", 2, 12, 1, 0, 1);
    bad |= gen_trace("missing.bin", 3, 10, 1, 1, 1);
    bad |= gen_trace("loop.bin", 1, 60, 0, 1, 1);
    bad |= gen_gperf("empty64.prof", 8, 0, 0);
    bad |= gen_gperf("small64.prof", 8, 6, 1);
    bad |= gen_gperf("small32.prof", 4, 5, 1);
    bad |= gen_gperf("notext64.prof", 8, 9, 0);
    bad |= gen_gmon("empty.gmon", 0, 0, 0);
    bad |= gen_gmon("hist.gmon", 1, 32, 0);
    bad |= gen_gmon("arcs.gmon", 0, 0, 5);
    bad |= gen_gmon("both.gmon", 2, 20, 4);
    bad |= gen_stack("empty.stk", 0, 0, 1);
    bad |= gen_stack("one.stk", 1, 1, 1);
    bad |= gen_stack("deep.stk", 2, 6, 8);
    bad |= gen_stack("many.stk", 3, 20, 5);
    bad |= gen_tracefile("empty.dtr", 0, 1, 0);
    bad |= gen_tracefile("two.dtr", 2, 1, 0);
    bad |= gen_tracefile("torn.dtr", 1, 0, 0);
    bad |= gen_tracefile("clustered.dtr", 3, 1, 1);
    return bad ? 1 : 0;
}
