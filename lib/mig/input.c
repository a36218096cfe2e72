/*
 * input.c - the input of `gpusched mig plan` (docs/cli/mig.md): a MigPlan document with
 * the inference services and, optionally, the GPU inventory; a separate inventory as YAML
 * (kind MigInventory) or CSV (the spot2026 trace's node table). Also the memory model of
 * a service (gs_mig_service_demand, docs/mig-planner.md "Memory demand").
 *
 * Every value is checked where it is read and errors carry file:line:col and the object
 * path ("services[2].kvCache.layers"). All strings and arrays live in the input's arena.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mig_int.h"
#include "util/csv_int.h"

#define API_VERSION "gpusched.io/v1alpha1"
#define NAME_MAX_LEN 253

/* ---------------------------------------------------------------- dtypes and demand */
static const struct {
    const char *name;
    gs_mig_dtype t;
} dtype_names[] = {
    {"fp32", GS_MIG_DT_FP32}, {"float32", GS_MIG_DT_FP32}, {"fp16", GS_MIG_DT_FP16},
    {"float16", GS_MIG_DT_FP16}, {"half", GS_MIG_DT_FP16}, {"bf16", GS_MIG_DT_BF16},
    {"bfloat16", GS_MIG_DT_BF16}, {"fp8", GS_MIG_DT_FP8}, {"int8", GS_MIG_DT_INT8},
    {"int4", GS_MIG_DT_INT4},
};

double gs_mig_dtype_bytes(gs_mig_dtype t)
{
    switch (t) {
    case GS_MIG_DT_FP32:
        return 4.0;
    case GS_MIG_DT_FP16:
    case GS_MIG_DT_BF16:
        return 2.0;
    case GS_MIG_DT_FP8:
    case GS_MIG_DT_INT8:
        return 1.0;
    case GS_MIG_DT_INT4:
        return 0.5;
    default:
        return 0.0;
    }
}

const char *gs_mig_dtype_name(gs_mig_dtype t)
{
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (dtype_names[i].t == t)
            return dtype_names[i].name;
    return "unset";
}

void gs_mig_service_demand(gs_mig_service *s)
{
    const double gib = 1073741824.0;
    if (s->from_shape) {
        double wb = s->parameters * gs_mig_dtype_bytes(s->dtype);
        double kvb = 2.0 * s->kv_layers * s->kv_heads * s->head_dim * (double)s->sequence_length *
                     s->batch_size * gs_mig_dtype_bytes(s->kv_dtype);
        s->weights_gib = wb / gib;
        s->kv_gib = kvb / gib;
        s->extra_gib = s->overhead_gib + s->activation_fraction * (s->weights_gib + s->kv_gib);
        s->total_gib = s->weights_gib + s->kv_gib + s->extra_gib;
    } else {
        s->weights_gib = s->kv_gib = s->extra_gib = 0.0;
        s->total_gib = s->memory_gib;
    }
    s->need_gib = s->total_gib * (1.0 + s->headroom);
}

/* ---------------------------------------------------------------- helpers */
typedef struct rd {
    gs_mig_plan_input *in;
    const char *file;
    gs_error *err;
    gs_intern names; /* duplicate detection */
} rd;

static int nomem(rd *r) { return gs_fail(r->err, GS_ERR_NOMEM, "out of memory"); }

static int get_dtype(rd *r, const gs_yn *n, const char *path, gs_mig_dtype *out)
{
    const char *s;
    if (gs_mig__y_str(r->err, r->file, n, path, &s) != 0)
        return -1;
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++) {
        if (strcmp(s, dtype_names[i].name) == 0) {
            *out = dtype_names[i].t;
            return 0;
        }
    }
    return gs_mig__y_fail(r->err, r->file, n, GS_ERR_INVALID, path,
                          "unknown dtype \"%.20s\" (expected fp32, fp16, bf16, fp8, int8 or int4)",
                          s);
}

/* 7e9, 7000000000, "7B", "1.5b", "350M", "1.2T" */
static int get_parameters(rd *r, const gs_yn *n, const char *path, double *out)
{
    double v;
    if (n->type == GS_YN_SCALAR && !n->null && n->len > 0) {
        double mult = 1.0;
        size_t len = n->len;
        char last = n->u.text[len - 1];
        switch (last) {
        case 'k':
        case 'K':
            mult = 1e3;
            break;
        case 'm':
        case 'M':
            mult = 1e6;
            break;
        case 'b':
        case 'B':
        case 'g':
        case 'G':
            mult = 1e9;
            break;
        case 't':
        case 'T':
            mult = 1e12;
            break;
        default:
            break;
        }
        if (mult != 1.0)
            len--;
        if (len && gs_mig__parse_number(n->u.text, len, &v) == 0) {
            v *= mult;
            if (v >= 1.0 && v <= 1e15) {
                *out = v;
                return 0;
            }
            return gs_mig__y_fail(r->err, r->file, n, GS_ERR_INVALID, path,
                                  "parameters out of range (1 to 1e15)");
        }
    }
    return gs_mig__y_fail(r->err, r->file, n, GS_ERR_INVALID, path,
                          "expected a parameter count like 7e9 or \"7B\"");
}

static int get_u32(rd *r, const gs_yn *map, const char *key, const char *path, int64_t min,
                   int64_t max, bool required, uint32_t def, uint32_t *out)
{
    const gs_yn *v = gs_mig__y_get(map, key);
    char p[GS_ERR_PATH_MAX];
    snprintf(p, sizeof p, "%.200s.%.40s", path, key);
    if (!v || v->null) {
        if (required)
            return gs_mig__y_fail(r->err, r->file, map, GS_ERR_INVALID, p,
                                  "missing required field %s", key);
        *out = def;
        return 0;
    }
    int64_t x;
    if (gs_mig__y_int(r->err, r->file, v, p, min, max, &x) != 0)
        return -1;
    *out = (uint32_t)x;
    return 0;
}

static int get_num(rd *r, const gs_yn *map, const char *key, const char *path, double min,
                   double max, double def, double *out)
{
    const gs_yn *v = gs_mig__y_get(map, key);
    char p[GS_ERR_PATH_MAX];
    snprintf(p, sizeof p, "%.200s.%.40s", path, key);
    if (!v || v->null) {
        *out = def;
        return 0;
    }
    return gs_mig__y_num(r->err, r->file, v, p, min, max, out);
}

/* A unique, non-empty name. kind: "service" / "node". */
static int get_name(rd *r, const gs_yn *map, const char *path, const char *kind,
                    const char **out)
{
    const gs_yn *v = gs_mig__y_get(map, "name");
    char p[GS_ERR_PATH_MAX];
    snprintf(p, sizeof p, "%.200s.name", path);
    if (!v)
        return gs_mig__y_fail(r->err, r->file, map, GS_ERR_INVALID, p, "missing required field name");
    const char *s;
    if (gs_mig__y_str(r->err, r->file, v, p, &s) != 0)
        return -1;
    if (!*s || strlen(s) > NAME_MAX_LEN)
        return gs_mig__y_fail(r->err, r->file, v, GS_ERR_INVALID, p,
                              "a %s name must have 1 to %d characters", kind, NAME_MAX_LEN);
    *out = s;
    return 0;
}

/* Record a name; fails when it was seen before. */
static int unique_name(rd *r, const char *kind, const char *name, const gs_yn *at,
                       const char *path)
{
    char key[NAME_MAX_LEN + 16];
    int k = snprintf(key, sizeof key, "%s/%s", kind, name);
    uint32_t before = r->names.n;
    int32_t id = gs_intern_id(&r->names, key, (size_t)k);
    if (id < 0)
        return nomem(r);
    if (r->names.n == before)
        return gs_mig__y_fail(r->err, r->file, at, GS_ERR_INVALID, path, "duplicate %s name \"%s\"",
                              kind, name);
    return 0;
}

/* ---------------------------------------------------------------- services */
static const char *const service_keys[] = {
    "name", "replicas", "headroom", "memoryGiB", "computeSlices", "parameters", "dtype",
    "batchSize", "sequenceLength", "kvCache", "overheadGiB", "activationFraction", NULL};
static const char *const kv_keys[] = {"layers", "kvHeads", "headDim", "dtype", NULL};

static int parse_service(rd *r, const gs_yn *map, const char *path, gs_mig_service *s)
{
    memset(s, 0, sizeof *s);
    if (map->type != GS_YN_MAP)
        return gs_mig__y_fail(r->err, r->file, map, GS_ERR_INVALID, path,
                              "a service must be a mapping");
    s->line = map->line;
    s->col = map->col;
    if (gs_mig__y_known_keys(r->err, r->file, map, path, service_keys) != 0 ||
        get_name(r, map, path, "service", &s->name) != 0 ||
        unique_name(r, "service", s->name, gs_mig__y_get(map, "name"), path) != 0 ||
        get_u32(r, map, "replicas", path, 0, GS_MIG_MAX_REPLICAS, false, 1, &s->replicas) != 0 ||
        get_num(r, map, "headroom", path, 0.0, 10.0, 0.1, &s->headroom) != 0)
        return -1;
    uint32_t cs;
    if (get_u32(r, map, "computeSlices", path, 1, 8, false, 0, &cs) != 0)
        return -1;
    s->compute_slices = (uint8_t)cs;

    const gs_yn *mem = gs_mig__y_get(map, "memoryGiB");
    const gs_yn *par = gs_mig__y_get(map, "parameters");
    char p[GS_ERR_PATH_MAX];
    if (mem && par)
        return gs_mig__y_fail(r->err, r->file, par, GS_ERR_INVALID, path,
                              "give either memoryGiB or a model shape (parameters, ...), not both");
    if (mem) {
        static const char *const shape_only[] = {"dtype", "batchSize", "sequenceLength", "kvCache",
                                                 "overheadGiB", "activationFraction", NULL};
        for (int i = 0; shape_only[i]; i++) {
            const gs_yn *v = gs_mig__y_get(map, shape_only[i]);
            if (v)
                return gs_mig__y_fail(r->err, r->file, v, GS_ERR_INVALID, path,
                                      "%s needs a model shape (parameters); with memoryGiB the "
                                      "memory is given directly", shape_only[i]);
        }
        snprintf(p, sizeof p, "%.200s.memoryGiB", path);
        if (gs_mig__y_num(r->err, r->file, mem, p, 0.001, 65536.0, &s->memory_gib) != 0)
            return -1;
        gs_mig_service_demand(s);
        return 0;
    }
    if (!par)
        return gs_mig__y_fail(r->err, r->file, map, GS_ERR_INVALID, path,
                              "a service needs memoryGiB or a model shape (parameters, dtype, "
                              "batchSize, sequenceLength, kvCache)");
    s->from_shape = true;
    snprintf(p, sizeof p, "%.200s.parameters", path);
    if (get_parameters(r, par, p, &s->parameters) != 0)
        return -1;
    s->dtype = GS_MIG_DT_FP16;
    const gs_yn *dt = gs_mig__y_get(map, "dtype");
    snprintf(p, sizeof p, "%.200s.dtype", path);
    if (dt && get_dtype(r, dt, p, &s->dtype) != 0)
        return -1;
    if (get_u32(r, map, "batchSize", path, 1, 1000000, false, 1, &s->batch_size) != 0 ||
        get_num(r, map, "overheadGiB", path, 0.0, 1024.0, 1.0, &s->overhead_gib) != 0 ||
        get_num(r, map, "activationFraction", path, 0.0, 10.0, 0.05, &s->activation_fraction) != 0)
        return -1;
    const gs_yn *kv = gs_mig__y_get(map, "kvCache");
    if (kv && !kv->null) {
        char kp[GS_ERR_PATH_MAX];
        snprintf(kp, sizeof kp, "%.200s.kvCache", path);
        if (kv->type != GS_YN_MAP)
            return gs_mig__y_fail(r->err, r->file, kv, GS_ERR_INVALID, kp,
                                  "kvCache must be a mapping {layers, kvHeads, headDim, dtype}");
        if (gs_mig__y_known_keys(r->err, r->file, kv, kp, kv_keys) != 0 ||
            get_u32(r, kv, "layers", kp, 1, 100000, true, 0, &s->kv_layers) != 0 ||
            get_u32(r, kv, "kvHeads", kp, 1, 100000, true, 0, &s->kv_heads) != 0 ||
            get_u32(r, kv, "headDim", kp, 1, 100000, true, 0, &s->head_dim) != 0 ||
            get_u32(r, map, "sequenceLength", path, 1, 100000000, true, 0, &s->sequence_length) != 0)
            return -1;
        s->kv_dtype = s->dtype == GS_MIG_DT_FP32 ? GS_MIG_DT_FP32 : GS_MIG_DT_FP16;
        const gs_yn *kd = gs_mig__y_get(kv, "dtype");
        snprintf(p, sizeof p, "%.200s.dtype", kp);
        if (kd && get_dtype(r, kd, p, &s->kv_dtype) != 0)
            return -1;
    } else if (get_u32(r, map, "sequenceLength", path, 1, 100000000, false, 0,
                       &s->sequence_length) != 0) {
        return -1;
    }
    gs_mig_service_demand(s);
    if (!(s->need_gib < 1e7))
        return gs_mig__y_fail(r->err, r->file, map, GS_ERR_INVALID, path,
                              "memory demand is absurdly large (%.3g GiB)", s->need_gib);
    return 0;
}

/* ---------------------------------------------------------------- nodes */
static const char *const node_keys[] = {"name", "product", "gpus", "count", "currentConfig", NULL};

/* Room for `more` nodes in the node array (grown in the arena, doubling). */
static int reserve_nodes(rd *r, uint32_t more, uint32_t *cap)
{
    gs_mig_plan_input *in = r->in;
    if ((uint64_t)in->nnodes + more > GS_MIG_MAX_NODES)
        return gs_error_set(r->err, GS_ERR_LIMIT, r->file, 0, 0, NULL, "more than %u nodes",
                            GS_MIG_MAX_NODES);
    if (in->nnodes + more <= *cap)
        return 0;
    uint32_t nc = *cap ? *cap : 64;
    while (nc < in->nnodes + more)
        nc *= 2;
    gs_mig_node *v = gs_arena_alloc(&in->arena, sizeof *v * nc);
    if (!v)
        return nomem(r);
    if (in->nnodes)
        memcpy(v, in->nodes, sizeof *v * in->nnodes);
    in->nodes = v;
    *cap = nc;
    return 0;
}

static int add_gpus(rd *r, const gs_mig_node *n, uint32_t copies)
{
    gs_mig_plan_input *in = r->in;
    uint64_t g = (uint64_t)n->ngpus * copies;
    if (n->model) {
        if (in->ngpus + g > GS_MIG_MAX_GPUS)
            return gs_error_set(r->err, GS_ERR_LIMIT, r->file, n->line, n->col, NULL,
                                "more than %u MIG-capable GPUs", GS_MIG_MAX_GPUS);
        in->ngpus += (uint32_t)g;
    } else {
        in->nodes_skipped += copies;
        in->gpus_skipped += (uint32_t)(g > UINT32_MAX - in->gpus_skipped ? 0 : g);
    }
    return 0;
}

static int parse_node(rd *r, const gs_yn *map, const char *path, uint32_t *cap)
{
    gs_mig_plan_input *in = r->in;
    if (map->type != GS_YN_MAP)
        return gs_mig__y_fail(r->err, r->file, map, GS_ERR_INVALID, path, "a node must be a mapping");
    gs_mig_node n;
    memset(&n, 0, sizeof n);
    n.line = map->line;
    n.col = map->col;
    uint32_t gpus = 0, count = 0;
    char p[GS_ERR_PATH_MAX];
    if (gs_mig__y_known_keys(r->err, r->file, map, path, node_keys) != 0 ||
        get_name(r, map, path, "node", &n.name) != 0 ||
        get_u32(r, map, "gpus", path, 1, GS_MIG_MAX_GPUS_PER_NODE, true, 0, &gpus) != 0 ||
        get_u32(r, map, "count", path, 1, GS_MIG_MAX_NODES, false, 1, &count) != 0)
        return -1;
    n.ngpus = (uint16_t)gpus;
    const gs_yn *pv = gs_mig__y_get(map, "product");
    snprintf(p, sizeof p, "%.200s.product", path);
    if (!pv)
        return gs_mig__y_fail(r->err, r->file, map, GS_ERR_INVALID, p,
                              "missing required field product (the nvidia.com/gpu.product value)");
    if (gs_mig__y_str(r->err, r->file, pv, p, &n.product) != 0)
        return -1;
    n.model = gs_mig_model_find(n.product);
    const gs_yn *cur = gs_mig__y_get(map, "currentConfig");
    snprintf(p, sizeof p, "%.200s.currentConfig", path);
    if (cur && !cur->null && n.model) {
        n.current = gs_arena_alloc(&in->arena, sizeof *n.current * n.ngpus);
        if (!n.current)
            return nomem(r);
        if (cur->type == GS_YN_SCALAR) {
            const char *name;
            if (gs_mig__y_str(r->err, r->file, cur, p, &name) != 0)
                return -1;
            gs_mig_layout l;
            if (!gs_mig_builtin_layout(n.model, name, &l))
                return gs_mig__y_fail(r->err, r->file, cur, GS_ERR_INVALID, p,
                                      "\"%.60s\" is not a built-in config of %s (all-disabled, "
                                      "all-enabled, all-balanced, all-<profile>); give the "
                                      "layout as mig-parted entries instead",
                                      name, n.model->name);
            for (uint16_t g = 0; g < n.ngpus; g++)
                n.current[g] = l;
            n.current_name = name;
        } else if (gs_mig__parse_entries_for_node(&in->arena, r->file, cur, p, n.model, n.ngpus,
                                                  n.current, r->err) != 0) {
            return -1;
        }
    }
    if (reserve_nodes(r, count, cap) != 0 || add_gpus(r, &n, count) != 0)
        return -1;
    for (uint32_t i = 0; i < count; i++) {
        gs_mig_node *dst = &in->nodes[in->nnodes++];
        *dst = n;
        if (count > 1) {
            dst->name = gs_arena_printf(&in->arena, "%s-%u", n.name, i);
            if (!dst->name)
                return nomem(r);
        }
        if (unique_name(r, "node", dst->name, gs_mig__y_get(map, "name"), path) != 0)
            return -1;
    }
    return 0;
}

static int parse_nodes(rd *r, const gs_yn *nodes, const char *path)
{
    if (nodes->type != GS_YN_SEQ)
        return gs_mig__y_fail(r->err, r->file, nodes, GS_ERR_INVALID, path,
                              "nodes must be a list");
    uint32_t cap = 0, i = 0;
    for (const gs_yn *it = nodes->u.first; it; it = it->next, i++) {
        char p[GS_ERR_PATH_MAX];
        snprintf(p, sizeof p, "%.200s[%u]", path, i);
        if (parse_node(r, it, p, &cap) != 0)
            return -1;
    }
    return 0;
}

static int parse_inventory_map(rd *r, const gs_yn *inv, const char *path)
{
    static const char *const keys[] = {"nodes", NULL};
    if (inv->type != GS_YN_MAP)
        return gs_mig__y_fail(r->err, r->file, inv, GS_ERR_INVALID, path,
                              "inventory must be a mapping with nodes");
    if (gs_mig__y_known_keys(r->err, r->file, inv, path, keys) != 0)
        return -1;
    const gs_yn *nodes = gs_mig__y_get(inv, "nodes");
    if (!nodes || nodes->null)
        return 0;
    char p[GS_ERR_PATH_MAX];
    snprintf(p, sizeof p, "%.200s.nodes", path);
    return parse_nodes(r, nodes, p);
}

static int check_header(rd *r, const gs_yn *root, const char *kind, const char *const *keys)
{
    if (root->type != GS_YN_MAP)
        return gs_mig__y_fail(r->err, r->file, root, GS_ERR_INVALID, NULL,
                              "expected a mapping with apiVersion: " API_VERSION " and kind: %s", kind);
    const gs_yn *av = gs_mig__y_get(root, "apiVersion"), *k = gs_mig__y_get(root, "kind");
    const char *s;
    if (!av)
        return gs_mig__y_fail(r->err, r->file, root, GS_ERR_INVALID, "apiVersion",
                              "missing apiVersion (expected " API_VERSION ")");
    if (gs_mig__y_str(r->err, r->file, av, "apiVersion", &s) != 0)
        return -1;
    if (strcmp(s, API_VERSION) != 0)
        return gs_mig__y_fail(r->err, r->file, av, GS_ERR_INVALID, "apiVersion",
                              "unknown apiVersion \"%.60s\" (expected " API_VERSION ")", s);
    if (!k)
        return gs_mig__y_fail(r->err, r->file, root, GS_ERR_INVALID, "kind",
                              "missing kind (expected %s)", kind);
    if (gs_mig__y_str(r->err, r->file, k, "kind", &s) != 0)
        return -1;
    if (strcmp(s, kind) != 0)
        return gs_mig__y_fail(r->err, r->file, k, GS_ERR_INVALID, "kind",
                              "unexpected kind \"%.60s\" (expected %s)", s, kind);
    return gs_mig__y_known_keys(r->err, r->file, root, NULL, keys);
}

/* ---------------------------------------------------------------- documents */
void gs_mig_plan_input_init(gs_mig_plan_input *in)
{
    memset(in, 0, sizeof *in);
    gs_arena_init(&in->arena, 0);
}

void gs_mig_plan_input_free(gs_mig_plan_input *in)
{
    if (!in)
        return;
    gs_arena_free(&in->arena);
    memset(in, 0, sizeof *in);
}

static int rd_begin(rd *r, gs_mig_plan_input *in, const char *file, gs_error *err)
{
    memset(r, 0, sizeof *r);
    r->in = in;
    r->err = err;
    r->file = gs_arena_strdup(&in->arena, file ? file : "-");
    gs_intern_init(&r->names);
    if (!r->file)
        return nomem(r);
    return 0;
}

/* Seed the duplicate table with the nodes already present (none after a reset). */
static int reset_nodes(gs_mig_plan_input *in)
{
    in->nodes = NULL;
    in->nnodes = 0;
    in->ngpus = in->nodes_skipped = in->gpus_skipped = 0;
    return 0;
}

int gs_mig_plan_input_parse(gs_mig_plan_input *in, const char *file, const char *data,
                            size_t len, gs_error *err)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "services", "inventory",
                                      NULL};
    rd r;
    if (rd_begin(&r, in, file, err) != 0)
        return -1;
    int rc = -1;
    gs_yn *root;
    if (!in->file)
        in->file = r.file;
    if (gs_mig__yaml_parse(&in->arena, r.file, data, len, &root, err) != 0)
        goto out;
    if (!root) {
        gs_error_set(err, GS_ERR_INVALID, r.file, 0, 0, NULL, "empty input: expected a MigPlan");
        goto out;
    }
    if (check_header(&r, root, "MigPlan", top) != 0)
        goto out;
    const gs_yn *svcs = gs_mig__y_get(root, "services");
    if (!svcs || svcs->type != GS_YN_SEQ || svcs->len == 0) {
        gs_mig__y_fail(err, r.file, svcs ? svcs : root, GS_ERR_INVALID, "services",
                       "services must be a non-empty list");
        goto out;
    }
    if (svcs->len > GS_MIG_MAX_SERVICES) {
        gs_mig__y_fail(err, r.file, svcs, GS_ERR_LIMIT, "services", "more than %d services",
                       GS_MIG_MAX_SERVICES);
        goto out;
    }
    in->services = gs_arena_alloc(&in->arena, sizeof *in->services * svcs->len);
    if (!in->services) {
        nomem(&r);
        goto out;
    }
    in->nservices = 0;
    uint32_t i = 0;
    for (const gs_yn *it = svcs->u.first; it; it = it->next, i++) {
        char p[GS_ERR_PATH_MAX];
        snprintf(p, sizeof p, "services[%u]", i);
        if (parse_service(&r, it, p, &in->services[in->nservices]) != 0)
            goto out;
        in->nservices++;
    }
    const gs_yn *inv = gs_mig__y_get(root, "inventory");
    reset_nodes(in);
    if (inv && !inv->null && parse_inventory_map(&r, inv, "inventory") != 0)
        goto out;
    rc = 0;
out:
    gs_intern_free(&r.names);
    return rc;
}

/* ---------------------------------------------------------------- CSV inventories */
/* Records from the library's one RFC 4180 splitter (lib/util/csv.c); the header names the
 * model, GPU count and (optional) node name columns. */
static int find_col(const char **f, int nf, const char *const *names)
{
    for (int i = 0; i < nf; i++)
        for (int k = 0; names[k]; k++)
            if (strcmp(f[i], names[k]) == 0)
                return i;
    return -1;
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static int parse_csv(rd *r, const char *data, size_t len)
{
    static const char *const model_cols[] = {"gpu_model", "product", "model", NULL};
    static const char *const count_cols[] = {"gpu_capacity_num", "gpus", "gpu_count", NULL};
    static const char *const name_cols[] = {"node_name", "name", "node", NULL};
    enum { MAXF = 32, MAX_FIELD = 4096 };
    const char *f[MAXF];
    int cm = -1, cc = -1, cn = -1, nf = 0;
    uint32_t cap = 0;
    int rc = -1;
    gs_csv c;
    gs_csv_init(&c, r->file, data, len, MAXF, MAX_FIELD, r->err);
    for (;;) {
        bool eof;
        if (gs_csv_next(&c, &eof) != 0)
            goto out;
        if (eof)
            break;
        nf = (int)c.nfields;
        for (int k = 0; k < nf; k++)
            f[k] = gs_csv_text(&c, (uint32_t)k);
        int line = (int)c.fields[0].line;
        if (cm < 0 && cc < 0) {
            cm = find_col(f, nf, model_cols);
            cc = find_col(f, nf, count_cols);
            cn = find_col(f, nf, name_cols);
            if (cm < 0 || cc < 0) {
                gs_error_set(r->err, GS_ERR_INVALID, r->file, line, 1, NULL,
                             "CSV header needs a model column (gpu_model or product) and a "
                             "GPU count column (gpu_capacity_num or gpus)");
                goto out;
            }
            continue;
        }
        if (cm >= nf || cc >= nf || (cn >= 0 && cn >= nf)) {
            gs_error_set(r->err, GS_ERR_INVALID, r->file, line, 1, NULL,
                         "CSV line has %d fields, fewer than the header", nf);
            goto out;
        }
        int64_t g;
        if (gs_parse_i64(f[cc], strlen(f[cc]), &g) != 0 || g < 0 || g > GS_MIG_MAX_GPUS_PER_NODE) {
            gs_error_set(r->err, GS_ERR_INVALID, r->file, line, (int)c.fields[cc].col, NULL,
                         "GPU count \"%.20s\" is not an integer from 0 to %d", f[cc],
                         GS_MIG_MAX_GPUS_PER_NODE);
            goto out;
        }
        if (g == 0)
            continue;
        gs_mig_node nd;
        memset(&nd, 0, sizeof nd);
        nd.line = line;
        nd.col = 1;
        nd.ngpus = (uint16_t)g;
        nd.product = gs_arena_strdup(&r->in->arena, f[cm]);
        if (cn >= 0 && f[cn][0])
            nd.name = all_digits(f[cn]) ? gs_arena_printf(&r->in->arena, "node-%s", f[cn])
                                        : gs_arena_strdup(&r->in->arena, f[cn]);
        else
            nd.name = gs_arena_printf(&r->in->arena, "node-line%d", line);
        if (!nd.product || !nd.name) {
            nomem(r);
            goto out;
        }
        nd.model = gs_mig_model_find(nd.product);
        if (reserve_nodes(r, 1, &cap) != 0 || add_gpus(r, &nd, 1) != 0)
            goto out;
        r->in->nodes[r->in->nnodes++] = nd;
        char key[NAME_MAX_LEN + 16];
        int k = snprintf(key, sizeof key, "node/%.253s", nd.name);
        uint32_t before = r->names.n;
        if (gs_intern_id(&r->names, key, (size_t)k) < 0) {
            nomem(r);
            goto out;
        }
        if (r->names.n == before) {
            gs_error_set(r->err, GS_ERR_INVALID, r->file, line, (int)c.fields[cn >= 0 ? cn : 0].col,
                         NULL, "duplicate node name \"%.60s\"", nd.name);
            goto out;
        }
    }
    if (cm < 0) {
        gs_error_set(r->err, GS_ERR_INVALID, r->file, 0, 0, NULL, "empty CSV inventory");
        goto out;
    }
    rc = 0;
out:
    gs_csv_free(&c);
    return rc;
}

static bool looks_like_csv(const char *data, size_t len)
{
    size_t i = 0;
    if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3))
        i = 3;
    size_t e = i;
    while (e < len && data[e] != '\n')
        e++;
    bool comma = false;
    for (size_t k = i; k < e; k++) {
        if (data[k] == ':' || data[k] == '{' || data[k] == '[' || data[k] == '#')
            return false;
        if (data[k] == ',')
            comma = true;
    }
    return comma;
}

int gs_mig_inventory_parse(gs_mig_plan_input *in, const char *file, const char *data,
                           size_t len, gs_error *err)
{
    rd r;
    if (rd_begin(&r, in, file, err) != 0)
        return -1;
    reset_nodes(in);
    int rc = -1;
    if (looks_like_csv(data, len)) {
        rc = parse_csv(&r, data, len);
        goto out;
    }
    gs_yn *root;
    if (gs_mig__yaml_parse(&in->arena, r.file, data, len, &root, err) != 0)
        goto out;
    if (!root) {
        gs_error_set(err, GS_ERR_INVALID, r.file, 0, 0, NULL, "empty inventory");
        goto out;
    }
    const gs_yn *k = gs_mig__y_get(root, "kind");
    if (k && k->type == GS_YN_SCALAR && !strcmp(k->u.text, "MigPlan")) {
        static const char *const top[] = {"apiVersion", "kind", "metadata", "services",
                                          "inventory", NULL};
        if (check_header(&r, root, "MigPlan", top) != 0)
            goto out;
        const gs_yn *inv = gs_mig__y_get(root, "inventory");
        rc = inv && !inv->null ? parse_inventory_map(&r, inv, "inventory") : 0;
        goto out;
    }
    static const char *const top[] = {"apiVersion", "kind", "metadata", "nodes", NULL};
    if (check_header(&r, root, "MigInventory", top) != 0)
        goto out;
    const gs_yn *nodes = gs_mig__y_get(root, "nodes");
    rc = nodes && !nodes->null ? parse_nodes(&r, nodes, "nodes") : 0;
out:
    gs_intern_free(&r.names);
    return rc;
}
