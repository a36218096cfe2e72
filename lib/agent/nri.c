/*
 * nri.c - the node agent's NRI plugin (nri.h): registration, Configure, Synchronize and
 * CreateContainer over ttrpc (ttrpc.c), the adjustment from inject.c's rule.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/nri_int.h"
#include "gpusched/assign.h"
#include "nri/api.pb-c.h"

#define NRI_PLUGIN_SERVICE "nri.pkg.api.v1alpha1.Plugin"
#define NRI_RUNTIME_SERVICE "nri.pkg.api.v1alpha1.Runtime"
#define MAX_TEXT (1u << 20) /* /proc files read */

typedef Nri__Pkg__Api__V1alpha1__PodSandbox PodSandbox;
typedef Nri__Pkg__Api__V1alpha1__Container Container;

struct gs_nri {
    char *socket, *name, *index, *node, *proc_root, *mps;
    const gs_nvml_inventory *inv;
    long reconnect_ms;
    gs_nri_log_fn log;
    gs_nri_state_fn on_state;
    gs_nri_uninjected_fn on_uninjected;
    void *user;
    gs_inject_host host;
    gs_assign_record *rec; /* scratch, used on the thread only */
    gs_inject_result res;
    gs_inject_book *book; /* what the live pods hold (thread only) */
    bool syncing;         /* inside a (split) Synchronize */
    int wake[2];
    pthread_t thread;
    bool started;
    pthread_mutex_t mu; /* stats, stop */
    bool stop;
    gs_nri_stats stats;
    bool sync_done;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void logf_(gs_nri *n, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(gs_nri *n, int level, const char *fmt, ...)
{
    if (!n->log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    n->log(n->user, level, line);
}

static char *dup_or(const char *s, const char *dflt)
{
    return strdup(s && *s ? s : dflt);
}

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = malloc(MAX_TEXT + 1);
    size_t n = buf ? fread(buf, 1, MAX_TEXT, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

int gs_nri_open(const gs_nri_opts *o, gs_nri **out, gs_error *err)
{
    *out = NULL;
    const char *idx = o->plugin_index && *o->plugin_index ? o->plugin_index : GS_NRI_PLUGIN_INDEX;
    if (strlen(idx) != 2 || idx[0] < '0' || idx[0] > '9' || idx[1] < '0' || idx[1] > '9')
        return gs_fail(err, GS_ERR_USAGE, "NRI plugin index \"%s\": expected two digits (00..99)", idx);
    const char *sock = o->socket && *o->socket ? o->socket : GS_NRI_SOCKET;
    struct sockaddr_un sa;
    if (strlen(sock) >= sizeof sa.sun_path)
        return gs_fail(err, GS_ERR_USAGE, "NRI socket path too long (%zu bytes, at most %zu)", strlen(sock),
                       sizeof sa.sun_path - 1);
    gs_nri *n = calloc(1, sizeof *n);
    if (!n)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    n->wake[0] = n->wake[1] = -1;
    pthread_mutex_init(&n->mu, NULL);
    n->socket = strdup(sock);
    n->name = dup_or(o->plugin_name, GS_NRI_PLUGIN_NAME);
    n->index = strdup(idx);
    n->node = o->node && *o->node ? strdup(o->node) : NULL;
    n->proc_root = dup_or(o->proc_root, "/proc");
    n->mps = o->mps_pipe_dir && *o->mps_pipe_dir ? strdup(o->mps_pipe_dir) : NULL;
    n->inv = o->inv;
    n->reconnect_ms = o->reconnect_ms > 0 ? o->reconnect_ms : 1000;
    n->log = o->log;
    n->on_state = o->on_state;
    n->on_uninjected = o->on_uninjected;
    n->user = o->user;
    n->rec = malloc(sizeof *n->rec);
    gs_nvml_inventory none = {0};
    n->book = gs_inject_book_new(o->inv ? o->inv : &none);
    if (!n->socket || !n->name || !n->index || !n->proc_root || !n->rec || !n->book || (o->node && *o->node && !n->node) ||
        (o->mps_pipe_dir && *o->mps_pipe_dir && !n->mps) || pipe2(n->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        gs_nri_stop(n);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory (or no pipe: %s)", strerror(errno));
    }
    gs_inject_host_init(&n->host);
    n->host.mps_pipe_dir = n->mps;
    char path[4096];
    size_t len;
    snprintf(path, sizeof path, "%s/devices", n->proc_root);
    char *text = read_text(path, &len);
    if (text) {
        gs_inject_host_parse_devices(&n->host, text, len);
        free(text);
    }
    snprintf(path, sizeof path, "%s/driver/nvidia-caps/mig-minors", n->proc_root);
    text = read_text(path, &len);
    if (text) {
        gs_error e;
        if (gs_inject_host_parse_mig_minors(&n->host, path, text, len, &e) < 0) {
            char msg[700];
            gs_error_format(&e, msg, sizeof msg);
            logf_(n, 1, "NRI: MIG capability minors not read (MIG capability nodes will not be injected): %s", msg);
        }
        free(text);
    }
    *out = n;
    return 0;
}

/* ================================================================ the plugin service */

static void fail(gs_ttrpc_reply *rep, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(gs_ttrpc_reply *rep, int code, const char *fmt, ...)
{
    rep->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->message, sizeof rep->message, fmt, ap);
    va_end(ap);
}

static void pack(gs_ttrpc_reply *rep, const ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    rep->payload = malloc(len ? len : 1);
    if (!rep->payload) {
        fail(rep, GS_TTRPC_INTERNAL, "out of memory");
        return;
    }
    protobuf_c_message_pack(m, rep->payload);
    rep->len = len;
}

static const char *pod_ann(const PodSandbox *p, const char *key)
{
    for (size_t i = 0; p && i < p->n_annotations; i++)
        if (p->annotations[i]->key && !strcmp(p->annotations[i]->key, key))
            return p->annotations[i]->value;
    return NULL;
}

static const char *ctr_ann(const Container *c, const char *key)
{
    for (size_t i = 0; c && i < c->n_annotations; i++)
        if (c->annotations[i]->key && !strcmp(c->annotations[i]->key, key))
            return c->annotations[i]->value;
    return NULL;
}

static const char *ctr_env(const Container *c, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; c && i < c->n_env; i++)
        if (c->env[i] && !strncmp(c->env[i], key, kl) && c->env[i][kl] == '=')
            return c->env[i] + kl + 1;
    return NULL;
}

static void set_stat(gs_nri *n, uint64_t *counter)
{
    pthread_mutex_lock(&n->mu);
    (*counter)++;
    pthread_mutex_unlock(&n->mu);
}

static void do_configure(gs_nri *n, const gs_ttrpc_request *req, gs_ttrpc_reply *rep)
{
    Nri__Pkg__Api__V1alpha1__ConfigureRequest *c =
        nri__pkg__api__v1alpha1__configure_request__unpack(NULL, req->len, req->payload);
    if (!c) {
        fail(rep, GS_TTRPC_INVALID_ARGUMENT, "gpusched: cannot decode ConfigureRequest");
        return;
    }
    pthread_mutex_lock(&n->mu);
    n->stats.request_timeout_ms = c->request_timeout;
    snprintf(n->stats.runtime, sizeof n->stats.runtime, "%.60s %.60s", c->runtime_name, c->runtime_version);
    pthread_mutex_unlock(&n->mu);
    logf_(n, 0, "NRI: configured by %s %s (NRI %s), request timeout %lld ms, registration timeout %lld ms",
          c->runtime_name, c->runtime_version, c->nri_version[0] ? c->nri_version : "unknown",
          (long long)c->request_timeout, (long long)c->registration_timeout);
    nri__pkg__api__v1alpha1__configure_request__free_unpacked(c, NULL);
    Nri__Pkg__Api__V1alpha1__FailurePolicy fp = NRI__PKG__API__V1ALPHA1__FAILURE_POLICY__INIT;
    fp.fail_request = true;
    Nri__Pkg__Api__V1alpha1__ConfigureResponse r = NRI__PKG__API__V1ALPHA1__CONFIGURE_RESPONSE__INIT;
    r.events = 1 << (NRI__PKG__API__V1ALPHA1__EVENT__CREATE_CONTAINER - 1) |
               1 << (NRI__PKG__API__V1ALPHA1__EVENT__STOP_POD_SANDBOX - 1) |
               1 << (NRI__PKG__API__V1ALPHA1__EVENT__REMOVE_POD_SANDBOX - 1);
    r.failure_policy = &fp;
    pack(rep, &r.base);
}

static void do_synchronize(gs_nri *n, const gs_ttrpc_request *req, gs_ttrpc_reply *rep)
{
    Nri__Pkg__Api__V1alpha1__SynchronizeRequest *s =
        nri__pkg__api__v1alpha1__synchronize_request__unpack(NULL, req->len, req->payload);
    if (!s) {
        fail(rep, GS_TTRPC_INVALID_ARGUMENT, "gpusched: cannot decode SynchronizeRequest");
        return;
    }
    if (!n->syncing)
        gs_inject_book_clear(n->book);
    n->syncing = s->more;
    for (size_t i = 0; i < s->n_pods; i++) {
        const PodSandbox *p = s->pods[i];
        const char *a = pod_ann(p, GS_ASSIGN_ANNOTATION);
        gs_error err;
        if (!a)
            continue;
        if (gs_assign_decode(a, strlen(a), p->uid, n->rec, &err) < 0 ||
            gs_inject_book_admit(n->book, n->rec, n->node, &err) < 0) {
            char msg[700];
            gs_error_format(&err, msg, sizeof msg);
            logf_(n, 1, "NRI: pod %s/%s: its record is not counted: %s", p->namespace_, p->name, msg);
        }
    }
    size_t missing = 0;
    for (size_t i = 0; i < s->n_containers; i++) {
        const Container *c = s->containers[i];
        const char *share = ctr_ann(c, GS_INJECT_SHARE_ANNOTATION);
        const char *vis = ctr_env(c, "NVIDIA_VISIBLE_DEVICES");
        if (!share || (vis && strcmp(vis, "void")))
            continue;
        const PodSandbox *p = NULL;
        for (size_t j = 0; j < s->n_pods; j++)
            if (s->pods[j]->id && c->pod_sandbox_id && !strcmp(s->pods[j]->id, c->pod_sandbox_id))
                p = s->pods[j];
        missing++;
        logf_(n, 1,
              "NRI: container %s/%s/%s (%s) asked for %s and runs without its devices (created while the plugin was "
              "not registered)%s",
              p ? p->namespace_ : "?", p ? p->name : "?", c->name, c->id, share,
              n->on_uninjected && p ? ": evicting its pod" : ": delete the pod to have it created again");
        if (n->on_uninjected && p)
            n->on_uninjected(n->user, p->namespace_, p->name, p->uid, c->name, share);
    }
    bool more = s->more;
    logf_(n, 0, "NRI: synchronized: %zu pods (%zu with a record), %zu containers%s%s", s->n_pods,
          gs_inject_book_pods(n->book), s->n_containers,
          missing ? ", some without injection (see above)" : "", more ? " (more to come)" : "");
    nri__pkg__api__v1alpha1__synchronize_request__free_unpacked(s, NULL);
    Nri__Pkg__Api__V1alpha1__SynchronizeResponse r = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_RESPONSE__INIT;
    r.more = more; /* the runtime checks the echo when it splits the state */
    pack(rep, &r.base);
    if (!more && rep->code == 0)
        n->sync_done = true;
}

static void do_create(gs_nri *n, const gs_ttrpc_request *req, gs_ttrpc_reply *rep)
{
    Nri__Pkg__Api__V1alpha1__CreateContainerRequest *cr =
        nri__pkg__api__v1alpha1__create_container_request__unpack(NULL, req->len, req->payload);
    if (!cr) {
        fail(rep, GS_TTRPC_INVALID_ARGUMENT, "gpusched: cannot decode CreateContainerRequest");
        set_stat(n, &n->stats.refused);
        return;
    }
    const PodSandbox *p = cr->pod;
    const Container *c = cr->container;
    const char *a = pod_ann(p, GS_ASSIGN_ANNOTATION);
    gs_inject_request ir = {.pod_uid = p ? p->uid : NULL, .pod_namespace = p ? p->namespace_ : NULL,
                            .pod_name = p ? p->name : NULL, .assignment = a, .assignment_len = a ? strlen(a) : 0,
                            .container = c ? c->name : NULL, .share_resource = ctr_ann(c, GS_INJECT_SHARE_ANNOTATION)};
    gs_error err;
    gs_inject_result *o = &n->res;
    gs_nvml_inventory none = {0};
    if (gs_inject_decide(&ir, n->node, n->inv ? n->inv : &none, &n->host, n->rec, o, &err) < 0) {
        char msg[900];
        gs_error_format(&err, msg, sizeof msg);
        fail(rep, GS_TTRPC_FAILED_PRECONDITION, "gpusched: %s", msg);
        logf_(n, 1, "NRI: container creation refused: %s", msg);
        set_stat(n, &n->stats.refused);
        nri__pkg__api__v1alpha1__create_container_request__free_unpacked(cr, NULL);
        return;
    }
    if (o->action != GS_INJECT_NONE && gs_inject_book_admit(n->book, n->rec, n->node, &err) < 0) {
        char who[400], msg[900];
        snprintf(who, sizeof who, "Pod %s/%s container %s: ", p ? p->namespace_ : "", p ? p->name : "",
                 c ? c->name : "");
        gs_error_prefix_path(&err, who);
        gs_error_format(&err, msg, sizeof msg);
        fail(rep, GS_TTRPC_FAILED_PRECONDITION, "gpusched: %s", msg);
        logf_(n, 1, "NRI: container creation refused: %s", msg);
        set_stat(n, &n->stats.refused);
        nri__pkg__api__v1alpha1__create_container_request__free_unpacked(cr, NULL);
        return;
    }
    nri__pkg__api__v1alpha1__create_container_request__free_unpacked(cr, NULL);

    Nri__Pkg__Api__V1alpha1__CreateContainerResponse r = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_RESPONSE__INIT;
    Nri__Pkg__Api__V1alpha1__ContainerAdjustment adj = NRI__PKG__API__V1ALPHA1__CONTAINER_ADJUSTMENT__INIT;
    Nri__Pkg__Api__V1alpha1__LinuxContainerAdjustment lin = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER_ADJUSTMENT__INIT;
    Nri__Pkg__Api__V1alpha1__KeyValue kv[GS_INJECT_MAX_ENV], *kvp[GS_INJECT_MAX_ENV];
    Nri__Pkg__Api__V1alpha1__LinuxDevice dv[GS_INJECT_MAX_NODES], *dvp[GS_INJECT_MAX_NODES];
    Nri__Pkg__Api__V1alpha1__OptionalFileMode mode = NRI__PKG__API__V1ALPHA1__OPTIONAL_FILE_MODE__INIT;
    Nri__Pkg__Api__V1alpha1__Mount mt[GS_INJECT_MAX_MOUNTS], *mtp[GS_INJECT_MAX_MOUNTS];
    static char *bind_opts[] = {"rbind", "rw"};
    mode.value = 0666; /* permission bits (Go's os.FileMode.Perm); the type is "c" */
    if (o->action != GS_INJECT_NONE) {
        for (size_t i = 0; i < o->n_env; i++) {
            nri__pkg__api__v1alpha1__key_value__init(&kv[i]);
            kv[i].key = o->env[i].key;
            kv[i].value = o->env[i].value;
            kvp[i] = &kv[i];
        }
        adj.n_env = o->n_env;
        adj.env = kvp;
        for (size_t i = 0; i < o->n_nodes; i++) {
            nri__pkg__api__v1alpha1__linux_device__init(&dv[i]);
            dv[i].path = o->nodes[i].path;
            dv[i].type = "c";
            dv[i].major = o->nodes[i].major;
            dv[i].minor = o->nodes[i].minor;
            dv[i].file_mode = &mode;
            dvp[i] = &dv[i];
        }
        if (o->n_nodes) {
            lin.n_devices = o->n_nodes;
            lin.devices = dvp;
            adj.linux = &lin;
        }
        for (size_t i = 0; i < o->n_mounts; i++) {
            nri__pkg__api__v1alpha1__mount__init(&mt[i]);
            mt[i].destination = o->mounts[i].destination;
            mt[i].source = o->mounts[i].source;
            mt[i].type = "bind";
            mt[i].n_options = 2;
            mt[i].options = bind_opts;
            mtp[i] = &mt[i];
        }
        adj.n_mounts = o->n_mounts;
        adj.mounts = mtp;
        r.adjust = &adj;
    }
    pack(rep, &r.base);
    set_stat(n, o->action == GS_INJECT_DEVICES ? &n->stats.injected
                : o->action == GS_INJECT_VOID  ? &n->stats.voided
                                               : &n->stats.untouched);
    if (o->action != GS_INJECT_NONE)
        logf_(n, 0, "NRI: %s", o->summary);
}

/* StopPodSandbox / RemovePodSandbox: the pod's devices are free again. */
static void do_release(gs_nri *n, const gs_ttrpc_request *req, gs_ttrpc_reply *rep)
{
    /* both requests are {PodSandbox pod = 1}; so are both (empty) answers */
    Nri__Pkg__Api__V1alpha1__StopPodSandboxRequest *s =
        nri__pkg__api__v1alpha1__stop_pod_sandbox_request__unpack(NULL, req->len, req->payload);
    if (!s) {
        fail(rep, GS_TTRPC_INVALID_ARGUMENT, "gpusched: cannot decode %s", req->method);
        return;
    }
    if (s->pod && gs_inject_book_release(n->book, s->pod->uid))
        logf_(n, 0, "NRI: pod %s/%s stopped: its devices are free (%zu pods with a record)", s->pod->namespace_,
              s->pod->name, gs_inject_book_pods(n->book));
    nri__pkg__api__v1alpha1__stop_pod_sandbox_request__free_unpacked(s, NULL);
    Nri__Pkg__Api__V1alpha1__StopPodSandboxResponse r = NRI__PKG__API__V1ALPHA1__STOP_POD_SANDBOX_RESPONSE__INIT;
    pack(rep, &r.base);
}

void gs_nri_handle(void *ud, const gs_ttrpc_request *req, gs_ttrpc_reply *rep)
{
    gs_nri *n = ud;
    int64_t t0 = mono_ms();
    if (!req->service || strcmp(req->service, NRI_PLUGIN_SERVICE)) {
        fail(rep, GS_TTRPC_UNIMPLEMENTED, "service %.200s not implemented", req->service ? req->service : "");
        return;
    }
    const char *m = req->method ? req->method : "";
    if (!strcmp(m, "Configure"))
        do_configure(n, req, rep);
    else if (!strcmp(m, "Synchronize"))
        do_synchronize(n, req, rep);
    else if (!strcmp(m, "CreateContainer"))
        do_create(n, req, rep);
    else if (!strcmp(m, "StopPodSandbox") || !strcmp(m, "RemovePodSandbox"))
        do_release(n, req, rep);
    else if (!strcmp(m, "Shutdown") || !strcmp(m, "StateChange")) {
        Nri__Pkg__Api__V1alpha1__Empty e = NRI__PKG__API__V1ALPHA1__EMPTY__INIT;
        pack(rep, &e.base);
        if (!strcmp(m, "Shutdown"))
            logf_(n, 0, "NRI: the runtime is shutting down");
    } else {
        fail(rep, GS_TTRPC_UNIMPLEMENTED, "method %.200s not implemented", m);
        return;
    }
    int64_t took = mono_ms() - t0;
    pthread_mutex_lock(&n->mu);
    int64_t limit = n->stats.request_timeout_ms;
    pthread_mutex_unlock(&n->mu);
    if (limit > 0 && took * 2 > limit)
        logf_(n, 1, "NRI: %s took %lld ms, the runtime's request timeout is %lld ms", m, (long long)took,
              (long long)limit);
}

/* ================================================================ the thread */

static bool stopping(gs_nri *n)
{
    pthread_mutex_lock(&n->mu);
    bool s = n->stop;
    pthread_mutex_unlock(&n->mu);
    return s;
}

static void set_connected(gs_nri *n, bool on)
{
    pthread_mutex_lock(&n->mu);
    bool was = n->stats.connected;
    n->stats.connected = on;
    if (on)
        n->stats.connections++;
    pthread_mutex_unlock(&n->mu);
    if (was != on && n->on_state)
        n->on_state(n->user, on);
}

/* Sleep ms, or less when woken. */
static void nap(gs_nri *n, long ms)
{
    struct pollfd pf = {.fd = n->wake[0], .events = POLLIN};
    (void)poll(&pf, 1, (int)ms);
}

static int dial(const char *path, gs_error *err)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return gs_fail(err, GS_ERR_IO, "socket: %s", strerror(errno));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        return gs_fail(err, GS_ERR_IO, "connect %s: %s", path, strerror(e));
    }
    return fd;
}

static void session(gs_nri *n, int fd)
{
    gs_ttrpc_conn c;
    gs_ttrpc_conn_init(&c, fd, n->wake[0], gs_nri_handle, n);
    n->sync_done = false;
    n->syncing = false;
    gs_error err;
    Nri__Pkg__Api__V1alpha1__RegisterPluginRequest rq = NRI__PKG__API__V1ALPHA1__REGISTER_PLUGIN_REQUEST__INIT;
    rq.plugin_name = n->name;
    rq.plugin_idx = n->index;
    rq.nri_version = GS_NRI_API_VERSION;
    size_t len = nri__pkg__api__v1alpha1__register_plugin_request__get_packed_size(&rq);
    uint8_t buf[1024];
    uint8_t *resp = NULL;
    size_t resp_len = 0;
    if (len > sizeof buf) {
        logf_(n, 2, "NRI: plugin name too long");
        goto out;
    }
    nri__pkg__api__v1alpha1__register_plugin_request__pack(&rq, buf);
    if (gs_ttrpc_call(&c, NRI_RUNTIME_SERVICE, "RegisterPlugin", buf, len, 5000, &resp, &resp_len, &err) < 0) {
        if (!stopping(n))
            logf_(n, 2, "NRI: registration as %s-%s failed: %s", n->index, n->name, err.msg);
        goto out;
    }
    free(resp);
    logf_(n, 0, "NRI: registered as %s-%s on %s", n->index, n->name, n->socket);
    bool announced = false;
    for (;;) {
        if (n->sync_done && !announced) {
            announced = true;
            set_connected(n, true);
        }
        int r = gs_ttrpc_pump(&c, 1000, &err);
        if (r == 1 || stopping(n))
            break;
        if (r < 0) {
            logf_(n, announced ? 1 : 2, "NRI: %s; reconnecting every %ld ms", err.msg, n->reconnect_ms);
            break;
        }
    }
out:
    gs_ttrpc_conn_close(&c);
    set_connected(n, false);
}

static void *nri_thread(void *arg)
{
    gs_nri *n = arg;
    char last[600] = "";
    while (!stopping(n)) {
        gs_error err;
        int fd = dial(n->socket, &err);
        if (fd < 0) {
            if (strcmp(last, err.msg)) {
                logf_(n, 1, "NRI: waiting for the runtime: %s (retrying every %ld ms)", err.msg, n->reconnect_ms);
                snprintf(last, sizeof last, "%s", err.msg);
            }
            nap(n, n->reconnect_ms);
            continue;
        }
        last[0] = 0;
        session(n, fd);
        if (!stopping(n))
            nap(n, n->reconnect_ms);
    }
    return NULL;
}

int gs_nri_start(const gs_nri_opts *opts, gs_nri **out, gs_error *err)
{
    gs_nri *n;
    if (gs_nri_open(opts, &n, err) < 0)
        return -1;
    if (pthread_create(&n->thread, NULL, nri_thread, n) != 0) {
        gs_nri_stop(n);
        return gs_fail(err, GS_ERR_IO, "cannot start the NRI thread");
    }
    n->started = true;
    *out = n;
    return 0;
}

void gs_nri_stop(gs_nri *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_mutex_unlock(&n->mu);
    if (n->wake[1] >= 0)
        (void)!write(n->wake[1], "x", 1);
    if (n->started)
        pthread_join(n->thread, NULL);
    for (int i = 0; i < 2; i++)
        if (n->wake[i] >= 0)
            close(n->wake[i]);
    pthread_mutex_destroy(&n->mu);
    free(n->socket);
    free(n->name);
    free(n->index);
    free(n->node);
    free(n->proc_root);
    free(n->mps);
    free(n->rec);
    gs_inject_book_free(n->book);
    free(n);
}

void gs_nri_stats_get(gs_nri *n, gs_nri_stats *out)
{
    pthread_mutex_lock(&n->mu);
    *out = n->stats;
    pthread_mutex_unlock(&n->mu);
}
