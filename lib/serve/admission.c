/*
 * admission.c - the AdmissionReview v1 request decoder (contract in serve.h).
 *
 * How it works: one pass over the body with the library's JSON scanner (lib/util/jscan.c)
 * produces events (scalar, mapping and sequence start and end, with byte offsets); we
 * never build a tree. A small stack of frames follows the few mappings we care about
 * (the review, request, request.kind, request.userInfo, request.object and the object's
 * metadata and spec); any other value is skipped by counting container depth, but is
 * still checked token by token: the whole body must be strict JSON (RFC 8259), one
 * object. Scalars under known keys are copied into the caller's arena.
 *
 * Limits, enforced while scanning (nothing is built first): nesting at most
 * GS_ADM_MAX_DEPTH (128, the bound of `check`) levels; deeper inside request.object the
 * too-deep value is passed over by brackets and strings only and the object is left to
 * the snapshot reader, which refuses it with its own limit message (as `check` does);
 * deeper anywhere else the body is refused. Memory: the frame stack, a bracket stack of
 * GS_ADM_MAX_DEPTH bytes and the copied strings, whatever the body holds.
 *
 * The object is not decoded here: its bytes are sliced out of the body (the offsets of
 * its '{' and of the byte after its '}') and handed to the snapshot reader, whose JSON
 * path builds the only tree of the object (values no decoder reads, such as env, are
 * passed over there without being tokenized again). The API server usually sends the
 * object with apiVersion, kind and, on CREATE, without metadata.namespace; since the
 * reader and the rules need both, the missing ones are spliced in right after the
 * opening brace of the object (or of its metadata) from request.kind and
 * request.namespace. The splice only ever inserts complete members, with a comma when
 * members follow, so the result is valid JSON whenever the body was.
 *
 * Safety: the body is checked for well-formed UTF-8 first; every slice is checked
 * against the body's bounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/serve.h"
#include "serve/serve_int.h"
#include "util/jscan_int.h"

#define GS_ADM_MAX_DEPTH 128

/* One scanner event: what libfyaml's event stream gave this decoder before. */
typedef enum { EV_SCALAR = 1, EV_MAP_START, EV_MAP_END, EV_SEQ_START, EV_SEQ_END } ev_type;
typedef struct jev {
    ev_type type;
    const char *text; /* scalars: the source text (strings: between the quotes) */
    size_t len;
    bool plain;       /* true, false, null or a number */
    bool escaped;     /* a string with backslash escapes */
    size_t start, end; /* byte offsets: the first byte, and the byte after the last */
} jev;

/* ---------------------------------------------------------------- contexts and keys */
typedef enum ctx {
    CTX_ROOT = 0,
    CTX_REQUEST,
    CTX_REQKIND,
    CTX_USERINFO,
    CTX_OBJECT,
    CTX_OBJMETA,
    CTX_OBJSPEC,
    CTX_COUNT_
} ctx;

enum { K_NONE = -1 };
enum { RK_API_VERSION = 0, RK_KIND, RK_REQUEST };
enum { QK_UID = 0, QK_KIND, QK_SUBRESOURCE, QK_OPERATION, QK_USERINFO, QK_NAMESPACE, QK_NAME, QK_OBJECT, QK_DRYRUN };
enum { KK_GROUP = 0, KK_VERSION, KK_KIND };
enum { UK_USERNAME = 0 };
enum { OK_API_VERSION = 0, OK_KIND, OK_METADATA, OK_SPEC };
enum { MK_NAMESPACE = 0 };
enum { SK_TOLERATIONS = 0, SK_PRIORITY_CLASS };

static const char *const root_keys[] = {"apiVersion", "kind", "request", NULL};
static const char *const request_keys[] = {"uid", "kind", "subResource", "operation", "userInfo",
                                           "namespace", "name", "object", "dryRun", NULL};
static const char *const reqkind_keys[] = {"group", "version", "kind", NULL};
static const char *const userinfo_keys[] = {"username", NULL};
static const char *const object_keys[] = {"apiVersion", "kind", "metadata", "spec", NULL};
static const char *const objmeta_keys[] = {"namespace", NULL};
static const char *const objspec_keys[] = {"tolerations", "priorityClassName", NULL};

static const char *const *const ctx_keys[CTX_COUNT_] = {
    [CTX_ROOT] = root_keys,       [CTX_REQUEST] = request_keys, [CTX_REQKIND] = reqkind_keys,
    [CTX_USERINFO] = userinfo_keys, [CTX_OBJECT] = object_keys,  [CTX_OBJMETA] = objmeta_keys,
    [CTX_OBJSPEC] = objspec_keys,
};
/* Field paths for messages. */
static const char *const ctx_path[CTX_COUNT_] = {
    [CTX_ROOT] = "",           [CTX_REQUEST] = "request.",       [CTX_REQKIND] = "request.kind.",
    [CTX_USERINFO] = "request.userInfo.", [CTX_OBJECT] = "request.object.",
    [CTX_OBJMETA] = "request.object.metadata.", [CTX_OBJSPEC] = "request.object.spec.",
};

#define DEC_MAX_FRAMES 8

typedef struct frame {
    ctx c;
    int key;           /* key id of the member whose value comes next, or K_NONE */
    bool want_key;
    bool empty;        /* no member seen yet */
    uint32_t seen;     /* key ids seen (duplicates of known keys are errors) */
    size_t open_pos;   /* offset of the '{' */
} frame;

typedef struct decoder {
    const char *body;
    size_t len;
    gs_arena *arena;
    gs_admission *out;
    gs_error *err;
    frame stack[DEC_MAX_FRAMES];
    int depth;
    uint32_t skip_depth; /* > 0 while inside a value nobody reads */
    bool root_seen;
    bool have_request;
    const char *review_kind; /* the root "kind" (request.kind.kind goes to out->kind) */
    /* request.object */
    bool have_object;
    size_t obj_start, obj_end; /* [start, end) of the object's text */
    bool obj_empty;
    bool obj_has_api_version, obj_has_kind, obj_has_metadata;
    bool meta_is_map, meta_has_namespace, meta_empty;
    size_t meta_open;
} decoder;


static int key_id(ctx c, const char *text, size_t len)
{
    const char *const *keys = ctx_keys[c];
    for (int i = 0; keys[i]; i++)
        if (strlen(keys[i]) == len && memcmp(keys[i], text, len) == 0)
            return i;
    return K_NONE;
}

static int invalid(decoder *d, ctx c, int key, const char *what)
{
    return gs_error_set(d->err, GS_ERR_INVALID, NULL, 0, 0, NULL, "%s%s %s", ctx_path[c],
                        key >= 0 ? ctx_keys[c][key] : "?", what);
}

/* Copy a string scalar into the arena; NULL stays the default for a JSON null. */
static int take_string(decoder *d, ctx c, int key, const jev *ev, const char **dst)
{
    if (ev->plain) {
        if (ev->len == 4 && memcmp(ev->text, "null", 4) == 0)
            return 0;
        return invalid(d, c, key, "must be a string");
    }
    char *s = gs_arena_alloc(d->arena, ev->len + 1);
    if (!s)
        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
    size_t len = ev->len;
    if (ev->escaped) {
        const char *bad;
        long n = gs_js_unescape(ev->text, ev->len, s, &bad);
        if (n < 0) /* checked while scanning */
            return gs_fail(d->err, GS_ERR_INTERNAL, "admission decoder: bad escape");
        len = (size_t)n;
    } else {
        memcpy(s, ev->text, len);
    }
    s[len] = '\0';
    if (strlen(s) != len)
        return invalid(d, c, key, "contains a NUL character");
    if (gs_utf8_invalid_at(s, len) < len)
        return invalid(d, c, key, "is not valid UTF-8 (an escaped lone surrogate?)");
    *dst = s;
    return 0;
}

static int take_bool(decoder *d, ctx c, int key, const jev *ev, bool *dst)
{
    if (ev->plain) {
        if (ev->len == 4 && memcmp(ev->text, "true", 4) == 0) {
            *dst = true;
            return 0;
        }
        if ((ev->len == 5 && memcmp(ev->text, "false", 5) == 0) ||
            (ev->len == 4 && memcmp(ev->text, "null", 4) == 0)) {
            *dst = false;
            return 0;
        }
    }
    return invalid(d, c, key, "must be true or false");
}

static bool is_null_scalar(const jev *ev)
{
    return ev->plain && ev->len == 4 && memcmp(ev->text, "null", 4) == 0;
}

/* The child context a mapping value under (c, key) opens, or CTX_COUNT_ to skip it. */
static ctx child_ctx(ctx c, int key)
{
    switch (c) {
    case CTX_ROOT: return key == RK_REQUEST ? CTX_REQUEST : CTX_COUNT_;
    case CTX_REQUEST:
        if (key == QK_KIND)
            return CTX_REQKIND;
        if (key == QK_USERINFO)
            return CTX_USERINFO;
        if (key == QK_OBJECT)
            return CTX_OBJECT;
        return CTX_COUNT_;
    case CTX_OBJECT:
        if (key == OK_METADATA)
            return CTX_OBJMETA;
        if (key == OK_SPEC)
            return CTX_OBJSPEC;
        return CTX_COUNT_;
    default: return CTX_COUNT_;
    }
}

static int push(decoder *d, ctx c, const jev *ev)
{
    if (d->depth == DEC_MAX_FRAMES)
        return gs_fail(d->err, GS_ERR_INTERNAL, "admission decoder: frame stack overflow");
    frame *f = &d->stack[d->depth++];
    memset(f, 0, sizeof *f);
    f->c = c;
    f->key = K_NONE;
    f->want_key = true;
    f->empty = true;
    f->open_pos = ev->start;
    if (c == CTX_OBJECT) {
        d->have_object = true;
        d->obj_start = f->open_pos;
    } else if (c == CTX_OBJMETA) {
        d->obj_has_metadata = true;
        d->meta_is_map = true;
        d->meta_open = f->open_pos;
    } else if (c == CTX_REQUEST) {
        d->have_request = true;
    }
    return 0;
}

/* A value (scalar or container start) for member `key` of a tracked mapping. */
static int on_value(decoder *d, frame *f, const jev *ev)
{
    ctx c = f->c;
    int key = f->key;
    gs_admission *o = d->out;
    bool scalar = ev->type == EV_SCALAR;
    bool map = ev->type == EV_MAP_START;
    if (key == K_NONE) {
        if (!scalar)
            d->skip_depth = 1;
        return 0;
    }
    ctx child = child_ctx(c, key);
    if (map && child != CTX_COUNT_)
        return push(d, child, ev);

    switch (c) {
    case CTX_ROOT:
        if (key == RK_REQUEST) {
            if (scalar && is_null_scalar(ev))
                return 0;
            return invalid(d, c, key, "must be an object");
        }
        if (!scalar)
            return invalid(d, c, key, "must be a string");
        return take_string(d, c, key, ev, key == RK_API_VERSION ? &o->api_version : &d->review_kind);
    case CTX_REQUEST:
        if (key == QK_KIND || key == QK_USERINFO || key == QK_OBJECT) {
            if (scalar && is_null_scalar(ev))
                return 0;
            return invalid(d, c, key, "must be an object");
        }
        if (!scalar)
            return invalid(d, c, key, key == QK_DRYRUN ? "must be true or false" : "must be a string");
        switch (key) {
        case QK_UID: return take_string(d, c, key, ev, &o->uid);
        case QK_SUBRESOURCE: return take_string(d, c, key, ev, &o->sub_resource);
        case QK_OPERATION: return take_string(d, c, key, ev, &o->operation);
        case QK_NAMESPACE: return take_string(d, c, key, ev, &o->namespace_);
        case QK_NAME: return take_string(d, c, key, ev, &o->name);
        case QK_DRYRUN: return take_bool(d, c, key, ev, &o->dry_run);
        default: return 0;
        }
    case CTX_REQKIND:
        if (!scalar)
            return invalid(d, c, key, "must be a string");
        return take_string(d, c, key, ev,
                           key == KK_GROUP ? &o->group : key == KK_VERSION ? &o->version : &o->kind);
    case CTX_USERINFO:
        if (!scalar)
            return invalid(d, c, key, "must be a string");
        return take_string(d, c, key, ev, &o->username);
    case CTX_OBJECT:
        if (key == OK_API_VERSION)
            d->obj_has_api_version = true;
        else if (key == OK_KIND)
            d->obj_has_kind = true;
        else if (key == OK_METADATA)
            d->obj_has_metadata = true;
        break;
    case CTX_OBJMETA:
        if (key == MK_NAMESPACE)
            d->meta_has_namespace = true;
        break;
    case CTX_OBJSPEC:
        if (key == SK_TOLERATIONS)
            o->tolerations = ev->type == EV_SEQ_START ? GS_TOLS_ARRAY
                             : scalar && is_null_scalar(ev)    ? GS_TOLS_NULL
                                                               : GS_TOLS_OTHER;
        break;
    default: break;
    }
    if (!scalar)
        d->skip_depth = 1;
    return 0;
}

static int on_event(decoder *d, const jev *ev)
{
    switch (ev->type) {
    case EV_SCALAR:
    case EV_MAP_START:
    case EV_SEQ_START: {
        if (d->skip_depth) {
            if (ev->type == EV_MAP_START || ev->type == EV_SEQ_START)
                d->skip_depth++;
            return 0;
        }
        if (d->depth == 0) {
            if (d->root_seen || ev->type != EV_MAP_START)
                return gs_fail(d->err, GS_ERR_INVALID, "an AdmissionReview must be one JSON object");
            d->root_seen = true;
            return push(d, CTX_ROOT, ev);
        }
        frame *f = &d->stack[d->depth - 1];
        if (f->want_key) {
            if (ev->type != EV_SCALAR || ev->plain)
                return gs_fail(d->err, GS_ERR_PARSE, "%sobject key is not a string", ctx_path[f->c]);
            /* known keys have no escapes; an escaped key is compared decoded */
            char kb[32];
            const char *t = ev->text;
            size_t len = ev->len;
            if (ev->escaped) {
                const char *bad;
                long n = ev->len <= sizeof kb ? gs_js_unescape(ev->text, ev->len, kb, &bad) : -1;
                t = kb;
                len = n < 0 ? sizeof kb + 1 : (size_t)n; /* longer than any known key */
            }
            f->key = len <= sizeof kb ? key_id(f->c, t, len) : K_NONE;
            if (f->key != K_NONE) {
                if (f->seen & (1u << f->key))
                    return invalid(d, f->c, f->key, "is given twice");
                f->seen |= 1u << f->key;
            }
            f->want_key = false;
            f->empty = false;
            return 0;
        }
        f->want_key = true;
        return on_value(d, f, ev);
    }
    case EV_MAP_END:
    case EV_SEQ_END: {
        if (d->skip_depth) {
            d->skip_depth--;
            return 0;
        }
        if (d->depth == 0)
            return gs_fail(d->err, GS_ERR_INTERNAL, "admission decoder: unbalanced events");
        frame *f = &d->stack[--d->depth];
        if (f->c == CTX_OBJECT) {
            d->obj_end = ev->end;
            d->obj_empty = f->empty;
        } else if (f->c == CTX_OBJMETA) {
            d->meta_empty = f->empty;
        }
        return 0;
    }
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------- splice */
static void add_member(gs_strbuf *sb, bool *first, const char *key, const char *val)
{
    if (!*first)
        gs_strbuf_putc(sb, ',');
    *first = false;
    gs_strbuf_json_str(sb, key);
    gs_strbuf_putc(sb, ':');
    gs_strbuf_json_str(sb, val);
}

/* Build the object text handed to the reader (see the header comment). */
static int build_object(decoder *d)
{
    gs_admission *o = d->out;
    const char *b = d->body;
    if (d->obj_start >= d->len || d->obj_end > d->len || d->obj_end <= d->obj_start + 1 ||
        b[d->obj_start] != '{' || b[d->obj_end - 1] != '}')
        return gs_fail(d->err, GS_ERR_INVALID, "request.object must be a JSON object");
    const char *ns = o->namespace_ ? o->namespace_ : "";
    gs_strbuf prefix = GS_STRBUF_INIT, meta = GS_STRBUF_INIT;
    bool first = true;
    if (!d->obj_has_api_version && o->version && o->version[0]) {
        char av[512];
        if (o->group && o->group[0])
            snprintf(av, sizeof av, "%s/%s", o->group, o->version);
        else
            snprintf(av, sizeof av, "%s", o->version);
        add_member(&prefix, &first, "apiVersion", av);
    }
    if (!d->obj_has_kind && o->kind && o->kind[0])
        add_member(&prefix, &first, "kind", o->kind);
    if (!d->obj_has_metadata && ns[0]) {
        if (!first)
            gs_strbuf_putc(&prefix, ',');
        first = false;
        gs_strbuf_puts(&prefix, "\"metadata\":{\"namespace\":");
        gs_strbuf_json_str(&prefix, ns);
        gs_strbuf_puts(&prefix, "}");
    }
    if (prefix.len && !d->obj_empty)
        gs_strbuf_putc(&prefix, ',');
    bool meta_insert = d->meta_is_map && !d->meta_has_namespace && ns[0] &&
                       d->meta_open > d->obj_start && d->meta_open < d->obj_end &&
                       b[d->meta_open] == '{';
    if (meta_insert) {
        gs_strbuf_puts(&meta, "\"namespace\":");
        gs_strbuf_json_str(&meta, ns);
        if (!d->meta_empty)
            gs_strbuf_putc(&meta, ',');
    }
    int rc = 0;
    if (prefix.oom || meta.oom) {
        rc = gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
        goto out;
    }
    size_t total = (d->obj_end - d->obj_start) + prefix.len + meta.len;
    char *buf = gs_arena_alloc(d->arena, total + 1);
    if (!buf) {
        rc = gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
        goto out;
    }
    size_t n = 0;
    buf[n++] = '{';
    memcpy(buf + n, gs_strbuf_cstr(&prefix), prefix.len);
    n += prefix.len;
    size_t from = d->obj_start + 1;
    if (meta_insert) {
        size_t upto = d->meta_open + 1;
        memcpy(buf + n, b + from, upto - from);
        n += upto - from;
        memcpy(buf + n, gs_strbuf_cstr(&meta), meta.len);
        n += meta.len;
        from = upto;
    }
    memcpy(buf + n, b + from, d->obj_end - from);
    n += d->obj_end - from;
    buf[n] = '\0';
    o->object = buf;
    o->object_len = n;
out:
    gs_strbuf_free(&prefix);
    gs_strbuf_free(&meta);
    return rc;
}

/* ---------------------------------------------------------------- scanner */
static int malformed(decoder *d, const char *at, const char *what)
{
    int line, col;
    gs_text_line_col(d->body, (size_t)(at - d->body), &line, &col);
    return gs_error_set(d->err, GS_ERR_PARSE, NULL, line, col, NULL, "malformed JSON: %s", what);
}

/* The whole body, strict JSON, into on_event. The decoder's own nesting (its frames and
 * skip_depth) follows the events; the bracket stack here checks that closes match. */
static int scan_events(decoder *d)
{
    const char *b = d->body, *end = b + d->len;
    const char *p = gs_js_ws(b, end), *bad = NULL;
    char brackets[GS_ADM_MAX_DEPTH];
    size_t depth = 0;
    size_t obj_depth = 0; /* bracket depth of request.object's '{' while it is open */
    jev ev;
    int rc;
    for (;;) {
        /* ---- a value at p */
        memset(&ev, 0, sizeof ev);
        char c = p < end ? *p : '\0';
        if (c == '{' || c == '[') {
            if (depth == GS_ADM_MAX_DEPTH) {
                if (!obj_depth)
                    return gs_fail(d->err, GS_ERR_INVALID, "JSON nested deeper than %d levels",
                                   GS_ADM_MAX_DEPTH);
                /* inside the object: the reader refuses it with its own limit */
                bool deep;
                const char *q = gs_js_skip(p, end, 0, &bad, &deep);
                if (!q)
                    return malformed(d, bad, bad >= end ? "unexpected end of input" : "unbalanced brackets");
                ev.type = EV_SCALAR; /* stands for the value in the decoder's skipped region */
                ev.text = "null";
                ev.len = 4;
                ev.plain = true;
                ev.start = (size_t)(p - b);
                ev.end = (size_t)(q - b);
                if ((rc = on_event(d, &ev)) != 0)
                    return rc;
                p = q;
                goto after_value;
            }
            ev.type = c == '{' ? EV_MAP_START : EV_SEQ_START;
            ev.start = (size_t)(p - b);
            ev.end = ev.start + 1;
            bool was_object = d->have_object;
            if ((rc = on_event(d, &ev)) != 0)
                return rc;
            brackets[depth++] = c;
            if (!was_object && d->have_object)
                obj_depth = depth;
            p = gs_js_ws(p + 1, end);
            if (p < end && *p == (c == '{' ? '}' : ']'))
                goto close;
            if (c == '{')
                goto key;
            continue;
        }
        if (c == '"') {
            bool esc = false;
            const char *q = gs_js_str_end(p + 1, end, &esc, &bad);
            if (!q)
                return malformed(d, bad, bad >= end ? "unterminated string" : "control character in a string");
            if (esc && gs_js_unescape(p + 1, (size_t)(q - p - 1), NULL, &bad) < 0)
                return malformed(d, bad, "invalid escape (or a lone surrogate)");
            ev.text = p + 1;
            ev.len = (size_t)(q - p - 1);
            ev.escaped = esc;
            ev.end = (size_t)(q + 1 - b);
            p = q + 1;
        } else if (c == 't' || c == 'f' || c == 'n') {
            const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
            size_t wl = strlen(w);
            if ((size_t)(end - p) < wl || memcmp(p, w, wl) != 0)
                return malformed(d, p, "expected a value");
            ev.text = p;
            ev.len = wl;
            ev.plain = true;
            p += wl;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            const char *q = gs_js_number(p, end, &bad);
            if (!q)
                return malformed(d, bad, "invalid number");
            ev.text = p;
            ev.len = (size_t)(q - p);
            ev.plain = true;
            p = q;
        } else {
            return malformed(d, p, p >= end ? "unexpected end of input" : "expected a value");
        }
        ev.type = EV_SCALAR;
        ev.start = (size_t)(ev.text - b) - (ev.plain ? 0 : 1);
        if ((rc = on_event(d, &ev)) != 0)
            return rc;
    after_value:
        if (depth == 0) {
            p = gs_js_ws(p, end);
            if (p < end)
                return malformed(d, p, "content after the AdmissionReview object");
            return 0;
        }
        p = gs_js_ws(p, end);
        {
            bool map = brackets[depth - 1] == '{';
            if (p < end && *p == ',') {
                p = gs_js_ws(p + 1, end);
                if (!map)
                    continue;
                goto key;
            }
            if (p < end && *p == (map ? '}' : ']'))
                goto close;
            return malformed(d, p, p >= end ? "unexpected end of input"
                                   : map    ? "expected ',' or '}'"
                                            : "expected ',' or ']'");
        }
    close:
        memset(&ev, 0, sizeof ev);
        ev.type = brackets[depth - 1] == '{' ? EV_MAP_END : EV_SEQ_END;
        ev.start = (size_t)(p - b);
        ev.end = ev.start + 1;
        if (obj_depth == depth)
            obj_depth = 0;
        depth--;
        p++;
        if ((rc = on_event(d, &ev)) != 0)
            return rc;
        goto after_value;
    key:
        if (p >= end || *p != '"')
            return malformed(d, p, p >= end ? "unexpected end of input" : "expected a string key");
        {
            bool esc = false;
            const char *q = gs_js_str_end(p + 1, end, &esc, &bad);
            if (!q)
                return malformed(d, bad, bad >= end ? "unterminated string" : "control character in a string");
            if (esc && gs_js_unescape(p + 1, (size_t)(q - p - 1), NULL, &bad) < 0)
                return malformed(d, bad, "invalid escape (or a lone surrogate)");
            memset(&ev, 0, sizeof ev);
            ev.type = EV_SCALAR;
            ev.text = p + 1;
            ev.len = (size_t)(q - p - 1);
            ev.escaped = esc;
            ev.start = (size_t)(p - b);
            ev.end = (size_t)(q + 1 - b);
            if ((rc = on_event(d, &ev)) != 0)
                return rc;
            p = gs_js_ws(q + 1, end);
        }
        if (p >= end || *p != ':')
            return malformed(d, p, p >= end ? "unexpected end of input" : "expected ':'");
        p = gs_js_ws(p + 1, end);
    }
}

/* ---------------------------------------------------------------- entry point */
int gs_admission_decode(const char *body, size_t len, gs_arena *arena, gs_admission *out,
                        gs_error *err)
{
    memset(out, 0, sizeof *out);
    size_t bad = gs_utf8_invalid_at(body, len);
    if (bad < len) {
        int line, col;
        gs_text_line_col(body, bad, &line, &col);
        return gs_error_set(err, GS_ERR_PARSE, NULL, line, col, NULL,
                            "malformed JSON: invalid UTF-8 (byte 0x%02X)", (unsigned char)body[bad]);
    }
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
        i++;
    if (i == len)
        return gs_fail(err, GS_ERR_PARSE, "empty body: expected an AdmissionReview JSON object");
    if (body[i] != '{') {
        int line, col;
        gs_text_line_col(body, i, &line, &col);
        return gs_error_set(err, GS_ERR_PARSE, NULL, line, col, NULL,
                            "malformed JSON: expected an AdmissionReview object starting with '{'");
    }
    decoder *d = calloc(1, sizeof *d);
    if (!d)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory decoding the review");
    d->body = body;
    d->len = len;
    d->arena = arena;
    d->out = out;
    d->err = err;
    int rc = scan_events(d);
    if (rc == 0) {
        if (!out->api_version || !d->review_kind) {
            rc = gs_fail(err, GS_ERR_INVALID,
                         "not an AdmissionReview: apiVersion and kind are required "
                         "(expected admission.k8s.io/v1 AdmissionReview)");
        } else if (strcmp(d->review_kind, "AdmissionReview") != 0) {
            rc = gs_fail(err, GS_ERR_INVALID, "wrong kind \"%.100s\": expected AdmissionReview",
                         d->review_kind);
        } else if (strcmp(out->api_version, "admission.k8s.io/v1") != 0) {
            rc = gs_fail(err, GS_ERR_INVALID,
                         "wrong apiVersion \"%.100s\": expected admission.k8s.io/v1 "
                         "(set admissionReviewVersions: [\"v1\"] in the webhook configuration)",
                         out->api_version);
        } else if (!d->have_request) {
            rc = gs_fail(err, GS_ERR_INVALID, "AdmissionReview without a request");
        } else if (!out->uid || !out->uid[0]) {
            rc = gs_fail(err, GS_ERR_INVALID, "request.uid is missing or empty");
        }
    }
    if (rc == 0) {
        /* the request.kind fields default to "" so callers never see NULL */
        const char **fields[] = {&out->group, &out->version, &out->kind, &out->sub_resource,
                                 &out->operation, &out->username, &out->namespace_, &out->name};
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
            if (!*fields[k])
                *fields[k] = "";
        if (d->have_object)
            rc = build_object(d);
    }
    free(d);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}
