/* Where --http listens: a TCP address, or a unix socket it makes. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "serve/listen.h"
#include "util/log.h"
#include "util/procfs.h"

int listen_parse_tcp(const char *addr_port, struct sockaddr_in *out)
{
	const char *colon = strrchr(addr_port, ':');
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64], *end;
	unsigned long port;

	if (!colon || (size_t)(colon - addr_port) >= sizeof(host) || !colon[1] ||
	    (port = strtoul(colon + 1, &end, 10), *end) || port > 65535) {
		ht_err("--http takes ADDR:PORT (e.g. 127.0.0.1:6060) or unix:PATH, not '%s'", addr_port);
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

bool listen_is_unix(const char *spec)
{
	return !strncmp(spec, "unix:", 5);
}

int http_parse_addr(const char *spec)
{
	if (!listen_is_unix(spec))
		return listen_parse_tcp(spec, NULL);
	if (!spec[5] || strlen(spec + 5) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		ht_err("--http %s: a unix socket needs a path of 1 to %zu bytes", spec,
		       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -1;
	}
	return 0;
}

int listen_unix(struct unix_socket *u, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	uid_t uid;
	gid_t gid;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			ht_err("--http unix:%s: the path exists and is not a socket: not replacing it", path);
			return -1;
		}
		/*
		 * A server that answers may be one that is going away: a heaptrace
		 * just killed keeps listening until its exit closes its files,
		 * which waits for its threads and its probes.  So it has 2 s to go.
		 */
		int live = 1, err = 0;
		for (int tries = 0; live && tries < 40; tries++) {
			if (tries)
				usleep(50000);
			fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			live = fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
			err = errno;
			if (fd >= 0)
				close(fd);
		}
		if (live) {
			ht_err("--http unix:%s: another server is listening on it", path);
			return -1;
		}
		if (err != ECONNREFUSED || (unlink(path) && errno != ENOENT)) {
			ht_err("--http unix:%s: cannot replace the old socket: %s", path, strerror(errno));
			return -1;
		}
	} else if (errno != ENOENT) {
		ht_err("--http unix:%s: %s", path, strerror(errno));
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ht_err("--http unix:%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Nobody can connect before listen(): owner and mode are set first. */
	invoking_user(&uid, &gid);
	if (fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW) ||
	    fchmodat(AT_FDCWD, path, 0600, AT_SYMLINK_NOFOLLOW) || lstat(path, &st) || !S_ISSOCK(st.st_mode) ||
	    listen(fd, 128)) {
		ht_err("--http unix:%s: %s", path, strerror(errno));
		unlink(path);
		close(fd);
		return -1;
	}
	u->path = strdup(path);
	u->dev = st.st_dev, u->ino = st.st_ino;
	return fd;
}


void listen_unix_remove(struct unix_socket *u)
{
	struct stat st;

	/* Removed only if it is still the socket this run made. */
	if (u->path && !lstat(u->path, &st) && st.st_dev == u->dev && st.st_ino == u->ino)
		unlink(u->path);
	free(u->path);
	u->path = NULL;
}
