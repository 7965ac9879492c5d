/*
 * bblocks.h - a simple basic-block split of one decoded procedure (a listing,
 * core/analysis/listing.h), for dcpicoverage's block counts: a block starts at the procedure's
 * first instruction, at every target of a relative branch inside the procedure, and after every
 * branch (jmp, jcc, loop) and return. Calls do not end a block. Indirect jumps' targets are not
 * known, so a jump table's cases may share a block with the code before them.
 */
#ifndef DCPI_CORE_ANALYSIS_BBLOCKS_H
#define DCPI_CORE_ANALYSIS_BBLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include "core/analysis/listing.h"

/* Number the blocks of ls: block[i] gets the block of instruction i (0, 1, ... in address
 * order). Returns the number of blocks (0 for an empty listing). */
size_t dcpi_bblocks_split(const dcpi_listing_t *ls, uint32_t *block);

#endif
