/* The profile thread: profiles built one at a time, delta profiles held through their window. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "process/target.h"
#include "serve/internal.h"
#include "util/time.h"

/* A short text answer in r (the profile thread). */
static void answer_text(struct request *r, unsigned status, const char *text)
{
	r->status = status;
	r->mime = "text/plain; charset=utf-8";
	r->body = strdup(text);
	r->len = r->body ? strlen(text) : 0;
}

/* The profile of the target as it is now, its maps in *maps; -1 with r answered. */
static int take_now(struct http_server *h, struct request *r, struct profile *p, char **maps)
{
	*maps = target_maps_now(h->t);
	if (profile_take_main(&h->src, h->t->pid, *maps, p)) {
		free(*maps);
		*maps = NULL;
		answer_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the profile\n");
		return -1;
	}
	return 0;
}

/* A profile of the target as it is now, or with r->started its change since r->p0, into r (the profile thread). */
static void build_profile(struct http_server *h, struct request *r)
{
	struct profile p, d;
	char *maps;
	FILE *m;
	int err = 1;

	if (take_now(h, r, &p, &maps))
		return;
	if (r->started) {
		if (delta_profile(&r->p0, &p, &d)) {
			profile_free(&p);
			free(maps);
			answer_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot write the profile\n");
			return;
		}
		d.own_maps = p.own_maps;        /* d's maps are p's: freed with d */
		p.own_maps = NULL;
		profile_free(&p);
		p = d;
	}
	/* The profile's maps: the target's, or with --merge the tree's. */
	const char *pm = p.maps;
	if (!h->sym || !pm || !h->sym_maps || strcmp(pm, h->sym_maps)) {
		sym_close(h->sym);
		free(h->sym_maps);
		h->sym = sym_open(pm ? pm : "");
		h->sym_maps = pm ? strdup(pm) : NULL;
	}
	if (h->sym && (m = open_memstream(&r->body, &r->len))) {
		err = output_write_sym(m, r->fmt, &p, r->value, 20, h->sym);
		fclose(m);
	}
	profile_free(&p);
	free(maps);
	if (err) {
		free(r->body);
		answer_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot write the profile\n");
		return;
	}
	r->status = MHD_HTTP_OK;
	r->mime = format_info(r->fmt)->mime;
}

/* The start of r's window: p0 taken, r waits in h->waiting (qlock taken here); -1 with r answered. */
static int start_delta(struct http_server *h, struct request *r)
{
	if (take_now(h, r, &r->p0, &r->maps0))
		return -1;
	r->started = true;
	r->due_ms = monotonic_ns() / 1000000 + r->seconds * 1000ull;
	pthread_mutex_lock(&h->qlock);
	struct request **w = &h->waiting;
	while (*w && (*w)->due_ms <= r->due_ms)
		w = &(*w)->next;
	r->next = *w;
	*w = r;
	pthread_mutex_unlock(&h->qlock);
	return 0;
}

/* The next request to answer: a new one, or a delta whose window is over (or all, when stopping). */
static struct request *next_request(struct http_server *h)
{
	struct request *r = h->qhead;

	if (r) {
		if (!(h->qhead = r->next))
			h->qtail = NULL;
		r->next = NULL;
		return r;
	}
	r = h->waiting;
	if (r && (h->stopping || r->due_ms <= monotonic_ns() / 1000000)) {
		h->waiting = r->next;
		r->next = NULL;
		return r;
	}
	return NULL;
}

void *profile_thread(void *arg)
{
	struct http_server *h = arg;

	pthread_mutex_lock(&h->qlock);
	for (;;) {
		while (!h->qhead && !h->stopping) {
			struct timespec until;
			uint64_t now = monotonic_ns() / 1000000, ms = h->crowded ? SWEEP_MS : REAP_MS;
			if (h->waiting && h->waiting->due_ms <= now)
				break;
			if (h->waiting && h->waiting->due_ms - now < ms)
				ms = h->waiting->due_ms - now;
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_nsec += ms * 1000000L;
			until.tv_sec += until.tv_nsec / 1000000000L;
			until.tv_nsec %= 1000000000L;
			if (pthread_cond_timedwait(&h->qcond, &h->qlock, &until) != ETIMEDOUT)
				continue;
			pthread_mutex_unlock(&h->qlock);
			bool still = conns_sweep(h);
			pthread_mutex_lock(&h->qlock);
			h->crowded = still;
		}
		struct request *r = next_request(h);
		if (!r) {
			if (h->stopping)
				break;
			continue;
		}
		bool stopping = h->stopping;
		pthread_mutex_unlock(&h->qlock);
		if (stopping) {
			answer_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "heaptrace is stopping\n");
			r->stop_answer = true;
			__atomic_add_fetch(&h->stop_answers, 1, __ATOMIC_RELAXED);
		}
		else if (r->seconds && !r->started) {
			if (!start_delta(h, r)) {
				pthread_mutex_lock(&h->qlock);
				continue;       /* still suspended, in its window */
			}
		} else
			build_profile(h, r);
		/* libmicrohttpd's lock orders these writes before the handler's next call. */
		MHD_resume_connection(r->c);
		pthread_mutex_lock(&h->qlock);
		h->pending--;
	}
	pthread_mutex_unlock(&h->qlock);
	return NULL;
}

/* Hand a profile request to the profile thread; *state holds it until the request ends. */
enum MHD_Result queue_profile(struct http_server *h, struct MHD_Connection *c, void **state, enum ht_format fmt,
			      enum ht_value value, unsigned seconds)
{
	struct request *r;
	char client[DELTA_KEY] = "";

	if (seconds) {
		delta_client(c, client);
		if (!delta_claim(client))
			return reply_text(c, MHD_HTTP_TOO_MANY_REQUESTS,
					  "a delta profile for this client is already running: one at a time\n");
	}

	pthread_mutex_lock(&h->qlock);
	if (h->stopping || !h->ready || h->pending >= MAX_PENDING || !(r = calloc(1, sizeof(*r)))) {
		bool stopping = h->stopping, ready = h->ready;
		pthread_mutex_unlock(&h->qlock);
		if (client[0])
			delta_release(client);
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, stopping ? "heaptrace is stopping\n" :
					!ready ? "heaptrace is attaching: try again\n" :
					"too many profile requests waiting: try again\n");
	}
	*state = r;
	r->c = c, r->fmt = fmt, r->value = value, r->seconds = seconds;
	memcpy(r->client, client, sizeof(client));
	/* Suspended before the profile thread can see it, so that its resume never comes first. */
	MHD_suspend_connection(c);
	if (h->qtail)
		h->qtail->next = r;
	else
		h->qhead = r;
	h->qtail = r;
	h->pending++;
	pthread_cond_signal(&h->qcond);
	pthread_mutex_unlock(&h->qlock);
	return MHD_YES;
}

void request_free(struct http_server *h, struct request *r)
{
	if (r->stop_answer)
		__atomic_sub_fetch(&h->stop_answers, 1, __ATOMIC_RELAXED);
	if (r->client[0])
		delta_release(r->client);
	if (r->started) {
		profile_free(&r->p0);
		free(r->maps0);
	}
	free(r->body);
	free(r);
}
