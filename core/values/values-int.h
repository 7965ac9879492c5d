/*
 * values-int.h - the inside of dcpi_values_t (values.h), shared by the files that implement it:
 *   pipeline.c  the value pipeline both backends feed: plugins and their traces, hand-over to
 *               the plugins (in process or in worker processes), merge of the vsamples into the
 *               per-(image, plugin) value profiles, flush, counters;
 *   record.c    the recorder (-vrecord): its trace, MAP records, segments per epoch;
 *   entry.c     a CPU state into entries: code bytes, admission (rate), decode + capture + encode
 *               of a user-mode sample (dcpi_values_sample, the regs and bp backends' way in);
 *   step.c      the step backend's entry (dcpi_values_step);
 *   select.c    the specification's instruction filter and symbol, and images' symbol tables;
 *   cluster.c   the clusters of the value samples (an arm's consecutive hits) into the
 *               summaries' cluster counts, for the hotlists' bound;
 *   sinkin.c    the inward interface of values.h: what the backends (backend.h: bp.c,
 *               bparm.c, inproc.c, replay.c, ...) may do with the sink, plugins by index.
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
    struct dcpi_values_clusters *cl;         /* cluster.c: the clusters of its entries */
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
    /* The cluster of each entry of enc, in entry order (dcpi_values_sample_t.cluster), and
     * whether one is not 0: then the hand-over writes them as a CLUSTER record before the
     * TRACE record, for dcpireplay. Reset when the trace is handed over. */
    uint64_t clusters[VSAMPLE_BUFFER_SIZE];
    int any_cluster;
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
/* The summary of (image, offset) for plugin p, NULL when there is none. */
const dcpi_vsummary_t *dcpi__values_summary_find(const dcpi_values_plugin_t *p, unsigned image,
                                                 uint32_t offset);
/* n entries or vsamples of p at image lost. */
void dcpi__values_lose(dcpi_values_plugin_t *p, unsigned image, uint64_t n);
/* Give p's pending trace to the plugin and start a new one. */
void dcpi__values_hand_over(dcpi_values_t *vt, dcpi_values_plugin_t *p);

/* The one hand-over path of a trace being written (a plugin's or the recorder's): enc is handed
 * over (hand_over(vt, owner)) first when it holds entries of another pid than pid or
 * VSAMPLE_BUFFER_SIZE of them; then write(arg, 0), and when that says DCPI_EFULL, hand_over and
 * write(arg, 1) once more. stopped (may be NULL) is asked before each write: nonzero (the plugin
 * was disabled meanwhile) ends it. Returns write's last result, DCPI_EFULL when stopped. */
typedef struct dcpi__values_writer {
    trace_encoder_t *enc;
    uint32_t pid;
    void (*hand_over)(dcpi_values_t *vt, void *owner);
    int (*stopped)(const void *owner);
    void *owner;
    int (*write)(void *arg, int retry);
    void *arg;
} dcpi__values_writer_t;
int dcpi__values_write(dcpi_values_t *vt, const dcpi__values_writer_t *w);
/* The plugin's hand_over and stopped for a dcpi__values_writer_t (owner: the plugin). */
void dcpi__values_plugin_hand_over(dcpi_values_t *vt, void *plugin);
int dcpi__values_plugin_stopped(const void *plugin);

/* The entry into p's trace, the one way entries of the regs, bp and replay backends reach a
 * plugin: the trace is handed over first when it holds another pid or VSAMPLE_BUFFER_SIZE
 * entries, and when it is full; an entry that cannot be written (or whose plugin was disabled
 * meanwhile) is lost at image. 1 written, 0 lost. */
int dcpi__values_put(dcpi_values_t *vt, dcpi_values_plugin_t *p, const dcpi_values_put_t *e,
                     unsigned image);

/* ---- cluster.c */

typedef struct dcpi_values_clusters dcpi_values_clusters_t;
/* A plugin's clusters (calloc'd, free()): NULL on ENOMEM. */
dcpi_values_clusters_t *dcpi__values_clusters_new(void);
/* The next entry of the plugin's trace: its pc and cluster (0: not clustered). */
void dcpi__values_cluster_put(dcpi_values_clusters_t *c, uint64_t pc, uint64_t cluster);
/* The trace's n vsamples, returned by the plugin: matched to the entries (cluster.c says how). */
void dcpi__values_cluster_begin(dcpi_values_clusters_t *c, const vsample_t *vs, unsigned n);
/* vsample i was added to summary s: its cluster's counts into s. */
void dcpi__values_cluster_add(dcpi_values_clusters_t *c, unsigned i, dcpi_vsummary_t *s);
/* The trace is done (merged or lost): its entries are forgotten, the open clusters stay. */
void dcpi__values_cluster_end(dcpi_values_clusters_t *c);

/* ---- record.c */

/* The recording vlist of every key (the plugins' vlists must be built): 0 or DCPI_ENOMEM. */
int dcpi__values_rec_build(dcpi_values_t *vt);
/* Close the segment (logging refusals or errors) and free the recorder's buffers. */
void dcpi__values_rec_free(dcpi_values_t *vt);
/* Write the recorder's pending trace into the segment (its entries' clusters as a CLUSTER
 * record before it when one is not 0) and start a new one. */
void dcpi__values_rec_hand_over(dcpi_values_t *vt);
/* The cluster of the entry just appended to the recorder's trace. */
void dcpi__values_rec_cluster(dcpi_values_t *vt, uint64_t cluster);
/* pid's mappings change: hand its trace over and forget its MAPs. */
void dcpi__values_rec_pid_event(dcpi_values_t *vt, pid_t pid);
/* The recorder's MAP for the mapping of s->ip (written when it changes). */
void dcpi__values_rec_map(dcpi_values_t *vt, const dcpi_image_t *img, uint64_t start,
                          uint64_t pgoff, const dcpi_values_sample_t *s);

/* ---- entry.c */

/* Close the image files opened to read code bytes. */
void dcpi__values_close_code(dcpi_values_t *vt);
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
void dcpi__values_select_free(dcpi_values_t *vt);

#endif
