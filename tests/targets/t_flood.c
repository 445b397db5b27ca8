/*
 * Not a traced target: the attacker of the --http flood test (scenario
 * httpflood).  Usage: t_flood ADDR:PORT|unix:PATH N SECONDS [MS]
 *
 * Holds N connections to the endpoint, each a request whose headers never
 * end ("slowloris"): the request line, then one byte every MS milliseconds
 * (default 500: faster than any idle timeout would tolerate); MS 0: nothing
 * at all, not even the request line (a silent flood).  A connection the
 * server closes is opened again at once, so the flood stays at N whatever
 * the server does, for SECONDS seconds or until SIGTERM.  Prints "flooding"
 * once the first N connections are open, and at the end one line:
 *   t_flood: N=1100 opened=... closed_by_server=... connect_errors=... first_error=...
 * Exit 0; 1 if no connection was made in the first 2 s (first_error says why:
 * "Permission denied" for a unix socket the user may not open).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_storage addr;
static socklen_t addr_len;
static long opened, closed_by_server, connect_errors;
static int first_error;
static bool silent;
static volatile sig_atomic_t stopped;

static void on_term(int sig)
{
	(void)sig;
	stopped = 1;
}

enum { IDLE, CONNECTING, OPEN };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void failed(struct pollfd *p, int *st, int err)
{
	if (!first_error)
		first_error = err;
	connect_errors++;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	*st = IDLE;
}

/*
 * Start a connection.  Non-blocking: with the server's accept queue full,
 * a blocking connect() would stall every other connection of the flood.
 */
static void start_one(struct pollfd *p, int *st)
{
	p->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	p->revents = 0;
	if (p->fd < 0) {
		failed(p, st, errno);
		return;
	}
	if (!connect(p->fd, (struct sockaddr *)&addr, addr_len) || errno == EINPROGRESS) {
		p->events = POLLOUT;
		*st = CONNECTING;
		return;
	}
	failed(p, st, errno);
}

/* Connected: the request line, and headers that never end. */
static void connected(struct pollfd *p, int *st)
{
	static const char head[] = "GET /debug/pprof/heap HTTP/1.1\r\nHost: flood\r\n";
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err ||
	    (!silent && send(p->fd, head, sizeof(head) - 1, MSG_NOSIGNAL) < 0)) {
		failed(p, st, err ? err : errno);
		return;
	}
	opened++;
	p->events = POLLIN;
	*st = OPEN;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	char *end;
	long n, ms = 500;
	double secs, t0, stop, next;
	bool said = false;

	if (argc < 4 || (n = strtol(argv[2], &end, 10)) < 1 || *end || (secs = strtod(argv[3], &end)) <= 0 || *end ||
	    (argc > 4 && ((ms = strtol(argv[4], &end, 10)) < 0 || *end))) {
		fprintf(stderr, "usage: t_flood ADDR:PORT|unix:PATH N SECONDS [MS]\n");
		return 2;
	}
	if (!ms) {
		silent = true;
		ms = 100;
	}
	if (!strncmp(argv[1], "unix:", 5)) {
		struct sockaddr_un *un = (struct sockaddr_un *)&addr;
		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s", argv[1] + 5);
		addr_len = sizeof(*un);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&addr;
		char *colon = strrchr(argv[1], ':');
		if (!colon)
			return 2;
		*colon = '\0';
		in->sin_family = AF_INET;
		in->sin_port = htons(atoi(colon + 1));
		if (inet_pton(AF_INET, argv[1], &in->sin_addr) != 1)
			return 2;
		addr_len = sizeof(*in);
	}
	/* N sockets need N descriptors: the default soft limit is 1024. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	struct pollfd *p = calloc(n, sizeof(*p));
	int *st = calloc(n, sizeof(*st));
	if (!p || !st)
		return 2;
	for (long i = 0; i < n; i++)
		start_one(&p[i], &st[i]);

	signal(SIGTERM, on_term);
	t0 = now();
	stop = t0 + secs;
	next = t0 + ms / 1e3;
	while (!stopped && now() < stop) {
		int wait = (int)((next - now()) * 1e3);
		poll(p, n, wait < 0 ? 0 : wait > 100 ? 100 : wait);
		for (long i = 0; i < n; i++) {
			char buf[256];
			if (!p[i].revents || p[i].fd < 0)
				continue;
			if (st[i] == CONNECTING) {
				connected(&p[i], &st[i]);
				continue;
			}
			/* Closed by the server (or anything it answered): open another at once. */
			while (read(p[i].fd, buf, sizeof(buf)) > 0)
				;
			close(p[i].fd);
			closed_by_server++;
			start_one(&p[i], &st[i]);
		}
		if (!said && (opened >= n || now() > t0 + 5)) {
			printf("flooding\n");
			fflush(stdout);
			said = true;
		}
		if (now() >= next) {
			for (long i = 0; i < n; i++) {
				if (st[i] == OPEN && !silent)
					send(p[i].fd, "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
				else if (st[i] == IDLE)
					start_one(&p[i], &st[i]);
			}
			next = now() + ms / 1e3;
		}
		if (!opened && now() > t0 + 2)
			break;
	}
	printf("t_flood: N=%ld opened=%ld closed_by_server=%ld connect_errors=%ld first_error=%s\n", n, opened,
	       closed_by_server, connect_errors, first_error ? strerror(first_error) : "none");
	return opened ? 0 : 1;
}
