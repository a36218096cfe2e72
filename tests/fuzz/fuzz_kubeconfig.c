/*
 * fuzz_kubeconfig.c - libFuzzer target for the kubeconfig reader (lib/live/kubeconfig.c)
 * and the pure answers of the request layer (lib/live/status.c, the ExecCredential parser).
 *
 * The first byte picks what the rest is: bit 0-1 = 0 or 1 a kubeconfig (1: with --context
 * "ctx"), 2 a Status body / list page, 3 an ExecCredential. Files the kubeconfig names are
 * resolved but never read; exec plugins are never run.
 *
 * Invariants (abort on violation): a failure carries a known code, a non-empty message,
 * the file name (kubeconfig, ExecCredential); a loaded config has a server starting with
 * http:// or https:// without a trailing '/', a context, a namespace, and certificate and
 * key both or neither; a decoded CA or certificate is NUL-terminated at its length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/live.h"
#include "live/live_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const gs_error *e, bool named)
{
    if (e->code <= GS_OK || e->code >= GS_CODE_COUNT_ || !e->msg[0])
        abort();
    if (named && !e->file[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0] & 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_error err;
    gs_error_clear(&err);
    if (mode <= 1) {
        gs_live_config *cfg = gs_live_config_load_text("fuzz/kubeconfig", text, len, mode ? "ctx" : NULL, &err);
        if (!cfg) {
            check_err(&err, err.code != GS_ERR_NOMEM && strncmp(err.msg, "current-context", 15) &&
                                strncmp(err.msg, "context \"", 9));
            return 0;
        }
        size_t sl = strlen(cfg->server);
        if ((strncmp(cfg->server, "https://", 8) && strncmp(cfg->server, "http://", 7)) ||
            (sl && cfg->server[sl - 1] == '/'))
            abort();
        if (!cfg->context || !cfg->namespace_ || !cfg->cert_pem != !cfg->key_pem)
            abort();
        if ((cfg->ca_pem && cfg->ca_pem[cfg->ca_len]) || (cfg->cert_pem && cfg->cert_pem[cfg->cert_len]))
            abort();
        if (cfg->auth != GS_LIVE_AUTH_EXEC && cfg->auth != GS_LIVE_AUTH_TOKEN_FILE) {
            gs_live_cred cr;
            if (gs_live_credentials(cfg, 1, &cr, &err))
                abort();
        }
        gs_live_config_free(cfg);
    } else if (mode == 2) {
        gs_live_status st;
        if (gs_live_status_error(403, text, len, "GET /x", &st, &err) != -1)
            abort();
        check_err(&err, false);
        gs_arena a;
        gs_arena_init(&a, 0);
        gs_live_page_info pi;
        if (gs_live_page_parse(text, len, &a, &pi, &err) == 0) {
            if (pi.continue_token && !pi.continue_token[0])
                abort();
        } else {
            check_err(&err, false);
        }
        gs_arena_free(&a);
    } else {
        gs_arena a;
        gs_arena_init(&a, 0);
        gs_live_execcred ec;
        if (gs_live_execcred_parse("plugin", "client.authentication.k8s.io/v1", text, len, &a, &ec, &err) == 0) {
            if (!ec.token && !ec.cert_pem)
                abort();
            if (!ec.cert_pem != !ec.key_pem)
                abort();
        } else {
            check_err(&err, err.code != GS_ERR_NOMEM);
        }
        gs_arena_free(&a);
    }
    return 0;
}
