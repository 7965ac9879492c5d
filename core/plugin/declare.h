/*
 * declare.h - declarative value profilers: plugins without C (docs/vprofiler.md, DECLARATIVE
 * PLUGINS). A specification, inline (`-vtrace 'name=vp-div select=mnemonic:div,idiv
 * capture=ra format=dec'`) or in a file `NAME.vp` (the same pairs, on any number of lines, `#`
 * comments), becomes a real vp_dispatch_t (ABI 2) whose entries are libffi closures bound to it,
 * so several coexist in one process, pass the loader's checks and run in worker processes like
 * any .so, and write the same .vprof files.
 *
 * Keys (each at most once: a repeated key is an error; name and select required):
 *   name=NAME              the profile's name (the loader's name rules)
 *   select=mnemonic:A,B..  instructions with these mnemonics (Zydis's names; the condition-code
 *                          aliases ja jae jc jnae jnc jna je jne jg jge jnge jng jpe jpo, also
 *                          after cmov and set, are taken as Zydis's jnbe jnb jb ...), or
 *                          class:C,.. (alu muldiv load store branch call return fpsimd string
 *                          other). A name no instruction has is an error suggesting the nearest.
 *   memform=F              only keys of this memory form (none read write rw)
 *   operand=K[,K..]        only instructions whose first operand is one of these kinds (reg mem
 *                          imm addr any), or operand=!K[,K..] (not-K too) none of them: the
 *                          indirect calls are select=mnemonic:call operand=!imm
 *   conditional=yes|no     only conditional instructions (jcc, cmovcc, setcc, loop), or none
 *   symbol=NAME            only inside functions of this name (every backend honours it)
 *   range=LO-HI            only at ELF addresses [LO, HI) of the image (hex, as dcpilist shows)
 *   capture=V[,V2]         one or two trace values by name (rax..r15 rip rflags ra rb rc ea
 *                          memval taken target); default ra
 *   reduce=R               value (default) | relative (a code address of the traced process as
 *                          its image-relative ELF address when in the instruction's own image,
 *                          dcpi_resolve) | bits:LO:N (N bits from bit LO) | diff (V - V2)
 *   format=F               hex (default) | dec | signed | symbol (relative values by name) |
 *                          float (the value's bits as a double)
 *   label=V:TEXT[,..]      these values printed as TEXT (V: decimal, -decimal or 0x hex, after
 *                          reduce=), e.g. label=1:taken,0:not-taken
 *   keep=V[,V..]           only these values are kept; every other value counts as one value,
 *                          printed "other"
 *   preface=TEXT           the text before each hotlist (default the name; no spaces)
 *   missing=skip|show      entries whose captured values are missing: skipped (default), or
 *                          counted as a "missing" share (vp_missing)
 */
#ifndef DCPI_CORE_PLUGIN_DECLARE_H
#define DCPI_CORE_PLUGIN_DECLARE_H

#include "dcpi/vprofiler.h"

typedef struct dcpi_decl dcpi_decl_t;

/* Parse text (label names it in messages) into a plugin whose table *table points to (owned by
 * the plugin). 0, or DCPI_EINVAL ("LABEL: reason" in err) / DCPI_ENOMEM / DCPI_ENOTSUP (no
 * libffi closures here). */
int dcpi_decl_new(const char *text, const char *label, dcpi_decl_t **out,
                  const vp_dispatch_t **table, char *err);
/* Why the plugin's vp_prof_init returned no specification (NULL: it did not fail). */
const char *dcpi_decl_why(const dcpi_decl_t *d);
void dcpi_decl_free(dcpi_decl_t *d);

#endif
