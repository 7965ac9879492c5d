/*
 * vdesc.c - the value backends' descriptions (vdesc.h): one per backend, found by the name a
 * .vprof file carries.
 */
#include "core/store/vdesc.h"

#include <stdio.h>
#include <string.h>

const dcpi_vdesc_t dcpi_vdesc_regs = {
    "regs",
    "registers at timer samples: shares are per unit of CPU time and skewed by interrupt skid; "
    "loaded values missing",
    NULL};
const dcpi_vdesc_t dcpi_vdesc_bp = {
    "bp",
    "execute breakpoints at executions after timer samples: shares per execution, the "
    "skid-biased first execution dropped; memory values read by BPF where allowed, else missing",
    NULL};
const dcpi_vdesc_t dcpi_vdesc_inproc = {
    "inproc",
    "execute breakpoints armed by the profiled threads at random moments in the instruction's "
    "procedure: shares per execution (those within the arm window after such a moment, up to 64, "
    "one cluster: +-B counts clusters); memory values read by the thread",
    NULL};
const dcpi_vdesc_t dcpi_vdesc_step = {
    "step", "single-stepped bursts: exact values, shares per execution within bursts", NULL};
const dcpi_vdesc_t dcpi_vdesc_oracle = {
    "oracle",
    "the oracle (dcpid -voracle): every execution of the instruction in its windows, exact there",
    "its +-B counts each window as one draw (a cluster), or is the hotlist's error bound alone "
    "with one window over the whole run (-voracle-duty 1/1)"};
const dcpi_vdesc_t dcpi_vdesc_replay = {
    "replay", "replayed from a values.trace recording (regs, bp or inproc backend)", NULL};

static const dcpi_vdesc_t *const all[] = {&dcpi_vdesc_regs, &dcpi_vdesc_bp,     &dcpi_vdesc_inproc,
                                          &dcpi_vdesc_step, &dcpi_vdesc_oracle, &dcpi_vdesc_replay};

const dcpi_vdesc_t *dcpi_vdesc_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

const char *dcpi_vdesc_note(const char *backend, char *buf, size_t len)
{
    const dcpi_vdesc_t *d = dcpi_vdesc_find(backend);
    if (d)
        snprintf(buf, len, "%s%s%s", d->shares, d->bound ? "; " : "", d->bound ? d->bound : "");
    else
        snprintf(buf, len, "%s",
                 !backend ? "written before dcpi recorded backends"
                 : strcmp(backend, "mixed") == 0
                     ? "runs of different backends merged into one profile"
                     : "not known to this dcpilist");
    return buf;
}
