/*
 * --http ADDR:PORT: the /debug/pprof endpoints fleet profilers scrape
 * (Parca, Pyroscope pull mode, go tool pprof http://...), and /metrics.
 */
#ifndef HT_HTTP_H
#define HT_HTTP_H

#include "profile/profile.h"
#include "process/target.h"
#include "tracer/tracer.h"

struct http_server;
struct sockaddr_in;

/* Parse ADDR:PORT (ADDR empty: 127.0.0.1); sa may be NULL.  0, or -1 with the error printed. */
int http_parse_addr(const char *addr_port, struct sockaddr_in *sa);

/* Serve while tracing.  Returns NULL with the error printed. */
struct http_server *http_start(const char *addr_port, const struct profile_source *src, struct target *t);
void http_stop(struct http_server *h);

#endif
