/*
 * control.h - dcpid's control socket protocol, client side (dcpictl) and the shared helpers.
 *
 * The socket is DB/dcpid-<platform>.sock (AF_UNIX, SOCK_STREAM, mode 0600). A client sends
 * one line: "flush", "epoch", "quit", "status" or "top [N] [pid=P] [comm=C]" (the live view's
 * window, core/daemon/top.c); the daemon answers zero or more text lines and a last line "ok"
 * or "error: <reason>", then closes the connection.
 */
#ifndef DCPI_CORE_CONTROL_H
#define DCPI_CORE_CONTROL_H

#include <stddef.h>
#include <stdio.h>

/* Seconds a client waits for the daemon's answer. */
#define DCPI_CONTROL_TIMEOUT 60

/* 1 when cmd is one of the commands of the protocol (top with its arguments). */
int dcpi_control_valid(const char *cmd);

/*
 * Send cmd to the daemon of platform in db and call line(arg, text) for every answer line
 * before the final one. Returns 0 on "ok"; DCPI_EIO with the daemon's "error: ..." reason in
 * err; DCPI_ENOENT when no daemon listens ("no dcpid for platform P in DB (SOCK: reason)");
 * DCPI_EIO on a timeout or a connection closed without a final line.
 */
int dcpi_control_request(const char *db, const char *platform, const char *cmd,
                         void (*line)(void *arg, const char *text), void *arg, char *err);

/* dcpictl epochs: the epochs of platform in db (core/store/epochs.h) as a table on out, one
 * line each: name, start, end, samples, lost, size on disk, state (writing, ended, unfinished,
 * "-" without epoch.info), or with json 1 one JSON object (schema dcpictl-epochs/1,
 * docs/dcpictl.md). DCPI_ENOENT when there are none. */
int dcpi_control_epochs(const char *db, const char *platform, int json, FILE *out, char *err);
/* dcpictl status -json: the daemon's status as one JSON object (schema dcpictl-status/1,
 * docs/dcpictl.md); errors as dcpi_control_request. */
int dcpi_control_status_json(const char *db, const char *platform, FILE *out, char *err);

/* dcpitop: the running daemon's hottest procedures and images, refreshed every delay_ms. */
typedef struct dcpi_top_opts {
    unsigned iterations; /* refreshes to show (0: until interrupted) */
    unsigned delay_ms;   /* between refreshes (1000) */
    unsigned rows;       /* procedures and images shown (0: fit the terminal, else 20) */
    int pid;             /* only this process (0: all) */
    const char *comm;    /* only processes of this command name (NULL: all) */
    int images;          /* images only, no procedures */
    int json;            /* each refresh as one JSON line (schema dcpitop/1) instead */
} dcpi_top_opts_t;

/* Show the live view on out: on a terminal the screen is redrawn, else each refresh is a
 * block of plain text ending with an empty line. DCPI_ENOENT when no daemon listens, DCPI_EIO
 * on an error answer (err says why). */
int dcpi_control_top(const char *db, const char *platform, const dcpi_top_opts_t *o, FILE *out,
                     char *err);

/* One window of the live view (the samples since the previous request of any client; the
 * first request starts the view) as one JSON object and a newline on out (schema dcpitop/1,
 * docs/dcpitop.md): o->rows rows of each kind (0: 200), o's filter. Errors as
 * dcpi_control_request. */
int dcpi_control_top_json(const char *db, const char *platform, const dcpi_top_opts_t *o, FILE *out,
                          char *err);

#endif
