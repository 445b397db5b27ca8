/*
 * --http ADDR:PORT | unix:PATH: the /debug/pprof endpoints fleet profilers
 * scrape (Parca, Pyroscope pull mode, go tool pprof http://...), and
 * /metrics.  Who may read them (--http-token, the socket's mode, TLS) and
 * how a flood of connections is kept from starving the real scrapers:
 * docs/security.md, "HTTP endpoint".
 */
#ifndef HT_HTTP_H
#define HT_HTTP_H

#include "profile/profile.h"
#include "process/target.h"
#include "tracer/tracer.h"
#include "serve/listen.h"   /* HT_MAX_HTTP, http_parse_addr() */

struct http_server;

struct http_config {
	const char *const *listen;      /* the --http values */
	int n_listen;
	const char *token;              /* --http-token's token; NULL: none asked */
	const char *cert, *key;         /* --http-cert, --http-key: PEM; NULL: plain HTTP */
};

/*
 * Read --http-token FILE (secret) or --http-cert/--http-key FILE into a
 * malloc'd string.  A secret file must be a regular file owned by root or
 * the invoking user and closed to group and other; the token must be one
 * line of at least 16 characters of RFC 6750's token alphabet.  0, or -1
 * with a one-line error naming the option.
 */
int http_read_token(const char *option, const char *path, char **token);
int http_read_pem(const char *option, const char *path, bool secret, char **pem);

/* Whether this libmicrohttpd can serve TLS (Debian's links GnuTLS). */
bool http_tls_supported(void);

/*
 * Listen before the target is touched, so that a port in use or a bad
 * path fails first; profiles are served once http_ready gives their
 * source (until then 503).  Returns NULL with the error printed.
 */
struct http_server *http_start(const struct http_config *cfg, struct target *t);
void http_ready(struct http_server *h, const struct profile_source *src);
void http_stop(struct http_server *h);

#endif
