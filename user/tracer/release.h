/* The links' last close, after heaptrace has exited (release.c). */
#ifndef HT_TRACER_RELEASE_H
#define HT_TRACER_RELEASE_H

/*
 * When nothing traced is left alive: the links' last close (and its grace
 * periods) happens in an orphan after heaptrace has exited (release.c).
 */
void tracer_release_at_exit(void);

#endif
