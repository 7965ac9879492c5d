/*
 * cfgprint.c - dcpicalc's printers of a procedure's graph (cfg.h): the text view (summary,
 * blocks hottest first, edges, each block's instructions) and Graphviz dot.
 */
#include "core/calc/cfg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *dcpi_cfg_end_name(int end, char *buf, size_t len)
{
    switch (end) {
    case DCPI_CFG_ENTRY:
        return "entry";
    case DCPI_CFG_EXIT:
        return "exit";
    case DCPI_CFG_UNKNOWN:
        return "unknown";
    case DCPI_CFG_NORET:
        return "noreturn";
    default:
        snprintf(buf, len, "B%d", end);
        return buf;
    }
}

static const char *kind_name(enum dcpi_cfg_ekind k)
{
    static const char *const names[] = {"fall",     "taken", "jump",   "ret",
                                        "indirect", "stop",  "outside"};
    return names[k];
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* 1 when block k is shown under the cutoff. */
static int shown(const dcpi_cfg_t *g, const dcpi_cfg_popts_t *o, int k)
{
    return k < 0 || pct(g->blocks[k].samples, g->samples) >= o->cutoff;
}

/* Block indexes by decreasing samples (address order among equals). */
static size_t *hot_order(const dcpi_cfg_t *g)
{
    size_t *ord = calloc(g->nblocks + 1, sizeof(*ord));
    if (!ord)
        return NULL;
    for (size_t i = 0; i < g->nblocks; i++) { /* insertion sort: stable */
        size_t j = i;
        while (j > 0 && g->blocks[ord[j - 1]].samples < g->blocks[i].samples) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
    return ord;
}

static void fmt_freq(double v, char *buf, size_t len)
{
    if (v < 0)
        snprintf(buf, len, "?");
    else
        snprintf(buf, len, "%.4g", v);
}

/* ---- text ---- */

static void print_summary(const dcpi_cfg_t *g, FILE *f)
{
    const dcpi_listing_t *ls = g->ls;
    fprintf(f, "event %s: %" PRIu64 " samples in the procedure (%.1f%% of the image's)\n",
            ls->events[g->event], g->samples, pct(g->samples, ls->image_total[g->event]));
    fprintf(f,
            "%zu blocks, %zu edges; freq = estimated executions, in samples per cycle of "
            "static cost\n",
            g->nblocks, g->nedges);
    if (g->per_call)
        fprintf(f, "per call = freq / calls (calls: %.4g, the flow into the entry block)\n",
                dcpi_cfg_calls(g));
    else
        fprintf(
            f, "per call: not estimated (the entry block has %" PRIu64 " samples, fewer than %d)\n",
            g->blocks[0].samples, DCPI_CFG_MIN_ENTRY);
    if (g->has_unknown)
        fprintf(f, "indirect jumps: their targets are unknown (edges to 'unknown'); blocks no "
                   "edge reaches are fed from 'entry'\n");
    if (g->n_noreturn)
        fprintf(f, "%d calls do not return (their blocks end there)\n", g->n_noreturn);
}

static void print_succ(const dcpi_cfg_t *g, const dcpi_cfg_block_t *bl, FILE *f)
{
    for (size_t i = 0; i < bl->nsucc; i++) {
        const dcpi_cfg_edge_t *e = &g->edges[bl->succ[i]];
        char nb[24];
        const char *name = dcpi_cfg_end_name(e->to, nb, sizeof nb);
        if (e->kind == DCPI_CFG_E_FALL)
            fprintf(f, " %s", name);
        else
            fprintf(f, " %s:%s", name, kind_name(e->kind));
    }
}

static void print_block_row(const dcpi_cfg_t *g, size_t k, FILE *f)
{
    const dcpi_cfg_block_t *bl = &g->blocks[k];
    char range[48], name[24], fq[32], pc[32] = "-";
    snprintf(range, sizeof range, "0x%" PRIx64 "..0x%" PRIx64, bl->lo, bl->hi);
    snprintf(name, sizeof name, "B%zu", k);
    fmt_freq(bl->freq, fq, sizeof fq);
    if (g->per_call)
        fmt_freq(bl->freq / dcpi_cfg_calls(g), pc, sizeof pc);
    fprintf(f, "%-6s %-24s %5zu %9" PRIu64 " %6.1f%% %7.1f %10.4g %10s %-4s %9s ", name, range,
            bl->n, bl->samples, pct(bl->samples, g->samples), bl->cost, bl->local, fq,
            bl->src == DCPI_CFG_F_FLOW ? "flow" : "smp", pc);
    print_succ(g, bl, f);
    fputc('\n', f);
}

/* The edges with at least one end shown. */
static void print_edges(const dcpi_cfg_t *g, const dcpi_cfg_popts_t *o, FILE *f)
{
    fprintf(f, "\nedge   from      to        kind       freq\n");
    for (size_t e = 0; e < g->nedges; e++) {
        const dcpi_cfg_edge_t *ed = &g->edges[e];
        if (!shown(g, o, ed->from) && !shown(g, o, ed->to))
            continue;
        char a[24], b[24], fq[32];
        fmt_freq(ed->freq, fq, sizeof fq);
        fprintf(f, "edge   %-9s %-9s %-8s %6s\n", dcpi_cfg_end_name(ed->from, a, sizeof a),
                dcpi_cfg_end_name(ed->to, b, sizeof b), kind_name(ed->kind), fq);
    }
}

static void print_insns(const dcpi_cfg_t *g, size_t k, FILE *f)
{
    const dcpi_cfg_block_t *bl = &g->blocks[k];
    char fq[32];
    fmt_freq(bl->freq, fq, sizeof fq);
    fprintf(f, "\nB%zu  0x%" PRIx64 "..0x%" PRIx64 "  %" PRIu64 " samples  freq %s\n", k, bl->lo,
            bl->hi, bl->samples, fq);
    for (size_t i = bl->first; i < bl->first + bl->n; i++) {
        const dcpi_lst_insn_t *in = &g->ls->insns[i];
        fprintf(f, "  %9" PRIu64 "  0x%-10" PRIx64 " %s\n", in->counts[g->event], in->addr,
                dcpi_lst_insn_text(in));
    }
}

void dcpi_cfg_print_text(const dcpi_cfg_t *g, const dcpi_cfg_popts_t *o, FILE *f)
{
    size_t *ord = hot_order(g), cut = 0;
    if (!ord)
        return;
    print_summary(g, f);
    fprintf(f, "\nblock  range                    insns   samples       %%    cost      local"
               "       freq src   per-call  successors\n");
    for (size_t i = 0; i < g->nblocks; i++) {
        if (shown(g, o, (int)ord[i]))
            print_block_row(g, ord[i], f);
        else
            cut++;
    }
    if (cut)
        fprintf(f, "(%zu blocks under %.4g%% of the samples left out)\n", cut, o->cutoff);
    print_edges(g, o, f);
    for (size_t i = 0; i < g->nblocks; i++)
        if (shown(g, o, (int)ord[i]))
            print_insns(g, ord[i], f);
    free(ord);
}

/* ---- dot ---- */

static void dot_virtual(const dcpi_cfg_t *g, const dcpi_cfg_popts_t *o, FILE *f)
{
    char used[4] = {0};
    for (size_t e = 0; e < g->nedges; e++) {
        const dcpi_cfg_edge_t *ed = &g->edges[e];
        if (!shown(g, o, ed->from) || !shown(g, o, ed->to))
            continue;
        if (ed->from < 0)
            used[-ed->from - 1] = 1;
        if (ed->to < 0)
            used[-ed->to - 1] = 1;
    }
    for (int v = 0; v < 4; v++) {
        char nb[24];
        if (used[v])
            fprintf(f, "  %s [shape=ellipse, style=dashed];\n",
                    dcpi_cfg_end_name(-v - 1, nb, sizeof nb));
    }
}

static void dot_block(const dcpi_cfg_t *g, size_t k, uint64_t max, FILE *f)
{
    const dcpi_cfg_block_t *bl = &g->blocks[k];
    char fq[32];
    fmt_freq(bl->freq, fq, sizeof fq);
    double heat = max ? (double)bl->samples / (double)max : 0;
    fprintf(f,
            "  B%zu [label=\"B%zu  0x%" PRIx64 "..0x%" PRIx64 "\\n%" PRIu64
            " samples (%.1f%%)\\nfreq %s\", fillcolor=\"0.000 %.3f 1.000\"];\n",
            k, k, bl->lo, bl->hi, bl->samples, pct(bl->samples, g->samples), fq, heat);
}

void dcpi_cfg_print_dot(const dcpi_cfg_t *g, const dcpi_cfg_popts_t *o, FILE *f)
{
    uint64_t max = 0;
    for (size_t k = 0; k < g->nblocks; k++)
        max = g->blocks[k].samples > max ? g->blocks[k].samples : max;
    fprintf(f, "digraph \"");
    for (const char *p = g->ls->proc; p && *p; p++) /* a C++ name may hold quotes */
        fprintf(f, "%s%c", *p == '"' || *p == '\\' ? "\\" : "", *p);
    fprintf(f, "\" {\n  node [shape=box, style=filled, fontname=\"monospace\"];\n");
    for (size_t k = 0; k < g->nblocks; k++)
        if (shown(g, o, (int)k))
            dot_block(g, k, max, f);
    dot_virtual(g, o, f);
    for (size_t e = 0; e < g->nedges; e++) {
        const dcpi_cfg_edge_t *ed = &g->edges[e];
        if (!shown(g, o, ed->from) || !shown(g, o, ed->to))
            continue;
        char a[24], b[24], fq[32];
        fmt_freq(ed->freq, fq, sizeof fq);
        fprintf(f, "  %s -> %s [label=\"%s %s\"];\n", dcpi_cfg_end_name(ed->from, a, sizeof a),
                dcpi_cfg_end_name(ed->to, b, sizeof b), kind_name(ed->kind), fq);
    }
    fprintf(f, "}\n");
}
