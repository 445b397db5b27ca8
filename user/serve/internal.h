/*
 * What the files of serve/ that answer --http share: the server, its
 * listeners, connections and requests, passed in; it includes no header
 * of http.c's, so that they need not call back into it.
 */
#ifndef HT_SERVE_INTERNAL_H
#define HT_SERVE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <microhttpd.h>

#include "output/output.h"
#include "serve/delta.h"
#include "serve/listen.h"
#include "profile/profile.h"


/*
 * Limits (docs/security.md, "HTTP endpoint").  A connection costs a
 * descriptor and, with a thread per connection, a thread: 1,100 slow
 * connections once made heaptrace start 990 threads and reach select()'s
 * 1,024 descriptors.  Now a few threads poll with epoll whatever the
 * clients do, and each listener holds at most CONN_HARD connections, so
 * that HT_MAX_HTTP listeners stay far below the usual limit of 1,024
 * descriptors.
 */
enum {
	WORKERS_TCP = 2,        /* epoll threads per TCP listener */
	WORKERS_UNIX = 1,       /* per unix socket: local and few clients */
	/*
	 * Past CONN_SOFT connections, the oldest that have not sent a complete
	 * request are dropped (make_room()).  A slowloris flood never
	 * completes its requests, while a scraper sends its whole request at
	 * once: the flood only ever displaces itself, from any address (a
	 * per-address limit would lock out a scraper on the same host as the
	 * flood).
	 */
	CONN_SOFT = 48,
	CONN_HARD = 64,         /* libmicrohttpd's cap; beyond it, the kernel's accept queue */
	/*
	 * A client is not dropped in its first QUIET_MS without data: under
	 * load a scraper may be scheduled a while after its connection is
	 * made, before it sends its request.
	 */
	QUIET_MS = 200,
	SWEEP_MS = 100,         /* while crowded, make room this often too */
	REAP_MS = 1000,         /* otherwise, look for connections closed by their client this often */
	IDLE_TIMEOUT = 10,      /* seconds without a byte either way */
	STOP_FLUSH_MS = 500,    /* http_stop: how long answers for stopping get to go out */
	MAX_PENDING = 16,       /* profile requests waiting for the profile thread; more get 503 */
};

/* One tracked connection of a listener. */
struct conn {
	struct conn *prev, *next;
	int fd;
	uint64_t since_ms;      /* accepted */
	bool seen;              /* a request line was read */
	bool busy;              /* a complete request is being answered: never dropped */
	bool dropped;           /* shut down by us, not yet closed by libmicrohttpd */
};

struct http_server;

/* One --http value: a libmicrohttpd daemon on a TCP port or a unix socket. */
struct listener {
	struct http_server *h;
	struct MHD_Daemon *d;
	const char *spec;
	char url[128];                  /* where it serves, said by http_ready (port 0 resolved) */
	struct unix_socket sock;        /* unix socket: the file, removed at stop if still ours */
	pthread_mutex_t lock;   /* the connection list, shared by the listener's threads */
	struct conn *head, *tail;       /* oldest first */
	unsigned live;          /* tracked, not dropped */
	unsigned long dropped;
};

/* One request, from its complete headers to its end. */
struct request {
	struct request *next;   /* in the profile queue */
	struct MHD_Connection *c;
	enum ht_format fmt;
	enum ht_value value;
	/* ?seconds=N: the profile at the start of the window, answered at due_ms (serve/delta.h). */
	unsigned seconds;
	bool started;
	uint64_t due_ms;
	struct profile p0;
	char *maps0;
	char client[DELTA_KEY];         /* its delta slot, held until the request ends; "": none */
	bool stop_answer;               /* counted in stop_answers */
	/* The profile thread's answer: */
	unsigned status;
	const char *mime;
	char *body;
	size_t len;
};

struct http_server {
	struct listener l[HT_MAX_HTTP];
	int n;
	int n_started;          /* listeners the profile thread may sweep (their locks exist) */
	struct profile_source src;
	struct target *t;
	const char *token;
	size_t token_len;
	/*
	 * Profiles are built one at a time by one thread, with one symbolizer
	 * kept across requests (rebuilt when the memory map changes):
	 * concurrent scrapes would each load the debug information again,
	 * ~30 MB a time.  A request for a profile is suspended meanwhile, so
	 * that a slow profile blocks no polling thread and no other client.
	 */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	struct request *qhead, *qtail;
	struct request *waiting;        /* deltas in their window, soonest due first */
	unsigned stop_answers;          /* 503s for stopping not yet sent (atomic): http_stop lets them go out */
	unsigned pending;
	bool stopping;
	bool ready;             /* http_ready: tracing has begun; before, profile requests get 503 */
	bool crowded;           /* a listener has more than CONN_SOFT connections */
	struct symbolizer *sym;
	char *sym_maps;
};

/* reply.c: queue a response; body (malloc'd) is libmicrohttpd's after this. */
enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len);
enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text);

/*
 * conns.c: libmicrohttpd's callbacks that track a listener's connections
 * (cls: the listener), and what http.c and the profile thread do with them.
 */
void *conns_on_uri(void *cls, const char *uri, struct MHD_Connection *c);
void conns_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			 enum MHD_ConnectionNotificationCode code);
/* busy: a complete request came; !busy: answered, the connection waits for the next like a new one. */
void conns_busy(struct listener *l, struct MHD_Connection *c, bool busy);
/* The profile thread's sweep: drop what crowds the listeners; true if one is still crowded. */
bool conns_sweep(struct http_server *h);

/* queue.c: the profile thread, and handing it a request (seconds > 0: a delta profile). */
void *profile_thread(void *arg);
enum MHD_Result queue_profile(struct http_server *h, struct MHD_Connection *c, void **state, enum ht_format fmt,
			     enum ht_value value, unsigned seconds);
/* What a request holds, freed when it ends. */
void request_free(struct http_server *h, struct request *r);

#endif
