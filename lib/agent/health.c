/* health.c - device health for the node agent: the XID policy, its parser and the
 * unhealthy/recovery state machine (include/gpusched/health.h; docs/agent.md, "Health: the
 * XID policy"). Pure: no NVML, no clock, no I/O. */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "gpusched/health.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THRESHOLD_MAX 1000
#define DURATION_MAX_MS (INT64_C(7) * 24 * 3600 * 1000) /* a week */

/* NVIDIA's XID catalog wording (as dcgm-exporter's table has it) for the XIDs an operator
 * meets; used in reasons. */
static const struct {
    unsigned xid;
    const char *meaning;
} xid_meanings[] = {
    {8, "GPU stopped processing"},
    {13, "Graphics Engine Exception"},
    {31, "GPU memory page fault"},
    {32, "Invalid or corrupted push buffer stream"},
    {43, "GPU stopped processing"},
    {45, "Preemptive cleanup, due to previous errors"},
    {48, "Double Bit ECC Error"},
    {61, "Internal micro-controller breakpoint/warning"},
    {62, "Internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recording event"},
    {64, "ECC page retirement or row remapper recording failure"},
    {68, "NVDEC0 Exception"},
    {69, "Graphics Engine class error"},
    {74, "NVLINK Error"},
    {79, "GPU has fallen off the bus"},
    {92, "High single-bit ECC error rate"},
    {94, "Contained ECC error"},
    {95, "Uncontained ECC error"},
    {109, "Context Switch Timeout Error"},
    {119, "GSP RPC Timeout"},
    {120, "GSP Error"},
    {121, "C2C Link Error"},
    {140, "Unrecovered ECC Error"},
    {154, "GPU Recovery Action Changed"},
};

const char *gs_health_xid_meaning(unsigned long long xid)
{
    for (size_t i = 0; i < sizeof xid_meanings / sizeof xid_meanings[0]; i++)
        if (xid_meanings[i].xid == xid)
            return xid_meanings[i].meaning;
    return NULL;
}

static const unsigned default_ignored[] = {13, 31, 43, 45, 68, 109};
/* Why each is critical: docs/agent.md has the table. */
static const unsigned default_critical[] = {48, 62, 63, 64, 74, 79, 95, 119, 120, 140, 154};

void gs_health_policy_default(gs_health_policy *p)
{
    memset(p, 0, sizeof *p);
    p->checks = 1;
    for (size_t i = 0; i < sizeof default_ignored / sizeof default_ignored[0]; i++)
        p->xid_class[default_ignored[i]] = GS_XID_IGNORED;
    for (size_t i = 0; i < sizeof default_critical / sizeof default_critical[0]; i++)
        p->xid_class[default_critical[i]] = GS_XID_CRITICAL;
    p->threshold = 3;
    p->window_ms = 10 * 60 * 1000;
    p->probe_interval_ms = 30 * 1000;
    p->quiet_ms = 60 * 1000;
}

gs_xid_class gs_health_xid_class(const gs_health_policy *p, unsigned long long xid)
{
    if (xid >= GS_HEALTH_XID_MAX)
        return GS_XID_COUNTED;
    return (gs_xid_class)p->xid_class[xid];
}

/* ---- parsing ----------------------------------------------------------------------------- */

/* A comma list of XIDs in s[0..len): calls mark(x) for each; blanks around items and empty
 * items are skipped (NVIDIA's plugin does the same). -1 with err on anything else. */
static int xid_list(const char *s, size_t len, const char *what, unsigned char *set,
                    gs_error *err)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t start = i;
        unsigned long v = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            v = v * 10 + (unsigned long)(s[i] - '0');
            if (v >= GS_HEALTH_XID_MAX)
                return gs_fail(err, GS_ERR_INVALID, "%s: XID %.*s is out of range (0..%d)",
                               what, (int)(i + 1 - start), s + start, GS_HEALTH_XID_MAX - 1);
            i++;
        }
        size_t end = i;
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < len && s[i] != ',') {
            while (i < len && s[i] != ',')
                i++;
            return gs_fail(err, GS_ERR_INVALID, "%s: \"%.*s\" is not an XID (a comma list of "
                                                "numbers such as 13,31,109 was expected)",
                           what, (int)(i - start > 40 ? 40 : i - start), s + start);
        }
        if (end > start)
            set[v] = 1;
        i++; /* the comma */
    }
    return 0;
}

static int ci_equal(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    if (len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != word[i])
            return 0;
    return 1;
}

static int ci_contains(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i + n <= len; i++)
        if (ci_equal(s + i, n, word))
            return 1;
    return 0;
}

static size_t trim(const char **s, size_t len)
{
    while (len && (**s == ' ' || **s == '\t'))
        (*s)++, len--;
    while (len && ((*s)[len - 1] == ' ' || (*s)[len - 1] == '\t'))
        len--;
    return len;
}

static int apply_dp(gs_health_policy *q, const char *dis, size_t dlen, const char *en,
                    size_t elen, gs_error *err)
{
    unsigned char ignore[GS_HEALTH_XID_MAX] = {0}, enable[GS_HEALTH_XID_MAX] = {0};
    int all_disabled = 0, all_enabled = 0, any_enabled = 0;
    dlen = trim(&dis, dlen);
    elen = trim(&en, elen);
    if (dlen) {
        if (ci_equal(dis, dlen, "all") || ci_contains(dis, dlen, "xids"))
            all_disabled = 1;
        else if (xid_list(dis, dlen, "DP_DISABLE_HEALTHCHECKS", ignore, err) != 0)
            return -1;
    }
    if (elen) {
        if (ci_equal(en, elen, "all") || ci_contains(en, elen, "xids"))
            all_enabled = 1;
        else if (xid_list(en, elen, "DP_ENABLE_HEALTHCHECKS", enable, err) != 0)
            return -1;
    }
    for (size_t x = 0; x < GS_HEALTH_XID_MAX; x++)
        any_enabled |= enable[x];
    for (size_t x = 0; x < GS_HEALTH_XID_MAX; x++)
        if (ignore[x])
            q->xid_class[x] = GS_XID_IGNORED;
    if (all_enabled) {
        /* every XID checked: the ignore lists (the default one too) are dropped */
        for (size_t x = 0; x < GS_HEALTH_XID_MAX; x++)
            if (q->xid_class[x] == GS_XID_IGNORED)
                q->xid_class[x] = GS_XID_COUNTED;
        q->checks = 1;
    } else if (all_disabled && any_enabled) {
        /* only the enabled XIDs are checked */
        for (size_t x = 0; x < GS_HEALTH_XID_MAX; x++)
            q->xid_class[x] = enable[x] ? GS_XID_CRITICAL : GS_XID_IGNORED;
        q->checks = 1;
    } else if (all_disabled) {
        q->checks = 0;
    } else {
        for (size_t x = 0; x < GS_HEALTH_XID_MAX; x++)
            if (enable[x])
                q->xid_class[x] = GS_XID_CRITICAL;
    }
    return 0;
}

int gs_health_policy_dp(gs_health_policy *p, const char *disable, const char *enable,
                        gs_error *err)
{
    gs_health_policy q = *p;
    if (apply_dp(&q, disable ? disable : "", disable ? strlen(disable) : 0, enable ? enable : "",
                 enable ? strlen(enable) : 0, err) != 0)
        return -1;
    *p = q;
    return 0;
}

/* <n>ms|s|m|h -> milliseconds in 1..DURATION_MAX_MS. */
static int duration(const char *s, size_t len, const char *key, int64_t *out, gs_error *err)
{
    size_t i = 0;
    int64_t v = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        v = v * 10 + (s[i] - '0');
        if (v > DURATION_MAX_MS)
            goto bad;
        i++;
    }
    if (i == 0)
        goto bad;
    int64_t unit;
    size_t rest = len - i;
    if (rest == 2 && s[i] == 'm' && s[i + 1] == 's')
        unit = 1;
    else if (rest == 1 && s[i] == 's')
        unit = 1000;
    else if (rest == 1 && s[i] == 'm')
        unit = 60 * 1000;
    else if (rest == 1 && s[i] == 'h')
        unit = 3600 * 1000;
    else
        goto bad;
    if (v == 0 || v > DURATION_MAX_MS / unit)
        goto bad;
    *out = v * unit;
    return 0;
bad:
    return gs_fail(err, GS_ERR_INVALID, "%s=%.*s: a duration from 1ms to 168h was expected "
                                        "(<n>ms, <n>s, <n>m or <n>h)",
                   key, (int)(len > 40 ? 40 : len), s);
}

int gs_health_policy_parse(gs_health_policy *p, const char *s, size_t len, gs_error *err)
{
    gs_health_policy q = *p;
    const char *dis = "", *en = "";
    size_t dlen = 0, elen = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && (s[i] == ';' || s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
            i++;
        if (i >= len)
            break;
        size_t start = i;
        while (i < len && s[i] != ';' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n')
            i++;
        const char *item = s + start;
        size_t ilen = i - start;
        const char *eq = memchr(item, '=', ilen);
        if (!eq)
            return gs_fail(err, GS_ERR_INVALID, "health policy item \"%.*s\" is not key=value",
                           (int)(ilen > 40 ? 40 : ilen), item);
        size_t klen = (size_t)(eq - item);
        const char *val = eq + 1;
        size_t vlen = ilen - klen - 1;
        char key[16];
        if (klen == 0 || klen >= sizeof key)
            goto unknown;
        memcpy(key, item, klen);
        key[klen] = '\0';
        if (strcmp(key, "ignore") == 0 || strcmp(key, "critical") == 0 ||
            strcmp(key, "counted") == 0) {
            unsigned char set[GS_HEALTH_XID_MAX] = {0};
            if (xid_list(val, vlen, key, set, err) != 0)
                return -1;
            gs_xid_class c = key[0] == 'i' ? GS_XID_IGNORED
                             : key[1] == 'r' ? GS_XID_CRITICAL
                                             : GS_XID_COUNTED;
            for (size_t x = 0; x < GS_HEALTH_XID_MAX; x++)
                if (set[x])
                    q.xid_class[x] = (unsigned char)c;
        } else if (strcmp(key, "threshold") == 0) {
            unsigned long v = 0;
            size_t k = 0;
            while (k < vlen && val[k] >= '0' && val[k] <= '9' && v <= THRESHOLD_MAX)
                v = v * 10 + (unsigned long)(val[k++] - '0');
            if (k == 0 || k != vlen || v < 1 || v > THRESHOLD_MAX)
                return gs_fail(err, GS_ERR_INVALID,
                               "threshold=%.*s: a count from 1 to %d was expected",
                               (int)(vlen > 40 ? 40 : vlen), val, THRESHOLD_MAX);
            q.threshold = (unsigned)v;
        } else if (strcmp(key, "window") == 0) {
            if (duration(val, vlen, key, &q.window_ms, err) != 0)
                return -1;
        } else if (strcmp(key, "probe") == 0) {
            if (duration(val, vlen, key, &q.probe_interval_ms, err) != 0)
                return -1;
        } else if (strcmp(key, "quiet") == 0) {
            if (duration(val, vlen, key, &q.quiet_ms, err) != 0)
                return -1;
        } else if (strcmp(key, "disable") == 0) {
            dis = val, dlen = vlen; /* applied together with enable=, as the plugin does */
        } else if (strcmp(key, "enable") == 0) {
            en = val, elen = vlen;
        } else {
            goto unknown;
        }
        continue;
    unknown:
        return gs_fail(err, GS_ERR_INVALID,
                       "unknown health policy key \"%.*s\" (ignore, critical, counted, "
                       "threshold, window, probe, quiet, disable, enable)",
                       (int)(klen > 40 ? 40 : klen), item);
    }
    if ((dlen || elen) && apply_dp(&q, dis, dlen, en, elen, err) != 0)
        return -1;
    *p = q;
    return 0;
}

/* ---- the state machine ------------------------------------------------------------------- */

struct gs_health {
    gs_health_policy policy;
    size_t n;
    gs_health_device *dev;
    int64_t *hist;  /* threshold times per device: the counted XIDs in the window (a ring) */
    unsigned *hist_n, *hist_head;
    uint64_t generation;
};

static void when(int64_t t, char *buf, size_t cap)
{
    if (t >= INT64_C(1000000000000)) { /* epoch milliseconds (after 2001) */
        time_t sec = (time_t)(t / 1000);
        struct tm tm;
        gmtime_r(&sec, &tm);
        strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
    } else {
        snprintf(buf, cap, "t=%" PRId64 ".%03ds", t / 1000, (int)((t % 1000 + 1000) % 1000));
    }
}

static void dur(int64_t ms, char *buf, size_t cap)
{
    if (ms % 3600000 == 0)
        snprintf(buf, cap, "%" PRId64 "h", ms / 3600000);
    else if (ms % 60000 == 0)
        snprintf(buf, cap, "%" PRId64 "m", ms / 60000);
    else if (ms % 1000 == 0)
        snprintf(buf, cap, "%" PRId64 "s", ms / 1000);
    else
        snprintf(buf, cap, "%" PRId64 "ms", ms);
}

gs_health *gs_health_new(const gs_nvml_inventory *inv, const gs_health_policy *policy)
{
    gs_health *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->policy = *policy;
    if (h->policy.threshold < 1)
        h->policy.threshold = 1;
    size_t n = 0;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        n += g->mig_current == 1 && g->n_mig ? g->n_mig : 1;
    }
    h->n = n;
    h->dev = calloc(n ? n : 1, sizeof *h->dev);
    h->hist = calloc((n ? n : 1) * h->policy.threshold, sizeof *h->hist);
    h->hist_n = calloc(n ? n : 1, sizeof *h->hist_n);
    h->hist_head = calloc(n ? n : 1, sizeof *h->hist_head);
    if (!h->dev || !h->hist || !h->hist_n || !h->hist_head) {
        gs_health_free(h);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const gs_nvml_gpu *g = &inv->gpus[i];
        size_t per = g->mig_current == 1 && g->n_mig ? g->n_mig : 0;
        for (size_t j = 0; j < (per ? per : 1); j++, k++) {
            gs_health_device *d = &h->dev[k];
            d->gpu = (int)i;
            d->mig = per ? (int)j : -1;
            d->gpu_instance_id = per ? g->mig[j].gpu_instance_id : ~0u;
            d->compute_instance_id = per ? g->mig[j].compute_instance_id : ~0u;
            snprintf(d->uuid, sizeof d->uuid, "%s", per ? g->mig[j].uuid : g->uuid);
            d->healthy = 1;
            d->last_xid = -1;
            d->probe_ok = -1;
            if (g->lost) {
                d->healthy = 0;
                snprintf(d->reason, sizeof d->reason, "lost at discovery: %s", g->lost_reason);
                d->next_probe_ms = INT64_MIN; /* due at once */
                d->last_bad_ms = INT64_MIN / 2;
            }
        }
    }
    return h;
}

void gs_health_free(gs_health *h)
{
    if (!h)
        return;
    free(h->dev);
    free(h->hist);
    free(h->hist_n);
    free(h->hist_head);
    free(h);
}

size_t gs_health_count(const gs_health *h) { return h->n; }
uint64_t gs_health_generation(const gs_health *h) { return h->generation; }

const gs_health_device *gs_health_get(const gs_health *h, size_t i)
{
    return i < h->n ? &h->dev[i] : NULL;
}

long gs_health_find(const gs_health *h, int gpu, int mig)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->dev[i].gpu == gpu && h->dev[i].mig == mig)
            return (long)i;
    return -1;
}

size_t gs_health_unhealthy(const gs_health *h)
{
    size_t c = 0;
    for (size_t i = 0; i < h->n; i++)
        c += !h->dev[i].healthy;
    return c;
}

/* Something bad at now: unhealthy (a transition when it was healthy), or kept unhealthy with
 * its quiet period restarted. Returns 1 on a transition. */
static int mark_bad(gs_health *h, size_t i, const char *reason, int64_t now)
{
    gs_health_device *d = &h->dev[i];
    d->last_bad_ms = now;
    d->probe_ok = -1; /* a probe from before this does not count */
    if (!d->healthy) {
        snprintf(d->reason, sizeof d->reason, "%s", reason);
        return 0;
    }
    d->healthy = 0;
    snprintf(d->reason, sizeof d->reason, "%s", reason);
    d->since_ms = now;
    d->transitions++;
    d->next_probe_ms = now + h->policy.probe_interval_ms;
    d->probe_reason[0] = '\0';
    h->hist_n[i] = h->hist_head[i] = 0;
    h->generation++;
    return 1;
}

static int mark_good(gs_health *h, size_t i, int64_t now)
{
    gs_health_device *d = &h->dev[i];
    if (d->healthy)
        return 0;
    d->healthy = 1;
    d->reason[0] = '\0';
    d->probe_reason[0] = '\0';
    d->since_ms = now;
    d->transitions++;
    d->probe_ok = -1;
    h->hist_n[i] = h->hist_head[i] = 0;
    h->generation++;
    return 1;
}

/* A counted XID on device i: in the ring; the count within the window. */
static unsigned count_xid(gs_health *h, size_t i, int64_t now)
{
    unsigned t = h->policy.threshold;
    int64_t *ring = h->hist + i * t;
    ring[h->hist_head[i]] = now;
    h->hist_head[i] = (h->hist_head[i] + 1) % t;
    if (h->hist_n[i] < t)
        h->hist_n[i]++;
    unsigned c = 0;
    for (unsigned k = 0; k < h->hist_n[i]; k++)
        if (now - ring[k] < h->policy.window_ms)
            c++;
    return c;
}

static int event_matches(const gs_health_device *d, const gs_nvml_event *ev)
{
    if (ev->gpu < 0)
        return 1; /* the device is unknown: every device, as NVIDIA's plugin does */
    if (d->gpu != ev->gpu)
        return 0;
    if (d->mig < 0 || ev->gpu_instance_id == ~0u || ev->compute_instance_id == ~0u)
        return 1;
    if (ev->mig >= 0)
        return d->mig == ev->mig;
    return d->gpu_instance_id == ev->gpu_instance_id &&
           d->compute_instance_id == ev->compute_instance_id;
}

size_t gs_health_event(gs_health *h, const gs_nvml_event *ev, int64_t now)
{
    if (!h->policy.checks || !(ev->type & GS_NVML_EVENT_XID))
        return 0;
    gs_xid_class c = gs_health_xid_class(&h->policy, ev->xid);
    const char *meaning = gs_health_xid_meaning(ev->xid);
    char at[40], what[128], reason[GS_HEALTH_REASON_MAX];
    when(now, at, sizeof at);
    if (meaning)
        snprintf(what, sizeof what, "XID %llu (%s)", ev->xid, meaning);
    else
        snprintf(what, sizeof what, "XID %llu", ev->xid);
    size_t turned = 0;
    for (size_t i = 0; i < h->n; i++) {
        gs_health_device *d = &h->dev[i];
        if (!event_matches(d, ev))
            continue;
        d->last_xid = (long long)ev->xid;
        d->last_xid_ms = now;
        if (c == GS_XID_IGNORED)
            continue;
        if (c == GS_XID_CRITICAL) {
            snprintf(reason, sizeof reason, "%s at %s", what, at);
            turned += (size_t)mark_bad(h, i, reason, now);
            continue;
        }
        if (!d->healthy) { /* while unhealthy any checked XID restarts the quiet period */
            d->last_bad_ms = now;
            d->probe_ok = -1;
            continue;
        }
        unsigned n = count_xid(h, i, now);
        if (n >= h->policy.threshold) {
            char win[24];
            dur(h->policy.window_ms, win, sizeof win);
            snprintf(reason, sizeof reason, "%s %u times within %s, the last at %s", what, n,
                     win, at);
            turned += (size_t)mark_bad(h, i, reason, now);
        }
    }
    return turned;
}

size_t gs_health_registration(gs_health *h, int gpu, gs_nvml_reg reg, const char *reason,
                              int64_t now)
{
    if (!h->policy.checks || reg != GS_NVML_REG_FAILED)
        return 0;
    char at[40], why[GS_HEALTH_REASON_MAX];
    when(now, at, sizeof at);
    snprintf(why, sizeof why, "health events could not be registered: %s at %s",
             reason ? reason : "unknown reason", at);
    size_t turned = 0;
    for (size_t i = 0; i < h->n; i++)
        if (h->dev[i].gpu == gpu)
            turned += (size_t)mark_bad(h, i, why, now);
    return turned;
}

size_t gs_health_wait_error(gs_health *h, const char *reason, int64_t now)
{
    if (!h->policy.checks)
        return 0;
    char at[40], why[GS_HEALTH_REASON_MAX];
    when(now, at, sizeof at);
    snprintf(why, sizeof why, "health checks failing: %s at %s",
             reason ? reason : "unknown reason", at);
    size_t turned = 0;
    for (size_t i = 0; i < h->n; i++)
        turned += (size_t)mark_bad(h, i, why, now);
    return turned;
}

size_t gs_health_probe_due(gs_health *h, int64_t now, size_t *out, size_t cap)
{
    size_t c = 0;
    for (size_t i = 0; i < h->n && c < cap; i++) {
        gs_health_device *d = &h->dev[i];
        if (d->healthy || d->next_probe_ms > now)
            continue;
        out[c++] = i;
        d->next_probe_ms = now + h->policy.probe_interval_ms;
    }
    return c;
}

static int quiet_over(const gs_health *h, const gs_health_device *d, int64_t now)
{
    return now - d->last_bad_ms >= h->policy.quiet_ms;
}

int gs_health_probe_result(gs_health *h, size_t i, int ok, const char *reason, int64_t now)
{
    if (i >= h->n)
        return 0;
    gs_health_device *d = &h->dev[i];
    if (d->healthy)
        return 0;
    if (!ok) {
        d->probe_ok = 0;
        d->last_bad_ms = now; /* the quiet period starts again after the device answers */
        snprintf(d->probe_reason, sizeof d->probe_reason, "%s",
                 reason ? reason : "probe failed");
        return 0;
    }
    d->probe_ok = 1;
    d->probe_reason[0] = '\0';
    if (quiet_over(h, d, now))
        return mark_good(h, i, now);
    return 0;
}

size_t gs_health_tick(gs_health *h, int64_t now)
{
    size_t turned = 0;
    for (size_t i = 0; i < h->n; i++) {
        gs_health_device *d = &h->dev[i];
        if (!d->healthy && d->probe_ok == 1 && quiet_over(h, d, now))
            turned += (size_t)mark_good(h, i, now);
    }
    return turned;
}
