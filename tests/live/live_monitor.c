/*
 * live_monitor.c - the monitor's core (lib/monitor/monitor.c) against the real control plane
 * of the harness (tests/live/controlplane.py exec STATE -- live_monitor controlplane.py STATE):
 * a real informer (nodes, namespaces, priority classes, quotas, PDBs, pods, events.k8s.io
 * Events, DaemonSets) fills a store observed by a gs_monitor; objects are driven through
 * their life with the write layer (create, status subresource, pods/binding, delete) and the
 * real kube-scheduler; after each step the test polls (update + render, at most 10 s) until
 * every series naming this run's namespaces, pools and nodes is exactly what the step
 * expects (docs/metrics.md), no more and no fewer:
 *   1. a GPU pod without the GPU toleration on a tainted GFD-labelled node: untolerated_taint;
 *   2. tolerated: fits_now; a controller's FailedCreate Event carrying the API server's own
 *      quota refusal: quota_exhausted; bound and Running: not pending, the scheduling
 *      histogram observes it once (and not again when the pod changes);
 *   3. a non-GPU pod bound to an untainted GPU node: hygiene series and /hygiene;
 *   4. a node's GPU capacity drops to 0 and comes back: device-plugin problems come and go;
 *   5. a preemption by the real kube-scheduler (PriorityClasses low and high, a full node):
 *      victim and preemptor counted once;
 *   6. a monitor restart over a fresh store and informer: nothing counted again, the
 *      pending series identical; a pod pending across the restart counted once scheduled;
 *   7. a relist (informer stopped, a pod deleted meanwhile, etcd compacted, kube-apiserver
 *      restarted, the informer resumes from its old resourceVersion, meets 410, relists):
 *      the deleted pod's series go, no counter doubles, the relists counter moved.
 * Every name carries a random tag (namespaces, nodes, pools, priority classes); the test's
 * nodes carry a taint of their own that only its pods tolerate. Exit 0 pass, 1 fail, 77
 * outside the harness. GS_MONITOR_QUICK=1 skips step 7 (the API server restart).
 */
#define _GNU_SOURCE 1
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/live_write.h"
#include "gpusched/monitor.h"
#include "util/json_int.h"

static int failures;
static const char *cp_py, *cp_state;
static char tag[16], nsA[48], nsB[48], pool1[48], pool2[48], pool3[48], node1[48], node2[48], node3[48];
static char pc_low[48], pc_high[48], sched_name[64];
static gs_live_client *C; /* admin: writes */

static void fail(const char *what, const char *detail)
{
    failures++;
    fprintf(stderr, "FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

#define CHECK(cond, ...)                                                                                              \
    do {                                                                                                               \
        char what_[512];                                                                                               \
        snprintf(what_, sizeof what_, __VA_ARGS__);                                                                    \
        if (cond)                                                                                                      \
            printf("ok: %s\n", what_);                                                                                 \
        else                                                                                                           \
            fail(what_, NULL);                                                                                         \
    } while (0)

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* RFC 3339, seconds, UTC (as the API server writes conditions' times) */
static const char *rfc3339(char *buf, size_t cap, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

static int64_t ms_of(const char *s)
{
    int64_t us;
    return s && *s && gs_live_microtime_parse(s, &us) == 0 ? us / 1000 : 0;
}

static int run_cp(const char *cmd)
{
    char line[2048];
    snprintf(line, sizeof line, "python3 '%s' %s '%s'", cp_py, cmd, cp_state);
    double t0 = mono_s();
    int rc = system(line);
    printf("   (%s took %.1f s)\n", cmd, mono_s() - t0);
    return rc;
}

/* ---------------------------------------------------------------- JSON answers */

typedef struct doc {
    gs_arena a;
    gs_jv root;
    bool ok;
} doc;

static void doc_parse(doc *d, const char *s, size_t n)
{
    gs_arena_init(&d->a, 0);
    gs_error err;
    d->ok = gs_json_parse("answer", 1, s, n, NULL, &d->a, &d->root, &err) == 0;
    if (!d->ok)
        d->root.t = GS_JNULL;
}

static const gs_jv *at(const gs_jv *v, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *k = buf, *next; v && k; k = next) {
        next = strchr(k, '.');
        if (next)
            *next++ = '\0';
        if (v->t == GS_JARR) {
            unsigned long i = strtoul(k, NULL, 10);
            v = i < v->n ? &v->kids[i] : NULL;
        } else {
            v = gs_json_get(v, k);
        }
    }
    return v;
}

static const char *str_at(const gs_jv *v, const char *path)
{
    v = at(v, path);
    return v && v->t == GS_JSTR ? v->s : "";
}

/* ---------------------------------------------------------------- writes (admin) */

static gs_live_response RS = {.body = GS_STRBUF_INIT, .retry_after = -1};
static gs_error RERR;
static char body[16384];

typedef enum { W_CREATE, W_PATCH_MERGE, W_PATCH_STRATEGIC, W_PATCH_JSON, W_DELETE, W_DELETE_NOW, W_GET } wop;

/* One write; the answer in RS (body) and RERR. 0 on 2xx. */
static int w(wop op, const char *path, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(body, sizeof body, fmt, ap);
        va_end(ap);
    } else
        body[0] = '\0';
    gs_error_clear(&RERR);
    size_t n = strlen(body);
    switch (op) {
    case W_CREATE:
        return gs_live_create(C, path, body, n, NULL, &RS, &RERR);
    case W_PATCH_MERGE:
        return gs_live_patch(C, path, GS_LIVE_PATCH_MERGE, body, n, NULL, &RS, &RERR);
    case W_PATCH_STRATEGIC:
        return gs_live_patch(C, path, GS_LIVE_PATCH_STRATEGIC, body, n, NULL, &RS, &RERR);
    case W_PATCH_JSON:
        return gs_live_patch(C, path, GS_LIVE_PATCH_JSON, body, n, NULL, &RS, &RERR);
    case W_DELETE:
        return gs_live_delete(C, path, NULL, &RS, &RERR);
    case W_DELETE_NOW: {
        gs_live_delete_opts o = {.has_grace = true, .grace_seconds = 0};
        return gs_live_delete(C, path, &o, &RS, &RERR);
    }
    case W_GET: {
        gs_live_request rq = {.path = path};
        return gs_live_do(C, &rq, &RS, &RERR);
    }
    }
    return -1;
}

/* w() that must succeed */
#define MUST(what, call)                                                                                               \
    do {                                                                                                               \
        if ((call) != 0) {                                                                                             \
            fail(what, RERR.msg);                                                                                      \
            return -1;                                                                                                 \
        }                                                                                                              \
    } while (0)

static char *pod_path(char *buf, size_t cap, const char *ns, const char *name, const char *sub)
{
    snprintf(buf, cap, "/api/v1/namespaces/%s/pods%s%s%s%s", ns, name ? "/" : "", name ? name : "", sub ? "/" : "",
             sub ? sub : "");
    return buf;
}

/* A GFD-labelled H100 node of a pool: labels, then capacity and allocatable through the
 * status subresource (with Ready), then taints (which drops the not-ready taint the
 * TaintNodesByCondition admission plugin adds at creation). */
static int set_gpus(const char *node, int gpus)
{
    char path[128], t[32];
    snprintf(path, sizeof path, "/api/v1/nodes/%s/status", node);
    rfc3339(t, sizeof t, wall_ms());
    MUST("node status (capacity, allocatable)",
         w(W_PATCH_MERGE, path,
           "{\"status\":{\"capacity\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
           "\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},"
           "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"kubelet "
           "is posting ready status\",\"lastHeartbeatTime\":\"%s\",\"lastTransitionTime\":\"%s\"}]}}",
           gpus, gpus, t, t));
    return 0;
}

static int set_taints(const char *node, bool gpu_taint)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    MUST("node taints",
         w(W_PATCH_MERGE, path, "{\"spec\":{\"taints\":[%s{\"key\":\"gpusched.io/monitor-test\",\"value\":\"%s\","
                                "\"effect\":\"NoSchedule\"}]}}",
           gpu_taint ? "{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}," : "", tag));
    return 0;
}

static int make_node(const char *node, const char *pool, bool gpu_taint)
{
    MUST("create node",
         w(W_CREATE, "/api/v1/nodes",
           "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
           "\"kubernetes.io/hostname\":\"%s\",\"nvidia.com/gpu.present\":\"true\","
           "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\",\"nvidia.com/gpu.count\":\"8\","
           "\"nvidia.com/gpu.memory\":\"81559\",\"nvidia.com/gpu.family\":\"hopper\","
           "\"cloud.google.com/gke-nodepool\":\"%s\",\"gpusched.io/monitor-test\":\"%s\"}}}",
           node, node, pool, tag));
    if (set_gpus(node, 8) || set_taints(node, gpu_taint))
        return -1;
    return 0;
}

/* A pod of one container: gpus < 0 asks for none; pool: nodeSelector on the pool label;
 * pc: priorityClassName or NULL. Every pod tolerates the test's own taint. */
static int make_pod(const char *ns, const char *name, const char *scheduler, int gpus, int cpu, const char *pc,
                    bool gpu_toleration, const char *pool, char *uid, size_t uidcap)
{
    char path[256], res[96] = "", pcs[96] = "";
    if (gpus >= 0)
        snprintf(res, sizeof res, ",\"limits\":{\"nvidia.com/gpu\":\"%d\"}", gpus);
    if (pc)
        snprintf(pcs, sizeof pcs, "\"priorityClassName\":\"%s\",", pc);
    MUST("create pod",
         w(W_CREATE, pod_path(path, sizeof path, ns, NULL, NULL),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
           "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"schedulerName\":\"%s\",%s"
           "\"nodeSelector\":{\"cloud.google.com/gke-nodepool\":\"%s\"},"
           "\"terminationGracePeriodSeconds\":30,"
           "\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\",\"resources\":{\"requests\":{\"cpu\":\"%d\","
           "\"memory\":\"1Gi\"}%s}}],"
           "\"tolerations\":[{\"key\":\"gpusched.io/monitor-test\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}%s]}}",
           name, ns, name, scheduler, pcs, pool, cpu, res,
           gpu_toleration ? ",{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}" : ""));
    if (uid) {
        doc d;
        doc_parse(&d, RS.body.buf, RS.body.len);
        snprintf(uid, uidcap, "%s", str_at(&d.root, "metadata.uid"));
        gs_arena_free(&d.a);
    }
    return 0;
}

/* What a kubelet writes once the containers run: phase, IPs, conditions (a strategic merge
 * patch of the status: PodScheduled, which the binding set, stays), container statuses. */
static int run_pod(const char *ns, const char *name, int ip)
{
    char path[256], t[32];
    rfc3339(t, sizeof t, wall_ms());
    MUST("pod status (Running)",
         w(W_PATCH_STRATEGIC, pod_path(path, sizeof path, ns, name, "status"),
           "{\"status\":{\"phase\":\"Running\",\"hostIP\":\"10.0.0.%d\",\"hostIPs\":[{\"ip\":\"10.0.0.%d\"}],"
           "\"podIP\":\"10.1.0.%d\",\"podIPs\":[{\"ip\":\"10.1.0.%d\"}],\"startTime\":\"%s\",\"qosClass\":\"Burstable\","
           "\"conditions\":[{\"type\":\"PodReadyToStartContainers\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"},"
           "{\"type\":\"Initialized\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"},"
           "{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"},"
           "{\"type\":\"ContainersReady\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"}],"
           "\"containerStatuses\":[{\"name\":\"c\",\"ready\":true,\"started\":true,\"restartCount\":0,"
           "\"image\":\"docker.io/library/busybox:1.36\",\"imageID\":\"docker.io/library/busybox@sha256:"
           "0000000000000000000000000000000000000000000000000000000000000000\",\"containerID\":\"containerd://%s-%d\","
           "\"state\":{\"running\":{\"startedAt\":\"%s\"}}}]}}",
           ip, ip, ip, ip, t, t, t, t, t, name, ip, t));
    return 0;
}

/* The pod as the API server has it, parsed (d->ok false when it is not there). */
static void get_pod(doc *d, const char *ns, const char *name)
{
    char path[256];
    if (w(W_GET, pod_path(path, sizeof path, ns, name, NULL), NULL)) {
        gs_arena_init(&d->a, 0);
        d->ok = false;
        d->root.t = GS_JNULL;
        return;
    }
    doc_parse(d, RS.body.buf, RS.body.len);
}

/* ---------------------------------------------------------------- the monitor under test */

typedef struct mon {
    gs_live_config *cfg;
    gs_live_store *st;
    gs_live_informer *inf;
    gs_monitor *m;
    gs_strbuf out;
    int64_t now;
} mon;

#define MON_KINDS                                                                                                      \
    (GS_LIVE_KIND_BIT(GS_LIVE_NODE) | GS_LIVE_KIND_BIT(GS_LIVE_NAMESPACE) | GS_LIVE_KIND_BIT(GS_LIVE_PRIORITYCLASS) |  \
     GS_LIVE_KIND_BIT(GS_LIVE_RESOURCEQUOTA) | GS_LIVE_KIND_BIT(GS_LIVE_PDB) | GS_LIVE_KIND_BIT(GS_LIVE_POD) |          \
     GS_LIVE_KIND_BIT(GS_LIVE_EVENT) | GS_LIVE_KIND_BIT(GS_LIVE_DAEMONSET))

/* The monitor reads as the harness's read-only user (get, list, watch everything). */
static int mon_open(mon *M, int64_t start_ms)
{
    memset(M, 0, sizeof *M);
    M->out = (gs_strbuf)GS_STRBUF_INIT;
    gs_error err;
    gs_error_clear(&err);
    gs_live_opts o = {.kubeconfig = getenv("GS_KUBECONFIG_TOKEN")};
    M->cfg = gs_live_config_load(&o, &err);
    if (!M->cfg || !(M->st = gs_live_store_new(&err))) {
        fail("monitor: config or store", err.msg);
        return -1;
    }
    gs_monitor_opts mo = {.start_ms = start_ms, .store = M->st};
    M->m = gs_monitor_new(&mo, &err);
    if (!M->m) {
        fail("gs_monitor_new", err.msg);
        return -1;
    }
    gs_live_store_observe(M->st, gs_monitor_observer, M->m);
    gs_live_informer_opts io = {.kinds = MON_KINDS};
    double t0 = mono_s();
    M->inf = gs_live_informer_new(M->cfg, M->st, &io, &err);
    if (!M->inf || gs_live_informer_start(M->inf, &err)) {
        fail("informer", err.msg);
        return -1;
    }
    if (gs_live_informer_wait_synced(M->inf, 0, 30000)) {
        fail("informer not synced in 30 s", NULL);
        return -1;
    }
    printf("ok: informer over 8 kinds synced in %.2f s (monitor start %lld)\n", mono_s() - t0, (long long)start_ms);
    return 0;
}

static void mon_close(mon *M)
{
    gs_live_informer_free(M->inf);
    if (M->st)
        gs_live_store_observe(M->st, NULL, NULL);
    gs_monitor_free(M->m);
    gs_live_store_free(M->st);
    gs_live_config_free(M->cfg);
    gs_strbuf_free(&M->out);
    memset(M, 0, sizeof *M);
}

static void mon_update(mon *M)
{
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        if (MON_KINDS & GS_LIVE_KIND_BIT(k)) {
            gs_live_informer_stats s;
            gs_live_informer_stats_get(M->inf, (gs_live_kind)k, &s);
            gs_monitor_note_informer(M->m, (gs_live_kind)k, &s);
        }
    gs_error err;
    M->now = wall_ms();
    if (gs_monitor_update(M->m, M->now, &err) < 0)
        fail("gs_monitor_update", err.msg);
}

static const char *mon_render(mon *M, gs_monitor_view v, gs_monitor_format f)
{
    gs_error err;
    if (gs_monitor_render(M->m, v, f, M->now, &M->out, &err)) {
        fail("gs_monitor_render", err.msg);
        return "";
    }
    return gs_strbuf_cstr(&M->out);
}

/* The value of one series ("name{labels}") in the last render of /metrics; -1 absent. */
static double series_in(const char *text, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = text; (p = strstr(p, s)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

/* Wait until the store holds object key of kind k with `needle` in its text. */
static bool wait_store(mon *M, gs_live_kind k, const char *key, const char *needle, bool gone)
{
    gs_strbuf got = GS_STRBUF_INIT;
    double t0 = mono_s();
    bool ok = false;
    while (mono_s() - t0 < 10) {
        int rc = gs_live_store_get(M->st, k, key, &got);
        if (gone ? rc != 0 : rc == 0 && (!needle || strstr(gs_strbuf_cstr(&got), needle))) {
            ok = true;
            break;
        }
        usleep(50000);
    }
    gs_strbuf_free(&got);
    if (!ok)
        fail("the informer did not bring the change into the store in 10 s", key);
    return ok;
}

/* ---------------------------------------------------------------- expected series
 *
 * After each step: every series whose labels name this run (its tag is in every namespace,
 * pool and node name) must be exactly the expected set. Histogram buckets other than +Inf
 * are checked on their own (their values depend on timing). */

#define ANY (-2.0) /* present, any value >= 0 */
typedef struct expent {
    char s[400];
    double v;
} expent;
static expent expv[96];
static int nexp;

static void expect(double v, const char *fmt, ...)
{
    char s[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    for (int i = 0; i < nexp; i++)
        if (!strcmp(expv[i].s, s)) {
            if (v == -1) {
                expv[i] = expv[--nexp];
                return;
            }
            expv[i].v = v;
            return;
        }
    if (v == -1 || nexp == (int)(sizeof expv / sizeof expv[0]))
        return;
    snprintf(expv[nexp].s, sizeof expv[nexp].s, "%s", s);
    expv[nexp++].v = v;
}

#define ABSENT (-1.0)

static void expect_pending(const char *ns, const char *pc, const char *reason, double v)
{
    expect(v, "gpusched_gpu_pods_pending{namespace=\"%s\",priority_class=\"%s\",request_kind=\"whole\",reason=\"%s\"}", ns,
           pc, reason);
}

static void expect_oldest(const char *ns, bool present)
{
    expect(present ? ANY : ABSENT, "gpusched_gpu_pod_oldest_pending_seconds{namespace=\"%s\"}", ns);
}

static void expect_hist(const char *ns, double count)
{
    const char *H = "gpusched_gpu_pod_scheduling_duration_seconds";
    expect(count, "%s_count{namespace=\"%s\",request_kind=\"whole\"}", H, ns);
    expect(count, "%s_bucket{namespace=\"%s\",request_kind=\"whole\",le=\"+Inf\"}", H, ns);
    expect(count < 0 ? ABSENT : ANY, "%s_sum{namespace=\"%s\",request_kind=\"whole\"}", H, ns);
}

/* nodes, in_use, allocatable, allocated, stranded, without_taint, non_gpu (allocated_idle 0) */
static void expect_pool(const char *pool, double nodes, double in_use, double allocatable, double allocated,
                        double stranded, double untainted, double non_gpu)
{
    static const char *const f[] = {"gpusched_pool_gpu_nodes",         "gpusched_pool_gpu_nodes_in_use",
                                    "gpusched_pool_gpus_allocatable",  "gpusched_pool_gpus_allocated",
                                    "gpusched_pool_gpus_stranded",     "gpusched_gpu_nodes_without_taint",
                                    "gpusched_non_gpu_pods_on_gpu_nodes", "gpusched_pool_gpus_allocated_idle"};
    double v[] = {nodes, in_use, allocatable, allocated, stranded, untainted, non_gpu, nodes < 0 ? ABSENT : 0};
    for (int i = 0; i < 8; i++)
        expect(nodes < 0 ? ABSENT : v[i], "%s{pool=\"%s\"}", f[i], pool);
}

static void expect_problem(const char *node, const char *pool, const char *problem, bool present)
{
    expect(present ? 1 : ABSENT, "gpusched_device_plugin_problem{node=\"%s\",pool=\"%s\",problem=\"%s\"}", node, pool,
           problem);
}

static void expect_preempt(const char *ns, const char *pc, const char *role, double v)
{
    expect(v, "gpusched_gpu_preemptions_total{namespace=\"%s\",priority_class=\"%s\",role=\"%s\"}", ns, pc, role);
}

/* Compare; the differences into diff (empty when equal). */
static bool matches(const char *text, gs_strbuf *diff)
{
    gs_strbuf_reset(diff);
    bool seen[96] = {false};
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char line[600];
        if (n < sizeof line && *p != '#') {
            memcpy(line, p, n);
            line[n] = 0;
            char *sp = strrchr(line, ' ');
            if (sp && strstr(line, tag) && !(strstr(line, "_bucket{") && !strstr(line, "le=\"+Inf\""))) {
                *sp = 0;
                double v = strtod(sp + 1, NULL);
                int i = 0;
                while (i < nexp && strcmp(expv[i].s, line))
                    i++;
                if (i == nexp)
                    gs_strbuf_printf(diff, "    unexpected: %s %g\n", line, v);
                else {
                    seen[i] = true;
                    if (expv[i].v == ANY ? v < 0 : v != expv[i].v)
                        gs_strbuf_printf(diff, "    wrong: %s %g (expected %g)\n", line, v, expv[i].v);
                }
            }
        }
        p += n + (e ? 1 : 0);
    }
    for (int i = 0; i < nexp; i++)
        if (!seen[i])
            gs_strbuf_printf(diff, "    missing: %s %s\n", expv[i].s, expv[i].v == ANY ? "(any)" : "");
    return diff->len == 0;
}

/* Poll (update, render) for at most 10 s until the series match. */
static bool settle(mon *M, const char *what)
{
    gs_strbuf diff = GS_STRBUF_INIT;
    double t0 = mono_s();
    bool ok = false;
    for (;;) {
        mon_update(M);
        if (matches(mon_render(M, GS_MON_METRICS, GS_MON_TEXT), &diff)) {
            ok = true;
            break;
        }
        if (mono_s() - t0 > 10)
            break;
        usleep(100000);
    }
    if (ok)
        printf("ok: %s: every series of the run as expected (%d, after %.2f s)\n", what, nexp, mono_s() - t0);
    else {
        fail(what, "the series differ after 10 s");
        fputs(gs_strbuf_cstr(&diff), stderr);
    }
    gs_strbuf_free(&diff);
    return ok;
}

/* ---------------------------------------------------------------- the steps */

static char uid_train[64], uid_web[64], uid_wait[64];

/* 1. pending: untolerated taint */
static int step_taint(mon *M)
{
    printf("-- 1. a GPU pod without the GPU toleration\n");
    if (make_node(node1, pool1, true))
        return -1;
    /* the GPU node of pool1, tainted: nothing pending yet */
    expect_pool(pool1, 1, 0, 8, 0, 0, 0, 0);
    settle(M, "a tainted GPU node (8 GPUs)");
    if (make_pod(nsA, "train-0", "gpusched-test-none", 2, 1, NULL, false, pool1, uid_train, sizeof uid_train))
        return -1;
    expect_pending(nsA, "", "untolerated_taint", 1);
    expect_oldest(nsA, true);
    settle(M, "train-0 pending: reason untolerated_taint");
    doc d;
    get_pod(&d, nsA, "train-0");
    int64_t created = ms_of(str_at(&d.root, "metadata.creationTimestamp"));
    gs_arena_free(&d.a);
    const char *t = mon_render(M, GS_MON_METRICS, GS_MON_TEXT);
    char s[200];
    snprintf(s, sizeof s, "gpusched_gpu_pod_oldest_pending_seconds{namespace=\"%s\"}", nsA);
    double age = series_in(t, s), real = (double)(M->now - created) / 1000.0;
    CHECK(age >= 0 && fabs(age - real) <= 1.5, "oldest pending: %.0f s, the pod's age by its creationTimestamp %.1f s",
          age, real);
    const char *pend = mon_render(M, GS_MON_PENDING, GS_MON_TEXT);
    CHECK(strstr(pend, "train-0") && strstr(pend, "untolerated_taint") && strstr(pend, "nvidia.com/gpu"),
          "/pending lists train-0 with its reason and the taint to tolerate");
    if (!strstr(pend, "train-0"))
        fputs(pend, stderr);
    return 0;
}

/* 2. tolerated, quota refusal, bound */
static int step_quota_and_bind(mon *M)
{
    char path[256];
    printf("-- 2. tolerated, a quota refusal, bound and running\n");
    /* tolerations may be added to a pod's spec (only added) */
    MUST("add the GPU toleration",
         w(W_PATCH_JSON, pod_path(path, sizeof path, nsA, "train-0", NULL),
           "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":{\"key\":\"nvidia.com/gpu\",\"operator\":"
           "\"Exists\",\"effect\":\"NoSchedule\"}}]"));
    expect_pending(nsA, "", "untolerated_taint", ABSENT);
    expect_pending(nsA, "", "fits_now", 1);
    settle(M, "tolerated (no scheduler serves it): reason fits_now");

    /* a quota on GPUs, its status as kube-controller-manager would compute it */
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/resourcequotas", nsA);
    MUST("create quota", w(W_CREATE, path,
                           "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"gpu-quota\"},"
                           "\"spec\":{\"hard\":{\"requests.nvidia.com/gpu\":\"4\"}}}"));
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/resourcequotas/gpu-quota/status", nsA);
    MUST("quota status", w(W_PATCH_MERGE, path,
                           "{\"status\":{\"hard\":{\"requests.nvidia.com/gpu\":\"4\"},"
                           "\"used\":{\"requests.nvidia.com/gpu\":\"2\"}}}"));
    /* the Job whose controller cannot create its pod */
    snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs", nsA);
    MUST("create job",
         w(W_CREATE, path,
           "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train-big\"},\"spec\":{\"suspend\":true,"
           "\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"schedulerName\":\"gpusched-test-none\","
           "\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
           "\"4\"}}}]}}}}"));
    doc d;
    doc_parse(&d, RS.body.buf, RS.body.len);
    char job_uid[64];
    snprintf(job_uid, sizeof job_uid, "%s", str_at(&d.root, "metadata.uid"));
    gs_arena_free(&d.a);
    /* the pod the Job controller would create, refused by the quota admission plugin */
    int rc = w(W_CREATE, pod_path(path, sizeof path, nsA, NULL, NULL),
               "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"train-big-\","
               "\"labels\":{\"batch.kubernetes.io/job-name\":\"train-big\"},\"ownerReferences\":[{\"apiVersion\":"
               "\"batch/v1\",\"kind\":\"Job\",\"name\":\"train-big\",\"uid\":\"%s\",\"controller\":true,"
               "\"blockOwnerDeletion\":true}]},"
               "\"spec\":{\"restartPolicy\":\"Never\",\"schedulerName\":\"gpusched-test-none\","
               "\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\",\"resources\":{\"limits\":{"
               "\"nvidia.com/gpu\":\"4\"}}}]}}",
               job_uid);
    char refusal[1024];
    snprintf(refusal, sizeof refusal, "%s", RERR.msg);
    if (rc == 0) {
        fail("a pod over the GPU quota was admitted", NULL);
        return -1;
    }
    CHECK(RS.http == 403 && strstr(refusal, "is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=4"),
          "the quota admission plugin refuses a pod over the quota (403)");
    printf("    server: %s\n", refusal);
    /* the Job controller's FailedCreate Event, as events.k8s.io/v1 */
    gs_error err;
    gs_live_recorder_opts ro = {.reporting_controller = "job-controller", .reporting_instance = "kube-controller-manager"};
    gs_live_recorder *r = gs_live_recorder_new(C, &ro, &err);
    char note[1100];
    snprintf(note, sizeof note, "Error creating: %s", refusal);
    gs_live_objref reg = {"batch/v1", "Job", nsA, "train-big", job_uid, NULL, NULL};
    gs_live_event ev = {&reg, NULL, GS_LIVE_EVENT_WARNING, "FailedCreate", "Create", note};
    if (!r || gs_live_recorder_event(r, &ev, &err)) {
        fail("post the FailedCreate Event", err.msg);
        gs_live_recorder_free(r);
        return -1;
    }
    gs_live_recorder_free(r);
    expect_pending(nsA, "", "quota_exhausted", 1);
    settle(M, "a Job's FailedCreate Event for the GPU quota: reason quota_exhausted");
    const char *pj = mon_render(M, GS_MON_PENDING, GS_MON_JSON);
    CHECK(strstr(pj, "\"workload\":\"Job/train-big\""), "/pending (JSON) lists Job/train-big as not created");
    if (!strstr(pj, "Job/train-big"))
        fputs(pj, stderr);

    /* bound through pods/binding, then running as a kubelet says */
    MUST("bind train-0", gs_live_bind(C, nsA, "train-0", uid_train, node1, NULL, NULL, &RS, &RERR));
    if (run_pod(nsA, "train-0", 10))
        return -1;
    expect_pending(nsA, "", "fits_now", ABSENT);
    expect_hist(nsA, 1);
    expect_pool(pool1, 1, 1, 8, 2, 0, 0, 0);
    settle(M, "train-0 bound and Running: not pending, observed once");
    /* the bucket it landed in: creation to the PodScheduled condition the binding wrote */
    get_pod(&d, nsA, "train-0");
    int64_t created = ms_of(str_at(&d.root, "metadata.creationTimestamp")), sched = 0;
    const gs_jv *conds = at(&d.root, "status.conditions");
    for (uint32_t i = 0; conds && conds->t == GS_JARR && i < conds->n; i++)
        if (!strcmp(str_at(&conds->kids[i], "type"), "PodScheduled") &&
            !strcmp(str_at(&conds->kids[i], "status"), "True"))
            sched = ms_of(str_at(&conds->kids[i], "lastTransitionTime"));
    bool running = !strcmp(str_at(&d.root, "status.phase"), "Running");
    gs_arena_free(&d.a);
    CHECK(sched > 0 && running, "the binding wrote PodScheduled (True); the status reads Running");
    double dur = (double)(sched - created) / 1000.0;
    static const char *const les[] = {"1", "5", "15", "30", "60", "120", "300"};
    const char *t = mon_render(M, GS_MON_METRICS, GS_MON_TEXT);
    bool buckets_ok = true;
    for (int i = 0; i < 7; i++) {
        char s[300];
        snprintf(s, sizeof s,
                 "gpusched_gpu_pod_scheduling_duration_seconds_bucket{namespace=\"%s\",request_kind=\"whole\",le=\"%s\"}",
                 nsA, les[i]);
        double want = dur <= atof(les[i]) ? 1 : 0, got = series_in(t, s);
        if (got != want) {
            buckets_ok = false;
            fprintf(stderr, "    %s %g (expected %g)\n", s, got, want);
        }
    }
    char s[300];
    snprintf(s, sizeof s, "gpusched_gpu_pod_scheduling_duration_seconds_sum{namespace=\"%s\",request_kind=\"whole\"}", nsA);
    double sum = series_in(t, s);
    CHECK(buckets_ok && fabs(sum - dur) < 0.001,
          "histogram: one observation of %.0f s (creation to PodScheduled), in its bucket; _sum %g", dur, sum);

    /* the pod changes again: no second observation */
    MUST("label train-0", w(W_PATCH_MERGE, pod_path(path, sizeof path, nsA, "train-0", NULL),
                            "{\"metadata\":{\"labels\":{\"gpusched.io/changed\":\"again\"}}}"));
    char key[128];
    snprintf(key, sizeof key, "%s/train-0", nsA);
    if (!wait_store(M, GS_LIVE_POD, key, "\"gpusched.io/changed\"", false))
        return -1;
    settle(M, "train-0 changed again: the histogram still counts it once");
    return 0;
}

/* 3. hygiene: a non-GPU pod on an untainted GPU node */
static int step_hygiene(mon *M)
{
    printf("-- 3. a non-GPU pod bound to an untainted GPU node\n");
    if (make_node(node2, pool2, false))
        return -1;
    expect_pool(pool2, 1, 0, 8, 0, 0, 1, 0);
    settle(M, "an untainted GPU node");
    /* 20 of the 64 cpus: the 8 free GPUs have 44 cpus left, 5 GPUs' share (8 each) */
    if (make_pod(nsA, "web-0", "gpusched-test-none", -1, 20, NULL, false, pool2, uid_web, sizeof uid_web))
        return -1;
    MUST("bind web-0", gs_live_bind(C, nsA, "web-0", uid_web, node2, NULL, NULL, &RS, &RERR));
    if (run_pod(nsA, "web-0", 11))
        return -1;
    expect_pool(pool2, 1, 0, 8, 0, 3, 1, 1);
    settle(M, "web-0 on it: without_taint 1, non_gpu_pods 1, 3 GPUs stranded (no cpu share)");
    const char *h = mon_render(M, GS_MON_HYGIENE, GS_MON_TEXT);
    char line[256], nline[256];
    snprintf(line, sizeof line, "%s/web-0 on %s (pool %s)", nsA, node2, pool2);
    snprintf(nline, sizeof nline, "  %-40s pool %s\n", node2, pool2);
    CHECK(strstr(h, line) && strstr(h, nline) && !strstr(h, node1), "/hygiene (text) lists %s and the untainted %s only",
          line, node2);
    if (!strstr(h, line))
        fputs(h, stderr);
    h = mon_render(M, GS_MON_HYGIENE, GS_MON_JSON);
    snprintf(line, sizeof line, "{\"namespace\":\"%s\",\"name\":\"web-0\",\"node\":\"%s\",\"pool\":\"%s\",\"owner\":\"\"}",
             nsA, node2, pool2);
    CHECK(strstr(h, line) != NULL, "/hygiene (JSON) lists web-0 with its node and pool");
    if (!strstr(h, line))
        fputs(h, stderr);
    return 0;
}

/* 4. device plugin: capacity to 0 and back */
static int step_capacity(mon *M)
{
    printf("-- 4. the GPU capacity of a node drops to 0, then comes back\n");
    if (set_gpus(node1, 0))
        return -1;
    expect_problem(node1, pool1, "no_gpus_advertised", true);
    expect_problem(node1, pool1, "capacity_dropped", true);
    /* no GPU allocatable; train-0 still holds its 2 */
    expect_pool(pool1, 1, 1, 0, 2, 0, 0, 0);
    expect(0, "gpusched_pool_gpus_allocatable{pool=\"%s\"}", pool1);
    settle(M, "0 GPUs advertised: no_gpus_advertised and capacity_dropped");
    const char *h = mon_render(M, GS_MON_HYGIENE, GS_MON_TEXT);
    CHECK(strstr(h, "no_gpus_advertised") && strstr(h, "capacity_dropped"), "/hygiene lists both device-plugin problems");
    /* 6 of the 8 the labels promise */
    if (set_gpus(node1, 6))
        return -1;
    expect_problem(node1, pool1, "no_gpus_advertised", false);
    expect_problem(node1, pool1, "gpus_missing", true);
    expect(2, "gpusched_device_plugin_gpus_missing{node=\"%s\",pool=\"%s\"}", node1, pool1);
    expect(6, "gpusched_pool_gpus_allocatable{pool=\"%s\"}", pool1);
    settle(M, "6 of 8 GPUs advertised: gpus_missing (2 missing), capacity_dropped");
    if (set_gpus(node1, 8))
        return -1;
    expect_problem(node1, pool1, "gpus_missing", false);
    expect(ABSENT, "gpusched_device_plugin_gpus_missing{node=\"%s\",pool=\"%s\"}", node1, pool1);
    expect_problem(node1, pool1, "capacity_dropped", false);
    expect_pool(pool1, 1, 1, 8, 2, 0, 0, 0);
    settle(M, "back to 8: the problem series are gone");

    /* the device plugin's DaemonSet (GPU Operator's name and labels), on the run's nodes */
    char path[256], ds_uid[64], t[32];
    snprintf(path, sizeof path, "/apis/apps/v1/namespaces/%s/daemonsets", nsA);
    MUST("create the device-plugin DaemonSet",
         w(W_CREATE, path,
           "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset\","
           "\"labels\":{\"app\":\"nvidia-device-plugin-daemonset\"}},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":"
           "\"nvidia-device-plugin-daemonset\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"
           "\"nvidia-device-plugin-daemonset\"}},\"spec\":{\"nodeSelector\":{\"gpusched.io/monitor-test\":\"%s\"},"
           "\"priorityClassName\":\"system-node-critical\",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":"
           "\"Exists\",\"effect\":\"NoSchedule\"},{\"key\":\"gpusched.io/monitor-test\",\"operator\":\"Exists\","
           "\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"nvidia-device-plugin\",\"image\":"
           "\"nvcr.io/nvidia/k8s-device-plugin:v0.17.0\"}]}}}}",
           tag));
    doc d;
    doc_parse(&d, RS.body.buf, RS.body.len);
    snprintf(ds_uid, sizeof ds_uid, "%s", str_at(&d.root, "metadata.uid"));
    gs_arena_free(&d.a);
    expect_problem(node1, pool1, "plugin_pod_missing", true);
    expect_problem(node2, pool2, "plugin_pod_missing", true);
    settle(M, "device-plugin DaemonSet without pods: plugin_pod_missing on both nodes");
    /* its pod on node1, as the DaemonSet controller makes it; running, not ready */
    MUST("create the device-plugin pod",
         w(W_CREATE, pod_path(path, sizeof path, nsA, NULL, NULL),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset-x7k2p\","
           "\"labels\":{\"app\":\"nvidia-device-plugin-daemonset\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
           "\"kind\":\"DaemonSet\",\"name\":\"nvidia-device-plugin-daemonset\",\"uid\":\"%s\",\"controller\":true,"
           "\"blockOwnerDeletion\":true}]},\"spec\":{\"nodeName\":\"%s\",\"priorityClassName\":"
           "\"system-node-critical\",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":"
           "\"NoSchedule\"},{\"key\":\"gpusched.io/monitor-test\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],"
           "\"containers\":[{\"name\":\"nvidia-device-plugin\",\"image\":\"nvcr.io/nvidia/k8s-device-plugin:v0.17.0\"}]}}",
           ds_uid, node1));
    const char *dp = "nvidia-device-plugin-daemonset-x7k2p";
    static const char st[] =
        "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\",\"lastTransitionTime\":"
        "\"%s\"},{\"type\":\"ContainersReady\",\"status\":\"%s\",\"lastTransitionTime\":\"%s\"}],"
        "\"containerStatuses\":[{\"name\":\"nvidia-device-plugin\",\"ready\":%s,\"started\":true,\"restartCount\":%d,"
        "\"image\":\"nvcr.io/nvidia/k8s-device-plugin:v0.17.0\",\"imageID\":\"\",\"state\":{\"running\":{\"startedAt\":"
        "\"%s\"}}}]}}";
    rfc3339(t, sizeof t, wall_ms());
    MUST("device-plugin pod: not ready", w(W_PATCH_STRATEGIC, pod_path(path, sizeof path, nsA, dp, "status"), st, "False",
                                           t, "False", t, "false", 0, t));
    expect_problem(node1, pool1, "plugin_pod_missing", false);
    expect_problem(node1, pool1, "plugin_pod_not_ready", true);
    settle(M, "its pod on node1, not Ready: plugin_pod_not_ready there, still missing on node2");
    /* ready, after a restart of its container */
    MUST("device-plugin pod: restarted, ready", w(W_PATCH_STRATEGIC, pod_path(path, sizeof path, nsA, dp, "status"), st,
                                                  "True", t, "True", t, "true", 1, t));
    expect_problem(node1, pool1, "plugin_pod_not_ready", false);
    expect_problem(node1, pool1, "plugin_pod_restarting", true);
    settle(M, "Ready after a container restart: plugin_pod_restarting (not counted as a non-GPU pod)");
    /* the DaemonSet and its pod go: so do the problems */
    snprintf(path, sizeof path, "/apis/apps/v1/namespaces/%s/daemonsets/nvidia-device-plugin-daemonset", nsA);
    MUST("delete the DaemonSet", w(W_DELETE, path, NULL));
    MUST("delete the device-plugin pod", w(W_DELETE_NOW, pod_path(path, sizeof path, nsA, dp, NULL), NULL));
    expect_problem(node1, pool1, "plugin_pod_restarting", false);
    expect_problem(node2, pool2, "plugin_pod_missing", false);
    settle(M, "DaemonSet and pod deleted: no device-plugin problem left");
    return 0;
}

/* 5. a preemption by the real kube-scheduler */
static int step_preemption(mon *M)
{
    char path[256], uid_low[64];
    printf("-- 5. a preemption by the real kube-scheduler\n");
    MUST("low PriorityClass", w(W_CREATE, "/apis/scheduling.k8s.io/v1/priorityclasses",
                                "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
                                "\"metadata\":{\"name\":\"%s\"},\"value\":1000}",
                                pc_low));
    MUST("high PriorityClass", w(W_CREATE, "/apis/scheduling.k8s.io/v1/priorityclasses",
                                 "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
                                 "\"metadata\":{\"name\":\"%s\"},\"value\":100000,\"preemptionPolicy\":"
                                 "\"PreemptLowerPriority\"}",
                                 pc_high));
    if (make_node(node3, pool3, true))
        return -1;
    expect_pool(pool3, 1, 0, 8, 0, 0, 0, 0);
    settle(M, "a third GPU node");
    /* low-0 takes the whole node through the real scheduler */
    if (make_pod(nsB, "low-0", sched_name, 8, 2, pc_low, true, pool3, uid_low, sizeof uid_low))
        return -1;
    doc d;
    double t0 = mono_s();
    bool bound = false;
    while (!bound && mono_s() - t0 < 90) { /* longer: a restart just before (live/watch) sets its reflectors back */
        get_pod(&d, nsB, "low-0");
        bound = !strcmp(str_at(&d.root, "spec.nodeName"), node3);
        gs_arena_free(&d.a);
        if (!bound)
            usleep(200000);
    }
    if (!bound) {
        fail("kube-scheduler did not bind low-0 in 90 s", NULL);
        return -1;
    }
    printf("ok: kube-scheduler bound low-0 to %s in %.1f s\n", node3, mono_s() - t0);
    if (run_pod(nsB, "low-0", 20))
        return -1;
    expect_hist(nsB, 1);
    expect_pool(pool3, 1, 1, 8, 8, 0, 0, 0);
    settle(M, "low-0 (8 GPUs) running: the node is full");
    /* high-0 needs the node: the scheduler marks low-0 (DisruptionTarget), deletes it (no
     * kubelet: it stays terminating) and nominates the node for high-0 */
    if (make_pod(nsB, "high-0", sched_name, 8, 2, pc_high, true, pool3, NULL, 0))
        return -1;
    t0 = mono_s();
    bool victim = false, nominated = false;
    while ((!victim || !nominated) && mono_s() - t0 < 30) {
        get_pod(&d, nsB, "low-0");
        const gs_jv *conds = at(&d.root, "status.conditions");
        for (uint32_t i = 0; conds && conds->t == GS_JARR && i < conds->n; i++)
            if (!strcmp(str_at(&conds->kids[i], "type"), "DisruptionTarget") &&
                !strcmp(str_at(&conds->kids[i], "reason"), "PreemptionByScheduler"))
                victim = true;
        gs_arena_free(&d.a);
        get_pod(&d, nsB, "high-0");
        nominated = !strcmp(str_at(&d.root, "status.nominatedNodeName"), node3);
        gs_arena_free(&d.a);
        if (!victim || !nominated)
            usleep(200000);
    }
    if (!victim || !nominated) {
        fail("kube-scheduler did not preempt low-0 for high-0 in 30 s", NULL);
        return -1;
    }
    printf("ok: kube-scheduler preempted low-0 (DisruptionTarget, PreemptionByScheduler) and nominated %s for high-0 "
           "in %.1f s\n",
           node3, mono_s() - t0);
    expect_preempt(nsB, pc_low, "victim", 1);
    expect_preempt(nsB, pc_high, "preemptor", 1);
    expect_pending(nsB, pc_high, "preemption_pending", 1);
    expect_oldest(nsB, true);
    settle(M, "preemption: victim 1 (low), preemptor 1 (high), high-0 preemption_pending");
    /* the kubelet would now kill low-0: remove it; the scheduler binds high-0 */
    MUST("delete low-0", w(W_DELETE_NOW, pod_path(path, sizeof path, nsB, "low-0", NULL), NULL));
    t0 = mono_s();
    bound = false;
    while (!bound && mono_s() - t0 < 30) {
        get_pod(&d, nsB, "high-0");
        bound = !strcmp(str_at(&d.root, "spec.nodeName"), node3);
        gs_arena_free(&d.a);
        if (!bound)
            usleep(200000);
    }
    if (!bound) {
        fail("kube-scheduler did not bind high-0 in 30 s", NULL);
        return -1;
    }
    if (run_pod(nsB, "high-0", 21))
        return -1;
    expect_pending(nsB, pc_high, "preemption_pending", ABSENT);
    expect_oldest(nsB, false);
    expect_hist(nsB, 2);
    settle(M, "high-0 bound after the victim left: histogram 2, the preemption counters stay 1 and 1");
    return 0;
}

/* The series of the run as rendered (sorted lines, histogram/preemption families left out). */
static void pending_lines(mon *M, gs_strbuf *out)
{
    gs_strbuf_reset(out);
    const char *t = mon_render(M, GS_MON_METRICS, GS_MON_TEXT);
    for (const char *p = t; *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (!strncmp(p, "gpusched_gpu_pods_pending{", 26) && memmem(p, n, tag, strlen(tag))) {
            gs_strbuf_add(out, p, n);
            gs_strbuf_putc(out, '\n');
        }
        p += n + (e ? 1 : 0);
    }
}

/* 6. a restarted monitor */
static int step_restart(mon *M)
{
    char path[256];
    printf("-- 6. a monitor restart\n");
    /* one more pending pod, across the restart */
    if (make_pod(nsA, "wait-0", "gpusched-test-none", 1, 1, NULL, false, pool1, uid_wait, sizeof uid_wait))
        return -1;
    expect_pending(nsA, "", "untolerated_taint", 1);
    settle(M, "wait-0 pending (untolerated_taint) before the restart");
    gs_strbuf before = GS_STRBUF_INIT, after = GS_STRBUF_INIT;
    pending_lines(M, &before);
    gs_monitor_stats ms;
    gs_monitor_stats_get(M->m, &ms);
    uint32_t pending_before = ms.pending_gpu_pods;
    mon_close(M);
    if (mon_open(M, wall_ms())) {
        gs_strbuf_free(&before);
        return -1;
    }
    /* pods scheduled and preempted before this start were counted by the earlier run */
    expect_hist(nsA, ABSENT);
    expect_hist(nsB, ABSENT);
    expect_preempt(nsB, pc_low, "victim", ABSENT);
    expect_preempt(nsB, pc_high, "preemptor", ABSENT);
    bool ok = settle(M, "restarted: no scheduling or preemption counted again, the rest as before");
    pending_lines(M, &after);
    gs_monitor_stats_get(M->m, &ms);
    CHECK(ok && before.len && !strcmp(gs_strbuf_cstr(&before), gs_strbuf_cstr(&after)) &&
              ms.pending_gpu_pods == pending_before,
          "the pending series come back identical (%u pending)", ms.pending_gpu_pods);
    if (strcmp(gs_strbuf_cstr(&before), gs_strbuf_cstr(&after)))
        fprintf(stderr, "before:\n%safter:\n%s", gs_strbuf_cstr(&before), gs_strbuf_cstr(&after));
    gs_strbuf_free(&before);
    gs_strbuf_free(&after);
    /* wait-0, seen pending by this run, is counted when it is scheduled */
    MUST("tolerate wait-0", w(W_PATCH_JSON, pod_path(path, sizeof path, nsA, "wait-0", NULL),
                              "[{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":{\"key\":\"nvidia.com/gpu\","
                              "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}}]"));
    MUST("bind wait-0", gs_live_bind(C, nsA, "wait-0", uid_wait, node1, NULL, NULL, &RS, &RERR));
    if (run_pod(nsA, "wait-0", 12))
        return -1;
    expect_pending(nsA, "", "untolerated_taint", ABSENT);
    expect_hist(nsA, 1);
    expect_pool(pool1, 1, 1, 8, 3, 0, 0, 0);
    settle(M, "wait-0 bound after the restart: counted once by the new run");
    return 0;
}

/* 7. a relist */
static int step_relist(mon *M)
{
    char path[256];
    printf("-- 7. a relist: informer stopped, a pod deleted, etcd compacted, kube-apiserver restarted\n");
    gs_live_informer_stats before;
    gs_live_informer_stop(M->inf);
    gs_live_informer_stats_get(M->inf, GS_LIVE_POD, &before);
    gs_monitor_stats ms0;
    gs_monitor_stats_get(M->m, &ms0);
    MUST("delete web-0", w(W_DELETE_NOW, pod_path(path, sizeof path, nsA, "web-0", NULL), NULL));
    if (run_cp("compact") != 0 || run_cp("restart-apiserver") != 0) {
        fail("compact / restart-apiserver", NULL);
        return -1;
    }
    gs_error err;
    if (gs_live_informer_start(M->inf, &err)) {
        fail("restart the informer", err.msg);
        return -1;
    }
    double t0 = mono_s();
    gs_live_informer_stats s = before;
    while (mono_s() - t0 < 60) {
        gs_live_informer_stats_get(M->inf, GS_LIVE_POD, &s);
        if (s.relists > before.relists)
            break;
        usleep(100000);
    }
    CHECK(s.relists > before.relists && s.gone > before.gone,
          "the pod informer resumed from resourceVersion %s, met 410 and relisted (relists %llu -> %llu) in %.1f s",
          before.resource_version, (unsigned long long)before.relists, (unsigned long long)s.relists, mono_s() - t0);
    /* web-0 went while nobody watched: the relist removes it */
    expect_pool(pool2, 1, 0, 8, 0, 0, 1, 0);
    settle(M, "after the relist: web-0 gone (non_gpu 0, stranded 0), every counter as before (histogram 1)");
    char s1[128];
    snprintf(s1, sizeof s1, "gpusched_monitor_relists_total{kind=\"pods\"}");
    double rl = series_in(mon_render(M, GS_MON_METRICS, GS_MON_TEXT), s1);
    gs_monitor_stats ms;
    gs_monitor_stats_get(M->m, &ms);
    CHECK(rl >= 1 && rl == (double)s.relists && ms.dropped_same > ms0.dropped_same,
          "%s %g (the informer's count); the relist's unchanged objects dropped (%llu -> %llu)", s1, rl,
          (unsigned long long)ms0.dropped_same, (unsigned long long)ms.dropped_same);
    /* the shared kube-scheduler lost its watches with the API server (its reflectors back
     * off, some after a transient RBAC refusal): the tests after this one need it, so wait
     * until it binds again (a non-GPU pod, on node3) */
    if (make_pod(nsB, "probe-0", sched_name, -1, 1, NULL, true, pool3, NULL, 0))
        return -1;
    t0 = mono_s();
    bool bound = false;
    while (!bound && mono_s() - t0 < 120) {
        doc d;
        get_pod(&d, nsB, "probe-0");
        bound = !strcmp(str_at(&d.root, "spec.nodeName"), node3);
        gs_arena_free(&d.a);
        if (!bound)
            usleep(250000);
    }
    CHECK(bound, "kube-scheduler binds again after the restart (%.1f s)", mono_s() - t0);
    return 0;
}

/* ---------------------------------------------------------------- setup and cleanup */

static int make_namespaces(void)
{
    const char *nss[] = {nsA, nsB};
    for (int i = 0; i < 2; i++)
        MUST("create namespace", w(W_CREATE, "/api/v1/namespaces",
                                   "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", nss[i]));
    return 0;
}

static void cleanup(void)
{
    char path[256];
    const char *nss[] = {nsA, nsB};
    /* bound pods stay until a kubelet confirms: remove them at once; no namespace
     * controller runs, so the namespaces' other objects go one by one */
    for (int i = 0; i < 2; i++) {
        static const char *const cols[] = {"/api/v1/namespaces/%s/pods", "/api/v1/namespaces/%s/resourcequotas",
                                           "/apis/batch/v1/namespaces/%s/jobs", "/apis/events.k8s.io/v1/namespaces/%s/events"};
        for (int c = 0; c < 4; c++) {
            snprintf(path, sizeof path, cols[c], nss[i]);
            w(c == 0 ? W_DELETE_NOW : W_DELETE, path, NULL);
        }
        snprintf(path, sizeof path, "/api/v1/namespaces/%s", nss[i]);
        w(W_DELETE, path, NULL);
    }
    const char *nodes[] = {node1, node2, node3};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "/api/v1/nodes/%s", nodes[i]);
        w(W_DELETE, path, NULL);
    }
    const char *pcs[] = {pc_low, pc_high};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/apis/scheduling.k8s.io/v1/priorityclasses/%s", pcs[i]);
        w(W_DELETE, path, NULL);
    }
}

int main(int argc, char **argv)
{
    if (!getenv("GS_KUBECONFIG_ADMIN") || !getenv("GS_KUBECONFIG_TOKEN")) {
        printf("SKIP: not run inside the control-plane harness (tests/live/controlplane.py exec)\n");
        return 77;
    }
    cp_py = argc > 1 ? argv[1] : NULL;
    cp_state = argc > 2 ? argv[2] : NULL;
    bool quick = (getenv("GS_MONITOR_QUICK") && !strcmp(getenv("GS_MONITOR_QUICK"), "1")) || !cp_py || !cp_state;
    snprintf(sched_name, sizeof sched_name, "%s",
             getenv("GS_SCHEDULER_NAME") ? getenv("GS_SCHEDULER_NAME") : "gs-kube-scheduler");
    srand((unsigned)getpid() ^ (unsigned)time(NULL));
    snprintf(tag, sizeof tag, "gsmon%06x", (unsigned)rand() & 0xffffff);
    snprintf(nsA, sizeof nsA, "%s-a", tag);
    snprintf(nsB, sizeof nsB, "%s-b", tag);
    snprintf(pool1, sizeof pool1, "%s-pool1", tag);
    snprintf(pool2, sizeof pool2, "%s-pool2", tag);
    snprintf(pool3, sizeof pool3, "%s-pool3", tag);
    snprintf(node1, sizeof node1, "%s-node1", tag);
    snprintf(node2, sizeof node2, "%s-node2", tag);
    snprintf(node3, sizeof node3, "%s-node3", tag);
    snprintf(pc_low, sizeof pc_low, "%s-low", tag);
    snprintf(pc_high, sizeof pc_high, "%s-high", tag);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("run tag %s (namespaces %s, %s; scheduler %s)\n", tag, nsA, nsB, sched_name);
    double t0 = mono_s();

    gs_error err;
    gs_error_clear(&err);
    gs_live_opts o = {.kubeconfig = getenv("GS_KUBECONFIG_ADMIN")};
    gs_live_config *cfg = gs_live_config_load(&o, &err);
    C = cfg ? gs_live_client_new(cfg, NULL, &err) : NULL;
    if (!C) {
        fail("admin client", err.msg);
        gs_live_config_free(cfg);
        return 1;
    }
    mon M;
    memset(&M, 0, sizeof M);
    if (make_namespaces() == 0 && mon_open(&M, wall_ms()) == 0) {
        bool ok = step_taint(&M) == 0 && step_quota_and_bind(&M) == 0 && step_hygiene(&M) == 0 &&
                  step_capacity(&M) == 0 && step_preemption(&M) == 0 && step_restart(&M) == 0;
        if (ok && !quick)
            step_relist(&M);
        else if (ok)
            printf("skipped: 7. the relist (GS_MONITOR_QUICK=1 or no harness path given)\n");
        if (getenv("GS_MONITOR_DUMP"))
            for (int v = 0; v < 4; v++)
                printf("%s\n", mon_render(&M, (gs_monitor_view)v, GS_MON_TEXT));
    }
    mon_close(&M);
    cleanup();
    gs_live_response_free(&RS);
    gs_live_client_free(C);
    gs_live_config_free(cfg);
    printf("%s (%.1f s)\n", failures ? "live monitor: FAILED" : "live monitor: all checks passed", mono_s() - t0);
    return failures ? 1 : 0;
}
