/*
 * proctab.h - the processes dcpid has seen, for per-process counts: each (pid, command name)
 * pair gets a small id that the count table keys samples by (core/sampling/aggregate.h), and a
 * flush turns back into the pid and name written next to each profile (core/store/procprof.h).
 *
 * A pid's current id changes when its program changes (exec, or the main thread's COMM record);
 * a forked child starts with its parent's name. An id stays valid until dcpi_proctab_compact,
 * which the daemon calls only after the count table was emptied by a complete flush: exited
 * processes are forgotten then, the live ones renumbered. Id 0 is "no process" (pid 0,
 * "swapper", the idle task). Not thread-safe.
 */
#ifndef DCPI_CORE_PROCTAB_H
#define DCPI_CORE_PROCTAB_H

#include <stdint.h>
#include <sys/types.h>

#define DCPI_COMMLEN 16 /* TASK_COMM_LEN, with its NUL */

typedef struct dcpi_proctab dcpi_proctab_t;

int dcpi_proctab_new(dcpi_proctab_t **out);
void dcpi_proctab_free(dcpi_proctab_t *pt);

/* The id of pid's current program. A pid seen for the first time is named from
 * /proc/<pid>/comm ("?" when it has gone). Returns 0 for pid <= 0 and when memory ran out
 * (the sample then counts for pid 0, and dcpi_proctab_failed says how often). */
uint32_t dcpi_proctab_id(dcpi_proctab_t *pt, pid_t pid);
/* A COMM record of the process's main thread (or an exec): pid is named comm from now on. */
void dcpi_proctab_comm(dcpi_proctab_t *pt, pid_t pid, const char *comm);
/* pid forked from ppid: it starts with ppid's name. */
void dcpi_proctab_fork(dcpi_proctab_t *pt, pid_t ppid, pid_t pid);
/* pid exited: its ids stay valid until dcpi_proctab_compact. */
void dcpi_proctab_exit(dcpi_proctab_t *pt, pid_t pid);

/* The pid and name of an id (pid 0 and "swapper" for id 0 and ids out of range). */
pid_t dcpi_proctab_pid(const dcpi_proctab_t *pt, uint32_t id);
const char *dcpi_proctab_name(const dcpi_proctab_t *pt, uint32_t id);

/* Forget exited processes and the old names of live ones; live ones get new ids. Only when no
 * id is referenced any more (the count table is empty). */
void dcpi_proctab_compact(dcpi_proctab_t *pt);
/* Ids in use (1 + entries), and the times an id could not be allocated. */
uint32_t dcpi_proctab_count(const dcpi_proctab_t *pt);
uint64_t dcpi_proctab_failed(const dcpi_proctab_t *pt);

#endif
