/*
 * Each listener's connections, tracked so that a flood of them cannot
 * starve the real scrapers: past CONN_SOFT the oldest without a complete
 * request are dropped, when a connection comes, when its request line is
 * read, and at the profile thread's sweeps while crowded.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <microhttpd.h>

#include "serve/internal.h"
#include "util/time.h"

/* The tracked connection of c; NULL if it could not be tracked. */
static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

static void conn_unlink(struct listener *l, struct conn *k)
{
	*(k->prev ? &k->prev->next : &l->head) = k->next;
	*(k->next ? &k->next->prev : &l->tail) = k->prev;
	k->prev = k->next = NULL;
}

static void conn_append(struct listener *l, struct conn *k)
{
	k->prev = l->tail;
	*(l->tail ? &l->tail->next : &l->head) = k;
	l->tail = k;
}

/* busy: a complete request came; !busy: answered, the connection waits for the next like a new one. */
void conns_busy(struct listener *l, struct MHD_Connection *c, bool busy)
{
	struct conn *k = conn_of(c);

	if (!k)
		return;
	pthread_mutex_lock(&l->lock);
	k->busy = busy;
	if (!busy) {
		conn_unlink(l, k);
		conn_append(l, k);
	}
	pthread_mutex_unlock(&l->lock);
}

/*
 * Milliseconds since the peer of a connection without a request line last
 * sent anything: TCP knows, counting from the handshake, so that a
 * connection that waited in the accept queue is old when accepted; a unix
 * socket counts from the accept.
 */
static uint64_t quiet_ms(const struct conn *v, uint64_t now)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (!getsockopt(v->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) && len >= sizeof(ti))
		return ti.tcpi_last_data_recv;
	return now - v->since_ms;
}

/*
 * Past CONN_SOFT, drop the oldest connections without a complete request,
 * except `keep` (the one that called), those whose first bytes wait unread
 * in the socket (a scraper sends its whole request at once) and those
 * quiet for less than QUIET_MS.  Called with l->lock held when a
 * connection comes, when one becomes a candidate (its request line was
 * read) and every SWEEP_MS while crowded, so that room is made even when
 * CONN_HARD stopped the accepts.  shutdown(), not close(): libmicrohttpd
 * still owns the descriptor (it closes it after NOTIFY_CLOSED, which waits
 * for l->lock), and the thread polling it sees the end and closes the
 * connection itself.  Returns whether it is still crowded.
 */
static bool make_room(struct listener *l, const struct conn *keep)
{
	uint64_t now = monotonic_ns() / 1000000;
	int unread;

	for (struct conn *v = l->head; v && l->live > CONN_SOFT; v = v->next) {
		if (v == keep || v->busy || v->dropped)
			continue;
		if (!v->seen && (ioctl(v->fd, FIONREAD, &unread) || unread > 0 || quiet_ms(v, now) < QUIET_MS))
			continue;
		shutdown(v->fd, SHUT_RDWR);
		v->dropped = true;
		l->live--;
		l->dropped++;
	}
	return l->live > CONN_SOFT;
}

/* Still crowded after make_room(): the profile thread sweeps until it is not. */
static void crowded(struct http_server *h)
{
	pthread_mutex_lock(&h->qlock);
	if (!h->crowded) {
		h->crowded = true;
		pthread_cond_signal(&h->qcond);
	}
	pthread_mutex_unlock(&h->qlock);
}

/*
 * Connections whose client is gone but libmicrohttpd did not notice: its
 * epoll loop (0.9.75, edge-triggered) takes a read shorter than its buffer
 * for an empty socket, so an end of stream that came with the last bytes
 * waits for the idle timeout.  After a flood, dozens of them held their
 * places for 10 s.  shutdown() wakes the thread that polls them.
 */
static void reap_closed(struct listener *l)
{
	char c;

	for (struct conn *v = l->head; v; v = v->next) {
		if (v->busy || v->dropped || recv(v->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0)
			continue;
		shutdown(v->fd, SHUT_RDWR);
		v->dropped = true;
		l->live--;
	}
}

/* The profile thread's sweep; true if a listener is still crowded. */
bool conns_sweep(struct http_server *h)
{
	bool still = false;
	int n = __atomic_load_n(&h->n_started, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&h->l[i].lock);
		reap_closed(&h->l[i]);
		still |= make_room(&h->l[i], NULL);
		pthread_mutex_unlock(&h->l[i].lock);
	}
	return still;
}

/* A request line was read: from now on the connection may be dropped for a newer one. */
void *conns_on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct listener *l = cls;
	struct conn *k = conn_of(c);
	bool full;
	(void)uri;

	if (k) {
		pthread_mutex_lock(&l->lock);
		k->seen = true;
		full = make_room(l, k);
		pthread_mutex_unlock(&l->lock);
		if (full)
			crowded(l->h);
	}
	return NULL;
}

void conns_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct listener *l = cls;
	struct conn *k = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!i || !(k = calloc(1, sizeof(*k))))
			return;
		k->fd = i->connect_fd;
		k->since_ms = monotonic_ns() / 1000000;
		*socket_context = k;
		pthread_mutex_lock(&l->lock);
		conn_append(l, k);
		l->live++;
		bool full = make_room(l, k);
		pthread_mutex_unlock(&l->lock);
		if (full)
			crowded(l->h);
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&l->lock);
	conn_unlink(l, k);
	if (!k->dropped)
		l->live--;
	pthread_mutex_unlock(&l->lock);
	free(k);
	*socket_context = NULL;
}
