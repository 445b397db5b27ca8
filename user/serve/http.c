#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

#include "serve/http.h"
#include "serve/internal.h"
#include "serve/metrics.h"
#include "util/log.h"
#include "util/procfs.h"
#include "util/time.h"
#include "output/output.h"
static enum MHD_Result serve_metrics(struct http_server *h, struct MHD_Connection *c)
{
	struct ht_totals tot;
	uint64_t counters[HT_COUNTER_MAX];
	char *body = NULL;
	size_t len = 0;
	FILE *m;

	if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE))
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "heaptrace is attaching: try again\n");
	if (!(m = open_memstream(&body, &len)))
		return MHD_NO;
	/* The processes /debug/pprof/heap describes: the target, or with --merge the tree. */
	profile_main_totals(&h->src, &tot);
	profile_main_counters(&h->src, counters);
	fprintf(m, "# HELP heaptrace_inuse_bytes Bytes in live heap blocks of the traced process (--merge: of the tree).\n"
		   "# TYPE heaptrace_inuse_bytes gauge\nheaptrace_inuse_bytes %" PRId64 "\n"
		   "# HELP heaptrace_inuse_objects Live heap objects of the traced process (--merge: of the tree).\n"
		   "# TYPE heaptrace_inuse_objects gauge\nheaptrace_inuse_objects %" PRId64 "\n"
		   "# HELP heaptrace_peak_inuse_bytes Highest in-use bytes seen (--merge: each process's own peak, summed).\n"
		   "# TYPE heaptrace_peak_inuse_bytes gauge\nheaptrace_peak_inuse_bytes %" PRIu64 "\n",
		(int64_t)tot.inuse_bytes, (int64_t)ht_q16_round(tot.inuse_objects), (uint64_t)tot.peak_bytes);
	fprintf(m, "# HELP heaptrace_events_total Allocator events and losses of the processes the heap profile describes, by kind.\n"
		   "# TYPE heaptrace_events_total counter\n");
	for (int i = 0; i < HT_COUNTER_MAX; i++)
		fprintf(m, "heaptrace_events_total{event=\"%s\"} %" PRIu64 "\n", counter_name(i), counters[i]);
	if (h->src.tree)
		metrics_by_process(m, &h->src, h->t->pid, h->t->name);
	struct ht_rss rss;
	profile_main_rss(&h->src, h->t->pid, &rss);
	/* Gone (a zombie, or before the attach): no samples rather than a made-up 0. */
	if (rss.known && !rss.last)
		fprintf(m, "# HELP heaptrace_rss_bytes Resident memory of the traced process by kind, from /proc/PID/status (--merge: the tree's, summed).\n"
			   "# TYPE heaptrace_rss_bytes gauge\n"
			   "heaptrace_rss_bytes{kind=\"anon\"} %" PRIu64 "\nheaptrace_rss_bytes{kind=\"file\"} %" PRIu64 "\n"
			   "heaptrace_rss_bytes{kind=\"shmem\"} %" PRIu64 "\n",
			rss.anon, rss.file, rss.shmem);
	/*
	 * A metric of its own, not a kind: it is part of anon and shmem, and
	 * sum(heaptrace_rss_bytes) must stay the process's RSS.
	 */
	if (rss.known && !rss.last)
		fprintf(m, "# HELP heaptrace_rss_own_bytes Of heaptrace_rss_bytes (counted in its anon and shmem), the bytes resident in heaptrace's own mappings in the process: its stub, ring and unwind tables (0 with --no-inject; --merge: the tree's, summed).\n"
			   "# TYPE heaptrace_rss_own_bytes gauge\nheaptrace_rss_own_bytes %" PRIu64 "\n",
			rss.own);
	/* Every traced process's, --merge or not: a killed worker is news even when the profile is the parent's. */
	tracer_session_counters(h->src.tr, counters);
	fprintf(m, "# HELP heaptrace_oom_kills_total Traced processes the kernel's OOM killer chose (all of them, children too).\n"
		   "# TYPE heaptrace_oom_kills_total counter\nheaptrace_oom_kills_total %" PRIu64 "\n",
		counters[HT_OOM_KILLS]);
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

/*
 * "Authorization: Bearer TOKEN" with the token.  The comparison takes the
 * same time wherever the first wrong byte is, so the token cannot be
 * guessed a byte at a time from response times.
 */
static bool authorized(const struct http_server *h, struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	size_t n;
	volatile unsigned char diff;

	if (!v || strncasecmp(v, "Bearer ", 7))
		return false;
	for (v += 7; *v == ' '; v++)
		;
	n = strlen(v);
	diff = n != h->token_len;
	for (size_t i = 0; i < h->token_len; i++)
		diff |= (unsigned char)h->token[i] ^ (unsigned char)(i < n ? v[i] : 0);
	return !diff;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode why)
{
	struct request *r = *state;
	(void)why;

	if (r) {
		request_free(((struct listener *)cls)->h, r);
		*state = NULL;
	}
	conns_busy(cls, c, false);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct listener *l = cls;
	struct http_server *h = l->h;
	struct request *r = *state;
	(void)version;
	(void)upload;

	/*
	 * A request has no body worth reading: everything is answered on the
	 * first call, when the headers are complete, so that a body sent
	 * slowly holds nothing (libmicrohttpd closes a connection whose body
	 * was not read).  A profile comes back from the profile thread.
	 */
	if (r) {
		if (*upload_size) {
			*upload_size = 0;
			return MHD_YES;
		}
		/* Back from the profile thread; the body is libmicrohttpd's now. */
		char *body = r->body;
		r->body = NULL;
		return reply(c, r->status, r->mime, body, r->len);
	}
	if (h->token && !authorized(h, c))
		return reply_text(c, MHD_HTTP_UNAUTHORIZED,
				  "401 unauthorized: send 'Authorization: Bearer TOKEN' (heaptrace --http-token)\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	/*
	 * Until tracing has begun every page answers 503, the index too: a
	 * client that waits for the server to answer (a scraper, a script)
	 * then waits for the tracing, not only for the listener.
	 */
	if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE))
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "heaptrace is attaching: try again\n");
	/* A complete request: its connection is no longer one to drop for a newer one. */
	conns_busy(l, c, true);

	const char *debug = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "debug");
	bool text = debug && strcmp(debug, "0");
	bool heap = !strcmp(url, "/debug/pprof/heap");
	const char *seconds = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
	unsigned sec = 0;
	const char *why;
	if ((heap || !strcmp(url, "/debug/pprof/allocs")) && seconds && delta_seconds(seconds, debug, &sec, &why))
		return reply_text(c, MHD_HTTP_BAD_REQUEST, why);
	if (heap || !strcmp(url, "/debug/pprof/allocs"))
		return queue_profile(h, c, state, text ? FMT_PPROF : FMT_PROTO, heap ? V_INUSE_SPACE : V_ALLOC_SPACE,
				     sec);
	if (!strcmp(url, "/debug/pprof/") || !strcmp(url, "/debug/pprof"))
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", strdup(index_page), strlen(index_page));
	if (!strcmp(url, "/metrics"))
		return serve_metrics(h, c);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /debug/pprof/\n");
}

/*
 * libmicrohttpd's own messages (malformed requests and the like) are for
 * -v, and only the first MHD_LOG_MAX: a flood makes one per connection.
 */
enum { MHD_LOG_MAX = 20 };
static unsigned long mhd_messages;

static void mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	(void)cls;

	if (__atomic_fetch_add(&mhd_messages, 1, __ATOMIC_RELAXED) >= MHD_LOG_MAX)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	ht_info("http: %s", buf);
}

static int listener_start(struct http_server *h, struct listener *l, const struct http_config *cfg,
			  const char *spec)
{
	struct sockaddr_in sa;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem o[16];
	int n = 0, fd = -1;
	bool tls = !listen_is_unix(spec) && cfg->cert;

#define OPT(opt, val, ptr) (o[n++] = (struct MHD_OptionItem){ (opt), (intptr_t)(val), (void *)(ptr) })
	l->h = h;
	l->spec = spec;
	if (listen_is_unix(spec)) {
		if ((fd = listen_unix(&l->sock, spec + 5)) < 0)
			return -1;
		OPT(MHD_OPTION_LISTEN_SOCKET, fd, NULL);
	} else {
		if (listen_parse_tcp(spec, &sa))
			return -1;
		OPT(MHD_OPTION_SOCK_ADDR, 0, &sa);
	}
	if (tls) {
		flags |= MHD_USE_TLS;
		OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, cfg->cert);
		OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, cfg->key);
	}
	OPT(MHD_OPTION_THREAD_POOL_SIZE, listen_is_unix(spec) ? WORKERS_UNIX : WORKERS_TCP, NULL);
	OPT(MHD_OPTION_CONNECTION_LIMIT, CONN_HARD, NULL);
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT, NULL);
	OPT(MHD_OPTION_NOTIFY_CONNECTION, conns_on_connection, l);
	OPT(MHD_OPTION_NOTIFY_COMPLETED, on_completed, l);
	OPT(MHD_OPTION_URI_LOG_CALLBACK, conns_on_uri, l);
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
	pthread_mutex_init(&l->lock, NULL);
	/* From now on the sweep may look at it; http_stop() destroys the lock. */
	__atomic_store_n(&h->n_started, (int)(l - h->l) + 1, __ATOMIC_RELEASE);
	errno = 0;
	l->d = MHD_start_daemon(flags, listen_is_unix(spec) ? 0 : ntohs(sa.sin_port), NULL, NULL, handle, l,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_ARRAY, o, MHD_OPTION_END);
	if (!l->d) {
		int err = errno;
		if (tls)
			ht_err("cannot serve HTTPS on %s: %s (do --http-cert and --http-key match?)", spec,
			       strerror(err ? err : EINVAL));
		else
			ht_err("cannot serve HTTP on %s: %s", spec, strerror(err ? err : EADDRINUSE));
		if (fd >= 0) {
			close(fd);
			unlink(l->sock.path);
		}
		free(l->sock.path);
		l->sock.path = NULL;
		return -1;
	}
	if (listen_is_unix(spec)) {
		snprintf(l->url, sizeof(l->url), "%s", spec);
		return 0;
	}
	char host[INET_ADDRSTRLEN];
	unsigned long port = ntohs(sa.sin_port);
	/* Port 0 asks for any free port: say which one it got. */
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(l->d, MHD_DAEMON_INFO_BIND_PORT);
	if (info && info->port)
		port = info->port;
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	snprintf(l->url, sizeof(l->url), "%s://%s:%lu/", tls ? "https" : "http", host, port);
	return 0;
}

struct http_server *http_start(const struct http_config *cfg, struct target *t)
{
	struct http_server *h = calloc(1, sizeof(*h));
	const char *open_tcp = NULL;

	if (!h)
		return NULL;
	h->t = t;
	h->token = cfg->token;
	h->token_len = cfg->token ? strlen(cfg->token) : 0;
	pthread_condattr_t ca;
	pthread_mutex_init(&h->qlock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->qcond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&h->thread, NULL, profile_thread, h)) {
		ht_err("cannot serve HTTP: %s", strerror(errno));
		http_stop(h);
		return NULL;
	}
	h->thread_started = true;
	for (int i = 0; i < cfg->n_listen && i < HT_MAX_HTTP; i++) {
		if (listener_start(h, &h->l[h->n], cfg, cfg->listen[i])) {
			http_stop(h);
			return NULL;
		}
		h->n++;
		if (!listen_is_unix(cfg->listen[i]) && !open_tcp)
			open_tcp = cfg->listen[i];
	}
	if (open_tcp && !h->token)
		ht_err("warning: --http %s without --http-token: any local user can read the traced process's "
		       "heap profiles, memory map and command line (docs/security.md)", open_tcp);
	return h;
}

void http_ready(struct http_server *h, const struct profile_source *src)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->qlock);
	h->src = *src;
	__atomic_store_n(&h->ready, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&h->qlock);
	/*
	 * Said now, not when the listeners were made: whoever waits for this
	 * line (a script, a scraper's wrapper) may rely on the profiles being
	 * served, as before the listeners moved ahead of the attach.
	 */
	for (int i = 0; i < h->n; i++)
		ht_info("serving /debug/pprof/heap, /debug/pprof/allocs and /metrics on %s%s", h->l[i].url,
			h->token ? " (token required)" : "");
}

void http_stop(struct http_server *h)
{
	if (!h)
		return;
	/* The profile thread answers what waits (503) and ends; nothing is suspended after it. */
	pthread_mutex_lock(&h->qlock);
	h->stopping = true;
	pthread_cond_broadcast(&h->qcond);
	pthread_mutex_unlock(&h->qlock);
	if (h->thread_started)
		pthread_join(h->thread, NULL);
	/*
	 * The 503s just given (a delta in its window gets one) go out before
	 * the listeners close, for at most STOP_FLUSH_MS: the client then
	 * hears why, instead of an empty reply.
	 */
	for (int i = 0; i < STOP_FLUSH_MS / 10 && __atomic_load_n(&h->stop_answers, __ATOMIC_RELAXED); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	for (int i = 0; i < h->n_started; i++) {
		struct listener *l = &h->l[i];
		if (!l->d) {
			pthread_mutex_destroy(&l->lock);
			continue;
		}
		MHD_stop_daemon(l->d);
		if (l->dropped)
			ht_info("http: %s: %lu connections without a complete request were dropped to make room",
				l->spec, l->dropped);
		listen_unix_remove(&l->sock);
		pthread_mutex_destroy(&l->lock);
	}
	if (mhd_messages > MHD_LOG_MAX)
		ht_info("http: %lu more libmicrohttpd messages not shown", mhd_messages - MHD_LOG_MAX);
	sym_close(h->sym);
	free(h->sym_maps);
	pthread_cond_destroy(&h->qcond);
	pthread_mutex_destroy(&h->qlock);
	free(h);
}
