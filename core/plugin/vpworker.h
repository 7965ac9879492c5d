/*
 * vpworker.h - plugin isolation for dcpid (docs/vprofiler.md, ISOLATION IN DCPID): one worker
 * process per value-profiler plugin runs its vp_prof_process, so a plugin that crashes, never
 * returns, or returns a count past its buffer or a bad pointer takes only its worker down.
 *
 * The shared region (mmap MAP_SHARED|MAP_ANONYMOUS, made in dcpi_vpworker_new, before the fork)
 * holds a small header, the input trace buffer (the caller encodes its trace straight into it:
 * no copy) and the output vsamples. The worker is forked on first use (so it is a child of the
 * process that samples, after dcpid daemonized), talks over a SOCK_SEQPACKET socketpair (one
 * byte each way per trace; MSG_NOSIGNAL, so a dead worker is no SIGPIPE), runs
 * trace_parser_init + vp_prof_process and copies the returned vsamples into the shared output
 * (a bad pointer crashes the worker, which is the point). dcpid waits with a timeout (the
 * watchdog); a dead worker is reaped for its signal. At the end the worker calls vp_prof_done.
 *
 * Not thread-safe: one caller thread.
 */
#ifndef DCPI_CORE_VPWORKER_H
#define DCPI_CORE_VPWORKER_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/vprofiler.h"

#define DCPI_VPWORKER_DEFAULT_TIMEOUT_MS 2000 /* dcpid -vtimeout */

typedef struct dcpi_vpworker dcpi_vpworker_t;

/* Map the shared region (in_cap bytes of input). The worker is not started yet. 0 or
 * DCPI_ENOMEM with "NAME: reason" in err. */
int dcpi_vpworker_new(const vp_dispatch_t *d, const char *name, size_t in_cap, unsigned timeout_ms,
                      dcpi_vpworker_t **out, char *err);

/* The backend name the worker's parser reports (trace_parser_backend; a static string), set
 * before the worker starts. */
void dcpi_vpworker_set_backend(dcpi_vpworker_t *w, const char *backend);

/* The shared input buffer (in_cap bytes) the caller encodes traces into. */
uint8_t *dcpi_vpworker_inbuf(dcpi_vpworker_t *w);

/*
 * Have the worker (started if needed) run vp_prof_process(pid) on the first len bytes of the
 * input buffer, and wait for it at most the timeout. 0: *n is the plugin's answer (negative:
 * the plugin's error; else at most VSAMPLE_BUFFER_SIZE) and *vs the vsamples copied into the
 * shared output. DCPI_EPLUGIN: the plugin broke (crashed, did not return in time, returned too
 * many samples or a NULL buffer) or the worker could not start; why (DCPI_ERRLEN bytes) says
 * which, e.g. "vp_prof_process crashed (SIGSEGV)"; the worker is gone and every later call
 * fails the same way.
 */
int dcpi_vpworker_process(dcpi_vpworker_t *w, unsigned pid, size_t len, int *n,
                          const vsample_t **vs, char *why);

/* The worker's pid (0: none running). */
int dcpi_vpworker_pid(const dcpi_vpworker_t *w);

/* End the worker (it calls vp_prof_done and exits; killed after 1 s), unmap, free. NULL ok. */
void dcpi_vpworker_free(dcpi_vpworker_t *w);

#endif
