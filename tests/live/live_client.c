/*
 * live_client.c - the C client (lib/live) against the real control plane of the harness
 * (tests/live/controlplane.py exec STATE -- live_client): every credential kind reaches the
 * API server, a list pages with `limit` and `continue`, and RBAC's refusal arrives as the
 * API server's own message. Exit 0 pass, 1 fail, 77 when not run inside the harness.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpusched/live.h"

static int failures;

static void fail(const char *what, const gs_error *err)
{
    failures++;
    fprintf(stderr, "FAIL: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
}

static gs_live_client *client_for(const char *env, gs_live_config **cfg)
{
    const char *path = getenv(env);
    gs_error err;
    gs_error_clear(&err);
    *cfg = NULL;
    if (!path || !*path) {
        fprintf(stderr, "FAIL: %s is not set by the harness\n", env);
        failures++;
        return NULL;
    }
    gs_live_opts o;
    memset(&o, 0, sizeof o);
    o.kubeconfig = path;
    *cfg = gs_live_config_load(&o, &err);
    if (!*cfg) {
        fail(env, &err);
        return NULL;
    }
    gs_live_client *c = gs_live_client_new(*cfg, NULL, &err);
    if (!c)
        fail(env, &err);
    return c;
}

/* Every user of the harness is authenticated: discovery (/api) is open to all of them. */
static void check_discovery(const char *env)
{
    gs_live_config *cfg;
    gs_live_client *c = client_for(env, &cfg);
    if (c) {
        gs_live_request rq;
        memset(&rq, 0, sizeof rq);
        rq.path = "/api";
        gs_live_response rs;
        memset(&rs, 0, sizeof rs);
        gs_error err;
        gs_error_clear(&err);
        if (gs_live_do(c, &rq, &rs, &err) != 0)
            fail(env, &err);
        else if (!strstr(gs_strbuf_cstr(&rs.body), "\"APIVersions\""))
            fail("discovery answer is not APIVersions", NULL);
        else
            printf("ok: %s reaches %s (/api)\n", env, cfg->server);
        if (!strcmp(env, "GS_KUBECONFIG_EXEC") && gs_live_exec_runs(cfg) < 1)
            fail("the exec plugin did not run", NULL);
        gs_live_response_free(&rs);
        gs_live_client_free(c);
    }
    gs_live_config_free(cfg);
}

/* Paging: the namespaces one per page, every page a List, the last without a continue. */
static void check_paging(void)
{
    gs_live_config *cfg;
    gs_live_client *c = client_for("GS_KUBECONFIG_ADMIN", &cfg);
    if (c) {
        gs_live_pages pages;
        memset(&pages, 0, sizeof pages);
        gs_error err;
        gs_error_clear(&err);
        if (gs_live_list(c, "/api/v1/namespaces", NULL, 0, 1, gs_live_pages_add, &pages, &err) != 0) {
            fail("list namespaces", &err);
        } else {
            size_t items = 0;
            bool last_without_continue = false;
            for (size_t i = 0; i < pages.page.n; i++) {
                gs_arena a;
                gs_arena_init(&a, 0);
                gs_live_page_info info;
                if (gs_live_page_parse(pages.page.v[i], pages.len.v[i], &a, &info, &err) != 0)
                    fail("a page is not a List", &err);
                items += info.items;
                if (i + 1 == pages.page.n)
                    last_without_continue = !info.continue_token || !info.continue_token[0];
                gs_arena_free(&a);
            }
            printf("ok: %zu namespaces in %zu pages of one\n", items, pages.page.n);
            if (pages.page.n < 4 || items != pages.page.n)
                fail("expected at least 4 namespaces, one per page", NULL);
            if (!last_without_continue)
                fail("the last page still has a continue token", NULL);
        }
        gs_live_pages_free(&pages);
        gs_live_client_free(c);
    }
    gs_live_config_free(cfg);
}

/* RBAC: the restricted user may list nodes, not pods; the refusal is the server's text. */
static void check_rbac(void)
{
    gs_live_config *cfg;
    gs_live_client *c = client_for("GS_KUBECONFIG_RBAC", &cfg);
    if (c) {
        gs_live_pages pages;
        memset(&pages, 0, sizeof pages);
        gs_error err;
        gs_error_clear(&err);
        if (gs_live_list(c, "/api/v1/nodes", NULL, 0, 0, gs_live_pages_add, &pages, &err) != 0)
            fail("the RBAC user lists nodes", &err);
        gs_live_pages_free(&pages);
        memset(&pages, 0, sizeof pages);
        gs_error_clear(&err);
        if (gs_live_list(c, "/api/v1/pods", NULL, 0, 0, gs_live_pages_add, &pages, &err) == 0) {
            fail("the RBAC user listed pods", NULL);
        } else if (!strstr(err.msg, "pods is forbidden: User \"gs-rbac-user\" cannot list resource \"pods\"") ||
                   err.code != GS_ERR_INVALID) {
            fail("unexpected refusal", &err);
        } else {
            printf("ok: RBAC refusal: %s\n", err.msg);
        }
        gs_live_pages_free(&pages);
        gs_live_client_free(c);
    }
    gs_live_config_free(cfg);
}

/* An exec plugin's credential as client-go uses it: cached until 10 s before its
 * expirationTimestamp, the plugin run again after that; and a 401 re-runs the plugin and
 * retries once (the first token it hands out is wrong, the second right). The plugin is
 * tests/live/exec-credential.py (argv[1]); the token is the harness's static token. */
static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static unsigned count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned n = 0;
    int ch;
    if (!f)
        return 0;
    while ((ch = fgetc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

static int get_api(gs_live_client *c, gs_error *err)
{
    gs_live_request rq;
    memset(&rq, 0, sizeof rq);
    rq.path = "/api/v1/namespaces/default";
    gs_live_response rs;
    memset(&rs, 0, sizeof rs);
    int rc = gs_live_do(c, &rq, &rs, err);
    gs_live_response_free(&rs);
    return rc;
}

static void check_exec_refresh(const char *plugin)
{
    const char *dir = getenv("GS_CP_DIR"), *url = getenv("GS_APISERVER_URL"), *ca = getenv("GS_CA_FILE"),
               *token = getenv("GS_STATIC_TOKEN");
    if (!dir || !url || !ca || !token || !plugin) {
        fail("exec refresh: GS_CP_DIR, GS_APISERVER_URL, GS_CA_FILE, GS_STATIC_TOKEN and the plugin path are needed",
             NULL);
        return;
    }
    char kc[512], tok[512], calls[512], text[4096];
    for (int round = 0; round < 2; round++) {
        snprintf(kc, sizeof kc, "%s/kubeconfig-exec-refresh-%d", dir, round);
        snprintf(tok, sizeof tok, "%s/exec-refresh-token-%d", dir, round);
        snprintf(calls, sizeof calls, "%s/exec-refresh-calls-%d", dir, round);
        remove(calls);
        /* round 0: the right token, valid for 13 s (cached for 3 s); round 1: a wrong token
         * first, then the right one, no expiry */
        if (round == 0)
            snprintf(text, sizeof text, "%s\n", token);
        else
            snprintf(text, sizeof text, "not-a-valid-token\n%s\n", token);
        if (write_text(tok, text)) {
            fail("exec refresh: cannot write the token file", NULL);
            return;
        }
        snprintf(text, sizeof text,
                 "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                 "clusters: [{name: c, cluster: {server: \"%s\", certificate-authority: \"%s\"}}]\n"
                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                 "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: python3, "
                 "args: [\"%s\", \"%s\", \"%s\"%s]}}}]\n",
                 url, ca, plugin, tok, calls, round == 0 ? ", \"13\"" : "");
        if (write_text(kc, text)) {
            fail("exec refresh: cannot write the kubeconfig", NULL);
            return;
        }
        gs_live_opts o;
        memset(&o, 0, sizeof o);
        o.kubeconfig = kc;
        gs_error err;
        gs_error_clear(&err);
        gs_live_config *cfg = gs_live_config_load(&o, &err);
        gs_live_client *c = cfg ? gs_live_client_new(cfg, NULL, &err) : NULL;
        if (!c) {
            fail("exec refresh: client", &err);
            gs_live_config_free(cfg);
            return;
        }
        if (round == 0) {
            if (get_api(c, &err) || get_api(c, &err))
                fail("exec refresh: requests with a fresh credential", &err);
            else if (count_lines(calls) != 1)
                fail("exec refresh: the credential was not cached (plugin runs != 1)", NULL);
            sleep(4); /* 13 s - 4 s < the 10 s margin: expired for the client */
            if (get_api(c, &err))
                fail("exec refresh: a request after expiry", &err);
            else if (count_lines(calls) != 2)
                fail("exec refresh: the plugin did not run again after expiry", NULL);
            else
                printf("ok: exec credential cached until 10 s before its expiry, then refreshed (2 runs)\n");
        } else {
            if (get_api(c, &err))
                fail("exec refresh: a 401 did not re-run the plugin and retry", &err);
            else if (count_lines(calls) != 2)
                fail("exec refresh: expected 2 plugin runs (wrong token, 401, right token)", NULL);
            else
                printf("ok: a 401 re-ran the exec plugin and the retry succeeded (2 runs)\n");
        }
        gs_live_client_free(c);
        gs_live_config_free(cfg);
    }
}

int main(int argc, char **argv)
{
    if (!getenv("GS_KUBECONFIG_ADMIN")) {
        printf("SKIP: not run inside the control-plane harness (tests/live/controlplane.py exec)\n");
        return 77;
    }
    static const char *const users[] = {"GS_KUBECONFIG_ADMIN", "GS_KUBECONFIG_TOKEN", "GS_KUBECONFIG_RBAC",
                                        "GS_KUBECONFIG_SA", "GS_KUBECONFIG_ADMIN_FILES",
                                        "GS_KUBECONFIG_TOKENFILE", "GS_KUBECONFIG_EXEC"};
    for (size_t i = 0; i < sizeof users / sizeof *users; i++)
        check_discovery(users[i]);
    check_paging();
    check_rbac();
    check_exec_refresh(argc > 1 ? argv[1] : NULL);
    printf("%s\n", failures ? "live client: FAILED" : "live client: all checks passed");
    return failures ? 1 : 0;
}
