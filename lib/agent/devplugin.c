/*
 * devplugin.c - the device plugin's logic without transport: NVIDIA's config file, the
 * plan of resources and device IDs, GetPreferredAllocation and Allocate (devplugin.h).
 *
 * Behaviour follows NVIDIA's k8s-device-plugin (live.md 3.6-3.8, nvidia.md 1.6, 3.1, 3.2)
 * except where docs/agent.md, "Device plugin: resources, IDs, Allocate", says otherwise.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpusched/devplugin.h"
#include "gpusched/inject.h"
#include "util/yaml_tree_int.h"

#define DP_MAX_BYTES ((size_t)1 << 20)
#define DP_MAX_DEPTH 16
#define DP_MAX_NODES 20000u
#define DP_ID_MAX 63 /* Device.ID, api.proto */
#define DP_MAX_UNITS 4096 /* share units per GPU (gpu-mem GiB, gpu-milli 1000) */

static const char DP_VOLUME_ROOT[] = "/var/run/nvidia-container-devices";
static const char DP_CDI_KIND[] = "k8s.device-plugin.nvidia.com";

/* ================================================================ configuration */

void gs_devplugin_config_defaults(gs_devplugin_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->mig_strategy = GS_MIG_NONE;
    cfg->id_strategy = GS_DP_ID_UUID;
    cfg->list_strategies = GS_DP_LIST_ENVVAR;
    cfg->replica_policy = GS_DP_DISTRIBUTED;
    snprintf(cfg->driver_root, sizeof cfg->driver_root, "/");
    snprintf(cfg->mps_root, sizeof cfg->mps_root, "/run/nvidia/mps");
    snprintf(cfg->cdi_annotation_prefix, sizeof cfg->cdi_annotation_prefix, "cdi.k8s.io/");
    cfg->sharing = GS_SHARING_NONE;
}

typedef struct dp_reader {
    const char *file;
    gs_devplugin_config *cfg;
    gs_error *err;
} dp_reader;

static int dp_fail(dp_reader *r, const gs_yn *n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int dp_fail(dp_reader *r, const gs_yn *n, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(r->err, GS_ERR_INVALID, r->file, n ? (int)n->line : 0, n ? (int)n->col : 0, path, fmt,
                  ap);
    va_end(ap);
    return -1;
}

static void dp_warn(gs_devplugin_config *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void dp_warn(gs_devplugin_config *cfg, const char *fmt, ...)
{
    if (cfg->n_warnings >= GS_DP_MAX_WARN)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cfg->warnings[cfg->n_warnings++], GS_DP_WARN_MAX, fmt, ap);
    va_end(ap);
}

static const char *type_name(const gs_yn *n)
{
    return n->type == GS_YN_MAP ? "a mapping" : n->type == GS_YN_SEQ ? "a sequence" : "a scalar";
}

static bool is_null(const gs_yn *n)
{
    return n->type == GS_YN_SCALAR && n->null;
}

static int want(dp_reader *r, const gs_yn *n, uint8_t type, const char *path)
{
    if (n->type == type)
        return 0;
    return dp_fail(r, n, path, "expected %s, got %s",
                   type == GS_YN_MAP ? "a mapping" : type == GS_YN_SEQ ? "a sequence" : "a string",
                   type_name(n));
}

static int read_bool(dp_reader *r, const gs_yn *n, const char *path, bool *out)
{
    if (n->type == GS_YN_SCALAR && n->plain) {
        const char *t = n->u.text;
        if (!strcmp(t, "true") || !strcmp(t, "True") || !strcmp(t, "TRUE")) {
            *out = true;
            return 0;
        }
        if (!strcmp(t, "false") || !strcmp(t, "False") || !strcmp(t, "FALSE")) {
            *out = false;
            return 0;
        }
    }
    char b[80];
    return dp_fail(r, n, path, "expected true or false, got %s",
                   n->type == GS_YN_SCALAR ? gs_yn_shown(n, b, sizeof b) : type_name(n));
}

/* A non-empty string without NUL bytes into buf (cap bytes with the NUL). */
static int read_str(dp_reader *r, const gs_yn *n, const char *path, char *buf, size_t cap)
{
    if (want(r, n, GS_YN_SCALAR, path) < 0)
        return -1;
    if (n->len == 0 || n->len >= cap || strlen(n->u.text) != n->len)
        return dp_fail(r, n, path, "expected a non-empty string of at most %zu bytes", cap - 1);
    memcpy(buf, n->u.text, n->len + 1);
    return 0;
}

static int read_uint(dp_reader *r, const gs_yn *n, const char *path, unsigned max, unsigned *out)
{
    char b[80];
    if (n->type != GS_YN_SCALAR || !n->plain || n->len == 0 || n->len > 9)
        goto bad;
    for (uint32_t i = 0; i < n->len; i++)
        if (!isdigit((unsigned char)n->u.text[i]))
            goto bad;
    unsigned long v = strtoul(n->u.text, NULL, 10);
    if (v > max)
        goto bad;
    *out = (unsigned)v;
    return 0;
bad:
    return dp_fail(r, n, path, "expected an integer 0..%u, got %s", max,
                   n->type == GS_YN_SCALAR ? gs_yn_shown(n, b, sizeof b) : type_name(n));
}

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(s, *list))
            return true;
    return false;
}

/* Keys NVIDIA's plugin knows that gpusched does not use: accepted and ignored. */
static const char *const flags_ignored[] = {
    "failOnInitError", "restartOnDeviceUnhealthy", "nvidiaDevRoot", "driverRoot", "devRoot",
    "useNodeFeatureAPI", "deviceDiscoveryStrategy", "gfd", "imex", NULL,
};
static const char *const plugin_ignored[] = {
    "nvidiaCTKPath", "nvidiaCDIHookPath", "containerDriverRoot", "driverRootCtrPath",
    "cdiFeatureFlags", "kubeletSocket", NULL,
};

static int set_list_strategy(dp_reader *r, const gs_yn *n, const char *path, unsigned *bits)
{
    char b[80];
    if (want(r, n, GS_YN_SCALAR, path) < 0)
        return -1;
    const char *t = n->u.text;
    unsigned bit = !strcmp(t, "envvar")            ? GS_DP_LIST_ENVVAR
                   : !strcmp(t, "volume-mounts")   ? GS_DP_LIST_VOLUME_MOUNTS
                   : !strcmp(t, "cdi-annotations") ? GS_DP_LIST_CDI_ANNOTATIONS
                   : !strcmp(t, "cdi-cri")         ? GS_DP_LIST_CDI_CRI
                                                   : 0;
    if (!bit)
        return dp_fail(r, n, path,
                       "unknown device list strategy %s (expected envvar, volume-mounts, "
                       "cdi-annotations or cdi-cri)",
                       gs_yn_shown(n, b, sizeof b));
    *bits |= bit;
    return 0;
}

static int read_plugin(dp_reader *r, const gs_yn *m)
{
    gs_devplugin_config *cfg = r->cfg;
    if (is_null(m))
        return 0;
    if (want(r, m, GS_YN_MAP, "flags.plugin") < 0)
        return -1;
    for (const gs_yn *k = m->u.first; k && k->next; k = k->next->next) {
        const gs_yn *v = k->next;
        const char *key = k->u.text;
        char p[96], b[80];
        snprintf(p, sizeof p, "flags.plugin.%.40s", key);
        if (!strcmp(key, "passDeviceSpecs")) {
            if (read_bool(r, v, p, &cfg->pass_device_specs) < 0)
                return -1;
        } else if (!strcmp(key, "deviceListStrategy")) {
            unsigned bits = 0;
            if (v->type == GS_YN_SEQ) {
                uint32_t i = 0;
                for (const gs_yn *it = v->u.first; it; it = it->next, i++) {
                    char pi[112];
                    snprintf(pi, sizeof pi, "%s[%u]", p, i);
                    if (set_list_strategy(r, it, pi, &bits) < 0)
                        return -1;
                }
                if (!bits)
                    return dp_fail(r, v, p, "expected at least one device list strategy");
            } else if (set_list_strategy(r, v, p, &bits) < 0) {
                return -1;
            }
            cfg->list_strategies = bits;
        } else if (!strcmp(key, "deviceIDStrategy")) {
            if (want(r, v, GS_YN_SCALAR, p) < 0)
                return -1;
            if (!strcmp(v->u.text, "uuid"))
                cfg->id_strategy = GS_DP_ID_UUID;
            else if (!strcmp(v->u.text, "index"))
                cfg->id_strategy = GS_DP_ID_INDEX;
            else
                return dp_fail(r, v, p, "unknown device ID strategy %s (expected uuid or index)",
                               gs_yn_shown(v, b, sizeof b));
        } else if (!strcmp(key, "cdiAnnotationPrefix")) {
            if (read_str(r, v, p, cfg->cdi_annotation_prefix, sizeof cfg->cdi_annotation_prefix) < 0)
                return -1;
        } else if (!strcmp(key, "sharedDevicesAllocationPolicy")) {
            if (want(r, v, GS_YN_SCALAR, p) < 0)
                return -1;
            if (!strcmp(v->u.text, "distributed"))
                cfg->replica_policy = GS_DP_DISTRIBUTED;
            else if (!strcmp(v->u.text, "packed"))
                cfg->replica_policy = GS_DP_PACKED;
            else
                return dp_fail(r, v, p, "unknown allocation policy %s (expected distributed or packed)",
                               gs_yn_shown(v, b, sizeof b));
        } else if (!in_list(key, plugin_ignored)) {
            return dp_fail(r, k, p,
                           "unknown field (expected passDeviceSpecs, deviceListStrategy, "
                           "deviceIDStrategy, cdiAnnotationPrefix, sharedDevicesAllocationPolicy)");
        }
    }
    return 0;
}

static int read_flags(dp_reader *r, const gs_yn *m)
{
    gs_devplugin_config *cfg = r->cfg;
    if (is_null(m))
        return 0;
    if (want(r, m, GS_YN_MAP, "flags") < 0)
        return -1;
    for (const gs_yn *k = m->u.first; k && k->next; k = k->next->next) {
        const gs_yn *v = k->next;
        const char *key = k->u.text;
        char p[96], b[80];
        snprintf(p, sizeof p, "flags.%.40s", key);
        if (!strcmp(key, "migStrategy")) {
            if (want(r, v, GS_YN_SCALAR, p) < 0)
                return -1;
            if (!strcmp(v->u.text, "none"))
                cfg->mig_strategy = GS_MIG_NONE;
            else if (!strcmp(v->u.text, "single"))
                cfg->mig_strategy = GS_MIG_SINGLE;
            else if (!strcmp(v->u.text, "mixed"))
                cfg->mig_strategy = GS_MIG_MIXED;
            else
                return dp_fail(r, v, p, "unknown MIG strategy %s (expected none, single or mixed)",
                               gs_yn_shown(v, b, sizeof b));
        } else if (!strcmp(key, "nvidiaDriverRoot")) {
            if (read_str(r, v, p, cfg->driver_root, sizeof cfg->driver_root) < 0)
                return -1;
            if (cfg->driver_root[0] != '/')
                return dp_fail(r, v, p, "expected an absolute path");
        } else if (!strcmp(key, "mpsRoot")) {
            if (read_str(r, v, p, cfg->mps_root, sizeof cfg->mps_root) < 0)
                return -1;
            if (cfg->mps_root[0] != '/')
                return dp_fail(r, v, p, "expected an absolute path");
        } else if (!strcmp(key, "gdsEnabled")) {
            if (read_bool(r, v, p, &cfg->gds_enabled) < 0)
                return -1;
        } else if (!strcmp(key, "mofedEnabled")) {
            if (read_bool(r, v, p, &cfg->mofed_enabled) < 0)
                return -1;
        } else if (!strcmp(key, "gdrcopyEnabled")) {
            if (read_bool(r, v, p, &cfg->gdrcopy_enabled) < 0)
                return -1;
        } else if (!strcmp(key, "plugin")) {
            if (read_plugin(r, v) < 0)
                return -1;
        } else if (!in_list(key, flags_ignored)) {
            return dp_fail(r, k, p,
                           "unknown field (expected migStrategy, nvidiaDriverRoot, mpsRoot, gdsEnabled, "
                           "mofedEnabled, gdrcopyEnabled, plugin, or one of NVIDIA's ignored flags)");
        }
    }
    return 0;
}

/* nvidia.com/gpu or nvidia.com/mig-<profile>: the names NVIDIA's plugin replicates. */
static bool replicable_name(const char *n)
{
    if (!strcmp(n, "nvidia.com/gpu"))
        return true;
    if (strncmp(n, "nvidia.com/mig-", 15) != 0 || !n[15])
        return false;
    for (const char *c = n + 15; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' && *c != '_')
            return false;
    return isalnum((unsigned char)n[strlen(n) - 1]) != 0;
}

/* A devices: entry: "all", a count > 0, or a list of GPU indices, MIG indices or UUIDs. */
static bool device_ref_ok(const gs_yn *n)
{
    if (n->type != GS_YN_SCALAR || n->len == 0 || n->len > 80)
        return false;
    const char *t = n->u.text;
    size_t digits = strspn(t, "0123456789");
    if (digits == n->len)
        return true;
    if (digits && t[digits] == ':') {
        size_t d2 = strspn(t + digits + 1, "0123456789");
        if (d2 && digits + 1 + d2 == n->len)
            return true;
    }
    return !strncmp(t, "GPU-", 4) || !strncmp(t, "MIG-", 4);
}

static int read_replicated(dp_reader *r, const gs_yn *m, const char *sect, gs_gpu_sharing kind)
{
    gs_devplugin_config *cfg = r->cfg;
    char base[48];
    snprintf(base, sizeof base, "sharing.%s", sect);
    if (want(r, m, GS_YN_MAP, base) < 0)
        return -1;
    const gs_yn *res = NULL;
    bool fail_gt_one = false;
    for (const gs_yn *k = m->u.first; k && k->next; k = k->next->next) {
        const gs_yn *v = k->next;
        char p[96], b[80];
        snprintf(p, sizeof p, "%s.%.40s", base, k->u.text);
        if (!strcmp(k->u.text, "renameByDefault")) {
            if (read_bool(r, v, p, &cfg->rename_by_default) < 0)
                return -1;
        } else if (!strcmp(k->u.text, "failRequestsGreaterThanOne")) {
            if (read_bool(r, v, p, &fail_gt_one) < 0)
                return -1;
        } else if (!strcmp(k->u.text, "resources")) {
            res = v;
        } else if (!strcmp(k->u.text, "strategy") && kind == GS_SHARING_TIME_SLICING) {
            if (v->type != GS_YN_SCALAR || (v->len && !v->null))
                return dp_fail(r, v, p, "unknown time-slicing strategy %s (NVIDIA's plugin knows none)",
                               v->type == GS_YN_SCALAR ? gs_yn_shown(v, b, sizeof b) : type_name(v));
        } else {
            return dp_fail(r, k, p,
                           "unknown field (expected renameByDefault, failRequestsGreaterThanOne, resources)");
        }
    }
    char rp[64];
    snprintf(rp, sizeof rp, "%s.resources", base);
    if (!res || is_null(res) || (res->type == GS_YN_SEQ && res->len == 0))
        return dp_fail(r, res ? res : m, rp, "no resources specified");
    if (want(r, res, GS_YN_SEQ, rp) < 0)
        return -1;
    uint32_t i = 0;
    for (const gs_yn *it = res->u.first; it; it = it->next, i++) {
        char ip[80];
        snprintf(ip, sizeof ip, "%s[%u]", rp, i);
        if (want(r, it, GS_YN_MAP, ip) < 0)
            return -1;
        if (cfg->n_replicated >= GS_DP_MAX_REPLICATED)
            return dp_fail(r, it, ip, "at most %d resources", GS_DP_MAX_REPLICATED);
        gs_devplugin_replicated *rr = &cfg->replicated[cfg->n_replicated];
        memset(rr, 0, sizeof *rr);
        const gs_yn *name = NULL, *reps = NULL;
        for (const gs_yn *k = it->u.first; k && k->next; k = k->next->next) {
            const gs_yn *v = k->next;
            char p[128], b[80];
            snprintf(p, sizeof p, "%s.%.40s", ip, k->u.text);
            if (!strcmp(k->u.text, "name")) {
                name = v;
                if (read_str(r, v, p, rr->name, sizeof rr->name) < 0)
                    return -1;
                if (!replicable_name(rr->name))
                    return dp_fail(r, v, p,
                                   "cannot share %s: expected nvidia.com/gpu or nvidia.com/mig-<profile>",
                                   gs_yn_shown(v, b, sizeof b));
                if (kind == GS_SHARING_MPS && strcmp(rr->name, "nvidia.com/gpu") != 0)
                    return dp_fail(r, v, p, "MPS shares whole GPUs only (nvidia.com/gpu), not %s",
                                   gs_yn_shown(v, b, sizeof b));
            } else if (!strcmp(k->u.text, "replicas")) {
                reps = v;
                if (read_uint(r, v, p, 1000, &rr->replicas) < 0)
                    return -1;
                if (rr->replicas < 1)
                    return dp_fail(r, v, p, "number of replicas must be at least 1");
            } else if (!strcmp(k->u.text, "rename")) {
                char tmp[GS_DP_NAME_MAX];
                if (read_str(r, v, p, tmp, sizeof tmp) < 0)
                    return -1;
                dp_warn(cfg, "%s: rename is not applied (as in NVIDIA's plugin); "
                             "use renameByDefault", p);
            } else if (!strcmp(k->u.text, "devices")) {
                if (v->type == GS_YN_SCALAR && !strcmp(v->u.text, "all")) {
                    /* the default */
                } else if (v->type == GS_YN_SCALAR && v->plain && strspn(v->u.text, "0123456789") == v->len &&
                           v->len > 0 && v->len < 6 && atoi(v->u.text) > 0) {
                    dp_warn(cfg, "%s: a device count is not applied (as in NVIDIA's plugin); "
                                 "every device is shared", p);
                } else if (v->type == GS_YN_SEQ) {
                    uint32_t j = 0;
                    for (const gs_yn *d = v->u.first; d; d = d->next, j++) {
                        if (!device_ref_ok(d)) {
                            char pj[144];
                            snprintf(pj, sizeof pj, "%s[%u]", p, j);
                            return dp_fail(r, d, pj,
                                           "expected a GPU index, a MIG index (gpu:mig) or a UUID, got %s",
                                           d->type == GS_YN_SCALAR ? gs_yn_shown(d, b, sizeof b) : type_name(d));
                        }
                    }
                    dp_warn(cfg, "%s: a device list is not applied (as in NVIDIA's plugin); "
                                 "every device is shared", p);
                } else {
                    return dp_fail(r, v, p, "expected \"all\", a count > 0 or a list of devices, got %s",
                                   v->type == GS_YN_SCALAR ? gs_yn_shown(v, b, sizeof b) : type_name(v));
                }
            } else {
                return dp_fail(r, k, p, "unknown field (expected name, replicas, rename, devices)");
            }
        }
        if (!name)
            return dp_fail(r, it, ip, "no resource name specified");
        if (!reps)
            return dp_fail(r, it, ip, "no replicas specified");
        for (size_t j = 0; j < cfg->n_replicated; j++)
            if (!strcmp(cfg->replicated[j].name, rr->name))
                return dp_fail(r, name, ip, "resource %s is listed twice", rr->name);
        cfg->n_replicated++;
    }
    cfg->sharing = kind;
    /* MPS: one client per replica always (NVIDIA forces failRequestsGreaterThanOne). */
    cfg->fail_requests_gt_one = kind == GS_SHARING_MPS ? true : fail_gt_one;
    return 0;
}

static int read_sharing(dp_reader *r, const gs_yn *m)
{
    if (is_null(m))
        return 0;
    if (want(r, m, GS_YN_MAP, "sharing") < 0)
        return -1;
    for (const gs_yn *k = m->u.first; k && k->next; k = k->next->next) {
        const gs_yn *v = k->next;
        char p[64];
        snprintf(p, sizeof p, "sharing.%.40s", k->u.text);
        if (is_null(v))
            continue;
        if (r->cfg->sharing != GS_SHARING_NONE)
            return dp_fail(r, k, p, "sharing.timeSlicing and sharing.mps are mutually exclusive");
        if (!strcmp(k->u.text, "timeSlicing")) {
            if (read_replicated(r, v, "timeSlicing", GS_SHARING_TIME_SLICING) < 0)
                return -1;
        } else if (!strcmp(k->u.text, "mps")) {
            if (read_replicated(r, v, "mps", GS_SHARING_MPS) < 0)
                return -1;
        } else {
            return dp_fail(r, k, p, "unknown field (expected timeSlicing or mps)");
        }
    }
    return 0;
}

/* The share resources gpusched can account (their units per GPU: see share_units). */
static const char *const share_names[] = {"aliyun.com/gpu-mem", "alibabacloud.com/gpu-milli", NULL};

static int read_gpusched(dp_reader *r, const gs_yn *m)
{
    gs_devplugin_config *cfg = r->cfg;
    if (is_null(m))
        return 0;
    if (want(r, m, GS_YN_MAP, "gpusched") < 0)
        return -1;
    for (const gs_yn *k = m->u.first; k && k->next; k = k->next->next) {
        const gs_yn *v = k->next;
        char p[64], b[80];
        snprintf(p, sizeof p, "gpusched.%.40s", k->u.text);
        if (!strcmp(k->u.text, "shareResources")) {
            if (is_null(v))
                continue;
            if (want(r, v, GS_YN_SEQ, p) < 0)
                return -1;
            cfg->n_share = 0;
            uint32_t i = 0;
            for (const gs_yn *it = v->u.first; it; it = it->next, i++) {
                char pi[80];
                snprintf(pi, sizeof pi, "%s[%u]", p, i);
                if (want(r, it, GS_YN_SCALAR, pi) < 0)
                    return -1;
                if (!in_list(it->u.text, share_names))
                    return dp_fail(r, it, pi,
                                   "unknown share resource %s (expected aliyun.com/gpu-mem or "
                                   "alibabacloud.com/gpu-milli)",
                                   gs_yn_shown(it, b, sizeof b));
                for (size_t j = 0; j < cfg->n_share; j++)
                    if (!strcmp(cfg->share[j], it->u.text))
                        return dp_fail(r, it, pi, "%s is listed twice", it->u.text);
                if (cfg->n_share >= GS_DP_MAX_SHARE)
                    return dp_fail(r, it, pi, "at most %d share resources", GS_DP_MAX_SHARE);
                snprintf(cfg->share[cfg->n_share++], GS_DP_NAME_MAX, "%s", it->u.text);
            }
        } else {
            return dp_fail(r, k, p, "unknown field (expected shareResources)");
        }
    }
    return 0;
}

int gs_devplugin_config_parse(const char *file, const char *data, size_t len, gs_devplugin_config *cfg,
                              gs_error *err)
{
    gs_devplugin_config_defaults(cfg);
    if (!file)
        file = "device plugin config";
    if (len > DP_MAX_BYTES)
        return gs_error_set(err, GS_ERR_LIMIT, file, 0, 0, NULL,
                            "device plugin config is %zu bytes (at most %zu)", len, DP_MAX_BYTES);
    gs_arena a;
    gs_arena_init(&a, 16384);
    gs_yt_opts o;
    memset(&o, 0, sizeof o);
    o.file = file;
    o.what = "a device plugin config";
    o.max_depth = DP_MAX_DEPTH;
    o.max_nodes = DP_MAX_NODES;
    o.max_scalar = 4096;
    o.copy_text = true;
    gs_yn *root = NULL;
    int rc = gs_yt_build(&o, &a, data ? data : "", data ? len : 0, &root, NULL, err);
    dp_reader r = {file, cfg, err};
    if (rc < 0 || !root || is_null(root))
        goto out;
    if ((rc = want(&r, root, GS_YN_MAP, "")) < 0)
        goto out;
    for (const gs_yn *k = root->u.first; k && k->next && rc == 0; k = k->next->next) {
        const gs_yn *v = k->next;
        const char *key = k->u.text;
        if (!strcmp(key, "version")) {
            if (v->type != GS_YN_SCALAR || (strcmp(v->u.text, "v1") != 0 && !v->null)) {
                char b[80];
                rc = dp_fail(&r, v, "version", "unknown version %s (expected v1)",
                             v->type == GS_YN_SCALAR ? gs_yn_shown(v, b, sizeof b) : type_name(v));
            }
        } else if (!strcmp(key, "flags")) {
            rc = read_flags(&r, v);
        } else if (!strcmp(key, "sharing")) {
            rc = read_sharing(&r, v);
        } else if (!strcmp(key, "gpusched")) {
            rc = read_gpusched(&r, v);
        } else if (strcmp(key, "resources") != 0 && strcmp(key, "imex") != 0 &&
                   strcmp(key, "health") != 0) {
            dp_warn(cfg, "top-level key \"%.60s\" (line %u) is not read", key, k->line);
        }
    }
out:
    gs_arena_free(&a);
    if (rc < 0) {
        gs_devplugin_config defaults_only;
        gs_devplugin_config_defaults(&defaults_only);
        *cfg = defaults_only;
        return -1;
    }
    return 0;
}

/* ================================================================ plan */

typedef struct dp_mig_ids {
    int index;
    unsigned gi, ci;
    bool ok; /* health */
} dp_mig_ids;

struct gs_dp_gpu_topo {
    int index;   /* NVML index */
    int numa;
    int minor;
    bool lost;
    bool ok;     /* health */
    long domain; /* PCI domain, -1 unknown */
    int bus;     /* PCI bus number, -1 unknown */
    int *links;  /* links[j]: NVLinks to gpu j (n_gpus entries) */
    size_t n_mig;
    dp_mig_ids *mig;
};

struct gs_dp_mig_minor {
    int gpu_minor;
    int gi, ci; /* ci -1: the GI access capability */
    int minor;
};

static int nomem(gs_error *err)
{
    return gs_fail(err, GS_ERR_NOMEM, "out of memory building the device plugin plan");
}

static void parse_bus(const char *s, long *domain, int *bus)
{
    *domain = -1;
    *bus = -1;
    unsigned long d;
    unsigned b;
    char *end;
    if (!s || !*s)
        return;
    d = strtoul(s, &end, 16);
    if (*end != ':')
        return;
    if (sscanf(end + 1, "%x", &b) != 1)
        return;
    *domain = (long)d;
    *bus = (int)b;
}

/* Bus ids compared without case and leading zeros of the domain ("00000000:07:00.0" ==
 * "0000:07:00.0"). */
static bool same_bus_id(const char *a, const char *b)
{
    if (!a[0] || !b[0])
        return false;
    const char *ca = strchr(a, ':'), *cb = strchr(b, ':');
    if (!ca || !cb)
        return strcasecmp(a, b) == 0;
    if (strtoul(a, NULL, 16) != strtoul(b, NULL, 16))
        return false;
    return strcasecmp(ca, cb) == 0;
}

typedef struct dp_item {
    const char *res;  /* "gpu", "mig-1g.10gb" (after nvidia.com/) */
    const char *profile;
    int gpu, mig;
} dp_item;

typedef struct dp_build {
    gs_devplugin_plan *plan;
    const gs_nvml_inventory *inv;
    const gs_devplugin_config *cfg;
    gs_error *err;
    dp_item *items;
    size_t n_items;
    size_t n_notes, cap_notes;
    const char **notes;
} dp_build;

static int note(dp_build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int note(dp_build *b, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (gs_vec_grow_((void **)&b->notes, &b->cap_notes, b->n_notes + 1, sizeof *b->notes) < 0)
        return nomem(b->err);
    b->notes[b->n_notes] = gs_arena_strdup(&b->plan->arena, buf);
    if (!b->notes[b->n_notes])
        return nomem(b->err);
    b->n_notes++;
    return 0;
}

static const char *mig_resource(gs_arena *a, const char *profile)
{
    char *s = gs_arena_printf(a, "mig-%s", profile);
    for (char *c = s; c && *c; c++)
        if (*c == '+')
            *c = '.';
    return s;
}

static int add_item(dp_build *b, const char *res, const char *profile, int gpu, int mig)
{
    dp_item *it = &b->items[b->n_items++];
    it->res = res;
    it->profile = profile;
    it->gpu = gpu;
    it->mig = mig;
    return 0;
}

/* Which physical devices go under which resource (after "nvidia.com/"). */
static int collect(dp_build *b)
{
    const gs_nvml_inventory *inv = b->inv;
    gs_devplugin_plan *plan = b->plan;
    gs_mig_strategy strat = b->cfg->mig_strategy;
    size_t live = 0, mig_on = 0, mig_off = 0;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        if (g->lost) {
            if (note(b, "GPU %u (%s) is not advertised: lost: %s", g->index, g->uuid[0] ? g->uuid : "no UUID",
                     g->lost_reason) < 0)
                return -1;
            continue;
        }
        live++;
        if (g->mig_current == 1)
            mig_on++;
        else
            mig_off++;
    }
    if (strat == GS_MIG_SINGLE && mig_on == 0) {
        strat = GS_MIG_NONE;
        if (live && note(b, "migStrategy single: no MIG-enabled GPU, whole GPUs advertised as with none") < 0)
            return -1;
    }
    plan->mig_strategy = strat;
    if (strat == GS_MIG_SINGLE) {
        const char *first = NULL;
        const char *why = NULL;
        char whybuf[256];
        if (mig_off) {
            why = "every GPU must have MIG enabled";
        } else {
            for (size_t i = 0; i < inv->n_gpus && !why; i++) {
                const gs_nvml_gpu *g = &inv->gpus[i];
                if (g->lost)
                    continue;
                if (g->n_mig == 0) {
                    snprintf(whybuf, sizeof whybuf, "GPU %u has MIG enabled and no MIG device", g->index);
                    why = whybuf;
                }
                for (size_t j = 0; j < g->n_mig && !why; j++) {
                    const gs_nvml_mig_device *m = &g->mig[j];
                    if (!m->profile[0]) {
                        snprintf(whybuf, sizeof whybuf, "GPU %u MIG device %u: profile unknown", g->index,
                                 m->index);
                        why = whybuf;
                    } else if (!gs_nvml_mig_whole_gi(m)) {
                        snprintf(whybuf, sizeof whybuf, "GPU %u MIG device %u: unsupported profile %s "
                                 "(its compute instance does not span its GPU instance)", g->index, m->index,
                                 m->profile);
                        why = whybuf;
                    } else if (!first) {
                        first = m->profile;
                    } else if (strcmp(first, m->profile) != 0) {
                        snprintf(whybuf, sizeof whybuf, "more than one MIG device type (%s and %s)", first,
                                 m->profile);
                        why = whybuf;
                    }
                }
            }
        }
        if (why) {
            plan->nothing = true;
            return note(b, "nothing advertised: migStrategy single needs every GPU MIG-enabled with "
                           "identical MIG devices: %s", why);
        }
        for (size_t i = 0; i < inv->n_gpus; i++)
            for (size_t j = 0; !inv->gpus[i].lost && j < inv->gpus[i].n_mig; j++)
                add_item(b, "gpu", inv->gpus[i].mig[j].profile, (int)i, (int)j);
        return 0;
    }
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        if (g->lost)
            continue;
        if (strat == GS_MIG_NONE || g->mig_current != 1) {
            add_item(b, "gpu", "", (int)i, -1);
            continue;
        }
        if (g->n_mig == 0 && note(b, "GPU %u has MIG enabled and no MIG device: nothing advertised for it",
                                  g->index) < 0)
            return -1;
        for (size_t j = 0; j < g->n_mig; j++) {
            const gs_nvml_mig_device *m = &g->mig[j];
            if (!m->profile[0]) {
                if (note(b, "GPU %u MIG device %u (%s) is not advertised: profile unknown", g->index,
                         m->index, m->uuid) < 0)
                    return -1;
                continue;
            }
            if (!gs_nvml_mig_whole_gi(m)) {
                if (note(b, "GPU %u MIG device %u (%s) is not advertised: profile %s has a compute "
                            "instance smaller than its GPU instance", g->index, m->index, m->uuid,
                         m->profile) < 0)
                    return -1;
                continue;
            }
            const char *res = mig_resource(&plan->arena, m->profile);
            if (!res)
                return nomem(b->err);
            add_item(b, res, m->profile, (int)i, (int)j);
        }
    }
    return 0;
}

static const char *base_id(dp_build *b, int gpu, int mig)
{
    const gs_nvml_gpu *g = &b->inv->gpus[gpu];
    if (b->cfg->id_strategy == GS_DP_ID_INDEX)
        return mig < 0 ? gs_arena_printf(&b->plan->arena, "%u", g->index)
                       : gs_arena_printf(&b->plan->arena, "%u:%u", g->index, g->mig[mig].index);
    return gs_arena_strdup(&b->plan->arena, mig < 0 ? g->uuid : g->mig[mig].uuid);
}

static int cmp_res_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Units per GPU of a share resource, or 0 (with a note) when unknown. */
static unsigned share_units(const char *name, const gs_nvml_gpu *g)
{
    if (!strcmp(name, "aliyun.com/gpu-mem")) {
        unsigned long long gib = g->memory_mib / 1024;
        return gib > DP_MAX_UNITS ? DP_MAX_UNITS : (unsigned)gib;
    }
    return 1000; /* alibabacloud.com/gpu-milli */
}

static int fill_resource(dp_build *b, gs_devplugin_resource *r, const char *full, const char *suffix,
                         gs_dp_kind kind, const char *profile)
{
    gs_devplugin_plan *plan = b->plan;
    const gs_devplugin_config *cfg = b->cfg;
    gs_arena *a = &plan->arena;
    r->kind = kind;
    r->profile = gs_arena_strdup(a, profile);
    r->sharing = GS_SHARING_NONE;
    r->replicas = 1;
    r->preferred_available = kind != GS_DP_RES_SHARE;
    r->accounting_only = kind == GS_DP_RES_SHARE;
    const char *name = full;
    if (kind != GS_DP_RES_SHARE && cfg->sharing != GS_SHARING_NONE) {
        for (size_t i = 0; i < cfg->n_replicated; i++) {
            if (strcmp(cfg->replicated[i].name, full) != 0 || cfg->replicated[i].replicas < 2)
                continue;
            if (cfg->sharing == GS_SHARING_MPS && kind == GS_DP_RES_GPU) {
                for (size_t k = 0; k < b->n_items; k++)
                    if (!strcmp(b->items[k].res, suffix) && b->items[k].mig >= 0)
                        return gs_fail(b->err, GS_ERR_INVALID,
                                       "sharing using MPS is not supported for MIG devices "
                                       "(migStrategy single advertises MIG devices as %s)", full);
            }
            r->sharing = cfg->sharing;
            r->replicas = cfg->replicated[i].replicas;
            if (cfg->rename_by_default)
                name = gs_arena_printf(a, "%s.shared", full);
        }
    }
    r->name = gs_arena_strdup(a, name);
    const char *slash = strchr(r->name ? r->name : "", '/');
    r->socket = gs_arena_printf(a, "gpusched-%s.sock", slash ? slash + 1 : "");
    if (!r->name || !r->socket || !r->profile)
        return nomem(b->err);

    /* count, then fill */
    size_t n = 0;
    if (kind == GS_DP_RES_SHARE) {
        for (size_t k = 0; k < b->n_items; k++)
            if (!strcmp(b->items[k].res, "gpu") && b->items[k].mig < 0)
                n += share_units(full, &b->inv->gpus[b->items[k].gpu]);
    } else {
        for (size_t k = 0; k < b->n_items; k++)
            if (!strcmp(b->items[k].res, suffix))
                n += r->replicas;
    }
    r->devices = n ? gs_arena_alloc(a, n * sizeof *r->devices) : NULL;
    if (n && !r->devices)
        return nomem(b->err);
    size_t d = 0;
    for (size_t k = 0; k < b->n_items; k++) {
        const dp_item *it = &b->items[k];
        if (strcmp(it->res, kind == GS_DP_RES_SHARE ? "gpu" : suffix) != 0)
            continue;
        if (kind == GS_DP_RES_SHARE && it->mig >= 0)
            continue;
        const gs_nvml_gpu *g = &b->inv->gpus[it->gpu];
        const char *bid = base_id(b, it->gpu, it->mig);
        const char *uuid = gs_arena_strdup(a, it->mig < 0 ? g->uuid : g->mig[it->mig].uuid);
        if (!bid || !uuid)
            return nomem(b->err);
        unsigned copies = kind == GS_DP_RES_SHARE ? share_units(full, g) : r->replicas;
        if (kind == GS_DP_RES_SHARE && copies == 0 &&
            note(b, "GPU %u is not advertised as %s: its memory is unknown", g->index, full) < 0)
            return -1;
        bool annotated = kind == GS_DP_RES_SHARE || r->replicas > 1;
        for (unsigned c = 0; c < copies; c++) {
            gs_devplugin_device *dev = &r->devices[d++];
            dev->base_id = bid;
            dev->id = annotated ? gs_arena_printf(a, "%s::%u", bid, c) : bid;
            if (!dev->id)
                return nomem(b->err);
            if (strlen(dev->id) > DP_ID_MAX)
                return gs_fail(b->err, GS_ERR_INVALID, "device ID %s is longer than %d characters",
                               dev->id, DP_ID_MAX);
            dev->uuid = uuid;
            dev->gpu = it->gpu;
            dev->gpu_index = (int)g->index;
            dev->mig = it->mig < 0 ? -1 : (int)g->mig[it->mig].index;
            dev->replica = annotated ? (int)c : -1;
            dev->numa_node = g->numa_node;
            dev->healthy = kind != GS_DP_RES_SHARE;
        }
    }
    r->n_devices = d;
    return 0;
}

static void recompute_health(gs_devplugin_plan *plan, size_t *changed)
{
    for (size_t i = 0; i < plan->n_resources; i++) {
        gs_devplugin_resource *r = &plan->resources[i];
        for (size_t j = 0; j < r->n_devices; j++) {
            gs_devplugin_device *d = &r->devices[j];
            const gs_dp_gpu_topo *t = &plan->topo[d->gpu];
            bool ok = t->ok;
            if (d->mig >= 0)
                for (size_t m = 0; m < t->n_mig; m++)
                    if (t->mig[m].index == d->mig)
                        ok = ok && t->mig[m].ok;
            if (r->kind == GS_DP_RES_SHARE)
                ok = ok && plan->injection_ready;
            if (ok != d->healthy) {
                d->healthy = ok;
                if (changed)
                    (*changed)++;
            }
        }
    }
}

int gs_devplugin_plan_build(const gs_nvml_inventory *inv, const gs_devplugin_config *cfg,
                            gs_devplugin_plan *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->arena, 65536);
    gs_devplugin_config defaults;
    if (!cfg) {
        gs_devplugin_config_defaults(&defaults);
        cfg = &defaults;
    }
    dp_build b = {.plan = out, .inv = inv, .cfg = cfg, .err = err};
    gs_arena *a = &out->arena;
    size_t n_items_max = 0;
    for (size_t i = 0; i < inv->n_gpus; i++)
        n_items_max += 1 + inv->gpus[i].n_mig;
    b.items = calloc(n_items_max ? n_items_max : 1, sizeof *b.items);
    out->n_gpus = inv->n_gpus;
    out->topo = inv->n_gpus ? gs_arena_alloc(a, inv->n_gpus * sizeof *out->topo) : NULL;
    if (!b.items || (inv->n_gpus && !out->topo)) {
        nomem(err);
        goto fail;
    }
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        gs_dp_gpu_topo *t = &out->topo[i];
        t->index = (int)g->index;
        t->numa = g->numa_node;
        t->minor = g->minor;
        t->lost = g->lost != 0;
        t->ok = true;
        parse_bus(g->pci_bus_id, &t->domain, &t->bus);
        t->links = gs_arena_alloc(a, inv->n_gpus * sizeof *t->links);
        t->n_mig = g->mig_current == 1 ? g->n_mig : 0;
        t->mig = t->n_mig ? gs_arena_alloc(a, t->n_mig * sizeof *t->mig) : NULL;
        if (!t->links || (t->n_mig && !t->mig)) {
            nomem(err);
            goto fail;
        }
        for (size_t m = 0; m < t->n_mig; m++) {
            t->mig[m].index = (int)g->mig[m].index;
            t->mig[m].gi = g->mig[m].gpu_instance_id;
            t->mig[m].ci = g->mig[m].compute_instance_id;
            t->mig[m].ok = true;
        }
        for (size_t j = 0; j < inv->n_gpus; j++) {
            if (j == i)
                continue;
            int n = 0;
            for (size_t l = 0; l < g->n_nvlink && l < GS_NVML_MAX_NVLINK; l++)
                if (same_bus_id(g->nvlink_peer[l], inv->gpus[j].pci_bus_id))
                    n++;
            t->links[j] = n;
        }
    }
    /* links counted from both ends: a peer that reported fewer keeps the larger count */
    for (size_t i = 0; i < inv->n_gpus; i++)
        for (size_t j = i + 1; j < inv->n_gpus; j++) {
            int m = out->topo[i].links[j] > out->topo[j].links[i] ? out->topo[i].links[j] : out->topo[j].links[i];
            out->topo[i].links[j] = out->topo[j].links[i] = m;
        }

    if (collect(&b) < 0)
        goto fail;

    /* resource names: gpu first, then MIG profiles sorted, then the share resources */
    const char **names = calloc(b.n_items + 1, sizeof *names);
    size_t n_names = 0;
    if (!names) {
        nomem(err);
        goto fail;
    }
    bool have_gpu = false;
    for (size_t k = 0; k < b.n_items; k++) {
        if (!strcmp(b.items[k].res, "gpu")) {
            have_gpu = true;
            continue;
        }
        bool seen = false;
        for (size_t j = 0; j < n_names && !seen; j++)
            seen = !strcmp(names[j], b.items[k].res);
        if (!seen)
            names[n_names++] = b.items[k].res;
    }
    qsort(names, n_names, sizeof *names, cmp_res_name);
    bool share_gpus = false;
    for (size_t k = 0; k < b.n_items; k++)
        share_gpus = share_gpus || (!strcmp(b.items[k].res, "gpu") && b.items[k].mig < 0);
    size_t n_res = (have_gpu ? 1 : 0) + n_names + (share_gpus ? cfg->n_share : 0);
    out->resources = n_res ? gs_arena_alloc(a, n_res * sizeof *out->resources) : NULL;
    if (n_res && !out->resources) {
        free(names);
        nomem(err);
        goto fail;
    }
    int rc = 0;
    if (have_gpu) {
        const char *profile = "";
        if (out->mig_strategy == GS_MIG_SINGLE && b.n_items)
            profile = b.items[0].profile;
        rc = fill_resource(&b, &out->resources[out->n_resources++], "nvidia.com/gpu", "gpu",
                           GS_DP_RES_GPU, profile);
    }
    for (size_t j = 0; j < n_names && rc == 0; j++) {
        const char *profile = "";
        for (size_t k = 0; k < b.n_items; k++)
            if (!strcmp(b.items[k].res, names[j]))
                profile = b.items[k].profile;
        char full[GS_DP_NAME_MAX + 16];
        snprintf(full, sizeof full, "nvidia.com/%s", names[j]);
        rc = fill_resource(&b, &out->resources[out->n_resources++], full, names[j], GS_DP_RES_MIG, profile);
    }
    for (size_t j = 0; share_gpus && j < cfg->n_share && rc == 0; j++)
        rc = fill_resource(&b, &out->resources[out->n_resources++], cfg->share[j], cfg->share[j],
                           GS_DP_RES_SHARE, "");
    free(names);
    if (rc < 0)
        goto fail;
    out->notes = b.n_notes ? gs_arena_alloc(a, b.n_notes * sizeof *out->notes) : NULL;
    if (b.n_notes && !out->notes) {
        nomem(err);
        goto fail;
    }
    if (b.n_notes)
        memcpy(out->notes, b.notes, b.n_notes * sizeof *out->notes);
    out->n_notes = b.n_notes;
    free(b.notes);
    free(b.items);
    return 0;
fail:
    free(b.notes);
    free(b.items);
    gs_devplugin_plan_free(out);
    return -1;
}

void gs_devplugin_plan_free(gs_devplugin_plan *plan)
{
    if (!plan)
        return;
    gs_arena_free(&plan->arena);
    memset(plan, 0, sizeof *plan);
}

size_t gs_devplugin_plan_set_health(gs_devplugin_plan *plan, int gpu, int mig, bool healthy)
{
    size_t changed = 0;
    for (size_t i = 0; i < plan->n_gpus; i++) {
        gs_dp_gpu_topo *t = &plan->topo[i];
        if (t->index != gpu)
            continue;
        if (mig < 0) {
            t->ok = healthy;
            for (size_t m = 0; m < t->n_mig; m++)
                t->mig[m].ok = healthy;
        } else {
            for (size_t m = 0; m < t->n_mig; m++)
                if (t->mig[m].index == mig)
                    t->mig[m].ok = healthy;
        }
    }
    recompute_health(plan, &changed);
    return changed;
}

size_t gs_devplugin_plan_set_injection(gs_devplugin_plan *plan, bool ready)
{
    size_t changed = 0;
    plan->injection_ready = ready;
    recompute_health(plan, &changed);
    return changed;
}

const gs_devplugin_resource *gs_devplugin_plan_resource(const gs_devplugin_plan *plan, const char *name)
{
    for (size_t i = 0; i < plan->n_resources; i++)
        if (!strcmp(plan->resources[i].name, name))
            return &plan->resources[i];
    return NULL;
}

size_t gs_devplugin_plan_capacity(const gs_devplugin_plan *plan, const char *resource, size_t *healthy)
{
    const gs_devplugin_resource *r = gs_devplugin_plan_resource(plan, resource);
    size_t h = 0;
    for (size_t j = 0; r && j < r->n_devices; j++)
        h += r->devices[j].healthy;
    if (healthy)
        *healthy = h;
    return r ? r->n_devices : 0;
}

const gs_devplugin_device *gs_devplugin_find(const gs_devplugin_resource *res, const char *id)
{
    if (!res || !id)
        return NULL;
    for (size_t j = 0; j < res->n_devices; j++)
        if (!strcmp(res->devices[j].id, id))
            return &res->devices[j];
    return NULL;
}

/* ---------------------------------------------------------------- mig-minors */
int gs_devplugin_plan_set_mig_minors(gs_devplugin_plan *plan, const char *file, const char *data, size_t len,
                                     gs_error *err)
{
    if (!file)
        file = "mig-minors";
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += data[i] == '\n';
    gs_dp_mig_minor *tab = gs_arena_alloc(&plan->arena, lines * sizeof *tab);
    if (!tab)
        return nomem(err);
    size_t n = 0;
    int line = 1;
    for (size_t off = 0; off < len; line++) {
        const char *s = data + off;
        const char *nl = memchr(s, '\n', len - off);
        size_t ll = nl ? (size_t)(nl - s) : len - off;
        off += ll + (nl ? 1 : 0);
        if (ll == 0)
            continue;
        char buf[128];
        if (ll >= sizeof buf)
            return gs_error_set(err, GS_ERR_PARSE, file, line, 1, NULL, "line longer than %zu bytes",
                                sizeof buf - 1);
        memcpy(buf, s, ll);
        buf[ll] = 0;
        if (strlen(buf) != ll)
            return gs_error_set(err, GS_ERR_PARSE, file, line, 1, NULL, "NUL byte in the line");
        /* "config 1", "monitor 2": not per-device */
        if (!strncmp(buf, "config ", 7) || !strncmp(buf, "monitor ", 8))
            continue;
        int g, gi, ci = -1, m, used = 0;
        if (sscanf(buf, "gpu%d/gi%d/ci%d/access %d%n", &g, &gi, &ci, &m, &used) == 4 && used == (int)ll) {
        } else if (ci = -1, used = 0,
                   sscanf(buf, "gpu%d/gi%d/access %d%n", &g, &gi, &m, &used) == 3 && used == (int)ll) {
        } else {
            return gs_error_set(err, GS_ERR_PARSE, file, line, 1, NULL,
                                "expected \"gpu<N>/gi<G>/access <minor>\" or \"gpu<N>/gi<G>/ci<C>/access "
                                "<minor>\"");
        }
        if (g < 0 || gi < 0 || m < 0 || (ci < -1))
            return gs_error_set(err, GS_ERR_PARSE, file, line, 1, NULL, "negative number");
        tab[n].gpu_minor = g;
        tab[n].gi = gi;
        tab[n].ci = ci;
        tab[n].minor = m;
        n++;
    }
    plan->minors = tab;
    plan->n_minors = n;
    return 0;
}

static int find_minor(const gs_devplugin_plan *plan, int gpu_minor, int gi, int ci)
{
    for (size_t i = 0; i < plan->n_minors; i++)
        if (plan->minors[i].gpu_minor == gpu_minor && plan->minors[i].gi == gi && plan->minors[i].ci == ci)
            return plan->minors[i].minor;
    return -1;
}

/* ================================================================ GetPreferredAllocation */

static const gs_devplugin_device *lookup(const gs_devplugin_resource *res, const char *id, gs_error *err)
{
    const gs_devplugin_device *d = gs_devplugin_find(res, id);
    if (!d)
        gs_fail(err, GS_ERR_NOTFOUND, "unknown device for '%s': %.80s", res->name, id ? id : "(null)");
    return d;
}

/* A set's topology score, compared lexicographically: connected pairs, links, pairs on one
 * NUMA node, minus the PCI bus distance. */
typedef struct dp_score {
    long v[4];
} dp_score;

static dp_score set_score(const gs_devplugin_plan *plan, const int *gpus, size_t n)
{
    dp_score s = {{0, 0, 0, 0}};
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            const gs_dp_gpu_topo *a = &plan->topo[gpus[i]], *b = &plan->topo[gpus[j]];
            int l = a->links[gpus[j]];
            s.v[0] += l > 0;
            s.v[1] += l;
            s.v[2] += a->numa >= 0 && a->numa == b->numa;
            long dist = 1024;
            if (a->bus >= 0 && b->bus >= 0 && a->domain == b->domain)
                dist = labs((long)a->bus - b->bus);
            s.v[3] -= dist;
        }
    return s;
}

static int score_cmp(dp_score a, dp_score b)
{
    for (int i = 0; i < 4; i++)
        if (a.v[i] != b.v[i])
            return a.v[i] > b.v[i] ? 1 : -1;
    return 0;
}

/* Choose k of cand[0..nc) (device positions in res) maximising the score with the fixed
 * ones; exhaustive over combinations in lexicographic order (the first best wins) when
 * there are at most 20,000, else greedy. chosen: k entries. */
static void choose_gpus(const gs_devplugin_plan *plan, const gs_devplugin_resource *res, const size_t *fixed,
                        size_t nf, const size_t *cand, size_t nc, size_t k, size_t *chosen, int *gbuf)
{
    for (size_t i = 0; i < nf; i++)
        gbuf[i] = res->devices[fixed[i]].gpu;
    double combos = 1;
    for (size_t i = 0; i < k; i++)
        combos = combos * (double)(nc - i) / (double)(i + 1);
    if (k == 0)
        return;
    if (combos <= 20000) {
        size_t idx[64 + 1];
        size_t best[64];
        if (k > 64)
            goto greedy;
        for (size_t i = 0; i < k; i++)
            idx[i] = i;
        bool have = false;
        dp_score bs = {{0, 0, 0, 0}};
        for (;;) {
            for (size_t i = 0; i < k; i++)
                gbuf[nf + i] = res->devices[cand[idx[i]]].gpu;
            dp_score s = set_score(plan, gbuf, nf + k);
            if (!have || score_cmp(s, bs) > 0) {
                bs = s;
                have = true;
                memcpy(best, idx, k * sizeof *idx);
            }
            /* next combination */
            size_t i = k;
            while (i > 0 && idx[i - 1] == nc - k + (i - 1))
                i--;
            if (i == 0)
                break;
            idx[i - 1]++;
            for (size_t j = i; j < k; j++)
                idx[j] = idx[j - 1] + 1;
        }
        for (size_t i = 0; i < k; i++)
            chosen[i] = cand[best[i]];
        return;
    }
greedy:;
    bool *used = calloc(nc, sizeof *used);
    for (size_t step = 0; step < k; step++) {
        size_t bi = (size_t)-1;
        dp_score bs = {{0, 0, 0, 0}};
        for (size_t c = 0; c < nc; c++) {
            if (used && used[c])
                continue;
            gbuf[nf + step] = res->devices[cand[c]].gpu;
            dp_score s = set_score(plan, gbuf, nf + step + 1);
            if (bi == (size_t)-1 || score_cmp(s, bs) > 0) {
                bs = s;
                bi = c;
            }
        }
        if (used)
            used[bi] = true;
        gbuf[nf + step] = res->devices[cand[bi]].gpu;
        chosen[step] = cand[bi];
    }
    free(used);
}

int gs_devplugin_preferred(const gs_devplugin_plan *plan, const gs_devplugin_config *cfg,
                           const gs_devplugin_resource *res, const char *const *available, size_t n_avail,
                           const char *const *must_include, size_t n_must, size_t size, const char **out_ids,
                           gs_error *err)
{
    if (!res)
        return gs_fail(err, GS_ERR_INVALID, "no resource");
    if (size < n_must)
        return gs_fail(err, GS_ERR_INVALID, "allocation size %zu is smaller than the %zu must-include devices",
                       size, n_must);
    size_t nd = res->n_devices;
    /* state per device position: 0 not offered, 1 available, 2 must include (chosen) */
    unsigned char *st = calloc(nd ? nd : 1, 1);
    int *gbuf = calloc(size + n_avail + 1, sizeof *gbuf);
    size_t *cand = calloc(n_avail + 1, sizeof *cand);
    size_t *chosen = calloc(size + 1, sizeof *chosen);
    int rc = -1;
    if (!st || !gbuf || !cand || !chosen) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n_avail; i++) {
        const gs_devplugin_device *d = lookup(res, available[i], err);
        if (!d)
            goto out;
        size_t p = (size_t)(d - res->devices);
        if (st[p]) {
            gs_fail(err, GS_ERR_INVALID, "device %s is offered twice", d->id);
            goto out;
        }
        st[p] = 1;
    }
    size_t nchosen = 0;
    for (size_t i = 0; i < n_must; i++) {
        const gs_devplugin_device *d = lookup(res, must_include[i], err);
        if (!d)
            goto out;
        size_t p = (size_t)(d - res->devices);
        if (st[p] == 2) {
            gs_fail(err, GS_ERR_INVALID, "device %s must be included twice", d->id);
            goto out;
        }
        st[p] = 2;
        chosen[nchosen++] = p;
    }
    size_t nc = 0;
    for (size_t p = 0; p < nd; p++)
        if (st[p] == 1)
            cand[nc++] = p;
    size_t need = size - n_must;
    if (need > nc) {
        gs_fail(err, GS_ERR_INVALID, "allocation size %zu is larger than the %zu devices offered", size,
                nc + n_must);
        goto out;
    }
    if (res->kind == GS_DP_RES_GPU && res->replicas == 1 && res->profile[0] == 0) {
        choose_gpus(plan, res, chosen, nchosen, cand, nc, need, chosen + nchosen, gbuf);
        nchosen += need;
    } else if (res->replicas > 1 || res->kind == GS_DP_RES_SHARE) {
        /* per physical device: used = replicas not offered (or taken here) */
        size_t *used = calloc(nd ? nd : 1, sizeof *used); /* indexed by first position of the device */
        size_t *first = calloc(nd ? nd : 1, sizeof *first);
        if (!used || !first) {
            free(used);
            free(first);
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (size_t p = 0; p < nd; p++) {
            first[p] = (p > 0 && !strcmp(res->devices[p].base_id, res->devices[p - 1].base_id)) ? first[p - 1] : p;
            if (st[p] != 1)
                used[first[p]]++;
        }
        bool packed = cfg && cfg->replica_policy == GS_DP_PACKED;
        for (size_t step = 0; step < need; step++) {
            size_t bp = (size_t)-1;
            for (size_t c = 0; c < nc; c++) {
                size_t p = cand[c];
                if (st[p] != 1)
                    continue;
                if (bp == (size_t)-1) {
                    bp = p;
                    continue;
                }
                size_t u = used[first[p]], bu = used[first[bp]];
                if (res->kind == GS_DP_RES_SHARE ? false : packed ? u > bu : u < bu)
                    bp = p;
            }
            st[bp] = 2;
            used[first[bp]]++;
            chosen[nchosen++] = bp;
        }
        free(used);
        free(first);
    } else {
        for (size_t c = 0; c < need; c++)
            chosen[nchosen++] = cand[c];
    }
    for (size_t i = 0; i < nchosen; i++)
        out_ids[i] = res->devices[chosen[i]].id;
    rc = 0;
out:
    free(st);
    free(gbuf);
    free(cand);
    free(chosen);
    return rc;
}

/* ================================================================ Allocate */

typedef struct dp_out {
    gs_devplugin_alloc *a;
    size_t cap_env, cap_mount, cap_dev, cap_ann, cap_cdi;
    bool oom;
} dp_out;

static void put_env(dp_out *o, const char *k, const char *v)
{
    gs_devplugin_alloc *a = o->a;
    for (size_t i = 0; i < a->n_envs; i++)
        if (!strcmp(a->envs[i].key, k)) {
            a->envs[i].value = gs_arena_strdup(&a->arena, v);
            o->oom |= !a->envs[i].value;
            return;
        }
    if (gs_vec_grow_((void **)&a->envs, &o->cap_env, a->n_envs + 1, sizeof *a->envs) < 0) {
        o->oom = true;
        return;
    }
    a->envs[a->n_envs].key = gs_arena_strdup(&a->arena, k);
    a->envs[a->n_envs].value = gs_arena_strdup(&a->arena, v);
    o->oom |= !a->envs[a->n_envs].key || !a->envs[a->n_envs].value;
    a->n_envs++;
}

static void put_mount(dp_out *o, const char *cpath, const char *hpath, bool ro)
{
    gs_devplugin_alloc *a = o->a;
    if (gs_vec_grow_((void **)&a->mounts, &o->cap_mount, a->n_mounts + 1, sizeof *a->mounts) < 0) {
        o->oom = true;
        return;
    }
    gs_devplugin_mount *m = &a->mounts[a->n_mounts++];
    m->container_path = gs_arena_strdup(&a->arena, cpath);
    m->host_path = gs_arena_strdup(&a->arena, hpath);
    m->read_only = ro;
    o->oom |= !m->container_path || !m->host_path;
}

/* driver root + path, without a doubled slash */
static const char *rooted(gs_arena *ar, const char *root, const char *path)
{
    size_t rl = strlen(root);
    while (rl > 0 && root[rl - 1] == '/')
        rl--;
    return gs_arena_printf(ar, "%.*s%s", (int)rl, root, path);
}

static void put_devspec(dp_out *o, const char *root, const char *path)
{
    gs_devplugin_alloc *a = o->a;
    for (size_t i = 0; i < a->n_devices; i++)
        if (!strcmp(a->devices[i].container_path, path))
            return;
    if (gs_vec_grow_((void **)&a->devices, &o->cap_dev, a->n_devices + 1, sizeof *a->devices) < 0) {
        o->oom = true;
        return;
    }
    gs_devplugin_devspec *d = &a->devices[a->n_devices++];
    d->container_path = gs_arena_strdup(&a->arena, path);
    d->host_path = rooted(&a->arena, root, path);
    d->permissions = "rw";
    o->oom |= !d->container_path || !d->host_path;
}

static void put_ann(dp_out *o, const char *k, const char *v)
{
    gs_devplugin_alloc *a = o->a;
    if (gs_vec_grow_((void **)&a->annotations, &o->cap_ann, a->n_annotations + 1, sizeof *a->annotations) < 0) {
        o->oom = true;
        return;
    }
    a->annotations[a->n_annotations].key = gs_arena_strdup(&a->arena, k);
    a->annotations[a->n_annotations].value = gs_arena_strdup(&a->arena, v);
    o->oom |= !a->annotations[a->n_annotations].key || !a->annotations[a->n_annotations].value;
    a->n_annotations++;
}

static void put_cdi(dp_out *o, const char *name)
{
    gs_devplugin_alloc *a = o->a;
    if (gs_vec_grow_((void **)&a->cdi_devices, &o->cap_cdi, a->n_cdi + 1, sizeof *a->cdi_devices) < 0) {
        o->oom = true;
        return;
    }
    a->cdi_devices[a->n_cdi] = gs_arena_strdup(&a->arena, name);
    o->oom |= !a->cdi_devices[a->n_cdi];
    a->n_cdi++;
}

void gs_devplugin_alloc_free(gs_devplugin_alloc *a)
{
    if (!a)
        return;
    free(a->envs);
    free(a->mounts);
    free(a->devices);
    free(a->annotations);
    free(a->cdi_devices);
    gs_arena_free(&a->arena);
    memset(a, 0, sizeof *a);
}

const char *gs_devplugin_alloc_env(const gs_devplugin_alloc *a, const char *key)
{
    for (size_t i = 0; i < a->n_envs; i++)
        if (!strcmp(a->envs[i].key, key))
            return a->envs[i].value;
    return NULL;
}

static const dp_mig_ids *mig_ids(const gs_devplugin_plan *plan, const gs_devplugin_device *d)
{
    const gs_dp_gpu_topo *t = &plan->topo[d->gpu];
    for (size_t m = 0; m < t->n_mig; m++)
        if (t->mig[m].index == d->mig)
            return &t->mig[m];
    return NULL;
}

int gs_devplugin_allocate(const gs_devplugin_plan *plan, const gs_devplugin_config *cfg,
                          const gs_devplugin_resource *res, const char *const *ids, size_t n,
                          gs_devplugin_alloc *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->arena, 4096);
    gs_devplugin_config defaults;
    if (!cfg) {
        gs_devplugin_config_defaults(&defaults);
        cfg = &defaults;
    }
    if (!res)
        return gs_fail(err, GS_ERR_INVALID, "no resource");
    if (n == 0)
        return gs_fail(err, GS_ERR_INVALID, "invalid allocation request for '%s': no device", res->name);
    const gs_devplugin_device **devs = calloc(n, sizeof *devs);
    const char **uniq = calloc(n, sizeof *uniq);
    dp_out o = {.a = out};
    int rc = -1;
    if (!devs || !uniq) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    size_t nu = 0;
    for (size_t i = 0; i < n; i++) {
        const gs_devplugin_device *d = gs_devplugin_find(res, ids[i]);
        if (!d) {
            gs_fail(err, GS_ERR_NOTFOUND, "invalid allocation request for '%s': unknown device: %.80s",
                    res->name, ids[i] ? ids[i] : "(null)");
            goto out;
        }
        for (size_t j = 0; j < i; j++)
            if (devs[j] == d) {
                gs_fail(err, GS_ERR_INVALID, "invalid allocation request for '%s': device %s listed twice",
                        res->name, d->id);
                goto out;
            }
        if (!d->healthy) {
            gs_fail(err, GS_ERR_INVALID,
                    "invalid allocation request for '%s': device %s is unhealthy%s", res->name, d->id,
                    res->kind == GS_DP_RES_SHARE && !plan->injection_ready
                        ? " (device injection is not ready: the NRI plugin is not registered)"
                        : "");
            goto out;
        }
        devs[i] = d;
        bool seen = false;
        for (size_t j = 0; j < nu && !seen; j++)
            seen = !strcmp(uniq[j], d->base_id);
        if (!seen)
            uniq[nu++] = d->base_id;
    }
    if (res->kind == GS_DP_RES_SHARE) {
        /* accounting only: the NRI plugin injects the devices the extender chose */
        put_env(&o, "NVIDIA_VISIBLE_DEVICES", "void");
        put_ann(&o, GS_INJECT_SHARE_ANNOTATION, res->name); /* tells the NRI plugin (inject.h) */
        rc = o.oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
        goto out;
    }
    if (res->replicas > 1 && cfg->fail_requests_gt_one && n > 1) {
        gs_fail(err, GS_ERR_INVALID,
                "request for '%s: %zu' too large: maximum request size for shared resources is 1", res->name, n);
        goto out;
    }
    gs_strbuf list = {0};
    for (size_t i = 0; i < nu; i++) {
        if (i)
            gs_strbuf_putc(&list, ',');
        gs_strbuf_puts(&list, uniq[i]);
    }
    unsigned ls = cfg->list_strategies;
    if (ls & GS_DP_LIST_ENVVAR)
        put_env(&o, "NVIDIA_VISIBLE_DEVICES", gs_strbuf_cstr(&list));
    if (ls & GS_DP_LIST_VOLUME_MOUNTS) {
        put_env(&o, "NVIDIA_VISIBLE_DEVICES", DP_VOLUME_ROOT);
        for (size_t i = 0; i < nu; i++) {
            const char *c = gs_arena_printf(&out->arena, "%s/%s", DP_VOLUME_ROOT, uniq[i]);
            o.oom |= !c;
            if (c)
                put_mount(&o, c, "/dev/null", false);
        }
    }
    gs_strbuf_free(&list);
    if (ls & (GS_DP_LIST_CDI_ANNOTATIONS | GS_DP_LIST_CDI_CRI)) {
        gs_strbuf names = {0};
        size_t nn = nu + cfg->gds_enabled + cfg->mofed_enabled;
        const char **cdi = gs_arena_alloc(&out->arena, (nn + 1) * sizeof *cdi);
        if (!cdi) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        size_t k = 0;
        for (size_t i = 0; i < nu; i++)
            cdi[k++] = gs_arena_printf(&out->arena, "%s/gpu=%s", DP_CDI_KIND, uniq[i]);
        if (cfg->gds_enabled)
            cdi[k++] = gs_arena_printf(&out->arena, "%s/gds=all", DP_CDI_KIND);
        if (cfg->mofed_enabled)
            cdi[k++] = gs_arena_printf(&out->arena, "%s/mofed=all", DP_CDI_KIND);
        for (size_t i = 0; i < k; i++) {
            o.oom |= !cdi[i];
            if (!cdi[i])
                continue;
            if (ls & GS_DP_LIST_CDI_CRI)
                put_cdi(&o, cdi[i]);
            if (i)
                gs_strbuf_putc(&names, ',');
            gs_strbuf_puts(&names, cdi[i]);
        }
        if (ls & GS_DP_LIST_CDI_ANNOTATIONS) {
            /* one key per resource (kubelet merges the annotations of a container's resources) */
            const char *slash = strchr(res->name, '/');
            const char *key = gs_arena_printf(&out->arena, "%sgpusched-device-plugin_%s",
                                              cfg->cdi_annotation_prefix, slash ? slash + 1 : res->name);
            o.oom |= !key;
            if (key)
                put_ann(&o, key, gs_strbuf_cstr(&names));
        }
        gs_strbuf_free(&names);
    }
    if (cfg->pass_device_specs) {
        static const char *const ctl[] = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                          "/dev/nvidia-modeset"};
        for (size_t i = 0; i < 4; i++)
            put_devspec(&o, cfg->driver_root, ctl[i]);
        for (size_t i = 0; i < n; i++) {
            const gs_devplugin_device *d = devs[i];
            int minor = plan->topo[d->gpu].minor;
            if (minor < 0) {
                gs_fail(err, GS_ERR_INVALID,
                        "cannot pass device specs for %s: the minor number of GPU %d is unknown", d->id,
                        d->gpu_index);
                goto out;
            }
            char p[64];
            snprintf(p, sizeof p, "/dev/nvidia%d", minor);
            put_devspec(&o, cfg->driver_root, p);
            if (d->mig < 0)
                continue;
            const dp_mig_ids *mi = mig_ids(plan, d);
            int gim = mi ? find_minor(plan, minor, (int)mi->gi, -1) : -1;
            int cim = mi ? find_minor(plan, minor, (int)mi->gi, (int)mi->ci) : -1;
            if (gim < 0 || cim < 0) {
                gs_fail(err, GS_ERR_INVALID,
                        "cannot pass device specs for %s: no nvidia-caps minor for gpu%d/gi%d%s (read "
                        "/proc/driver/nvidia-caps/mig-minors)",
                        d->id, minor, mi ? (int)mi->gi : -1, gim < 0 ? "/access" : "/ci.../access");
                goto out;
            }
            snprintf(p, sizeof p, "/dev/nvidia-caps/nvidia-cap%d", gim);
            put_devspec(&o, cfg->driver_root, p);
            snprintf(p, sizeof p, "/dev/nvidia-caps/nvidia-cap%d", cim);
            put_devspec(&o, cfg->driver_root, p);
        }
    }
    if (cfg->gds_enabled)
        put_env(&o, "NVIDIA_GDS", "enabled");
    if (cfg->mofed_enabled)
        put_env(&o, "NVIDIA_MOFED", "enabled");
    if (cfg->gdrcopy_enabled)
        put_env(&o, "NVIDIA_GDRCOPY", "enabled");
    if (res->sharing == GS_SHARING_MPS) {
        const char *pipe = gs_arena_printf(&out->arena, "/mps/%s/pipe", res->name);
        const char *hpipe = gs_arena_printf(&out->arena, "%s/%s/pipe", cfg->mps_root, res->name);
        const char *hshm = gs_arena_printf(&out->arena, "%s/shm", cfg->mps_root);
        if (!pipe || !hpipe || !hshm) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto out;
        }
        put_env(&o, "CUDA_MPS_PIPE_DIRECTORY", pipe);
        put_mount(&o, pipe, hpipe, false);
        put_mount(&o, "/dev/shm", hshm, false);
    }
    rc = o.oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
out:
    free(devs);
    free(uniq);
    if (rc < 0) {
        gs_error keep;
        if (err)
            keep = *err;
        gs_devplugin_alloc_free(out);
        if (err)
            *err = keep;
    }
    return rc;
}
