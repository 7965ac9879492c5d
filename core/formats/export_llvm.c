/*
 * export_llvm.c - dcpiexport -format llvm and -format afdo: the chosen event's PC samples and
 * the vp-calls value profiles as LLVM's sample profile (core/formats/llvmprof.h), for clang's
 * -fprofile-sample-use, or in GCC's AutoFDO form for gcc's -fauto-profile.
 *
 * Per file image with samples: every sampled instruction's inline chain (DWARF, srclines.h)
 * places its count at its line offset and base discriminator, nested under the functions it
 * was inlined into; the counts of one position are summed (AutoFDO's non-LBR way: a line's
 * count is the samples of its instructions, so time, not executions). Then the calls of every
 * sampled function, decoded from the file: a direct call's target gets its position's count;
 * an indirect call's targets share out its position's count (or, when that is 0, its value
 * samples, or their arms when they came in clusters) by their shares in vp-calls' hotlist. A
 * function's head samples are the counts of the calls into it, or else its entry position's count.
 * An image without DWARF gives its functions (symbol names) with every sample at offset 0.
 *
 * With block counts (dcpiexport -counts blocks) a position counts executions instead of time:
 * every sampled function is cut into basic blocks and each block's frequency estimated from its
 * samples and a static cost per instruction, then flow conservation (dcpicalc's estimator,
 * core/calc/cfg.h), so blocks without samples between sampled ones get counts and a slow
 * instruction no longer makes its line look hot. A position gets the largest estimate of the
 * blocks holding its instructions, scaled so that each function's block counts sum to its
 * samples: within a function the weights are executions, between functions still time (the
 * static cost model misjudges stalls, e.g. a mispredicted return's samples make a two
 * instruction function look executed ten times too often, so executions are not compared
 * across functions).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/calc/cfg.h"
#include "core/formats/export.h"
#include "core/formats/llvmprof.h"
#include "core/image/image.h"
#include "core/image/srclines.h"
#include "core/image/symbols.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "trace/trace.h"
#include "dcpi/insn.h"

#define MAX_FRAMES    64
#define MAX_FUNC      (4u << 20) /* bytes of one function decoded for its calls */
#define VP_CALLS      "vp-calls"
#define VP_RELATIVE   (1ull << 63) /* vp-calls: the value is an ELF address of the caller's image */
#define VP_MISSING    1ull         /* context0 of a missing value (dcpi/vprofiler.h) */
#define CALL_DIRECT   1
#define CALL_INDIRECT 2
#define UNPLACED      1 /* position(): a line with no offset LLVM can match */

typedef struct lctx {
    const dcpi_export_t *x;
    dcpi_llvmprof_t *p;
    /* the image being exported */
    const dcpi_profset_image_t *img;
    dcpi_srclines_t *sl; /* NULL: no DWARF */
    dcpi_symtab_t *st;
    const dcpi_vprof_t *calls; /* its vp-calls profile, NULL when none */
    int fd;
    dcpi_image_info_t info;
    /* what the user is told */
    size_t nodwarf, ncalls_vp, nfuncs;
    uint64_t targets_other, targets_named;
    uint64_t unplaced, placed; /* samples at lines placeable() refuses, and the others */
    /* -counts blocks: every instruction of a sampled function's estimated blocks */
    struct bfreq {
        uint64_t vaddr;
        double freq;
    } * bf;
    size_t nbf, bfcap;
    double bfsum;   /* the estimates of those blocks, summed */
    uint64_t bfsam; /* the function's samples */
} lctx_t;

/* ---- positions ---- */

/* The section of the last frame of f[0..n) (created along the way). */
static dcpi_llvmfn_t *leaf_section(lctx_t *c, const dcpi_srcframe_t *f, int n)
{
    dcpi_llvmfn_t *fn = dcpi_llvmprof_func(c->p, f[0].name, 1);
    for (int i = 1; fn && i < n; i++)
        fn = dcpi_llvmfn_inlined(fn, dcpi_llvm_line_offset(f[i - 1].line, f[i - 1].decl_line),
                                 dcpi_llvm_base_discriminator(f[i - 1].disc),
                                 f[i].name ? f[i].name : "?");
    return fn;
}

/* Whether every line of the chain has an offset LLVM can match: line 0 (code the compiler made
 * or merged, e.g. calls of several callers' tails folded into one) and a line before its
 * function's DW_AT_decl_line would wrap to offsets like 40643 (LLVM masks line - decl_line with
 * 0xffff too, but never meets line 0 in the IR it annotates); llvm-profgen drops such
 * positions, so does the export. */
static int placeable(const dcpi_srcframe_t *f, int n)
{
    for (int i = 0; i < n; i++)
        if (f[i].line <= 0 || f[i].line < f[i].decl_line)
            return 0;
    return 1;
}

/* Where vaddr's samples go: its section and position. 0, UNPLACED (a line placeable()
 * refuses), DCPI_ENOENT (no function), ENOMEM. */
static int position(lctx_t *c, uint64_t vaddr, dcpi_llvmfn_t **fn, uint32_t *off, uint32_t *disc)
{
    dcpi_srcframe_t f[MAX_FRAMES];
    int n = c->sl ? dcpi_srclines_frames(c->sl, vaddr, f, MAX_FRAMES) : DCPI_ENOENT;
    if (n > 0 && f[0].name) {
        if (!placeable(f, n))
            return UNPLACED;
        *fn = leaf_section(c, f, n);
        *off = dcpi_llvm_line_offset(f[n - 1].line, f[n - 1].decl_line);
        *disc = dcpi_llvm_base_discriminator(f[n - 1].disc);
        return *fn ? 0 : DCPI_ENOMEM;
    }
    const dcpi_symbol_t *sym = c->st ? dcpi_symtab_lookup(c->st, vaddr) : NULL;
    if (!sym)
        return DCPI_ENOENT;
    *fn = dcpi_llvmprof_func(c->p, sym->name, 1); /* no DWARF here: the symbol, offset 0 */
    *off = *disc = 0;
    return *fn ? 0 : DCPI_ENOMEM;
}

/* The name LLVM knows the function at vaddr by: DWARF's linkage name, else the symbol. */
static const char *function_name(lctx_t *c, uint64_t vaddr)
{
    dcpi_srcframe_t f[MAX_FRAMES];
    int n = c->sl ? dcpi_srclines_frames(c->sl, vaddr, f, MAX_FRAMES) : DCPI_ENOENT;
    if (n > 0 && f[0].name)
        return f[0].name;
    const dcpi_symbol_t *sym = c->st ? dcpi_symtab_lookup(c->st, vaddr) : NULL;
    return sym && sym->addr == vaddr ? sym->name : NULL;
}

/* ---- samples ---- */

/* The samples e[0..n) at their positions (body 0: only counted as placed or not). */
static int place_entries(lctx_t *c, const dcpi_profile_entry_t *e, size_t n, int body)
{
    for (size_t i = 0; i < n; i++) {
        dcpi_llvmfn_t *fn;
        uint32_t off, disc;
        int rc = position(c, c->img->tstart + e[i].offset, &fn, &off, &disc);
        if (rc == UNPLACED)
            c->unplaced += e[i].count;
        if (rc == DCPI_ENOENT || rc == UNPLACED)
            continue; /* no function holds it, or no line LLVM could match */
        if (rc == 0) {
            c->placed += e[i].count;
            rc = body ? dcpi_llvmfn_body(fn, off, disc, e[i].count) : 0;
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int add_samples(lctx_t *c, const dcpi_profile_t *prof)
{
    size_t n = 0;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(prof, &n);
    return place_entries(c, e, n, 1);
}

/* ---- block counts (-counts blocks) ---- */

/* The instructions of g's estimated blocks with their frequencies, onto c->bf. */
static int keep_blocks(lctx_t *c, const dcpi_cfg_t *g)
{
    for (size_t k = 0; k < g->nblocks; k++) {
        const dcpi_cfg_block_t *bl = &g->blocks[k];
        if (bl->src == DCPI_CFG_F_NONE || bl->freq <= 0)
            continue;
        c->bfsum += bl->freq;
        if (dcpi__grow((void **)&c->bf, &c->bfcap, c->nbf + bl->n, sizeof *c->bf) < 0)
            return DCPI_ENOMEM;
        for (size_t i = bl->first; i < bl->first + bl->n; i++)
            c->bf[c->nbf++] = (struct bfreq){g->ls->insns[i].addr, bl->freq};
    }
    return 0;
}

/* The positions of c->bf's instructions: each the largest of its blocks' estimates, scaled so
 * that the function's blocks sum to its samples; c->bf emptied. */
static int place_blocks(lctx_t *c)
{
    double k = c->bfsum > 0 ? (double)c->bfsam / c->bfsum : 0;
    int rc = 0;
    for (size_t b = 0; rc == 0 && b < c->nbf; b++) {
        dcpi_llvmfn_t *fn;
        uint32_t off, disc;
        uint64_t v = (uint64_t)(c->bf[b].freq * k + 0.5), cur;
        if (!v || position(c, c->bf[b].vaddr, &fn, &off, &disc) != 0)
            continue;
        if (v > (cur = dcpi_llvmfn_body_at(fn, off, disc)))
            rc = dcpi_llvmfn_body(fn, off, disc, v - cur);
    }
    c->nbf = 0;
    c->bfsum = 0;
    c->bfsam = 0;
    return rc;
}

/* Estimate the blocks of the function [lo, hi) named name from e[0..n) (its samples) and
 * place them. */
static int function_blocks(lctx_t *c, const char *name, uint64_t lo, uint64_t hi,
                           const dcpi_profile_entry_t *e, size_t n)
{
    static const char *const events[] = {"samples"};
    dcpi_listing_t *ls = NULL;
    dcpi_cfg_t *g = NULL;
    char err[DCPI_ERRLEN];
    int rc = dcpi_listing_new(name, lo, hi, events, 1, 0, &ls);
    if (rc == 0 && dcpi_listing_decode(ls, c->img->path, &c->info, err) < 0)
        goto out; /* not decodable: its samples as they are */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        dcpi_listing_add_samples(ls, 0, c->img->tstart + e[i].offset, e[i].count);
        c->bfsam += e[i].count;
    }
    if (rc == 0 && ls->n &&
        (rc = dcpi_cfg_build(ls, 0, dcpi_cfg_symtab_noreturn, c->st, &g)) == 0) {
        dcpi_cfg_estimate(g, DCPI_CFG_LATENCY);
        rc = keep_blocks(c, g);
    }
out:
    if (rc == 0 && c->bfsum <= 0) { /* nothing estimated: its samples as they are */
        c->nbf = 0;
        c->bfsam = 0;
        rc = place_entries(c, e, n, 1);
    } else if (rc == 0)
        rc = place_blocks(c);
    dcpi_cfg_free(g);
    dcpi_listing_free(ls);
    return rc;
}

/* Every sampled function's blocks estimated and placed. */
static int add_block_counts(lctx_t *c, const dcpi_profile_t *prof)
{
    size_t n = 0, i = 0;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(prof, &n);
    int rc = place_entries(c, e, n, 0); /* the placed and unplaced counts */
    while (rc == 0 && i < n) {
        const dcpi_symbol_t *sym = dcpi_symtab_lookup(c->st, c->img->tstart + e[i].offset);
        size_t j = i + 1;
        uint64_t hi = sym && sym->size ? sym->addr + sym->size : 0;
        while (j < n && hi && c->img->tstart + e[j].offset < hi)
            j++;
        if (sym && hi && hi - sym->addr <= MAX_FUNC)
            rc = function_blocks(c, sym->name, sym->addr, hi, e + i, j - i);
        else /* no symbol with a size: its samples as they are */
            rc = place_entries(c, e + i, j - i, 1);
        i = j;
    }
    return rc;
}

/* ---- calls ---- */

/* CALL_DIRECT (*target set), CALL_INDIRECT, or 0: not a call. A jump through an unindexed
 * pointer (`jmp [rip + pointer]`) is a tail call, indirect (vp-calls captures it); a jump table
 * is none. */
static int call_kind(const trace_inst_t *in, uint64_t vaddr, uint64_t *target)
{
    switch (trace_inst_flow(in, vaddr, target)) {
    case TRACE_FLOW_CALL:
        return *target ? CALL_DIRECT : CALL_INDIRECT;
    case TRACE_FLOW_IND:
        return trace_inst_mem_indexed(in) == 0 && in->opc != TRACE_OPC_INVALID &&
                       TRACE_OPC_MEMFORM(in->opc) != TRACE_MEM_NONE
                   ? CALL_INDIRECT
                   : 0;
    default:
        return 0;
    }
}

static int add_target(lctx_t *c, dcpi_llvmfn_t *fn, uint32_t off, uint32_t disc, uint64_t to,
                      uint64_t count)
{
    const char *name = function_name(c, to);
    if (!name) {
        c->targets_other += count;
        return 0;
    }
    c->targets_named += count;
    return count ? dcpi_llvmfn_target(fn, off, disc, name, count) : 0;
}

/* An indirect call's targets: its position's count (else its value samples, counted as the arms
 * that took them when they came in clusters: an arm takes up to 64 executions, and a line
 * counts moments, as PC samples do; the tail jump of work-icall's tail mode, without PC samples
 * of its own, outweighed the hot loop's line with its 1852 value samples) shared out by the
 * hotlist's shares; targets outside the image cannot be named for the compiler. */
static int indirect_targets(lctx_t *c, uint64_t vaddr, dcpi_llvmfn_t *fn, uint32_t off,
                            uint32_t disc)
{
    dcpi_vsummary_t *s =
        c->calls ? dcpi_vprof_at((dcpi_vprof_t *)c->calls, (uint32_t)(vaddr - c->img->tstart), 0)
                 : NULL;
    if (!s || !s->vtot)
        return 0;
    c->ncalls_vp++;
    uint64_t n = dcpi_llvmfn_body_at(fn, off, disc), sampled = 0;
    for (uint32_t j = 0; j < s->n; j++)
        sampled += s->e[j].context0 == VP_MISSING ? 0 : s->e[j].count;
    if (!n)
        n = s->chits && s->clusters && s->clusters < sampled ? s->clusters : sampled;
    int rc = 0;
    for (uint32_t j = 0; rc == 0 && j < s->n; j++) {
        uint64_t v = s->e[j].value, k = (n * s->e[j].count + s->vtot / 2) / s->vtot;
        if (s->e[j].context0 == VP_MISSING)
            continue;
        if (!(v & VP_RELATIVE))
            c->targets_other += k;
        else
            rc = add_target(c, fn, off, disc, v & ~VP_RELATIVE, k);
    }
    return rc;
}

static int add_call(lctx_t *c, const trace_inst_t *in, uint64_t vaddr)
{
    uint64_t to = 0;
    int kind = call_kind(in, vaddr, &to);
    if (!kind)
        return 0;
    dcpi_llvmfn_t *fn;
    uint32_t off, disc;
    int rc = position(c, vaddr, &fn, &off, &disc);
    if (rc != 0)
        return rc == DCPI_ENOENT || rc == UNPLACED ? 0 : rc;
    if (kind == CALL_INDIRECT)
        return indirect_targets(c, vaddr, fn, off, disc);
    uint64_t n = dcpi_llvmfn_body_at(fn, off, disc);
    return n ? add_target(c, fn, off, disc, to, n) : 0;
}

/* Decode the function [lo, hi) from the file and add its calls. */
static int function_calls(lctx_t *c, uint64_t lo, uint64_t hi)
{
    uint64_t foff;
    if (hi <= lo || hi - lo > MAX_FUNC || dcpi_image_vaddr_to_file(&c->info, lo, &foff) < 0)
        return 0;
    uint8_t *buf = malloc(hi - lo);
    if (!buf)
        return DCPI_ENOMEM;
    ssize_t got = pread(c->fd, buf, hi - lo, (off_t)foff);
    int rc = 0;
    for (uint64_t at = 0; rc == 0 && got > 0 && at < (uint64_t)got;) {
        trace_inst_t in;
        int len = trace_inst_decode(buf + at, (int)((uint64_t)got - at), &in);
        if (len <= 0) {
            at++; /* data or padding: resynchronize on the next byte */
            continue;
        }
        rc = add_call(c, &in, lo + at);
        at += (uint64_t)len;
    }
    free(buf);
    return rc;
}

/* ---- functions ---- */

/* Entry samples (the head when no call names the function): its entry position's samples,
 * so a hot function called from code without samples is not "entered once". */
static void entry_head(lctx_t *c, uint64_t entry)
{
    dcpi_llvmfn_t *fn;
    uint32_t off, disc;
    const char *name = function_name(c, entry);
    dcpi_llvmfn_t *top = name ? dcpi_llvmprof_func(c->p, name, 0) : NULL;
    if (top && !dcpi_llvmfn_entry(top) && position(c, entry, &fn, &off, &disc) == 0 && fn == top)
        dcpi_llvmfn_add_entry(top, dcpi_llvmfn_body_at(fn, off, disc));
}

/* Every function holding samples, once (entries are sorted): its calls (decoded from the file)
 * and its entry samples. */
static int add_functions(lctx_t *c, const dcpi_profile_t *prof)
{
    size_t n = 0;
    const dcpi_profile_entry_t *e = dcpi_profile_entries(prof, &n);
    uint64_t done = UINT64_MAX;
    int rc = 0;
    for (size_t i = 0; rc == 0 && c->st && i < n; i++) {
        const dcpi_symbol_t *sym = dcpi_symtab_lookup(c->st, c->img->tstart + e[i].offset);
        if (!sym || sym->addr == done)
            continue;
        done = sym->addr;
        uint64_t hi = sym->size ? sym->addr + sym->size : c->img->tstart + c->img->tsize;
        if (c->fd >= 0)
            rc = function_calls(c, sym->addr, hi);
        if (rc == 0)
            entry_head(c, sym->addr);
    }
    return rc;
}

/* ---- images ---- */

/* img's vp-calls profile: the first of vps that is img's, with every later one of img merged
 * into it and freed (one per epoch with -epoch all or A..B); NULL when none. */
static const dcpi_vprof_t *calls_of(const dcpi_profset_image_t *img, dcpi_vprof_t **vps, size_t n)
{
    dcpi_vprof_t *first = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *id = vps[i] ? dcpi_vprof_get(vps[i], "image") : NULL;
        const char *ts = vps[i] ? dcpi_vprof_get(vps[i], "tstart") : NULL;
        if (!id || strcmp(id, img->id) || !ts || strtoull(ts, NULL, 16) != img->tstart)
            continue;
        if (!first)
            first = vps[i];
        else if (dcpi_vprof_merge(first, vps[i]) == 0) {
            dcpi_vprof_free(vps[i]);
            vps[i] = NULL;
        }
    }
    return first;
}

static int llvm_image(lctx_t *c, const dcpi_profset_image_t *img, dcpi_vprof_t **vps, size_t n)
{
    const dcpi_profile_t *prof = img->prof[c->x->ev];
    if (img->kind != DCPI_PSET_FILE || !prof || !dcpi_profile_total(prof))
        return 0;
    c->img = img;
    c->calls = calls_of(img, vps, n);
    c->st = dcpi_profset_symbols_or_warn(img, c->x->src->tool);
    c->fd = -1;
    if (dcpi_image_probe(img->path, &c->info, NULL) == 0 && !strcmp(c->info.id, img->id))
        c->fd = open(img->path, O_RDONLY | O_CLOEXEC);
    char why[DCPI_ERRLEN];
    if (dcpi_srclines_open(img->path, &c->sl, why) < 0) {
        fprintf(stderr, "%s: %s: no DWARF: its functions' samples are at line offset 0\n",
                c->x->src->tool, img->path);
        c->nodwarf++;
    }
    int rc = c->x->block_counts && c->st && c->fd >= 0 ? add_block_counts(c, prof)
                                                       : add_samples(c, prof);
    rc = rc ? rc : add_functions(c, prof);
    dcpi_srclines_free(c->sl);
    c->sl = NULL;
    dcpi_symtab_free(c->st);
    if (c->fd >= 0)
        close(c->fd);
    return rc;
}

static int llvm_write(lctx_t *c, int afdo, char *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", c->x->src->tool);
    int rc = afdo ? dcpi_llvmprof_write_afdo(c->p, m) : dcpi_llvmprof_write(c->p, m);
    if (fclose(m) != 0 && rc == 0)
        rc = DCPI_ENOMEM;
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s: %s", c->x->src->tool, c->x->out, dcpi_strerror(rc));
    else if ((rc = dcpi__write_output(c->x->out, text, len, err)) < 0)
        dcpi__err_prefix(err, c->x->src->tool);
    free(text);
    return rc;
}

static void llvm_tell(const lctx_t *c)
{
    const char *tool = c->x->src->tool;
    if (c->unplaced)
        fprintf(stderr,
                "%s: %llu of %llu samples are at line 0 or before their function's line "
                "(code the compiler made or merged) and are left out\n",
                tool, (unsigned long long)c->unplaced,
                (unsigned long long)(c->unplaced + c->placed));
    if (!c->ncalls_vp)
        fprintf(stderr,
                "%s: no %s value samples of indirect calls: call sites carry direct targets "
                "only (profile with dcpid -vtrace %s)\n",
                tool, VP_CALLS, VP_CALLS);
    else if (c->targets_other)
        fprintf(stderr,
                "%s: %llu of %llu indirect call samples went to code outside the caller's "
                "image and carry no target\n",
                tool, (unsigned long long)c->targets_other,
                (unsigned long long)(c->targets_other + c->targets_named));
}

static int export_profile(const dcpi_export_t *x, int afdo, char *err)
{
    lctx_t c = {.x = x};
    dcpi_vprof_t **vps = NULL;
    size_t nvps = 0;
    int rc = dcpi_export_vprofs(x->src, x->set, x->order, VP_CALLS, &vps, &nvps, err);
    rc = rc ? rc : dcpi_llvmprof_new(&c.p);
    for (size_t k = 0; rc == 0 && k < x->set->nimages; k++)
        rc = llvm_image(&c, &x->set->images[x->order[k]], vps, nvps);
    if (rc == 0 && dcpi_llvmprof_count(c.p) == 0)
        rc = dcpi__errf(err, DCPI_ENOENT,
                        "%s: no samples of the event in a function of a file "
                        "image: nothing to export",
                        x->src->tool);
    if (rc == 0) {
        llvm_tell(&c);
        rc = llvm_write(&c, afdo, err);
    } else if (!err[0])
        dcpi__errf(err, rc, "%s: %s", x->src->tool, dcpi_strerror(rc));
    dcpi_llvmprof_free(c.p);
    free(c.bf);
    dcpi_export_vprofs_free(vps, nvps);
    return rc;
}

int dcpi_export_llvm(const dcpi_export_t *x, char *err)
{
    return export_profile(x, 0, err);
}

int dcpi_export_afdo(const dcpi_export_t *x, char *err)
{
    return export_profile(x, 1, err);
}
