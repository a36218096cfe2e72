/* grpc_echo_server.c - a DevicePlugin with canned answers on lib/agent/grpc.c, and a
 * PodResources client on gs_grpc_unary, for tests/agent/grpc-python-test.py (the kubelet
 * side is tests/agent/kubelet.py on python3-grpcio).
 *
 *   grpc_echo_server serve DP_SOCK [--register KUBELET_SOCK] [--version V] [--resource NAME]
 *       Serve v1beta1.DevicePlugin on DP_SOCK until SIGTERM/SIGINT (then exit 0):
 *       GetDevicePluginOptions: get_preferred_allocation_available = true.
 *       ListAndWatch: three lists 50 ms apart (GPU-0; GPU-0, GPU-1; GPU-0..GPU-2 with GPU-1
 *         Unhealthy), NUMA node 0 each, then the stream stays open.
 *       GetPreferredAllocation: must_include first, then available in order, up to the size.
 *       Allocate: per container NVIDIA_VISIBLE_DEVICES=<ids joined by ','>, a CDI device
 *         nvidia.com/gpu=<id> per id, annotation gpusched.test/authority=<:authority>.
 *       PreStartContainer: not routed (UNIMPLEMENTED).
 *       With --register: Register(version V, default v1beta1; endpoint = DP_SOCK's file
 *       name; resource NAME, default example.com/gpu) on KUBELET_SOCK after serving starts.
 *       stdout, one line each: "serving", "registered <status> <message>", "closed
 *       ListAndWatch" (the closed callback), "stopped".
 *   grpc_echo_server podresources PR_SOCK
 *       List and GetAllocatableResources over gs_grpc_unary; prints
 *       "pod <ns>/<name> <container> <resource> <id,id>" per container device entry and
 *       "allocatable <resource> <id,id>"; exit 0, or 1 with the error.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "gpusched/grpc.h"
#include "podresources/v1/api.pb-c.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void say(const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&mu);
    printf(fmt, a, b);
    fflush(stdout);
    pthread_mutex_unlock(&mu);
}

static void reply_msg(gs_grpc_call *call, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    protobuf_c_message_pack(m, buf);
    gs_grpc_reply(call, buf, n);
    free(buf);
}

static void options(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = 1;
    reply_msg(call, &o.base);
}

static void preferred(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    V1beta1__PreferredAllocationRequest *rq = v1beta1__preferred_allocation_request__unpack(NULL, len, msg);
    if (!rq) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "cannot decode PreferredAllocationRequest");
        return;
    }
    V1beta1__PreferredAllocationResponse rs = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    rs.n_container_responses = rq->n_container_requests;
    rs.container_responses = calloc(rq->n_container_requests + 1, sizeof *rs.container_responses);
    for (size_t i = 0; i < rq->n_container_requests; i++) {
        V1beta1__ContainerPreferredAllocationRequest *c = rq->container_requests[i];
        V1beta1__ContainerPreferredAllocationResponse *r = calloc(1, sizeof *r);
        v1beta1__container_preferred_allocation_response__init(r);
        r->deviceids = calloc(c->n_available_deviceids + c->n_must_include_deviceids + 1, sizeof(char *));
        for (size_t k = 0; k < c->n_must_include_deviceids && (int)r->n_deviceids < c->allocation_size; k++)
            r->deviceids[r->n_deviceids++] = c->must_include_deviceids[k];
        for (size_t k = 0; k < c->n_available_deviceids && (int)r->n_deviceids < c->allocation_size; k++) {
            bool dup = false;
            for (size_t j = 0; j < r->n_deviceids; j++)
                if (strcmp(r->deviceids[j], c->available_deviceids[k]) == 0) dup = true;
            if (!dup) r->deviceids[r->n_deviceids++] = c->available_deviceids[k];
        }
        rs.container_responses[i] = r;
    }
    reply_msg(call, &rs.base);
    for (size_t i = 0; i < rs.n_container_responses; i++) {
        free(rs.container_responses[i]->deviceids);
        free(rs.container_responses[i]);
    }
    free(rs.container_responses);
    v1beta1__preferred_allocation_request__free_unpacked(rq, NULL);
}

static void allocate(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    V1beta1__AllocateRequest *rq = v1beta1__allocate_request__unpack(NULL, len, msg);
    if (!rq) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "cannot decode AllocateRequest");
        return;
    }
    size_t n = rq->n_container_requests;
    V1beta1__AllocateResponse rs = V1BETA1__ALLOCATE_RESPONSE__INIT;
    V1beta1__ContainerAllocateResponse *cr = calloc(n + 1, sizeof *cr);
    V1beta1__ContainerAllocateResponse *ptrs[64];
    V1beta1__ContainerAllocateResponse__EnvsEntry env[64];
    V1beta1__ContainerAllocateResponse__EnvsEntry *envp[64];
    V1beta1__ContainerAllocateResponse__AnnotationsEntry ann[64];
    V1beta1__ContainerAllocateResponse__AnnotationsEntry *annp[64];
    V1beta1__CDIDevice cdi[256];
    V1beta1__CDIDevice *cdip[256];
    char names[256][128];
    char vis[64][1024];
    size_t ncdi = 0;
    if (n > 64) n = 64;
    for (size_t i = 0; i < n; i++) {
        V1beta1__ContainerAllocateRequest *c = rq->container_requests[i];
        v1beta1__container_allocate_response__init(&cr[i]);
        vis[i][0] = '\0';
        cr[i].cdi_devices = &cdip[ncdi];
        for (size_t k = 0; k < c->n_devices_ids && ncdi < 256; k++) {
            if (k) strncat(vis[i], ",", sizeof vis[i] - strlen(vis[i]) - 1);
            strncat(vis[i], c->devices_ids[k], sizeof vis[i] - strlen(vis[i]) - 1);
            v1beta1__cdidevice__init(&cdi[ncdi]);
            snprintf(names[ncdi], sizeof names[ncdi], "nvidia.com/gpu=%s", c->devices_ids[k]);
            cdi[ncdi].name = names[ncdi];
            cdip[ncdi] = &cdi[ncdi];
            ncdi++;
            cr[i].n_cdi_devices++;
        }
        v1beta1__container_allocate_response__envs_entry__init(&env[i]);
        env[i].key = "NVIDIA_VISIBLE_DEVICES";
        env[i].value = vis[i];
        envp[i] = &env[i];
        cr[i].n_envs = 1;
        cr[i].envs = &envp[i];
        v1beta1__container_allocate_response__annotations_entry__init(&ann[i]);
        ann[i].key = "gpusched.test/authority";
        ann[i].value = (char *)gs_grpc_call_authority(call);
        annp[i] = &ann[i];
        cr[i].n_annotations = 1;
        cr[i].annotations = &annp[i];
        ptrs[i] = &cr[i];
    }
    rs.n_container_responses = n;
    rs.container_responses = ptrs;
    reply_msg(call, &rs.base);
    free(cr);
    v1beta1__allocate_request__free_unpacked(rq, NULL);
}

typedef struct watcher {
    gs_grpc_call *call;
    bool closed;
} watcher;

static void list_msg(gs_grpc_call *call, int count)
{
    V1beta1__ListAndWatchResponse rs = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    V1beta1__Device dev[3], *devp[3];
    V1beta1__TopologyInfo topo = V1BETA1__TOPOLOGY_INFO__INIT;
    V1beta1__NUMANode node = V1BETA1__NUMANODE__INIT, *nodep = &node;
    char ids[3][16];
    topo.n_nodes = 1;
    topo.nodes = &nodep;
    for (int i = 0; i < count; i++) {
        v1beta1__device__init(&dev[i]);
        snprintf(ids[i], sizeof ids[i], "GPU-%d", i);
        dev[i].id = ids[i];
        dev[i].health = (count == 3 && i == 1) ? "Unhealthy" : "Healthy";
        dev[i].topology = &topo;
        devp[i] = &dev[i];
    }
    rs.n_devices = (size_t)count;
    rs.devices = devp;
    size_t n = v1beta1__list_and_watch_response__get_packed_size(&rs);
    uint8_t *buf = malloc(n + 1);
    v1beta1__list_and_watch_response__pack(&rs, buf);
    gs_grpc_send(call, buf, n);
    free(buf);
}

static void *watch_thread(void *arg)
{
    watcher *w = arg;
    for (int i = 1; i <= 3; i++) {
        list_msg(w->call, i);
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    pthread_mutex_lock(&mu);
    while (!w->closed) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    gs_grpc_call_release(w->call);
    free(w);
    return NULL;
}

#define MAX_WATCHERS 64
static watcher *watchers[MAX_WATCHERS];
static pthread_t watch_threads[MAX_WATCHERS];
static int nwatchers;

static void list_and_watch(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    pthread_mutex_lock(&mu);
    if (nwatchers == MAX_WATCHERS) {
        pthread_mutex_unlock(&mu);
        gs_grpc_finish(call, GS_GRPC_RESOURCE_EXHAUSTED, "too many watchers");
        gs_grpc_call_release(call);
        return;
    }
    watcher *w = calloc(1, sizeof *w);
    w->call = call;
    watchers[nwatchers] = w;
    pthread_create(&watch_threads[nwatchers], NULL, watch_thread, w);
    nwatchers++;
    pthread_mutex_unlock(&mu);
}

static void on_closed(void *ctx, gs_grpc_call *call)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nwatchers; i++)
        if (watchers[i]->call == call) watchers[i]->closed = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    say("closed ListAndWatch%s%s\n", "", "");
}

static int do_register(const char *kubelet, const char *dp_sock, const char *version, const char *resource)
{
    const char *base = strrchr(dp_sock, '/');
    V1beta1__RegisterRequest rq = V1BETA1__REGISTER_REQUEST__INIT;
    V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    o.get_preferred_allocation_available = 1;
    rq.version = (char *)version;
    rq.endpoint = (char *)(base ? base + 1 : dp_sock);
    rq.resource_name = (char *)resource;
    rq.options = &o;
    uint8_t buf[1024];
    size_t n = v1beta1__register_request__pack(&rq, buf);
    gs_strbuf reply = GS_STRBUF_INIT, smsg = GS_STRBUF_INIT;
    int status = -1;
    gs_error err;
    if (gs_grpc_unary(kubelet, "/v1beta1.Registration/Register", buf, n, 5000, &reply, &status, &smsg, &err) != 0) {
        say("register-error %s%s\n", err.msg, "");
        return -1;
    }
    char st[16];
    snprintf(st, sizeof st, "%d", status);
    say("registered %s %s\n", st, gs_strbuf_cstr(&smsg));
    gs_strbuf_free(&reply);
    gs_strbuf_free(&smsg);
    return 0;
}

static int serve(int argc, char **argv)
{
    const char *sock = argv[2], *kubelet = NULL, *version = "v1beta1", *resource = "example.com/gpu";
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--register") == 0) kubelet = argv[i + 1];
        else if (strcmp(argv[i], "--version") == 0) version = argv[i + 1];
        else if (strcmp(argv[i], "--resource") == 0) resource = argv[i + 1];
        else {
            fprintf(stderr, "grpc_echo_server: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    gs_grpc_server *s;
    gs_error err;
    if (gs_grpc_server_new(sock, &s, &err) != 0 ||
        gs_grpc_server_route(s, "/v1beta1.DevicePlugin/GetDevicePluginOptions", false, options, NULL, &err) ||
        gs_grpc_server_route(s, "/v1beta1.DevicePlugin/ListAndWatch", true, list_and_watch, NULL, &err) ||
        gs_grpc_server_route(s, "/v1beta1.DevicePlugin/GetPreferredAllocation", false, preferred, NULL, &err) ||
        gs_grpc_server_route(s, "/v1beta1.DevicePlugin/Allocate", false, allocate, NULL, &err)) {
        fprintf(stderr, "grpc_echo_server: %s\n", err.msg);
        return 1;
    }
    gs_grpc_server_on_closed(s, on_closed, NULL);
    if (gs_grpc_server_start(s, &err) != 0) {
        fprintf(stderr, "grpc_echo_server: %s\n", err.msg);
        return 1;
    }
    say("serving%s%s\n", "", "");
    if (kubelet) do_register(kubelet, sock, version, resource);
    int sig;
    sigwait(&set, &sig);
    gs_grpc_server_stop(s);
    for (int i = 0; i < nwatchers; i++) pthread_join(watch_threads[i], NULL);
    gs_grpc_server_free(s);
    say("stopped%s%s\n", "", "");
    return 0;
}

static void ids(char *out, size_t cap, char **v, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i) strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, v[i], cap - strlen(out) - 1);
    }
}

static int podresources(const char *sock)
{
    gs_strbuf reply = GS_STRBUF_INIT, smsg = GS_STRBUF_INIT;
    int status = -1;
    gs_error err;
    char line[4096];
    if (gs_grpc_unary(sock, "/v1.PodResourcesLister/List", NULL, 0, 5000, &reply, &status, &smsg, &err) != 0) {
        fprintf(stderr, "grpc_echo_server: %s\n", err.msg);
        return 1;
    }
    if (status != 0) {
        fprintf(stderr, "grpc_echo_server: List: status %d: %s\n", status, gs_strbuf_cstr(&smsg));
        return 1;
    }
    V1__ListPodResourcesResponse *l = v1__list_pod_resources_response__unpack(NULL, reply.len, (uint8_t *)reply.buf);
    if (!l) {
        fprintf(stderr, "grpc_echo_server: List: cannot decode the answer\n");
        return 1;
    }
    for (size_t p = 0; p < l->n_pod_resources; p++) {
        V1__PodResources *pr = l->pod_resources[p];
        for (size_t c = 0; c < pr->n_containers; c++)
            for (size_t d = 0; d < pr->containers[c]->n_devices; d++) {
                V1__ContainerDevices *cd = pr->containers[c]->devices[d];
                ids(line, sizeof line, cd->device_ids, cd->n_device_ids);
                printf("pod %s/%s %s %s %s\n", pr->namespace_, pr->name, pr->containers[c]->name,
                       cd->resource_name, line);
            }
    }
    v1__list_pod_resources_response__free_unpacked(l, NULL);
    gs_strbuf_reset(&reply);
    if (gs_grpc_unary(sock, "/v1.PodResourcesLister/GetAllocatableResources", NULL, 0, 5000, &reply,
                      &status, &smsg, &err) != 0 || status != 0) {
        fprintf(stderr, "grpc_echo_server: GetAllocatableResources: %s %d\n", err.msg, status);
        return 1;
    }
    V1__AllocatableResourcesResponse *a =
        v1__allocatable_resources_response__unpack(NULL, reply.len, (uint8_t *)reply.buf);
    if (!a) {
        fprintf(stderr, "grpc_echo_server: GetAllocatableResources: cannot decode the answer\n");
        return 1;
    }
    for (size_t d = 0; d < a->n_devices; d++) {
        ids(line, sizeof line, a->devices[d]->device_ids, a->devices[d]->n_device_ids);
        printf("allocatable %s %s\n", a->devices[d]->resource_name, line);
    }
    v1__allocatable_resources_response__free_unpacked(a, NULL);
    gs_strbuf_free(&reply);
    gs_strbuf_free(&smsg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "serve") == 0) return serve(argc, argv);
    if (argc == 3 && strcmp(argv[1], "podresources") == 0) return podresources(argv[2]);
    fprintf(stderr, "usage: grpc_echo_server serve DP_SOCK [--register KUBELET_SOCK] [--version V] "
                    "[--resource NAME] | podresources PR_SOCK\n");
    return 2;
}
