/*
 * write_int.h - private pieces shared by lib/live/write*.c.
 */
#ifndef GPUSCHED_LIVE_WRITE_INT_H
#define GPUSCHED_LIVE_WRITE_INT_H

#include "gpusched/live_write.h"

/* The clock's readings, the system's where the clock (or a member) is NULL. */
int64_t gs_lw_now(const gs_live_clock *c);
int64_t gs_lw_mono(const gs_live_clock *c);
void gs_lw_sleep(const gs_live_clock *c, int64_t us);

/* Send through fn (NULL: gs_live_do on client). rs is reset and owned by the caller. */
int gs_lw_send(gs_live_send_fn fn, void *ctx, gs_live_client *client, const gs_live_request *rq,
               gs_live_response *rs, gs_error *err);

/* A string member: ,"key":"escaped" (nothing when s is NULL). first: no leading comma. */
void gs_lw_member(gs_strbuf *out, const char *key, const char *s, bool first);

#endif
