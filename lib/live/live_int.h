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

#endif
