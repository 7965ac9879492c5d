/*
 * conn.c - HTTP requests to ClickHouse with libcurl: statements in the body, inserts as
 * TabSeparated bodies, basic auth and CA from the environment (conn.h).
 */
#include "core/fleet/conn.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "dcpi/errno.h"

struct dcpi_fleet {
    CURL *curl;
    char *base;   /* scheme://host:port/path, no query */
    char *params; /* the URL's other query parameters ("" or "&a=b&c=d") */
    char db[65];
    char *user, *password, *cacert;
    long timeout;
};

static int global_init(void)
{
    static int done;
    if (!done && curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return DCPI_EIO;
    done = 1;
    return 0;
}

/* "database=NAME" out of the query string q; the other parameters kept in f->params. */
static int parse_query(dcpi_fleet_t *f, char *q, char *err)
{
    dcpi_fbuf_t rest = {0};
    snprintf(f->db, sizeof f->db, "%s", DCPI_FLEET_DEFAULT_DB);
    for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        if (strncmp(kv, "database=", 9) == 0) {
            if (!dcpi_fleet_valid_name(kv + 9)) {
                dcpi_fbuf_free(&rest);
                return dcpi__errf(err, DCPI_EINVAL, "%s: not a database name (letters, digits, _)",
                                  kv + 9);
            }
            snprintf(f->db, sizeof f->db, "%s", kv + 9);
        } else {
            dcpi_fbuf_str(&rest, "&");
            dcpi_fbuf_str(&rest, kv);
        }
    }
    f->params = strdup(rest.p ? rest.p : "");
    dcpi_fbuf_free(&rest);
    return f->params ? 0 : DCPI_ENOMEM;
}

static int parse_url(dcpi_fleet_t *f, const char *url, char *err)
{
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: not an http:// or https:// URL", url);
    const char *host = strstr(url, "//") + 2;
    const char *slash = strchr(host, '/'), *at = strchr(host, '@');
    if (at && (!slash || at < slash))
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: credentials in a URL show in ps; set DCPI_FLEET_USER and "
                          "DCPI_FLEET_PASSWORD (or DCPI_FLEET_PASSWORD_FILE)",
                          url);
    char *copy = strdup(url);
    if (!copy)
        return DCPI_ENOMEM;
    char *q = strchr(copy, '?');
    if (q)
        *q++ = 0;
    size_t n = strlen(copy);
    f->base = malloc(n + 2);
    int rc = f->base ? 0 : DCPI_ENOMEM;
    if (rc == 0) {
        memcpy(f->base, copy, n + 1);
        if (!strchr(strstr(f->base, "//") + 2, '/'))
            strcat(f->base, "/");
        rc = parse_query(f, q ? q : (char[]){0}, err);
    }
    free(copy);
    return rc;
}

static int read_password_file(dcpi_fleet_t *f, const char *path, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc < 0)
        return rc;
    char *s = buf;
    s[strcspn(s, "\r\n")] = 0;
    f->password = s;
    return 0;
}

static int read_credentials(dcpi_fleet_t *f, char *err)
{
    const char *u = getenv("DCPI_FLEET_USER"), *p = getenv("DCPI_FLEET_PASSWORD");
    const char *pf = getenv("DCPI_FLEET_PASSWORD_FILE"), *ca = getenv("DCPI_FLEET_CACERT");
    if (u && *u && !(f->user = strdup(u)))
        return DCPI_ENOMEM;
    if (pf && *pf) {
        int rc = read_password_file(f, pf, err);
        if (rc < 0)
            return rc;
    } else if (p && !(f->password = strdup(p)))
        return DCPI_ENOMEM;
    if (ca && *ca && !(f->cacert = strdup(ca)))
        return DCPI_ENOMEM;
    return 0;
}

int dcpi_fleet_open(const char *url, dcpi_fleet_t **out, char *err)
{
    *out = NULL;
    if (global_init() < 0)
        return dcpi__errf(err, DCPI_EIO, "%s: libcurl failed to initialize", url);
    dcpi_fleet_t *f = calloc(1, sizeof *f);
    if (!f)
        return DCPI_ENOMEM;
    f->timeout = 120;
    int rc = parse_url(f, url, err);
    if (rc == 0)
        rc = read_credentials(f, err);
    if (rc == 0 && !(f->curl = curl_easy_init()))
        rc = dcpi__errf(err, DCPI_ENOMEM, "%s: curl_easy_init failed", url);
    if (rc < 0) {
        dcpi_fleet_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

void dcpi_fleet_close(dcpi_fleet_t *f)
{
    if (!f)
        return;
    if (f->curl)
        curl_easy_cleanup(f->curl);
    if (f->password)
        memset(f->password, 0, strlen(f->password));
    free(f->base);
    free(f->params);
    free(f->user);
    free(f->password);
    free(f->cacert);
    free(f);
}

const char *dcpi_fleet_dbname(const dcpi_fleet_t *f)
{
    return f->db;
}

const char *dcpi_fleet_url(const dcpi_fleet_t *f)
{
    return f->base;
}

void dcpi_fleet_timeout(dcpi_fleet_t *f, long seconds)
{
    f->timeout = seconds;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    dcpi_fbuf_t *b = arg;
    dcpi_fbuf_add(b, p, size * n);
    return b->oom ? 0 : size * n;
}

static void set_common(dcpi_fleet_t *f, dcpi_fbuf_t *resp) /* resp: finish() sets it */
{
    CURL *c = f->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, f->timeout);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (f->cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, f->cacert);
    if (f->user || f->password) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, f->user ? f->user : "default");
        curl_easy_setopt(c, CURLOPT_PASSWORD, f->password ? f->password : "");
    }
}

/* The first line of ClickHouse's exception text, without its "e.what()" tail. */
static void server_reason(const dcpi_fbuf_t *resp, char *out, size_t len)
{
    const char *s = resp->p ? resp->p : "";
    size_t n = strcspn(s, "\n");
    const char *what = strstr(s, ", e.what()");
    if (what && (size_t)(what - s) < n)
        n = (size_t)(what - s);
    if (n >= len)
        n = len - 1;
    memcpy(out, s, n);
    out[n] = 0;
}

/* The request set up on f->curl, its answer into out. */
static int finish(dcpi_fleet_t *f, dcpi_fbuf_t *out, char *err)
{
    dcpi_fbuf_t resp = {0};
    curl_easy_setopt(f->curl, CURLOPT_WRITEDATA, &resp);
    CURLcode cc = curl_easy_perform(f->curl);
    long status = 0;
    curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &status);
    int rc = 0;
    if (cc != CURLE_OK)
        rc = dcpi__errf(err, resp.oom ? DCPI_ENOMEM : DCPI_EIO, "%s: %s", f->base,
                        curl_easy_strerror(cc));
    else if (status != 200) {
        char why[400];
        server_reason(&resp, why, sizeof why);
        rc = dcpi__errf(err, DCPI_EIO, "%s: ClickHouse (HTTP %ld): %s", f->base, status, why);
    } else if (out)
        dcpi_fbuf_add(out, resp.p ? resp.p : "", resp.n);
    dcpi_fbuf_free(&resp);
    if (rc == 0 && out && out->oom)
        rc = DCPI_ENOMEM;
    return rc;
}

static int perform(dcpi_fleet_t *f, const char *url, const void *body, size_t blen,
                   dcpi_fbuf_t *out, char *err)
{
    set_common(f, NULL);
    curl_easy_setopt(f->curl, CURLOPT_URL, url);
    curl_easy_setopt(f->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(f->curl, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(f->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    return finish(f, out, err);
}

/* The query in the URL, the external table as a multipart/form-data file part. */
static int perform_ext(dcpi_fleet_t *f, const char *url, const dcpi_fleet_ext_t *ext,
                       dcpi_fbuf_t *out, char *err)
{
    set_common(f, NULL);
    curl_easy_setopt(f->curl, CURLOPT_URL, url);
    curl_mime *m = curl_mime_init(f->curl);
    curl_mimepart *part = m ? curl_mime_addpart(m) : NULL;
    int rc =
        part && curl_mime_name(part, ext->name) == CURLE_OK &&
                curl_mime_filename(part, ext->name) == CURLE_OK &&
                curl_mime_data(part, ext->rows->p ? ext->rows->p : "", ext->rows->n) == CURLE_OK &&
                curl_easy_setopt(f->curl, CURLOPT_MIMEPOST, m) == CURLE_OK
            ? finish(f, out, err)
            : DCPI_ENOMEM;
    curl_easy_setopt(f->curl, CURLOPT_MIMEPOST, NULL);
    curl_mime_free(m);
    return rc;
}

static char *request_url(dcpi_fleet_t *f, const char *insert_query)
{
    dcpi_fbuf_t u = {0};
    /* tables are always named DB.TABLE: no database= (it must exist before init creates it) */
    dcpi_fbuf_printf(&u, "%s?%s", f->base, f->params[0] ? f->params + 1 : "");
    const char *sep = f->params[0] ? "&" : "";
    if (insert_query) {
        char *q = curl_easy_escape(f->curl, insert_query, 0);
        if (!q) {
            dcpi_fbuf_free(&u);
            return NULL;
        }
        dcpi_fbuf_printf(&u, "%sinsert_distributed_sync=1&query=%s", sep, q);
        curl_free(q);
    }
    if (dcpi_fbuf_ok(&u) < 0) {
        dcpi_fbuf_free(&u);
        return NULL;
    }
    return u.p;
}

int dcpi_fleet_query(dcpi_fleet_t *f, const char *sql, dcpi_fbuf_t *out, char *err)
{
    char *url = request_url(f, NULL);
    if (!url)
        return DCPI_ENOMEM;
    int rc = perform(f, url, sql, strlen(sql), out, err);
    free(url);
    return rc;
}

int dcpi_fleet_query_ext(dcpi_fleet_t *f, const char *sql, const dcpi_fleet_ext_t *ext,
                         dcpi_fbuf_t *out, char *err)
{
    if (!ext)
        return dcpi_fleet_query(f, sql, out, err);
    if (!dcpi_fleet_valid_name(ext->name))
        return DCPI_EINVAL;
    dcpi_fbuf_t u = {0};
    char *url = request_url(f, NULL), *q = curl_easy_escape(f->curl, sql, 0);
    char *st = curl_easy_escape(f->curl, ext->structure, 0);
    if (url && q && st)
        dcpi_fbuf_printf(&u, "%s%squery=%s&%s_structure=%s", url, f->params[0] ? "&" : "", q,
                         ext->name, st);
    int rc =
        url && q && st && dcpi_fbuf_ok(&u) == 0 ? perform_ext(f, u.p, ext, out, err) : DCPI_ENOMEM;
    curl_free(q);
    curl_free(st);
    free(url);
    dcpi_fbuf_free(&u);
    return rc;
}

int dcpi_fleet_insert(dcpi_fleet_t *f, const char *table, const char *cols, const dcpi_fbuf_t *rows,
                      char *err)
{
    if (!rows->n)
        return 0;
    char q[1024];
    if (dcpi__pathf(q, sizeof q, "INSERT INTO %s.%s (%s) FORMAT TabSeparated", f->db, table, cols) <
        0)
        return DCPI_EINVAL;
    char *url = request_url(f, q);
    if (!url)
        return DCPI_ENOMEM;
    int rc = perform(f, url, rows->p, rows->n, NULL, err);
    free(url);
    return rc;
}

int dcpi_fleet_scalar(dcpi_fleet_t *f, const char *sql, char *out, size_t len, char *err)
{
    dcpi_fbuf_t r = {0};
    int rc = dcpi_fleet_query(f, sql, &r, err);
    if (rc == 0) {
        const char *s = r.p ? r.p : "";
        size_t n = strcspn(s, "\n");
        if (n >= len)
            n = len - 1;
        memcpy(out, s, n);
        out[n] = 0;
    }
    dcpi_fbuf_free(&r);
    return rc;
}
