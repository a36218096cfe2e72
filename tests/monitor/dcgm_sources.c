/*
 * dcgm_sources.c - the utilization sources (lib/monitor/dcgm.c) against servers on loopback:
 * dcgm-endpoint.py serving dcgm-exporter's text (tests/data/dcgm fixtures, both host label
 * spellings, MIG, a cut exposition) and fake-prometheus.py answering /api/v1/query in
 * Prometheus's format. Checks the samples read, the node filled in for discovered
 * endpoints, each kind of per-source failure, the PromQL sent, and the idle tracker fed from
 * both sources.
 *
 *   dcgm_sources DCGM_ENDPOINT_PY FAKE_PROMETHEUS_PY DATA_DIR
 *
 * Exit 0 when every check passed, 1 on a failed check, 77 (skip) without python3.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpusched/dcgm.h"

static int failures;
#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);  \
            failures++;                                                            \
        }                                                                          \
    } while (0)

/* ---------------------------------------------------------------- servers */

typedef struct server {
    pid_t pid;
    int port;
} server;

static server servers[8];
static int nservers;

static void stop_servers(void)
{
    for (int i = 0; i < nservers; i++) {
        if (servers[i].pid > 0) {
            kill(servers[i].pid, SIGTERM);
            waitpid(servers[i].pid, NULL, 0);
            servers[i].pid = 0;
        }
    }
}

typedef struct pending {
    FILE *out;
    int *port;
} pending;

/* Start `python3 script arg --port 0` (its stdout on a pipe); -1 when it cannot be run. */
static int spawn(const char *script, const char *arg, pending *pd, int *port)
{
    int fd[2];
    if (pipe(fd) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execlp("python3", "python3", script, arg, "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    servers[nservers++] = (server){pid, -1};
    pd->out = fdopen(fd[0], "r");
    pd->port = port;
    *port = -1;
    return pd->out ? 0 : -1;
}

/* Read each server's "listening on http://127.0.0.1:PORT" line (they start in parallel).
 * 77 when python3 could not be run, -1 when a server did not start, else 0. */
static int wait_started(pending *pd, int n)
{
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char line[256];
        if (pd[i].out && fgets(line, sizeof line, pd[i].out)) {
            const char *p = strstr(line, "127.0.0.1:");
            if (p)
                *pd[i].port = atoi(p + 10);
        }
        if (pd[i].out)
            fclose(pd[i].out);
        servers[i].port = *pd[i].port;
        if (*pd[i].port < 0) {
            int st = 0;
            if (waitpid(servers[i].pid, &st, 0) == servers[i].pid) {
                servers[i].pid = 0;
                if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
                    return 77;
            }
            rc = -1;
        }
    }
    return rc;
}

/* ---------------------------------------------------------------- helpers */

static char tmpdir[256];

static char *slurp(const char *path, size_t *len)
{
    gs_error err;
    gs_error_clear(&err);
    char *d = gs_read_file(path, 0, len, &err);
    if (!d) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        exit(1);
    }
    return d;
}

static void spill(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* data with every `from` replaced by `to`, into path */
static void spill_replaced(const char *path, const char *data, const char *from, const char *to)
{
    gs_strbuf b = GS_STRBUF_INIT;
    size_t fl = strlen(from);
    for (const char *p = data, *q; *p; p = q + fl) {
        q = strstr(p, from);
        if (!q) {
            gs_strbuf_puts(&b, p);
            break;
        }
        gs_strbuf_add(&b, p, (size_t)(q - p));
        gs_strbuf_puts(&b, to);
    }
    spill(path, gs_strbuf_cstr(&b), b.len);
    gs_strbuf_free(&b);
}

typedef struct failure {
    gs_monitor_util_source src;
    char target[300];
    gs_error e;
} failure;

typedef struct failures_seen {
    failure v[16];
    int n;
} failures_seen;

static void on_error(void *ctx, gs_monitor_util_source src, const char *target, const gs_error *e)
{
    failures_seen *f = ctx;
    if (f->n < 16) {
        f->v[f->n].src = src;
        snprintf(f->v[f->n].target, sizeof f->v[f->n].target, "%s", target);
        f->v[f->n].e = *e;
    }
    f->n++;
}

static const failure *failure_for(const failures_seen *f, const char *target)
{
    for (int i = 0; i < f->n && i < 16; i++)
        if (strcmp(f->v[i].target, target) == 0)
            return &f->v[i];
    return NULL;
}

static const gs_util_sample *find(const gs_util_set *s, const char *node, gs_util_metric m, int gpu, int gi)
{
    for (size_t i = 0; i < s->n; i++) {
        const gs_util_sample *x = &s->v[i];
        if (strcmp(x->node, node) == 0 && x->metric == m && x->gpu == gpu && x->mig_instance == gi)
            return x;
    }
    return NULL;
}

static size_t count_node(const gs_util_set *s, const char *node)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        k += strcmp(s->v[i].node, node) == 0;
    return k;
}

static bool near(double a, double b) { return a - b < 1e-9 && b - a < 1e-9; }

/* ---------------------------------------------------------------- scrapes */

static void test_scrapes(int p_h100, int p_mig, int p_l4, int p_cut)
{
    char u[4][128];
    snprintf(u[0], sizeof u[0], "http://127.0.0.1:%d/metrics", p_h100);
    snprintf(u[1], sizeof u[1], "http://127.0.0.1:%d/metrics", p_mig);
    snprintf(u[2], sizeof u[2], "http://127.0.0.1:%d/metrics", p_l4);
    snprintf(u[3], sizeof u[3], "http://127.0.0.1:%d/metrics", p_cut);
    gs_util_set s;
    gs_util_set_init(&s);
    gs_error err;
    gs_error_clear(&err);
    failures_seen fs = {0};
    gs_dcgm_round info;

    /* three good endpoints, two transfers at a time (a slot is reused) */
    const char *ok3[] = {u[0], u[1], u[2]};
    gs_dcgm_opts o = {.mode = GS_DCGM_URLS, .urls = ok3, .nurls = 3, .parallel = 2};
    int rc = gs_dcgm_collect(NULL, &o, &s, &info, on_error, &fs, &err);
    if (rc < 0)
        fprintf(stderr, "collect: %s\n", err.msg);
    CHECK(rc == 3);
    CHECK(fs.n == 0);
    CHECK(info.sources == 3 && info.ok == 3 && info.failed == 0);
    CHECK(info.bytes > 10000);
    /* H100: 8 GPU_UTIL + 8 GR; A100 MIG: 1 GPU_UTIL + 4 GR; L4: 1 + 1 (blank, NaN dropped) */
    CHECK(s.n == 16 + 5 + 2);
    CHECK(s.dropped == 2);
    const gs_util_sample *x = find(&s, "gpu-node-a", GS_UTIL_GPU_UTIL, 2, -1); /* Hostname= */
    CHECK(x && near(x->util, 0.97) && strcmp(x->uuid, "GPU-5f3e9a02-4d1c-1002-9e2a-6c1f0b7d3a02") == 0);
    x = find(&s, "gpu-node-mig", GS_UTIL_GR_ENGINE_ACTIVE, 0, 5);
    CHECK(x && near(x->util, 0.412345) && strcmp(x->mig_profile, "2g.20gb") == 0);
    x = find(&s, "gpu-node-b", GS_UTIL_GPU_UTIL, 1, -1); /* hostname= */
    CHECK(x && near(x->util, 0.62));
    CHECK(count_node(&s, "gpu-node-a") == 16);

    /* failures, each reported once, the good endpoint still read: a cut exposition, a 404,
     * a closed port */
    char nope[128], closed[64];
    snprintf(nope, sizeof nope, "http://127.0.0.1:%d/nope", p_h100);
    snprintf(closed, sizeof closed, "http://127.0.0.1:1/metrics");
    const char *mixed[] = {u[3], nope, u[2], closed};
    o = (gs_dcgm_opts){.mode = GS_DCGM_URLS, .urls = mixed, .nurls = 4};
    memset(&fs, 0, sizeof fs);
    rc = gs_dcgm_collect(NULL, &o, &s, &info, on_error, &fs, &err);
    CHECK(rc == 1);
    CHECK(info.sources == 4 && info.ok == 1 && info.failed == 3);
    CHECK(fs.n == 3);
    CHECK(s.n == 2); /* the L4's; the cut exposition's samples are taken back */
    const failure *f = failure_for(&fs, u[3]);
    CHECK(f && f->src == GS_MON_UTIL_ENDPOINT && f->e.code == GS_ERR_PARSE);
    CHECK(f && f->e.line == 28 && f->e.col == 135 && strcmp(f->e.file, u[3]) == 0);
    f = failure_for(&fs, nope);
    CHECK(f && f->e.code == GS_ERR_IO && strstr(f->e.msg, "HTTP 404") && strstr(f->e.msg, "404 page not found"));
    f = failure_for(&fs, closed);
    CHECK(f && f->e.code == GS_ERR_IO && strstr(f->e.msg, "cannot read"));

    /* the body limit */
    const char *one[] = {u[0]};
    o = (gs_dcgm_opts){.mode = GS_DCGM_URLS, .urls = one, .nurls = 1, .max_body = 4096};
    memset(&fs, 0, sizeof fs);
    rc = gs_dcgm_collect(NULL, &o, &s, &info, on_error, &fs, &err);
    CHECK(rc == 0 && fs.n == 1 && s.n == 0);
    CHECK(fs.v[0].e.code == GS_ERR_LIMIT && strstr(fs.v[0].e.msg, "4096"));
    gs_util_set_free(&s);
}

/* ---------------------------------------------------------------- discovery */

static void test_discovery(const char *h100_path, const char *h100, int port)
{
    gs_error err;
    gs_error_clear(&err);
    gs_live_store *st = gs_live_store_new(&err);
    CHECK(st);
    const char *pod =
        "{\"metadata\":{\"name\":\"nvidia-dcgm-exporter-abcde\",\"namespace\":\"gpu-operator\","
        "\"labels\":{\"app\":\"nvidia-dcgm-exporter\"}},\"spec\":{\"nodeName\":\"node-from-api\","
        "\"containers\":[{\"name\":\"nvidia-dcgm-exporter\",\"image\":\"x\"}]},"
        "\"status\":{\"phase\":\"Running\",\"podIP\":\"127.0.0.1\"}}";
    CHECK(gs_live_store_put(st, GS_LIVE_POD, pod, strlen(pod), &err) == 0);
    gs_util_set s;
    gs_util_set_init(&s);
    failures_seen fs = {0};
    gs_dcgm_round info;
    gs_dcgm_opts o = {.mode = GS_DCGM_DISCOVER, .port = (unsigned)port};

    /* no host label (dcgm-exporter --no-hostname): the pod's node */
    spill_replaced(h100_path, h100, "Hostname=\"gpu-node-a\",", "");
    CHECK(gs_dcgm_collect(st, &o, &s, &info, on_error, &fs, &err) == 1);
    CHECK(fs.n == 0 && s.n == 16 && count_node(&s, "node-from-api") == 16);

    /* the idle tracker fed from it: GPUs 0, 1, 6 (0 %) and 4 (3 %, GR 0.0279) */
    gs_idle_tracker *t = gs_idle_new(0.05, 0, &err);
    CHECK(t);
    CHECK(gs_idle_observe(t, &s, 1000, &err) == 0);
    const gs_idle_gpu *l;
    CHECK(gs_idle_list(t, 1000, &l) == 4);
    CHECK(strcmp(l[0].node, "node-from-api") == 0);
    gs_idle_free(t);

    /* the host label is the exporter pod's own name (no NODE_NAME): the pod's node */
    spill_replaced(h100_path, h100, "Hostname=\"gpu-node-a\"", "Hostname=\"nvidia-dcgm-exporter-abcde\"");
    CHECK(gs_dcgm_collect(st, &o, &s, &info, on_error, &fs, &err) == 1);
    CHECK(s.n == 16 && count_node(&s, "node-from-api") == 16);

    /* a real host label is kept */
    spill(h100_path, h100, strlen(h100));
    CHECK(gs_dcgm_collect(st, &o, &s, &info, on_error, &fs, &err) == 1);
    CHECK(s.n == 16 && count_node(&s, "gpu-node-a") == 16);
    gs_util_set_free(&s);
    gs_live_store_free(st);
}

/* ---------------------------------------------------------------- Prometheus */

static const char answers_windowed[] =
    "{\"max_over_time(DCGM_FI_DEV_GPU_UTIL[1800s]) and DCGM_FI_DEV_GPU_UTIL offset 1800s\": ["
    " {\"metric\": {\"DCGM_FI_DRIVER_VERSION\": \"550.90.07\", \"Hostname\": \"gpu-node-a\","
    "   \"UUID\": \"GPU-5f3e9a00-4d1c-1000-9e2a-6c1f0b7d3a00\", \"container\": \"nvidia-dcgm-exporter\","
    "   \"device\": \"nvidia0\", \"endpoint\": \"gpu-metrics\", \"exported_container\": \"trainer\","
    "   \"exported_namespace\": \"ml-team\", \"exported_pod\": \"train-llm-0\", \"gpu\": \"0\","
    "   \"instance\": \"10.0.3.17:9400\", \"job\": \"nvidia-dcgm-exporter\","
    "   \"modelName\": \"NVIDIA H100 80GB HBM3\", \"namespace\": \"gpu-operator\","
    "   \"pci_bus_id\": \"00000000:18:00.0\", \"pod\": \"nvidia-dcgm-exporter-x7k2p\","
    "   \"service\": \"nvidia-dcgm-exporter\"},"
    "  \"value\": [1764632061.337, \"2\"]},"
    " {\"metric\": {\"Hostname\": \"gpu-node-a\", \"UUID\": \"GPU-5f3e9a01-4d1c-1001-9e2a-6c1f0b7d3a01\","
    "   \"gpu\": \"1\", \"instance\": \"10.0.3.17:9400\", \"job\": \"nvidia-dcgm-exporter\"},"
    "  \"value\": [1764632061.337, \"97\"]}],"
    "\"max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[1800s]) and DCGM_FI_PROF_GR_ENGINE_ACTIVE offset 1800s\": ["
    " {\"metric\": {\"hostname\": \"gpu-node-mig\", \"UUID\": \"GPU-c0ffee00-4d1c-1000-9e2a-6c1f0b7d3a00\","
    "   \"gpu\": \"0\", \"GPU_I_PROFILE\": \"1g.10gb\", \"GPU_I_ID\": \"13\","
    "   \"exported_namespace\": \"research\", \"exported_pod\": \"nb-ab12\"},"
    "  \"value\": [1764632061.337, \"0.012\"]}]}\n";

static const char answers_failing[] =
    "{\"max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[1800s]) and DCGM_FI_PROF_GR_ENGINE_ACTIVE offset 1800s\":"
    " \"unavailable\"}\n";

static const char answers_instant[] =
    "{\"DCGM_FI_DEV_GPU_UTIL\": [{\"metric\": {\"__name__\": \"DCGM_FI_DEV_GPU_UTIL\","
    "  \"Hostname\": \"gpu-node-a\", \"gpu\": \"3\", \"UUID\": \"GPU-x3\"}, \"value\": [1764632100, \"0\"]}],"
    " \"DCGM_FI_PROF_GR_ENGINE_ACTIVE\": []}\n";

static bool log_has(const char *log, const char *q)
{
    size_t len;
    char *d = slurp(log, &len);
    char want[300];
    snprintf(want, sizeof want, "%s\n", q);
    bool ok = strstr(d, want) != NULL;
    free(d);
    return ok;
}

static void test_prometheus(const char *answers, int port)
{
    char base[128], log[300], t_util[200], t_gr[200];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/", port); /* the trailing '/' is dropped */
    snprintf(log, sizeof log, "%s.log", answers);
    snprintf(t_util, sizeof t_util, "http://127.0.0.1:%d DCGM_FI_DEV_GPU_UTIL", port);
    snprintf(t_gr, sizeof t_gr, "http://127.0.0.1:%d DCGM_FI_PROF_GR_ENGINE_ACTIVE", port);
    gs_util_set s;
    gs_util_set_init(&s);
    gs_error err;
    gs_error_clear(&err);
    failures_seen fs = {0};
    gs_dcgm_round info;

    /* windowed maxima: the results carry no __name__; the family is the query's */
    spill(answers, answers_windowed, strlen(answers_windowed));
    gs_dcgm_opts o = {.mode = GS_DCGM_PROMETHEUS, .prometheus = base, .window_ms = 1800000};
    int rc = gs_dcgm_collect(NULL, &o, &s, &info, on_error, &fs, &err);
    if (rc < 0 || fs.n)
        fprintf(stderr, "prometheus: %s %s\n", err.msg, fs.n ? fs.v[0].e.msg : "");
    CHECK(rc == 2 && fs.n == 0 && info.ok == 2);
    CHECK(s.n == 3);
    const gs_util_sample *x = find(&s, "gpu-node-a", GS_UTIL_GPU_UTIL, 0, -1);
    CHECK(x && near(x->util, 0.02) && strcmp(x->pod, "train-llm-0") == 0 && strcmp(x->ns, "ml-team") == 0);
    CHECK(x && x->ts_ms == 1764632061337);
    x = find(&s, "gpu-node-mig", GS_UTIL_GR_ENGINE_ACTIVE, 0, 13);
    CHECK(x && near(x->util, 0.012) && strcmp(x->pod, "nb-ab12") == 0);
    CHECK(log_has(log, "max_over_time(DCGM_FI_DEV_GPU_UTIL[1800s]) and DCGM_FI_DEV_GPU_UTIL offset 1800s"));
    CHECK(log_has(log, "max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[1800s]) and "
                       "DCGM_FI_PROF_GR_ENGINE_ACTIVE offset 1800s"));

    /* with the look-back one round covers the window: GPU 0 and the MIG instance are idle */
    gs_idle_tracker *t = gs_idle_new(0.05, 1800000, &err);
    CHECK(t);
    gs_idle_set_lookback(t, gs_dcgm_lookback_ms(&o));
    CHECK(gs_idle_observe(t, &s, 1764632062000, &err) == 0);
    const gs_idle_gpu *l;
    CHECK(gs_idle_list(t, 1764632062000, &l) == 2);
    CHECK(strcmp(l[0].pod, "train-llm-0") == 0 && strcmp(l[1].mig_instance, "13") == 0);
    CHECK(l[0].idle_since_ms == 1764632061337 - 1800000);
    gs_idle_free(t);

    /* refusals in Prometheus's words: 400 bad_data (unknown here), 503 unavailable */
    spill(answers, answers_failing, strlen(answers_failing));
    memset(&fs, 0, sizeof fs);
    rc = gs_dcgm_collect(NULL, &o, &s, &info, on_error, &fs, &err);
    CHECK(rc == 0 && fs.n == 2 && info.failed == 2 && s.n == 0);
    const failure *f = failure_for(&fs, t_util);
    CHECK(f && f->src == GS_MON_UTIL_PROMETHEUS && strstr(f->e.msg, "HTTP 400") && strstr(f->e.msg, "bad_data"));
    f = failure_for(&fs, t_gr);
    CHECK(f && strstr(f->e.msg, "HTTP 503") && strstr(f->e.msg, "unavailable"));

    /* no window: the last values */
    spill(answers, answers_instant, strlen(answers_instant));
    o.window_ms = 0;
    memset(&fs, 0, sizeof fs);
    rc = gs_dcgm_collect(NULL, &o, &s, &info, on_error, &fs, &err);
    CHECK(rc == 2 && fs.n == 0 && s.n == 1);
    CHECK(log_has(log, "DCGM_FI_DEV_GPU_UTIL"));
    CHECK(gs_dcgm_lookback_ms(&o) == 0);
    gs_util_set_free(&s);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: dcgm_sources DCGM_ENDPOINT_PY FAKE_PROMETHEUS_PY DATA_DIR\n");
        return 2;
    }
    const char *ep = argv[1], *fp = argv[2], *data = argv[3];
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gs-dcgm-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    char path[512], h100_path[512], answers[512];
    size_t len;
    snprintf(path, sizeof path, "%s/dcgm/h100-8gpu-Hostname.prom", data);
    char *h100 = slurp(path, &len);
    snprintf(h100_path, sizeof h100_path, "%s/h100.prom", tmpdir);
    spill(h100_path, h100, len);
    snprintf(answers, sizeof answers, "%s/answers.json", tmpdir);
    spill(answers, "{}", 2);

    int p_h100, p_mig, p_l4, p_cut, p_prom;
    pending pd[5];
    char mig[512], l4[512], cut[512];
    snprintf(mig, sizeof mig, "%s/dcgm/a100-mig-Hostname.prom", data);
    snprintf(l4, sizeof l4, "%s/dcgm/l4-2gpu-hostname.prom", data);
    snprintf(cut, sizeof cut, "%s/dcgm/malformed-cut.prom", data);
    int src = spawn(ep, h100_path, &pd[0], &p_h100) | spawn(ep, mig, &pd[1], &p_mig) |
              spawn(ep, l4, &pd[2], &p_l4) | spawn(ep, cut, &pd[3], &p_cut) |
              spawn(fp, answers, &pd[4], &p_prom);
    int w = src < 0 ? -1 : wait_started(pd, 5);
    if (w != 0) {
        stop_servers();
        if (w == 77) {
            printf("skip: python3 cannot be run\n");
            return 77;
        }
        fprintf(stderr, "a test server did not start\n");
        return 1;
    }
    test_scrapes(p_h100, p_mig, p_l4, p_cut);
    test_discovery(h100_path, h100, p_h100);
    test_prometheus(answers, p_prom);
    stop_servers();
    free(h100);
    unlink(h100_path);
    unlink(answers);
    snprintf(path, sizeof path, "%s.log", answers);
    unlink(path);
    rmdir(tmpdir);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("dcgm sources: all checks passed\n");
    return 0;
}
