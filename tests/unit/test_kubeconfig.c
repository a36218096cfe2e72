/*
 * test_kubeconfig.c - credentials resolved as kubectl resolves them (lib/live/kubeconfig.c,
 * creds.c) from the fixtures of tests/data/live: the merge of two KUBECONFIG files,
 * relative paths, --context, each user kind (certificate data and files, token, token
 * file re-read on rotation, basic, exec plugin cached until expiry and re-run after
 * invalidation), the in-cluster service account from a fake directory, and errors with
 * their file:line:col.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpusched/live.h"

static char data_dir[1024];
static char tmp_dir[256];

static const char *fx(const char *name)
{
    static char path[4][1200];
    static int slot;
    slot = (slot + 1) % 4;
    snprintf(path[slot], sizeof path[slot], "%s/%s", data_dir, name);
    return path[slot];
}

static void clean_env(void)
{
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    unsetenv("POD_NAMESPACE");
    setenv("HOME", tmp_dir, 1); /* no ~/.kube/config */
}

static gs_live_config *load(const char *kubeconfig, const char *context, gs_error *err)
{
    gs_live_opts o = {.kubeconfig = kubeconfig, .context = context};
    gs_error_clear(err);
    return gs_live_config_load(&o, err);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---------------------------------------------------------------- merging */
static void test_merge_first_file_wins(void **state)
{
    (void)state;
    clean_env();
    char env[2600];
    /* a file that does not exist is skipped; the same file twice is read once */
    snprintf(env, sizeof env, "%s:%s/missing.yaml:%s:%s", fx("a.yaml"), data_dir, fx("b/b.yaml"), fx("a.yaml"));
    setenv("KUBECONFIG", env, 1);
    gs_error err;
    gs_live_config *cfg = load(NULL, NULL, &err);
    assert_non_null(cfg);
    /* current-context from a.yaml, the first file to set it */
    assert_string_equal(cfg->context, "ctx-a");
    assert_string_equal(cfg->namespace_, "team-a");
    /* cluster "shared" from a.yaml: server without its trailing '/', CA relative to a.yaml */
    assert_string_equal(cfg->server, "https://a.example:6443");
    assert_string_equal(cfg->tls_server_name, "api.a.example");
    assert_non_null(cfg->ca_pem);
    assert_non_null(strstr(cfg->ca_pem, "Q0EtQQ=="));
    /* user "shared-user" from a.yaml */
    assert_int_equal(cfg->auth, GS_LIVE_AUTH_TOKEN);
    assert_string_equal(cfg->token, "token-from-a");
    gs_live_config_free(cfg);

    /* ctx-shared is a.yaml's (only-a + cert-file), not b.yaml's */
    cfg = load(NULL, "ctx-shared", &err);
    assert_non_null(cfg);
    assert_string_equal(cfg->server, "https://a-bare.example:443");
    assert_true(cfg->insecure_skip_tls_verify);
    assert_string_equal(cfg->proxy_url, "http://proxy.a.example:3128");
    assert_null(cfg->ca_pem);
    assert_int_equal(cfg->auth, GS_LIVE_AUTH_NONE);
    assert_non_null(cfg->cert_pem);
    assert_non_null(strstr(cfg->cert_pem, "Y2xpZW50"));
    assert_non_null(strstr(cfg->key_pem, "a2V5"));
    gs_live_config_free(cfg);

    /* ctx-b only in b.yaml: its CA resolved against b/, its basic-auth user */
    cfg = load(NULL, "ctx-b", &err);
    assert_non_null(cfg);
    assert_string_equal(cfg->server, "https://b-only.example:6443");
    assert_non_null(strstr(cfg->ca_pem, "Q0EtQg=="));
    assert_int_equal(cfg->auth, GS_LIVE_AUTH_BASIC);
    assert_string_equal(cfg->username, "alice");
    assert_string_equal(cfg->password, "s3cret");
    assert_string_equal(cfg->namespace_, "default");
    gs_live_config_free(cfg);

    /* the other order: b.yaml wins current-context and "shared" */
    snprintf(env, sizeof env, "%s:%s", fx("b/b.yaml"), fx("a.yaml"));
    setenv("KUBECONFIG", env, 1);
    cfg = load(NULL, "ctx-a", &err);
    assert_non_null(cfg);
    assert_string_equal(cfg->server, "https://b.example:6443");
    assert_null(cfg->ca_pem);
    assert_string_equal(cfg->token, "token-from-b");
    gs_live_config_free(cfg);
    cfg = load(NULL, NULL, &err);
    assert_non_null(cfg);
    assert_string_equal(cfg->context, "ctx-b");
    gs_live_config_free(cfg);
    unsetenv("KUBECONFIG");
}

static void test_explicit_kubeconfig_no_merge(void **state)
{
    (void)state;
    clean_env();
    setenv("KUBECONFIG", fx("a.yaml"), 1);
    gs_error err;
    /* --kubeconfig b.yaml: $KUBECONFIG is not merged in, ctx-a does not exist */
    gs_live_config *cfg = load(fx("b/b.yaml"), "ctx-a", &err);
    assert_null(cfg);
    assert_string_equal(err.msg, "context \"ctx-a\" does not exist");
    cfg = load(fx("b/b.yaml"), NULL, &err);
    assert_non_null(cfg);
    assert_string_equal(cfg->context, "ctx-b");
    gs_live_config_free(cfg);
    /* an explicit file must exist */
    cfg = load(fx("nope.yaml"), NULL, &err);
    assert_null(cfg);
    assert_int_equal(err.code, GS_ERR_IO);
    unsetenv("KUBECONFIG");
}

static void test_no_configuration(void **state)
{
    (void)state;
    clean_env();
    gs_error err;
    gs_live_opts o = {0};
    gs_live_config *cfg = gs_live_config_load(&o, &err);
    assert_null(cfg);
    assert_non_null(strstr(err.msg, "no configuration has been provided"));
    /* ~/.kube/config is the default */
    char p[400];
    snprintf(p, sizeof p, "%s/.kube", tmp_dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/.kube/config", tmp_dir);
    FILE *in = fopen(fx("b/b.yaml"), "r");
    assert_non_null(in);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, in);
    fclose(in);
    buf[n] = '\0';
    /* without ca-b.pem next to it: the error names the kubeconfig and the line */
    write_text(p, buf);
    cfg = gs_live_config_load(&o, &err);
    assert_null(cfg);
    assert_int_equal(err.code, GS_ERR_IO);
    assert_string_equal(err.file, p);
    assert_int_equal(err.line, 13);
    assert_non_null(strstr(err.msg, "ca-b.pem"));
    gs_live_opts ob = {.context = "ctx-shared"};
    cfg = gs_live_config_load(&ob, &err);
    assert_null(cfg); /* same cluster only-b */
    unlink(p);
}

/* ---------------------------------------------------------------- user kinds */
static void test_user_kinds(void **state)
{
    (void)state;
    clean_env();
    gs_error err;
    gs_live_config *cfg = load(fx("users.yaml"), "cert-data", &err);
    assert_non_null(cfg);
    assert_non_null(cfg->ca_pem);
    assert_string_equal(cfg->ca_pem, "-----BEGIN CERTIFICATE-----\nQ0EtQQ==\n-----END CERTIFICATE-----\n");
    assert_int_equal(cfg->cert_len, strlen(cfg->cert_pem));
    assert_string_equal(cfg->cert_pem, "-----BEGIN CERTIFICATE-----\nY2xpZW50\n-----END CERTIFICATE-----\n");
    assert_string_equal(cfg->key_pem, "-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n");
    gs_live_cred cr;
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), 0);
    assert_null(cr.token);
    assert_ptr_equal(cr.cert_pem, cfg->cert_pem);
    gs_live_config_free(cfg);

    cfg = load(fx("users.yaml"), "token", &err);
    assert_non_null(cfg);
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), 0);
    assert_string_equal(cr.token, "static-token");
    assert_null(cr.cert_pem);
    gs_live_config_free(cfg);

    cfg = load(fx("users.yaml"), "basic", &err);
    assert_non_null(cfg);
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), 0);
    assert_string_equal(cr.username, "bob");
    assert_string_equal(cr.password, "hunter2");
    assert_null(cr.token);
    gs_live_config_free(cfg);

    cfg = load(fx("users.yaml"), "anonymous", &err);
    assert_non_null(cfg);
    assert_int_equal(cfg->auth, GS_LIVE_AUTH_NONE);
    assert_string_equal(cfg->user_name, "");
    gs_live_config_free(cfg);
}

static void test_token_file_rotation(void **state)
{
    (void)state;
    clean_env();
    char kc[400], tok[400], tok2[400];
    snprintf(kc, sizeof kc, "%s/tf.yaml", tmp_dir);
    snprintf(tok, sizeof tok, "%s/token", tmp_dir);
    snprintf(tok2, sizeof tok2, "%s/token.new", tmp_dir);
    write_text(kc, "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                   "clusters: [{name: c, cluster: {server: 'https://t.example'}}]\n"
                   "users: [{name: u, user: {tokenFile: token}}]\n"
                   "contexts: [{name: x, context: {cluster: c, user: u}}]\n");
    write_text(tok, "  first-token\n");
    gs_error err;
    gs_live_config *cfg = load(kc, NULL, &err);
    assert_non_null(cfg);
    assert_int_equal(cfg->auth, GS_LIVE_AUTH_TOKEN_FILE);
    assert_string_equal(cfg->token_file, tok); /* relative to the kubeconfig */
    gs_live_cred cr;
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), 0);
    assert_string_equal(cr.token, "first-token");
    uint64_t g = cr.generation;
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), 0);
    assert_int_equal(cr.generation, g); /* unchanged file: not re-read */
    /* rotation as the kubelet does it: a new file renamed over the old one */
    write_text(tok2, "second-token\n");
    assert_int_equal(rename(tok2, tok), 0);
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), 0);
    assert_string_equal(cr.token, "second-token");
    assert_true(cr.generation != g);
    /* an empty token file is an error */
    write_text(tok2, "\n");
    assert_int_equal(rename(tok2, tok), 0);
    gs_live_invalidate(cfg);
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), -1);
    assert_string_equal(err.msg, "read empty token from file");
    gs_live_config_free(cfg);
    unlink(tok);
    unlink(kc);
}

static void test_exec_plugin_cache(void **state)
{
    (void)state;
    clean_env();
    char count[400];
    snprintf(count, sizeof count, "%s/plugin-count", tmp_dir);
    unlink(count);
    setenv("GS_PLUGIN_COUNT", count, 1);
    setenv("GS_PLUGIN_EXPIRES", "2030-01-01T00:10:00Z", 1);
    gs_error err;
    gs_live_config *cfg = load(fx("users.yaml"), "exec", &err);
    assert_non_null(cfg);
    assert_int_equal(cfg->auth, GS_LIVE_AUTH_EXEC);
    assert_string_equal(cfg->exec.command, fx("./exec-plugin.sh"));
    assert_int_equal(cfg->exec.nargs, 2);
    assert_string_equal(cfg->exec.env[0], "GS_PLUGIN_GREETING=hello");
    const time_t t0 = 1893456000; /* 2030-01-01T00:00:00Z */
    gs_live_cred cr;
    assert_int_equal(gs_live_credentials(cfg, t0, &cr, &err), 0);
    assert_string_equal(cr.token, "hello-1");
    assert_int_equal(cr.expires, t0 + 600);
    assert_int_equal(gs_live_exec_runs(cfg), 1);
    /* cached until (just before) the expiry */
    assert_int_equal(gs_live_credentials(cfg, t0 + 300, &cr, &err), 0);
    assert_string_equal(cr.token, "hello-1");
    assert_int_equal(gs_live_exec_runs(cfg), 1);
    /* past the expiry: run again */
    assert_int_equal(gs_live_credentials(cfg, t0 + 601, &cr, &err), 0);
    assert_string_equal(cr.token, "hello-2");
    assert_int_equal(gs_live_exec_runs(cfg), 2);
    /* a 401: invalidated, re-run although not expired */
    gs_live_invalidate(cfg);
    assert_int_equal(gs_live_credentials(cfg, t0, &cr, &err), 0);
    assert_string_equal(cr.token, "hello-3");
    assert_int_equal(gs_live_exec_runs(cfg), 3);
    /* a failing plugin: its exit code and stderr in the message */
    setenv("KUBERNETES_EXEC_INFO", "ignored: the client sets its own", 1);
    gs_live_invalidate(cfg);
    cfg->exec.args[1] = (char *)"other";
    assert_int_equal(gs_live_credentials(cfg, t0, &cr, &err), -1);
    assert_int_equal(err.code, GS_ERR_IO);
    assert_non_null(strstr(err.msg, "failed with exit code 4: bad args: --cluster other"));
    unsetenv("KUBERNETES_EXEC_INFO");
    /* a plugin that is not there */
    cfg->exec.command = (char *)"gs-no-such-plugin-here";
    assert_int_equal(gs_live_credentials(cfg, t0, &cr, &err), -1);
    assert_non_null(strstr(err.msg, "exec: executable gs-no-such-plugin-here not found"));
    gs_live_config_free(cfg);
    unlink(count);
}

static void test_in_cluster(void **state)
{
    (void)state;
    clean_env();
    gs_error err;
    gs_live_opts o = {.in_cluster = true, .serviceaccount_dir = fx("sa")};
    gs_live_config *cfg = gs_live_config_load(&o, &err);
    assert_null(cfg);
    assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"));
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    cfg = gs_live_config_load(&o, &err);
    assert_non_null(cfg);
    assert_string_equal(cfg->server, "https://10.96.0.1:443");
    assert_string_equal(cfg->namespace_, "gpu-system");
    assert_non_null(strstr(cfg->ca_pem, "U0EtQ0E="));
    gs_live_cred cr;
    assert_int_equal(gs_live_credentials(cfg, 0, &cr, &err), 0);
    assert_string_equal(cr.token, "sa-token-1");
    gs_live_config_free(cfg);
    /* IPv6 service host, POD_NAMESPACE wins over the file */
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("POD_NAMESPACE", "from-env", 1);
    cfg = gs_live_config_load(&o, &err);
    assert_non_null(cfg);
    assert_string_equal(cfg->server, "https://[fd00::1]:443");
    assert_string_equal(cfg->namespace_, "from-env");
    gs_live_config_free(cfg);
    /* no kubeconfig anywhere: kubectl falls back to in-cluster */
    gs_live_opts fallback = {.serviceaccount_dir = fx("sa")};
    cfg = gs_live_config_load(&fallback, &err);
    if (!cfg)
        fail_msg("fallback: %s", err.msg);
    assert_string_equal(cfg->source, "in-cluster");
    gs_live_config_free(cfg);
    clean_env();
}

/* ---------------------------------------------------------------- errors */
static void test_errors_with_positions(void **state)
{
    (void)state;
    clean_env();
    gs_error err;
    assert_null(load(fx("err-missing-context.yaml"), NULL, &err));
    assert_string_equal(err.msg, "context \"nowhere\" does not exist");
    assert_string_equal(err.file, fx("err-missing-context.yaml"));
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 18);
    assert_int_equal(err.code, GS_ERR_INVALID);

    assert_null(load(fx("err-unknown-user.yaml"), NULL, &err));
    assert_string_equal(err.msg, "user \"ghost\" was not found for context \"ctx\"");
    assert_int_equal(err.line, 11);
    assert_int_equal(err.col, 11);

    assert_null(load(fx("err-bad-base64.yaml"), NULL, &err));
    assert_string_equal(err.msg,
                        "cluster \"c\": certificate-authority-data: illegal base64 data at input byte 3");
    assert_int_equal(err.line, 8);
    assert_int_equal(err.col, 33);

    /* a context naming a cluster that is not there; a kubeconfig of the wrong kind;
     * duplicate names in one file; token and basic together; removed auth providers */
    static const struct {
        const char *text, *msg;
        int line, col;
    } cases[] = {
        {"current-context: x\ncontexts: [{name: x, context: {cluster: gone}}]\n",
         "cluster \"gone\" was not found for context \"x\"", 2, 41},
        {"kind: Pod\n", "kind is \"Pod\", expected Config", 1, 7},
        {"clusters:\n- name: c\n  cluster: {server: s}\n- name: c\n  cluster: {server: t}\n",
         "duplicate name \"c\" in clusters", 4, 9},
        {"current-context: x\nclusters: [{name: c, cluster: {}}]\ncontexts: [{name: x, context: {cluster: c}}]\n",
         "no server found for cluster \"c\"", 2, 31},
        {"current-context: x\nclusters: [{name: c, cluster: {server: h}}]\n"
         "users: [{name: u, user: {token: t, username: a}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "more than one authentication method found for u; found [token basicAuth], only one is allowed", 3, 46},
        {"current-context: x\nclusters: [{name: c, cluster: {server: h}}]\n"
         "users: [{name: u, user: {auth-provider: {name: gcp}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "user \"u\": auth-provider \"gcp\" is not supported (removed in kubectl 1.26); use an exec credential plugin", 3, 41},
        {"current-context: x\nclusters: [{name: c, cluster: {server: h}}]\n"
         "users: [{name: u, user: {client-certificate-data: QQ==}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "client-key-data or client-key must be specified for u to use the clientCert authentication method", 3, 25},
        {"current-context: x\nclusters: [{name: c, cluster: {server: h, insecure-skip-tls-verify: true, certificate-authority-data: QQ==}}]\n"
         "contexts: [{name: x, context: {cluster: c}}]\n",
         "cluster \"c\": specifying a root certificates file with the insecure flag is not allowed", 2, 69},
        {"current-context: x\nclusters: [{name: c, cluster: {server: h}}]\n"
         "users: [{name: u, user: {exec: {command: p}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n",
         "apiVersion must be specified for u to use exec authentication plugin", 3, 32},
        {"current-context: x\nclusters: [{name: c, cluster: {server: \"https://\"}}]\n"
         "contexts: [{name: x, context: {cluster: c}}]\n",
         "cluster \"c\": server \"https://\": no host in the URL", 2, 40},
        {"current-context: x\nclusters: [{name: c, cluster: {server: 'h', x: [}}]\n", NULL, 2, 0},
    };
    char kc[400];
    snprintf(kc, sizeof kc, "%s/case.yaml", tmp_dir);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_text(kc, cases[i].text);
        gs_live_config *cfg = load(kc, NULL, &err);
        if (cfg)
            fail_msg("case %zu loaded", i);
        if (!cases[i].msg) { /* YAML syntax: the tree reader's own message */
            assert_int_equal(err.code, GS_ERR_PARSE);
            assert_string_equal(err.file, kc);
            continue;
        }
        if (strcmp(err.msg, cases[i].msg) || err.line != cases[i].line || err.col != cases[i].col)
            fail_msg("case %zu: %d:%d %s", i, err.line, err.col, err.msg);
        assert_string_equal(err.file, kc);
    }
    unlink(kc);
}

static void test_base64(void **state)
{
    (void)state;
    gs_arena a;
    gs_arena_init(&a, 0);
    char *out;
    size_t n, bad;
    assert_int_equal(gs_live_base64_decode(&a, "aGVsbG8=", 8, &out, &n, &bad), 0);
    assert_string_equal(out, "hello");
    assert_int_equal(gs_live_base64_decode(&a, "aGVs\nbG8h", 9, &out, &n, &bad), 0);
    assert_string_equal(out, "hello!");
    assert_int_equal(gs_live_base64_decode(&a, "aGU=", 4, &out, &n, &bad), 0);
    assert_int_equal(n, 2);
    assert_int_equal(gs_live_base64_decode(&a, "aGVsbG8", 7, &out, &n, &bad), -1); /* no padding */
    assert_int_equal(bad, 7);
    assert_int_equal(gs_live_base64_decode(&a, "aG Vs", 5, &out, &n, &bad), -1);
    assert_int_equal(bad, 2);
    assert_int_equal(gs_live_base64_decode(&a, "aGU=aGU=", 8, &out, &n, &bad), -1);
    assert_int_equal(bad, 4);
    assert_int_equal(gs_live_base64_decode(&a, "a===", 4, &out, &n, &bad), -1);
    assert_int_equal(bad, 1);
    gs_arena_free(&a);
}

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("GS_TEST_DATA");
    if (!base)
        return -1;
    snprintf(data_dir, sizeof data_dir, "%s/live", base);
    const char *t = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/gs-kubeconfig-XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(tmp_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char p[400];
    snprintf(p, sizeof p, "%s/.kube", tmp_dir);
    rmdir(p);
    rmdir(tmp_dir);
    return 0;
}

int main(void)
{
    if (!getenv("GS_TEST_DATA")) {
        fprintf(stderr, "GS_TEST_DATA not set\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_first_file_wins),
        cmocka_unit_test(test_explicit_kubeconfig_no_merge),
        cmocka_unit_test(test_no_configuration),
        cmocka_unit_test(test_user_kinds),
        cmocka_unit_test(test_token_file_rotation),
        cmocka_unit_test(test_exec_plugin_cache),
        cmocka_unit_test(test_in_cluster),
        cmocka_unit_test(test_errors_with_positions),
        cmocka_unit_test(test_base64),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
