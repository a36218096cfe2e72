/*
 * watch.c - watch streams: a line splitter for the newline-delimited JSON the API server
 * writes, an event parser that reads a line with the JSON scanning primitives (no tree of
 * the object is built: its byte span is handed on), and gs_live_watch over
 * gs_live_stream (docs/live.md "Watch").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpusched/live.h"
#include "live/live_int.h"
#include "util/jscan_int.h"

#define MAX_LINE_DEFAULT ((size_t)16 << 20)
#define MAX_DEPTH 1000 /* nesting of an object inside an event */

const char *gs_live_watch_event_type_name(gs_live_watch_event_type t)
{
    switch (t) {
    case GS_LIVE_WATCH_ADDED: return "ADDED";
    case GS_LIVE_WATCH_MODIFIED: return "MODIFIED";
    case GS_LIVE_WATCH_DELETED: return "DELETED";
    case GS_LIVE_WATCH_BOOKMARK: return "BOOKMARK";
    case GS_LIVE_WATCH_ERROR: return "ERROR";
    }
    return "?";
}

/* ---------------------------------------------------------------- scanning helpers */

typedef struct scan {
    const char *line, *end;
    const char *bad; /* where it went wrong */
    const char *why;
} scan;

static int bad(scan *s, const char *at, const char *why)
{
    s->bad = at;
    s->why = why;
    return -1;
}

/* v at the first byte of a value: the byte after it, or NULL (s->bad set). */
static const char *value_end(scan *s, const char *v)
{
    const char *end = s->end, *b = NULL;
    if (v >= end)
        return bad(s, end, "a value is missing"), NULL;
    switch (*v) {
    case '{':
    case '[': {
        bool deep = false;
        const char *e = gs_js_skip(v, end, MAX_DEPTH, &b, &deep);
        if (!e)
            return bad(s, b, deep ? "nested too deeply" : "a malformed object or array"), NULL;
        return e;
    }
    case '"': {
        bool esc;
        const char *q = gs_js_str_end(v + 1, end, &esc, &b);
        if (!q)
            return bad(s, b, "a string is not closed or holds a control byte"), NULL;
        return q + 1;
    }
    case 't':
    case 'f':
    case 'n': {
        char k;
        const char *e = gs_js_literal(v, end, &k);
        if (!e)
            return bad(s, v, "not a JSON value"), NULL;
        return e;
    }
    default: {
        const char *e = gs_js_number(v, end, &b);
        if (!e)
            return bad(s, b ? b : v, "not a JSON value"), NULL;
        return e;
    }
    }
}

/* Decode the string value at v ('"') into buf (cap bytes, NUL-terminated). Truncated to
 * cap - 1 bytes at a character boundary when longer and `truncate`; otherwise too long is
 * an error. no_nul refuses "\u0000". */
static int str_value(scan *s, const char *v, const char *vend, char *buf, size_t cap, bool truncate, bool no_nul,
                     const char *what)
{
    if (v >= s->end || *v != '"')
        return bad(s, v, what);
    const char *body = v + 1;
    size_t n = (size_t)(vend - 1 - body);
    char stackbuf[512];
    char *out = n <= sizeof stackbuf ? stackbuf : malloc(n ? n : 1);
    if (!out)
        return bad(s, v, "out of memory");
    const char *b = NULL;
    int why = 0;
    long dn = gs_js_unescape_why(body, n, out, no_nul, &b, &why);
    if (dn < 0) {
        if (out != stackbuf)
            free(out);
        return bad(s, b ? b : v, why == GS_JSE_NUL ? "\\u0000 in a string" : "a bad escape in a string");
    }
    size_t len = (size_t)dn;
    if (!no_nul) { /* a message with a NUL byte: cut there */
        const char *z = memchr(out, '\0', len);
        if (z)
            len = (size_t)(z - out);
    }
    if (len >= cap) {
        if (!truncate) {
            if (out != stackbuf)
                free(out);
            return bad(s, v, what);
        }
        len = cap - 1;
        while (len && ((unsigned char)out[len] & 0xC0) == 0x80) /* not inside a character */
            len--;
    }
    memcpy(buf, out, len);
    buf[len] = '\0';
    if (out != stackbuf)
        free(out);
    return 0;
}

/* Decode a key (at '"') for comparison; keys longer than cap - 1 never match: *k = "". */
static int key_value(scan *s, const char *k, const char *kend, char *buf, size_t cap)
{
    size_t n = (size_t)(kend - k - 2);
    if (n >= cap * 6) { /* cannot decode into fewer than cap bytes: no key we look for */
        buf[0] = '\0';
        return 0;
    }
    char tmp[1536];
    const char *b = NULL;
    long dn = gs_js_unescape(k + 1, n, tmp, &b);
    if (dn < 0)
        return bad(s, b ? b : k, "a bad escape in a key");
    if ((size_t)dn >= cap || memchr(tmp, '\0', (size_t)dn)) {
        buf[0] = '\0';
        return 0;
    }
    memcpy(buf, tmp, (size_t)dn);
    buf[dn] = '\0';
    return 0;
}

/* Walk the members of the object at o ('{'): fn(ctx, key, value, value_end) for each.
 * Returns the byte after the object, or NULL (s->bad). */
typedef int (*member_fn)(scan *s, void *ctx, const char *key, const char *v, const char *vend);
static const char *each_member(scan *s, const char *o, member_fn fn, void *ctx)
{
    const char *end = s->end;
    if (o >= end || *o != '{')
        return bad(s, o, "not an object"), NULL;
    const char *p = gs_js_ws(o + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    for (;;) {
        if (p >= end || *p != '"')
            return bad(s, p, "a key is missing"), NULL;
        const char *kend = value_end(s, p);
        if (!kend)
            return NULL;
        char key[256];
        if (key_value(s, p, kend, key, sizeof key))
            return NULL;
        p = gs_js_ws(kend, end);
        if (p >= end || *p != ':')
            return bad(s, p, "':' is missing after a key"), NULL;
        const char *v = gs_js_ws(p + 1, end);
        const char *vend = value_end(s, v);
        if (!vend)
            return NULL;
        if (fn && fn(s, ctx, key, v, vend))
            return NULL;
        p = gs_js_ws(vend, end);
        if (p < end && *p == ',') {
            p = gs_js_ws(p + 1, end);
            continue;
        }
        if (p < end && *p == '}')
            return p + 1;
        return bad(s, p, "',' or '}' expected"), NULL;
    }
}

/* ---------------------------------------------------------------- the event */

typedef struct ev_ctx {
    gs_live_watch_event *ev;
    const char *obj, *obj_end;
    bool have_type, have_obj;
    bool in_annotations;
} ev_ctx;

static int on_annotation(scan *s, void *ctx, const char *key, const char *v, const char *vend)
{
    gs_live_watch_event *ev = ctx;
    if (ev->type == GS_LIVE_WATCH_BOOKMARK && !strcmp(key, "k8s.io/initial-events-end") && *v == '"') {
        char val[8];
        if (str_value(s, v, vend, val, sizeof val, true, false, "annotation"))
            return -1;
        ev->initial_events_end = !strcmp(val, "true");
    }
    return 0;
}

static int on_metadata(scan *s, void *ctx, const char *key, const char *v, const char *vend)
{
    gs_live_watch_event *ev = ctx;
    if (!strcmp(key, "resourceVersion")) {
        if (*v != '"')
            return bad(s, v, "metadata.resourceVersion is not a string");
        return str_value(s, v, vend, ev->resource_version, sizeof ev->resource_version, false, true,
                         "metadata.resourceVersion is longer than 127 bytes");
    }
    if (!strcmp(key, "annotations") && *v == '{')
        return each_member(s, v, on_annotation, ev) ? 0 : -1;
    return 0;
}

static int on_object(scan *s, void *ctx, const char *key, const char *v, const char *vend)
{
    gs_live_watch_event *ev = ctx;
    if (!strcmp(key, "metadata") && *v == '{')
        return each_member(s, v, on_metadata, ev) ? 0 : -1;
    if (ev->type != GS_LIVE_WATCH_ERROR)
        return 0;
    /* the Status of an ERROR event */
    if (!strcmp(key, "code") && *v != '"' && *v != '{' && *v != '[') {
        int64_t c;
        if (!gs_parse_i64(v, (size_t)(vend - v), &c) && c > 0 && c < 1000)
            ev->code = (int)c;
    } else if (!strcmp(key, "reason") && *v == '"') {
        return str_value(s, v, vend, ev->reason, sizeof ev->reason, true, false, "reason");
    } else if (!strcmp(key, "message") && *v == '"') {
        return str_value(s, v, vend, ev->message, sizeof ev->message, true, false, "message");
    }
    return 0;
}

static int on_event(scan *s, void *ctx, const char *key, const char *v, const char *vend)
{
    ev_ctx *e = ctx;
    if (!strcmp(key, "type")) {
        char t[16];
        if (*v != '"')
            return bad(s, v, "\"type\" is not a string");
        if (str_value(s, v, vend, t, sizeof t, false, true, "unknown event type"))
            return -1;
        static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
        e->ev->type = 0;
        for (int i = 0; i < 5; i++)
            if (!strcmp(t, names[i]))
                e->ev->type = (gs_live_watch_event_type)(i + 1);
        if (!e->ev->type)
            return bad(s, v, "unknown event type");
        e->have_type = true;
    } else if (!strcmp(key, "object")) {
        if (*v != '{')
            return bad(s, v, "\"object\" is not an object");
        e->obj = v;
        e->obj_end = vend;
        e->have_obj = true;
    }
    return 0;
}

int gs_live_watch_event_parse(const char *line, size_t len, gs_live_watch_event *ev, gs_error *err)
{
    memset(ev, 0, sizeof *ev);
    scan s = {line, line + len, NULL, NULL};
    ev_ctx e = {.ev = ev};
    const char *p = gs_js_ws(line, s.end);
    const char *after = each_member(&s, p, on_event, &e);
    if (after) {
        const char *q = gs_js_ws(after, s.end);
        if (q < s.end)
            bad(&s, q, "bytes after the event");
        else if (!e.have_type)
            bad(&s, p, "the event has no \"type\"");
        else if (!e.have_obj)
            bad(&s, p, "the event has no \"object\"");
        else if (each_member(&s, e.obj, on_object, ev)) {
            ev->object = e.obj;
            ev->object_len = (size_t)(e.obj_end - e.obj);
            return 0;
        }
    }
    memset(ev, 0, sizeof *ev);
    size_t off = s.bad && s.bad >= line && s.bad <= s.end ? (size_t)(s.bad - line) : 0;
    const char *why = s.why ? s.why : "malformed";
    return gs_error_set(err, !strcmp(why, "out of memory") ? GS_ERR_NOMEM : GS_ERR_PARSE, "watch event", 1,
                        (int)(off + 1 > 0x7fffffff ? 0x7fffffff : off + 1), NULL, "watch event: %s", why);
}

typedef struct rv_ctx {
    char *rv;
    size_t cap;
    bool found;
} rv_ctx;

static int on_list_md(scan *s, void *ctx, const char *key, const char *v, const char *vend)
{
    rv_ctx *r = ctx;
    if (strcmp(key, "resourceVersion") || *v != '"')
        return 0;
    if (str_value(s, v, vend, r->rv, r->cap, false, true, "resourceVersion too long"))
        return -1;
    r->found = true;
    return 0;
}

static int on_list_top(scan *s, void *ctx, const char *key, const char *v, const char *vend)
{
    (void)vend;
    if (!strcmp(key, "metadata") && *v == '{')
        return each_member(s, v, on_list_md, ctx) ? 0 : -1;
    return 0;
}

int gs_live_list_rv(const char *page, size_t len, char *rv, size_t cap)
{
    scan s = {page, page + len, NULL, NULL};
    rv_ctx r = {rv, cap, false};
    rv[0] = '\0';
    if (!each_member(&s, gs_js_ws(page, s.end), on_list_top, &r) || !r.found) {
        rv[0] = '\0';
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- lines */

void gs_live_lines_init(gs_live_lines *l, size_t max_line)
{
    memset(l, 0, sizeof *l);
    l->max_line = max_line ? max_line : MAX_LINE_DEFAULT;
}

void gs_live_lines_free(gs_live_lines *l)
{
    gs_strbuf_free(&l->part);
}

static int deliver(gs_live_lines *l, const char *p, size_t n, gs_live_line_fn fn, void *ctx, gs_error *err)
{
    if (n && p[n - 1] == '\r')
        n--;
    if (gs_js_ws(p, p + n) == p + n)
        return 0; /* blank */
    l->lines++;
    return fn(ctx, p, n, err);
}

int gs_live_lines_feed(gs_live_lines *l, const char *p, size_t n, gs_live_line_fn fn, void *ctx, gs_error *err)
{
    if (l->failed)
        return gs_fail(err, GS_ERR_INTERNAL, "the line splitter failed earlier");
    const char *end = p + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t seg = (size_t)((nl ? nl : end) - p);
        if (l->part.len + seg > l->max_line) {
            l->failed = true;
            return gs_fail(err, GS_ERR_LIMIT, "a watch event is longer than %zu bytes", l->max_line);
        }
        if (!nl) {
            gs_strbuf_add(&l->part, p, seg);
            if (l->part.oom) {
                l->failed = true;
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            }
            return 0;
        }
        int rc;
        if (l->part.len) {
            gs_strbuf_add(&l->part, p, seg);
            if (l->part.oom) {
                l->failed = true;
                return gs_fail(err, GS_ERR_NOMEM, "out of memory");
            }
            rc = deliver(l, l->part.buf, l->part.len, fn, ctx, err);
            gs_strbuf_reset(&l->part);
        } else {
            rc = deliver(l, p, seg, fn, ctx, err); /* whole in this piece: no copy */
        }
        if (rc)
            return rc;
        p = nl + 1;
    }
    return 0;
}

int gs_live_lines_finish(gs_live_lines *l, gs_live_line_fn fn, void *ctx, gs_error *err)
{
    if (l->failed || !l->part.len)
        return 0;
    int rc = deliver(l, l->part.buf, l->part.len, fn, ctx, err);
    gs_strbuf_reset(&l->part);
    return rc;
}

/* ---------------------------------------------------------------- the watch */

typedef struct wctx {
    gs_live_lines lines;
    gs_live_watch_event_fn fn;
    void *ctx;
    gs_live_watch_result *res;
    bool gone;
} wctx;

static int on_line(void *ud, const char *line, size_t len, gs_error *err)
{
    wctx *w = ud;
    gs_live_watch_event ev;
    if (gs_live_watch_event_parse(line, len, &ev, err))
        return -1;
    if (ev.type == GS_LIVE_WATCH_ERROR) {
        if (ev.code == 410) { /* "too old resource version": relist */
            w->gone = true;
            return 1;
        }
        if (ev.message[0])
            return gs_fail(err, ev.code == 429 || ev.code >= 500 ? GS_ERR_IO : GS_ERR_INVALID, "watch: %s",
                           ev.message);
        return gs_fail(err, GS_ERR_IO, "watch: ERROR event, code %d %s", ev.code, ev.reason);
    }
    if (ev.resource_version[0])
        memcpy(w->res->resource_version, ev.resource_version, sizeof ev.resource_version);
    if (ev.initial_events_end)
        w->res->initial_events_end = true;
    w->res->events++;
    return w->fn(w->ctx, &ev, err);
}

static int on_data(void *ud, const char *p, size_t n, gs_error *err)
{
    wctx *w = ud;
    return gs_live_lines_feed(&w->lines, p, n, on_line, w, err);
}

static uint64_t seed_once(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec;
}

int gs_live_watch(gs_live_client *c, const char *path, const gs_live_watch_opts *o, gs_live_watch_event_fn fn,
                  void *ctx, gs_live_watch_result *res, gs_error *err)
{
    gs_live_watch_opts none;
    if (!o) {
        memset(&none, 0, sizeof none);
        o = &none;
    }
    memset(res, 0, sizeof *res);
    res->end = GS_LIVE_END_ERROR;
    if (o->resource_version)
        snprintf(res->resource_version, sizeof res->resource_version, "%s", o->resource_version);
    int timeout_s = o->timeout_s;
    if (timeout_s <= 0) /* client-go's reflector: minWatchTimeout * (1 + rand), 5 to 10 minutes */
        timeout_s = 300 + (int)(seed_once() % 300);
    char tos[24];
    snprintf(tos, sizeof tos, "%d", timeout_s);
    gs_live_query q[8];
    size_t nq = 0;
    q[nq++] = (gs_live_query){"watch", "1"};
    q[nq++] = (gs_live_query){"allowWatchBookmarks", "true"};
    q[nq++] = (gs_live_query){"timeoutSeconds", tos};
    if (o->resource_version && o->resource_version[0])
        q[nq++] = (gs_live_query){"resourceVersion", o->resource_version};
    if (o->send_initial_events) {
        q[nq++] = (gs_live_query){"sendInitialEvents", "true"};
        q[nq++] = (gs_live_query){"resourceVersionMatch", "NotOlderThan"};
    }
    if (o->label_selector && o->label_selector[0])
        q[nq++] = (gs_live_query){"labelSelector", o->label_selector};
    if (o->field_selector && o->field_selector[0])
        q[nq++] = (gs_live_query){"fieldSelector", o->field_selector};
    gs_live_request rq = {.path = path, .query = q, .nquery = nq, .timeout_ms = (long)(timeout_s + 30) * 1000};
    wctx w = {.fn = fn, .ctx = ctx, .res = res};
    gs_live_lines_init(&w.lines, o->max_line);
    gs_live_response rs = {.body = GS_STRBUF_INIT, .retry_after = -1, .status = {.retry_after = -1}};
    long idle = o->idle_ms == 0 ? 180000 : o->idle_ms < 0 ? 0 : o->idle_ms;
    gs_live_end ended = GS_LIVE_END_ERROR;
    int rc = gs_live_stream(c, &rq, on_data, &w, o->stop, idle, &rs, &ended, err);
    res->http = rs.http;
    if (rc == 0 && ended == GS_LIVE_END_CLOSED)
        rc = gs_live_lines_finish(&w.lines, on_line, &w, err) < 0 ? -1 : 0;
    if (w.gone || (rc && rs.http == 410)) {
        res->end = GS_LIVE_END_GONE;
        if (err)
            gs_error_clear(err);
        rc = 0;
    } else if (rc) {
        res->end = GS_LIVE_END_ERROR;
        rc = -1;
    } else {
        res->end = ended;
    }
    gs_live_lines_free(&w.lines);
    gs_live_response_free(&rs);
    return rc;
}
