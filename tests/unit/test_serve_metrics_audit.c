/* test_serve_metrics_audit.c - the webhook's metrics registry (Prometheus text: reviews,
 * denials by rule, the latency histogram) and its audit log (one JSON line per decision,
 * durable before return, group commit under concurrency, reopen for rotation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpusched/serve.h"

/* ---------------------------------------------------------------- metrics */
static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static void expect_line(const char *text, const char *line)
{
    if (!has_line(text, line))
        print_error("missing line: %s\n", line);
    assert_true(has_line(text, line));
}

static void test_metrics_render(void **state)
{
    (void)state;
    uint32_t nrules = 0;
    const gs_rule_info *rules = gs_rules(&nrules);
    assert_true(nrules >= 1);
    gs_metrics *m = gs_metrics_new();
    assert_non_null(m);

    gs_review_finding f[3] = {
        {rules[0].id, rules[0].name, 0, GS_SEV_ERROR, "e", false},
        {rules[0].id, rules[0].name, 0, GS_SEV_ERROR, "e2", false}, /* same rule: counted once */
        {"GSX", "x", -1, GS_SEV_WARNING, "w", false},
    };
    gs_review denied;
    memset(&denied, 0, sizeof denied);
    denied.endpoint = GS_ENDPOINT_VALIDATE;
    denied.allowed = false;
    denied.findings = f;
    denied.nfindings = 3;
    gs_metrics_observe_review(m, &denied, 300000);     /* 0.3 ms */
    gs_metrics_observe_review(m, &denied, 2000000000); /* 2 s: only +Inf */

    gs_review patched;
    memset(&patched, 0, sizeof patched);
    patched.endpoint = GS_ENDPOINT_MUTATE;
    patched.allowed = true;
    patched.patch = "[]";
    gs_metrics_observe_review(m, &patched, 100000); /* exactly on a bound: le="0.0001" */

    gs_review unreadable;
    memset(&unreadable, 0, sizeof unreadable);
    unreadable.endpoint = GS_ENDPOINT_VALIDATE;
    unreadable.allowed = false;
    unreadable.object_error = "bad";
    gs_metrics_observe_review(m, &unreadable, 1000);

    gs_metrics_observe_http_error(m, 400);
    gs_metrics_observe_http_error(m, 413);
    gs_metrics_observe_http_error(m, 413);
    gs_metrics_observe_http_error(m, 418);
    gs_metrics_observe_audit_error(m);
    gs_metrics_observe_cert_reload(m, true);
    gs_metrics_observe_cert_reload(m, false);
    gs_metrics_set_in_flight(m, 3);
    gs_metrics_set_in_flight(m, -1);

    gs_strbuf sb = GS_STRBUF_INIT;
    gs_metrics_render(m, &sb);
    const char *t = gs_strbuf_cstr(&sb);
    char line[256];
    expect_line(t, "# TYPE gpusched_webhook_reviews_total counter");
    expect_line(t, "gpusched_webhook_reviews_total{endpoint=\"validate\",verdict=\"denied\"} 3");
    expect_line(t, "gpusched_webhook_reviews_total{endpoint=\"validate\",verdict=\"allowed\"} 0");
    expect_line(t, "gpusched_webhook_reviews_total{endpoint=\"mutate\",verdict=\"allowed\"} 1");
    expect_line(t, "gpusched_webhook_patches_total 1");
    snprintf(line, sizeof line, "gpusched_webhook_denials_total{rule=\"%s\"} 2", rules[0].id);
    expect_line(t, line);
    expect_line(t, "gpusched_webhook_denials_total{rule=\"unreadable\"} 1");
    expect_line(t, "gpusched_webhook_warnings_total{rule=\"other\"} 2");
    expect_line(t, "gpusched_webhook_http_errors_total{code=\"400\"} 1");
    expect_line(t, "gpusched_webhook_http_errors_total{code=\"413\"} 2");
    expect_line(t, "gpusched_webhook_http_errors_total{code=\"other\"} 1");
    expect_line(t, "gpusched_webhook_audit_errors_total 1");
    expect_line(t, "gpusched_webhook_cert_reloads_total{result=\"ok\"} 1");
    expect_line(t, "gpusched_webhook_cert_reloads_total{result=\"error\"} 1");
    expect_line(t, "gpusched_webhook_requests_in_flight 2");
    /* histogram: cumulative buckets, +Inf = count, sum in seconds */
    expect_line(t, "# TYPE gpusched_webhook_review_duration_seconds histogram");
    expect_line(t, "gpusched_webhook_review_duration_seconds_bucket{endpoint=\"validate\",le=\"0.0001\"} 1");
    expect_line(t, "gpusched_webhook_review_duration_seconds_bucket{endpoint=\"validate\",le=\"0.00025\"} 1");
    expect_line(t, "gpusched_webhook_review_duration_seconds_bucket{endpoint=\"validate\",le=\"0.0005\"} 2");
    expect_line(t, "gpusched_webhook_review_duration_seconds_bucket{endpoint=\"validate\",le=\"1\"} 2");
    expect_line(t, "gpusched_webhook_review_duration_seconds_bucket{endpoint=\"validate\",le=\"+Inf\"} 3");
    expect_line(t, "gpusched_webhook_review_duration_seconds_count{endpoint=\"validate\"} 3");
    expect_line(t, "gpusched_webhook_review_duration_seconds_sum{endpoint=\"validate\"} 2.000301000");
    expect_line(t, "gpusched_webhook_review_duration_seconds_bucket{endpoint=\"mutate\",le=\"0.0001\"} 1");
    /* every line is a comment or "name{labels} value" */
    for (const char *p = t; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        if (*p != '#') {
            const char *sp = memchr(p, ' ', (size_t)(nl - p));
            assert_non_null(sp);
            assert_true(strncmp(p, "gpusched_webhook_", 17) == 0);
        }
        p = nl + 1;
    }
    gs_strbuf_free(&sb);
    gs_metrics_free(m);
}

/* Counting from many threads loses nothing. */
static gs_metrics *shared_metrics;
static void *observe_many(void *arg)
{
    (void)arg;
    gs_review rv;
    memset(&rv, 0, sizeof rv);
    rv.allowed = true;
    for (int i = 0; i < 10000; i++)
        gs_metrics_observe_review(shared_metrics, &rv, 1000);
    return NULL;
}

static void test_metrics_threads(void **state)
{
    (void)state;
    shared_metrics = gs_metrics_new();
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, observe_many, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_metrics_render(shared_metrics, &sb);
    expect_line(gs_strbuf_cstr(&sb), "gpusched_webhook_reviews_total{endpoint=\"validate\",verdict=\"allowed\"} 40000");
    expect_line(gs_strbuf_cstr(&sb), "gpusched_webhook_review_duration_seconds_count{endpoint=\"validate\"} 40000");
    gs_strbuf_free(&sb);
    gs_metrics_free(shared_metrics);
}

/* ---------------------------------------------------------------- audit */
static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gs-audit-XXXXXX", base && base[0] ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path, size_t *len)
{
    gs_error err;
    char *s = gs_read_file(path, 64 << 20, len, &err);
    assert_non_null(s);
    return s;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_audit_format(void **state)
{
    (void)state;
    gs_review rv;
    memset(&rv, 0, sizeof rv);
    rv.endpoint = GS_ENDPOINT_MUTATE;
    rv.req.uid = "uid-7";
    rv.req.username = "system:serviceaccount:ci:deployer";
    rv.req.operation = "CREATE";
    rv.req.group = "";
    rv.req.version = "v1";
    rv.req.kind = "Pod";
    rv.req.namespace_ = "team-a";
    rv.req.name = "train\"0";
    rv.allowed = true;
    gs_review_finding f = {"GS015", "n", 14, GS_SEV_WARNING, "memory not enforced", false};
    rv.findings = &f;
    rv.nfindings = 1;
    const char *w = "GS015: memory not enforced";
    rv.warnings = &w;
    rv.nwarnings = 1;
    rv.patch = "[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[]}]";
    rv.patch_len = strlen(rv.patch);
    gs_strbuf sb = GS_STRBUF_INIT;
    /* 2024-05-01T10:00:00.123Z */
    gs_audit_format(&rv, 1714557600123LL, "GS001,GS015", "CN=kube-apiserver", 250, &sb);
    assert_string_equal(
        gs_strbuf_cstr(&sb),
        "{\"time\":\"2024-05-01T10:00:00.123Z\",\"uid\":\"uid-7\",\"claimedUser\":\"system:serviceaccount:ci:deployer\",\"caller\":\"CN=kube-apiserver\","
        "\"endpoint\":\"mutate\",\"operation\":\"CREATE\",\"object\":{\"group\":\"\",\"version\":\"v1\","
        "\"kind\":\"Pod\",\"namespace\":\"team-a\",\"name\":\"train\\\"0\"},\"dryRun\":false,"
        "\"verdict\":\"allowed\",\"code\":200,\"rules\":[{\"id\":\"GS015\",\"severity\":\"warning\","
        "\"suppressed\":false,\"message\":\"memory not enforced\"}],\"warnings\":[\"GS015: memory not enforced\"],"
        "\"message\":null,\"patch\":[{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[]}],"
        "\"skipped\":null,\"objectError\":null,\"ruleset\":\"GS001,GS015\",\"latencyUs\":250}\n");
    gs_strbuf_reset(&sb);
    rv.allowed = false;
    rv.status_code = 403;
    rv.message = "GS009 x: y";
    rv.patch = NULL;
    rv.message = "GS009 x: cut \xC3"; /* a message cut inside a character */
    rv.req.name = "bad\xFFname";
    gs_audit_format(&rv, 0, NULL, NULL, 1, &sb);
    const char *t = gs_strbuf_cstr(&sb);
    assert_non_null(strstr(t, "\"caller\":null"));
    assert_non_null(strstr(t, "\"message\":\"GS009 x: cut \xEF\xBF\xBD\""));
    assert_non_null(strstr(t, "\"name\":\"bad\xEF\xBF\xBDname\""));
    gs_strbuf_reset(&sb);
    rv.message = "GS009 x: y";
    gs_audit_format(&rv, 0, NULL, NULL, 1, &sb);
    t = gs_strbuf_cstr(&sb);
    assert_non_null(strstr(t, "\"time\":\"1970-01-01T00:00:00.000Z\""));
    assert_non_null(strstr(t, "\"verdict\":\"denied\",\"code\":403"));
    assert_non_null(strstr(t, "\"message\":\"GS009 x: y\",\"patch\":null"));
    assert_non_null(strstr(t, "\"ruleset\":null"));
    assert_int_equal(count_lines(t), 1);
    gs_strbuf_free(&sb);
}

static void test_audit_ruleset(void **state)
{
    (void)state;
    uint32_t n = 0;
    const gs_rule_info *rules = gs_rules(&n);
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_arena a;
    gs_arena_init(&a, 0);
    const char *all = gs_audit_ruleset(&cfg, &a);
    assert_non_null(all);
    assert_true(strncmp(all, rules[0].id, strlen(rules[0].id)) == 0);
    cfg.disabled[0] = true;
    const char *fewer = gs_audit_ruleset(&cfg, &a);
    assert_null(strstr(fewer, rules[0].id));
    assert_true(strlen(fewer) < strlen(all));
    gs_arena_free(&a);
    gs_check_config_free(&cfg);
}

static void test_audit_append_and_reopen(void **state)
{
    (void)state;
    char path[512], rotated[512];
    snprintf(path, sizeof path, "%s/audit.log", tmpdir);
    snprintf(rotated, sizeof rotated, "%s/audit.log.1", tmpdir);
    /* appends to what is there */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"old\":true}\n", f);
    fclose(f);
    gs_error err;
    gs_audit *a = gs_audit_open(path, &err);
    assert_non_null(a);
    assert_int_equal(gs_audit_write(a, "{\"n\":1}\n", 8, &err), 0);
    size_t len;
    char *s = slurp(path, &len);
    assert_string_equal(s, "{\"old\":true}\n{\"n\":1}\n");
    free(s);
    /* rotation: move the file away, reopen, new lines go to a new file */
    assert_int_equal(rename(path, rotated), 0);
    assert_int_equal(gs_audit_write(a, "{\"n\":2}\n", 8, &err), 0); /* still the old file */
    assert_int_equal(gs_audit_reopen(a, &err), 0);
    assert_int_equal(gs_audit_write(a, "{\"n\":3}\n", 8, &err), 0);
    s = slurp(rotated, &len);
    assert_string_equal(s, "{\"old\":true}\n{\"n\":1}\n{\"n\":2}\n");
    free(s);
    s = slurp(path, &len);
    assert_string_equal(s, "{\"n\":3}\n");
    free(s);
    /* a file the log creates is not readable by others (mode 0640 before the umask) */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0007, 0);
    /* the two halves: lines are numbered in order, a sync covers every earlier line */
    uint64_t s1 = 0, s2 = 0;
    assert_int_equal(gs_audit_append(a, "{\"n\":4}\n", 8, &s1, &err), 0);
    assert_int_equal(gs_audit_append(a, "{\"n\":5}\n", 8, &s2, &err), 0);
    assert_int_equal(s2, s1 + 1);
    assert_int_equal(gs_audit_sync(a, s2, &err), 0);
    assert_int_equal(gs_audit_sync(a, s1, &err), 0); /* already durable */
    s = slurp(path, &len);
    assert_string_equal(s, "{\"n\":3}\n{\"n\":4}\n{\"n\":5}\n");
    free(s);
    gs_audit_close(a);
    /* a torn last line (a crash mid-write) is cut when the log is opened, and when it
     * is reopened; a file of one torn line becomes empty */
    f = fopen(path, "a");
    assert_non_null(f);
    fputs("{\"torn\":", f);
    fclose(f);
    a = gs_audit_open(path, &err);
    assert_non_null(a);
    assert_int_equal(gs_audit_repaired_bytes(a), 8);
    assert_int_equal(gs_audit_write(a, "{\"n\":6}\n", 8, &err), 0);
    f = fopen(path, "a");
    assert_non_null(f);
    fputs("{\"torn\":tr", f);
    fclose(f);
    assert_int_equal(gs_audit_recover(a, 0, &err), 0);
    assert_int_equal(gs_audit_repaired_bytes(a), 8 + 10);
    assert_int_equal(gs_audit_write(a, "{\"n\":7}\n", 8, &err), 0);
    gs_audit_close(a);
    s = slurp(path, &len);
    assert_string_equal(s, "{\"n\":3}\n{\"n\":4}\n{\"n\":5}\n{\"n\":6}\n{\"n\":7}\n");
    free(s);
    char torn[600];
    snprintf(torn, sizeof torn, "%s/torn.log", tmpdir);
    f = fopen(torn, "w");
    assert_non_null(f);
    fputs("{\"only\":", f);
    fclose(f);
    a = gs_audit_open(torn, &err);
    assert_non_null(a);
    gs_audit_close(a);
    s = slurp(torn, &len);
    assert_int_equal(len, 0);
    free(s);
    /* a FIFO at the path is refused at once, not waited on */
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/fifo.log", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(gs_audit_open(fifo, &err));
    assert_non_null(strstr(err.msg, "not a regular file"));
    /* a path that cannot be opened */
    assert_null(gs_audit_open(tmpdir, &err)); /* a directory */
    assert_int_equal(err.code, GS_ERR_IO);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/dir/audit.log", tmpdir);
    assert_null(gs_audit_open(missing, &err));
    assert_int_equal(err.code, GS_ERR_IO);
    assert_non_null(strstr(err.msg, "cannot open the audit log"));
}

/* Group commit: many writers, every line whole and present exactly once. */
typedef struct writer_arg {
    gs_audit *a;
    int id;
    int failures;
} writer_arg;

#define WRITERS 8
#define LINES_PER_WRITER 200

static void *writer(void *p)
{
    writer_arg *w = p;
    for (int i = 0; i < LINES_PER_WRITER; i++) {
        char line[128];
        int n = snprintf(line, sizeof line, "{\"writer\":%d,\"line\":%d,\"pad\":\"%040d\"}\n", w->id, i, i);
        gs_error err;
        if (gs_audit_write(w->a, line, (size_t)n, &err) != 0)
            w->failures++;
    }
    return NULL;
}

static void test_audit_concurrent(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/concurrent.log", tmpdir);
    gs_error err;
    gs_audit *a = gs_audit_open(path, &err);
    assert_non_null(a);
    pthread_t th[WRITERS];
    writer_arg args[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        args[i] = (writer_arg){a, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, writer, &args[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    gs_audit_close(a);
    size_t len;
    char *s = slurp(path, &len);
    assert_int_equal(count_lines(s), WRITERS * LINES_PER_WRITER);
    static bool seen[WRITERS][LINES_PER_WRITER];
    memset(seen, 0, sizeof seen);
    char *save = NULL;
    for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int w = -1, i = -1, pad = -1;
        assert_int_equal(sscanf(l, "{\"writer\":%d,\"line\":%d,\"pad\":\"%d\"}", &w, &i, &pad), 3);
        assert_true(w >= 0 && w < WRITERS && i >= 0 && i < LINES_PER_WRITER && pad == i);
        assert_false(seen[w][i]);
        seen[w][i] = true;
    }
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_render),
        cmocka_unit_test(test_metrics_threads),
        cmocka_unit_test(test_audit_format),
        cmocka_unit_test(test_audit_ruleset),
        cmocka_unit_test(test_audit_append_and_reopen),
        cmocka_unit_test(test_audit_concurrent),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
