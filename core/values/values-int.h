/*
 * values-int.h - the inside of dcpi_values_t (values.h), shared by the files that implement it:
 *   pipeline.c  the value pipeline both backends feed: plugins and their traces, hand-over to
 *               the plugins (in process or in worker processes), merge of the vsamples into the
 *               per-(image, plugin) value profiles, flush, counters;
 *   record.c    the recorder (-vrecord): its trace, MAP records, segments per epoch;
 *   entry.c     a CPU state into entries: code bytes, admission (rate), decode + capture + encode
 *               of a user-mode sample (dcpi_values_sample, the regs and bp backends' way in);
 *   step.c      the step backend's entry (dcpi_values_step);
 *   bp.c        the bp backend's chooser: which instruction a breakpoint arms;
 *   bparm.c     the bp backend (backend.h): its arms and their samples;
 *   select.c    the specification's instruction filter and symbol, and images' symbol tables;
 *   replay.c    dcpireplay: a recording's entries into the plugins' traces (replay.h).
 * Not part of the API: only core/values/ includes it.
 */
#ifndef DCPI_CORE_VALUES_INT_H
#define DCPI_CORE_VALUES_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/image/loadmap.h"
#include "core/image/symbols.h"
#include "core/plugin/vpworker.h"
#include "core/store/tracefile.h"
#include "core/store/vprof.h"
#include "core/values/values.h"
#include "dcpi/api.h"
#include "trace/trace.h"

#define DCPI_VALUES_BUF_BYTES  (192 * 1024) /* one trace buffer (plugin or recorder) */
#define DCPI_VALUES_CODE_SLOTS 4096 /* direct-mapped cache of code bytes read from image files */

/* 15 bytes of an image file at off; image 0: empty slot. */
typedef struct dcpi_values_code_slot {
    uint64_t off;
    uint32_t image_plus1;
    uint8_t len;
    uint8_t bytes[15];
} dcpi_values_code_slot_t;

/* One (image, plugin) value profile and its losses since the last flush. */
typedef struct dcpi_values_vslot {
    dcpi_vprof_t *vp;
    uint64_t lost;
} dcpi_values_vslot_t;

typedef struct dcpi_values_plugin {
    dcpi_vp_t *vp;
    const vp_dispatch_t *d;
    const char *name;
    trace_vlist_table_t *spec;
    int8_t *nval;                      /* per key: values of its vlist, -1 ignored */
    uint8_t (*kinds)[TRACE_VLIST_MAX]; /* per key */
    trace_encoder_t enc;
    uint8_t *buf;
    dcpi_values_vslot_t *slots; /* by image index */
    unsigned nslots;
    trace_inst_filter_fn filter; /* SDK 2 selection (select.c): NULL none */
    const char *symbol;          /* NULL: anywhere */
    int has_range;               /* ELF address range [lo, hi) of the image */
    uint64_t lo, hi;
    struct dcpi_values_sel *sel; /* decisions per (image, offset); NULL without selection */
    /* Decisions taken (a cached one counts once, an evicted one again): admitted, refused by the
     * symbol, the range, the filter; the image of the first refused by the range. sel_keyed:
     * instructions whose key (mnemonic, class) the plugin has a vlist for, asked about (with or
     * without a selection; 0 at the end: its keys matched nothing that was sampled). */
    uint64_t sel_in, sel_symbol, sel_range, sel_filter, sel_keyed;
    const dcpi_image_t *sel_range_img;
    char note[DCPI_ERRLEN]; /* dcpi_values_plugin_note's answer */
    dcpi_values_stats_t st;
    int error_logged;
    dcpi_vpworker_t *w;    /* isolated: its worker (p->buf is the shared input) */
    char why[DCPI_ERRLEN]; /* why it was disabled */
    /* An oracle twin (opts.oracle): the plugin's dispatch and specification, its own trace,
     * worker and value profiles ("NAME.oracle"), fed only by dcpi_values_oracle_sample. */
    int oracle;
    char oname[272];
    uint64_t ow_windows, ow_execs, ow_sumsq; /* an oracle twin: the windows written so far */
} dcpi_values_plugin_t;

/* The recorder (-vrecord): its trace and the recording vlist per key. */
typedef struct dcpi_values_recorder {
    dcpi_tracefile_t *tf;
    trace_encoder_t enc;
    uint8_t *buf;
    int8_t *nval;
    uint8_t (*kinds)[TRACE_VLIST_MAX];
    uint32_t map_pid; /* the last mapping written (0: none) */
    uint64_t map_lo, map_hi;
    int error_logged;
} dcpi_values_recorder_t;

typedef struct dcpi_values_bucket {
    uint64_t last; /* sample time of the last refill, 0: never */
    double tokens;
} dcpi_values_bucket_t;

struct dcpi_values {
    dcpi_loadmap_t *lm;
    uint64_t handed_ns; /* CLOCK_MONOTONIC of the last dcpi_values_end_drain */
    dcpi_values_opts_t o;
    dcpi_values_plugin_t *pl; /* npl plugins, then nor oracle twins (opts.oracle) */
    unsigned npl, nor;
    /* dcpi_values_oracle_windows: the oracle's windows so far (cumulative) */
    uint64_t ow_windows, ow_execs, ow_sumsq;
    int ow_all, ow_set;
    trace_opc_t nkeys;
    uint64_t regs_mask;
    double burst;
    dcpi_values_bucket_t cpu[DCPI_VALUES_MAXCPU];
    int *fds; /* by image index (regs.c) */
    unsigned nfds;
    size_t nsummaries;
    uint64_t nocode, unresolved;
    trace_parser_t parser;
    dcpi_values_recorder_t rec;
    dcpi_image_symtabs_t syms; /* select.c: the images' symbol tables */
    dcpi_values_code_slot_t code[DCPI_VALUES_CODE_SLOTS];
};

/* ---- pipeline.c */

/* The summary of (image, offset) for plugin p, created if needed and allowed (NULL: not). */
dcpi_vsummary_t *dcpi__values_summary_at(dcpi_values_t *vt, dcpi_values_plugin_t *p, unsigned image,
                                         uint32_t offset);
/* n entries or vsamples of p at image lost. */
void dcpi__values_lose(dcpi_values_plugin_t *p, unsigned image, uint64_t n);
/* Give p's pending trace to the plugin and start a new one. */
void dcpi__values_hand_over(dcpi_values_t *vt, dcpi_values_plugin_t *p);

/* One trace entry as a backend gives it to the sink: its burst (pid, tid, time, whether the
 * entry carries contexts) and the entry (instruction, pc, callers, the plugin's vlist values). */
typedef struct dcpi__values_put {
    uint32_t pid, tid;
    uint64_t time;
    int contexts;
    const trace_inst_t *inst;
    uint64_t pc, c0, c1;
    int n;
    const trace_value_t *kinds;
    const uint64_t *values;
    unsigned missing;
} dcpi__values_put_t;
/* The entry into p's trace, the one way entries of the regs, bp and replay backends reach a
 * plugin: the trace is handed over first when it holds another pid or VSAMPLE_BUFFER_SIZE
 * entries, and when it is full; an entry that cannot be written (or whose plugin was disabled
 * meanwhile) is lost at image. 1 written, 0 lost. */
int dcpi__values_put(dcpi_values_t *vt, dcpi_values_plugin_t *p, const dcpi__values_put_t *e,
                     unsigned image);

/* ---- record.c */

/* The recording vlist of every key (the plugins' vlists must be built): 0 or DCPI_ENOMEM. */
int dcpi__values_rec_build(dcpi_values_t *vt);
/* Close the segment (logging refusals or errors) and free the recorder's buffers. */
void dcpi__values_rec_free(dcpi_values_t *vt);
/* Write the recorder's pending trace into the segment and start a new one. */
void dcpi__values_rec_hand_over(dcpi_values_t *vt);
/* pid's mappings change: hand its trace over and forget its MAPs. */
void dcpi__values_rec_pid_event(dcpi_values_t *vt, pid_t pid);
/* The recorder's MAP for the mapping of s->ip (written when it changes). */
void dcpi__values_rec_map(dcpi_values_t *vt, const dcpi_image_t *img, uint64_t start,
                          uint64_t pgoff, const dcpi_values_sample_t *s);

/* ---- entry.c */

/* Close the image files opened to read code bytes. */
void dcpi__values_close_code(dcpi_values_t *vt);
/* The fd (kept open) to read img's code from, or a negative value when it cannot be read. */
int dcpi__values_image_fd(dcpi_values_t *vt, const dcpi_image_t *img);
/* One user-mode sample into the traces: admitted by the per-CPU rate (always == 0) or always. */
void dcpi__values_take(dcpi_values_t *vt, const dcpi_values_sample_t *s, int always);

/* ---- select.c */

/* The plugin's filter and symbol from its specification (after vp_prof_init). 0 or ENOMEM. */
int dcpi__values_select_init(dcpi_values_plugin_t *p);
/* Whether p's specification admits the instruction at (img, off) (bytes from tstart). inst may
 * be NULL when p has no instruction filter. */
int dcpi__values_admits(dcpi_values_t *vt, dcpi_values_plugin_t *p, const dcpi_image_t *img,
                        uint32_t off, const trace_inst_t *inst);
/* The decision dcpi__values_admits last cached for (img, off): 1, 0, or -1 when none is cached
 * (never decided, or evicted). */
int dcpi__values_admitted(const dcpi_values_plugin_t *p, const dcpi_image_t *img, uint32_t off);
/* "NAME: ..." when p's selection (symbol, range, filter) refused every instruction its keys
 * select and none was admitted, else "" (p's buffer). */
const char *dcpi__values_select_note(dcpi_values_plugin_t *p);
/* img's symbol table (opened on first use), NULL when it has none. */
const dcpi_symtab_t *dcpi__values_symtab(dcpi_values_t *vt, const dcpi_image_t *img);
void dcpi__values_select_free(dcpi_values_t *vt);

/* ---- bp.c: the bp backend's chooser; its tables are the backend's (bparm.c) */

typedef struct dcpi__vbp_choice dcpi__vbp_choice_t;
/* The instruction a breakpoint should arm after a PC sample of pid at ip: 1 with its runtime
 * address, a cookie for dcpi__vbp_done and (insn not NULL) the instruction decoded, 0 when the
 * sampled function has no instruction any plugin wants (or ip is in no known image). *c: the
 * tables, made at the first call. */
int dcpi__vbp_choose(dcpi_values_t *vt, dcpi__vbp_choice_t **c, uint32_t pid, uint64_t ip,
                     uint64_t *addr, uint32_t *cookie, dcpi_insn_t *insn);
/* The arm of cookie ended after giving got value samples (0: it expired unfired). */
void dcpi__vbp_done(dcpi__vbp_choice_t *c, uint32_t cookie, unsigned got);
/* A value sample of pid at ip (the inproc backend's hit): counted on its instruction. */
void dcpi__vbp_hit(dcpi_values_t *vt, dcpi__vbp_choice_t *c, uint32_t pid, uint64_t ip);
/* The instruction at ip of pid was given n arms (the inproc backend's threads made them). */
void dcpi__vbp_armed_at(dcpi_values_t *vt, dcpi__vbp_choice_t *c, uint32_t pid, uint64_t ip,
                        unsigned n);
/* The major instructions (below) of the functions mapped in pid, the most PC samples first: at
 * most max - DCPI_VBP_COVER into out (run-time address in pid, its function's range there,
 * cookie, PC samples), each followed by the selected instruction before it (unless major itself:
 * the slow one whose PC samples land on the next); then (rng not NULL) for the procedures of the
 * DCPI_VBP_COVER most sampled of them, one more of their selected instructions drawn at random
 * (with *rng), so that every selected instruction of a hot procedure gets value samples in
 * time. Their number. */
typedef struct dcpi__vbp_target {
    uint64_t addr, lo, hi;
    uint32_t cookie, at;
    uint32_t fn; /* bp.c's: its function */
} dcpi__vbp_target_t;
#define DCPI_VBP_COVER 2
unsigned dcpi__vbp_targets(dcpi_values_t *vt, const dcpi__vbp_choice_t *c, pid_t pid,
                           dcpi__vbp_target_t *out, unsigned max, uint64_t *rng);
/* The arm of cookie could not be set (err: the positive errno of perf_event_open or an ioctl). */
void dcpi__vbp_failed(dcpi__vbp_choice_t *c, uint32_t cookie, int err);
/* A user-mode PC sample of pid at ip: its function is decoded (its selected instructions get
 * values or missing marks) and its PC samples counted per instruction (which are major). */
void dcpi__vbp_pc(dcpi_values_t *vt, dcpi__vbp_choice_t **c, uint32_t pid, uint64_t ip);
void dcpi__vbp_choice_free(dcpi__vbp_choice_t *c);

/* What the budget aims at (bparm.c reports what it could not afford): at least DCPI_VBP_NEED
 * value samples on every instruction holding DCPI_VBP_MAJOR_PCT% of its procedure's PC samples
 * (those on it and on the unselected instructions after it, where a slow instruction's samples
 * land; counted once the procedure has DCPI_VBP_MIN_TRIG of them) in DCPI_VBP_NEED_S seconds of
 * a thread's CPU. */
#define DCPI_VBP_NEED      1000
#define DCPI_VBP_NEED_S    6
#define DCPI_VBP_MAJOR_PCT 5
#define DCPI_VBP_MIN_TRIG  20
/* One selected instruction of a decoded function, as dcpi__vbp_each reports it. */
typedef struct dcpi__vbp_insn {
    const dcpi_image_t *img;
    uint64_t vaddr;   /* ELF vaddr */
    uint32_t offset;  /* from the image's tstart */
    const char *sym;  /* its function's symbol, NULL when none */
    uint64_t symoff;  /* from the symbol */
    uint32_t fn_trig; /* PC samples in its function */
    uint32_t at;      /* ... at this instruction (or after it, before the next selected one) */
    uint32_t arms, fails, samples, misses;
    uint32_t plugins; /* bit i: plugin i selects it (bit 31: plugins 31 and later) */
    int err;          /* errno of the last failed arm */
    int major;        /* holds DCPI_VBP_MAJOR_PCT% of its function's PC samples */
} dcpi__vbp_insn_t;
typedef void dcpi__vbp_fn(void *ctx, const dcpi__vbp_insn_t *in);
/* fn for every selected instruction of every function a PC sample landed in. */
void dcpi__vbp_each(dcpi_values_t *vt, const dcpi__vbp_choice_t *c, dcpi__vbp_fn *fn, void *ctx);
/* The major instructions below DCPI_VBP_NEED value samples per DCPI_VBP_NEED_S s of cpu_s
 * seconds of the profiled threads' CPU: counted, and (out not NULL) the first ten printed as
 * "dcpid:   SYM+OFF (IMAGE, P% of its PC samples): N value samples, R per 6 s; ADVICE", where
 * advice says what would afford them (per > 0) and a missing mark why none came (per 0). */
typedef struct dcpi__vbp_short {
    unsigned majors, shortn;
} dcpi__vbp_short_t;
typedef void dcpi__vbp_advice_fn(void *arg, double per, char *buf, size_t len);
dcpi__vbp_short_t dcpi__vbp_shortfall(dcpi_values_t *vt, const dcpi__vbp_choice_t *c, double cpu_s,
                                      FILE *out, dcpi__vbp_advice_fn *advice, void *arg);
/* NULL when in has value samples, else why not, into buf: "no arm afforded (...)", "breakpoint
 * not armed (...)", "not executed while armed (...)". */
const char *dcpi__vbp_why_missing(const dcpi__vbp_insn_t *in, char *buf, size_t len);
/* Write, for every (image, plugin) with selected instructions in the decoded functions, the
 * missing marks DB/<epoch>/<platform>/<imagedir>/<plugin>.vmiss (removed when none is missing).
 * 0 or the last negative error (err: "PATH: reason"). */
int dcpi__vbp_write_missing(dcpi_values_t *vt, const dcpi__vbp_choice_t *c,
                            const dcpi_values_flush_info_t *fi, char *err);

#endif
