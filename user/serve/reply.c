/* An answer queued on a connection: what http.c and the profile thread (queue.c) send. */
#include <stdlib.h>
#include <string.h>
#include <microhttpd.h>

#include "serve/internal.h"

enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body,
			     size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_UNAUTHORIZED) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"heaptrace\"");
		/* Nothing to keep open for a client without the token. */
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", strdup(text), strlen(text));
}
