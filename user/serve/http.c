#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <microhttpd.h>

#include "serve/http.h"
#include "util/log.h"
#include "output/output.h"

struct http_server {
	struct MHD_Daemon *d;
	struct profile_source src;
	struct target *t;
	/*
	 * Profiles are built one at a time with one symbolizer kept across
	 * requests (rebuilt when the memory map changes): concurrent scrapes
	 * would each load the debug information again, ~30 MB a time.
	 */
	pthread_mutex_t lock;
	struct symbolizer *sym;
	char *sym_maps;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body,
			     size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", strdup(text), strlen(text));
}

/* A profile of the target as it is now, in a format, into a malloc'd buffer. */
static enum MHD_Result serve_profile(struct http_server *h, struct MHD_Connection *c, enum ht_format fmt,
				     enum ht_value dflt)
{
	struct profile p;
	char *maps = target_maps_now(h->t), *body = NULL;
	size_t len = 0;
	FILE *m;
	int err = 1;

	pthread_mutex_lock(&h->lock);
	if (!h->sym || !maps || !h->sym_maps || strcmp(maps, h->sym_maps)) {
		sym_close(h->sym);
		free(h->sym_maps);
		h->sym = sym_open(maps ? maps : "");
		h->sym_maps = maps ? strdup(maps) : NULL;
	}
	if (profile_take(&h->src, 0, h->t->pid, maps, &p)) {
		pthread_mutex_unlock(&h->lock);
		free(maps);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the profile\n");
	}
	if (h->sym && (m = open_memstream(&body, &len))) {
		err = output_write_sym(m, fmt, &p, dflt, 20, h->sym);
		fclose(m);
	}
	pthread_mutex_unlock(&h->lock);
	profile_free(&p);
	free(maps);
	if (err) {
		free(body);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot write the profile\n");
	}
	return reply(c, MHD_HTTP_OK, format_info(fmt)->mime, body, len);
}

static enum MHD_Result serve_metrics(struct http_server *h, struct MHD_Connection *c)
{
	struct ht_totals tot;
	uint64_t counters[HT_COUNTER_MAX];
	char *body = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&body, &len);

	if (!m)
		return MHD_NO;
	tracer_totals(h->src.tr, 0, &tot);
	profile_session_counters(&h->src, counters);
	fprintf(m, "# HELP heaptrace_inuse_bytes Bytes in live heap blocks of the traced process.\n"
		   "# TYPE heaptrace_inuse_bytes gauge\nheaptrace_inuse_bytes %" PRId64 "\n"
		   "# HELP heaptrace_inuse_objects Live heap objects of the traced process.\n"
		   "# TYPE heaptrace_inuse_objects gauge\nheaptrace_inuse_objects %" PRId64 "\n"
		   "# HELP heaptrace_peak_inuse_bytes Highest in-use bytes seen.\n"
		   "# TYPE heaptrace_peak_inuse_bytes gauge\nheaptrace_peak_inuse_bytes %" PRIu64 "\n",
		(int64_t)tot.inuse_bytes, (int64_t)ht_q16_round(tot.inuse_objects), (uint64_t)tot.peak_bytes);
	fprintf(m, "# HELP heaptrace_events_total Allocator events and losses of every traced process, by kind.\n"
		   "# TYPE heaptrace_events_total counter\n");
	for (int i = 0; i < HT_COUNTER_MAX; i++)
		fprintf(m, "heaptrace_events_total{event=\"%s\"} %" PRIu64 "\n", counter_name(i), counters[i]);
	fclose(m);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

static const char index_page[] =
	"<html><head><title>/debug/pprof/</title></head><body>\n"
	"<p>heaptrace: heap profiles of the traced process</p>\n"
	"<table>\n"
	"<tr><td><a href=\"heap\">heap</a></td><td>live heap by stack (inuse_space; ?debug=1 for text)</td></tr>\n"
	"<tr><td><a href=\"allocs\">allocs</a></td><td>all allocations by stack (alloc_space)</td></tr>\n"
	"<tr><td><a href=\"/metrics\">/metrics</a></td><td>Prometheus metrics</td></tr>\n"
	"</table></body></html>\n";

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct http_server *h = cls;
	(void)version;
	(void)upload;

	/* MHD calls once for the headers, then for any body: answer on the first call with no body. */
	if (!*state) {
		*state = h;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");

	const char *debug = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "debug");
	bool text = debug && strcmp(debug, "0");
	if (!strcmp(url, "/debug/pprof/heap"))
		return serve_profile(h, c, text ? FMT_PPROF : FMT_PROTO, V_INUSE_SPACE);
	if (!strcmp(url, "/debug/pprof/allocs"))
		return serve_profile(h, c, text ? FMT_PPROF : FMT_PROTO, V_ALLOC_SPACE);
	if (!strcmp(url, "/debug/pprof/") || !strcmp(url, "/debug/pprof"))
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", strdup(index_page), strlen(index_page));
	if (!strcmp(url, "/metrics"))
		return serve_metrics(h, c);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /debug/pprof/\n");
}

/* libmicrohttpd's own messages (malformed requests and the like) are for -v. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	(void)cls;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	ht_info("http: %s", buf);
}

int http_parse_addr(const char *addr_port, struct sockaddr_in *out)
{
	const char *colon = strrchr(addr_port, ':');
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64], *end;
	unsigned long port;

	if (!colon || (size_t)(colon - addr_port) >= sizeof(host) || !colon[1] ||
	    (port = strtoul(colon + 1, &end, 10), *end) || port > 65535) {
		ht_err("--http takes ADDR:PORT (e.g. 127.0.0.1:6060), not '%s'", addr_port);
		return -1;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr_port), addr_port);
	if (inet_pton(AF_INET, *host ? host : "127.0.0.1", &sa.sin_addr) != 1) {
		ht_err("--http %s: '%s' is not an IPv4 address", addr_port, host);
		return -1;
	}
	sa.sin_port = htons(port);
	if (out)
		*out = sa;
	return 0;
}

struct http_server *http_start(const char *addr_port, const struct profile_source *src, struct target *t)
{
	struct sockaddr_in sa;
	char host[INET_ADDRSTRLEN];

	if (http_parse_addr(addr_port, &sa))
		return NULL;
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	unsigned long port = ntohs(sa.sin_port);

	struct http_server *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->src = *src;
	h->t = t;
	pthread_mutex_init(&h->lock, NULL);
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
					MHD_USE_ERROR_LOG,
				port, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
	if (!h->d) {
		ht_err("cannot serve HTTP on %s: %s", addr_port, strerror(errno ? errno : EADDRINUSE));
		free(h);
		return NULL;
	}
	/* Port 0 asks for any free port: say which one it got. */
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	if (info && info->port)
		port = info->port;
	ht_info("serving /debug/pprof/heap, /debug/pprof/allocs and /metrics on http://%s:%lu/", host, port);
	return h;
}

void http_stop(struct http_server *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	sym_close(h->sym);
	free(h->sym_maps);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
