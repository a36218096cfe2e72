/*
 * live_int.h - private pieces shared by the files of lib/live.
 */
#ifndef GPUSCHED_LIVE_INT_H
#define GPUSCHED_LIVE_INT_H

#include "gpusched/live.h"

gs_live_state *gs_live_state_new(void);
void gs_live_state_free(gs_live_state *s);

/* p resolved against dir when relative (an arena copy); NULL for an empty p. */
char *gs_live_resolve_path(gs_arena *a, const char *dir, const char *p);

/* One kubeconfig from memory (the fuzz target): `file` names it in errors and anchors its
 * relative paths, which are resolved but never read (an error when a CA, certificate or
 * key file is needed). Exec plugins are not run. */
gs_live_config *gs_live_config_load_text(const char *file, const char *data, size_t len,
                                         const char *context, gs_error *err);

/* The ExecCredential a plugin printed, checked against the configured apiVersion. Arena
 * copies; cert and key both or neither; *expires 0 when the plugin gave none. `name`
 * is the plugin's command (in messages). */
typedef struct gs_live_execcred {
    char *token, *cert_pem, *key_pem;
    size_t cert_len, key_len;
    time_t expires;
} gs_live_execcred;
int gs_live_execcred_parse(const char *name, const char *api_version, const char *out, size_t len,
                           gs_arena *a, gs_live_execcred *ec, gs_error *err);

/* Thread safety of a config shared by the clients of several threads: the credential
 * state and the rate limiter sit behind one mutex. gs_live_credentials and
 * gs_live_invalidate take it; a client that reads the pointers of a gs_live_cred holds it
 * from gs_live_credentials_locked until it copied them (another thread's call may free
 * them). */
void gs_live_cfg_lock(gs_live_config *cfg);
void gs_live_cfg_unlock(gs_live_config *cfg);
int gs_live_credentials_locked(gs_live_config *cfg, time_t now, gs_live_cred *out, gs_error *err);
void gs_live_invalidate_locked(gs_live_config *cfg);
/* The credential's generation (changes whenever it changed), under the lock. */
uint64_t gs_live_cred_generation_locked(const gs_live_config *cfg);

/* The rate limiter: take one token; the milliseconds the caller must wait before sending
 * (0: at once). */
#define GS_LIVE_DEFAULT_QPS 50.0
#define GS_LIVE_DEFAULT_BURST 100
long gs_live_rate_take(gs_live_config *cfg);

/* A List page's metadata.resourceVersion into rv (cap bytes), read with the scanning
 * primitives (no tree of the items): 0, or -1 when the page is not an object with one. */
int gs_live_list_rv(const char *page, size_t len, char *rv, size_t cap);

/* gs_live_list, with the HTTP status of a refused request in *http (0: no answer, or the
 * list did not fail on a request). */
int gs_live_list_http(gs_live_client *c, const char *path, const gs_live_query *query, size_t nquery,
                      unsigned limit, gs_live_page_fn fn, void *ctx, int *http, gs_error *err);

#endif
