/*
 * conn.h - one connection to a ClickHouse server over its HTTP interface (libcurl).
 *
 * The URL is the server's HTTP endpoint, "http[s]://HOST:PORT/" with an optional
 * "?database=NAME" (default "dcpi"). Credentials never come from the URL or the command line
 * (a URL with "user:password@" is refused): DCPI_FLEET_USER and DCPI_FLEET_PASSWORD, or
 * DCPI_FLEET_PASSWORD_FILE (the file's first line), give HTTP basic auth; DCPI_FLEET_CACERT
 * names a CA bundle for https (libcurl verifies the peer and the host name, always).
 *
 * Errors are one line "URL: reason" in err (DCPI_ERRLEN): curl's reason, or the first line of
 * ClickHouse's exception text. Not thread-safe; one connection per thread.
 */
#ifndef DCPI_CORE_FLEET_CONN_H
#define DCPI_CORE_FLEET_CONN_H

#include "core/fleet/sql.h"

#define DCPI_FLEET_DEFAULT_DB "dcpi"

typedef struct dcpi_fleet dcpi_fleet_t;

/* Parse url, read the credentials from the environment. No request is made. 0, DCPI_EINVAL
 * (bad URL, database name, credentials in the URL, unreadable password file), DCPI_ENOMEM. */
int dcpi_fleet_open(const char *url, dcpi_fleet_t **out, char *err);
void dcpi_fleet_close(dcpi_fleet_t *f);
/* The database name (from ?database=, checked by dcpi_fleet_valid_name). */
const char *dcpi_fleet_dbname(const dcpi_fleet_t *f);
/* The URL without its query string (for messages). */
const char *dcpi_fleet_url(const dcpi_fleet_t *f);
/* Seconds a request may take in all (default 120); connecting is limited to 5 s. */
void dcpi_fleet_timeout(dcpi_fleet_t *f, long seconds);

/* Run one statement (sent as the request body); the result text (TabSeparated unless the
 * statement says otherwise) is appended to out when out is not NULL. 0; DCPI_EIO (server
 * unreachable, an exception: "URL: ClickHouse: Code: ...").  */
int dcpi_fleet_query(dcpi_fleet_t *f, const char *sql, dcpi_fbuf_t *out, char *err);
/* An external table of a query (ClickHouse's "external data"): its name in the query, its
 * structure ("cid UInt64, w Int64") and rows (TabSeparated). */
typedef struct dcpi_fleet_ext {
    const char *name, *structure;
    const dcpi_fbuf_t *rows;
} dcpi_fleet_ext_t;
/* dcpi_fleet_query with the external table ext (NULL: none), sent beside the query (in the URL)
 * as a multipart/form-data file: a set of any size without a long query text to parse. */
int dcpi_fleet_query_ext(dcpi_fleet_t *f, const char *sql, const dcpi_fleet_ext_t *ext,
                         dcpi_fbuf_t *out, char *err);
/* INSERT INTO table (cols) FORMAT TabSeparated with rows (TabSeparated text) as the body. */
int dcpi_fleet_insert(dcpi_fleet_t *f, const char *table, const char *cols, const dcpi_fbuf_t *rows,
                      char *err);
/* The one value of a one-row, one-column query into out (cut to len). */
int dcpi_fleet_scalar(dcpi_fleet_t *f, const char *sql, char *out, size_t len, char *err);

#endif
