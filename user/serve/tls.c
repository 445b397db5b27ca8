/*
 * The files --http reads its credentials from: the token (--http-token)
 * and the PEM certificate and key (--http-cert, --http-key).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <microhttpd.h>

#include "serve/http.h"
#include "util/io.h"
#include "util/log.h"
#include "util/procfs.h"

/* A token's length: RFC 6750 sets no bounds, these keep out guessable and absurd ones. */
enum { MIN_TOKEN = 16, MAX_TOKEN = 1024 };

static int read_file(const char *option, const char *path, bool secret, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	uid_t me;
	gid_t my_gid;
	char *buf = NULL;

	if (fd < 0) {
		ht_err("%s %s: %s", option, path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ht_err("%s %s: not a regular file", option, path);
		goto fail;
	}
	if (secret) {
		invoking_user(&me, &my_gid);
		if (st.st_uid && st.st_uid != me) {
			ht_err("%s %s: owned by uid %u, not by root or you (uid %u): another user could know or change it",
			       option, path, (unsigned)st.st_uid, (unsigned)me);
			goto fail;
		}
		if (st.st_mode & 077) {
			ht_err("%s %s: mode %04o lets group or other users read or change it (chmod 600 %s)", option,
			       path, (unsigned)(st.st_mode & 07777), path);
			goto fail;
		}
	}
	if ((uint64_t)st.st_size > max) {
		ht_err("%s %s: larger than %zu bytes", option, path, max);
		goto fail;
	}
	if (!(buf = malloc(st.st_size + 1)))
		goto fail;
	if (io_read_full(fd, buf, st.st_size)) {
		ht_err("%s %s: %s", option, path, errno ? strerror(errno) : "shorter than its size");
		goto fail;
	}
	buf[st.st_size] = '\0';
	close(fd);
	*out = buf;
	*len = st.st_size;
	return 0;
fail:
	free(buf);
	close(fd);
	return -1;
}

int http_read_token(const char *option, const char *path, char **token)
{
	char *t;
	size_t n;

	if (read_file(option, path, true, MAX_TOKEN + 2, &t, &n))
		return -1;
	/* One line: its newline is no part of the token. */
	if (n && t[n - 1] == '\n')
		t[--n] = '\0';
	if (n && t[n - 1] == '\r')
		t[--n] = '\0';
	/* RFC 6750's b68token: what a scraper sends verbatim after "Bearer ". */
	size_t ok = strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/");
	ok += strspn(t + ok, "=");
	if (n < MIN_TOKEN || n > MAX_TOKEN || ok != n) {
		ht_err("%s %s: the token must be one line of %d to %d characters from A-Z a-z 0-9 - . _ ~ + / "
		       "(then '='), e.g. from: head -c 32 /dev/urandom | base64",
		       option, path, MIN_TOKEN, MAX_TOKEN);
		free(t);
		return -1;
	}
	*token = t;
	return 0;
}

int http_read_pem(const char *option, const char *path, bool secret, char **pem)
{
	size_t n;

	if (read_file(option, path, secret, 1 << 20, pem, &n))
		return -1;
	if (!strstr(*pem, "-----BEGIN ")) {
		ht_err("%s %s: not a PEM file (no '-----BEGIN ' line)", option, path);
		free(*pem);
		*pem = NULL;
		return -1;
	}
	return 0;
}

bool http_tls_supported(void)
{
	return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}
