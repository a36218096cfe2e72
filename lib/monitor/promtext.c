/*
 * promtext.c - the monitor's utilization input (monitor.h, "utilization input"): GPU
 * utilization samples from dcgm-exporter's Prometheus text exposition (format 0.0.4) and
 * from a Prometheus server's /api/v1/query JSON answer (through the library's JSON reader).
 *
 * The text reader is strict and linear: every line is lexed whole (comments, HELP and TYPE
 * lines, names, label sets with their escapes, values, timestamps), so a malformed scrape is
 * refused at its line:col whichever family the bad line belongs to; but only the two
 * utilization families decode labels or allocate. Other families cost one pass over their
 * bytes. Positions: 1-based lines, columns in bytes.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/monitor.h"
#include "util/json_int.h"

#define DEF_MAX_LINE 65536u
#define DEF_MAX_LABELS 64u
#define DEF_MAX_SERIES 1000000u

/* DCGM's "no data" sentinels: int32 blank base 0x7ffffff0, int64 0x7ffffffffffffff0, the
 * FP64 blank 140737488355328.0 (2^47); anything from the smallest of them up is not data. */
#define DCGM_BLANK_MIN 2147483632.0

const char *gs_util_metric_name(gs_util_metric m)
{
    switch (m) {
    case GS_UTIL_GPU_UTIL: return "DCGM_FI_DEV_GPU_UTIL";
    case GS_UTIL_GR_ENGINE_ACTIVE: return "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
    default: return "";
    }
}

static gs_util_metric metric_of(const char *s, size_t n)
{
    if (n == 20 && memcmp(s, "DCGM_FI_DEV_GPU_UTIL", 20) == 0)
        return GS_UTIL_GPU_UTIL;
    if (n == 29 && memcmp(s, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 29) == 0)
        return GS_UTIL_GR_ENGINE_ACTIVE;
    return GS_UTIL_NONE;
}

void gs_util_set_init(gs_util_set *s)
{
    memset(s, 0, sizeof *s);
    gs_arena_init(&s->arena, 0);
}

void gs_util_set_free(gs_util_set *s)
{
    free(s->v);
    gs_arena_free(&s->arena);
    memset(s, 0, sizeof *s);
}

void gs_util_set_reset(gs_util_set *s)
{
    s->n = 0;
    s->series = 0;
    s->dropped = 0;
    gs_arena_reset(&s->arena);
}

static void limits_of(const gs_util_limits *lim, gs_util_limits *out)
{
    out->max_line = lim && lim->max_line ? lim->max_line : DEF_MAX_LINE;
    out->max_labels = lim && lim->max_labels ? lim->max_labels : DEF_MAX_LABELS;
    out->max_series = lim && lim->max_series ? lim->max_series : DEF_MAX_SERIES;
}

/* ---------------------------------------------------------------- labels -> sample */
enum { K_NODE, K_UUID, K_DEVICE, K_MODEL, K_PROFILE, K_GI, K_GPU, K_NS, K_POD, K_CONTAINER, K_COUNT };

/* The kind of label `name` and its rank among the spellings of that kind (the highest
 * present wins); -1 for labels that are not read. */
static int label_kind(const char *n, size_t len, int *rank)
{
    static const struct {
        const char *name;
        int kind, rank;
    } tab[] = {
        {"Hostname", K_NODE, 3},          {"hostname", K_NODE, 3},
        {"node", K_NODE, 1},              {"UUID", K_UUID, 2},
        {"uuid", K_UUID, 1},              {"device", K_DEVICE, 1},
        {"modelName", K_MODEL, 1},        {"GPU_I_PROFILE", K_PROFILE, 1},
        {"GPU_I_ID", K_GI, 1},            {"gpu", K_GPU, 1},
        {"exported_namespace", K_NS, 3},  {"namespace", K_NS, 2},
        {"pod_namespace", K_NS, 1},       {"exported_pod", K_POD, 3},
        {"pod", K_POD, 2},                {"pod_name", K_POD, 1},
        {"exported_container", K_CONTAINER, 3}, {"container", K_CONTAINER, 2},
        {"container_name", K_CONTAINER, 1},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strlen(tab[i].name) == len && memcmp(tab[i].name, n, len) == 0) {
            *rank = tab[i].rank;
            return tab[i].kind;
        }
    }
    return -1;
}

typedef struct pick {
    const char *v[K_COUNT];
    size_t n[K_COUNT];
    int rank[K_COUNT];
    int pos[K_COUNT]; /* text: column of the value; json: index of the label */
} pick;

/* One reading round over one input: where it writes, for taking the input back on error. */
typedef struct rd_t {
    gs_util_set *s;
    const char *file;
    gs_error *err;
    size_t n0;
    uint64_t series0, dropped0;
    const char *last[K_COUNT]; /* the previous sample's strings, reused when equal */
} rd_t;

static const char *intern(rd_t *r, int k, const char *v, size_t n)
{
    if (n == 0)
        return "";
    const char *l = r->last[k];
    if (l && strlen(l) == n && memcmp(l, v, n) == 0)
        return l;
    char *c = gs_arena_strndup(&r->s->arena, v, n);
    if (c)
        r->last[k] = c;
    return c;
}

/* Decimal 0..1e6 (a GPU index, a GI id); -2 when not one. */
static int32_t small_uint(const char *v, size_t n)
{
    if (n == 0 || n > 7)
        return -2;
    int32_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -2;
        x = x * 10 + (v[i] - '0');
    }
    return x;
}

/* The utilization (0..1) a raw value stands for; false when it is no data. */
static bool util_of(gs_util_metric m, double x, double *u)
{
    if (!isfinite(x) || x < 0 || x >= DCGM_BLANK_MIN)
        return false;
    if (m == GS_UTIL_GPU_UTIL) {
        if (x > 100)
            return false;
        *u = x / 100.0;
        return true;
    }
    if (x > 1.05) /* profiling ratios overshoot 1 by sampling noise; beyond that: not data */
        return false;
    *u = x > 1 ? 1 : x;
    return true;
}

/* Append one sample from the picked labels; bad_at(kind) reports a malformed gpu/GI label.
 * Returns 0, or -1 with err set (badcode/line/col given by the caller through where). */
static int emit(rd_t *r, gs_util_metric m, const pick *pk, double x, int64_t ts, uint32_t line,
                int *bad_kind)
{
    gs_util_set *s = r->s;
    *bad_kind = -1;
    int32_t gpu = -1, gi = -1;
    if (pk->v[K_GPU] && pk->n[K_GPU]) {
        gpu = small_uint(pk->v[K_GPU], pk->n[K_GPU]);
        if (gpu < 0) {
            *bad_kind = K_GPU;
            return -1;
        }
    }
    if (pk->v[K_GI] && pk->n[K_GI]) {
        gi = small_uint(pk->v[K_GI], pk->n[K_GI]);
        if (gi < 0) {
            *bad_kind = K_GI;
            return -1;
        }
    }
    double u;
    if (!util_of(m, x, &u)) {
        s->dropped++;
        return 0;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 64;
        gs_util_sample *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return gs_fail(r->err, GS_ERR_NOMEM, "out of memory reading %s", r->file);
        s->v = nv;
        s->cap = nc;
    }
    gs_util_sample *o = &s->v[s->n];
    const char **dst[K_COUNT] = {[K_NODE] = &o->node,       [K_UUID] = &o->uuid,
                                 [K_DEVICE] = &o->device,   [K_MODEL] = &o->model,
                                 [K_PROFILE] = &o->mig_profile, [K_NS] = &o->ns,
                                 [K_POD] = &o->pod,         [K_CONTAINER] = &o->container};
    for (int k = 0; k < K_COUNT; k++) {
        if (!dst[k])
            continue;
        *dst[k] = pk->v[k] ? intern(r, k, pk->v[k], pk->n[k]) : "";
        if (!*dst[k])
            return gs_fail(r->err, GS_ERR_NOMEM, "out of memory reading %s", r->file);
    }
    o->gpu = gpu;
    o->mig_instance = gi;
    o->util = u;
    o->ts_ms = ts;
    o->line = line;
    o->metric = (uint8_t)m;
    s->n++;
    return 0;
}

/* ---------------------------------------------------------------- numbers */
/* A sample value as the text format writes it: a decimal float, NaN, Inf, +Inf or -Inf. */
static bool parse_value(const char *p, size_t n, double *out)
{
    if (n == 3 && memcmp(p, "NaN", 3) == 0) {
        *out = NAN;
        return true;
    }
    if ((n == 3 && memcmp(p, "Inf", 3) == 0) || (n == 4 && memcmp(p, "+Inf", 4) == 0)) {
        *out = INFINITY;
        return true;
    }
    if (n == 4 && memcmp(p, "-Inf", 4) == 0) {
        *out = -INFINITY;
        return true;
    }
    if (n == 0 || n > 64)
        return false;
    size_t i = 0, digits = 0;
    if (p[i] == '+' || p[i] == '-')
        i++;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        i++, digits++;
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && p[i] >= '0' && p[i] <= '9')
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9')
            i++, ed++;
        if (ed == 0)
            return false;
    }
    if (i != n)
        return false;
    char buf[72];
    memcpy(buf, p, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

/* An integer timestamp in milliseconds (sign, at most 18 digits). */
static bool parse_ts(const char *p, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    if (n && (p[0] == '+' || p[0] == '-'))
        neg = p[i++] == '-';
    if (i == n || n - i > 18)
        return false;
    int64_t x = 0;
    for (; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        x = x * 10 + (p[i] - '0');
    }
    *out = neg ? -x : x;
    return true;
}

/* ---------------------------------------------------------------- text format */
typedef struct tx {
    rd_t r;
    gs_util_limits lim;
    const char *line_start;
    uint32_t line;
    char *scratch; /* decoded label values of one line (max_line bytes) */
    /* families named by a TYPE line: open addressing over (pointer, length) spans */
    struct { const char *p; uint32_t n; } *types;
    uint32_t ntypes, tcap;
} tx;

static int tx_fail(tx *t, gs_code code, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int tx_fail(tx *t, gs_code code, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(t->r.err, code, t->r.file, (int)t->line, (int)(at - t->line_start) + 1, NULL,
                  fmt, ap);
    va_end(ap);
    return -1;
}

static bool name_start(unsigned char c) { return (c | 32) >= 'a' && (c | 32) <= 'z' ? true : c == '_'; }
static bool name_char(unsigned char c) { return name_start(c) || (c >= '0' && c <= '9'); }

static const char *blanks(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* A metric name at p ([a-zA-Z_:][a-zA-Z0-9_:]*): its end, or p when there is none. */
static const char *metric_name(const char *p, const char *e)
{
    const char *q = p;
    if (q < e && (name_start((unsigned char)*q) || *q == ':'))
        for (q++; q < e && (name_char((unsigned char)*q) || *q == ':'); q++)
            ;
    return q;
}

static uint32_t span_hash(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

/* Note a TYPE line for family p[0..n): false when one was seen before (-1 on OOM). */
static int type_once(tx *t, const char *p, size_t n)
{
    if ((t->ntypes + 1) * 2 > t->tcap) {
        uint32_t nc = t->tcap ? t->tcap * 2 : 64;
        void *nt = calloc(nc, sizeof *t->types);
        if (!nt)
            return -1;
        __typeof__(t->types) old = t->types;
        uint32_t oc = t->tcap;
        t->types = nt;
        t->tcap = nc;
        for (uint32_t i = 0; i < oc; i++) {
            if (!old[i].p)
                continue;
            uint32_t j = span_hash(old[i].p, old[i].n) & (nc - 1);
            while (t->types[j].p)
                j = (j + 1) & (nc - 1);
            t->types[j] = old[i];
        }
        free(old);
    }
    uint32_t j = span_hash(p, n) & (t->tcap - 1);
    for (; t->types[j].p; j = (j + 1) & (t->tcap - 1))
        if (t->types[j].n == n && memcmp(t->types[j].p, p, n) == 0)
            return 0;
    t->types[j].p = p;
    t->types[j].n = (uint32_t)n;
    t->ntypes++;
    return 1;
}

static int tx_comment(tx *t, const char *p, const char *e)
{
    p = blanks(p + 1, e);
    bool help = e - p > 4 && memcmp(p, "HELP", 4) == 0 && (p[4] == ' ' || p[4] == '\t');
    bool type = e - p > 4 && memcmp(p, "TYPE", 4) == 0 && (p[4] == ' ' || p[4] == '\t');
    if (!help && !type)
        return 0; /* a comment */
    p = blanks(p + 4, e);
    const char *ne = metric_name(p, e);
    if (ne == p)
        return tx_fail(t, GS_ERR_PARSE, p, "expected a metric name after # %s", help ? "HELP" : "TYPE");
    if (ne < e && *ne != ' ' && *ne != '\t')
        return tx_fail(t, GS_ERR_PARSE, ne, "unexpected character '%c' in a metric name", *ne);
    const char *name = p;
    size_t nlen = (size_t)(ne - p);
    p = blanks(ne, e);
    if (help) {
        for (; p < e; p++) {
            if (*p != '\\')
                continue;
            if (p + 1 == e || (p[1] != '\\' && p[1] != 'n'))
                return tx_fail(t, GS_ERR_PARSE, p, "bad escape in HELP text (only \\\\ and \\n)");
            p++;
        }
        return 0;
    }
    const char *we = p;
    while (we < e && *we != ' ' && *we != '\t')
        we++;
    static const char *const kinds[] = {"counter", "gauge", "histogram", "summary", "untyped"};
    bool ok = false;
    for (size_t i = 0; i < 5 && !ok; i++)
        ok = strlen(kinds[i]) == (size_t)(we - p) && memcmp(kinds[i], p, (size_t)(we - p)) == 0;
    if (!ok)
        return tx_fail(t, GS_ERR_PARSE, p,
                       "expected counter, gauge, histogram, summary or untyped after # TYPE %.*s",
                       (int)(nlen > 128 ? 128 : nlen), name);
    const char *rest = blanks(we, e);
    if (rest != e)
        return tx_fail(t, GS_ERR_PARSE, rest, "unexpected text after the metric type");
    int once = type_once(t, name, nlen);
    if (once < 0)
        return gs_fail(t->r.err, GS_ERR_NOMEM, "out of memory reading %s", t->r.file);
    if (once == 0)
        return tx_fail(t, GS_ERR_PARSE, name, "second TYPE line for %.*s",
                       (int)(nlen > 128 ? 128 : nlen), name);
    return 0;
}

static int tx_sample(tx *t, const char *p, const char *e)
{
    const char *ne = metric_name(p, e);
    if (ne == p)
        return tx_fail(t, GS_ERR_PARSE, p, "expected a metric name, a comment or a blank line");
    if (++t->r.s->series - t->r.series0 > t->lim.max_series)
        return tx_fail(t, GS_ERR_LIMIT, p, "more than %u series", t->lim.max_series);
    gs_util_metric m = metric_of(p, (size_t)(ne - p));
    pick pk;
    memset(&pk, 0, sizeof pk);
    char *sc = t->scratch;
    struct { const char *p; size_t n; } seen[64];
    uint32_t nseen = 0, nlabels = 0;
    p = ne;
    const char *lb = blanks(ne, e);
    if (lb < e && *lb == '{') {
        p = lb + 1;
        for (;;) {
            p = blanks(p, e);
            if (p < e && *p == '}') {
                p++;
                break;
            }
            const char *ln = p;
            if (p < e && name_start((unsigned char)*p))
                for (p++; p < e && name_char((unsigned char)*p); p++)
                    ;
            if (p == ln)
                return tx_fail(t, GS_ERR_PARSE, p, p == e ? "label set not closed with '}'"
                                                          : "expected a label name or '}'");
            size_t lnl = (size_t)(p - ln);
            if (++nlabels > t->lim.max_labels)
                return tx_fail(t, GS_ERR_LIMIT, ln, "more than %u labels in one series",
                               t->lim.max_labels);
            p = blanks(p, e);
            if (p == e || *p != '=')
                return tx_fail(t, GS_ERR_PARSE, p, "expected '=' after label name %.*s",
                               (int)(lnl > 128 ? 128 : lnl), ln);
            p = blanks(p + 1, e);
            if (p == e || *p != '"')
                return tx_fail(t, GS_ERR_PARSE, p, "expected '\"' to open the value of label %.*s",
                               (int)(lnl > 128 ? 128 : lnl), ln);
            const char *vs = ++p;
            char *out = sc;
            for (;;) {
                if (p == e)
                    return tx_fail(t, GS_ERR_PARSE, vs - 1, "label value not closed with '\"'");
                char c = *p;
                if (c == '"')
                    break;
                if (c == '\\') {
                    if (p + 1 == e || (p[1] != '\\' && p[1] != '"' && p[1] != 'n'))
                        return tx_fail(t, GS_ERR_PARSE, p,
                                       "bad escape in a label value (only \\\\, \\\" and \\n)");
                    c = p[1] == 'n' ? '\n' : p[1];
                    p++;
                }
                if (m)
                    *out++ = c;
                p++;
            }
            p++;
            if (m) {
                /* duplicate label names are checked on the series that are read */
                for (uint32_t i = 0; i < nseen; i++)
                    if (seen[i].n == lnl && memcmp(seen[i].p, ln, lnl) == 0)
                        return tx_fail(t, GS_ERR_PARSE, ln, "label %.*s given twice",
                                       (int)(lnl > 128 ? 128 : lnl), ln);
                if (nseen < 64)
                    seen[nseen++] = (__typeof__(seen[0])){ln, lnl};
                int rank, k = label_kind(ln, lnl, &rank);
                if (k >= 0 && rank > pk.rank[k]) {
                    pk.v[k] = sc;
                    pk.n[k] = (size_t)(out - sc);
                    pk.rank[k] = rank;
                    pk.pos[k] = (int)(vs - t->line_start) + 1;
                }
                sc = out;
            }
            p = blanks(p, e);
            if (p < e && *p == ',') {
                p++;
                continue;
            }
            if (p < e && *p == '}') {
                p++;
                break;
            }
            return tx_fail(t, GS_ERR_PARSE, p, "expected ',' or '}' after a label value");
        }
    }
    const char *vb = blanks(p, e);
    if (vb == e)
        return tx_fail(t, GS_ERR_PARSE, e, "expected a value");
    if (vb == p && p[-1] != '}')
        return tx_fail(t, GS_ERR_PARSE, p, "expected a blank before the value");
    const char *ve = vb;
    while (ve < e && *ve != ' ' && *ve != '\t')
        ve++;
    double x;
    if (!parse_value(vb, (size_t)(ve - vb), &x))
        return tx_fail(t, GS_ERR_PARSE, vb, "bad value '%.*s' (a number, NaN, +Inf or -Inf)",
                       (int)(ve - vb > 64 ? 64 : ve - vb), vb);
    int64_t ts = 0;
    const char *tb = blanks(ve, e);
    if (tb < e) {
        const char *te = tb;
        while (te < e && *te != ' ' && *te != '\t')
            te++;
        if (!parse_ts(tb, (size_t)(te - tb), &ts))
            return tx_fail(t, GS_ERR_PARSE, tb, "bad timestamp (integer milliseconds)");
        const char *rest = blanks(te, e);
        if (rest < e)
            return tx_fail(t, GS_ERR_PARSE, rest, "unexpected text after the timestamp");
    }
    if (!m)
        return 0;
    int bad;
    if (emit(&t->r, m, &pk, x, ts, t->line, &bad) < 0) {
        if (bad < 0)
            return -1;
        return gs_error_set(t->r.err, GS_ERR_INVALID, t->r.file, (int)t->line, pk.pos[bad], NULL,
                            "label %s: expected a small unsigned integer",
                            bad == K_GPU ? "gpu" : "GPU_I_ID");
    }
    return 0;
}

static void rd_begin(rd_t *r, gs_util_set *s, const char *name, gs_error *err)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    r->file = name ? name : "";
    r->err = err;
    r->n0 = s->n;
    r->series0 = s->series;
    r->dropped0 = s->dropped;
}

static int rd_undo(rd_t *r)
{
    r->s->n = r->n0;
    r->s->series = r->series0;
    r->s->dropped = r->dropped0;
    return -1;
}

int gs_util_parse_promtext(gs_util_set *s, const char *name, const char *data, size_t len,
                           const gs_util_limits *lim, gs_error *err)
{
    tx t;
    memset(&t, 0, sizeof t);
    rd_begin(&t.r, s, name, err);
    limits_of(lim, &t.lim);
    t.scratch = malloc((size_t)t.lim.max_line + 1);
    if (!t.scratch)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", t.r.file);
    const char *p = data, *end = data + len;
    int rc = 0;
    for (t.line = 1; p < end && rc == 0; t.line++) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        t.line_start = p;
        if ((size_t)(e - p) > t.lim.max_line) {
            rc = tx_fail(&t, GS_ERR_LIMIT, p + t.lim.max_line, "line longer than %u bytes",
                         t.lim.max_line);
            break;
        }
        const char *bad = memchr(p, '\r', (size_t)(e - p));
        const char *nul = memchr(p, '\0', (size_t)(e - p));
        if (nul && (!bad || nul < bad))
            bad = nul;
        if (bad) {
            rc = tx_fail(&t, GS_ERR_PARSE, bad, *bad ? "carriage return (lines end with LF only)"
                                                     : "NUL byte");
            break;
        }
        size_t inv = gs_utf8_invalid_at(p, (size_t)(e - p));
        if (inv < (size_t)(e - p)) {
            rc = tx_fail(&t, GS_ERR_PARSE, p + inv, "invalid UTF-8");
            break;
        }
        const char *q = blanks(p, e);
        if (q < e)
            rc = *q == '#' ? tx_comment(&t, q, e) : tx_sample(&t, q, e);
        p = e < end ? e + 1 : e;
    }
    free(t.scratch);
    free(t.types);
    return rc < 0 ? rd_undo(&t.r) : 0;
}

/* ---------------------------------------------------------------- Prometheus query JSON */
typedef struct qj {
    rd_t r;
    const char *data;
} qj;

static int qj_fail(qj *q, gs_code code, const gs_jv *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int qj_fail(qj *q, gs_code code, const gs_jv *at, const char *fmt, ...)
{
    int line = 0, col = 0;
    if (at)
        gs_json_where(q->data, 1, at, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(q->r.err, code, q->r.file, line, col, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static const gs_jv *qj_member(qj *q, const gs_jv *obj, const char *key, gs_jtype t, bool need,
                              const char *where)
{
    const gs_jv *v = gs_json_get(obj, key);
    if (!v) {
        if (need)
            qj_fail(q, GS_ERR_INVALID, obj, "%s: missing \"%s\"", where, key);
        return NULL;
    }
    if (v->t != t) {
        qj_fail(q, GS_ERR_INVALID, v, "%s.%s: expected %s, found %s", where, key,
                gs_json_type_name(t), gs_json_type_name((gs_jtype)v->t));
        return NULL;
    }
    return v;
}

static int qj_result(qj *q, const gs_jv *it, uint32_t idx, gs_util_metric dflt,
                     const gs_util_limits *lim)
{
    char where[48];
    snprintf(where, sizeof where, "data.result[%u]", idx);
    if (it->t != GS_JOBJ)
        return qj_fail(q, GS_ERR_INVALID, it, "%s: expected an object, found %s", where,
                       gs_json_type_name((gs_jtype)it->t));
    const gs_jv *met = qj_member(q, it, "metric", GS_JOBJ, true, where);
    if (!met)
        return -1;
    if (met->n > lim->max_labels)
        return qj_fail(q, GS_ERR_LIMIT, met, "%s.metric: more than %u labels", where,
                       lim->max_labels);
    q->r.s->series++;
    gs_util_metric m = dflt;
    pick pk;
    memset(&pk, 0, sizeof pk);
    for (uint32_t i = 0; i < met->n; i++) {
        const gs_jv *k = &met->kids[2 * i], *v = &met->kids[2 * i + 1];
        if (v->t != GS_JSTR)
            return qj_fail(q, GS_ERR_INVALID, v, "%s.metric.%s: expected a string, found %s",
                           where, k->s, gs_json_type_name((gs_jtype)v->t));
        if (strcmp(k->s, "__name__") == 0) {
            m = metric_of(v->s, v->n);
            continue;
        }
        int rank, kind = label_kind(k->s, k->n, &rank);
        if (kind >= 0 && rank > pk.rank[kind]) {
            pk.v[kind] = v->s;
            pk.n[kind] = v->n;
            pk.rank[kind] = rank;
            pk.pos[kind] = (int)i;
        }
    }
    if (gs_json_get(it, "histogram") && !gs_json_get(it, "value"))
        return qj_fail(q, GS_ERR_INVALID, it, "%s: a native histogram, not a sample value", where);
    const gs_jv *val = qj_member(q, it, "value", GS_JARR, true, where);
    if (!val)
        return -1;
    if (val->n != 2 || val->kids[0].t != GS_JNUM || val->kids[1].t != GS_JSTR)
        return qj_fail(q, GS_ERR_INVALID, val,
                       "%s.value: expected [timestamp, \"value\"] (a number and a string)", where);
    if (m == GS_UTIL_NONE)
        return 0;
    double x;
    if (!parse_value(val->kids[1].s, val->kids[1].n, &x))
        return qj_fail(q, GS_ERR_INVALID, &val->kids[1], "%s.value[1]: bad value \"%.*s\"", where,
                       (int)(val->kids[1].n > 64 ? 64 : val->kids[1].n), val->kids[1].s);
    double tsec = strtod(val->kids[0].s, NULL);
    int64_t ts = isfinite(tsec) && fabs(tsec) < 9.2e15 ? (int64_t)llround(tsec * 1000.0) : 0;
    int bad;
    if (emit(&q->r, m, &pk, x, ts, idx + 1, &bad) < 0) {
        if (bad < 0)
            return -1;
        return qj_fail(q, GS_ERR_INVALID, &met->kids[2 * pk.pos[bad] + 1],
                       "%s.metric.%s: expected a small unsigned integer", where,
                       met->kids[2 * pk.pos[bad]].s);
    }
    return 0;
}

int gs_util_parse_query_json(gs_util_set *s, const char *name, const char *data, size_t len,
                             gs_util_metric metric, const gs_util_limits *lim, gs_error *err)
{
    qj q;
    memset(&q, 0, sizeof q);
    rd_begin(&q.r, s, name, err);
    q.data = data;
    gs_util_limits l;
    limits_of(lim, &l);
    gs_json_limits jl = {.max_depth = 8,
                         .max_items = l.max_series > l.max_labels ? l.max_series : l.max_labels,
                         .max_string = l.max_line,
                         .unique_keys = true};
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv root;
    int rc = -1;
    if (gs_json_parse(q.r.file, 1, data, len, &jl, &a, &root, err) < 0)
        goto out;
    if (root.t != GS_JOBJ) {
        qj_fail(&q, GS_ERR_INVALID, &root, "expected a Prometheus API answer (an object), found %s",
                gs_json_type_name((gs_jtype)root.t));
        goto out;
    }
    const gs_jv *st = qj_member(&q, &root, "status", GS_JSTR, true, "answer");
    if (!st)
        goto out;
    if (strcmp(st->s, "success") != 0) {
        const gs_jv *et = gs_json_get(&root, "errorType"), *em = gs_json_get(&root, "error");
        qj_fail(&q, GS_ERR_INVALID, st, "Prometheus answered status \"%.32s\": %.64s: %.300s",
                st->s, et && et->t == GS_JSTR ? et->s : "?", em && em->t == GS_JSTR ? em->s : "");
        goto out;
    }
    const gs_jv *d = qj_member(&q, &root, "data", GS_JOBJ, true, "answer");
    if (!d)
        goto out;
    const gs_jv *rt = qj_member(&q, d, "resultType", GS_JSTR, true, "data");
    if (!rt)
        goto out;
    if (strcmp(rt->s, "vector") != 0) {
        qj_fail(&q, GS_ERR_INVALID, rt,
                "data.resultType: expected \"vector\" (an instant query), found \"%.32s\"", rt->s);
        goto out;
    }
    const gs_jv *res = qj_member(&q, d, "result", GS_JARR, true, "data");
    if (!res)
        goto out;
    if (res->n > l.max_series) {
        qj_fail(&q, GS_ERR_LIMIT, res, "data.result: more than %u series", l.max_series);
        goto out;
    }
    for (uint32_t i = 0; i < res->n; i++)
        if (qj_result(&q, &res->kids[i], i, metric, &l) < 0)
            goto out;
    rc = 0;
out:
    gs_arena_free(&a);
    return rc < 0 ? rd_undo(&q.r) : 0;
}
