/*
 * listing-int.h - what hotlist.c shares with the other files of core/listing/ (listjson.c): the
 * pieces of a hotlist text, called inside the plugin guard (core/plugin/guard.h).
 */
#ifndef DCPI_CORE_LISTING_INT_H
#define DCPI_CORE_LISTING_INT_H

#include "core/listing/listing.h"

/* Inside the guard: vp's preface of inst into out: 1 with one (possibly ""), 0 when the plugin
 * omits the hotlist (vp_preface answered NULL), DCPI_EPLUGIN with err after a fault. */
int dcpi__lst_preface(const trace_inst_t *inst, const dcpi_lst_vp_t *vp, const vp_context_t *ctx,
                      char *out, size_t len, char *err);
/* Inside the guard: value v as vp's plugin formats it (hex "0x..." without vp_format or when it
 * answers NULL). 0, or DCPI_EPLUGIN with err after a fault. */
int dcpi__lst_value_text(const trace_inst_t *inst, const dcpi_lst_vp_t *vp, const vp_context_t *ctx,
                         uint64_t v, char *out, size_t len, char *err);
/* A malloc'd copy of s's entries in the printers' order (count desc, then key asc); NULL on
 * ENOMEM. */
dcpi_ventry_t *dcpi__lst_sorted(const dcpi_vsummary_t *s);
/* The context of value profile v's calls at instruction in (filled into ctx), or NULL when the
 * profile has none (the ABI-1 entries are called). */
const vp_context_t *dcpi__lst_insn_ctx(const dcpi_listing_t *ls, size_t v,
                                       const dcpi_lst_insn_t *in, vp_context_t *ctx);

#endif
