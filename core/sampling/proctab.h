/*
 * proctab.h - the processes dcpid has seen, for per-process counts: each (pid, command name)
 * pair gets a small id that the count table keys samples by (core/sampling/aggregate.h), and a
 * flush turns back into the pid and name written next to each profile (core/store/procprof.h).
 *
 * A pid's current id changes when its program changes (exec, or the main thread's COMM record);
 * a forked child starts with its parent's name. Ids never move. An entry that stopped being
 * current (its process exited, or changed its name) stays valid until a dcpi_proctab_compact
 * that follows a dcpi_proctab_mark made after it stopped: the daemon marks when a flush begins
 * (samples drained during the flush go to another count table and may name processes that die
 * meanwhile) and compacts when the flushed table is empty; freed ids are reused. Id 0 is "no
 * process" (pid 0, "swapper", the idle task). Not thread-safe.
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

/* A flush begins: entries that stop being current from now on survive the next compaction. */
void dcpi_proctab_mark(dcpi_proctab_t *pt);
/* Forget the exited processes and old names that stopped before the last mark (their ids may
 * be given to new entries); live ids do not change. Memory shrinks with the table. */
void dcpi_proctab_compact(dcpi_proctab_t *pt);
/* Ids in use (1 + entries in use), and the times an id could not be allocated. */
uint32_t dcpi_proctab_count(const dcpi_proctab_t *pt);
uint64_t dcpi_proctab_failed(const dcpi_proctab_t *pt);

#endif
