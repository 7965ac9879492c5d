/*
 * vbp.h - the bp backend's chooser (bp.c), shared by the backends that arm execute breakpoints
 * (bparm.c: dcpid arms them; inproc.c: the profiled threads do): which instruction of a sampled
 * function a breakpoint arms, its counters, its shortfall and missing marks. It reaches the sink
 * only through values.h.
 */
#ifndef DCPI_CORE_VALUES_VBP_H
#define DCPI_CORE_VALUES_VBP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/capture/cpustate.h"
#include "core/image/image.h"
#include "core/values/values.h"

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
 * cookie, PC samples), each followed by the selected instruction right before it (unless major:
 * the slow one whose PC samples land on the next); then (rng not NULL) for the procedures of the
 * DCPI_VBP_COVER most sampled of them (places left: the most sampled procedures without a major
 * instruction), one more of their selected instructions drawn at random
 * (with *rng), so that every selected instruction of a hot procedure gets value samples in
 * time. Their number. */
typedef struct dcpi__vbp_target {
    uint64_t addr, lo, hi;
    uint32_t cookie, at;
    uint32_t fn;   /* bp.c's: its function */
    uint32_t trig; /* the PC samples that landed in its function */
    int major;     /* listed as a major instruction (5% of its function's PC samples); 0 for the
                    * one before such and for drawn ones (bp.c cover), major or not */
} dcpi__vbp_target_t;
#define DCPI_VBP_COVER 2
unsigned dcpi__vbp_targets(dcpi_values_t *vt, const dcpi__vbp_choice_t *c, pid_t pid,
                           dcpi__vbp_target_t *out, unsigned max, uint64_t *rng);
/* The value samples an arm of cookie's instruction took on average (0: fewer than 4 arms). */
double dcpi__vbp_hits_per_arm(const dcpi__vbp_choice_t *c, uint32_t cookie);
/* The arm of cookie could not be set (err: the positive errno of perf_event_open or an ioctl). */
void dcpi__vbp_failed(dcpi__vbp_choice_t *c, uint32_t cookie, int err);
/* A user-mode PC sample of pid at ip: its function is decoded (its selected instructions get
 * values or missing marks) and its PC samples counted per instruction (which are major). */
void dcpi__vbp_pc(dcpi_values_t *vt, dcpi__vbp_choice_t **c, uint32_t pid, uint64_t ip);
void dcpi__vbp_choice_free(dcpi__vbp_choice_t *c);

/* What the budget aims at (bparm.c reports what it could not afford): at least DCPI_VBP_NEED
 * value samples on every instruction holding DCPI_VBP_MAJOR_PCT% of its procedure's PC samples
 * (those on it and on the unselected instructions after it in its basic block, where a slow
 * instruction's samples land, and for a block's first selected instruction those of the block
 * before it; counted once the procedure has DCPI_VBP_MIN_TRIG of them) in DCPI_VBP_NEED_S seconds
 * of a thread's CPU. */
#define DCPI_VBP_NEED      1000
#define DCPI_VBP_NEED_S    6
#define DCPI_VBP_MAJOR_PCT 5
#define DCPI_VBP_MIN_TRIG  10
/* One selected instruction of a decoded function, as dcpi__vbp_each reports it. */
typedef struct dcpi__vbp_insn {
    const dcpi_image_t *img;
    uint64_t vaddr;   /* ELF vaddr */
    uint32_t offset;  /* from the image's tstart */
    const char *sym;  /* its function's symbol, NULL when none */
    uint64_t symoff;  /* from the symbol */
    uint32_t fn_trig; /* PC samples in its function */
    uint32_t at;      /* ... it holds (at it or after it in its basic block; bp.c holder) */
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
