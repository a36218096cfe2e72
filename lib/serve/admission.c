/*
 * admission.c - the AdmissionReview v1 request decoder (contract in serve.h).
 *
 * How it works: libfyaml parses the body in strict JSON mode and hands us events; we
 * never build a tree. A small stack of frames follows the few mappings we care about
 * (the review, request, request.kind, request.userInfo, request.object and the object's
 * metadata and spec); any other value is skipped by counting container depth. Scalars
 * under known keys are copied into the caller's arena.
 *
 * The object is not decoded here: its bytes are sliced out of the body (the start mark of
 * its '{' and the end mark of its '}') and handed to the snapshot reader as they are, so
 * the reader sees exactly what the API server sent and the body is parsed only twice
 * (once here, once by the reader for the object alone). The API server usually sends the
 * object with apiVersion, kind and, on CREATE, without metadata.namespace; since the
 * reader and the rules need both, the missing ones are spliced in right after the
 * opening brace of the object (or of its metadata) from request.kind and
 * request.namespace. The splice only ever inserts complete members, with a comma when
 * members follow, so the result is valid JSON whenever the body was.
 *
 * Safety: the body is checked for well-formed UTF-8 before libfyaml sees it (libfyaml
 * 0.7.12 can loop forever on some malformed bytes; the snapshot reader found it by
 * fuzzing); nesting costs libfyaml's event parser memory in proportion to the depth,
 * so the body size bounds it, and the decoder itself only counts the depth of values it
 * skips; every slice is checked against the body's bounds. Parsers are reused per thread
 * (parse_events).
 */
#include <libfyaml.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gpusched/serve.h"
#include "serve/serve_int.h"
#include "util/fy_int.h"

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
static int take_string(decoder *d, ctx c, int key, struct fy_event *ev, const char **dst)
{
    size_t len = 0;
    const char *t = fy_token_get_text(ev->scalar.value, &len);
    if (!t)
        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
    enum fy_scalar_style style = fy_token_scalar_style(ev->scalar.value);
    if (style == FYSS_PLAIN) {
        if (len == 4 && memcmp(t, "null", 4) == 0)
            return 0;
        return invalid(d, c, key, "must be a string");
    }
    char *s = gs_arena_strndup(d->arena, t, len);
    if (!s)
        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
    if (strlen(s) != len)
        return invalid(d, c, key, "contains a NUL character");
    if (gs_utf8_invalid_at(s, len) < len)
        return invalid(d, c, key, "is not valid UTF-8 (an escaped lone surrogate?)");
    *dst = s;
    return 0;
}

static int take_bool(decoder *d, ctx c, int key, struct fy_event *ev, bool *dst)
{
    size_t len = 0;
    const char *t = fy_token_get_text(ev->scalar.value, &len);
    if (!t)
        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
    if (fy_token_scalar_style(ev->scalar.value) == FYSS_PLAIN) {
        if (len == 4 && memcmp(t, "true", 4) == 0) {
            *dst = true;
            return 0;
        }
        if ((len == 5 && memcmp(t, "false", 5) == 0) || (len == 4 && memcmp(t, "null", 4) == 0)) {
            *dst = false;
            return 0;
        }
    }
    return invalid(d, c, key, "must be true or false");
}

static bool is_null_scalar(struct fy_event *ev)
{
    size_t len = 0;
    const char *t = fy_token_get_text(ev->scalar.value, &len);
    return t && fy_token_scalar_style(ev->scalar.value) == FYSS_PLAIN && len == 4 &&
           memcmp(t, "null", 4) == 0;
}

static size_t mark_pos(const struct fy_mark *m) { return m ? m->input_pos : (size_t)-1; }

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

static int push(decoder *d, ctx c, struct fy_event *ev)
{
    if (d->depth == DEC_MAX_FRAMES)
        return gs_fail(d->err, GS_ERR_INTERNAL, "admission decoder: frame stack overflow");
    frame *f = &d->stack[d->depth++];
    memset(f, 0, sizeof *f);
    f->c = c;
    f->key = K_NONE;
    f->want_key = true;
    f->empty = true;
    f->open_pos = mark_pos(fy_event_start_mark(ev));
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
static int on_value(decoder *d, frame *f, struct fy_event *ev)
{
    ctx c = f->c;
    int key = f->key;
    gs_admission *o = d->out;
    bool scalar = ev->type == FYET_SCALAR;
    bool map = ev->type == FYET_MAPPING_START;
    if (ev->type == FYET_ALIAS)
        return gs_fail(d->err, GS_ERR_PARSE, "aliases are not JSON");
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
            o->tolerations = ev->type == FYET_SEQUENCE_START ? GS_TOLS_ARRAY
                             : scalar && is_null_scalar(ev)    ? GS_TOLS_NULL
                                                               : GS_TOLS_OTHER;
        break;
    default: break;
    }
    if (!scalar)
        d->skip_depth = 1;
    return 0;
}

static int on_event(decoder *d, struct fy_event *ev)
{
    switch (ev->type) {
    case FYET_SCALAR:
    case FYET_ALIAS:
    case FYET_MAPPING_START:
    case FYET_SEQUENCE_START: {
        if (d->skip_depth) {
            if (ev->type == FYET_MAPPING_START || ev->type == FYET_SEQUENCE_START)
                d->skip_depth++;
            return 0;
        }
        if (d->depth == 0) {
            if (d->root_seen || ev->type != FYET_MAPPING_START)
                return gs_fail(d->err, GS_ERR_INVALID, "an AdmissionReview must be one JSON object");
            d->root_seen = true;
            return push(d, CTX_ROOT, ev);
        }
        frame *f = &d->stack[d->depth - 1];
        if (f->want_key) {
            if (ev->type != FYET_SCALAR)
                return gs_fail(d->err, GS_ERR_PARSE, "%sobject key is not a string", ctx_path[f->c]);
            size_t len = 0;
            const char *t = fy_token_get_text(ev->scalar.value, &len);
            if (!t)
                return gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
            f->key = key_id(f->c, t, len);
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
    case FYET_MAPPING_END:
    case FYET_SEQUENCE_END: {
        if (d->skip_depth) {
            d->skip_depth--;
            return 0;
        }
        if (d->depth == 0)
            return gs_fail(d->err, GS_ERR_INTERNAL, "admission decoder: unbalanced events");
        frame *f = &d->stack[--d->depth];
        if (f->c == CTX_OBJECT) {
            d->obj_end = mark_pos(fy_event_end_mark(ev));
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

/* ---------------------------------------------------------------- entry point */
/* Creating a libfyaml parser and its diagnostics costs about as much as parsing a
 * typical review, so each thread keeps one pair and resets it between bodies. A pair that
 * saw an error is destroyed instead of reused (its diagnostics hold the collected errors).
 * The pair dies with its thread (pthread key destructor). */
typedef struct parser_pair {
    struct fy_parser *parser;
    struct fy_diag *diag;
} parser_pair;

static pthread_key_t pair_key;
static pthread_once_t pair_once = PTHREAD_ONCE_INIT;
static bool pair_key_ok;

static void pair_destroy(void *v)
{
    parser_pair *pp = v;
    if (!pp)
        return;
    if (pp->parser)
        fy_parser_destroy(pp->parser);
    if (pp->diag)
        fy_diag_destroy(pp->diag);
    free(pp);
}

static void pair_key_make(void) { pair_key_ok = pthread_key_create(&pair_key, pair_destroy) == 0; }

static parser_pair *pair_new(void)
{
    parser_pair *pp = calloc(1, sizeof *pp);
    if (!pp)
        return NULL;
    pp->diag = gs__fy_quiet_diag();
    if (pp->diag) {
        struct fy_parse_cfg cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.flags = FYPCF_QUIET | FYPCF_JSON_FORCE;
        cfg.diag = pp->diag;
        pp->parser = fy_parser_create(&cfg);
    }
    if (!pp->parser) {
        pair_destroy(pp);
        return NULL;
    }
    return pp;
}

/* The calling thread's pair, detached from the thread while in use. */
static parser_pair *pair_take(void)
{
    pthread_once(&pair_once, pair_key_make);
    if (pair_key_ok) {
        parser_pair *pp = pthread_getspecific(pair_key);
        if (pp) {
            pthread_setspecific(pair_key, NULL);
            return pp;
        }
    }
    return pair_new();
}

static void pair_give_back(parser_pair *pp, bool clean)
{
    if (clean && pair_key_ok && fy_parser_reset(pp->parser) == 0 &&
        pthread_getspecific(pair_key) == NULL && pthread_setspecific(pair_key, pp) == 0)
        return;
    pair_destroy(pp);
}

static int parse_events(decoder *d)
{
    parser_pair *pp = pair_take();
    if (!pp)
        return gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
    struct fy_parser *p = pp->parser;
    int rc = 0;
    bool clean = true;
    if (fy_parser_set_string(p, d->body, d->len) != 0) {
        rc = gs_fail(d->err, GS_ERR_NOMEM, "out of memory decoding the review");
        clean = false;
    } else {
        struct fy_event *ev;
        while ((ev = fy_parser_parse(p)) != NULL) {
            rc = on_event(d, ev);
            fy_parser_event_free(p, ev);
            if (rc < 0)
                break;
        }
        void *any = NULL; /* anything collected (even a warning) would pile up: discard */
        if (rc < 0 || fy_parser_get_stream_error(p) || fy_diag_got_error(pp->diag) ||
            fy_diag_errors_iterate(pp->diag, &any) != NULL)
            clean = false;
        if (rc == 0 && fy_parser_get_stream_error(p)) {
            struct fy_diag_error *first = gs__fy_first_error(pp->diag);
            rc = gs_error_set(d->err, GS_ERR_PARSE, NULL, first && first->line > 0 ? first->line : 0,
                              first && first->line > 0 ? first->column : 0, NULL,
                              "malformed JSON: %s", first && first->msg ? first->msg : "syntax error");
        }
    }
    pair_give_back(pp, clean);
    return rc;
}

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
    int rc = parse_events(d);
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
