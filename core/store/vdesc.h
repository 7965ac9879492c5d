/*
 * vdesc.h - what each value backend is, by the name its value profiles carry (the "backend" line
 * of a .vprof header, core/store/vprof.h): where its values come from and what its shares mean,
 * and what its +-B counts when that is not the hotlist's usual bound. Each backend points to its
 * own description from its ops (core/values/backend.h); dcpilist (core/listing/) finds it by
 * the name read from a file, possibly written by another dcpi, so the table lives here, below
 * both.
 */
#ifndef DCPI_CORE_STORE_VDESC_H
#define DCPI_CORE_STORE_VDESC_H

#include <stddef.h>

typedef struct dcpi_vdesc {
    const char *name;   /* the .vprof header's backend: "regs", "bp", "inproc", ... */
    const char *shares; /* where its values come from, what its shares are per */
    const char *bound;  /* what its +-B counts, NULL: the hotlist's usual bound */
} dcpi_vdesc_t;

extern const dcpi_vdesc_t dcpi_vdesc_regs, dcpi_vdesc_bp, dcpi_vdesc_inproc, dcpi_vdesc_step,
    dcpi_vdesc_oracle, dcpi_vdesc_replay;

/* The description of the backend named, NULL when none has that name. */
const dcpi_vdesc_t *dcpi_vdesc_find(const char *name);

/* One line for a listing's header about backend (NULL: a profile written before dcpi recorded
 * backends; "mixed": runs of different backends merged): its shares and "; " its bound, into
 * buf (len bytes). Returns buf. */
const char *dcpi_vdesc_note(const char *backend, char *buf, size_t len);

#endif
