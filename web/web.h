/*
 * web.h - dcpiweb's server (docs/dcpiweb.md): an interactive viewer of a database, of a running
 * dcpid (the live view, through its control socket) or of a fleet store, served over HTTP by
 * libmicrohttpd. Every view is a URL (the selection in its query string) drawn by dcpireport's
 * page script (core/report: its style, its functions, its JSON document) and has a JSON form,
 * the very JSON of the tool that prints that view with -json (dcpiprof, dcpilist, dcpidiff,
 * dcpitop). Read-only.
 *
 * web/ sits beside cli/: a static library linked by the program only (it uses cli/'s selection
 * of epochs and processes, as the tools do), never part of libdcpi, so that libdcpi does not
 * depend on libmicrohttpd.
 */
#ifndef DCPI_WEB_WEB_H
#define DCPI_WEB_WEB_H

#include <stdio.h>

typedef struct dcpi_web_opts {
    const char *tool;               /* the name in front of messages ("dcpiweb") */
    const char *db;                 /* the database (resolved), or NULL with fleet_url */
    const char *fleet_url;          /* the fleet store, or NULL */
    const char *platform;           /* -platform, or NULL (every platform) */
    const char *hosts;              /* -host: the hosts of a selection without hosts=, or NULL */
    const char *since, *until;      /* -since, -until: likewise for since=, until= */
    const char *http;               /* HOST:PORT to listen on ("127.0.0.1:8088") */
    int public_ok;                  /* 1: a non-loopback HOST is allowed (-public) */
    const char *const *plugin_dirs; /* where plugins that format hotlists are searched */
    FILE *log;                      /* one line per request and the start (NULL: stderr) */
} dcpi_web_opts_t;

/*
 * Listen on o->http, print "dcpiweb: serving DB at http://HOST:PORT/" on o->log, and answer
 * requests until SIGINT or SIGTERM. Returns 0 then; a negative DCPI_E* with "TOOL: reason" in
 * err (DCPI_ERRLEN) when it cannot start: DCPI_EINVAL for a malformed -http or a non-loopback
 * address without o->public_ok, DCPI_EIO when the address cannot be bound.
 */
int dcpi_web_serve(const dcpi_web_opts_t *o, char *err);

/* Split "HOST:PORT" (an IPv4 address, "localhost", or "[v6]") into host (size 64) and port.
 * 0, or DCPI_EINVAL. Sets *loopback to 1 for 127.0.0.0/8, ::1 and localhost. */
int dcpi_web_parse_addr(const char *s, char *host, unsigned *port, int *loopback);

#endif
