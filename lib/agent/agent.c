/*
 * agent.c - the running node agent (agent.h): the device plugin servers on the plan
 * (devplugin.h), registration that survives kubelet restarts, the health loop (health.h on
 * NVML's events and probes), sampling and pod attribution for the exporter (exporter.h).
 *
 * One lock (a->mu) guards the plan, the health tracker, the streams, the samples and the
 * holders: every handler and loop takes it for the time of a few memory operations; NVML
 * calls, gRPC calls to the kubelet and the sends of encoded messages happen outside it
 * (gs_grpc_send only queues).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "podresources/v1/api.pb-c.h"

#include "gpusched/agent.h"
#include "gpusched/nri.h"
#include "gpusched/grpc.h"

#define DP_VERSION "v1beta1"
#define IDLE_UTIL_PCT 5 /* utilization below this counts as idle (docs/metrics.md) */

/* latency histogram buckets (seconds) of Allocate and GetPreferredAllocation */
#define NB 10
static const uint64_t bucket_us[NB] = {50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000};
static const char *const bucket_le[NB] = {"5e-05", "0.0001", "0.00025", "0.0005", "0.001",
                                          "0.0025", "0.005", "0.01", "0.05", "0.25"};

typedef struct hist {
    uint64_t b[NB + 1];
    uint64_t sum_us, count;
} hist;

typedef struct stream {
    gs_grpc_call *call;
    bool open;
} stream;

typedef struct res_srv {
    gs_agent *a;
    size_t idx;                /* resource index in the plan */
    gs_grpc_server *srv;
    char path[512];            /* <dir>/<socket> */
    bool registered;           /* since the last (re)creation of its socket */
    uint64_t registrations, register_failures;
    int64_t last_register_ms;
    int64_t registered_wall_ns; /* CLOCK_REALTIME of the last successful registration */
    char last_error[256];
    stream *streams;
    size_t nstreams, capstreams;
    uint64_t law_sent, allocs, alloc_fail, preferred;
    hist alloc_h, pref_h;
} res_srv;

struct gs_agent {
    gs_agent_opts o;
    char node[256], dir[384], kubelet[512], podres[512];
    gs_nvml *nvml;
    gs_nvml_inventory inv;
    gs_devplugin_plan plan;
    gs_health *health;
    gs_nvml_events *ev;
    pthread_mutex_t mu;
    res_srv *rs;
    size_t nrs;
    /* sampling */
    gs_nvml_samples samples;
    bool have_samples;
    int64_t *idle_since;      /* per GPU, ms; -1 busy or unknown */
    int64_t **mig_idle_since; /* per MIG device */
    gs_exporter_gpu_state *state;
    int64_t **mig_idle_s;
    /* attribution */
    gs_exporter_holder *holders;
    size_t nholders;
    gs_arena holders_arena;
    uint64_t podres_ok, podres_fail;
    /* labels */
    gs_gfd_labels labels;
    /* health */
    uint64_t health_gen_seen;
    uint64_t events_seen, probes, law_pushes;
    /* threads */
    atomic_int stop;
    pthread_t t_reg, t_health, t_sample;
    bool t_reg_on, t_health_on, t_sample_on;
    int inotify_fd;
    int64_t started_ms;
    gs_nri *nri; /* the NRI plugin (opts.nri_socket), NULL when off */
};

/* Milliseconds on the monotonic clock, offset once to the epoch: intervals never jump with
 * the wall clock, and the health reasons print as dates ("at 2026-12-02T06:59:22Z"). */
static int64_t now_ms(void)
{
    static atomic_llong offset; /* 0 until the first call */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t mono = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    long long off = atomic_load(&offset);
    if (!off) {
        struct timespec w;
        clock_gettime(CLOCK_REALTIME, &w);
        long long want = (long long)w.tv_sec * 1000 + w.tv_nsec / 1000000 - mono;
        long long expected = 0;
        off = atomic_compare_exchange_strong(&offset, &expected, want) ? want : expected;
    }
    return mono + off;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void hist_add(hist *h, uint64_t us)
{
    size_t i = 0;
    while (i < NB && us > bucket_us[i])
        i++;
    h->b[i]++;
    h->sum_us += us;
    h->count++;
}

static void logf_(gs_agent *a, gs_agent_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(gs_agent *a, gs_agent_log_level lvl, const char *fmt, ...)
{
    if (!a->o.log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    a->o.log(a->o.user, lvl, line);
}

void gs_agent_opts_init(gs_agent_opts *o)
{
    memset(o, 0, sizeof *o);
    gs_devplugin_config_defaults(&o->plugin);
    gs_health_policy_default(&o->health);
}

/* ---------------------------------------------------------------- encoding */
/* The full device list of resource r (the lock held), packed into *buf (malloc'ed). */
static int encode_devices(const gs_devplugin_resource *r, uint8_t **buf, size_t *len)
{
    size_t n = r->n_devices;
    V1beta1__Device *dev = calloc(n ? n : 1, sizeof *dev);
    V1beta1__Device **pdev = calloc(n ? n : 1, sizeof *pdev);
    V1beta1__TopologyInfo *topo = calloc(n ? n : 1, sizeof *topo);
    V1beta1__NUMANode *numa = calloc(n ? n : 1, sizeof *numa);
    V1beta1__NUMANode **pnuma = calloc(n ? n : 1, sizeof *pnuma);
    int rc = -1;
    if (!dev || !pdev || !topo || !numa || !pnuma)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const gs_devplugin_device *d = &r->devices[i];
        v1beta1__device__init(&dev[i]);
        dev[i].id = (char *)d->id;
        dev[i].health = d->healthy ? "Healthy" : "Unhealthy";
        if (d->numa_node >= 0) {
            v1beta1__topology_info__init(&topo[i]);
            v1beta1__numanode__init(&numa[i]);
            numa[i].id = d->numa_node;
            pnuma[i] = &numa[i];
            topo[i].n_nodes = 1;
            topo[i].nodes = &pnuma[i];
            dev[i].topology = &topo[i];
        }
        pdev[i] = &dev[i];
    }
    V1beta1__ListAndWatchResponse m = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    m.n_devices = n;
    m.devices = pdev;
    *len = v1beta1__list_and_watch_response__get_packed_size(&m);
    *buf = malloc(*len ? *len : 1);
    if (*buf) {
        v1beta1__list_and_watch_response__pack(&m, *buf);
        rc = 0;
    }
out:
    free(dev);
    free(pdev);
    free(topo);
    free(numa);
    free(pnuma);
    return rc;
}

/* Send resource i's device list to each of its open streams (the lock held). */
static void push_resource(gs_agent *a, size_t i)
{
    res_srv *s = &a->rs[i];
    if (!s->nstreams)
        return;
    uint8_t *buf;
    size_t len;
    if (encode_devices(&a->plan.resources[s->idx], &buf, &len) != 0) {
        logf_(a, GS_AGENT_ERROR, "%s: out of memory encoding the device list", a->plan.resources[s->idx].name);
        return;
    }
    for (size_t k = 0; k < s->nstreams; k++)
        if (s->streams[k].open && gs_grpc_send(s->streams[k].call, buf, len) == 0)
            s->law_sent++;
    free(buf);
    a->law_pushes++;
}

static void push_all(gs_agent *a)
{
    for (size_t i = 0; i < a->nrs; i++)
        push_resource(a, i);
}

/* ---------------------------------------------------------------- handlers */
static void h_options(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    res_srv *s = ctx;
    (void)msg;
    (void)len;
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    pthread_mutex_lock(&s->a->mu);
    o.get_preferred_allocation_available = s->a->plan.resources[s->idx].preferred_available;
    pthread_mutex_unlock(&s->a->mu);
    uint8_t buf[16];
    size_t n = v1beta1__device_plugin_options__pack(&o, buf);
    gs_grpc_reply(call, buf, n);
}

static void h_law(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    res_srv *s = ctx;
    gs_agent *a = s->a;
    (void)msg;
    (void)len;
    pthread_mutex_lock(&a->mu);
    if (s->nstreams == s->capstreams) {
        size_t cap = s->capstreams ? s->capstreams * 2 : 4;
        stream *ns = realloc(s->streams, cap * sizeof *ns);
        if (!ns) {
            pthread_mutex_unlock(&a->mu);
            gs_grpc_finish(call, GS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
            gs_grpc_call_release(call);
            return;
        }
        s->streams = ns;
        s->capstreams = cap;
    }
    s->streams[s->nstreams].call = call;
    s->streams[s->nstreams].open = true;
    s->nstreams++;
    uint8_t *buf;
    size_t blen;
    if (encode_devices(&a->plan.resources[s->idx], &buf, &blen) == 0) {
        if (gs_grpc_send(call, buf, blen) == 0)
            s->law_sent++;
        free(buf);
    }
    const char *name = a->plan.resources[s->idx].name;
    size_t n = a->plan.resources[s->idx].n_devices;
    pthread_mutex_unlock(&a->mu);
    logf_(a, GS_AGENT_INFO, "%s: ListAndWatch opened (authority %s), %zu devices sent", name,
          gs_grpc_call_authority(call), n);
}

static void on_closed(void *ctx, gs_grpc_call *call)
{
    res_srv *s = ctx;
    gs_agent *a = s->a;
    pthread_mutex_lock(&a->mu);
    for (size_t k = 0; k < s->nstreams; k++)
        if (s->streams[k].call == call) {
            s->streams[k] = s->streams[--s->nstreams];
            break;
        }
    const char *name = a->plan.resources[s->idx].name;
    pthread_mutex_unlock(&a->mu);
    gs_grpc_call_release(call);
    if (!atomic_load(&a->stop))
        logf_(a, GS_AGENT_INFO, "%s: ListAndWatch closed by the kubelet", name);
}

static void h_prestart(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    (void)ctx;
    (void)msg;
    (void)len;
    gs_grpc_reply(call, (const uint8_t *)"", 0);
}

static void h_preferred(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    res_srv *s = ctx;
    gs_agent *a = s->a;
    int64_t t0 = now_us();
    V1beta1__PreferredAllocationRequest *rq = v1beta1__preferred_allocation_request__unpack(NULL, len, msg);
    if (!rq) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "malformed PreferredAllocationRequest");
        return;
    }
    size_t n = rq->n_container_requests;
    V1beta1__ContainerPreferredAllocationResponse *cr = calloc(n ? n : 1, sizeof *cr);
    V1beta1__ContainerPreferredAllocationResponse **pcr = calloc(n ? n : 1, sizeof *pcr);
    const char ***ids = calloc(n ? n : 1, sizeof *ids);
    gs_error err;
    gs_error_clear(&err);
    int rc = (cr && pcr && ids) ? 0 : gs_fail(&err, GS_ERR_NOMEM, "out of memory");
    pthread_mutex_lock(&a->mu);
    const gs_devplugin_resource *res = &a->plan.resources[s->idx];
    for (size_t i = 0; rc == 0 && i < n; i++) {
        V1beta1__ContainerPreferredAllocationRequest *c = rq->container_requests[i];
        if (c->allocation_size < 0) {
            rc = gs_fail(&err, GS_ERR_INVALID, "negative allocation_size");
            break;
        }
        size_t size = (size_t)c->allocation_size;
        ids[i] = calloc(size ? size : 1, sizeof **ids);
        if (!ids[i]) {
            rc = gs_fail(&err, GS_ERR_NOMEM, "out of memory");
            break;
        }
        rc = gs_devplugin_preferred(&a->plan, &a->o.plugin, res, (const char *const *)c->available_deviceids,
                                    c->n_available_deviceids, (const char *const *)c->must_include_deviceids,
                                    c->n_must_include_deviceids, size, ids[i], &err);
        v1beta1__container_preferred_allocation_response__init(&cr[i]);
        cr[i].n_deviceids = size;
        cr[i].deviceids = (char **)ids[i];
        pcr[i] = &cr[i];
    }
    uint8_t *buf = NULL;
    size_t blen = 0;
    if (rc == 0) { /* packed under the lock: the IDs point into the plan */
        V1beta1__PreferredAllocationResponse m = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
        m.n_container_responses = n;
        m.container_responses = pcr;
        blen = v1beta1__preferred_allocation_response__get_packed_size(&m);
        if ((buf = malloc(blen ? blen : 1)))
            v1beta1__preferred_allocation_response__pack(&m, buf);
        else
            rc = gs_fail(&err, GS_ERR_NOMEM, "out of memory");
    }
    s->preferred++;
    hist_add(&s->pref_h, (uint64_t)(now_us() - t0));
    pthread_mutex_unlock(&a->mu);
    if (rc == 0)
        gs_grpc_reply(call, buf, blen);
    else
        gs_grpc_fail(call, err.code == GS_ERR_NOMEM ? GS_GRPC_RESOURCE_EXHAUSTED : GS_GRPC_INVALID_ARGUMENT, err.msg);
    free(buf);
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
    free(cr);
    free(pcr);
    v1beta1__preferred_allocation_request__free_unpacked(rq, NULL);
}

/* One ContainerAllocateResponse from an allocation; arrays in *mem (freed by the caller). */
typedef struct alloc_msg {
    V1beta1__ContainerAllocateResponse r;
    V1beta1__ContainerAllocateResponse__EnvsEntry *env, **penv;
    V1beta1__ContainerAllocateResponse__AnnotationsEntry *ann, **pann;
    V1beta1__Mount *mnt, **pmnt;
    V1beta1__DeviceSpec *dev, **pdev;
    V1beta1__CDIDevice *cdi, **pcdi;
} alloc_msg;

static void alloc_msg_free(alloc_msg *m)
{
    free(m->env);
    free(m->penv);
    free(m->ann);
    free(m->pann);
    free(m->mnt);
    free(m->pmnt);
    free(m->dev);
    free(m->pdev);
    free(m->cdi);
    free(m->pcdi);
}

#define ARR(p, n) ((p) = calloc((n) ? (n) : 1, sizeof *(p)))

static int alloc_msg_build(alloc_msg *m, const gs_devplugin_alloc *al)
{
    memset(m, 0, sizeof *m);
    v1beta1__container_allocate_response__init(&m->r);
    if (!ARR(m->env, al->n_envs) || !ARR(m->penv, al->n_envs) || !ARR(m->ann, al->n_annotations) ||
        !ARR(m->pann, al->n_annotations) || !ARR(m->mnt, al->n_mounts) || !ARR(m->pmnt, al->n_mounts) ||
        !ARR(m->dev, al->n_devices) || !ARR(m->pdev, al->n_devices) || !ARR(m->cdi, al->n_cdi) ||
        !ARR(m->pcdi, al->n_cdi))
        return -1;
    for (size_t i = 0; i < al->n_envs; i++) {
        v1beta1__container_allocate_response__envs_entry__init(&m->env[i]);
        m->env[i].key = (char *)al->envs[i].key;
        m->env[i].value = (char *)al->envs[i].value;
        m->penv[i] = &m->env[i];
    }
    for (size_t i = 0; i < al->n_annotations; i++) {
        v1beta1__container_allocate_response__annotations_entry__init(&m->ann[i]);
        m->ann[i].key = (char *)al->annotations[i].key;
        m->ann[i].value = (char *)al->annotations[i].value;
        m->pann[i] = &m->ann[i];
    }
    for (size_t i = 0; i < al->n_mounts; i++) {
        v1beta1__mount__init(&m->mnt[i]);
        m->mnt[i].container_path = (char *)al->mounts[i].container_path;
        m->mnt[i].host_path = (char *)al->mounts[i].host_path;
        m->mnt[i].read_only = al->mounts[i].read_only;
        m->pmnt[i] = &m->mnt[i];
    }
    for (size_t i = 0; i < al->n_devices; i++) {
        v1beta1__device_spec__init(&m->dev[i]);
        m->dev[i].container_path = (char *)al->devices[i].container_path;
        m->dev[i].host_path = (char *)al->devices[i].host_path;
        m->dev[i].permissions = (char *)al->devices[i].permissions;
        m->pdev[i] = &m->dev[i];
    }
    for (size_t i = 0; i < al->n_cdi; i++) {
        v1beta1__cdidevice__init(&m->cdi[i]);
        m->cdi[i].name = (char *)al->cdi_devices[i];
        m->pcdi[i] = &m->cdi[i];
    }
    m->r.n_envs = al->n_envs;
    m->r.envs = m->penv;
    m->r.n_annotations = al->n_annotations;
    m->r.annotations = m->pann;
    m->r.n_mounts = al->n_mounts;
    m->r.mounts = m->pmnt;
    m->r.n_devices = al->n_devices;
    m->r.devices = m->pdev;
    m->r.n_cdi_devices = al->n_cdi;
    m->r.cdi_devices = m->pcdi;
    return 0;
}

static void h_allocate(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    res_srv *s = ctx;
    gs_agent *a = s->a;
    int64_t t0 = now_us();
    V1beta1__AllocateRequest *rq = v1beta1__allocate_request__unpack(NULL, len, msg);
    if (!rq) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "malformed AllocateRequest");
        return;
    }
    size_t n = rq->n_container_requests;
    gs_devplugin_alloc *al = calloc(n ? n : 1, sizeof *al);
    alloc_msg *am = calloc(n ? n : 1, sizeof *am);
    V1beta1__ContainerAllocateResponse **pr = calloc(n ? n : 1, sizeof *pr);
    gs_error err;
    gs_error_clear(&err);
    int rc = (al && am && pr) ? 0 : gs_fail(&err, GS_ERR_NOMEM, "out of memory");
    size_t built = 0;
    uint8_t *buf = NULL;
    size_t blen = 0;
    pthread_mutex_lock(&a->mu);
    const gs_devplugin_resource *res = &a->plan.resources[s->idx];
    for (size_t i = 0; rc == 0 && i < n; i++) {
        V1beta1__ContainerAllocateRequest *c = rq->container_requests[i];
        rc = gs_devplugin_allocate(&a->plan, &a->o.plugin, res, (const char *const *)c->devices_ids,
                                   c->n_devices_ids, &al[i], &err);
        if (rc == 0) {
            built = i + 1;
            if (alloc_msg_build(&am[i], &al[i]) != 0)
                rc = gs_fail(&err, GS_ERR_NOMEM, "out of memory");
            pr[i] = &am[i].r;
        }
    }
    if (rc == 0) {
        V1beta1__AllocateResponse m = V1BETA1__ALLOCATE_RESPONSE__INIT;
        m.n_container_responses = n;
        m.container_responses = pr;
        blen = v1beta1__allocate_response__get_packed_size(&m);
        if ((buf = malloc(blen ? blen : 1)))
            v1beta1__allocate_response__pack(&m, buf);
        else
            rc = gs_fail(&err, GS_ERR_NOMEM, "out of memory");
    }
    s->allocs++;
    if (rc != 0) {
        s->alloc_fail++;
        /* the API's advice on a failed Allocate: fail it and send a ListAndWatch update,
         * so the kubelet's view (health) is current before it admits the next pod */
        push_resource(a, s - a->rs);
    }
    hist_add(&s->alloc_h, (uint64_t)(now_us() - t0));
    const char *name = res->name;
    pthread_mutex_unlock(&a->mu);
    if (rc == 0) {
        gs_grpc_reply(call, buf, blen);
    } else {
        logf_(a, GS_AGENT_WARN, "%s: Allocate refused: %s", name, err.msg);
        gs_grpc_fail(call, err.code == GS_ERR_NOMEM ? GS_GRPC_RESOURCE_EXHAUSTED : GS_GRPC_INVALID_ARGUMENT,
                     err.msg);
    }
    free(buf);
    for (size_t i = 0; i < built; i++) {
        alloc_msg_free(&am[i]);
        gs_devplugin_alloc_free(&al[i]);
    }
    free(al);
    free(am);
    free(pr);
    v1beta1__allocate_request__free_unpacked(rq, NULL);
}

/* ---------------------------------------------------------------- servers and registration */
static int server_create(gs_agent *a, res_srv *s, gs_error *err)
{
    gs_grpc_server *srv = NULL;
    if (gs_grpc_server_new(s->path, &srv, err) != 0)
        return -1;
    static const char *const P = "/v1beta1.DevicePlugin/";
    char path[128];
    struct {
        const char *m;
        bool streaming;
        gs_grpc_handler fn;
    } routes[] = {
        {"GetDevicePluginOptions", false, h_options}, {"ListAndWatch", true, h_law},
        {"GetPreferredAllocation", false, h_preferred}, {"Allocate", false, h_allocate},
        {"PreStartContainer", false, h_prestart},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        snprintf(path, sizeof path, "%s%s", P, routes[i].m);
        if (gs_grpc_server_route(srv, path, routes[i].streaming, routes[i].fn, s, err) != 0) {
            gs_grpc_server_free(srv);
            return -1;
        }
    }
    gs_grpc_server_on_closed(srv, on_closed, s);
    if (gs_grpc_server_start(srv, err) != 0) {
        gs_grpc_server_free(srv);
        return -1;
    }
    s->srv = srv;
    s->registered = false;
    (void)a;
    return 0;
}

static void server_destroy(res_srv *s)
{
    if (!s->srv)
        return;
    gs_grpc_server_stop(s->srv); /* kept streams get on_closed */
    gs_grpc_server_free(s->srv);
    s->srv = NULL;
}

static bool file_is_socket(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Register resource s with the kubelet (no lock held). */
static int register_one(gs_agent *a, res_srv *s)
{
    pthread_mutex_lock(&a->mu);
    const gs_devplugin_resource *r = &a->plan.resources[s->idx];
    V1beta1__DevicePluginOptions opt = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    opt.get_preferred_allocation_available = r->preferred_available;
    V1beta1__RegisterRequest rq = V1BETA1__REGISTER_REQUEST__INIT;
    rq.version = DP_VERSION;
    rq.endpoint = (char *)r->socket;
    rq.resource_name = (char *)r->name;
    rq.options = &opt;
    uint8_t buf[512];
    size_t len = v1beta1__register_request__get_packed_size(&rq);
    if (len > sizeof buf) {
        pthread_mutex_unlock(&a->mu);
        return -1;
    }
    v1beta1__register_request__pack(&rq, buf);
    char name[GS_DP_NAME_MAX];
    snprintf(name, sizeof name, "%s", r->name);
    pthread_mutex_unlock(&a->mu);

    gs_strbuf reply = {0}, smsg = {0};
    int status = -1;
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_grpc_unary(a->kubelet, "/v1beta1.Registration/Register", buf, len,
                           a->o.register_timeout_ms ? a->o.register_timeout_ms : 10000, &reply, &status, &smsg,
                           &err);
    pthread_mutex_lock(&a->mu);
    s->last_register_ms = now_ms();
    if (rc == 0 && status == GS_GRPC_OK) {
        s->registered = true;
        s->registrations++;
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        s->registered_wall_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
        s->last_error[0] = '\0';
    } else {
        s->register_failures++;
        if (rc != 0)
            snprintf(s->last_error, sizeof s->last_error, "%s", err.msg);
        else
            snprintf(s->last_error, sizeof s->last_error, "the kubelet refused it (gRPC status %d): %s", status,
                     gs_strbuf_cstr(&smsg));
    }
    char why[256];
    snprintf(why, sizeof why, "%s", s->last_error);
    pthread_mutex_unlock(&a->mu);
    gs_strbuf_free(&reply);
    gs_strbuf_free(&smsg);
    if (rc == 0 && status == GS_GRPC_OK) {
        logf_(a, GS_AGENT_INFO, "%s: registered with the kubelet (%s)", name, a->kubelet);
        return 0;
    }
    logf_(a, GS_AGENT_WARN, "%s: registration failed: %s; retrying every second", name, why);
    return -1;
}

static void *registrar(void *arg)
{
    gs_agent *a = arg;
    char evbuf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int64_t last_fail_log = 0;
    (void)last_fail_log;
    while (!atomic_load(&a->stop)) {
        bool kubelet_new = false;
        if (a->inotify_fd >= 0) {
            struct pollfd p = {.fd = a->inotify_fd, .events = POLLIN};
            int pr = poll(&p, 1, 1000);
            if (pr > 0) {
                ssize_t n = read(a->inotify_fd, evbuf, sizeof evbuf);
                for (ssize_t off = 0; n > 0 && off < n;) {
                    const struct inotify_event *e = (const struct inotify_event *)(evbuf + off);
                    if (e->len && strcmp(e->name, GS_AGENT_KUBELET_SOCKET) == 0 && (e->mask & (IN_CREATE | IN_MOVED_TO)))
                        kubelet_new = true;
                    off += (ssize_t)(sizeof *e + e->len);
                }
            }
        } else {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
        if (atomic_load(&a->stop))
            break;
        /* a registration made after this kubelet.sock appeared (the socket's re-creation
         * was noticed first) already reached the new kubelet */
        int64_t kubelet_born_ns = 0;
        struct stat kst;
        if (kubelet_new && stat(a->kubelet, &kst) == 0)
            kubelet_born_ns = (int64_t)kst.st_ctim.tv_sec * 1000000000 + kst.st_ctim.tv_nsec;
        if (kubelet_new)
            logf_(a, GS_AGENT_INFO, "kubelet.sock created (a kubelet restart): registering again");
        for (size_t i = 0; i < a->nrs; i++) {
            res_srv *s = &a->rs[i];
            if (!s->srv || !gs_grpc_server_socket_alive(s->srv)) {
                /* the kubelet removes every socket of the directory when it starts */
                server_destroy(s);
                gs_error err;
                gs_error_clear(&err);
                if (server_create(a, s, &err) != 0) {
                    logf_(a, GS_AGENT_ERROR, "%s: cannot serve %s: %s", a->plan.resources[s->idx].name, s->path,
                          err.msg);
                    continue;
                }
                logf_(a, GS_AGENT_INFO, "%s: socket %s was removed: serving it again",
                      a->plan.resources[s->idx].name, s->path);
            }
            pthread_mutex_lock(&a->mu);
            if (kubelet_new && s->registered_wall_ns < kubelet_born_ns)
                s->registered = false;
            bool need = !s->registered && !a->o.no_register;
            int64_t since = now_ms() - s->last_register_ms;
            pthread_mutex_unlock(&a->mu);
            if (need && file_is_socket(a->kubelet) && (kubelet_new || since >= 1000))
                register_one(a, s);
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- sampling and attribution */
static void idle_update(gs_agent *a, int64_t now)
{
    for (size_t g = 0; g < a->inv.n_gpus && g < a->samples.n_gpus; g++) {
        const gs_nvml_gpu *gpu = &a->inv.gpus[g];
        const gs_nvml_sample *sm = &a->samples.gpu[g];
        bool idle = sm->gpu_util >= 0 && sm->gpu_util < IDLE_UTIL_PCT;
        if (!idle)
            a->idle_since[g] = sm->gpu_util >= 0 ? now : -1;
        else if (a->idle_since[g] < 0)
            a->idle_since[g] = now;
        a->state[g].idle_seconds = a->idle_since[g] >= 0 && sm->gpu_util >= 0 ? (now - a->idle_since[g]) / 1000 : -1;
        /* MIG devices have no utilization in NVML (DCGM's profiling fields do): unknown */
        for (size_t m = 0; m < gpu->n_mig; m++)
            a->mig_idle_s[g][m] = -1;
    }
}

/* The PodResources List, into holders (strings in a fresh arena); no lock held. */
static int read_holders(gs_agent *a, gs_exporter_holder **out, size_t *nout, gs_arena *arena, gs_error *err)
{
    V1__ListPodResourcesRequest rq = V1__LIST_POD_RESOURCES_REQUEST__INIT;
    uint8_t buf[8];
    size_t len = v1__list_pod_resources_request__pack(&rq, buf);
    gs_strbuf reply = {0}, smsg = {0};
    int status = -1;
    int rc = gs_grpc_unary(a->podres, "/v1.PodResourcesLister/List", buf, len, 5000, &reply, &status, &smsg, err);
    if (rc == 0 && status != GS_GRPC_OK)
        rc = gs_fail(err, GS_ERR_IO, "PodResources List: gRPC status %d: %s", status, gs_strbuf_cstr(&smsg));
    V1__ListPodResourcesResponse *rs = NULL;
    if (rc == 0 && !(rs = v1__list_pod_resources_response__unpack(NULL, reply.len, (const uint8_t *)reply.buf)))
        rc = gs_fail(err, GS_ERR_PARSE, "PodResources List: malformed answer");
    size_t n = 0, cap = 0;
    gs_exporter_holder *h = NULL;
    for (size_t p = 0; rc == 0 && p < rs->n_pod_resources; p++) {
        const V1__PodResources *pr = rs->pod_resources[p];
        for (size_t c = 0; rc == 0 && c < pr->n_containers; c++) {
            const V1__ContainerResources *cr = pr->containers[c];
            for (size_t d = 0; rc == 0 && d < cr->n_devices; d++) {
                const V1__ContainerDevices *cd = cr->devices[d];
                for (size_t k = 0; k < cd->n_device_ids; k++) {
                    if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        gs_exporter_holder *nh = realloc(h, ncap * sizeof *nh);
                        if (!nh) {
                            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
                            break;
                        }
                        h = nh;
                        cap = ncap;
                    }
                    h[n].resource = gs_arena_strdup(arena, cd->resource_name);
                    h[n].device_id = gs_arena_strdup(arena, cd->device_ids[k]);
                    h[n].ns = gs_arena_strdup(arena, pr->namespace_);
                    h[n].pod = gs_arena_strdup(arena, pr->name);
                    h[n].container = gs_arena_strdup(arena, cr->name);
                    if (!h[n].resource || !h[n].device_id || !h[n].ns || !h[n].pod || !h[n].container) {
                        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
                        break;
                    }
                    n++;
                }
            }
        }
    }
    if (rs)
        v1__list_pod_resources_response__free_unpacked(rs, NULL);
    gs_strbuf_free(&reply);
    gs_strbuf_free(&smsg);
    if (rc != 0) {
        free(h);
        return -1;
    }
    *out = h;
    *nout = n;
    return 0;
}

static void *sampler(void *arg)
{
    gs_agent *a = arg;
    gs_nvml_samples scratch;
    memset(&scratch, 0, sizeof scratch);
    int64_t period = a->o.sample_interval_ms > 0 ? a->o.sample_interval_ms : 1000;
    int64_t attr_period = a->o.attribution_interval_ms > 0 ? a->o.attribution_interval_ms : 10000;
    int64_t next_attr = 0;
    bool podres_failing = false;
    while (!atomic_load(&a->stop)) {
        int64_t t = now_ms();
        gs_error err;
        gs_error_clear(&err);
        if (gs_nvml_sample_read(a->nvml, &a->inv, &scratch, &err) == 0) {
            pthread_mutex_lock(&a->mu);
            gs_nvml_samples tmp = a->samples;
            a->samples = scratch;
            scratch = tmp;
            a->have_samples = true;
            idle_update(a, t);
            pthread_mutex_unlock(&a->mu);
        } else {
            logf_(a, GS_AGENT_WARN, "sampling failed: %s", err.msg);
        }
        if (a->podres[0] && t >= next_attr) {
            next_attr = t + attr_period;
            gs_exporter_holder *h = NULL;
            size_t n = 0;
            gs_arena arena;
            gs_arena_init(&arena, 4096);
            gs_error_clear(&err);
            if (read_holders(a, &h, &n, &arena, &err) == 0) {
                pthread_mutex_lock(&a->mu);
                gs_exporter_holder *oh = a->holders;
                gs_arena oa = a->holders_arena;
                a->holders = h;
                a->nholders = n;
                a->holders_arena = arena;
                a->podres_ok++;
                pthread_mutex_unlock(&a->mu);
                free(oh);
                gs_arena_free(&oa);
                if (podres_failing)
                    logf_(a, GS_AGENT_INFO, "PodResources API answers again (%s)", a->podres);
                podres_failing = false;
            } else {
                gs_arena_free(&arena);
                pthread_mutex_lock(&a->mu);
                a->podres_fail++;
                pthread_mutex_unlock(&a->mu);
                if (!podres_failing)
                    logf_(a, GS_AGENT_WARN, "PodResources API (%s): %s; the GPU series carry no pod labels meanwhile",
                          a->podres, err.msg);
                podres_failing = true;
            }
        }
        int64_t left = t + period - now_ms();
        while (left > 0 && !atomic_load(&a->stop)) {
            int64_t step = left > 100 ? 100 : left;
            struct timespec ts = {0, (long)step * 1000000L};
            nanosleep(&ts, NULL);
            left -= step;
        }
    }
    gs_nvml_samples_free(&scratch);
    return NULL;
}

/* ---------------------------------------------------------------- metrics and readiness */
static void hist_render(gs_strbuf *sb, const char *name, const char *res, const hist *h)
{
    uint64_t cum = 0;
    for (size_t b = 0; b <= NB; b++) {
        cum += h->b[b];
        gs_strbuf_printf(sb, "%s_bucket{resource=\"%s\",le=\"%s\"} %llu\n", name, res, b < NB ? bucket_le[b] : "+Inf",
                         (unsigned long long)cum);
    }
    gs_strbuf_printf(sb, "%s_sum{resource=\"%s\"} %llu.%06llu\n", name, res, (unsigned long long)(h->sum_us / 1000000),
                     (unsigned long long)(h->sum_us % 1000000));
    gs_strbuf_printf(sb, "%s_count{resource=\"%s\"} %llu\n", name, res, (unsigned long long)h->count);
}

/* The NRI plugin's series (docs/metrics.md, "Agent"); nothing when it is off. */
static void nri_metrics(gs_agent *a, gs_strbuf *sb)
{
    if (!a->nri)
        return;
    gs_nri_stats ns;
    gs_nri_stats_get(a->nri, &ns);
    gs_strbuf_printf(sb,
                     "# HELP gpusched_agent_nri_connected 1 while the NRI plugin is registered with the runtime.\n"
                     "# TYPE gpusched_agent_nri_connected gauge\n"
                     "gpusched_agent_nri_connected %d\n"
                     "# HELP gpusched_agent_nri_connections_total Registrations with the runtime.\n"
                     "# TYPE gpusched_agent_nri_connections_total counter\n"
                     "gpusched_agent_nri_connections_total %llu\n"
                     "# HELP gpusched_agent_nri_containers_total CreateContainer answers, by outcome.\n"
                     "# TYPE gpusched_agent_nri_containers_total counter\n"
                     "gpusched_agent_nri_containers_total{outcome=\"injected\"} %llu\n"
                     "gpusched_agent_nri_containers_total{outcome=\"void\"} %llu\n"
                     "gpusched_agent_nri_containers_total{outcome=\"untouched\"} %llu\n"
                     "gpusched_agent_nri_containers_total{outcome=\"refused\"} %llu\n",
                     ns.connected ? 1 : 0, (unsigned long long)ns.connections, (unsigned long long)ns.injected,
                     (unsigned long long)ns.voided, (unsigned long long)ns.untouched, (unsigned long long)ns.refused);
}

void gs_agent_metrics(gs_agent *a, gs_strbuf *sb)
{
    pthread_mutex_lock(&a->mu);
    gs_exporter_input in;
    memset(&in, 0, sizeof in);
    in.inv = &a->inv;
    in.samples = a->have_samples ? &a->samples : NULL;
    in.state = a->state;
    in.holders = a->holders;
    in.nholders = a->nholders;
    gs_error err;
    gs_error_clear(&err);
    if (gs_exporter_render(&in, &a->o.exporter, sb, &err) != 0)
        gs_strbuf_printf(sb, "# gpusched agent: GPU series not rendered: %s\n", err.msg);

    gs_strbuf_puts(sb, "# HELP gpusched_agent_resource_registered 1 when the resource is registered with the "
                       "kubelet since its socket was last created.\n"
                       "# TYPE gpusched_agent_resource_registered gauge\n");
    for (size_t i = 0; i < a->nrs; i++)
        gs_strbuf_printf(sb, "gpusched_agent_resource_registered{resource=\"%s\"} %d\n",
                         a->plan.resources[a->rs[i].idx].name, a->rs[i].registered ? 1 : 0);
    gs_strbuf_puts(sb, "# HELP gpusched_agent_registrations_total Successful registrations with the kubelet "
                       "(the first, then one per kubelet restart).\n"
                       "# TYPE gpusched_agent_registrations_total counter\n");
    for (size_t i = 0; i < a->nrs; i++)
        gs_strbuf_printf(sb, "gpusched_agent_registrations_total{resource=\"%s\"} %llu\n",
                         a->plan.resources[a->rs[i].idx].name, (unsigned long long)a->rs[i].registrations);
    gs_strbuf_puts(sb, "# HELP gpusched_agent_registration_failures_total Registrations the kubelet did not "
                       "accept or that could not be made.\n"
                       "# TYPE gpusched_agent_registration_failures_total counter\n");
    for (size_t i = 0; i < a->nrs; i++)
        gs_strbuf_printf(sb, "gpusched_agent_registration_failures_total{resource=\"%s\"} %llu\n",
                         a->plan.resources[a->rs[i].idx].name, (unsigned long long)a->rs[i].register_failures);
    gs_strbuf_puts(sb, "# HELP gpusched_agent_list_and_watch_streams Open ListAndWatch streams.\n"
                       "# TYPE gpusched_agent_list_and_watch_streams gauge\n");
    for (size_t i = 0; i < a->nrs; i++)
        gs_strbuf_printf(sb, "gpusched_agent_list_and_watch_streams{resource=\"%s\"} %zu\n",
                         a->plan.resources[a->rs[i].idx].name, a->rs[i].nstreams);
    gs_strbuf_puts(sb, "# HELP gpusched_agent_list_and_watch_sent_total Device lists sent on ListAndWatch.\n"
                       "# TYPE gpusched_agent_list_and_watch_sent_total counter\n");
    for (size_t i = 0; i < a->nrs; i++)
        gs_strbuf_printf(sb, "gpusched_agent_list_and_watch_sent_total{resource=\"%s\"} %llu\n",
                         a->plan.resources[a->rs[i].idx].name, (unsigned long long)a->rs[i].law_sent);
    gs_strbuf_puts(sb, "# HELP gpusched_agent_devices Advertised devices by health.\n"
                       "# TYPE gpusched_agent_devices gauge\n");
    for (size_t i = 0; i < a->nrs; i++) {
        const gs_devplugin_resource *r = &a->plan.resources[a->rs[i].idx];
        size_t healthy = 0;
        for (size_t d = 0; d < r->n_devices; d++)
            healthy += r->devices[d].healthy;
        gs_strbuf_printf(sb, "gpusched_agent_devices{resource=\"%s\",health=\"Healthy\"} %zu\n", r->name, healthy);
        gs_strbuf_printf(sb, "gpusched_agent_devices{resource=\"%s\",health=\"Unhealthy\"} %zu\n", r->name,
                         r->n_devices - healthy);
    }
    gs_strbuf_puts(sb, "# HELP gpusched_agent_allocate_total Allocate calls, by result.\n"
                       "# TYPE gpusched_agent_allocate_total counter\n");
    for (size_t i = 0; i < a->nrs; i++) {
        const char *n = a->plan.resources[a->rs[i].idx].name;
        gs_strbuf_printf(sb, "gpusched_agent_allocate_total{resource=\"%s\",result=\"ok\"} %llu\n", n,
                         (unsigned long long)(a->rs[i].allocs - a->rs[i].alloc_fail));
        gs_strbuf_printf(sb, "gpusched_agent_allocate_total{resource=\"%s\",result=\"refused\"} %llu\n", n,
                         (unsigned long long)a->rs[i].alloc_fail);
    }
    gs_strbuf_puts(sb, "# HELP gpusched_agent_allocate_seconds Time to answer Allocate.\n"
                       "# TYPE gpusched_agent_allocate_seconds histogram\n");
    for (size_t i = 0; i < a->nrs; i++)
        hist_render(sb, "gpusched_agent_allocate_seconds", a->plan.resources[a->rs[i].idx].name, &a->rs[i].alloc_h);
    gs_strbuf_puts(sb, "# HELP gpusched_agent_preferred_allocation_seconds Time to answer GetPreferredAllocation.\n"
                       "# TYPE gpusched_agent_preferred_allocation_seconds histogram\n");
    for (size_t i = 0; i < a->nrs; i++)
        hist_render(sb, "gpusched_agent_preferred_allocation_seconds", a->plan.resources[a->rs[i].idx].name,
                    &a->rs[i].pref_h);
    gs_strbuf_printf(sb,
                     "# HELP gpusched_agent_nvml_events_total NVML events received (XID and ECC).\n"
                     "# TYPE gpusched_agent_nvml_events_total counter\n"
                     "gpusched_agent_nvml_events_total %llu\n"
                     "# HELP gpusched_agent_health_probes_total Probes of unhealthy devices.\n"
                     "# TYPE gpusched_agent_health_probes_total counter\n"
                     "gpusched_agent_health_probes_total %llu\n"
                     "# HELP gpusched_agent_pod_resources_reads_total PodResources List calls, by result.\n"
                     "# TYPE gpusched_agent_pod_resources_reads_total counter\n"
                     "gpusched_agent_pod_resources_reads_total{result=\"ok\"} %llu\n"
                     "gpusched_agent_pod_resources_reads_total{result=\"error\"} %llu\n",
                     (unsigned long long)a->events_seen, (unsigned long long)a->probes,
                     (unsigned long long)a->podres_ok, (unsigned long long)a->podres_fail);
    nri_metrics(a, sb);
    pthread_mutex_unlock(&a->mu);
}

bool gs_agent_ready(gs_agent *a, gs_strbuf *why)
{
    bool ok = true;
    gs_nri_stats ns;
    if (a->nri && (gs_nri_stats_get(a->nri, &ns), !ns.connected)) {
        gs_strbuf_puts(why, "the NRI plugin is not connected to the container runtime");
        ok = false;
    }
    pthread_mutex_lock(&a->mu);
    if (a->o.no_register) {
        pthread_mutex_unlock(&a->mu);
        return ok;
    }
    for (size_t i = 0; i < a->nrs; i++)
        if (!a->rs[i].registered) {
            gs_strbuf_printf(why, "%s%s not registered with the kubelet%s%s", ok ? "" : "; ",
                             a->plan.resources[a->rs[i].idx].name, a->rs[i].last_error[0] ? ": " : "",
                             a->rs[i].last_error);
            ok = false;
        }
    pthread_mutex_unlock(&a->mu);
    return ok;
}

const gs_gfd_labels *gs_agent_labels(const gs_agent *a)
{
    return &a->labels;
}

const gs_nvml_inventory *gs_agent_inventory(const gs_agent *a)
{
    return &a->inv;
}

/* ---------------------------------------------------------------- health */
/* Carry the tracker's device states into the plan (the lock held); the transitions are
 * copied into *chg for the callbacks. Returns whether any advertised device changed. */
typedef struct change {
    char uuid[GS_NVML_STR_MAX];
    bool healthy;
    char reason[GS_HEALTH_REASON_MAX];
} change;

static size_t health_apply(gs_agent *a, bool *state, change *chg, size_t cap)
{
    size_t nchg = 0, changed = 0;
    for (size_t i = 0; i < gs_health_count(a->health); i++) {
        const gs_health_device *d = gs_health_get(a->health, i);
        bool h = d->healthy != 0;
        if (h == state[i])
            continue;
        state[i] = h;
        const gs_nvml_gpu *g = &a->inv.gpus[d->gpu];
        int mig = d->mig >= 0 ? (int)g->mig[d->mig].index : -1;
        changed += gs_devplugin_plan_set_health(&a->plan, (int)g->index, mig, h);
        if (nchg < cap) {
            snprintf(chg[nchg].uuid, sizeof chg[nchg].uuid, "%s", d->uuid);
            chg[nchg].healthy = h;
            snprintf(chg[nchg].reason, sizeof chg[nchg].reason, "%s", h ? "answers again and was quiet" : d->reason);
            nchg++;
        }
    }
    if (changed)
        push_all(a);
    return nchg;
}

static void *health_loop(void *arg)
{
    gs_agent *a = arg;
    size_t ndev = gs_health_count(a->health);
    bool *state = calloc(ndev ? ndev : 1, sizeof *state);
    size_t *due = calloc(ndev ? ndev : 1, sizeof *due);
    change *chg = calloc(ndev ? ndev : 1, sizeof *chg);
    if (!state || !due || !chg) {
        logf_(a, GS_AGENT_ERROR, "health loop: out of memory; health checks are off");
        goto out;
    }
    for (size_t i = 0; i < ndev; i++)
        state[i] = true; /* the plan starts healthy (lost GPUs are not in it) */
    bool wait_failing = false;
    while (!atomic_load(&a->stop)) {
        gs_nvml_event ev;
        gs_error err;
        gs_error_clear(&err);
        int got = 0;
        if (a->ev) {
            got = gs_nvml_events_wait(a->ev, 1000, &ev, &err);
        } else {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
        int64_t t = now_ms();
        pthread_mutex_lock(&a->mu);
        if (got > 0) {
            a->events_seen++;
            gs_health_event(a->health, &ev, t);
            wait_failing = false;
        } else if (got < 0) {
            if (!wait_failing)
                gs_health_wait_error(a->health, err.msg, t);
            wait_failing = true;
        } else {
            wait_failing = false;
        }
        size_t ndue = gs_health_probe_due(a->health, t, due, ndev);
        char uuids[8][GS_NVML_STR_MAX];
        size_t idx[8], nprobe = 0;
        for (size_t k = 0; k < ndue && nprobe < 8; k++) {
            snprintf(uuids[nprobe], sizeof uuids[nprobe], "%s", gs_health_get(a->health, due[k])->uuid);
            idx[nprobe++] = due[k];
        }
        pthread_mutex_unlock(&a->mu);
        for (size_t k = 0; k < nprobe; k++) {
            gs_error perr;
            gs_error_clear(&perr);
            int ok = uuids[k][0] && gs_nvml_probe(a->nvml, uuids[k], &perr) == 0;
            pthread_mutex_lock(&a->mu);
            a->probes++;
            gs_health_probe_result(a->health, idx[k], ok, ok ? "" : perr.msg, now_ms());
            pthread_mutex_unlock(&a->mu);
        }
        pthread_mutex_lock(&a->mu);
        gs_health_tick(a->health, now_ms());
        size_t nchg = 0;
        if (gs_health_generation(a->health) != a->health_gen_seen) {
            a->health_gen_seen = gs_health_generation(a->health);
            nchg = health_apply(a, state, chg, ndev);
        }
        pthread_mutex_unlock(&a->mu);
        for (size_t k = 0; k < nchg; k++) {
            logf_(a, chg[k].healthy ? GS_AGENT_INFO : GS_AGENT_WARN, "%s: %s: %s", chg[k].uuid,
                  chg[k].healthy ? "healthy again" : "unhealthy", chg[k].reason);
            if (a->o.on_health)
                a->o.on_health(a->o.user, chg[k].uuid, chg[k].healthy, chg[k].reason);
        }
    }
out:
    free(state);
    free(due);
    free(chg);
    return NULL;
}

/* ---------------------------------------------------------------- start and stop */
void gs_agent_gfd_config(const gs_devplugin_config *plugin, const gs_gfd_config *base, gs_gfd_config *out)
{
    if (base)
        *out = *base;
    else
        memset(out, 0, sizeof *out);
    out->mig_strategy = plugin->mig_strategy;
    out->sharing = plugin->sharing;
    out->rename_by_default = plugin->rename_by_default;
    out->replicas = 1;
    for (size_t i = 0; plugin->sharing != GS_SHARING_NONE && i < plugin->n_replicated; i++)
        if (strcmp(plugin->replicated[i].name, "nvidia.com/gpu") == 0)
            out->replicas = plugin->replicated[i].replicas;
}

static int labels_compute(gs_agent *a, gs_error *err)
{
    gs_gfd_config g;
    gs_agent_gfd_config(&a->o.plugin, &a->o.gfd, &g);
    gs_gfd_labels_init(&a->labels);
    return gs_gfd_labels_compute(&a->inv, &g, &a->labels, err);
}

/* ---------------------------------------------------------------- NRI plugin (nri.h) */
static void nri_log(void *user, int level, const char *line)
{
    gs_agent *a = user;
    if (a->o.log)
        a->o.log(a->o.user, (gs_agent_log_level)level, line);
}

/* Share resources are healthy only while injection works: tell the kubelet at once. */
static void nri_state(void *user, bool connected)
{
    gs_agent *a = user;
    pthread_mutex_lock(&a->mu);
    if (gs_devplugin_plan_set_injection(&a->plan, connected))
        push_all(a);
    pthread_mutex_unlock(&a->mu);
}

static void nri_uninjected(void *user, const char *ns, const char *pod, const char *uid, const char *container,
                           const char *resource)
{
    gs_agent *a = user;
    if (a->o.on_uninjected)
        a->o.on_uninjected(a->o.user, ns, pod, uid, container, resource);
}

int gs_agent_start(const gs_agent_opts *opts, gs_agent **out, gs_error *err)
{
    gs_agent *a = calloc(1, sizeof *a);
    if (!a)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    a->o = *opts;
    a->inotify_fd = -1;
    a->started_ms = now_ms();
    pthread_mutex_init(&a->mu, NULL);
    gs_arena_init(&a->holders_arena, 4096);
    snprintf(a->node, sizeof a->node, "%s", opts->node ? opts->node : "");
    snprintf(a->dir, sizeof a->dir, "%s", opts->plugin_dir ? opts->plugin_dir : GS_AGENT_PLUGIN_DIR);
    snprintf(a->kubelet, sizeof a->kubelet, "%s/%s", a->dir, GS_AGENT_KUBELET_SOCKET);
    snprintf(a->podres, sizeof a->podres, "%s",
             opts->podresources_socket ? opts->podresources_socket : GS_AGENT_PODRESOURCES_SOCKET);
    a->o.node = a->node;
    a->o.exporter.hostname = a->o.exporter.hostname ? a->o.exporter.hostname : a->node;

    if (gs_nvml_open(opts->nvml_library, &a->nvml, err) != 0 || gs_nvml_discover(a->nvml, &a->inv, err) != 0)
        goto fail;
    if (gs_devplugin_plan_build(&a->inv, &a->o.plugin, &a->plan, err) != 0)
        goto fail;
    for (size_t i = 0; i < a->plan.n_notes; i++)
        logf_(a, GS_AGENT_WARN, "%s", a->plan.notes[i]);
    if (labels_compute(a, err) != 0)
        goto fail;
    if (!(a->health = gs_health_new(&a->inv, &a->o.health))) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    size_t ng = a->inv.n_gpus;
    a->idle_since = calloc(ng ? ng : 1, sizeof *a->idle_since);
    a->state = calloc(ng ? ng : 1, sizeof *a->state);
    a->mig_idle_s = calloc(ng ? ng : 1, sizeof *a->mig_idle_s);
    if (!a->idle_since || !a->state || !a->mig_idle_s) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t g = 0; g < ng; g++) {
        a->idle_since[g] = -1;
        a->state[g].last_xid = 0;
        a->state[g].idle_seconds = -1;
        if (a->inv.gpus[g].n_mig && !(a->mig_idle_s[g] = calloc(a->inv.gpus[g].n_mig, sizeof **a->mig_idle_s))) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        for (size_t m = 0; m < a->inv.gpus[g].n_mig; m++)
            a->mig_idle_s[g][m] = -1;
        a->state[g].mig_idle_seconds = a->mig_idle_s[g];
    }
    /* events: a GPU whose registration failed is unhealthy (not NOT_SUPPORTED: too old) */
    gs_error everr;
    gs_error_clear(&everr);
    if (gs_nvml_events_open(a->nvml, &a->inv, &a->ev, &everr) != 0) {
        logf_(a, GS_AGENT_WARN, "NVML events unavailable (%s): XIDs are not watched; probes still run", everr.msg);
        a->ev = NULL;
    } else {
        for (size_t g = 0; g < ng; g++) {
            const char *why = NULL;
            gs_nvml_reg reg = gs_nvml_events_registration(a->ev, g, NULL, &why);
            gs_health_registration(a->health, (int)g, reg, why ? why : "", now_ms());
        }
    }
    a->health_gen_seen = (uint64_t)-1; /* carry the initial states (lost at discovery) over */

    a->nrs = a->plan.n_resources;
    if (a->nrs && !(a->rs = calloc(a->nrs, sizeof *a->rs))) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < a->nrs; i++) {
        res_srv *s = &a->rs[i];
        s->a = a;
        s->idx = i;
        snprintf(s->path, sizeof s->path, "%s/%s", a->dir, a->plan.resources[i].socket);
        if (server_create(a, s, err) != 0)
            goto fail;
    }
    a->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (a->inotify_fd >= 0 && inotify_add_watch(a->inotify_fd, a->dir, IN_CREATE | IN_MOVED_TO | IN_DELETE) < 0) {
        logf_(a, GS_AGENT_WARN, "inotify on %s: %s; checking every second instead", a->dir, strerror(errno));
        close(a->inotify_fd);
        a->inotify_fd = -1;
    }
    /* first registration before the threads: the kubelet dials back at once */
    if (!a->o.no_register && file_is_socket(a->kubelet))
        for (size_t i = 0; i < a->nrs; i++)
            register_one(a, &a->rs[i]);
    else if (!a->o.no_register)
        logf_(a, GS_AGENT_WARN, "%s does not exist yet: registering when the kubelet creates it", a->kubelet);
    if (pthread_create(&a->t_reg, NULL, registrar, a) != 0 ||
        !(a->t_reg_on = true) || pthread_create(&a->t_health, NULL, health_loop, a) != 0 ||
        !(a->t_health_on = true) || pthread_create(&a->t_sample, NULL, sampler, a) != 0) {
        gs_fail(err, GS_ERR_NOMEM, "cannot start the agent's threads");
        goto fail;
    }
    a->t_sample_on = true;
    if (opts->nri_socket && *opts->nri_socket) {
        gs_nri_opts no = {.socket = opts->nri_socket, .node = a->node[0] ? a->node : NULL, .inv = &a->inv,
                          .log = nri_log, .on_state = nri_state, .mps_pipe_dir = opts->mps_pipe_dir,
                          .on_uninjected = opts->on_uninjected ? nri_uninjected : NULL, .user = a};
        if (gs_nri_start(&no, &a->nri, err) != 0)
            goto fail;
    }
    *out = a;
    return 0;
fail:
    gs_agent_stop(a);
    return -1;
}

void gs_agent_stop(gs_agent *a)
{
    if (!a)
        return;
    gs_nri_stop(a->nri); /* first: its state callback takes the lock and pushes */
    atomic_store(&a->stop, 1);
    if (a->t_reg_on)
        pthread_join(a->t_reg, NULL);
    if (a->t_health_on)
        pthread_join(a->t_health, NULL);
    if (a->t_sample_on)
        pthread_join(a->t_sample, NULL);
    for (size_t i = 0; i < a->nrs; i++) {
        server_destroy(&a->rs[i]);
        free(a->rs[i].streams);
    }
    free(a->rs);
    if (a->inotify_fd >= 0)
        close(a->inotify_fd);
    gs_nvml_events_close(a->ev);
    gs_health_free(a->health);
    gs_devplugin_plan_free(&a->plan);
    gs_gfd_labels_free(&a->labels);
    gs_nvml_samples_free(&a->samples);
    for (size_t g = 0; a->mig_idle_s && g < a->inv.n_gpus; g++)
        free(a->mig_idle_s[g]);
    free(a->mig_idle_s);
    free(a->idle_since);
    free(a->state);
    free(a->holders);
    gs_arena_free(&a->holders_arena);
    gs_nvml_inventory_free(&a->inv);
    gs_nvml_close(a->nvml);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
