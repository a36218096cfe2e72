/*
 * request.c - translate a pod's GPU ask, in whichever convention its author used, into
 * the canonical gs_gpu_request (WHOLE / SHARE / MIG + allowed models). The conventions and
 * their mapping are documented in docs/gpu-requests.md; this file is the one place that
 * implements them.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gpu_int.h"

#define NANOS_PER_UNIT ((__int128)1000000000)

/* Resource and annotation keys, one place. */
#define R_GPU "nvidia.com/gpu"
#define R_GPU_SHARED "nvidia.com/gpu.shared"
#define R_HAMI_MEM "nvidia.com/gpumem"
#define R_HAMI_PCT "nvidia.com/gpumem-percentage"
#define R_HAMI_CORES "nvidia.com/gpucores"
#define R_GPUSHARE_MEM "aliyun.com/gpu-mem"
#define R_OPENB_MILLI "alibabacloud.com/gpu-milli"
#define R_OPENB_COUNT "alibabacloud.com/gpu-count"
#define R_HAMI_PRIORITY "nvidia.com/priority"
#define R_VOLCANO_NUMBER "volcano.sh/gpu-number"
#define R_VOLCANO_MEM "volcano.sh/gpu-memory"
#define R_VGPU_NUMBER "volcano.sh/vgpu-number"
#define R_VGPU_MEM "volcano.sh/vgpu-memory"
#define R_VGPU_CORES "volcano.sh/vgpu-cores"
#define A_HAMI_USE_TYPE "nvidia.com/use-gputype"
#define A_HAMI_NOUSE_TYPE "nvidia.com/nouse-gputype"
#define A_HAMI_USE_UUID "nvidia.com/use-gpuuuid"
#define A_HAMI_NOUSE_UUID "nvidia.com/nouse-gpuuuid"
#define A_HAMI_VGPU_MODE "nvidia.com/vgpu-mode"
#define A_HAMI_GPU_POLICY "hami.io/gpu-scheduler-policy"
#define A_OPENB_MILLI_P "alibabacloud.com/gpu-milli"
#define A_OPENB_COUNT_P "alibabacloud.com/gpu-count"
#define A_OPENB_MODEL_P "alibabacloud.com/gpu-card-model"
#define A_KAI_FRACTION "gpu-fraction"
#define A_KAI_MEMORY "gpu-memory"
#define A_KAI_NUM_DEVICES "gpu-fraction-num-devices"
#define A_OPENB_MILLI "gpu-milli"
#define A_OPENB_COUNT "gpu-count"
#define A_OPENB_MODEL "gpu-card-model"
#define A_GS_COUNT "gpusched.io/gpu-count"
#define A_GS_MILLI "gpusched.io/gpu-milli"
#define A_GS_MEMORY "gpusched.io/gpu-memory"
#define A_GS_MODEL "gpusched.io/gpu-model"

#define MIG_PREFIX "nvidia.com/mig-"

/* ---------------------------------------------------------------- errors */
static int req_fail(gs_error *err, gs_code code, const gs_pod *pod, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int req_fail(gs_error *err, gs_code code, const gs_pod *pod, const char *fmt, ...)
{
    if (!err)
        return -1;
    char path[GS_ERR_PATH_MAX];
    const char *ns = pod->meta.namespace_ ? pod->meta.namespace_ : "";
    const char *name = pod->meta.name ? pod->meta.name : "";
    snprintf(path, sizeof path, "Pod %s%s%s", ns, *ns ? "/" : "", name);
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(err, code, pod->meta.src.file, (int)pod->meta.src.line, (int)pod->meta.src.col,
                  path, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---------------------------------------------------------------- effective requests */
static __int128 res_nanos(const gs_reslist *l, const char *name)
{
    const gs_quantity *q = gs_reslist_get(l, name);
    return q ? q->nanos : 0;
}

/*
 * The pod's effective request for one resource (k8s-semantics 3.1): regular containers
 * and sidecars (restartable init containers) are summed; each ordinary init container
 * runs alone next to the sidecars declared before it; the pod needs the larger of the
 * two, plus spec.overhead.
 */
static __int128 effective_nanos(const gs_pod *pod, const char *name)
{
    __int128 running = 0;
    for (uint32_t i = 0; i < pod->ncontainers; i++)
        running += res_nanos(&pod->containers[i].requests, name);
    __int128 init_peak = 0, sidecars = 0;
    for (uint32_t i = 0; i < pod->ninit; i++) {
        const gs_container *c = &pod->init_containers[i];
        __int128 v = res_nanos(&c->requests, name);
        __int128 cand;
        if (c->sidecar) {
            sidecars += v;
            cand = sidecars;
        } else {
            cand = v + sidecars;
        }
        if (cand > init_peak)
            init_peak = cand;
    }
    running += sidecars;
    __int128 r = running > init_peak ? running : init_peak;
    return r + res_nanos(&pod->overhead, name);
}

/* An effective request as a non-negative whole number no larger than `max`. */
static int whole_value(const gs_pod *pod, const char *name, __int128 nanos, int64_t max,
                       int64_t *out, gs_error *err)
{
    if (nanos < 0)
        return req_fail(err, GS_ERR_INVALID, pod, "%s must be greater than or equal to 0", name);
    if (nanos % NANOS_PER_UNIT)
        return req_fail(err, GS_ERR_INVALID, pod, "%s must be a whole number", name);
    __int128 v = nanos / NANOS_PER_UNIT;
    if (v > max)
        return req_fail(err, GS_ERR_LIMIT, pod, "%s: %lld is too large (at most %lld)", name,
                        (long long)(v > INT64_MAX ? INT64_MAX : (int64_t)v), (long long)max);
    *out = (int64_t)v;
    return 0;
}

/* ---------------------------------------------------------------- annotation values */
static int ann_int(const gs_pod *pod, const char *key, const char *val, int64_t lo, int64_t hi,
                   int64_t *out, gs_error *err)
{
    int64_t v = 0;
    size_t n = strnlen(val, 32);
    if (n == 0 || n >= 32 || gs_parse_i64(val, n, &v))
        return req_fail(err, GS_ERR_INVALID, pod,
                        "annotation %s: \"%.40s\" is not an integer", key, val);
    if (v < lo || v > hi)
        return req_fail(err, GS_ERR_INVALID, pod,
                        "annotation %s: %lld is out of range [%lld, %lld]", key, (long long)v,
                        (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

/* Parse a plain decimal ("0.5", ".25", "1", "1.0") into billionths; digits beyond the
 * ninth decimal are dropped. Returns -1 for anything else. */
static int parse_decimal_nanos(const char *s, int64_t *out)
{
    size_t n = strnlen(s, 40);
    if (n == 0 || n >= 40)
        return -1;
    int64_t ip = 0, fp = 0;
    size_t i = 0, digits = 0, fdigits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        if (ip > 1000000)
            return -1;
        ip = ip * 10 + (s[i++] - '0');
        digits++;
    }
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (fdigits < 9) {
                fp = fp * 10 + (s[i] - '0');
                fdigits++;
            }
            i++;
            digits++;
        }
    }
    if (i != n || digits == 0)
        return -1;
    while (fdigits < 9) {
        fp *= 10;
        fdigits++;
    }
    *out = ip * 1000000000 + fp;
    return 0;
}

/* ---------------------------------------------------------------- models */
/*
 * Models come from "A|B" annotation values and must be plain NUL-terminated strings in the
 * request. A value holding exactly one model is used in place (it lives in the snapshot);
 * the parts of a list are copied once into a process-wide table of model names
 * (append-only, mutex-protected, bounded), so equal names share one pointer and live as
 * long as the library. Parts are trimmed of blanks; empty parts are dropped, duplicates
 * kept once.
 */
#define MODEL_NAME_MAX 128
#define MODEL_TABLE_MAX 4096

static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;
static gs_intern model_table; /* zero-initialised = empty */

static const char *model_intern(const char *s, size_t n)
{
    const char *out = NULL;
    pthread_mutex_lock(&model_lock);
    int32_t id = gs_intern_find(&model_table, s, n);
    if (id < 0 && model_table.n < MODEL_TABLE_MAX)
        id = gs_intern_id(&model_table, s, n);
    if (id >= 0)
        out = gs_intern_str(&model_table, id);
    pthread_mutex_unlock(&model_lock);
    return out;
}

size_t gs_gpu_model_len(const char *model)
{
    size_t n = 0;
    while (model[n] && model[n] != '|')
        n++;
    return n;
}

static int add_models(const gs_pod *pod, const char *key, const char *val, gs_gpu_request *out,
                      gs_error *err)
{
    const char *p = val;
    while (*p) {
        size_t n = gs_gpu_model_len(p);
        const char *b = p, *e = p + n;
        p = *e ? e + 1 : e;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        size_t len = (size_t)(e - b);
        if (!len)
            continue;
        if (len >= MODEL_NAME_MAX)
            return req_fail(err, GS_ERR_LIMIT, pod,
                            "annotation %s: a GPU model name longer than %d characters", key,
                            MODEL_NAME_MAX - 1);
        bool dup = false;
        for (uint8_t k = 0; k < out->nmodels && !dup; k++)
            dup = strlen(out->models[k]) == len && memcmp(out->models[k], b, len) == 0;
        if (dup)
            continue;
        if (out->nmodels >= GS_GPU_MAX_MODELS)
            return req_fail(err, GS_ERR_LIMIT, pod, "annotation %s: more than %d GPU models",
                            key, GS_GPU_MAX_MODELS);
        const char *m = (b == val && !*e) ? val : model_intern(b, len);
        if (!m)
            return req_fail(err, GS_ERR_LIMIT, pod,
                            "annotation %s: too many distinct GPU model names (more than %d)",
                            key, MODEL_TABLE_MAX);
        out->models[out->nmodels++] = m;
    }
    return 0;
}

/* ---------------------------------------------------------------- conventions */
static const char *conv_name(gs_gpu_conv c)
{
    switch (c) {
    case GS_CONV_NVIDIA: return "nvidia.com/gpu (device plugin)";
    case GS_CONV_GPUSCHED: return "gpusched.io annotations";
    case GS_CONV_HAMI: return "HAMi (nvidia.com/gpumem, gpumem-percentage, gpucores)";
    case GS_CONV_KAI: return "KAI (gpu-fraction / gpu-memory annotations)";
    case GS_CONV_GPUSHARE: return "gpushare (aliyun.com/gpu-mem)";
    case GS_CONV_OPENB: return "open-gpu-share (gpu-milli / gpu-count)";
    case GS_CONV_VOLCANO: return "Volcano GPU share (volcano.sh/gpu-number, gpu-memory)";
    case GS_CONV_VOLCANO_VGPU: return "Volcano vGPU (volcano.sh/vgpu-number, vgpu-memory, vgpu-cores)";
    case GS_CONV_NONE: break;
    }
    return "none";
}

const char *gs_gpu_hami_key(unsigned bit)
{
    switch (bit) {
    case GS_HAMI_USE_TYPE: return A_HAMI_USE_TYPE;
    case GS_HAMI_NOUSE_TYPE: return A_HAMI_NOUSE_TYPE;
    case GS_HAMI_USE_UUID: return A_HAMI_USE_UUID;
    case GS_HAMI_NOUSE_UUID: return A_HAMI_NOUSE_UUID;
    case GS_HAMI_VGPU_MODE: return A_HAMI_VGPU_MODE;
    case GS_HAMI_GPU_POLICY: return A_HAMI_GPU_POLICY;
    }
    return "";
}

const char *gs_gpu_request_hami(const gs_gpu_request *r, unsigned bit)
{
    if (!r || !(r->hami & bit) || !r->hami_ann)
        return NULL;
    return gs_labels_get(r->hami_ann, gs_gpu_hami_key(bit));
}

const char *gs_gpu_family_name(gs_gpu_family f)
{
    switch (f) {
    case GS_FAM_NVIDIA: return "nvidia.com/gpu (NVIDIA device plugin)";
    case GS_FAM_NVIDIA_SHARED: return "nvidia.com/gpu.shared (NVIDIA device plugin, renamed replicas)";
    case GS_FAM_NVIDIA_MIG: return "nvidia.com/mig-<profile> (NVIDIA device plugin, MIG mixed)";
    case GS_FAM_HAMI: return "HAMi vGPU (hami.io/node-nvidia-register)";
    case GS_FAM_GPUSHARE: return "gpushare (aliyun.com/gpu-mem)";
    case GS_FAM_OPENB: return "open-gpu-share (alibabacloud.com/gpu-milli, gpu-count)";
    case GS_FAM_VOLCANO: return "Volcano GPU share (volcano.sh/gpu-number, gpu-memory)";
    case GS_FAM_VOLCANO_VGPU: return "Volcano vGPU (volcano.sh/vgpu-number, vgpu-memory)";
    case GS_FAM__COUNT: break;
    }
    return "unknown";
}

#define FAM(f) ((uint16_t)(1u << (f)))

/* Scans the containers' request lists once: a negative amount of any GPU resource is an
 * error (the API server rejects it too), and at most one MIG profile (by resource name)
 * may be asked for. An effective request is positive iff some container asks for a
 * positive amount, as amounts are non-negative after this check. */
static int scan_resources(const gs_pod *pod, const char **mig_name, gs_error *err)
{
    *mig_name = NULL;
    for (uint32_t pass = 0; pass < 2; pass++) {
        const gs_container *cs = pass ? pod->init_containers : pod->containers;
        uint32_t nc = pass ? pod->ninit : pod->ncontainers;
        for (uint32_t i = 0; i < nc; i++) {
            const gs_reslist *l = &cs[i].requests;
            for (uint32_t k = 0; k < l->n; k++) {
                const char *nm = l->items[k].name;
                if (l->items[k].q.nanos < 0 && gs_gpu_is_device_resource(nm))
                    return req_fail(err, GS_ERR_INVALID, pod,
                                    "%s must be greater than or equal to 0", nm);
                if (strncmp(nm, MIG_PREFIX, sizeof MIG_PREFIX - 1) != 0)
                    continue;
                if (l->items[k].q.nanos == 0)
                    continue;
                if (!*mig_name)
                    *mig_name = nm;
                else if (strcmp(*mig_name, nm) != 0)
                    return req_fail(err, GS_ERR_INVALID, pod,
                                    "several MIG profiles in one pod (%s and %s): a pod may "
                                    "ask for one MIG profile only", *mig_name, nm);
            }
        }
    }
    return 0;
}

static int set_share_count(const gs_pod *pod, gs_gpu_request *out, int64_t count, gs_error *err)
{
    if (count > UINT16_MAX)
        return req_fail(err, GS_ERR_LIMIT, pod, "GPU count %lld is too large", (long long)count);
    out->count = (uint16_t)count;
    return 0;
}

int gs_gpu_request_from_pod(const gs_pod *pod, gs_gpu_request *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!pod)
        return 0;
    const gs_labels *ann = &pod->meta.annotations;

    /* -------- signals of every convention */
    __int128 gpu = effective_nanos(pod, R_GPU);
    __int128 gpu_shared = effective_nanos(pod, R_GPU_SHARED);
    __int128 hami_mem = effective_nanos(pod, R_HAMI_MEM);
    __int128 hami_pct = effective_nanos(pod, R_HAMI_PCT);
    __int128 hami_cores = effective_nanos(pod, R_HAMI_CORES);
    __int128 gpushare_mem = effective_nanos(pod, R_GPUSHARE_MEM);
    __int128 openb_milli_r = effective_nanos(pod, R_OPENB_MILLI);
    __int128 openb_count_r = effective_nanos(pod, R_OPENB_COUNT);
    __int128 vol_number = effective_nanos(pod, R_VOLCANO_NUMBER);
    __int128 vol_mem = effective_nanos(pod, R_VOLCANO_MEM);
    __int128 vgpu_number = effective_nanos(pod, R_VGPU_NUMBER);
    __int128 vgpu_mem = effective_nanos(pod, R_VGPU_MEM);
    __int128 vgpu_cores = effective_nanos(pod, R_VGPU_CORES);
    const char *mig_name = NULL;
    if (scan_resources(pod, &mig_name, err))
        return -1;

    const char *kai_fraction = gs_labels_get(ann, A_KAI_FRACTION);
    const char *kai_memory = gs_labels_get(ann, A_KAI_MEMORY);
    const char *kai_ndev = gs_labels_get(ann, A_KAI_NUM_DEVICES);
    /* open-gpu-share: the unprefixed keys of the trace converter, or the
     * alibabacloud.com/ ones the FGD simulator writes (unprefixed first) */
    const char *ob_milli_key = A_OPENB_MILLI, *ob_count_key = A_OPENB_COUNT,
               *ob_model_key = A_OPENB_MODEL;
    const char *ob_milli = gs_labels_get(ann, A_OPENB_MILLI);
    if (!ob_milli && (ob_milli = gs_labels_get(ann, A_OPENB_MILLI_P)))
        ob_milli_key = A_OPENB_MILLI_P;
    const char *ob_count = gs_labels_get(ann, A_OPENB_COUNT);
    if (!ob_count && (ob_count = gs_labels_get(ann, A_OPENB_COUNT_P)))
        ob_count_key = A_OPENB_COUNT_P;
    const char *ob_model = gs_labels_get(ann, A_OPENB_MODEL);
    if (!ob_model && (ob_model = gs_labels_get(ann, A_OPENB_MODEL_P)))
        ob_model_key = A_OPENB_MODEL_P;
    const char *gs_count = gs_labels_get(ann, A_GS_COUNT);
    const char *gs_milli = gs_labels_get(ann, A_GS_MILLI);
    const char *gs_memory = gs_labels_get(ann, A_GS_MEMORY);
    const char *gs_model = gs_labels_get(ann, A_GS_MODEL);

    bool has_nvidia = gpu != 0 || gpu_shared != 0 || mig_name;
    bool has_hami = hami_mem != 0 || hami_pct != 0 || hami_cores != 0;
    bool has_kai = kai_fraction || kai_memory;
    bool has_gpushare = gpushare_mem != 0;
    bool has_openb = ob_milli || ob_count || openb_milli_r != 0 || openb_count_r != 0;
    bool has_gpusched = gs_count || gs_milli || gs_memory;
    bool has_volcano = vol_number != 0 || vol_mem != 0;
    bool has_vgpu = vgpu_number != 0 || vgpu_mem != 0 || vgpu_cores != 0;

    /* nvidia.com/gpu together with HAMi keys is HAMi itself */
    gs_gpu_conv convs[8];
    uint32_t nconv = 0;
    if (has_hami)
        convs[nconv++] = GS_CONV_HAMI;
    else if (has_nvidia)
        convs[nconv++] = GS_CONV_NVIDIA;
    if (has_kai)
        convs[nconv++] = GS_CONV_KAI;
    if (has_gpushare)
        convs[nconv++] = GS_CONV_GPUSHARE;
    if (has_openb)
        convs[nconv++] = GS_CONV_OPENB;
    if (has_gpusched)
        convs[nconv++] = GS_CONV_GPUSCHED;
    if (has_volcano)
        convs[nconv++] = GS_CONV_VOLCANO;
    if (has_vgpu)
        convs[nconv++] = GS_CONV_VOLCANO_VGPU;
    if (nconv > 1)
        return req_fail(err, GS_ERR_INVALID, pod,
                        "pod uses two GPU request conventions at once: %s and %s; use one",
                        conv_name(convs[0]), conv_name(convs[1]));

    /* -------- models (combine with any convention) */
    if (gs_model && add_models(pod, A_GS_MODEL, gs_model, out, err))
        return -1;
    if (ob_model && add_models(pod, ob_model_key, ob_model, out, err))
        return -1;

    if (nconv == 0)
        return 0;
    out->conv = convs[0];
    int64_t v = 0;

    /* HAMi device selection: read for every convention that can land on a HAMi or Volcano
     * vGPU node (plain nvidia.com/gpu pods are HAMi pods there too) */
    if ((out->conv == GS_CONV_NVIDIA || out->conv == GS_CONV_HAMI ||
         out->conv == GS_CONV_VOLCANO_VGPU) && ann->n) {
        for (unsigned bit = 1; bit <= GS_HAMI_GPU_POLICY; bit <<= 1)
            if (gs_labels_get(ann, gs_gpu_hami_key(bit)))
                out->hami |= (uint8_t)bit;
        if (out->hami)
            out->hami_ann = ann;
    }

    switch (out->conv) {
    case GS_CONV_NVIDIA:
        if (mig_name && (gpu != 0 || gpu_shared != 0))
            return req_fail(err, GS_ERR_INVALID, pod,
                            "%s and %s in one pod: ask for whole GPUs or MIG instances, not both",
                            gpu != 0 ? R_GPU : R_GPU_SHARED, mig_name);
        if (gpu != 0 && gpu_shared != 0)
            return req_fail(err, GS_ERR_INVALID, pod, "%s and %s in one pod", R_GPU,
                            R_GPU_SHARED);
        if (mig_name) {
            if (!gs_mig_parse_resource(mig_name, out->mig_profile, sizeof out->mig_profile))
                return req_fail(err, GS_ERR_INVALID, pod,
                                "%s is not a MIG resource name (nvidia.com/mig-<G>g.<GB>gb)",
                                mig_name);
            if (whole_value(pod, mig_name, effective_nanos(pod, mig_name), UINT16_MAX, &v, err))
                return -1;
            out->kind = GS_GPU_MIG;
            out->count = (uint16_t)v;
            out->resource = mig_name;
            out->families = FAM(GS_FAM_NVIDIA_MIG);
            return 0;
        }
        out->resource = gpu != 0 ? R_GPU : R_GPU_SHARED;
        /* nvidia.com/gpu is advertised by the device plugin and, as vGPU slots, by HAMi
         * (whose webhook makes such a pod a HAMi pod with the whole memory) */
        out->families = gpu != 0 ? (uint16_t)(FAM(GS_FAM_NVIDIA) | FAM(GS_FAM_HAMI))
                                 : FAM(GS_FAM_NVIDIA_SHARED);
        if (whole_value(pod, out->resource, gpu != 0 ? gpu : gpu_shared, UINT16_MAX, &v, err))
            return -1;
        out->kind = GS_GPU_WHOLE;
        out->count = (uint16_t)v;
        return 0;

    case GS_CONV_HAMI: {
        if (mig_name)
            return req_fail(err, GS_ERR_INVALID, pod,
                            "HAMi memory/core limits cannot be combined with %s", mig_name);
        int64_t mem = 0, pct = 0, cores = 0, count = 1;
        if (gpu_shared != 0)
            return req_fail(err, GS_ERR_INVALID, pod, "HAMi keys with %s", R_GPU_SHARED);
        if (gpu != 0 && whole_value(pod, R_GPU, gpu, UINT16_MAX, &count, err))
            return -1;
        if (whole_value(pod, R_HAMI_MEM, hami_mem, UINT32_MAX, &mem, err) ||
            whole_value(pod, R_HAMI_PCT, hami_pct, INT64_MAX, &pct, err) ||
            whole_value(pod, R_HAMI_CORES, hami_cores, INT64_MAX, &cores, err))
            return -1;
        if (pct > 100)
            return req_fail(err, GS_ERR_INVALID, pod, "%s must be 0..100, got %lld", R_HAMI_PCT,
                            (long long)pct);
        if (cores > 100)
            return req_fail(err, GS_ERR_INVALID, pod, "%s must be 0..100, got %lld",
                            R_HAMI_CORES, (long long)cores);
        out->kind = GS_GPU_SHARE;
        out->count = (uint16_t)count;
        out->milli = (uint16_t)(cores * 10);
        /* HAMi: gpumem wins over the percentage; neither means 100% of the memory
         * (its default `defaultMemory: 0`) */
        if (mem > 0)
            out->mem_mib = (uint32_t)mem;
        else
            out->mem_pct = (uint8_t)(pct > 0 ? pct : 100);
        /* the HAMi key it carries: nodes without HAMi's register fail on it */
        out->resource = hami_mem != 0 ? R_HAMI_MEM : hami_pct != 0 ? R_HAMI_PCT : R_HAMI_CORES;
        out->scheduler_expected = "hami-scheduler";
        out->families = FAM(GS_FAM_HAMI);
        return 0;
    }

    case GS_CONV_KAI: {
        int64_t count = 1;
        if (kai_ndev && ann_int(pod, A_KAI_NUM_DEVICES, kai_ndev, 1, UINT16_MAX, &count, err))
            return -1;
        if (kai_fraction && kai_memory)
            return req_fail(err, GS_ERR_INVALID, pod,
                            "annotations %s and %s are mutually exclusive", A_KAI_FRACTION,
                            A_KAI_MEMORY);
        out->kind = GS_GPU_SHARE;
        out->count = (uint16_t)count;
        if (kai_fraction) {
            int64_t nanos;
            if (parse_decimal_nanos(kai_fraction, &nanos))
                return req_fail(err, GS_ERR_INVALID, pod,
                                "annotation %s: \"%.40s\" is not a decimal fraction", A_KAI_FRACTION,
                                kai_fraction);
            if (nanos <= 0 || nanos > 1000000000)
                return req_fail(err, GS_ERR_INVALID, pod,
                                "annotation %s: %.40s must be in (0, 1]%s", A_KAI_FRACTION,
                                kai_fraction,
                                count > 1 ? " (use gpu-fraction-num-devices for several GPUs)"
                                          : "");
            int64_t milli = (nanos + 500000) / 1000000; /* round half up */
            out->milli = (uint16_t)(milli < 1 ? 1 : milli);
        } else {
            int64_t mem = 0;
            if (ann_int(pod, A_KAI_MEMORY, kai_memory, 1, UINT32_MAX, &mem, err))
                return -1;
            out->mem_mib = (uint32_t)mem;
        }
        out->scheduler_expected = "kai-scheduler";
        /* KAI shares whole device-plugin GPUs (its reservation pods ask nvidia.com/gpu) */
        out->families = FAM(GS_FAM_NVIDIA);
        return 0;
    }

    case GS_CONV_GPUSHARE:
        /* gpushare's default unit is GiB */
        if (whole_value(pod, R_GPUSHARE_MEM, gpushare_mem, UINT32_MAX / 1024, &v, err))
            return -1;
        out->kind = GS_GPU_SHARE;
        out->count = 1;
        out->mem_mib = (uint32_t)(v * 1024);
        out->gpushare_units = (uint32_t)v;
        out->resource = R_GPUSHARE_MEM;
        out->families = FAM(GS_FAM_GPUSHARE);
        return 0;

    case GS_CONV_OPENB: {
        /* annotations first (what the trace converter writes), else the resources */
        int64_t milli = -1, count = -1;
        out->families = FAM(GS_FAM_OPENB);
        if (ob_milli) {
            /* clamp as the trace converter does: above 1000 -> 1000, below 0 -> 0 */
            if (ann_int(pod, ob_milli_key, ob_milli, INT32_MIN, INT32_MAX, &milli, err))
                return -1;
        } else if (openb_milli_r != 0) {
            if (whole_value(pod, R_OPENB_MILLI, openb_milli_r, INT32_MAX, &milli, err))
                return -1;
            out->resource = R_OPENB_MILLI;
        }
        if (ob_count) {
            if (ann_int(pod, ob_count_key, ob_count, 0, UINT16_MAX, &count, err))
                return -1;
        } else if (openb_count_r != 0) {
            if (whole_value(pod, R_OPENB_COUNT, openb_count_r, UINT16_MAX, &count, err))
                return -1;
            if (!out->resource)
                out->resource = R_OPENB_COUNT;
        }
        if (milli > 1000)
            milli = 1000;
        if (milli < 0 && ob_milli)
            milli = 0;
        if (milli < 0) /* only a count given: whole GPUs */
            milli = 1000;
        if (count < 0) /* only a share given: one GPU */
            count = 1;
        if (milli == 0 || count == 0) {
            out->families = 0;
            out->resource = NULL;
            return 0; /* the simulator treats gpu-milli 0 as a CPU-only pod */
        }
        if (!out->resource) /* annotations only: the node resource they are accounted on */
            out->resource = milli == 1000 ? R_OPENB_COUNT : R_OPENB_MILLI;
        out->kind = milli == 1000 ? GS_GPU_WHOLE : GS_GPU_SHARE;
        out->count = (uint16_t)count;
        if (out->kind == GS_GPU_SHARE)
            out->milli = (uint16_t)milli;
        return 0;
    }

    case GS_CONV_GPUSCHED: {
        int64_t count = 1, milli = 0, mem = 0;
        if (gs_count && ann_int(pod, A_GS_COUNT, gs_count, 0, UINT16_MAX, &count, err))
            return -1;
        if (gs_milli && ann_int(pod, A_GS_MILLI, gs_milli, 0, 1000, &milli, err))
            return -1;
        if (gs_memory && ann_int(pod, A_GS_MEMORY, gs_memory, 0, UINT32_MAX, &mem, err))
            return -1;
        if (count == 0)
            return 0;
        if (gs_milli && milli == 0 && mem == 0)
            return 0; /* an explicit zero share asks for no GPU */
        /* gpusched.io annotations describe the need, not how it is advertised: they are
         * accounted against the physical devices of any inventory */
        out->families = GS_FAMS_ANY;
        if (mem == 0 && (!gs_milli || milli == 1000)) {
            out->kind = GS_GPU_WHOLE;
        } else {
            out->kind = GS_GPU_SHARE;
            out->milli = (uint16_t)milli;
            out->mem_mib = (uint32_t)mem;
        }
        return set_share_count(pod, out, count, err);
    }

    case GS_CONV_VOLCANO: {
        /* Volcano GPU share: gpu-number whole GPUs, gpu-memory MiB of one GPU */
        int64_t num = 0, mem = 0;
        if (whole_value(pod, R_VOLCANO_NUMBER, vol_number, UINT16_MAX, &num, err) ||
            whole_value(pod, R_VOLCANO_MEM, vol_mem, UINT32_MAX, &mem, err))
            return -1;
        out->families = FAM(GS_FAM_VOLCANO);
        if (mem > 0) {
            out->kind = GS_GPU_SHARE;
            out->count = (uint16_t)(num > 0 ? num : 1);
            out->mem_mib = (uint32_t)mem;
            out->resource = R_VOLCANO_MEM;
        } else {
            out->kind = GS_GPU_WHOLE;
            out->count = (uint16_t)num;
            out->resource = R_VOLCANO_NUMBER;
        }
        return 0;
    }

    case GS_CONV_VOLCANO_VGPU: {
        /* volcano-vgpu (HAMi-core): vgpu-number devices (1 when only memory/cores are
         * given), on each vgpu-memory MiB and vgpu-cores percent; no memory means the
         * whole memory, as HAMi */
        int64_t num = 1, mem = 0, cores = 0;
        if ((vgpu_number != 0 &&
             whole_value(pod, R_VGPU_NUMBER, vgpu_number, UINT16_MAX, &num, err)) ||
            whole_value(pod, R_VGPU_MEM, vgpu_mem, UINT32_MAX, &mem, err) ||
            whole_value(pod, R_VGPU_CORES, vgpu_cores, INT64_MAX, &cores, err))
            return -1;
        if (cores > 100)
            return req_fail(err, GS_ERR_INVALID, pod, "%s must be 0..100, got %lld",
                            R_VGPU_CORES, (long long)cores);
        out->families = FAM(GS_FAM_VOLCANO_VGPU);
        out->kind = GS_GPU_SHARE;
        out->count = (uint16_t)num;
        out->milli = (uint16_t)(cores * 10);
        if (mem > 0)
            out->mem_mib = (uint32_t)mem;
        else
            out->mem_pct = 100;
        out->resource = vgpu_number != 0 ? R_VGPU_NUMBER : vgpu_mem != 0 ? R_VGPU_MEM
                                                                        : R_VGPU_CORES;
        return 0;
    }

    case GS_CONV_NONE:
        break;
    }
    return 0;
}

/* ---------------------------------------------------------------- classification */
bool gs_gpu_is_device_resource(const char *name)
{
    if (!name)
        return false;
    if (strcmp(name, R_GPU) == 0 || strcmp(name, R_GPU_SHARED) == 0 ||
        strcmp(name, R_HAMI_CORES) == 0 || strcmp(name, R_GPUSHARE_MEM) == 0 ||
        strcmp(name, "aliyun.com/gpu-count") == 0 || strcmp(name, R_HAMI_PRIORITY) == 0)
        return true;
    if (strncmp(name, "volcano.sh/", 11) == 0 &&
        (strcmp(name + 11, "gpu-number") == 0 || strcmp(name + 11, "gpu-memory") == 0 ||
         strcmp(name + 11, "vgpu-number") == 0 || strcmp(name + 11, "vgpu-memory") == 0 ||
         strcmp(name + 11, "vgpu-cores") == 0))
        return true;
    if (strncmp(name, MIG_PREFIX, sizeof MIG_PREFIX - 1) == 0)
        return true;
    if (strncmp(name, R_HAMI_MEM, sizeof R_HAMI_MEM - 1) == 0) /* gpumem, gpumem-percentage */
        return true;
    if (strncmp(name, "alibabacloud.com/gpu-", 21) == 0)
        return true;
    if (strncmp(name, "gpusched.io/", 12) == 0)
        return true;
    return false;
}

/* ---------------------------------------------------------------- describe */
static void put(char *buf, size_t cap, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t cap, size_t *o, const char *fmt, ...)
{
    if (*o >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *o, cap - *o, fmt, ap);
    va_end(ap);
    if (n > 0)
        *o = (*o + (size_t)n < cap) ? *o + (size_t)n : cap - 1;
}

/* 500 -> "0.5", 250 -> "0.25", 1000 -> "1" */
static void put_fraction(char *buf, size_t cap, size_t *o, unsigned milli)
{
    if (milli >= 1000) {
        put(buf, cap, o, "%u", milli / 1000);
        milli %= 1000;
        if (!milli)
            return;
        put(buf, cap, o, ".");
    } else {
        put(buf, cap, o, "0.");
    }
    char d[4];
    snprintf(d, sizeof d, "%03u", milli);
    int e = 2;
    while (e > 0 && d[e] == '0')
        d[e--] = '\0';
    put(buf, cap, o, "%s", d);
}

void gs_gpu_request_describe(const gs_gpu_request *r, char *buf, size_t cap)
{
    if (!buf || !cap)
        return;
    buf[0] = '\0';
    size_t o = 0;
    switch (r->kind) {
    case GS_GPU_NONE:
        put(buf, cap, &o, "no GPU");
        break;
    case GS_GPU_WHOLE:
        put(buf, cap, &o, "%u GPU%s", r->count, r->count == 1 ? "" : "s");
        break;
    case GS_GPU_MIG:
        put(buf, cap, &o, "%u MIG %s", r->count, r->mig_profile);
        break;
    case GS_GPU_SHARE: {
        if (r->count != 1)
            put(buf, cap, &o, "%ux ", r->count);
        if (r->milli) {
            put_fraction(buf, cap, &o, r->milli);
            put(buf, cap, &o, " GPU");
        } else {
            put(buf, cap, &o, "GPU share");
        }
        if (r->mem_mib && r->mem_pct)
            put(buf, cap, &o, " (%u MiB, %u%% memory)", r->mem_mib, r->mem_pct);
        else if (r->mem_mib)
            put(buf, cap, &o, " (%u MiB)", r->mem_mib);
        else if (r->mem_pct)
            put(buf, cap, &o, " (%u%% memory)", r->mem_pct);
        break;
    }
    }
    if (r->kind != GS_GPU_NONE && r->nmodels) {
        put(buf, cap, &o, " on ");
        for (uint8_t i = 0; i < r->nmodels; i++)
            put(buf, cap, &o, "%s%s", i ? "|" : "", r->models[i]);
    }
}
