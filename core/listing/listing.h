/*
 * listing.h - the model and printers behind dcpilist(1): the instructions of one procedure
 * decoded from the image file, the samples of every event attributed to them, their source
 * lines (core/image/srclines.h) and the value hotlists of each value profile
 * (core/store/vsummary.h); printed as annotated disassembly (-asm), source (-source) or both
 * (-both). listing.c holds the model, hotlist.c the hotlist texts, listprint.c the printers.
 *
 * Flow: dcpi_listing_new, dcpi_listing_decode, then dcpi_listing_add_samples /
 * _add_image_total / _set_lines / _set_values as data is found, then a printer.
 * Nothing here reads the profile database; core/listing/listsel.h does.
 *
 * Plugin calls are guarded (core/plugin/guard.h): every vp_preface / vp_format call runs under
 * handlers for SIGSEGV, SIGBUS, SIGABRT, SIGFPE and SIGILL (on an alternate stack) and a
 * DCPI_LST_PLUGIN_TIMEOUT_MS timer (ITIMER_REAL, SIGALRM), and its answer is copied (at most
 * DCPI_LST_PLUGIN_TEXT_MAX - 1 bytes, control characters as '?') under the same guard, so a
 * pointer to memory that cannot be read is caught. A fault ends the hotlist with DCPI_EPLUGIN
 * and one line in err: "PLUGIN: vp_format crashed (SIGSEGV)", "PLUGIN: vp_preface did not
 * return within 2 s", "PLUGIN: vp_format returned an invalid pointer". The plugin's state is
 * unknown afterwards: callers stop using it (dcpilist exits 1 without unloading it). A plugin
 * that calls exit() or blocks SIGALRM is not caught. The guard is process-wide (not
 * thread-safe) and restores the previous handlers, alternate stack and timer when done.
 */
#ifndef DCPI_CORE_LISTING_H
#define DCPI_CORE_LISTING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/image/image.h"
#include "core/image/srclines.h"
#include "core/image/symbols.h"
#include "core/plugin/guard.h"
#include "core/store/vsummary.h"
#include "dcpi/insn.h"
#include "dcpi/vprofiler.h"

/* One instruction of the procedure. */
typedef struct dcpi_lst_insn {
    uint64_t addr; /* ELF vaddr */
    trace_inst_t inst;
    int bad;          /* 1: not decodable, one byte shown as "(bad)" */
    int is_target;    /* 1: a branch inside the procedure jumps here */
    char text[112];   /* Intel syntax, a relative target as objdump writes it: "call 16e0" */
    uint64_t target;  /* a relative jump's or call's target (0: none) */
    char *named;      /* text with the target's symbol, "call 16e0 <ns::Acc<long>::add>" (NULL:
                       * none); dcpi_lst_insn_text gives the one to show */
    uint64_t *counts; /* [nevents] */
    const char *file; /* source position (NULL, 0 when unknown) */
    int line;
    const dcpi_vsummary_t **vs; /* [nvp]: hotlist per value profile, NULL when none */
    char **vtext;               /* [nvp]: hotlist texts made by dcpi_listing_prepare_values */
} dcpi_lst_insn_t;

/* One value profile shown in the listing. */
typedef struct dcpi_lst_vp {
    const char *name;       /* profile name ("vp-classic") */
    const vp_dispatch_t *d; /* the plugin's table; NULL: no preface, values in hex */
    unsigned hotsize;       /* values a hotlist holds at most */
    uint64_t max_err;       /* largest err among this procedure's hotlists */
    const char *plugin;     /* the plugin named in fault messages (its path); NULL: name */
    const char *backend;    /* the .vprof's "backend" (regs, step, replay, mixed); NULL: not said */
    uint64_t min_vtot;      /* smallest vtot among this procedure's hotlists (0: none) */
    /* ABI-2 hooks (vp_preface2 / vp_format2): the context of every call, pc and offset filled
     * per instruction (offset = pc - tstart); size 0: no context, the ABI-1 entries are used. */
    vp_context_t ctx;
    uint64_t tstart;
    /* The oracle's windows (its profile's oracle-* header keys; ow_set 0: none said): windows
     * that took executions, their executions and the sum of their squares; ow_all 1: the whole
     * run (every execution). See dcpi_listing_share_bound_vp. */
    int ow_set, ow_all;
    uint64_t ow_windows, ow_execs, ow_sumsq;
} dcpi_lst_vp_t;

/* Longest time one plugin call may take, and the longest answer kept (with its NUL). */
#define DCPI_LST_PLUGIN_TIMEOUT_MS DCPI_GUARD_TIMEOUT_MS
#define DCPI_LST_PLUGIN_TEXT_MAX   DCPI_GUARD_TEXT_MAX
/* Longest hotlist text kept per instruction and value profile (with its NUL). */
#define DCPI_LST_HOTLIST_LEN 1024

typedef struct dcpi_listing {
    const char *proc;          /* procedure name (borrowed) */
    uint64_t lo, hi;           /* [lo, hi): the procedure's vaddr range */
    const char *const *events; /* event names, borrowed, in column order */
    size_t nevents;
    uint64_t *proc_total;   /* [nevents]: samples on the procedure's instructions */
    uint64_t *image_total;  /* [nevents]: samples of the whole image */
    uint64_t outside;       /* samples given to add_samples outside [lo, hi) (not shown) */
    dcpi_lst_insn_t *insns; /* address order */
    size_t n;
    dcpi_lst_vp_t *vp; /* [nvp] */
    size_t nvp;
} dcpi_listing_t;

/* Display options of the value columns. */
typedef struct dcpi_lst_vopts {
    unsigned show; /* pairs shown per hotlist (dcpilist -vshow, default 3) */
    double cutoff; /* pairs below this % print as "." (-vcutoff, default 5.0) */
} dcpi_lst_vopts_t;

/* A new listing of procedure proc over [lo, hi) with nevents count columns and nvp value
 * profiles (their names and tables filled in by the caller in ls->vp). 0 or DCPI_ENOMEM. */
int dcpi_listing_new(const char *proc, uint64_t lo, uint64_t hi, const char *const *events,
                     size_t nevents, size_t nvp, dcpi_listing_t **out);
void dcpi_listing_free(dcpi_listing_t *ls);

/* Decode [lo, hi) from the file at path (PT_LOAD mapping of info) and mark the targets of the
 * procedure's relative branches. DCPI_E* with "PATH: reason" in err when the bytes cannot be
 * read (range outside every segment: DCPI_ERANGE). */
int dcpi_listing_decode(dcpi_listing_t *ls, const char *path, const dcpi_image_info_t *info,
                        char *err);
/* Decode from a buffer holding the bytes of [lo, lo + len) (the file's bytes; tests). */
int dcpi_listing_decode_bytes(dcpi_listing_t *ls, const uint8_t *bytes, size_t len);

/* Name every relative jump's and call's target after its symbol in st (ELF addresses; NULL:
 * nothing to do), as objdump does: "call 16e0 <ns::Acc<long>::add>", "jnz 11fc <f+0x2c>". */
void dcpi_listing_name_targets(dcpi_listing_t *ls, const dcpi_symtab_t *st);

/* The text to show of in: with its target's symbol when dcpi_listing_name_targets found one. */
const char *dcpi_lst_insn_text(const dcpi_lst_insn_t *in);

/* The instruction containing vaddr, or NULL. */
dcpi_lst_insn_t *dcpi_listing_find(dcpi_listing_t *ls, uint64_t vaddr);
/* count samples of event e at vaddr: added to the instruction containing it; outside the
 * procedure they are counted in ls->outside and DCPI_ENOENT is returned. */
int dcpi_listing_add_samples(dcpi_listing_t *ls, size_t e, uint64_t vaddr, uint64_t count);
void dcpi_listing_add_image_total(dcpi_listing_t *ls, size_t e, uint64_t count);
/* Source positions of every instruction (sl NULL: none). Returns how many got one. */
size_t dcpi_listing_set_lines(dcpi_listing_t *ls, const dcpi_srclines_t *sl);
/* The hotlist of value profile v at vaddr (s borrowed). DCPI_ENOENT when vaddr is not the start
 * of an instruction of the procedure. */
int dcpi_listing_set_values(dcpi_listing_t *ls, size_t v, uint64_t vaddr, const dcpi_vsummary_t *s);

/*
 * As dcpi_listing_format_hotlist, for value profile vp (its plugin named in err), with the
 * plugin's faults reported: returns the length wanted, or DCPI_EPLUGIN with err (DCPI_ERRLEN,
 * may be NULL) "PLUGIN: vp_format crashed (SIGSEGV)" and the like (see the top of this file).
 */
/*
 * How far any share of s's hotlist may be from the share in the executions the backend sampled,
 * in percentage points: the largest distance from a listed share p to the ends of its 95% Wilson
 * score interval (z = 1.96) over vtot samples, or, when they came in clusters (an arm's
 * consecutive hits), over the n_eff of its value: dcpi_listing_neff's with the value's own
 * intraclass correlation taken at its largest, rho (1 - sum p_v^2) (k - 1) / k / (p (1 - p))
 * (at most 1: the pooled correlation counts every value's spread between clusters, of which one
 * value's is at most (k - 1) / k for the k values of a hotlist without error bound, all of it
 * when values may be unlisted), plus the hotlist's own error bound err/vtot (a listed count may
 * exceed its truth by err); at most 100, and 100 with fewer than two clusters. It says nothing of a
 * backend's bias (docs/vprofiler.md, "Where values come from").
 */
double dcpi_listing_share_bound(const dcpi_vsummary_t *s);
/*
 * The number of independent samples s's vtot value samples are worth (the n of the bound above):
 * vtot, unless they came in clusters (an arm's consecutive hits, core/values/cluster.c; the
 * summary's cluster counters, core/store/vsummary.h): then vtot / (1 + (m - 1) rho) x (K - 1) / K
 * for K clusters of weighted mean size m = S / N, where rho, the values' intraclass correlation,
 * is (Pw - Pa) / (1 - Pa) clamped to [0, 1], Pw = (D - N) / (S - N) the share of pairs of
 * samples in one cluster with equal values and Pa the sum of the hotlist's squared shares (rho 1,
 * a cluster of one value: each cluster counts as one sample); 0 with fewer than two clusters.
 */
double dcpi_listing_neff(const dcpi_vsummary_t *s);
/*
 * The bound of s in value profile vp (NULL: dcpi_listing_share_bound). For the oracle's profile
 * (vp->ow_set) the executions are not independent draws but clusters, one per window: with
 * every execution of the run (ow_all) the shares are exact and the bound is the hotlist's error
 * bound err/vtot alone; else the Wilson reach is taken over the effective number of samples
 * vtot x ow_execs / ow_sumsq x (K - 1) / K for K windows (the design effect of windows whose
 * executions could all have one value, the worst case: sum m_i^2 / sum m_i), 100 with fewer
 * than two windows.
 */
double dcpi_listing_share_bound_vp(const dcpi_vsummary_t *s, const dcpi_lst_vp_t *vp);
/* One line on what a backend's shares are worth (docs/vprofiler.md, "Where values come from"). */
const char *dcpi_listing_backend_note(const char *backend);
/* 1 when e is the SDK-2 "missing" value (vp_missing: value 0, context0 VP_CONTEXT_MISSING,
 * context1 0), which the printers name "missing". */
int dcpi_listing_value_missing(const dcpi_ventry_t *e);
/* A hotlist whose bound exceeds this many points is marked "few" by the printers. */
#define DCPI_LST_FEW_BOUND 10.0

/*
 * The hotlist text of one instruction: plugin vp's vp_preface(inst) (NULL table or NULL
 * vp_preface: none; vp_preface returning NULL: empty text), then up to o->show pairs sorted by
 * count, "(P% V)" with P = count / vtot * 100 to one decimal and V = vp_format(inst, value)
 * ("0x%llx" when there is no vp_format or it returns NULL), " @0xc0,0xc1" inside the
 * parentheses when a context is non-zero; pairs with P below o->cutoff print as "." (adjacent
 * dots, as DCPI's "..."). Writes into buf (truncated to len) and returns the length wanted;
 * the plugin calls are guarded: a fault gives an empty text and a negative error (err).
 */
int dcpi_listing_hotlist(const dcpi_vsummary_t *s, const trace_inst_t *inst,
                         const dcpi_lst_vp_t *vp, const dcpi_lst_vopts_t *o, char *buf, size_t len,
                         char *err);

/*
 * Make every hotlist text of the listing now (the plugins' calls all happen here, guarded), so
 * a plugin's fault is found before anything is printed. The printers then use these texts.
 * Returns 0, DCPI_ENOMEM, or DCPI_EPLUGIN at the first fault (err as dcpi_listing_hotlist).
 */
int dcpi_listing_prepare_values(dcpi_listing_t *ls, const dcpi_lst_vopts_t *vo, char *err);

/* -asm: header, one row per instruction, totals; with vo (non-NULL) the value columns
 * "vtot thld nv" and the hotlists of every value profile, then the err footers. */
void dcpi_listing_print_asm(const dcpi_listing_t *ls, const dcpi_lst_vopts_t *vo, FILE *f);
/* -source (both 0) or -both (both 1): source lines with summed counts. */
void dcpi_listing_print_source(const dcpi_listing_t *ls, int both, FILE *f);
/* The "total" lines (one per event); printed by the two printers above. */
void dcpi_listing_print_totals(const dcpi_listing_t *ls, FILE *f);
/* The footer lines under the value columns: per value profile its hotlist size and err, its
 * backend, then what "+-B" and "few" mean (nothing without value profiles). */
void dcpi_listing_print_vp_footers(const dcpi_listing_t *ls, FILE *f);
/* 1 when some instruction has a source position whose file can be read. */
int dcpi_listing_has_source(const dcpi_listing_t *ls);

#endif
