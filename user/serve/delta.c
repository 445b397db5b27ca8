#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "serve/delta.h"

int delta_seconds(const char *s, const char *debug, unsigned *sec, const char **why)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = s[0] >= '0' && s[0] <= '9' ? strtoul(s, &end, 10) : 0;
	if (!v || errno || *end) {
		*why = "invalid value for \"seconds\": must be a positive integer\n";
		return -1;
	}
	if (v > DELTA_MAX_SECONDS) {
		*why = "\"seconds\" exceeds heaptrace's limit of 300\n";
		return -1;
	}
	/* As Go: the legacy text format has no negative counts, and a delta has them. */
	if (debug && strcmp(debug, "0")) {
		*why = "seconds and debug params are incompatible\n";
		return -1;
	}
	*sec = v;
	return 0;
}

void delta_client(struct MHD_Connection *c, char key[DELTA_KEY])
{
	const union MHD_ConnectionInfo *a = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const union MHD_ConnectionInfo *f = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	const struct sockaddr *sa = a ? a->client_addr : NULL;
	char ip[INET6_ADDRSTRLEN];
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (sa && sa->sa_family == AF_INET &&
	    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip)))
		snprintf(key, DELTA_KEY, "ip %s", ip);
	else if (sa && sa->sa_family == AF_INET6 &&
		 inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof(ip)))
		snprintf(key, DELTA_KEY, "ip %s", ip);
	/* A unix socket's peers have no address: the user is the client. */
	else if (f && !getsockopt(f->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		snprintf(key, DELTA_KEY, "uid %u", (unsigned)cred.uid);
	else
		snprintf(key, DELTA_KEY, "unknown");
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char running[DELTA_CLIENTS][DELTA_KEY];

bool delta_claim(const char key[DELTA_KEY])
{
	int free_slot = -1;
	bool ok = false;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < DELTA_CLIENTS; i++) {
		if (!running[i][0]) {
			if (free_slot < 0)
				free_slot = i;
		} else if (!strcmp(running[i], key)) {
			free_slot = -1;
			break;
		}
	}
	if (free_slot >= 0) {
		snprintf(running[free_slot], DELTA_KEY, "%s", key);
		ok = true;
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

void delta_release(const char key[DELTA_KEY])
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < DELTA_CLIENTS; i++)
		if (!strcmp(running[i], key)) {
			running[i][0] = 0;
			break;
		}
	pthread_mutex_unlock(&lock);
}

int delta_profile(const struct profile *before, const struct profile *now, struct profile *d)
{
	if (profile_diff(before, now, d))
		return -1;
	/* The profile's duration (pprof's duration_nanos) is the window, not the session. */
	d->start_ns = before->now_ns;
	/* The events and losses of the window: the counters only ever grow. */
	for (int i = 0; i < HT_COUNTER_MAX; i++)
		d->counters[i] = now->counters[i] >= before->counters[i] ? now->counters[i] - before->counters[i] : 0;
	return 0;
}
