/*
 * server.c - dcpiweb's HTTP server on libmicrohttpd (web.h): its own threads accept and read
 * and write (a client gone mid-response costs its connection only), every request answered
 * from a buffer built whole, the views under one lock (the library's readers keep process-wide
 * state: damage warnings, plugins; the page's files need none), GET and HEAD only, the selection
 * checked before anything is read (query.c), security headers on every reply. Stops on SIGINT or
 * SIGTERM.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/damage.h"
#include "core/base/err.h"
#include "core/base/json.h"
#include "core/plugin/vploader.h"
#include "dcpi/errno.h"
#include "web/parts.h"

#define POOL_THREADS 4
#define CONN_LIMIT   512
#define CONN_TIMEOUT 60

static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct args {
    dcpi__web_sel_t sel;
    char err[DCPI_ERRLEN];
    int bad;
} args_t;

static enum MHD_Result one_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    args_t *a = cls;
    if (!a->bad && dcpi__web_param(&a->sel, key, value, a->err) < 0)
        a->bad = 1;
    return MHD_YES;
}

/* The damaged files the readers skipped while a page was built: its "damage" list. */
typedef struct damage_list {
    FILE *f;
    int n;
} damage_list_t;

static void on_damage(void *arg, const char *msg)
{
    damage_list_t *d = arg;
    fputs(d->n++ ? "," : "", d->f);
    dcpi__json_str(d->f, msg);
}

/* The page's document wrapped with the warnings of damaged files: {"damage":[..],"report":..}. */
static void wrap_damage(dcpi__web_reply_t *r, char *dbuf, size_t dlen)
{
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    if (!f)
        return;
    fprintf(f, "{\"damage\":[%.*s],\"report\":", (int)dlen, dbuf ? dbuf : "");
    fwrite(r->body, 1, r->len, f);
    fputs("}\n", f);
    if (fclose(f) != 0) {
        free(out);
        return;
    }
    free(r->body);
    r->body = out;
    r->len = n;
}

/* A view's reply, with the damaged files its readers skipped (page.json's "damage"). */
static void routed(const dcpi_web_opts_t *o, const char *url, const dcpi__web_sel_t *s,
                   dcpi__web_reply_t *r)
{
    char *dbuf = NULL;
    size_t dlen = 0;
    damage_list_t d = {.f = open_memstream(&dbuf, &dlen)};
    dcpi__damage_init(o->tool, 0); /* each request names its own damaged files */
    if (d.f)
        dcpi__damage_sink(on_damage, &d);
    dcpi__web_route(o, url, s, r);
    dcpi__damage_sink(NULL, NULL);
    if (d.f)
        fclose(d.f);
    if (r->status == 200 && strcmp(url, "/api/page.json") == 0)
        wrap_damage(r, dbuf, dlen);
    free(dbuf);
}

static void build(const dcpi_web_opts_t *o, const char *url, const dcpi__web_sel_t *s,
                  dcpi__web_reply_t *r)
{
    if (strncmp(url, "/api/", 5) != 0) { /* the page's files: no reader, no lock */
        dcpi__web_route(o, url, s, r);
        return;
    }
    char *key = NULL, stamp[128] = "";
    pthread_mutex_lock(&view_lock);
    if (!dcpi__web_cache_get(o, url, s, r, &key, stamp, sizeof stamp)) {
        routed(o, url, s, r);
        dcpi__web_cache_put(key, stamp, r);
    }
    pthread_mutex_unlock(&view_lock);
}

static void headers(struct MHD_Response *resp, const dcpi__web_reply_t *r)
{
    MHD_add_response_header(resp, "Content-Type", r->type);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; "
                            "connect-src 'self'; img-src data:; base-uri 'none'; "
                            "form-action 'none'; frame-ancestors 'none'");
}

static enum MHD_Result send_reply(struct MHD_Connection *c, dcpi__web_reply_t *r)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(r->body);
        return MHD_NO;
    }
    r->body = NULL;
    headers(resp, r);
    enum MHD_Result ret = MHD_queue_response(c, r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void log_line(const dcpi_web_opts_t *o, const char *method, const char *url, unsigned status,
                     size_t len)
{
    char safe[256];
    FILE *f = o->log ? o->log : stderr;
    fprintf(f, "%s: %s %s %u %zu\n", o->tool, method, dcpi__escape(safe, sizeof safe, url), status,
            len);
    fflush(f);
}

/* A loopback server answers only requests for a loopback name (Host: 127.0.0.1:PORT,
 * localhost, [::1]): a page of another site whose name was made to resolve to 127.0.0.1 (DNS
 * rebinding) sends its own name and is refused. Without a Host header (HTTP/1.0): allowed. */
static int host_ok(const dcpi_web_opts_t *o, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    char name[64], host[64];
    unsigned port = 0;
    int loopback = 0;
    if (o->public_ok || !h)
        return 1;
    if (!strchr(h, ':') || (h[0] == '[' && !strstr(h, "]:"))) { /* no port: add one to parse */
        snprintf(name, sizeof name, "%s:80", h);
        h = name;
    }
    return dcpi_web_parse_addr(h, host, &port, &loopback) == 0 && loopback;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
    static int first_call;
    const dcpi_web_opts_t *o = cls;
    (void)version;
    (void)upload;
    dcpi__web_reply_t r = {0};
    args_t a = {.sel = {.pid = -1}};
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (!*state && get) { /* the headers only: answer on the next call */
        *state = &first_call;
        return MHD_YES;
    }
    if (!host_ok(o, c))
        dcpi__web_error(&r, 403, o->tool, "this server answers requests for 127.0.0.1 only");
    else if (!get) /* at once, before any body is read */
        dcpi__web_error(&r, 405, o->tool, "only GET and HEAD: the viewer is read-only");
    else if (*upload_size)
        dcpi__web_error(&r, 400, o->tool, "a GET carries no body");
    else if (MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, one_arg, &a) >= 0 && a.bad)
        dcpi__web_error(&r, 400, o->tool, a.err);
    else
        build(o, url, &a.sel, &r);
    log_line(o, method, url, r.status, r.len);
    return send_reply(c, &r);
}

/* ---- start and stop ---- */

static int parse_host(const char *h, size_t len, char *host, int *loopback)
{
    if (len == 0 || len >= 64)
        return DCPI_EINVAL;
    memcpy(host, h, len);
    host[len] = '\0';
    if (!strcmp(host, "localhost"))
        snprintf(host, 64, "127.0.0.1");
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) {
        *loopback = (ntohl(a4.s_addr) >> 24) == 127;
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6) == 1) {
        *loopback = IN6_IS_ADDR_LOOPBACK(&a6);
        return 0;
    }
    return DCPI_EINVAL;
}

int dcpi_web_parse_addr(const char *s, char *host, unsigned *port, int *loopback)
{
    const char *colon = strrchr(s, ':'), *h = s;
    size_t len = colon ? (size_t)(colon - s) : 0;
    if (!colon || !colon[1] || strlen(colon + 1) > 5)
        return DCPI_EINVAL;
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        h = s + 1;
        len -= 2;
    }
    char *end = NULL;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (*end || p > 65535 || colon[1] < '0' || colon[1] > '9')
        return DCPI_EINVAL;
    *port = (unsigned)p;
    return parse_host(h, len, host, loopback);
}

typedef union addr {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
} addr_t;

static struct MHD_Daemon *start(const dcpi_web_opts_t *o, const char *host, unsigned port)
{
    addr_t a = {0};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (strchr(host, ':')) {
        a.in6.sin6_family = AF_INET6;
        a.in6.sin6_port = htons((uint16_t)port);
        inet_pton(AF_INET6, host, &a.in6.sin6_addr);
        flags |= MHD_USE_IPv6;
    } else {
        a.in4.sin_family = AF_INET;
        a.in4.sin_port = htons((uint16_t)port);
        inet_pton(AF_INET, host, &a.in4.sin_addr);
    }
    return MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, (void *)o,
                            MHD_OPTION_SOCK_ADDR, &a.sa, MHD_OPTION_THREAD_POOL_SIZE,
                            (unsigned)POOL_THREADS, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)CONN_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)CONN_TIMEOUT, MHD_OPTION_END);
}

static void announce(const dcpi_web_opts_t *o, struct MHD_Daemon *d, const char *host, int loopback)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : 0;
    FILE *f = o->log ? o->log : stderr;
    const char *v6 = strchr(host, ':') ? "[" : "";
    if (!loopback)
        fprintf(f, "%s: -public: listening on %s, reachable from other machines\n", o->tool, host);
    fprintf(f, "%s: serving %s at http://%s%s%s:%u/\n", o->tool,
            o->fleet_url ? o->fleet_url : o->db, v6, host, *v6 ? "]" : "", port);
    fflush(f);
}

int dcpi_web_serve(const dcpi_web_opts_t *o, char *err)
{
    char host[64];
    unsigned port = 0;
    int loopback = 0, sig = 0;
    if (dcpi_web_parse_addr(o->http, host, &port, &loopback) < 0)
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: -http wants HOST:PORT (127.0.0.1:8088, [::1]:8088), not '%s'",
                          o->tool, o->http);
    if (!loopback && !o->public_ok)
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: -http %s is not a loopback address: give -public to serve "
                          "other machines",
                          o->tool, o->http);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the server's threads inherit the mask */
    signal(SIGPIPE, SIG_IGN);
    if (o->plugin_dirs && dcpi_vp_set_search_dirs(o->plugin_dirs) < 0)
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", o->tool);
    struct MHD_Daemon *d = start(o, host, port);
    if (!d)
        return dcpi__errf(err, DCPI_EIO, "%s: -http %s: cannot listen there (in use?)", o->tool,
                          o->http);
    announce(o, d, host, loopback);
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    return 0;
}
