/*
 * inject.c - device injection by pod identity: the rule (inject.h). Pure: no I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/inject.h"

void gs_inject_host_init(gs_inject_host *h)
{
    memset(h, 0, sizeof *h);
    h->uvm_major = -1;
    h->caps_major = -1;
}

/* /proc/devices: "Character devices:" then lines "<major> <name>", a blank line, "Block
 * devices:" ... Only character majors count. */
void gs_inject_host_parse_devices(gs_inject_host *h, const char *text, size_t len)
{
    bool chr = false;
    size_t i = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        char line[128];
        size_t n = e - i < sizeof line - 1 ? e - i : sizeof line - 1;
        memcpy(line, text + i, n);
        line[n] = 0;
        i = e + 1;
        if (!strncmp(line, "Character devices:", 18)) {
            chr = true;
            continue;
        }
        if (!strncmp(line, "Block devices:", 14)) {
            chr = false;
            continue;
        }
        if (!chr)
            continue;
        char *end;
        long major = strtol(line, &end, 10);
        if (end == line || major < 0 || major > 4095)
            continue;
        while (*end == ' ' || *end == '\t')
            end++;
        if (!strcmp(end, "nvidia-uvm"))
            h->uvm_major = major;
        else if (!strcmp(end, "nvidia-caps"))
            h->caps_major = major;
    }
}

/* Reads a decimal integer 0..1<<20 at *p; advances. -1 when none. */
static int read_uint(const char **p, const char *end)
{
    const char *s = *p;
    long v = 0;
    if (s >= end || *s < '0' || *s > '9')
        return -1;
    while (s < end && *s >= '0' && *s <= '9') {
        v = v * 10 + (*s - '0');
        if (v > (1L << 20))
            return -1;
        s++;
    }
    *p = s;
    return (int)v;
}

static bool eat(const char **p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n))
        return false;
    *p += n;
    return true;
}

int gs_inject_host_parse_mig_minors(gs_inject_host *h, const char *file, const char *text, size_t len,
                                    gs_error *err)
{
    h->n_caps = 0;
    size_t i = 0;
    int line = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n')
            e++;
        line++;
        const char *p = text + i, *end = text + e, *start = p;
        i = e + 1;
        if (!eat(&p, end, "gpu"))
            continue; /* config 1, monitor 2, blank lines */
        gs_inject_cap c = {.ci = -1};
        if ((c.gpu_minor = read_uint(&p, end)) < 0 || !eat(&p, end, "/gi") || (c.gi = read_uint(&p, end)) < 0)
            goto bad;
        if (eat(&p, end, "/ci") && (c.ci = read_uint(&p, end)) < 0)
            goto bad;
        if (!eat(&p, end, "/access"))
            goto bad;
        if (p >= end || (*p != ' ' && *p != '\t'))
            goto bad;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if ((c.minor = read_uint(&p, end)) < 0)
            goto bad;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (p != end)
            goto bad;
        if (h->n_caps >= GS_INJECT_MAX_CAPS)
            return gs_error_set(err, GS_ERR_LIMIT, file, line, 1, NULL, "more than %d MIG capability lines",
                                GS_INJECT_MAX_CAPS);
        h->caps[h->n_caps++] = c;
        continue;
    bad:
        return gs_error_set(err, GS_ERR_PARSE, file, line, (int)(p - start) + 1, NULL,
                            "expected 'gpu<N>/gi<N>[/ci<N>]/access <minor>'");
    }
    return 0;
}

static int cap_minor(const gs_inject_host *h, int gpu_minor, int gi, int ci)
{
    for (size_t i = 0; i < h->n_caps; i++)
        if (h->caps[i].gpu_minor == gpu_minor && h->caps[i].gi == gi && h->caps[i].ci == ci)
            return h->caps[i].minor;
    return -1;
}

static void add_env(gs_inject_result *o, const char *k, const char *v)
{
    if (o->n_env >= GS_INJECT_MAX_ENV)
        return;
    gs_inject_env *e = &o->env[o->n_env++];
    snprintf(e->key, sizeof e->key, "%s", k);
    snprintf(e->value, sizeof e->value, "%s", v);
}

static void add_node(gs_inject_result *o, const char *path, int64_t major, int64_t minor)
{
    for (size_t i = 0; i < o->n_nodes; i++)
        if (!strcmp(o->nodes[i].path, path))
            return;
    if (o->n_nodes >= GS_INJECT_MAX_NODES)
        return;
    gs_inject_node *n = &o->nodes[o->n_nodes++];
    snprintf(n->path, sizeof n->path, "%s", path);
    n->major = major;
    n->minor = minor;
}

static void note(char *buf, size_t cap, const char *fmt, const char *a)
{
    size_t n = strlen(buf);
    if (n < cap)
        snprintf(buf + n, cap - n, fmt, a);
}

/* Name the pod and container in err's object path ("Pod ns/name container c: <field>"). */
static int refuse(gs_error *err, const char *who)
{
    if (err->path[0]) {
        gs_error_prefix_path(err, who);
    } else {
        size_t n = strlen(who);
        while (n && (who[n - 1] == ' ' || who[n - 1] == ':'))
            n--;
        snprintf(err->path, sizeof err->path, "%.*s", (int)n, who);
    }
    return -1;
}

static const gs_nvml_gpu *find_gpu(const gs_nvml_inventory *inv, unsigned index)
{
    for (size_t i = 0; i < inv->n_gpus; i++)
        if (inv->gpus[i].index == index)
            return &inv->gpus[i];
    return NULL;
}

int gs_inject_decide(const gs_inject_request *req, const char *node, const gs_nvml_inventory *inv,
                     const gs_inject_host *host, gs_assign_record *rec, gs_inject_result *out,
                     gs_error *err)
{
    memset(out, 0, sizeof *out);
    char who[400];
    snprintf(who, sizeof who, "Pod %s/%s container %s: ", req->pod_namespace ? req->pod_namespace : "",
             req->pod_name ? req->pod_name : "", req->container ? req->container : "");
    const char *ctr = req->container ? req->container : "";

    if (!req->assignment) {
        if (req->share_resource && *req->share_resource) {
            gs_fail(err, GS_ERR_INVALID,
                    "the container asks for %s but the pod has no %s annotation: the devices the extender "
                    "chose are unknown (was the pod bound by the gpusched extender?)",
                    req->share_resource, GS_ASSIGN_ANNOTATION);
            return refuse(err, who);
        }
        out->action = GS_INJECT_NONE;
        snprintf(out->summary, sizeof out->summary, "%s/%s %s: no record, not ours",
                 req->pod_namespace ? req->pod_namespace : "", req->pod_name ? req->pod_name : "", ctr);
        return 0;
    }
    if (!req->pod_uid || !*req->pod_uid) {
        gs_fail(err, GS_ERR_INVALID, "the pod sandbox carries no UID: the record cannot be matched to the pod");
        return refuse(err, who);
    }
    if (gs_assign_decode(req->assignment, req->assignment_len, req->pod_uid, rec, err) < 0) {
        return refuse(err, who);
    }
    if (node && *node && strcmp(rec->node, node)) {
        gs_error_set(err, GS_ERR_INVALID, GS_ASSIGN_ANNOTATION, 0, 0, "node",
                     "the record is for node \"%s\", this is node \"%s\"", rec->node, node);
        return refuse(err, who);
    }
    const gs_assign_ctr *c = NULL;
    for (size_t i = 0; i < rec->nctr; i++)
        if (!strcmp(rec->ctr[i].name, ctr))
            c = &rec->ctr[i];
    if (!c) {
        out->action = GS_INJECT_VOID;
        add_env(out, "NVIDIA_VISIBLE_DEVICES", "void");
        snprintf(out->summary, sizeof out->summary, "%s/%s %s: not in the record, no GPU",
                 req->pod_namespace ? req->pod_namespace : "", req->pod_name ? req->pod_name : "", ctr);
        return 0;
    }

    char visible[sizeof out->env[0].value] = "";
    char memlim[sizeof out->env[0].value] = "";
    char left_out[320] = "";
    unsigned min_milli = 0;
    size_t nvis = 0;
    bool any_share = false;
    for (size_t d = 0; d < c->ndev; d++) {
        const gs_assign_dev *ad = &c->dev[d];
        char path[64];
        snprintf(path, sizeof path, "containers[%zu].devices[%zu]", (size_t)(c - rec->ctr), d);
        const gs_nvml_gpu *g = find_gpu(inv, ad->gpu);
        if (!g) {
            gs_error_set(err, GS_ERR_NOTFOUND, GS_ASSIGN_ANNOTATION, 0, 0, path, "GPU %u is not on this node (%zu GPUs)",
                         ad->gpu, inv->n_gpus);
            return refuse(err, who);
        }
        if (g->lost) {
            gs_error_set(err, GS_ERR_INVALID, GS_ASSIGN_ANNOTATION, 0, 0, path, "GPU %u is lost: %s", ad->gpu,
                         g->lost_reason);
            return refuse(err, who);
        }
        const char *uuid;
        int gi = -1, ci = -1;
        if (ad->mig) {
            const gs_nvml_mig_device *m = NULL;
            size_t same = 0;
            for (size_t j = 0; j < g->n_mig; j++) {
                const gs_nvml_mig_device *x = &g->mig[j];
                if (ad->uuid[0] && !strcmp(x->uuid, ad->uuid))
                    m = x;
                if (!ad->uuid[0] && !strcmp(x->profile, ad->mig_profile)) {
                    m = x;
                    same++;
                }
            }
            if (!m || g->mig_current != 1) {
                gs_error_set(err, GS_ERR_NOTFOUND, GS_ASSIGN_ANNOTATION, 0, 0, path,
                             "GPU %u has no MIG device %s%s%s", ad->gpu, ad->uuid[0] ? ad->uuid : ad->mig_profile,
                             g->mig_current != 1 ? " (MIG is disabled)" : "", "");
                return refuse(err, who);
            }
            if (same > 1) {
                gs_error_set(err, GS_ERR_INVALID, GS_ASSIGN_ANNOTATION, 0, 0, path,
                             "the record names the MIG device by profile %s without a UUID and GPU %u has %zu of them",
                             ad->mig_profile, ad->gpu, same);
                return refuse(err, who);
            }
            uuid = m->uuid;
            gi = m->gpu_instance_id == ~0u ? -1 : (int)m->gpu_instance_id;
            ci = m->compute_instance_id == ~0u ? -1 : (int)m->compute_instance_id;
        } else {
            if (g->mig_current == 1) {
                gs_error_set(err, GS_ERR_INVALID, GS_ASSIGN_ANNOTATION, 0, 0, path,
                             "GPU %u is in MIG mode: a whole-GPU or share device cannot be given", ad->gpu);
                return refuse(err, who);
            }
            if (ad->uuid[0] && g->uuid[0] && strcmp(ad->uuid, g->uuid)) {
                gs_error_set(err, GS_ERR_INVALID, GS_ASSIGN_ANNOTATION, 0, 0, path,
                             "GPU %u is %s on this node, the record says %s", ad->gpu, g->uuid, ad->uuid);
                return refuse(err, who);
            }
            uuid = g->uuid[0] ? g->uuid : ad->uuid;
        }
        if (!uuid[0]) {
            gs_error_set(err, GS_ERR_INVALID, GS_ASSIGN_ANNOTATION, 0, 0, path, "the UUID of GPU %u is unknown",
                         ad->gpu);
            return refuse(err, who);
        }
        /* NVIDIA_VISIBLE_DEVICES: each UUID once, in record order */
        bool dup = false;
        size_t ord = 0;
        {
            const char *s = visible;
            size_t ul = strlen(uuid);
            while (*s) {
                const char *comma = strchr(s, ',');
                size_t l = comma ? (size_t)(comma - s) : strlen(s);
                if (l == ul && !memcmp(s, uuid, l))
                    dup = true;
                if (!dup)
                    ord++;
                s += l + (comma ? 1 : 0);
            }
        }
        if (!dup) {
            size_t n = strlen(visible);
            snprintf(visible + n, sizeof visible - n, "%s%s", n ? "," : "", uuid);
            nvis++;
        }
        if (ad->milli || ad->mem_mib) {
            any_share = true;
            if (ad->milli && (!min_milli || ad->milli < min_milli))
                min_milli = ad->milli;
            if (ad->mem_mib) {
                size_t n = strlen(memlim);
                snprintf(memlim + n, sizeof memlim - n, "%s%zu=%uM", n ? "," : "", ord, (unsigned)ad->mem_mib);
            }
        }
        /* device nodes: the GPU (the parent of a MIG device), MIG capabilities */
        char dev[64];
        if (g->minor >= 0) {
            snprintf(dev, sizeof dev, "/dev/nvidia%d", g->minor);
            add_node(out, dev, GS_INJECT_NVIDIA_MAJOR, g->minor);
        } else {
            note(left_out, sizeof left_out, " /dev/nvidia? (minor of %s unknown)", g->uuid);
        }
        if (ad->mig) {
            int mg = g->minor >= 0 && gi >= 0 ? cap_minor(host, g->minor, gi, -1) : -1;
            int mc = g->minor >= 0 && gi >= 0 && ci >= 0 ? cap_minor(host, g->minor, gi, ci) : -1;
            if (host->caps_major < 0 || mg < 0 || mc < 0) {
                note(left_out, sizeof left_out, " MIG capabilities of %s (nvidia-caps unknown)", uuid);
            } else {
                snprintf(dev, sizeof dev, "/dev/nvidia-caps/nvidia-cap%d", mg);
                add_node(out, dev, host->caps_major, mg);
                snprintf(dev, sizeof dev, "/dev/nvidia-caps/nvidia-cap%d", mc);
                add_node(out, dev, host->caps_major, mc);
            }
        }
    }
    (void)nvis;
    /* the control nodes first in the answer: rotate them in front */
    gs_inject_node gpu_nodes[GS_INJECT_MAX_NODES];
    size_t ng = out->n_nodes;
    memcpy(gpu_nodes, out->nodes, ng * sizeof *gpu_nodes);
    out->n_nodes = 0;
    add_node(out, "/dev/nvidiactl", GS_INJECT_NVIDIA_MAJOR, GS_INJECT_CTL_MINOR);
    if (host->uvm_major >= 0) {
        add_node(out, "/dev/nvidia-uvm", host->uvm_major, 0);
        add_node(out, "/dev/nvidia-uvm-tools", host->uvm_major, 1);
    } else {
        note(left_out, sizeof left_out, "%s", " /dev/nvidia-uvm* (nvidia-uvm major unknown)");
    }
    for (size_t i = 0; i < ng; i++)
        add_node(out, gpu_nodes[i].path, gpu_nodes[i].major, gpu_nodes[i].minor);

    out->action = GS_INJECT_DEVICES;
    add_env(out, "NVIDIA_VISIBLE_DEVICES", visible);
    const char *sharing = "";
    if (any_share && host->mps_pipe_dir && *host->mps_pipe_dir) {
        char v[16];
        add_env(out, "CUDA_MPS_PIPE_DIRECTORY", host->mps_pipe_dir);
        if (min_milli) {
            snprintf(v, sizeof v, "%u", (min_milli + 9) / 10);
            add_env(out, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v);
        }
        if (memlim[0])
            add_env(out, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", memlim);
        gs_inject_mount *m = &out->mounts[out->n_mounts++];
        snprintf(m->source, sizeof m->source, "%s", host->mps_pipe_dir);
        snprintf(m->destination, sizeof m->destination, "%s", host->mps_pipe_dir);
        sharing = " (MPS limits)";
    } else if (any_share) {
        sharing = " (time-sliced share: the whole device, no isolation)";
    }
    snprintf(out->summary, sizeof out->summary, "%s/%s %s: %s%s%s%s",
             req->pod_namespace ? req->pod_namespace : "", req->pod_name ? req->pod_name : "", ctr, visible,
             sharing, left_out[0] ? "; left out:" : "", left_out);
    return 0;
}

/* ================================================================ the book */

typedef struct book_pod {
    char uid[40];
    gs_gpu_assign a;
} book_pod;

struct gs_inject_book {
    gs_node_gpus g;
    gs_gpu_dev devs[GS_ASSIGN_MAX_GPU + 1];
    book_pod *pods;
    size_t n, cap;
};

gs_inject_book *gs_inject_book_new(const gs_nvml_inventory *inv)
{
    gs_inject_book *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->g.devs = b->devs;
    b->g.model = "";
    b->g.resource = "nvidia.com/gpu";
    b->g.gpu_node = true;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *x = &inv->gpus[i];
        if (x->index > GS_ASSIGN_MAX_GPU)
            continue;
        gs_gpu_dev *d = &b->devs[x->index];
        d->mem_mib = (uint32_t)(x->memory_mib > UINT32_MAX ? UINT32_MAX : x->memory_mib);
        d->slots = GS_ASSIGN_MAX_REPLICAS; /* replicas: the kubelet's */
        if (x->mig_current == 1)
            d->flags |= GS_DEV_MIG_ENABLED;
        if (x->index + 1 > b->g.ndevs)
            b->g.ndevs = x->index + 1;
    }
    return b;
}

void gs_inject_book_free(gs_inject_book *b)
{
    if (!b)
        return;
    free(b->pods);
    free(b);
}

void gs_inject_book_clear(gs_inject_book *b)
{
    for (size_t i = 0; i < b->n; i++)
        gs_gpu_unbind(&b->g, &b->pods[i].a);
    b->n = 0;
}

static book_pod *book_find(const gs_inject_book *b, const char *uid)
{
    for (size_t i = 0; i < b->n; i++)
        if (!strcmp(b->pods[i].uid, uid))
            return &b->pods[i];
    return NULL;
}

int gs_inject_book_admit(gs_inject_book *b, const gs_assign_record *rec, const char *node, gs_error *err)
{
    if (book_find(b, rec->uid))
        return 1;
    bool mig = false;
    for (size_t c = 0; c < rec->nctr; c++)
        for (size_t d = 0; d < rec->ctr[c].ndev; d++)
            mig |= rec->ctr[c].dev[d].mig;
    gs_gpu_assign a;
    memset(&a, 0, sizeof a);
    if (!mig && gs_assign_check(rec, &b->g, node && *node ? node : NULL, GS_ASSIGN_CHECK_FREE, &a, err) < 0)
        return -1;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        book_pod *np = realloc(b->pods, cap * sizeof *np);
        if (!np)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        b->pods = np;
        b->cap = cap;
    }
    book_pod *p = &b->pods[b->n++];
    snprintf(p->uid, sizeof p->uid, "%s", rec->uid);
    p->a = a;
    gs_gpu_bind(&b->g, &a);
    return 0;
}

bool gs_inject_book_release(gs_inject_book *b, const char *uid)
{
    book_pod *p = uid ? book_find(b, uid) : NULL;
    if (!p)
        return false;
    gs_gpu_unbind(&b->g, &p->a);
    *p = b->pods[--b->n];
    return true;
}

size_t gs_inject_book_pods(const gs_inject_book *b)
{
    return b->n;
}

bool gs_inject_book_used(const gs_inject_book *b, unsigned gpu, unsigned *milli, unsigned *mem_mib)
{
    if (gpu >= b->g.ndevs)
        return false;
    *milli = b->devs[gpu].milli_used;
    *mem_mib = b->devs[gpu].mem_used;
    return true;
}
