/* Where --http listens (http.h includes it: HT_MAX_HTTP and http_parse_addr() are public). */
#ifndef HT_LISTEN_H
#define HT_LISTEN_H

#include <stdbool.h>
#include <netinet/in.h>
#include <sys/types.h>

#define HT_MAX_HTTP 4   /* --http given this many times at most */

/* Check one --http value (ADDR:PORT, ADDR empty: 127.0.0.1; or unix:PATH).  0, or -1 with the error printed. */
int http_parse_addr(const char *spec);

/* unix:PATH rather than ADDR:PORT. */
bool listen_is_unix(const char *spec);

/* ADDR:PORT (ADDR empty: 127.0.0.1) into out, if not NULL; -1 with the error printed. */
int listen_parse_tcp(const char *addr_port, struct sockaddr_in *out);

/* A unix socket made by this run: removed at the end only if it is still that one. */
struct unix_socket {
	char *path;
	dev_t dev;
	ino_t ino;
};

/*
 * The listening unix socket of --http unix:PATH, mode 0600 and owned by the
 * invoking user: its descriptor, or -1 with the error printed.  An
 * existing socket is replaced only if nothing listens on it (a killed
 * run's), any other file never.
 */
int listen_unix(struct unix_socket *u, const char *path);

/* Remove the socket if the file at its path is still the one listen_unix made; free the path. */
void listen_unix_remove(struct unix_socket *u);

#endif
