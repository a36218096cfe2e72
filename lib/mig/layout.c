/*
 * layout.c - what the MIG tools need on top of the catalog in gpu.h: legal starts as data
 * and text, profile memory (with estimates where the reference has none), GPU layouts
 * (counts <-> placed instances, text, why a layout does not fit), the GPU operator's
 * built-in named configs, mig-devices keys ("1c.3g.40gb"), per-model validity tables and
 * the profile choice for a service.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mig_int.h"

/* ---------------------------------------------------------------- catalog listing */
uint32_t gs_mig_profile_starts(const gs_mig_model *m, const gs_mig_profile *p, uint8_t *starts)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < 8; s++)
        if ((p->starts & (1u << s)) && s + p->mem_slices <= m->memory_slices)
            starts[n++] = (uint8_t)s;
    return n;
}

size_t gs_mig_starts_text(const gs_mig_model *m, const gs_mig_profile *p, char *buf, size_t cap)
{
    uint8_t st[8];
    uint32_t n = gs_mig_profile_starts(m, p, st);
    size_t o = 0;
    if (cap)
        buf[0] = '\0';
    for (uint32_t i = 0; i < n && o + 3 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%u", i ? "," : "", st[i]);
    return o < cap ? o : (cap ? cap - 1 : 0);
}

uint32_t gs_mig_profile_mem(const gs_mig_model *m, const gs_mig_profile *p, bool *estimated)
{
    if (estimated)
        *estimated = false;
    if (p->mem_mib)
        return p->mem_mib;
    /* scale the widest profile with a known size; NVML reports a little less than the
     * nominal share, and scaling keeps that ratio */
    const gs_mig_profile *q = NULL;
    for (uint8_t i = 0; i < m->nprofiles; i++)
        if (m->profiles[i].mem_mib && (!q || m->profiles[i].mem_slices > q->mem_slices))
            q = &m->profiles[i];
    uint64_t share = (uint64_t)m->mem_mib * p->mem_slices / m->memory_slices;
    uint64_t est = q ? (uint64_t)q->mem_mib * p->mem_slices / q->mem_slices : share;
    if (est > share)
        est = share;
    if (estimated)
        *estimated = true;
    return (uint32_t)est;
}

bool gs_mig_profile_is_plain(const gs_mig_profile *p) { return gs_mig_profile_attrs(p) == 0; }

int gs_mig_model_index(const gs_mig_model *m)
{
    uint32_t n;
    const gs_mig_model *all = gs_mig_models(&n);
    if (m < all || m >= all + n)
        return -1;
    return (int)(m - all);
}

/* ---------------------------------------------------------------- layouts */
void gs_mig_layout_counts(const gs_mig_layout *l, uint8_t *counts)
{
    memset(counts, 0, GS_MIG_MAX_PROFILES);
    for (uint8_t i = 0; i < l->n && i < GS_MIG_MAX_INST; i++)
        if (l->profile[i] < GS_MIG_MAX_PROFILES)
            counts[l->profile[i]]++;
}

int gs_mig_layout_place(const gs_mig_model *m, gs_mig_layout *l)
{
    if (l->n > GS_MIG_MAX_INST)
        return -1;
    /* canonical order first: profile ascending (insertion sort, n <= 8) */
    for (uint8_t i = 1; i < l->n; i++) {
        uint8_t p = l->profile[i], j = i;
        while (j > 0 && l->profile[j - 1] > p) {
            l->profile[j] = l->profile[j - 1];
            j--;
        }
        l->profile[j] = p;
    }
    memset(l->start, 0, sizeof l->start);
    if (!gs_mig_layout_fits(m, l->profile, l->n, l->start))
        return -1;
    /* same-profile instances: starts ascending */
    for (uint8_t i = 1; i < l->n; i++) {
        uint8_t j = i;
        while (j > 0 && l->profile[j - 1] == l->profile[j] && l->start[j - 1] > l->start[j]) {
            uint8_t t = l->start[j];
            l->start[j] = l->start[j - 1];
            l->start[j - 1] = t;
            j--;
        }
    }
    return 0;
}

int gs_mig_layout_from_counts(const gs_mig_model *m, const uint8_t *counts, gs_mig_layout *out)
{
    memset(out, 0, sizeof *out);
    out->mig_enabled = true;
    for (uint8_t p = 0; p < m->nprofiles; p++) {
        for (uint8_t k = 0; k < counts[p]; k++) {
            if (out->n >= GS_MIG_MAX_INST)
                return -1;
            out->profile[out->n++] = p;
        }
    }
    return gs_mig_layout_place(m, out);
}

void gs_mig_layout_slices(const gs_mig_model *m, const gs_mig_layout *l, uint32_t *compute,
                          uint32_t *memory)
{
    uint32_t c = 0, mem = 0;
    for (uint8_t i = 0; i < l->n && i < GS_MIG_MAX_INST; i++) {
        if (l->profile[i] >= m->nprofiles)
            continue;
        c += m->profiles[l->profile[i]].compute;
        mem += m->profiles[l->profile[i]].mem_slices;
    }
    if (compute)
        *compute = c;
    if (memory)
        *memory = mem;
}

/* Profiles in display order: more compute first, then more memory, then plain first. */
static void display_order(const gs_mig_model *m, uint8_t order[GS_MIG_MAX_PROFILES])
{
    uint8_t n = m->nprofiles < GS_MIG_MAX_PROFILES ? m->nprofiles : GS_MIG_MAX_PROFILES;
    for (uint8_t i = 0; i < n; i++)
        order[i] = i;
    for (uint8_t i = 1; i < n; i++) {
        uint8_t x = order[i], j = i;
        const gs_mig_profile *px = &m->profiles[x];
        while (j > 0) {
            const gs_mig_profile *py = &m->profiles[order[j - 1]];
            bool before = px->compute > py->compute ||
                          (px->compute == py->compute && px->mem_slices > py->mem_slices);
            if (!before)
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
}

size_t gs_mig_layout_text(const gs_mig_model *m, const gs_mig_layout *l, bool with_starts,
                          char *buf, size_t cap)
{
    size_t o = 0;
    if (!cap)
        return 0;
    buf[0] = '\0';
#define PUT(...)                                                                   \
    do {                                                                           \
        if (o < cap) {                                                             \
            int k_ = snprintf(buf + o, cap - o, __VA_ARGS__);                      \
            o += k_ > 0 ? (size_t)k_ : 0;                                          \
        }                                                                          \
    } while (0)
    if (!l->mig_enabled) {
        PUT("mig disabled");
    } else if (l->n == 0) {
        PUT("mig enabled, empty");
    } else if (with_starts) {
        /* physical order: by start slot */
        uint8_t idx[GS_MIG_MAX_INST];
        uint8_t n = l->n > GS_MIG_MAX_INST ? GS_MIG_MAX_INST : l->n;
        for (uint8_t i = 0; i < n; i++)
            idx[i] = i;
        for (uint8_t i = 1; i < n; i++) {
            uint8_t x = idx[i], j = i;
            while (j > 0 && l->start[idx[j - 1]] > l->start[x]) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = x;
        }
        for (uint8_t i = 0; i < n; i++) {
            uint8_t p = l->profile[idx[i]];
            PUT("%s%s@%u", i ? " " : "", p < m->nprofiles ? m->profiles[p].name : "?",
                l->start[idx[i]]);
        }
    } else {
        uint8_t counts[GS_MIG_MAX_PROFILES], order[GS_MIG_MAX_PROFILES];
        gs_mig_layout_counts(l, counts);
        display_order(m, order);
        bool first = true;
        for (uint8_t i = 0; i < m->nprofiles && i < GS_MIG_MAX_PROFILES; i++) {
            uint8_t p = order[i];
            if (!counts[p])
                continue;
            PUT("%s%s x%u", first ? "" : ", ", m->profiles[p].name, counts[p]);
            first = false;
        }
    }
#undef PUT
    if (o >= cap)
        o = cap - 1;
    return o;
}

bool gs_mig_layout_explain(const gs_mig_model *m, const uint8_t *counts, char *buf, size_t cap)
{
    if (cap)
        buf[0] = '\0';
    uint32_t compute = 0, mem = 0, me = 0, me_all = 0, no_me = 0, n = 0;
    const char *me_all_name = NULL;
    for (uint8_t p = 0; p < m->nprofiles; p++) {
        const gs_mig_profile *pr = &m->profiles[p];
        if (counts[p] > pr->max_count) {
            snprintf(buf, cap, "%s x%u: at most %u per GPU on %s", pr->name, counts[p],
                     pr->max_count, m->name);
            return true;
        }
        compute += (uint32_t)counts[p] * pr->compute;
        mem += (uint32_t)counts[p] * pr->mem_slices;
        n += counts[p];
        unsigned at = gs_mig_profile_attrs(pr);
        if (at & GS_MIG_ATTR_ME)
            me += counts[p];
        if (at & GS_MIG_ATTR_NO_ME)
            no_me += counts[p];
        if ((at & GS_MIG_ATTR_ME_ALL) && counts[p]) {
            me_all += counts[p];
            me_all_name = pr->name;
        }
    }
    if (me > 1) {
        snprintf(buf, cap, "at most one +me instance per GPU, got %u", me);
        return true;
    }
    if (me_all > 1) {
        snprintf(buf, cap, "at most one +me.all instance per GPU, got %u", me_all);
        return true;
    }
    if (me_all && me_all + no_me != n) {
        snprintf(buf, cap,
                 "%s takes every media engine: only -me profiles may share the GPU with it",
                 me_all_name);
        return true;
    }
    if (compute > m->compute_slices) {
        snprintf(buf, cap, "needs %u compute slices, %s has %u", compute, m->name,
                 m->compute_slices);
        return true;
    }
    if (mem > m->memory_slices) {
        snprintf(buf, cap, "needs %u memory slices, %s has %u", mem, m->name, m->memory_slices);
        return true;
    }
    gs_mig_layout l;
    if (n <= GS_MIG_MAX_INST && gs_mig_layout_from_counts(m, counts, &l) == 0)
        return false;
    size_t o = (size_t)snprintf(buf, cap, "no placement without overlapping memory slices (legal starts:");
    for (uint8_t p = 0; p < m->nprofiles && o < cap; p++) {
        if (!counts[p])
            continue;
        char st[32];
        gs_mig_starts_text(m, &m->profiles[p], st, sizeof st);
        o += (size_t)snprintf(buf + o, cap - o, " %s {%s}", m->profiles[p].name, st);
    }
    if (o < cap)
        snprintf(buf + o, cap - o, ")");
    return true;
}

/* ---------------------------------------------------------------- built-in configs */
/* The plain profile with `g` compute slices and the highest max count (ties: the first in
 * catalog order), or -1. */
static int plain_profile_with_compute(const gs_mig_model *m, uint8_t g)
{
    int best = -1;
    for (uint8_t p = 0; p < m->nprofiles; p++) {
        const gs_mig_profile *pr = &m->profiles[p];
        if (pr->compute != g || !gs_mig_profile_is_plain(pr))
            continue;
        if (best < 0 || pr->max_count > m->profiles[best].max_count)
            best = p;
    }
    return best;
}

enum { BUILTIN_DISABLED, BUILTIN_ENABLED, BUILTIN_BALANCED, BUILTIN_FIRST_PROFILE };

uint32_t gs_mig_builtin_count(const gs_mig_model *m) { return BUILTIN_FIRST_PROFILE + m->nprofiles; }

void gs_mig_builtin_name(const gs_mig_model *m, uint32_t i, char *buf, size_t cap)
{
    if (!cap)
        return;
    buf[0] = '\0';
    if (i == BUILTIN_DISABLED)
        snprintf(buf, cap, "all-disabled");
    else if (i == BUILTIN_ENABLED)
        snprintf(buf, cap, "all-enabled");
    else if (i == BUILTIN_BALANCED)
        snprintf(buf, cap, "all-balanced");
    else if (i < gs_mig_builtin_count(m)) {
        int k = snprintf(buf, cap, "all-%s", m->profiles[i - BUILTIN_FIRST_PROFILE].name);
        for (int j = 0; j < k && (size_t)j < cap; j++)
            if (buf[j] == '+')
                buf[j] = '.';
    }
}

static bool builtin_by_index(const gs_mig_model *m, uint32_t i, gs_mig_layout *out)
{
    uint8_t counts[GS_MIG_MAX_PROFILES] = {0};
    memset(out, 0, sizeof *out);
    switch (i) {
    case BUILTIN_DISABLED:
        return true;
    case BUILTIN_ENABLED:
        out->mig_enabled = true;
        return true;
    case BUILTIN_BALANCED: {
        /* 7 compute slices: {1g: 2, 2g: 1, 3g: 1}; 4 (A30): {1g: 2, 2g: 1} */
        int p1 = plain_profile_with_compute(m, 1), p2 = plain_profile_with_compute(m, 2);
        int p3 = m->compute_slices >= 7 ? plain_profile_with_compute(m, 3) : -1;
        if (p1 < 0 || p2 < 0 || (m->compute_slices >= 7 && p3 < 0))
            return false;
        counts[p1] = 2;
        counts[p2] = 1;
        if (p3 >= 0)
            counts[p3] = 1;
        return gs_mig_layout_from_counts(m, counts, out) == 0;
    }
    default:
        if (i >= gs_mig_builtin_count(m))
            return false;
        counts[i - BUILTIN_FIRST_PROFILE] = m->profiles[i - BUILTIN_FIRST_PROFILE].max_count;
        return gs_mig_layout_from_counts(m, counts, out) == 0;
    }
}

bool gs_mig_builtin_layout(const gs_mig_model *m, const char *name, gs_mig_layout *out)
{
    if (!m || !name)
        return false;
    char buf[64];
    for (uint32_t i = 0; i < gs_mig_builtin_count(m); i++) {
        gs_mig_builtin_name(m, i, buf, sizeof buf);
        if (strcmp(buf, name) == 0)
            return builtin_by_index(m, i, out);
    }
    return false;
}

/* ---------------------------------------------------------------- mig-devices keys */
/* "<digits><suffix>" at s: the number, advancing *i; -1 when absent or too large. */
static int read_num(const char *s, size_t *i)
{
    int v = 0;
    size_t st = *i;
    while (s[*i] >= '0' && s[*i] <= '9') {
        v = v * 10 + (s[*i] - '0');
        if (v > 9999)
            return -1;
        (*i)++;
    }
    return *i == st ? -1 : v;
}

/* mig-parted's grammar (go-nvlib's parseMigProfile): [<C>c.]<G>g.<GB>gb then optionally
 * "+attr[,attr...]" or "-attr[,attr...]" (never both); each attr is letters, digits and
 * '.' ("me", "me.all", "gfx"), not starting with a digit, not starting or ending with a
 * '.', and no attr twice. Writes where the GI name starts and C (0 without a CI part). */
static bool devkey_split(const char *key, size_t *gi_off, int *c_out)
{
    size_t i = 0;
    int a = read_num(key, &i);
    if (a < 0)
        return false;
    int c = 0;
    size_t gi = 0;
    if (key[i] == 'c' && key[i + 1] == '.') {
        c = a;
        i += 2;
        gi = i;
        a = read_num(key, &i);
        if (a < 0)
            return false;
    }
    if (key[i] != 'g' || key[i + 1] != '.')
        return false;
    i += 2;
    if (read_num(key, &i) < 0 || key[i] != 'g' || key[i + 1] != 'b')
        return false;
    i += 2;
    if (key[i] == '+' || key[i] == '-') {
        i++;
        size_t first = i;
        for (;;) {
            size_t st = i;
            if ((key[i] >= '0' && key[i] <= '9') || key[i] == '.')
                return false;
            while ((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') ||
                   (key[i] >= '0' && key[i] <= '9') || key[i] == '.')
                i++;
            if (i == st || key[i - 1] == '.')
                return false;
            /* the same attribute twice ("+me,me") */
            for (size_t o = first; o < st;) {
                size_t e = o;
                while (key[e] != ',') /* every earlier attr ends with a ',' before st */
                    e++;
                if (e - o == i - st && !memcmp(key + o, key + st, i - st))
                    return false;
                o = e + 1;
            }
            if (key[i] != ',')
                break;
            i++;
        }
    }
    if (key[i] != '\0')
        return false;
    /* slice counts mig-parted knows (NVML has 1, 2, 3, 4, 6, 7 and 8 slice profiles) */
    if (!(a == 1 || a == 2 || a == 3 || a == 4 || a == 6 || a == 7 || a == 8))
        return false;
    if (c && (c > a || !(c == 1 || c == 2 || c == 3 || c == 4 || c == 6 || c == 7 || c == 8)))
        return false;
    *gi_off = gi;
    *c_out = c;
    return true;
}

bool gs_mig__devkey_syntax_ok(const char *key)
{
    size_t off;
    int c;
    return key && devkey_split(key, &off, &c);
}

int gs_mig__devkey_parse(const gs_mig_model *m, const char *key, uint8_t *profile,
                         uint8_t *ci_slices)
{
    size_t off;
    int c;
    if (!key || !devkey_split(key, &off, &c))
        return -1;
    for (uint8_t p = 0; p < m->nprofiles; p++) {
        if (strcmp(m->profiles[p].name, key + off) == 0) {
            if (c && c > m->profiles[p].compute)
                return -1;
            *profile = p;
            *ci_slices = (uint8_t)(c == m->profiles[p].compute ? 0 : c);
            return 0;
        }
    }
    return -2;
}

int gs_mig__entry_counts(const gs_mig_model *m, const gs_mig_entry *e, uint8_t *counts,
                         char *msg, size_t cap, const gs_mig_devcount **bad)
{
    uint32_t acc[GS_MIG_MAX_PROFILES] = {0};
    memset(counts, 0, GS_MIG_MAX_PROFILES);
    if (msg && cap)
        msg[0] = '\0';
    for (uint32_t i = 0; i < e->nmig_devices; i++) {
        const gs_mig_devcount *d = &e->mig_devices[i];
        uint8_t p, ci;
        int rc = gs_mig__devkey_parse(m, d->profile, &p, &ci);
        if (rc < 0) {
            if (bad)
                *bad = d;
            if (rc == -1) {
                snprintf(msg, cap, "\"%s\" is not a MIG profile name", d->profile);
            } else {
                size_t o = (size_t)snprintf(msg, cap, "profile %s does not exist on %s (profiles:",
                                            d->profile, m->name);
                for (uint8_t k = 0; k < m->nprofiles && o < cap; k++)
                    o += (size_t)snprintf(msg + o, cap - o, "%s %s", k ? "," : "",
                                          m->profiles[k].name);
                if (o < cap)
                    snprintf(msg + o, cap - o, ")");
            }
            return -1;
        }
        uint32_t gis = d->count;
        if (ci) {
            uint32_t per_gi = m->profiles[p].compute / ci;
            gis = (d->count + per_gi - 1) / per_gi;
        }
        acc[p] += gis;
        if (acc[p] > 255)
            acc[p] = 255;
    }
    for (uint8_t p = 0; p < m->nprofiles; p++)
        counts[p] = (uint8_t)acc[p];
    return 0;
}

/* ---------------------------------------------------------------- validity tables */
int gs_mig__table_build(gs_mig_table *t, const gs_mig_model *m)
{
    memset(t, 0, sizeof *t);
    t->m = m;
    t->np = m->nprofiles > GS_MIG_MAX_PROFILES ? GS_MIG_MAX_PROFILES : m->nprofiles;
    uint32_t size = 1;
    for (uint8_t p = 0; p < t->np; p++) {
        t->stride[p] = size;
        size *= (uint32_t)m->profiles[p].max_count + 1u;
        if (size > (1u << 22))
            return -1;
    }
    t->size = size;
    t->valid = calloc(size, 1);
    if (!t->valid)
        return -1;
    for (uint32_t x = 0; x < size; x++) {
        uint8_t counts[GS_MIG_MAX_PROFILES] = {0};
        uint32_t rest = x, n = 0, mem = 0, compute = 0;
        for (uint8_t p = 0; p < t->np; p++) {
            counts[p] = (uint8_t)(rest % (m->profiles[p].max_count + 1u));
            rest /= m->profiles[p].max_count + 1u;
            n += counts[p];
            mem += (uint32_t)counts[p] * m->profiles[p].mem_slices;
            compute += (uint32_t)counts[p] * m->profiles[p].compute;
        }
        if (n > GS_MIG_MAX_INST || mem > m->memory_slices || compute > m->compute_slices)
            continue;
        uint8_t idx[GS_MIG_MAX_INST];
        uint32_t k = 0;
        for (uint8_t p = 0; p < t->np; p++)
            for (uint8_t c = 0; c < counts[p]; c++)
                idx[k++] = p;
        t->valid[x] = gs_mig_layout_fits(m, idx, k, NULL) ? 1 : 0;
    }
    return 0;
}

void gs_mig__table_free(gs_mig_table *t)
{
    free(t->valid);
    t->valid = NULL;
}

/* ---------------------------------------------------------------- profile choice */
uint8_t gs_mig__choose_profile(const gs_mig_model *m, const gs_mig_service *s, bool *estimated)
{
    /* smallest plain profile by (memory slices, compute slices, memory) whose memory holds
     * the need and whose compute meets an explicit computeSlices */
    double need_mib = ceil(s->need_gib * 1024.0);
    int best = -1;
    bool best_est = false;
    for (uint8_t p = 0; p < m->nprofiles; p++) {
        const gs_mig_profile *pr = &m->profiles[p];
        if (!gs_mig_profile_is_plain(pr))
            continue;
        bool est;
        uint32_t mem = gs_mig_profile_mem(m, pr, &est);
        if ((double)mem < need_mib || pr->compute < s->compute_slices)
            continue;
        if (best >= 0) {
            const gs_mig_profile *b = &m->profiles[best];
            if (pr->mem_slices > b->mem_slices ||
                (pr->mem_slices == b->mem_slices && pr->compute > b->compute) ||
                (pr->mem_slices == b->mem_slices && pr->compute == b->compute &&
                 mem >= gs_mig_profile_mem(m, b, NULL)))
                continue;
        }
        best = p;
        best_est = est;
    }
    if (estimated)
        *estimated = best >= 0 && best_est;
    return best < 0 ? GS_MIG_NO_PROFILE : (uint8_t)best;
}
