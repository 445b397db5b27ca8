/*
 * --http ADDR:PORT: the /debug/pprof endpoints fleet profilers scrape
 * (Parca, Pyroscope pull mode, go tool pprof http://...), and /metrics.
 */
#ifndef HT_HTTP_H
#define HT_HTTP_H

#include "profile.h"
#include "target.h"
#include "tracer.h"

struct http_server;

/* Serve while tracing.  Returns NULL with the error printed. */
struct http_server *http_start(const char *addr_port, const struct tracer *tr, struct target *t,
			       const struct profile_opts *opts);
void http_stop(struct http_server *h);

#endif
