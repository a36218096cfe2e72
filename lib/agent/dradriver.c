/*
 * dradriver.c - the node agent as a DRA driver (dradriver.h, docs/agent.md "DRA driver").
 *
 * Pure parts first (device table, ResourceSlice JSON, ResourceClaim reader, CDI spec,
 * checkpoint), then the running driver: the registration server and the DRAPlugin server
 * (grpc.h), both answered on their server threads; the prepared claims and the health of
 * the devices under one lock. Claims are read through the caller's gs_drv_get_claim_fn (a
 * live client of its own: clients are used by one thread at a time).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dra/v1/api.pb-c.h"
#include "gpusched/dradriver.h"
#include "gpusched/grpc.h"
#include "gpusched/live_write.h"
#include "pluginregistration/v1/api.pb-c.h"
#include "util/json_int.h"

/* ================================================================ devices */

static void copy_str(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

/* "00000000:07:00.0" -> "0000:07:00.0" (sysfs's spelling, lowercase) */
static void bus_id_sysfs(const char *id, char *out, size_t cap)
{
    const char *colon = strchr(id, ':');
    size_t dom = colon ? (size_t)(colon - id) : 0;
    const char *p = dom > 4 ? id + (dom - 4) : id;
    size_t i = 0;
    for (; *p && i + 1 < cap; p++)
        out[i++] = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    out[i] = '\0';
}

static void pcie_root(const char *sysfs_root, const char *bus_id, char *out, size_t cap)
{
    out[0] = '\0';
    if (!bus_id[0])
        return;
    char id[32], path[PATH_MAX], real[PATH_MAX];
    bus_id_sysfs(bus_id, id, sizeof id);
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s", sysfs_root ? sysfs_root : "/sys", id);
    if (!realpath(path, real))
        return;
    const char *d = strstr(real, "/devices/pci");
    if (!d)
        return;
    d += strlen("/devices/");
    size_t n = strcspn(d, "/");
    if (n == 0 || n >= cap)
        return;
    memcpy(out, d, n);
    out[n] = '\0';
}

int gs_drv_devices_build(const gs_nvml_inventory *inv, const char *sysfs_root, gs_drv_devices *out,
                         gs_error *err)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    for (size_t i = 0; i < inv->n_gpus; i++)
        cap += 1 + inv->gpus[i].n_mig;
    if (cap == 0)
        return 0;
    out->v = calloc(cap, sizeof *out->v);
    if (!out->v)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        if (g->lost || g->minor < 0 || !g->uuid[0])
            continue;
        char root[32];
        pcie_root(sysfs_root, g->pci_bus_id, root, sizeof root);
        if (g->mig_current != 1) {
            gs_drv_device *d = &out->v[out->n++];
            snprintf(d->name, sizeof d->name, "gpu-%d", g->minor);
            copy_str(d->uuid, sizeof d->uuid, g->uuid);
            d->gpu = i;
            copy_str(d->pcie_root, sizeof d->pcie_root, root);
            continue;
        }
        for (size_t j = 0; j < g->n_mig; j++) {
            const gs_nvml_mig_device *m = &g->mig[j];
            if (!m->uuid[0])
                continue;
            char prof[32];
            size_t k = 0;
            for (const char *p = m->profile; *p && k + 1 < sizeof prof; p++)
                if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
                    prof[k++] = *p;
            prof[k] = '\0';
            gs_drv_device *d = &out->v[out->n++];
            snprintf(d->name, sizeof d->name, "gpu-%d-mig-%s%s%u-%u", g->minor, prof, k ? "-" : "",
                     m->gpu_instance_id, m->compute_instance_id);
            copy_str(d->uuid, sizeof d->uuid, m->uuid);
            d->mig = true;
            d->gpu = i;
            d->mig_index = j;
            copy_str(d->pcie_root, sizeof d->pcie_root, root);
        }
    }
    return 0;
}

void gs_drv_devices_free(gs_drv_devices *d)
{
    free(d->v);
    memset(d, 0, sizeof *d);
}

ptrdiff_t gs_drv_device_find(const gs_drv_devices *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->v[i].name, name) == 0)
            return (ptrdiff_t)i;
    return -1;
}

ptrdiff_t gs_drv_device_by_uuid(const gs_drv_devices *d, const char *uuid)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->v[i].uuid, uuid) == 0)
            return (ptrdiff_t)i;
    return -1;
}

bool gs_drv_semver(const char *s, char *out, size_t cap)
{
    unsigned long long part[3] = {0, 0, 0};
    int n = 0;
    const char *p = s;
    while (n < 3) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned long long v = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            if (++digits > 9)
                return false;
            v = v * 10 + (unsigned)(*p++ - '0');
        }
        part[n++] = v;
        if (*p == '\0')
            break;
        if (*p != '.')
            return false;
        p++;
    }
    if (*p != '\0')
        return false;
    int w = snprintf(out, cap, "%llu.%llu.%llu", part[0], part[1], part[2]);
    return w > 0 && (size_t)w < cap;
}

/* NVML's architecture (nvmlDeviceArchitecture_t), else the compute capability, as go-nvlib
 * spells it; NULL unknown. */
static const char *arch_name(const gs_nvml_gpu *g)
{
    static const char *const names[] = {NULL, NULL, "Kepler", "Maxwell", "Pascal", "Volta", "Turing",
                                        "Ampere", "Ada Lovelace", "Hopper", "Blackwell"};
    if (g->arch >= 2 && g->arch <= 10)
        return names[g->arch];
    switch (g->cc_major) {
    case 6: return "Pascal";
    case 7: return g->cc_minor >= 5 ? "Turing" : "Volta";
    case 8: return g->cc_minor == 9 ? "Ada Lovelace" : "Ampere";
    case 9: return "Hopper";
    case 10:
    case 12: return "Blackwell";
    default: return NULL;
    }
}

/* ================================================================ ResourceSlice */

int gs_drv_slice_name(const char *node, const char *driver, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s-%s", node, driver);
    return n > 0 && (size_t)n < cap && n <= 253 ? 0 : -1;
}

static void attr_str(gs_strbuf *sb, bool *first, const char *key, const char *v)
{
    if (!v || !v[0])
        return;
    char cut[65]; /* the API's bound on a string attribute: 64 bytes */
    snprintf(cut, sizeof cut, "%s", v);
    gs_strbuf_puts(sb, *first ? "" : ",");
    *first = false;
    gs_strbuf_json_str(sb, key);
    gs_strbuf_puts(sb, ":{\"string\":");
    gs_strbuf_json_str(sb, cut);
    gs_strbuf_putc(sb, '}');
}

static void attr_ver(gs_strbuf *sb, bool *first, const char *key, const char *v)
{
    char sv[64];
    if (!v || !gs_drv_semver(v, sv, sizeof sv))
        return;
    gs_strbuf_puts(sb, *first ? "" : ",");
    *first = false;
    gs_strbuf_json_str(sb, key);
    gs_strbuf_printf(sb, ":{\"version\":\"%s\"}", sv);
}

static void attr_int(gs_strbuf *sb, bool *first, const char *key, long long v)
{
    gs_strbuf_puts(sb, *first ? "" : ",");
    *first = false;
    gs_strbuf_json_str(sb, key);
    gs_strbuf_printf(sb, ":{\"int\":%lld}", v);
}

static void cap_val(gs_strbuf *sb, bool *first, const char *key, unsigned long long v, const char *suffix)
{
    gs_strbuf_puts(sb, *first ? "" : ",");
    *first = false;
    gs_strbuf_json_str(sb, key);
    gs_strbuf_printf(sb, ":{\"value\":\"%llu%s\"}", v, suffix);
}

/* the attributes a MIG device shares with its parent */
static void common_attrs(gs_strbuf *sb, bool *first, const gs_nvml_inventory *inv, const gs_nvml_gpu *g,
                         const gs_drv_device *d)
{
    attr_str(sb, first, "productName", g->name);
    attr_str(sb, first, "architecture", arch_name(g));
    if (g->cc_major >= 0) {
        char cc[32];
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor < 0 ? 0 : g->cc_minor);
        attr_ver(sb, first, "cudaComputeCapability", cc);
    }
    attr_ver(sb, first, "driverVersion", inv->driver_version);
    if (inv->cuda_driver_version > 0) {
        char cv[32];
        snprintf(cv, sizeof cv, "%d.%d", inv->cuda_major, inv->cuda_minor);
        attr_ver(sb, first, "cudaDriverVersion", cv);
    }
    if (g->pci_bus_id[0]) {
        char id[32];
        bus_id_sysfs(g->pci_bus_id, id, sizeof id);
        attr_str(sb, first, "pcieBusID", id);
    }
    attr_str(sb, first, "resource.kubernetes.io/pcieRoot", d->pcie_root);
}

int gs_drv_slice_json(const gs_nvml_inventory *inv, const gs_drv_devices *devs, const bool *usable,
                      const char *driver, const char *node, int64_t generation, gs_strbuf *out,
                      gs_error *err)
{
    char name[320];
    if (gs_drv_slice_name(node, driver, name, sizeof name) != 0)
        return gs_fail(err, GS_ERR_INVALID, "ResourceSlice name \"%s-%s\" is longer than 253 bytes", node, driver);
    gs_strbuf_reset(out);
    gs_strbuf_puts(out, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":");
    gs_strbuf_json_str(out, name);
    gs_strbuf_puts(out, "},\"spec\":{\"driver\":");
    gs_strbuf_json_str(out, driver);
    gs_strbuf_puts(out, ",\"nodeName\":");
    gs_strbuf_json_str(out, node);
    gs_strbuf_puts(out, ",\"pool\":{\"name\":");
    gs_strbuf_json_str(out, node);
    gs_strbuf_printf(out, ",\"generation\":%lld,\"resourceSliceCount\":1},\"devices\":[", (long long)generation);
    bool firstdev = true;
    for (size_t i = 0; i < devs->n; i++) {
        if (usable && !usable[i])
            continue;
        const gs_drv_device *d = &devs->v[i];
        const gs_nvml_gpu *g = &inv->gpus[d->gpu];
        gs_strbuf_puts(out, firstdev ? "{\"name\":" : ",{\"name\":");
        firstdev = false;
        gs_strbuf_json_str(out, d->name);
        gs_strbuf_puts(out, ",\"attributes\":{");
        bool first = true;
        if (!d->mig) {
            attr_str(out, &first, "type", "gpu");
            attr_str(out, &first, "uuid", g->uuid);
            attr_int(out, &first, "index", g->index);
            attr_int(out, &first, "minor", g->minor);
            common_attrs(out, &first, inv, g, d);
            gs_strbuf_puts(out, "},\"capacity\":{");
            first = true;
            if (g->memory_mib)
                cap_val(out, &first, "memory", g->memory_mib, "Mi");
        } else {
            const gs_nvml_mig_device *m = &g->mig[d->mig_index];
            attr_str(out, &first, "type", "mig");
            attr_str(out, &first, "uuid", m->uuid);
            attr_str(out, &first, "parentUUID", g->uuid);
            attr_str(out, &first, "profile", m->profile);
            attr_int(out, &first, "parentIndex", g->index);
            attr_int(out, &first, "parentMinor", g->minor);
            common_attrs(out, &first, inv, g, d);
            gs_strbuf_puts(out, "},\"capacity\":{");
            first = true;
            if (m->have_attributes) {
                cap_val(out, &first, "multiprocessors", m->multiprocessors, "");
                cap_val(out, &first, "copyEngines", m->copy_engines, "");
                cap_val(out, &first, "decoders", m->decoders, "");
                cap_val(out, &first, "encoders", m->encoders, "");
                cap_val(out, &first, "jpegEngines", m->jpegs, "");
                cap_val(out, &first, "ofaEngines", m->ofas, "");
            }
            if (m->memory_mib)
                cap_val(out, &first, "memory", m->memory_mib, "Mi");
        }
        gs_strbuf_puts(out, "}}");
    }
    gs_strbuf_puts(out, "]}}");
    return 0;
}

/* ================================================================ JSON helpers */

static const gs_json_limits json_lim = {.max_depth = 64, .max_items = 1 << 20, .max_string = 1 << 16};

/* Copy the string member `key` of obj into dst (cap). 0 absent (dst ""), 1 copied, -1 with
 * err: not a string or too long. */
static int get_str(const gs_jv *obj, const char *key, char *dst, size_t cap, const char *what, gs_error *err)
{
    dst[0] = '\0';
    const gs_jv *v = gs_json_get(obj, key);
    if (!v || v->t == GS_JNULL)
        return 0;
    if (v->t != GS_JSTR)
        return gs_fail(err, GS_ERR_PARSE, "%s.%s: expected a string, got %s", what, key,
                       gs_json_type_name((gs_jtype)v->t));
    if (v->n >= cap)
        return gs_fail(err, GS_ERR_LIMIT, "%s.%s: longer than %zu bytes", what, key, cap - 1);
    memcpy(dst, v->s, v->n);
    dst[v->n] = '\0';
    return 1;
}

static int read_results(const gs_jv *arr, const char *driver, bool all, gs_drv_claim *out, const char *what,
                        gs_error *err)
{
    if (!arr || arr->t == GS_JNULL)
        return 0;
    if (arr->t != GS_JARR)
        return gs_fail(err, GS_ERR_PARSE, "%s: expected an array", what);
    for (uint32_t i = 0; i < arr->n; i++) {
        const gs_jv *r = &arr->kids[i];
        if (r->t != GS_JOBJ)
            return gs_fail(err, GS_ERR_PARSE, "%s[%u]: expected an object", what, i);
        char drv[254];
        if (!all) {
            if (get_str(r, "driver", drv, sizeof drv, what, err) < 0)
                return -1;
            if (strcmp(drv, driver) != 0) {
                out->n_other++;
                continue;
            }
        }
        if (out->n_results >= GS_DRV_MAX_RESULTS)
            return gs_fail(err, GS_ERR_LIMIT, "%s: more than %d results", what, GS_DRV_MAX_RESULTS);
        gs_drv_result *res = &out->results[out->n_results];
        if (get_str(r, "request", res->request, sizeof res->request, what, err) < 0 ||
            get_str(r, "pool", res->pool, sizeof res->pool, what, err) < 0 ||
            get_str(r, "device", res->device, sizeof res->device, what, err) < 0)
            return -1;
        if (!res->device[0] || !res->pool[0])
            return gs_fail(err, GS_ERR_PARSE, "%s[%u]: a result without pool or device", what, i);
        out->n_results++;
    }
    return 0;
}

int gs_drv_claim_parse(const char *json, size_t len, const char *driver, gs_drv_claim *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    if (len > GS_DRV_MAX_CLAIM_JSON)
        return gs_fail(err, GS_ERR_LIMIT, "ResourceClaim: larger than %zu bytes", GS_DRV_MAX_CLAIM_JSON);
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    int rc = -1;
    if (gs_json_parse("ResourceClaim", 1, json, len, &json_lim, &a, &root, err) != 0)
        goto done;
    if (root.t != GS_JOBJ) {
        gs_fail(err, GS_ERR_PARSE, "ResourceClaim: expected an object");
        goto done;
    }
    const gs_jv *md = gs_json_get(&root, "metadata");
    if (!md || md->t != GS_JOBJ) {
        gs_fail(err, GS_ERR_PARSE, "ResourceClaim: no metadata");
        goto done;
    }
    if (get_str(md, "uid", out->uid, sizeof out->uid, "metadata", err) < 0 ||
        get_str(md, "namespace", out->namespace_, sizeof out->namespace_, "metadata", err) < 0 ||
        get_str(md, "name", out->name, sizeof out->name, "metadata", err) < 0)
        goto done;
    const gs_jv *st = gs_json_get(&root, "status");
    const gs_jv *al = st && st->t == GS_JOBJ ? gs_json_get(st, "allocation") : NULL;
    if (al && al->t == GS_JOBJ) {
        out->allocated = true;
        const gs_jv *dv = gs_json_get(al, "devices");
        if (dv && dv->t == GS_JOBJ &&
            read_results(gs_json_get(dv, "results"), driver, false, out, "status.allocation.devices.results", err) != 0)
            goto done;
    }
    rc = 0;
done:
    gs_arena_free(&a);
    return rc;
}

/* ================================================================ CDI */

void gs_drv_cdi_id(const char *uid, const char *device, char *out, size_t cap)
{
    snprintf(out, cap, "%s=%s-%s", GS_DRV_CDI_KIND, uid, device);
}

void gs_drv_cdi_path(const char *dir, const char *uid, char *out, size_t cap)
{
    snprintf(out, cap, "%s/gpusched.io-claim_%s.json", dir, uid);
}

static void node_json(gs_strbuf *sb, bool *first, const char *path)
{
    gs_strbuf_puts(sb, *first ? "{\"path\":" : ",{\"path\":");
    *first = false;
    gs_strbuf_json_str(sb, path);
    gs_strbuf_putc(sb, '}');
}

int gs_drv_cdi_json(const gs_drv_claim *c, const gs_nvml_inventory *inv, const gs_drv_devices *devs,
                    const gs_inject_host *host, gs_strbuf *out, gs_error *err)
{
    gs_strbuf_reset(out);
    gs_strbuf_printf(out, "{\"cdiVersion\":\"0.6.0\",\"kind\":\"%s\",\"devices\":[", GS_DRV_CDI_KIND);
    gs_strbuf uuids = {0};
    for (size_t i = 0; i < c->n_results; i++) {
        ptrdiff_t k = gs_drv_device_find(devs, c->results[i].device);
        if (k < 0) {
            gs_strbuf_free(&uuids);
            return gs_fail(err, GS_ERR_NOTFOUND, "device %s is not a device of this node", c->results[i].device);
        }
        const gs_drv_device *d = &devs->v[k];
        const gs_nvml_gpu *g = &inv->gpus[d->gpu];
        char name[200], path[64];
        snprintf(name, sizeof name, "%s-%s", c->uid, d->name);
        gs_strbuf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        gs_strbuf_json_str(out, name);
        gs_strbuf_puts(out, ",\"containerEdits\":{\"deviceNodes\":[");
        bool first = true;
        snprintf(path, sizeof path, "/dev/nvidia%d", g->minor);
        node_json(out, &first, path);
        if (d->mig && host && host->caps_major >= 0) {
            const gs_nvml_mig_device *m = &g->mig[d->mig_index];
            for (size_t j = 0; j < host->n_caps; j++) {
                const gs_inject_cap *cp = &host->caps[j];
                if (cp->gpu_minor != g->minor || cp->gi != (int)m->gpu_instance_id)
                    continue;
                if (cp->ci != -1 && cp->ci != (int)m->compute_instance_id)
                    continue;
                snprintf(path, sizeof path, "/dev/nvidia-caps/nvidia-cap%d", cp->minor);
                node_json(out, &first, path);
            }
        }
        gs_strbuf_puts(out, "]}}");
        if (!strstr(gs_strbuf_cstr(&uuids), d->uuid)) {
            if (uuids.len)
                gs_strbuf_putc(&uuids, ',');
            gs_strbuf_puts(&uuids, d->uuid);
        }
    }
    gs_strbuf_puts(out, "],\"containerEdits\":{\"env\":[");
    char env[64 + GS_DRV_MAX_RESULTS * GS_NVML_STR_MAX];
    snprintf(env, sizeof env, "NVIDIA_VISIBLE_DEVICES=%s", uuids.len ? gs_strbuf_cstr(&uuids) : "void");
    gs_strbuf_json_str(out, env);
    gs_strbuf_puts(out, "],\"deviceNodes\":[");
    bool first = true;
    node_json(out, &first, "/dev/nvidiactl");
    if (host && host->uvm_major >= 0) {
        node_json(out, &first, "/dev/nvidia-uvm");
        node_json(out, &first, "/dev/nvidia-uvm-tools");
    }
    gs_strbuf_puts(out, "]}}\n");
    gs_strbuf_free(&uuids);
    return 0;
}

/* ================================================================ checkpoint */

void gs_drv_checkpoint_json(const gs_drv_claim *const *claims, size_t n, const char *driver, const char *node,
                            gs_strbuf *out)
{
    gs_strbuf_reset(out);
    gs_strbuf_puts(out, "{\"version\":1,\"driver\":");
    gs_strbuf_json_str(out, driver);
    gs_strbuf_puts(out, ",\"node\":");
    gs_strbuf_json_str(out, node ? node : "");
    gs_strbuf_puts(out, ",\"claims\":[");
    for (size_t i = 0; i < n; i++) {
        const gs_drv_claim *c = claims[i];
        gs_strbuf_puts(out, i ? ",\n{\"uid\":" : "\n{\"uid\":");
        gs_strbuf_json_str(out, c->uid);
        gs_strbuf_puts(out, ",\"namespace\":");
        gs_strbuf_json_str(out, c->namespace_);
        gs_strbuf_puts(out, ",\"name\":");
        gs_strbuf_json_str(out, c->name);
        gs_strbuf_puts(out, ",\"results\":[");
        for (size_t j = 0; j < c->n_results; j++) {
            gs_strbuf_puts(out, j ? ",{\"request\":" : "{\"request\":");
            gs_strbuf_json_str(out, c->results[j].request);
            gs_strbuf_puts(out, ",\"pool\":");
            gs_strbuf_json_str(out, c->results[j].pool);
            gs_strbuf_puts(out, ",\"device\":");
            gs_strbuf_json_str(out, c->results[j].device);
            gs_strbuf_putc(out, '}');
        }
        gs_strbuf_puts(out, "]}");
    }
    gs_strbuf_puts(out, "]}\n");
}

int gs_drv_checkpoint_parse(const char *json, size_t len, const char *driver, gs_drv_claim **out, size_t *n,
                            gs_error *err)
{
    *out = NULL;
    *n = 0;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    gs_drv_claim *v = NULL;
    size_t nv = 0;
    int rc = -1;
    gs_json_limits lim = json_lim;
    lim.unique_keys = true;
    if (gs_json_parse("checkpoint", 1, json, len, &lim, &a, &root, err) != 0)
        goto done;
    const gs_jv *ver = gs_json_get(&root, "version");
    if (root.t != GS_JOBJ || !ver || ver->t != GS_JNUM || ver->n != 1 || ver->s[0] != '1') {
        gs_fail(err, GS_ERR_PARSE, "checkpoint: expected an object with \"version\": 1");
        goto done;
    }
    char drv[254];
    if (get_str(&root, "driver", drv, sizeof drv, "checkpoint", err) < 0)
        goto done;
    if (strcmp(drv, driver) != 0) {
        gs_fail(err, GS_ERR_PARSE, "checkpoint: written for driver \"%s\", this is \"%s\"", drv, driver);
        goto done;
    }
    const gs_jv *cl = gs_json_get(&root, "claims");
    if (!cl || cl->t != GS_JARR) {
        gs_fail(err, GS_ERR_PARSE, "checkpoint: \"claims\" must be an array");
        goto done;
    }
    if (cl->n > GS_DRV_MAX_PREPARED) {
        gs_fail(err, GS_ERR_LIMIT, "checkpoint: more than %d claims", GS_DRV_MAX_PREPARED);
        goto done;
    }
    if (cl->n && !(v = calloc(cl->n, sizeof *v))) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < cl->n; i++) {
        const gs_jv *c = &cl->kids[i];
        gs_drv_claim *d = &v[nv];
        if (c->t != GS_JOBJ) {
            gs_fail(err, GS_ERR_PARSE, "checkpoint: claims[%u]: expected an object", i);
            goto done;
        }
        if (get_str(c, "uid", d->uid, sizeof d->uid, "claims[]", err) < 0 ||
            get_str(c, "namespace", d->namespace_, sizeof d->namespace_, "claims[]", err) < 0 ||
            get_str(c, "name", d->name, sizeof d->name, "claims[]", err) < 0)
            goto done;
        if (!d->uid[0]) {
            gs_fail(err, GS_ERR_PARSE, "checkpoint: claims[%u]: no uid", i);
            goto done;
        }
        for (size_t j = 0; j < nv; j++)
            if (strcmp(v[j].uid, d->uid) == 0) {
                gs_fail(err, GS_ERR_PARSE, "checkpoint: claim %s listed twice", d->uid);
                goto done;
            }
        d->allocated = true;
        if (read_results(gs_json_get(c, "results"), driver, true, d, "checkpoint: claims[].results", err) != 0)
            goto done;
        nv++;
    }
    *out = v;
    *n = nv;
    v = NULL;
    rc = 0;
done:
    free(v);
    gs_arena_free(&a);
    return rc;
}

/* ================================================================ the running driver */

struct gs_drv {
    char *driver, *node, *registry_dir, *plugin_dir, *cdi_dir, *host_root;
    char reg_socket[PATH_MAX], dra_socket[PATH_MAX], checkpoint[PATH_MAX];
    const gs_nvml_inventory *inv;
    gs_drv_devices devs;
    gs_inject_host host;
    gs_drv_get_claim_fn get_claim;
    void *claim_ctx;
    gs_drv_log_fn log;
    void *user;
    gs_grpc_server *reg, *dra;

    pthread_mutex_t mu;
    bool *usable;                  /* per device: healthy */
    uint64_t content;              /* moves on each health change */
    uint64_t published_content;
    bool published;
    int64_t generation;
    gs_drv_claim **prepared;
    size_t n_prepared, cap_prepared;
    bool registered;
    char reg_error[256];
    uint64_t reg_ok, reg_failed, prep_ok, prep_failed, unprep_ok, unprep_failed, publishes, publish_failed;
};

static void dlog(gs_drv *d, int warn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void dlog(gs_drv *d, int warn, const char *fmt, ...)
{
    if (!d->log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    d->log(d->user, warn, line);
}

/* NULL with *eno ENOENT when the file is absent, another errno when unreadable. */
static char *read_text(const char *path, size_t max, size_t *len, int *eno)
{
    if (access(path, F_OK) != 0) {
        *eno = errno;
        return NULL;
    }
    gs_error e;
    char *t = gs_read_file(path, max, len, &e);
    *eno = t ? 0 : (errno && errno != ENOENT ? errno : EIO);
    return t;
}

static int mkdir_p(const char *dir, gs_error *err)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return gs_fail(err, GS_ERR_INVALID, "%s: path too long", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            return gs_fail(err, GS_ERR_IO, "cannot create %s: %s", p, strerror(errno));
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        return gs_fail(err, GS_ERR_IO, "cannot create %s: %s", p, strerror(errno));
    return 0;
}

static ptrdiff_t prepared_find(const gs_drv *d, const char *uid)
{
    for (size_t i = 0; i < d->n_prepared; i++)
        if (strcmp(d->prepared[i]->uid, uid) == 0)
            return (ptrdiff_t)i;
    return -1;
}

static int checkpoint_write(gs_drv *d, gs_error *err)
{
    gs_strbuf sb = {0};
    gs_drv_checkpoint_json((const gs_drv_claim *const *)d->prepared, d->n_prepared, d->driver, d->node, &sb);
    int rc = gs_write_file_atomic(d->checkpoint, gs_strbuf_cstr(&sb), sb.len, err);
    gs_strbuf_free(&sb);
    return rc;
}

/* ---------------------------------------------------------------- registration */

static void h_get_info(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    gs_drv *d = ctx;
    (void)msg;
    (void)len;
    Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
    char *versions[] = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
    info.type = "DRAPlugin";
    info.name = d->driver;
    info.endpoint = d->dra_socket;
    info.n_supported_versions = 2;
    info.supported_versions = versions;
    uint8_t buf[4 * PATH_MAX];
    size_t n = pluginregistration__plugin_info__get_packed_size(&info);
    if (n > sizeof buf) {
        gs_grpc_fail(call, GS_GRPC_INTERNAL, "plugin info too large");
        return;
    }
    pluginregistration__plugin_info__pack(&info, buf);
    gs_grpc_reply(call, buf, n);
}

static void h_notify(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    gs_drv *d = ctx;
    Pluginregistration__RegistrationStatus *st = pluginregistration__registration_status__unpack(NULL, len, msg);
    if (!st) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "cannot decode RegistrationStatus");
        return;
    }
    pthread_mutex_lock(&d->mu);
    d->registered = st->plugin_registered;
    copy_str(d->reg_error, sizeof d->reg_error, st->error);
    if (st->plugin_registered)
        d->reg_ok++;
    else
        d->reg_failed++;
    pthread_mutex_unlock(&d->mu);
    if (st->plugin_registered)
        dlog(d, 0, "DRA driver %s registered with the kubelet", d->driver);
    else
        dlog(d, 1, "DRA driver %s: the kubelet refused the registration: %s", d->driver,
             st->error && st->error[0] ? st->error : "(no reason)");
    pluginregistration__registration_status__free_unpacked(st, NULL);
    Pluginregistration__RegistrationStatusResponse r = PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
    uint8_t buf[16];
    size_t n = pluginregistration__registration_status_response__pack(&r, buf);
    gs_grpc_reply(call, buf, n);
}

/* ---------------------------------------------------------------- DRAPlugin */

typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim dra_claim_msg;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device dra_device_msg;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse dra_prep_one;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse__ClaimsEntry dra_prep_entry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourceResponse dra_unprep_one;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry dra_unprep_entry;

/* Per claim of a call: its answer's storage. */
typedef struct prep_slot {
    dra_prep_entry entry;
    dra_prep_one one;
    dra_device_msg dev[GS_DRV_MAX_RESULTS];
    dra_device_msg *devp[GS_DRV_MAX_RESULTS];
    char *req[GS_DRV_MAX_RESULTS];
    char cdi[GS_DRV_MAX_RESULTS][224];
    char *cdip[GS_DRV_MAX_RESULTS];
    char error[GS_ERR_MSG_MAX + 256];
    gs_drv_claim claim; /* the answer's strings point here */
} prep_slot;

static void answer_from(gs_drv *d, prep_slot *s, const gs_drv_claim *c)
{
    s->claim = *c;
    s->one.n_devices = c->n_results;
    s->one.devices = s->devp;
    for (size_t i = 0; i < c->n_results; i++) {
        dra_device_msg *m = &s->dev[i];
        k8s__io__kubelet__pkg__apis__dra__v1__device__init(m);
        s->devp[i] = m;
        s->req[i] = s->claim.results[i].request;
        m->n_request_names = s->req[i][0] ? 1 : 0;
        m->request_names = &s->req[i];
        m->pool_name = s->claim.results[i].pool;
        m->device_name = s->claim.results[i].device;
        gs_drv_cdi_id(c->uid, c->results[i].device, s->cdi[i], sizeof s->cdi[i]);
        s->cdip[i] = s->cdi[i];
        m->n_cdi_device_ids = 1;
        m->cdi_device_ids = &s->cdip[i];
    }
}

/* Prepare one claim (the DRAPlugin thread). 0 with the answer in s, or -1 with s->error. */
static int prepare_one(gs_drv *d, const dra_claim_msg *cm, prep_slot *s)
{
    pthread_mutex_lock(&d->mu);
    ptrdiff_t k = prepared_find(d, cm->uid);
    if (k >= 0) {
        answer_from(d, s, d->prepared[k]);
        pthread_mutex_unlock(&d->mu);
        return 0;
    }
    pthread_mutex_unlock(&d->mu);
    gs_error err;
    gs_error_clear(&err);
    gs_strbuf body = {0};
    gs_drv_claim *c = calloc(1, sizeof *c);
    gs_strbuf spec = {0};
    char where[PATH_MAX];
    where[0] = '\0';
    int rc = -1;
    if (!c) {
        snprintf(s->error, sizeof s->error, "out of memory");
        goto done;
    }
    if (!d->get_claim) {
        snprintf(s->error, sizeof s->error, "ResourceClaim %s/%s: no API server to read it from", cm->namespace_,
                 cm->name);
        goto done;
    }
    if (d->get_claim(d->claim_ctx, cm->namespace_, cm->name, &body, &err) != 0) {
        snprintf(s->error, sizeof s->error, "cannot read ResourceClaim %s/%s: %s", cm->namespace_, cm->name, err.msg);
        goto done;
    }
    if (gs_drv_claim_parse(body.buf, body.len, d->driver, c, &err) != 0) {
        snprintf(s->error, sizeof s->error, "ResourceClaim %s/%s: %s", cm->namespace_, cm->name, err.msg);
        goto done;
    }
    if (strcmp(c->uid, cm->uid) != 0) {
        snprintf(s->error, sizeof s->error,
                 "ResourceClaim %s/%s has UID %s, the kubelet asked for %s (deleted and created again?)",
                 cm->namespace_, cm->name, c->uid, cm->uid);
        goto done;
    }
    if (!c->allocated) {
        snprintf(s->error, sizeof s->error, "ResourceClaim %s/%s is not allocated", cm->namespace_, cm->name);
        goto done;
    }
    for (size_t i = 0; i < c->n_results; i++) {
        if (strcmp(c->results[i].pool, d->node) != 0) {
            snprintf(s->error, sizeof s->error,
                     "ResourceClaim %s/%s: device %s is allocated from pool %s, this node's pool is %s",
                     cm->namespace_, cm->name, c->results[i].device, c->results[i].pool, d->node);
            goto done;
        }
        if (gs_drv_device_find(&d->devs, c->results[i].device) < 0) {
            snprintf(s->error, sizeof s->error, "ResourceClaim %s/%s: device %s is not a device of node %s",
                     cm->namespace_, cm->name, c->results[i].device, d->node);
            goto done;
        }
    }
    if (gs_drv_cdi_json(c, d->inv, &d->devs, &d->host, &spec, &err) != 0) {
        snprintf(s->error, sizeof s->error, "ResourceClaim %s/%s: %s", cm->namespace_, cm->name, err.msg);
        goto done;
    }
    gs_drv_cdi_path(d->cdi_dir, c->uid, where, sizeof where);
    if (gs_write_file_atomic(where, gs_strbuf_cstr(&spec), spec.len, &err) != 0) {
        snprintf(s->error, sizeof s->error, "ResourceClaim %s/%s: CDI spec not written: %s", cm->namespace_,
                 cm->name, err.msg);
        goto done;
    }
    pthread_mutex_lock(&d->mu);
    if (d->n_prepared >= GS_DRV_MAX_PREPARED) {
        pthread_mutex_unlock(&d->mu);
        unlink(where);
        snprintf(s->error, sizeof s->error, "more than %d claims prepared on this node", GS_DRV_MAX_PREPARED);
        goto done;
    }
    if (d->n_prepared == d->cap_prepared) {
        size_t nc = d->cap_prepared ? d->cap_prepared * 2 : 16;
        gs_drv_claim **nv = realloc(d->prepared, nc * sizeof *nv);
        if (!nv) {
            pthread_mutex_unlock(&d->mu);
            unlink(where);
            snprintf(s->error, sizeof s->error, "out of memory");
            goto done;
        }
        d->prepared = nv;
        d->cap_prepared = nc;
    }
    d->prepared[d->n_prepared++] = c;
    if (checkpoint_write(d, &err) != 0) {
        d->n_prepared--;
        pthread_mutex_unlock(&d->mu);
        unlink(where);
        snprintf(s->error, sizeof s->error, "ResourceClaim %s/%s: checkpoint not written: %s", cm->namespace_,
                 cm->name, err.msg);
        goto done;
    }
    answer_from(d, s, c);
    pthread_mutex_unlock(&d->mu);
    c = NULL;
    rc = 0;
    dlog(d, 0, "DRA: prepared ResourceClaim %s/%s (%s): %zu device(s), CDI spec %s", cm->namespace_, cm->name,
         cm->uid, s->one.n_devices, where);
done:
    free(c);
    gs_strbuf_free(&body);
    gs_strbuf_free(&spec);
    return rc;
}

/* A claim UID as the API server makes them (a UUID): it names a file and a CDI device, so
 * only letters, digits and '-' are taken, at most 63 bytes. */
static bool uid_ok(const char *uid)
{
    if (!uid || !uid[0] || strlen(uid) >= 64)
        return false;
    for (const char *p = uid; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return false;
    return true;
}

static bool claim_ok(const dra_claim_msg *cm, char *why, size_t cap)
{
    if (!uid_ok(cm->uid)) {
        snprintf(why, cap, "claim without a valid uid");
        return false;
    }
    if (!cm->namespace_ || !cm->namespace_[0] || strlen(cm->namespace_) >= 64 || !cm->name || !cm->name[0] ||
        strlen(cm->name) >= 254) {
        snprintf(why, cap, "claim %s without a valid namespace and name", cm->uid);
        return false;
    }
    return true;
}

static void h_prepare(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    gs_drv *d = ctx;
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest *rq =
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__unpack(NULL, len, msg);
    if (!rq) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "cannot decode NodePrepareResourcesRequest");
        return;
    }
    if (rq->n_claims > GS_DRV_MAX_CALL_CLAIMS) {
        char m[128];
        snprintf(m, sizeof m, "%zu claims in one call; at most %d", rq->n_claims, GS_DRV_MAX_CALL_CLAIMS);
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__free_unpacked(rq, NULL);
        gs_grpc_fail(call, GS_GRPC_RESOURCE_EXHAUSTED, m);
        return;
    }
    prep_slot *slots = rq->n_claims ? calloc(rq->n_claims, sizeof *slots) : NULL;
    dra_prep_entry **entries = rq->n_claims ? calloc(rq->n_claims, sizeof *entries) : NULL;
    if (rq->n_claims && (!slots || !entries)) {
        free(slots);
        free(entries);
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__free_unpacked(rq, NULL);
        gs_grpc_fail(call, GS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    size_t ok = 0, failed = 0;
    for (size_t i = 0; i < rq->n_claims; i++) {
        prep_slot *s = &slots[i];
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resource_response__init(&s->one);
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__claims_entry__init(&s->entry);
        const dra_claim_msg *cm = rq->claims[i];
        s->entry.key = cm->uid ? cm->uid : (char *)"";
        s->entry.value = &s->one;
        entries[i] = &s->entry;
        if (!claim_ok(cm, s->error, sizeof s->error) || prepare_one(d, cm, s) != 0) {
            s->one.error = s->error;
            s->one.n_devices = 0;
            failed++;
            dlog(d, 1, "DRA: NodePrepareResources: %s", s->error);
        } else {
            ok++;
        }
    }
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse r =
        K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
    r.n_claims = rq->n_claims;
    r.claims = entries;
    size_t n = k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__get_packed_size(&r);
    uint8_t *buf = n <= GS_GRPC_MAX_MESSAGE ? malloc(n ? n : 1) : NULL;
    if (!buf) {
        gs_grpc_fail(call, GS_GRPC_RESOURCE_EXHAUSTED, "answer too large");
    } else {
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__pack(&r, buf);
        gs_grpc_reply(call, buf, n);
    }
    free(buf);
    pthread_mutex_lock(&d->mu);
    d->prep_ok += ok;
    d->prep_failed += failed;
    pthread_mutex_unlock(&d->mu);
    free(entries);
    free(slots);
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__free_unpacked(rq, NULL);
}

typedef struct unprep_slot {
    dra_unprep_entry entry;
    dra_unprep_one one;
    char error[GS_ERR_MSG_MAX + 128];
} unprep_slot;

static int unprepare_one(gs_drv *d, const char *uid, char *why, size_t cap)
{
    char where[PATH_MAX];
    gs_drv_cdi_path(d->cdi_dir, uid, where, sizeof where);
    if (unlink(where) != 0 && errno != ENOENT) {
        snprintf(why, cap, "claim %s: cannot remove %s: %s", uid, where, strerror(errno));
        return -1;
    }
    pthread_mutex_lock(&d->mu);
    ptrdiff_t k = prepared_find(d, uid);
    if (k < 0) {
        pthread_mutex_unlock(&d->mu);
        return 0; /* unknown: done already (idempotent) */
    }
    gs_drv_claim *c = d->prepared[k];
    d->prepared[k] = d->prepared[--d->n_prepared];
    gs_error err;
    gs_error_clear(&err);
    if (checkpoint_write(d, &err) != 0) {
        d->prepared[d->n_prepared++] = c; /* kept: the kubelet calls again */
        pthread_mutex_unlock(&d->mu);
        snprintf(why, cap, "claim %s: checkpoint not written: %s", uid, err.msg);
        return -1;
    }
    pthread_mutex_unlock(&d->mu);
    dlog(d, 0, "DRA: unprepared ResourceClaim %s/%s (%s)", c->namespace_, c->name, uid);
    free(c);
    return 0;
}

static void h_unprepare(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    gs_drv *d = ctx;
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest *rq =
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__unpack(NULL, len, msg);
    if (!rq) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "cannot decode NodeUnprepareResourcesRequest");
        return;
    }
    if (rq->n_claims > GS_DRV_MAX_CALL_CLAIMS) {
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__free_unpacked(rq, NULL);
        gs_grpc_fail(call, GS_GRPC_RESOURCE_EXHAUSTED, "too many claims in one call");
        return;
    }
    unprep_slot *slots = rq->n_claims ? calloc(rq->n_claims, sizeof *slots) : NULL;
    dra_unprep_entry **entries = rq->n_claims ? calloc(rq->n_claims, sizeof *entries) : NULL;
    if (rq->n_claims && (!slots || !entries)) {
        free(slots);
        free(entries);
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__free_unpacked(rq, NULL);
        gs_grpc_fail(call, GS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    size_t ok = 0, failed = 0;
    for (size_t i = 0; i < rq->n_claims; i++) {
        unprep_slot *s = &slots[i];
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resource_response__init(&s->one);
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__claims_entry__init(&s->entry);
        const dra_claim_msg *cm = rq->claims[i];
        s->entry.key = cm->uid ? cm->uid : (char *)"";
        s->entry.value = &s->one;
        entries[i] = &s->entry;
        bool valid = uid_ok(cm->uid);
        if (!valid)
            snprintf(s->error, sizeof s->error, "claim without a valid uid");
        if (!valid || unprepare_one(d, cm->uid, s->error, sizeof s->error) != 0) {
            s->one.error = s->error;
            failed++;
            dlog(d, 1, "DRA: NodeUnprepareResources: %s", s->error);
        } else {
            ok++;
        }
    }
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse r =
        K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
    r.n_claims = rq->n_claims;
    r.claims = entries;
    size_t n = k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__get_packed_size(&r);
    uint8_t *buf = n <= GS_GRPC_MAX_MESSAGE ? malloc(n ? n : 1) : NULL;
    if (!buf) {
        gs_grpc_fail(call, GS_GRPC_RESOURCE_EXHAUSTED, "answer too large");
    } else {
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__pack(&r, buf);
        gs_grpc_reply(call, buf, n);
    }
    free(buf);
    pthread_mutex_lock(&d->mu);
    d->unprep_ok += ok;
    d->unprep_failed += failed;
    pthread_mutex_unlock(&d->mu);
    free(entries);
    free(slots);
    k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__free_unpacked(rq, NULL);
}

/* ---------------------------------------------------------------- start, stop */

static char *dup_or(const char *s, const char *dflt)
{
    return strdup(s && s[0] ? s : dflt);
}

static void host_tables(gs_drv *d)
{
    gs_inject_host_init(&d->host);
    char path[PATH_MAX];
    size_t len;
    int eno;
    snprintf(path, sizeof path, "%s/proc/devices", d->host_root);
    char *text = read_text(path, 1 << 20, &len, &eno);
    if (text) {
        gs_inject_host_parse_devices(&d->host, text, len);
        free(text);
    }
    snprintf(path, sizeof path, "%s/proc/driver/nvidia-caps/mig-minors", d->host_root);
    text = read_text(path, 1 << 20, &len, &eno);
    if (text) {
        gs_error e;
        if (gs_inject_host_parse_mig_minors(&d->host, path, text, len, &e) < 0)
            dlog(d, 1, "DRA: MIG capability minors not read (left out of the CDI specs): %s", e.msg);
        free(text);
    }
}

int gs_drv_start(const gs_drv_opts *o, gs_drv **out, gs_error *err)
{
    *out = NULL;
    if (!o->node || !o->node[0] || !o->inv)
        return gs_fail(err, GS_ERR_INVALID, "DRA driver: a node name and an inventory are required");
    gs_drv *d = calloc(1, sizeof *d);
    if (!d)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&d->mu, NULL);
    d->driver = dup_or(o->driver, GS_DRV_DRIVER);
    d->node = strdup(o->node);
    d->registry_dir = dup_or(o->registry_dir, GS_DRV_REGISTRY_DIR);
    d->cdi_dir = dup_or(o->cdi_dir, GS_DRV_CDI_DIR);
    d->host_root = strdup(o->host_root && o->host_root[0] && strcmp(o->host_root, "/") ? o->host_root : "");
    char pd[PATH_MAX];
    snprintf(pd, sizeof pd, "%s/%s", GS_DRV_PLUGINS_DIR, d->driver ? d->driver : "");
    d->plugin_dir = dup_or(o->plugin_dir, pd);
    d->inv = o->inv;
    d->get_claim = o->get_claim;
    d->claim_ctx = o->claim_ctx;
    d->log = o->log;
    d->user = o->user;
    if (!d->driver || !d->node || !d->registry_dir || !d->cdi_dir || !d->host_root || !d->plugin_dir) {
        gs_drv_stop(d);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    char sys[PATH_MAX];
    snprintf(sys, sizeof sys, "%s/sys", d->host_root);
    if (gs_drv_devices_build(d->inv, sys, &d->devs, err) != 0)
        goto fail;
    if (d->devs.n && !(d->usable = calloc(d->devs.n, sizeof *d->usable))) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < d->devs.n; i++)
        d->usable[i] = true;
    d->content = 1;
    host_tables(d);
    snprintf(d->reg_socket, sizeof d->reg_socket, "%s/%s-reg.sock", d->registry_dir, d->driver);
    snprintf(d->dra_socket, sizeof d->dra_socket, "%s/dra.sock", d->plugin_dir);
    snprintf(d->checkpoint, sizeof d->checkpoint, "%s/checkpoint.json", d->plugin_dir);
    if (mkdir_p(d->plugin_dir, err) != 0 || mkdir_p(d->registry_dir, err) != 0 || mkdir_p(d->cdi_dir, err) != 0)
        goto fail;
    /* the checkpoint: prepared claims survive restarts */
    size_t len;
    int eno;
    char *text = read_text(d->checkpoint, GS_DRV_MAX_CHECKPOINT, &len, &eno);
    if (text) {
        gs_drv_claim *v = NULL;
        size_t n = 0;
        int rc = gs_drv_checkpoint_parse(text, len, d->driver, &v, &n, err);
        free(text);
        if (rc != 0) {
            gs_error_prefix_path(err, d->checkpoint);
            goto fail;
        }
        if (n && !(d->prepared = calloc(n, sizeof *d->prepared))) {
            free(v);
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        d->cap_prepared = n;
        for (size_t i = 0; i < n; i++) {
            if (!(d->prepared[i] = malloc(sizeof **d->prepared))) {
                free(v);
                gs_fail(err, GS_ERR_NOMEM, "out of memory");
                goto fail;
            }
            *d->prepared[i] = v[i];
            d->n_prepared++;
        }
        free(v);
        dlog(d, 0, "DRA: %zu prepared claim(s) from %s", n, d->checkpoint);
    } else if (eno != ENOENT) {
        gs_fail(err, GS_ERR_IO, "DRA checkpoint %s cannot be read: %s", d->checkpoint, strerror(eno));
        goto fail;
    }
    static const char *const pfx[] = {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/",
                                      "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"};
    if (gs_grpc_server_new(d->dra_socket, &d->dra, err) != 0)
        goto fail;
    for (size_t i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof path, "%sNodePrepareResources", pfx[i]);
        if (gs_grpc_server_route(d->dra, path, false, h_prepare, d, err) != 0)
            goto fail;
        snprintf(path, sizeof path, "%sNodeUnprepareResources", pfx[i]);
        if (gs_grpc_server_route(d->dra, path, false, h_unprepare, d, err) != 0)
            goto fail;
    }
    if (gs_grpc_server_start(d->dra, err) != 0)
        goto fail;
    if (gs_grpc_server_new(d->reg_socket, &d->reg, err) != 0 ||
        gs_grpc_server_route(d->reg, "/pluginregistration.Registration/GetInfo", false, h_get_info, d, err) != 0 ||
        gs_grpc_server_route(d->reg, "/pluginregistration.Registration/NotifyRegistrationStatus", false, h_notify, d,
                             err) != 0 ||
        gs_grpc_server_start(d->reg, err) != 0)
        goto fail;
    dlog(d, 0, "DRA driver %s: %zu device(s) for node %s; DRAPlugin on %s, registration on %s", d->driver, d->devs.n,
         d->node, d->dra_socket, d->reg_socket);
    *out = d;
    return 0;
fail:
    gs_drv_stop(d);
    return -1;
}

void gs_drv_stop(gs_drv *d)
{
    if (!d)
        return;
    gs_grpc_server_free(d->reg); /* first: the kubelet sees the plugin go */
    gs_grpc_server_free(d->dra);
    for (size_t i = 0; i < d->n_prepared; i++)
        free(d->prepared[i]);
    free(d->prepared);
    free(d->usable);
    gs_drv_devices_free(&d->devs);
    free(d->driver);
    free(d->node);
    free(d->registry_dir);
    free(d->plugin_dir);
    free(d->cdi_dir);
    free(d->host_root);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

void gs_drv_set_health(gs_drv *d, const char *uuid, bool healthy)
{
    pthread_mutex_lock(&d->mu);
    bool changed = false;
    for (size_t i = 0; i < d->devs.n; i++) {
        const gs_drv_device *v = &d->devs.v[i];
        bool match = strcmp(v->uuid, uuid) == 0 || (v->mig && strcmp(d->inv->gpus[v->gpu].uuid, uuid) == 0);
        if (match && d->usable[i] != healthy) {
            d->usable[i] = healthy;
            changed = true;
        }
    }
    if (changed)
        d->content++;
    pthread_mutex_unlock(&d->mu);
}

static int slice_path(gs_drv *d, gs_strbuf *path, gs_error *err)
{
    char name[320];
    if (gs_drv_slice_name(d->node, d->driver, name, sizeof name) != 0)
        return gs_fail(err, GS_ERR_INVALID, "ResourceSlice name too long");
    return gs_live_path(path, "resource.k8s.io", "v1", "resourceslices", NULL, name, NULL, err);
}

/* spec.pool.generation of the slice now on the server: 0 when absent */
static int read_generation(gs_drv *d, gs_live_client *c, const char *path, int64_t *gen, gs_error *err)
{
    *gen = 0;
    gs_live_request rq = {.method = "GET", .path = path};
    gs_live_response rs;
    memset(&rs, 0, sizeof rs);
    int rc = gs_live_do(c, &rq, &rs, err);
    if (rc != 0) {
        bool absent = rs.http == 404;
        gs_live_response_free(&rs);
        return absent ? 0 : -1;
    }
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    if (gs_json_parse("ResourceSlice", 1, gs_strbuf_cstr(&rs.body), rs.body.len, &json_lim, &a, &root, err) == 0) {
        const gs_jv *sp = gs_json_get(&root, "spec");
        const gs_jv *pool = gs_json_get(sp, "pool");
        const gs_jv *g = gs_json_get(pool, "generation");
        int64_t v;
        if (g && g->t == GS_JNUM && gs_parse_i64(g->s, g->n, &v) == 0 && v > 0)
            *gen = v;
    }
    gs_arena_free(&a);
    gs_live_response_free(&rs);
    (void)d;
    return 0;
}

int gs_drv_publish(gs_drv *d, gs_live_client *c, bool force, gs_error *err)
{
    pthread_mutex_lock(&d->mu);
    uint64_t content = d->content;
    bool changed = !d->published || content != d->published_content;
    if (!changed && !force) { /* the main loop asks every second: nothing allocated then */
        pthread_mutex_unlock(&d->mu);
        return 0;
    }
    int64_t gen = d->generation;
    bool *usable = d->devs.n ? malloc(d->devs.n * sizeof *usable) : NULL;
    if (usable)
        memcpy(usable, d->usable, d->devs.n * sizeof *usable);
    pthread_mutex_unlock(&d->mu);
    if (d->devs.n && !usable)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    gs_strbuf path = {0}, body = {0};
    int rc = slice_path(d, &path, err);
    if (rc == 0 && gen == 0) {
        int64_t old = 0;
        rc = read_generation(d, c, gs_strbuf_cstr(&path), &old, err);
        gen = old + 1;
    } else if (rc == 0 && changed) {
        gen++;
    }
    if (rc == 0)
        rc = gs_drv_slice_json(d->inv, &d->devs, usable, d->driver, d->node, gen, &body, err);
    if (rc == 0) {
        gs_live_write_opts wo;
        memset(&wo, 0, sizeof wo);
        wo.field_manager = GS_DRV_FIELD_MANAGER;
        wo.force = true;
        gs_live_response rs;
        memset(&rs, 0, sizeof rs);
        rc = gs_live_apply(c, gs_strbuf_cstr(&path), body.buf, body.len, &wo, &rs, err);
        gs_live_response_free(&rs);
    }
    pthread_mutex_lock(&d->mu);
    if (rc == 0) {
        d->generation = gen;
        d->published = true;
        d->published_content = content;
        d->publishes++;
    } else {
        d->publish_failed++;
    }
    pthread_mutex_unlock(&d->mu);
    gs_strbuf_free(&path);
    gs_strbuf_free(&body);
    free(usable);
    return rc == 0 ? 1 : -1;
}

int gs_drv_unpublish(gs_drv *d, gs_live_client *c, gs_error *err)
{
    gs_strbuf path = {0};
    int rc = slice_path(d, &path, err);
    if (rc == 0) {
        gs_live_response rs;
        memset(&rs, 0, sizeof rs);
        rc = gs_live_delete(c, gs_strbuf_cstr(&path), NULL, &rs, err);
        if (rc != 0 && rs.http == 404)
            rc = 0;
        gs_live_response_free(&rs);
    }
    gs_strbuf_free(&path);
    return rc;
}

int64_t gs_drv_generation(gs_drv *d)
{
    pthread_mutex_lock(&d->mu);
    int64_t g = d->generation;
    pthread_mutex_unlock(&d->mu);
    return g;
}

bool gs_drv_registered(gs_drv *d, gs_strbuf *why)
{
    pthread_mutex_lock(&d->mu);
    bool r = d->registered;
    if (!r && why)
        gs_strbuf_printf(why, "the DRA driver %s is not registered with the kubelet%s%s", d->driver,
                         d->reg_error[0] ? ": " : "", d->reg_error);
    pthread_mutex_unlock(&d->mu);
    return r;
}

const gs_drv_devices *gs_drv_device_table(const gs_drv *d)
{
    return &d->devs;
}

void gs_drv_metrics(gs_drv *d, gs_strbuf *out)
{
    pthread_mutex_lock(&d->mu);
    size_t usable = 0;
    for (size_t i = 0; i < d->devs.n; i++)
        usable += d->usable[i];
    gs_strbuf_printf(
        out,
        "# HELP gpusched_agent_dra_registrations_total The kubelet's registration verdicts on the DRA driver.\n"
        "# TYPE gpusched_agent_dra_registrations_total counter\n"
        "gpusched_agent_dra_registrations_total{result=\"ok\"} %llu\n"
        "gpusched_agent_dra_registrations_total{result=\"error\"} %llu\n"
        "# HELP gpusched_agent_dra_prepare_total Claims prepared (NodePrepareResources), by result.\n"
        "# TYPE gpusched_agent_dra_prepare_total counter\n"
        "gpusched_agent_dra_prepare_total{result=\"ok\"} %llu\n"
        "gpusched_agent_dra_prepare_total{result=\"error\"} %llu\n"
        "# HELP gpusched_agent_dra_unprepare_total Claims unprepared (NodeUnprepareResources), by result.\n"
        "# TYPE gpusched_agent_dra_unprepare_total counter\n"
        "gpusched_agent_dra_unprepare_total{result=\"ok\"} %llu\n"
        "gpusched_agent_dra_unprepare_total{result=\"error\"} %llu\n"
        "# HELP gpusched_agent_dra_prepared_claims Claims prepared on this node now.\n"
        "# TYPE gpusched_agent_dra_prepared_claims gauge\n"
        "gpusched_agent_dra_prepared_claims %zu\n"
        "# HELP gpusched_agent_dra_devices Devices of the ResourceSlice: published (healthy) and withheld.\n"
        "# TYPE gpusched_agent_dra_devices gauge\n"
        "gpusched_agent_dra_devices{state=\"published\"} %zu\n"
        "gpusched_agent_dra_devices{state=\"withheld\"} %zu\n"
        "# HELP gpusched_agent_dra_slice_publications_total ResourceSlice writes, by result.\n"
        "# TYPE gpusched_agent_dra_slice_publications_total counter\n"
        "gpusched_agent_dra_slice_publications_total{result=\"ok\"} %llu\n"
        "gpusched_agent_dra_slice_publications_total{result=\"error\"} %llu\n"
        "# HELP gpusched_agent_dra_slice_generation The ResourceSlice's pool generation.\n"
        "# TYPE gpusched_agent_dra_slice_generation gauge\n"
        "gpusched_agent_dra_slice_generation %lld\n",
        (unsigned long long)d->reg_ok, (unsigned long long)d->reg_failed, (unsigned long long)d->prep_ok,
        (unsigned long long)d->prep_failed, (unsigned long long)d->unprep_ok, (unsigned long long)d->unprep_failed,
        d->n_prepared, usable, d->devs.n - usable, (unsigned long long)d->publishes,
        (unsigned long long)d->publish_failed, (long long)d->generation);
    pthread_mutex_unlock(&d->mu);
}
