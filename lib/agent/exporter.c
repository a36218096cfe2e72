/*
 * exporter.c - dcgm-exporter-compatible metrics from NVML samples (exporter.h,
 * docs/agent.md "Metrics (DCGM-compatible)").
 *
 * Series are written straight into the caller's buffer: one small array of resolved
 * holders per render, nothing per series.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/exporter.h"

/* ---------------------------------------------------------------- families */
enum {
    V_SM_CLOCK, V_MEM_CLOCK, V_GPU_TEMP, V_POWER, V_ENERGY, V_PCIE_REPLAY, V_GPU_UTIL,
    V_MEM_COPY_UTIL, V_XID, V_FB_FREE, V_FB_USED, V_FB_RESERVED, V_ECC_SBE, V_ECC_DBE,
    V_REMAP_UNCORR, V_REMAP_CORR, V_REMAP_FAILURE, V_IDLE, V__COUNT
};

static const struct fam {
    const char *name, *type, *help;
} fams[V__COUNT] = {
    [V_SM_CLOCK] = {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."},
    [V_MEM_CLOCK] = {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."},
    [V_GPU_TEMP] = {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."},
    [V_POWER] = {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."},
    [V_ENERGY] = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
                  "Total energy consumption since boot (in mJ)."},
    [V_PCIE_REPLAY] = {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."},
    [V_GPU_UTIL] = {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."},
    [V_MEM_COPY_UTIL] = {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."},
    [V_XID] = {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."},
    [V_FB_FREE] = {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."},
    [V_FB_USED] = {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."},
    [V_FB_RESERVED] = {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."},
    [V_ECC_SBE] = {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter",
                   "Total number of single-bit volatile ECC errors."},
    [V_ECC_DBE] = {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
                   "Total number of double-bit volatile ECC errors."},
    [V_REMAP_UNCORR] = {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
                        "Number of remapped rows for uncorrectable errors"},
    [V_REMAP_CORR] = {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
                      "Number of remapped rows for correctable errors"},
    [V_REMAP_FAILURE] = {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge",
                         "Whether remapping of rows has failed"},
    [V_IDLE] = {"gpusched_agent_gpu_idle_seconds", "gauge",
                "Seconds an allocated GPU or MIG device has stayed under the utilization "
                "threshold (0 while busy)."},
};

/* The value of family f for one sample into buf; false when unknown (-1). */
static bool sample_value(const gs_nvml_sample *s, int f, char *buf, size_t cap)
{
    long long v;
    switch (f) {
    case V_SM_CLOCK: v = s->sm_clock_mhz; break;
    case V_MEM_CLOCK: v = s->mem_clock_mhz; break;
    case V_GPU_TEMP: v = s->temp_c; break;
    case V_POWER:
        if (s->power_mw < 0)
            return false;
        /* watts with up to 3 decimals, trailing zeros trimmed ("61.476", "60") */
        snprintf(buf, cap, "%lld.%03lld", s->power_mw / 1000, s->power_mw % 1000);
        {
            size_t n = strlen(buf);
            while (n && buf[n - 1] == '0')
                buf[--n] = '\0';
            if (n && buf[n - 1] == '.')
                buf[--n] = '\0';
        }
        return true;
    case V_ENERGY: v = s->energy_mj; break;
    case V_PCIE_REPLAY: v = s->pcie_replay; break;
    case V_GPU_UTIL: v = s->gpu_util; break;
    case V_MEM_COPY_UTIL: v = s->mem_copy_util; break;
    case V_FB_FREE: v = s->fb_free_mib; break;
    case V_FB_USED: v = s->fb_used_mib; break;
    case V_FB_RESERVED: v = s->fb_reserved_mib; break;
    case V_ECC_SBE: v = s->ecc_sbe_volatile; break;
    case V_ECC_DBE: v = s->ecc_dbe_volatile; break;
    case V_REMAP_UNCORR: v = s->remapped_uncorrectable; break;
    case V_REMAP_CORR: v = s->remapped_correctable; break;
    case V_REMAP_FAILURE: v = s->remap_failure; break;
    default: return false;
    }
    if (v < 0)
        return false;
    snprintf(buf, cap, "%lld", v);
    return true;
}

/* ---------------------------------------------------------------- escaping */
void gs_exporter_label_value(gs_strbuf *sb, const char *s)
{
    if (!s)
        return;
    size_t n = strlen(s), run = 0;
    const char *start = s;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        size_t adv = 1;
        if (c == '\\')
            rep = "\\\\";
        else if (c == '"')
            rep = "\\\"";
        else if (c == '\n')
            rep = "\\n";
        else if (c < 0x20 || c == 0x7f)
            rep = " ";
        else if (c >= 0x80) {
            uint32_t cp;
            adv = gs_utf8_seq(s + i, n - i, &cp);
            if (!adv) {
                rep = "\xef\xbf\xbd";
                adv = 1;
            }
        }
        if (rep) {
            gs_strbuf_add(sb, start, run);
            gs_strbuf_puts(sb, rep);
            i += adv;
            start = s + i;
            run = 0;
        } else {
            i += adv;
            run += adv;
        }
    }
    gs_strbuf_add(sb, start, run);
}

/* ---------------------------------------------------------------- resolving holders */
static bool all_digits(const char *s, size_t n)
{
    if (n == 0 || n > 6)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static long num(const char *s, size_t n)
{
    long v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

bool gs_exporter_resolve(const gs_nvml_inventory *inv, const char *id, size_t *gpu, long *mig,
                         long *replica)
{
    *replica = -1;
    *mig = -1;
    if (!inv || !id)
        return false;
    size_t n = strlen(id);
    const char *rs = strstr(id, "::");
    if (rs) {
        size_t rn = n - (size_t)(rs + 2 - id);
        if (!all_digits(rs + 2, rn))
            return false;
        *replica = num(rs + 2, rn);
        n = (size_t)(rs - id);
    }
    if (n == 0)
        return false;
    /* index forms: "3", "3:1" */
    const char *colon = memchr(id, ':', n);
    if (all_digits(id, colon ? (size_t)(colon - id) : n)) {
        long gi = num(id, colon ? (size_t)(colon - id) : n);
        for (size_t i = 0; i < inv->n_gpus; i++) {
            if ((long)inv->gpus[i].index != gi)
                continue;
            if (!colon) {
                *gpu = i;
                return true;
            }
            size_t mn = n - (size_t)(colon + 1 - id);
            if (!all_digits(colon + 1, mn))
                return false;
            long mi = num(colon + 1, mn);
            for (size_t j = 0; j < inv->gpus[i].n_mig; j++)
                if ((long)inv->gpus[i].mig[j].index == mi) {
                    *gpu = i;
                    *mig = (long)j;
                    return true;
                }
            return false;
        }
        return false;
    }
    /* UUIDs */
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        if (g->uuid[0] && strlen(g->uuid) == n && memcmp(g->uuid, id, n) == 0) {
            *gpu = i;
            return true;
        }
        for (size_t j = 0; j < g->n_mig; j++)
            if (g->mig[j].uuid[0] && strlen(g->mig[j].uuid) == n &&
                memcmp(g->mig[j].uuid, id, n) == 0) {
                *gpu = i;
                *mig = (long)j;
                return true;
            }
    }
    return false;
}

typedef struct held {
    size_t gpu;
    long mig;
    long replica;
    size_t h; /* index into holders */
} held;

static int str_cmp0(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

static int held_cmp_ctx(const held *x, const held *y, const gs_exporter_holder *hs)
{
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->mig != y->mig)
        return x->mig < y->mig ? -1 : 1;
    const gs_exporter_holder *a = &hs[x->h], *b = &hs[y->h];
    int c = str_cmp0(a->ns, b->ns);
    if (!c)
        c = str_cmp0(a->pod, b->pod);
    if (!c)
        c = str_cmp0(a->container, b->container);
    if (c)
        return c;
    if (x->replica != y->replica)
        return x->replica < y->replica ? -1 : 1;
    return x->h < y->h ? -1 : (x->h > y->h);
}

/* ---------------------------------------------------------------- rendering */
typedef struct ctx {
    const gs_exporter_input *in;
    const gs_exporter_opts *o;
    gs_strbuf *sb;
    held *hv;      /* resolved holders, sorted by device then holder, one per holder */
    size_t nh;
} ctx;

static bool same_holder(const ctx *c, const held *a, const held *b)
{
    const gs_exporter_holder *x = &c->in->holders[a->h], *y = &c->in->holders[b->h];
    return str_cmp0(x->ns, y->ns) == 0 && str_cmp0(x->pod, y->pod) == 0 &&
           str_cmp0(x->container, y->container) == 0;
}

/* The holders of one device: [*first, *end) in c->hv, duplicates (the same container
 * holding two replicas) adjacent. */
static void holders_of(const ctx *c, size_t gpu, long mig, size_t *first, size_t *end)
{
    size_t i = 0;
    while (i < c->nh && (c->hv[i].gpu < gpu || (c->hv[i].gpu == gpu && c->hv[i].mig < mig)))
        i++;
    size_t e = i;
    while (e < c->nh && c->hv[e].gpu == gpu && c->hv[e].mig == mig)
        e++;
    *first = i;
    *end = e;
}

static void lab(gs_strbuf *sb, bool *comma, const char *k, const char *v)
{
    if (*comma)
        gs_strbuf_putc(sb, ',');
    *comma = true;
    gs_strbuf_puts(sb, k);
    gs_strbuf_puts(sb, "=\"");
    gs_exporter_label_value(sb, v);
    gs_strbuf_putc(sb, '"');
}

static void model_value(gs_strbuf *sb, bool *comma, const char *model, bool dashes)
{
    if (!dashes) {
        lab(sb, comma, "modelName", model);
        return;
    }
    char m[GS_NVML_STR_MAX];
    snprintf(m, sizeof m, "%s", model);
    for (char *p = m; *p; p++)
        if (*p == ' ')
            *p = '-';
    lab(sb, comma, "modelName", m);
}

/* One series: name{labels} value\n. h NULL: no pod; vgpu >= 0: the vgpu label. */
static void series(ctx *c, int f, size_t gi, long mi, const held *h, long vgpu,
                   const char *value, const gs_exporter_gpu_state *st)
{
    gs_strbuf *sb = c->sb;
    const gs_nvml_gpu *g = &c->in->inv->gpus[gi];
    char num_s[32];
    bool comma = false;
    gs_strbuf_puts(sb, fams[f].name);
    gs_strbuf_putc(sb, '{');
    snprintf(num_s, sizeof num_s, "%u", g->index);
    lab(sb, &comma, "gpu", num_s);
    lab(sb, &comma, "UUID", g->uuid);
    lab(sb, &comma, "pci_bus_id", g->pci_bus_id);
    snprintf(num_s, sizeof num_s, "nvidia%d", g->minor >= 0 ? g->minor : (int)g->index);
    lab(sb, &comma, "device", num_s);
    model_value(sb, &comma, g->name, c->o && c->o->model_dashes);
    if (mi >= 0) {
        const gs_nvml_mig_device *m = &g->mig[mi];
        lab(sb, &comma, "GPU_I_PROFILE", m->profile);
        snprintf(num_s, sizeof num_s, "%u", m->gpu_instance_id);
        lab(sb, &comma, "GPU_I_ID", num_s);
    }
    const char *host = c->o ? c->o->hostname : NULL;
    gs_exporter_host hl = c->o ? c->o->host_label : GS_EXPORTER_HOST_LOWER;
    if (host && *host && hl != GS_EXPORTER_HOST_NONE)
        lab(sb, &comma, hl == GS_EXPORTER_HOST_UPPER ? "Hostname" : "hostname", host);
    if (c->in->inv->driver_version[0])
        lab(sb, &comma, "DCGM_FI_DRIVER_VERSION", c->in->inv->driver_version);
    if (h) {
        const gs_exporter_holder *p = &c->in->holders[h->h];
        lab(sb, &comma, "namespace", p->ns ? p->ns : "");
        lab(sb, &comma, "pod", p->pod ? p->pod : "");
        lab(sb, &comma, "container", p->container ? p->container : "");
        if (vgpu >= 0) {
            snprintf(num_s, sizeof num_s, "%ld", vgpu);
            lab(sb, &comma, "vgpu", num_s);
        }
    }
    if (f == V_XID) {
        snprintf(num_s, sizeof num_s, "%lld", (long long)st->last_xid);
        lab(sb, &comma, "err_code", num_s);
        lab(sb, &comma, "err_msg",
            st->xid_msg ? st->xid_msg : st->last_xid == 0 ? "No Error" : "");
    }
    gs_strbuf_puts(sb, "} ");
    gs_strbuf_puts(sb, value);
    gs_strbuf_putc(sb, '\n');
}

/* The series of one device for family f, one per holder (or one without a pod). */
static void device_series(ctx *c, int f, size_t gi, long mi, const char *value,
                          const gs_exporter_gpu_state *st, bool held_only)
{
    size_t first, end;
    holders_of(c, gi, mi, &first, &end);
    size_t distinct = 0;
    for (size_t i = first; i < end; i++)
        if (i == first || !same_holder(c, &c->hv[i - 1], &c->hv[i]))
            distinct++;
    if (distinct == 0) {
        if (!held_only)
            series(c, f, gi, mi, NULL, -1, value, st);
        return;
    }
    long ordinal = 0;
    for (size_t i = first; i < end; i++) {
        if (i != first && same_holder(c, &c->hv[i - 1], &c->hv[i]))
            continue;
        long vgpu = -1;
        if (distinct > 1)
            vgpu = c->hv[i].replica >= 0 ? c->hv[i].replica : ordinal;
        ordinal++;
        series(c, f, gi, mi, &c->hv[i], vgpu, value, st);
    }
}

static bool mig_ok(const gs_nvml_mig_device *m)
{
    return m->gpu_instance_id != ~0u;
}

/* Write family f; a family without series leaves no header. */
static void family(ctx *c, int f)
{
    const gs_exporter_input *in = c->in;
    size_t mark = c->sb->len;
    gs_strbuf_printf(c->sb, "# HELP %s %s\n# TYPE %s %s\n", fams[f].name, fams[f].help,
                     fams[f].name, fams[f].type);
    size_t head = c->sb->len;
    char v[48];
    static const gs_exporter_gpu_state none = {-1, NULL, -1, NULL};
    for (size_t gi = 0; gi < in->inv->n_gpus; gi++) {
        const gs_nvml_gpu *g = &in->inv->gpus[gi];
        if (!g->uuid[0])
            continue; /* lost before it was identified */
        const gs_exporter_gpu_state *st = in->state ? &in->state[gi] : &none;
        if (f == V_XID) {
            if (st->last_xid >= 0) {
                snprintf(v, sizeof v, "%lld", (long long)st->last_xid);
                device_series(c, f, gi, -1, v, st, false);
            }
            continue;
        }
        if (f == V_IDLE) {
            if (st->idle_seconds >= 0) {
                snprintf(v, sizeof v, "%lld", (long long)st->idle_seconds);
                device_series(c, f, gi, -1, v, st, true);
            }
            if (st->mig_idle_seconds)
                for (size_t j = 0; j < g->n_mig; j++)
                    if (mig_ok(&g->mig[j]) && st->mig_idle_seconds[j] >= 0) {
                        snprintf(v, sizeof v, "%lld", (long long)st->mig_idle_seconds[j]);
                        device_series(c, f, gi, (long)j, v, st, true);
                    }
            continue;
        }
        if (!in->samples)
            continue;
        if (sample_value(&in->samples->gpu[gi], f, v, sizeof v))
            device_series(c, f, gi, -1, v, st, false);
        if (in->samples->mig && in->samples->mig[gi])
            for (size_t j = 0; j < g->n_mig; j++)
                if (mig_ok(&g->mig[j]) && sample_value(&in->samples->mig[gi][j], f, v, sizeof v))
                    device_series(c, f, gi, (long)j, v, st, false);
    }
    if (c->sb->len == head) {
        c->sb->len = mark; /* no series: no header */
        if (c->sb->buf)
            c->sb->buf[mark] = '\0';
    }
}

int gs_exporter_render(const gs_exporter_input *in, const gs_exporter_opts *o, gs_strbuf *sb,
                       gs_error *err)
{
    if (!in || !in->inv)
        return gs_fail(err, GS_ERR_INVALID, "metrics: no inventory");
    if (in->samples && (in->samples->n_gpus != in->inv->n_gpus || !in->samples->gpu))
        return gs_fail(err, GS_ERR_INVALID,
                       "metrics: %zu samples for an inventory of %zu GPUs",
                       in->samples->n_gpus, in->inv->n_gpus);
    ctx c = {in, o, sb, NULL, 0};
    if (in->nholders && in->holders) {
        c.hv = malloc(in->nholders * sizeof *c.hv);
        if (!c.hv)
            return gs_fail(err, GS_ERR_NOMEM, "metrics: out of memory");
        for (size_t i = 0; i < in->nholders; i++) {
            held h = {0, -1, -1, i};
            if (gs_exporter_resolve(in->inv, in->holders[i].device_id, &h.gpu, &h.mig,
                                    &h.replica))
                c.hv[c.nh++] = h;
        }
        /* insertion sort: a node has tens of holders */
        for (size_t i = 1; i < c.nh; i++) {
            held x = c.hv[i];
            size_t j = i;
            while (j > 0 && held_cmp_ctx(&c.hv[j - 1], &x, in->holders) > 0) {
                c.hv[j] = c.hv[j - 1];
                j--;
            }
            c.hv[j] = x;
        }
    }
    for (int f = 0; f < V__COUNT; f++)
        family(&c, f);
    free(c.hv);
    if (sb->oom)
        return gs_fail(err, GS_ERR_NOMEM, "metrics: out of memory");
    return 0;
}
