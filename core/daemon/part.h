/*
 * part.h - the daemon's parts (private to core/daemon/): each part (the JIT maps, the live view,
 * the duty cycle, the cache writer, ...) owns a struct of its own, made (zeroed) at its first
 * use and freed at exit, and takes the daemon's events through hooks (every hook may be NULL):
 *
 *   sample   a PC sample counted (event ev, image, offset from its tstart; cur_pid: its
 *            process), for the parts made by then only: nothing is made per sample
 *   unresolved  a user sample of pid at ip in no known image: 1 when the part mapped it (the
 *            sample is resolved again), else 0
 *   resolved a user sample resolved in img at *off, which the part may correct (parts made by
 *            then only, like sample)
 *   tick     the loop's timer, at every wake-up
 *   epoch    a new epoch began (its directory exists)
 *   written  an image's profile was written by a flush (image index, its path, its directory)
 *   flush    a flush wrote its files (d->flush_async: nobody waits for it)
 *   child    SIGCHLD: a child process of the daemon may have exited
 *   control  a control command (ctlserver.c): 1 when it was the part's (answered), else 0
 *   exit     the teardown: free what the part holds (its struct is freed after)
 *
 * A part is one file: its ops (a dcpi__part_ops_t), its state behind dcpi__part, and one line
 * in parts.c's table, the order its hooks are called in. The core (daemon.c, setup.c,
 * ctlserver.c, epochs.c) calls the hooks through dcpi__parts_*, never a part's own function.
 */
#ifndef DCPI_CORE_DAEMON_PART_H
#define DCPI_CORE_DAEMON_PART_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct daemon;
struct dcpi__answer;
struct dcpi_image;

typedef struct dcpi__part_ops {
    const char *name;
    size_t size; /* its state's bytes */
    void (*sample)(struct daemon *d, void *self, int ev, uint32_t image, uint32_t off);
    int (*unresolved)(struct daemon *d, void *self, pid_t pid, uint64_t ip);
    void (*resolved)(struct daemon *d, void *self, pid_t pid, uint64_t ip, uint64_t t,
                     const struct dcpi_image *img, uint32_t *off);
    void (*tick)(struct daemon *d, void *self);
    void (*epoch)(struct daemon *d, void *self);
    void (*written)(struct daemon *d, void *self, uint32_t image, const char *path,
                    const char *dirname);
    void (*flush)(struct daemon *d, void *self);
    void (*child)(struct daemon *d, void *self);
    int (*control)(struct daemon *d, void *self, const char *cmd, struct dcpi__answer *a);
    void (*exit)(struct daemon *d, void *self);
} dcpi__part_ops_t;

/* The parts, in the order their hooks are called (parts.c). */
extern const dcpi__part_ops_t dcpi__part_top, dcpi__part_jit, dcpi__part_duty, dcpi__part_cache,
    dcpi__part_exits, dcpi__part_epochs;

/* The part's state, made (zeroed) at its first use; NULL without memory. */
void *dcpi__part(struct daemon *d, const dcpi__part_ops_t *ops);
/* A part's state when it was made, else NULL (nothing made for a look). */
void *dcpi__part_if(const struct daemon *d, const dcpi__part_ops_t *ops);

/* Every part's hook, in the table's order (those not made yet get their state first, except
 * for exit). control returns 1 when a part answered the command. */
void dcpi__parts_sample(struct daemon *d, int ev, uint32_t image, uint32_t off);
int dcpi__parts_unresolved(struct daemon *d, pid_t pid, uint64_t ip);
void dcpi__parts_resolved(struct daemon *d, pid_t pid, uint64_t ip, uint64_t t,
                          const struct dcpi_image *img, uint32_t *off);
void dcpi__parts_tick(struct daemon *d);
void dcpi__parts_epoch(struct daemon *d);
void dcpi__parts_written(struct daemon *d, uint32_t image, const char *path, const char *dirname);
void dcpi__parts_flush(struct daemon *d);
void dcpi__parts_child(struct daemon *d);
int dcpi__parts_control(struct daemon *d, const char *cmd, struct dcpi__answer *a);
void dcpi__parts_exit(struct daemon *d);

#endif
