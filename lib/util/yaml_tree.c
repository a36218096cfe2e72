/* yaml_tree.c - libfyaml's event stream into a positioned gs_yn tree (yaml_tree_int.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fy_int.h"
#include "util/jscan_int.h"
#include "util/map_int.h"
#include "util/yaml_tree_int.h"

#define YT_PAIRWISE_MAX 12 /* mappings up to this many pairs compare keys pairwise */

typedef struct yt_frame {
    gs_yn *node;
    gs_yn *tail;
    uint32_t count; /* children so far */
} yt_frame;

struct gs_yt {
    gs_yt_opts o;
    gs_arena *a;
    gs_error *err;
    struct fy_diag *diag;
    struct fy_parser *p;
    yt_frame *stack;
    uint32_t depth;
    uint32_t nodes;               /* this document (on_doc) or this tree */
    uint32_t docs_started;        /* DOCUMENT_START events, all parse calls */
    uint32_t docs;                /* documents with content */
    gs_yn *root, *last_root;      /* kept roots (no on_doc) */
    gs_yn *doc_root;              /* the current document's root */
    const char *in_lo, *in_hi;    /* the text parsed: scalars there are referenced */
    uint32_t line_off, col_off;
    uint32_t last_line, last_col;
    uint32_t skip_depth;          /* > 0 inside a skipped collection */
    const gs_yn **keys;           /* duplicate detection scratch */
    size_t keys_cap;
    bool failed;                  /* the last parse stopped early: new parser next time */
    /* JSON path (gs_yt_parse_json) */
    gs_arena *main_a;             /* the caller's arena (t->a points elsewhere inside items) */
    gs_arena item_arena;          /* one streamed List item at a time */
    gs_jcur cur;                  /* positions */
    bool stream_next;             /* gs_yt_stream_items: stream the next document's items */
    uint32_t stream_depth;        /* > 0: depth of the streaming items sequence's frame */
    gs_yn *item;                  /* the streamed item being built */
    uint32_t item_index, item_nodes_base;
    bool streamed;                /* this document handed items out: no fallback */
    gs_window *win;               /* gs_yt_parse_json_window: the text is w->buf */
    bool win_tail;                /* the streamed items closed: fill to the document's end */
    bool win_hold;                /* on_item returned 1: nothing dropped any more */
};

/* ---------------------------------------------------------------- messages */

const char *gs_yn_shown(const gs_yn *n, char *buf, size_t cap)
{
    if (cap < 8) {
        if (cap)
            buf[0] = '\0';
        return buf;
    }
    size_t len = n->type == GS_YN_SCALAR ? n->len : 0;
    size_t limit = len < GS_YT_SHOWN ? len : GS_YT_SHOWN;
    if (limit < len) /* never cut a UTF-8 sequence */
        while (limit > 0 && ((unsigned char)n->u.text[limit] & 0xC0) == 0x80)
            limit--;
    size_t o = 0;
    buf[o++] = '"';
    for (size_t i = 0; i < limit && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)n->u.text[i];
        buf[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (limit < len && o + 5 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

bool gs_yn_null_text(const char *t, size_t n)
{
    return n == 0 || (n == 1 && t[0] == '~') ||
           (n == 4 && (!memcmp(t, "null", 4) || !memcmp(t, "Null", 4) || !memcmp(t, "NULL", 4)));
}

static int yt_fail(gs_yt *t, uint32_t line, uint32_t col, gs_code code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int yt_fail(gs_yt *t, uint32_t line, uint32_t col, gs_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(t->err, code, t->o.file, (int)line, (int)col, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static int yt_nomem(gs_yt *t)
{
    return gs_fail(t->err, GS_ERR_NOMEM, "out of memory reading %s", t->o.file ? t->o.file : "input");
}

static const char *what_of(const gs_yt_opts *o) { return o->what ? o->what : "the input"; }

int gs_yt_check_text(const gs_yt_opts *opts, const char *data, size_t len, uint32_t line_off,
                     uint32_t col_off, gs_error *err)
{
    size_t bad = gs_utf8_invalid_at(data, len);
    const char *nul = bad ? memchr(data, '\0', bad) : NULL;
    if (nul)
        bad = (size_t)(nul - data);
    if (bad >= len)
        return 0;
    int line, col;
    gs_text_line_col(data, bad, &line, &col);
    if (line == 1)
        col += (int)col_off;
    line += (int)line_off;
    if (data[bad] == '\0')
        return gs_error_set(err, GS_ERR_PARSE, opts->file, line, col, NULL,
                            "NUL byte; %s must be UTF-8 text", what_of(opts));
    return gs_error_set(err, GS_ERR_PARSE, opts->file, line, col, NULL,
                        "invalid UTF-8 (byte 0x%02X); %s must be UTF-8 text",
                        (unsigned char)data[bad], what_of(opts));
}

/* ---------------------------------------------------------------- builder */

/* A fresh quiet parser (libfyaml does not recover cleanly from a parse stopped midway). */
static int yt_parser(gs_yt *t)
{
    if (t->p)
        fy_parser_destroy(t->p);
    if (t->diag)
        fy_diag_destroy(t->diag);
    t->p = NULL;
    t->diag = gs__fy_quiet_diag();
    if (!t->diag)
        return -1;
    struct fy_parse_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.flags = FYPCF_QUIET;
    cfg.diag = t->diag;
    t->p = fy_parser_create(&cfg);
    return t->p ? 0 : -1;
}

gs_yt *gs_yt_new(const gs_yt_opts *opts, gs_arena *a, gs_error *err)
{
    gs_yt *t = calloc(1, sizeof *t);
    if (!t) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->o = *opts;
    if (!t->o.max_depth || t->o.max_depth > GS_YT_MAX_DEPTH)
        t->o.max_depth = GS_YT_MAX_DEPTH;
    if (!t->o.max_nodes)
        t->o.max_nodes = UINT32_MAX;
    if (!t->o.max_scalar || t->o.max_scalar > UINT32_MAX / 2)
        t->o.max_scalar = UINT32_MAX / 2;
    t->a = a;
    t->main_a = a;
    gs_arena_init(&t->item_arena, 64 * 1024);
    t->err = err;
    t->stack = malloc(sizeof *t->stack * t->o.max_depth);
    if (!t->stack || yt_parser(t) != 0) {
        gs_yt_free(t);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return t;
}

void gs_yt_free(gs_yt *t)
{
    if (!t)
        return;
    if (t->p)
        fy_parser_destroy(t->p);
    if (t->diag)
        fy_diag_destroy(t->diag);
    free(t->stack);
    free(t->keys);
    gs_arena_free(&t->item_arena);
    free(t);
}

gs_yn *gs_yt_root(const gs_yt *t) { return t->root; }

uint32_t gs_yt_docs(const gs_yt *t) { return t->docs; }

static gs_yn *yt_node_here(gs_yt *t, uint8_t type)
{
    if (t->nodes >= t->o.max_nodes) {
        yt_fail(t, t->last_line, t->last_col, GS_ERR_LIMIT, "%s has more than %u YAML nodes",
                t->o.on_doc ? "document" : "input", t->o.max_nodes);
        return NULL;
    }
    t->nodes++;
    gs_yn *n = gs_arena_alloc(t->a, sizeof *n);
    if (!n) {
        yt_nomem(t);
        return NULL;
    }
    n->line = t->last_line;
    n->col = t->last_col;
    n->type = type;
    return n;
}

static gs_yn *yt_node(gs_yt *t, struct fy_event *ev, uint8_t type)
{
    const struct fy_mark *m = fy_event_start_mark(ev);
    if (m && m->line >= 0 && m->column >= 0) {
        t->last_line = (uint32_t)m->line + 1 + t->line_off;
        t->last_col = (uint32_t)m->column + 1 + (m->line == 0 ? t->col_off : 0);
    }
    return yt_node_here(t, type);
}

static int yt_attach(gs_yt *t, gs_yn *n)
{
    if (t->depth == 0) {
        t->doc_root = n;
        return 0;
    }
    yt_frame *f = &t->stack[t->depth - 1];
    if (t->stream_depth && t->depth == t->stream_depth) {
        /* a streamed List item: handed out when complete, never linked */
        t->item = n;
        f->count++;
        return 0;
    }
    if (f->node->type == GS_YN_MAP && f->count % 2 == 0 && n->type != GS_YN_SCALAR)
        return yt_fail(t, n->line, n->col, GS_ERR_INVALID, "mapping keys must be scalars, got %s",
                       n->type == GS_YN_MAP ? "a mapping" : "a sequence");
    if (f->tail)
        f->tail->next = n;
    else
        f->node->u.first = n;
    f->tail = n;
    if (f->count == UINT32_MAX - 1)
        return yt_fail(t, n->line, n->col, GS_ERR_LIMIT, "too many items");
    f->count++;
    return 0;
}

static int key_cmp(const void *pa, const void *pb)
{
    const gs_yn *x = *(const gs_yn *const *)pa, *y = *(const gs_yn *const *)pb;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    int c = memcmp(x->u.text, y->u.text, x->len);
    if (c)
        return c;
    /* equal keys: by position, so the later one is reported */
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return (x->col > y->col) - (x->col < y->col);
}

static bool same_key(const gs_yn *a, const gs_yn *b)
{
    return a->len == b->len && memcmp(a->u.text, b->u.text, a->len) == 0;
}

/* Once, when the mapping closes: every later lookup is then unambiguous. */
static int yt_check_duplicates(gs_yt *t, const gs_yn *map)
{
    uint32_t n = map->len;
    if (n < 2)
        return 0;
    const gs_yn *dup = NULL;
    if (n <= YT_PAIRWISE_MAX) {
        for (const gs_yn *a = map->u.first; a && !dup; a = a->next->next)
            for (const gs_yn *b = a->next->next; b; b = b->next->next)
                if (same_key(a, b)) {
                    dup = b;
                    break;
                }
    } else {
        /* a hash set first (no duplicate: the common case, linear); only when there is
         * one, the sort below picks the one to report (the same one as always) */
        size_t hcap = 64;
        while (hcap < 2 * (size_t)n)
            hcap *= 2;
        if (hcap > t->keys_cap) {
            const gs_yn **k = realloc(t->keys, sizeof *k * hcap);
            if (!k)
                return yt_nomem(t);
            t->keys = k;
            t->keys_cap = hcap;
        }
        memset(t->keys, 0, sizeof *t->keys * hcap);
        bool any = false;
        for (const gs_yn *a = map->u.first; a && !any; a = a->next->next) {
            uint64_t h = 1469598103934665603ull ^ a->len;
            for (uint32_t i = 0; i < a->len; i++)
                h = (h ^ (unsigned char)a->u.text[i]) * 1099511628211ull;
            size_t j = (size_t)(h ^ h >> 29) & (hcap - 1);
            for (; t->keys[j]; j = (j + 1) & (hcap - 1))
                if (same_key(t->keys[j], a)) {
                    any = true;
                    break;
                }
            t->keys[j] = a;
        }
        if (!any)
            return 0;
        if (n > t->keys_cap) {
            size_t cap = t->keys_cap ? t->keys_cap : 64;
            while (cap < n)
                cap *= 2;
            const gs_yn **k = realloc(t->keys, sizeof *k * cap);
            if (!k)
                return yt_nomem(t);
            t->keys = k;
            t->keys_cap = cap;
        }
        uint32_t i = 0;
        for (const gs_yn *a = map->u.first; a; a = a->next->next)
            t->keys[i++] = a;
        qsort(t->keys, n, sizeof *t->keys, key_cmp);
        for (i = 1; i < n && !dup; i++)
            if (same_key(t->keys[i - 1], t->keys[i]))
                dup = t->keys[i];
    }
    if (!dup)
        return 0;
    char b[GS_YT_SHOWN + 8];
    return yt_fail(t, dup->line, dup->col, GS_ERR_PARSE, "duplicate mapping key %s",
                   gs_yn_shown(dup, b, sizeof b));
}

static void yt_doc_reset(gs_yt *t)
{
    t->doc_root = NULL;
    t->depth = 0;
    t->skip_depth = 0;
    if (t->o.on_doc) {
        gs_arena_reset(t->a);
        t->nodes = 0;
    }
}

static int yt_doc_end(gs_yt *t)
{
    gs_yn *root = t->doc_root;
    t->doc_root = NULL;
    if (!root || (root->type == GS_YN_SCALAR && root->null))
        return 0;
    t->docs++;
    if (t->o.on_doc)
        return t->o.on_doc(t->o.ctx, root);
    if (t->last_root)
        t->last_root->next = root;
    else
        t->root = root;
    t->last_root = root;
    return 0;
}

static uint8_t style_of(enum fy_scalar_style s)
{
    switch (s) {
    case FYSS_SINGLE_QUOTED: return GS_YS_SINGLE;
    case FYSS_DOUBLE_QUOTED: return GS_YS_DOUBLE;
    case FYSS_LITERAL: return GS_YS_LITERAL;
    case FYSS_FOLDED: return GS_YS_FOLDED;
    default: return GS_YS_PLAIN;
    }
}

static int yt_scalar(gs_yt *t, struct fy_event *ev)
{
    gs_yn *n = yt_node(t, ev, GS_YN_SCALAR);
    if (!n)
        return -1;
    const char *s = "";
    size_t len = 0;
    bool in_arena = false;
    uint8_t style = GS_YS_PLAIN;
    if (ev->scalar.value) {
        style = style_of(fy_token_scalar_style(ev->scalar.value));
        s = gs__fy_scalar_text(ev->scalar.value, t->in_lo, (size_t)(t->in_hi - t->in_lo), t->a,
                               &len, &in_arena);
        if (!s)
            return yt_nomem(t);
        /* libfyaml marks quoted scalars at their first character; point at the quote */
        if ((style == GS_YS_SINGLE || style == GS_YS_DOUBLE) && n->col > 1)
            n->col--;
    }
    if (len > t->o.max_scalar)
        return yt_fail(t, n->line, n->col, GS_ERR_LIMIT, "scalar longer than %u bytes",
                       t->o.max_scalar);
    if (in_arena) {
        /* decoded into the arena, NUL-terminated */
    } else if (t->o.copy_text) {
        s = gs_arena_strndup(t->a, s, len);
        if (!s)
            return yt_nomem(t);
    } else if (len && !((uintptr_t)s >= (uintptr_t)t->in_lo &&
                        (uintptr_t)s + len <= (uintptr_t)t->in_hi)) {
        /* libfyaml built this text (escapes, folding): it dies with the event */
        s = gs_arena_memdup(t->a, s, len);
        if (!s)
            return yt_nomem(t);
    }
    n->u.text = s;
    n->len = (uint32_t)len;
    n->style = style;
    n->plain = style == GS_YS_PLAIN;
    n->null = n->plain && gs_yn_null_text(s, len);
    return yt_attach(t, n);
}

static int yt_event(gs_yt *t, struct fy_event *ev)
{
    gs_yn *n;
    if (t->skip_depth) {
        /* inside a skipped collection: only track nesting */
        if (ev->type == FYET_MAPPING_START || ev->type == FYET_SEQUENCE_START)
            t->skip_depth++;
        else if (ev->type == FYET_MAPPING_END || ev->type == FYET_SEQUENCE_END)
            t->skip_depth--;
        return 0;
    }
    switch (ev->type) {
    case FYET_SCALAR:
        return yt_scalar(t, ev);
    case FYET_MAPPING_START:
    case FYET_SEQUENCE_START: {
        if (t->o.skip && t->depth) {
            yt_frame *f = &t->stack[t->depth - 1];
            if (f->node->type == GS_YN_MAP && f->count % 2 == 1 && t->o.skip(t->o.ctx, f->tail)) {
                n = yt_node(t, ev, GS_YN_SCALAR);
                if (!n)
                    return -1;
                n->u.text = "";
                n->plain = n->null = true;
                t->skip_depth = 1;
                return yt_attach(t, n);
            }
        }
        n = yt_node(t, ev, ev->type == FYET_MAPPING_START ? GS_YN_MAP : GS_YN_SEQ);
        if (!n || yt_attach(t, n) < 0)
            return -1;
        if (t->depth == t->o.max_depth)
            return yt_fail(t, n->line, n->col, GS_ERR_LIMIT, "YAML nested deeper than %u levels",
                           t->o.max_depth);
        t->stack[t->depth++] = (yt_frame){n, NULL, 0};
        return 0;
    }
    case FYET_MAPPING_END:
    case FYET_SEQUENCE_END: {
        if (t->depth == 0)
            return gs_fail(t->err, GS_ERR_INTERNAL, "unbalanced YAML events");
        yt_frame *f = &t->stack[--t->depth];
        if (f->node->type == GS_YN_MAP) {
            f->node->len = f->count / 2;
            return yt_check_duplicates(t, f->node);
        }
        f->node->len = f->count;
        return 0;
    }
    case FYET_DOCUMENT_START:
        if (++t->docs_started > 1 && !t->o.multi) {
            const struct fy_mark *m = fy_event_start_mark(ev);
            uint32_t line = 0, col = 0;
            if (m && m->line >= 0 && m->column >= 0) {
                line = (uint32_t)m->line + 1 + t->line_off;
                col = (uint32_t)m->column + 1 + (m->line == 0 ? t->col_off : 0);
            }
            return yt_fail(t, line, col, GS_ERR_PARSE, "expected one YAML document in %s",
                           what_of(&t->o));
        }
        yt_doc_reset(t);
        return 0;
    case FYET_DOCUMENT_END:
        return yt_doc_end(t);
    case FYET_ALIAS:
        n = yt_node(t, ev, GS_YN_SCALAR);
        if (!n)
            return -1;
        if (n->col > 1) /* libfyaml marks the name; point at the '*' */
            n->col--;
        return yt_fail(t, n->line, n->col, GS_ERR_INVALID,
                       "YAML aliases are not supported in %s; write the value out", what_of(&t->o));
    default:
        return 0;
    }
}

int gs_yt_parse(gs_yt *t, const char *text, size_t len, uint32_t line_off, uint32_t col_off)
{
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
        text += 3; /* UTF-8 byte-order mark: invisible, columns unchanged */
        len -= 3;
    }
    if (!t->o.text_checked && gs_yt_check_text(&t->o, text, len, line_off, col_off, t->err) != 0)
        return -1;
    if (t->failed && yt_parser(t) != 0)
        return yt_nomem(t);
    t->failed = true;
    if (fy_parser_reset(t->p) != 0 || fy_parser_set_string(t->p, len ? text : "", len) != 0)
        return yt_nomem(t);
    t->in_lo = text;
    t->in_hi = text + len;
    t->line_off = line_off;
    t->col_off = col_off;
    t->last_line = line_off + 1;
    t->last_col = col_off + 1;
    t->depth = 0;
    t->skip_depth = 0;
    t->doc_root = NULL;
    int rc = 0;
    struct fy_event *ev;
    while ((ev = fy_parser_parse(t->p)) != NULL) {
        rc = yt_event(t, ev);
        fy_parser_event_free(t->p, ev);
        if (rc < 0)
            break;
    }
    if (rc == 0 && fy_parser_get_stream_error(t->p)) {
        /* the first error, else the first warning (gs__fy_first_error) */
        struct fy_diag_error *de = gs__fy_first_error(t->diag);
        uint32_t line = 0, col = 0;
        if (de && de->line > 0) {
            line = (uint32_t)de->line + line_off;
            col = (uint32_t)(de->column > 0 ? de->column : 0) + (de->line == 1 ? col_off : 0);
        }
        rc = yt_fail(t, line, col, GS_ERR_PARSE, "invalid YAML: %s",
                     de && de->msg ? de->msg : "syntax error");
    }
    t->failed = rc != 0;
    return rc;
}

int gs_yt_build(const gs_yt_opts *opts, gs_arena *a, const char *data, size_t len, gs_yn **root,
                uint32_t *ndocs, gs_error *err)
{
    *root = NULL;
    if (ndocs)
        *ndocs = 0;
    gs_yt *t = gs_yt_new(opts, a, err);
    if (!t)
        return -1;
    int rc = gs_yt_parse(t, data, len, 0, 0);
    if (rc == 0) {
        *root = t->root;
        if (ndocs)
            *ndocs = t->docs;
    }
    gs_yt_free(t);
    return rc;
}

/* ---------------------------------------------------------------- JSON path */
/*
 * Strict JSON (RFC 8259) straight from the bytes into the same tree, for manifests that
 * are JSON. Every node it builds, every check it makes and every message it gives is the
 * libfyaml path's (positions, styles, null, limits, duplicate keys), so decoders cannot
 * tell the two apart. Values under keys the skip callback names are passed over with
 * gs_js_skip (strings and brackets only, never tokenized). Anything that is not strict
 * JSON (YAML flow style, comments, a bad escape, a raw tab in a string, "01", ...)
 * returns 1 before anything was handed to the caller: the caller then gives the same
 * bytes to gs_yt_parse, so what libfyaml accepts and every message it gives stay as they
 * were. Only when List items were already handed out (gs_yt_stream_items) is a
 * malformed document reported here, as "invalid JSON: ...".
 */

void gs_yt_stream_items(gs_yt *t, bool on) { t->stream_next = on; }

static int yj_bad(gs_yt *t, const char *at, const char *what)
{
    if (!t->streamed)
        return 1;
    gs_jcur_move(&t->cur, at);
    return yt_fail(t, t->cur.line, t->cur.col, GS_ERR_PARSE, "invalid JSON: %s", what);
}

static gs_yn *yj_node(gs_yt *t, const char *at, uint8_t type)
{
    gs_jcur_move(&t->cur, at);
    t->last_line = t->cur.line;
    t->last_col = t->cur.col;
    return yt_node_here(t, type);
}

/* Start of a value: items of a streamed List go to the item arena. */
static void yj_value_start(gs_yt *t)
{
    if (t->stream_depth && t->depth == t->stream_depth) {
        t->a = &t->item_arena;
        t->item_nodes_base = t->nodes;
    }
}

/* After a value: a complete streamed item is handed out and forgotten. */
static int yj_value_end(gs_yt *t)
{
    if (!t->item || t->depth != t->stream_depth)
        return 0;
    gs_yn *it = t->item;
    t->item = NULL;
    t->streamed = true;
    int rc = t->o.on_item(t->o.ctx, it, t->item_index++, t->cur.at);
    if (rc == 1 && t->win) {
        t->win_hold = true;
        rc = 0;
    }
    gs_arena_reset(&t->item_arena);
    t->a = t->main_a;
    t->nodes = t->item_nodes_base;
    return rc;
}

static int yj_close(gs_yt *t)
{
    yt_frame *f = &t->stack[--t->depth];
    if (t->stream_depth && t->depth + 1 == t->stream_depth) {
        t->stream_depth = 0; /* the items sequence: its items were handed out */
        f->node->u.first = NULL;
        f->node->len = 0;
        t->win_tail = t->win != NULL;
        return 0;
    }
    if (f->node->type == GS_YN_MAP) {
        f->node->len = f->count / 2;
        return yt_check_duplicates(t, f->node);
    }
    f->node->len = f->count;
    return 0;
}

/* p at the opening quote of a key or string value. */
static int yj_string(gs_yt *t, const char **pp, const char *end)
{
    const char *p = *pp, *bad = NULL;
    bool esc = false;
    const char *q = gs_js_str_end(p + 1, end, &esc, &bad);
    if (!q)
        return yj_bad(t, bad, bad >= end ? "unterminated string" : "control character in a string");
    const char *s = p + 1;
    size_t len = (size_t)(q - s);
    char *o = NULL;
    if (esc) {
        o = gs_arena_alloc(t->a, len + 1);
        if (!o)
            return yt_nomem(t);
        long m = gs_js_unescape(s, len, o, &bad);
        if (m < 0)
            return yj_bad(t, bad, "invalid escape");
        len = (size_t)m;
        s = o;
    }
    /* placed as libfyaml places it: at the first character, then back onto the quote
     * (so a node-count error names the character after the quote, as it does there) */
    gs_yn *n = yj_node(t, p + 1, GS_YN_SCALAR);
    if (!n)
        return -1;
    if (n->col > 1)
        n->col--;
    if (len > t->o.max_scalar)
        return yt_fail(t, n->line, n->col, GS_ERR_LIMIT, "scalar longer than %u bytes", t->o.max_scalar);
    if (!o && (t->o.copy_text || (t->win && t->a == t->main_a))) {
        s = gs_arena_strndup(t->a, s, len); /* a window's bytes move */
        if (!s)
            return yt_nomem(t);
    }
    n->u.text = s;
    n->len = (uint32_t)len;
    n->style = GS_YS_DOUBLE;
    *pp = q + 1;
    return yt_attach(t, n);
}

/* true, false, null or a number at p. */
static int yj_plain(gs_yt *t, const char **pp, const char *end)
{
    const char *p = *pp, *q, *bad = p;
    char c = *p;
    if (c == 't' || c == 'f' || c == 'n') {
        const char *w = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t wl = strlen(w);
        if ((size_t)(end - p) < wl || memcmp(p, w, wl) != 0)
            return yj_bad(t, p, "expected a value");
        q = p + wl;
    } else {
        q = gs_js_number(p, end, &bad);
        if (!q)
            return yj_bad(t, bad, "invalid number");
    }
    gs_yn *n = yj_node(t, p, GS_YN_SCALAR);
    if (!n)
        return -1;
    size_t len = (size_t)(q - p);
    if (len > t->o.max_scalar)
        return yt_fail(t, n->line, n->col, GS_ERR_LIMIT, "scalar longer than %u bytes", t->o.max_scalar);
    const char *s = p;
    if (t->o.copy_text || (t->win && t->a == t->main_a)) {
        s = gs_arena_strndup(t->a, p, len);
        if (!s)
            return yt_nomem(t);
    }
    n->u.text = s;
    n->len = (uint32_t)len;
    n->style = GS_YS_PLAIN;
    n->plain = true;
    n->null = c == 'n';
    *pp = q;
    return yt_attach(t, n);
}

static bool key_is(const gs_yn *k, const char *s)
{
    size_t l = strlen(s);
    return k->len == l && memcmp(k->u.text, s, l) == 0;
}

/* ---- windows (gs_yt_parse_json_window): *pp and *endp point into w->buf */

static int yj_win_bad(gs_yt *t)
{
    gs_window *w = t->win;
    int rc = gs_yt_check_text(&t->o, w->buf, w->bad_at + 1, w->line - 1, w->col - 1, t->err);
    return rc ? -1 : gs_fail(t->err, GS_ERR_INTERNAL, "window check disagrees");
}

/* One more read; the pointers follow the buffer. */
static int yj_win_more(gs_yt *t, const char **pp, const char **endp)
{
    gs_window *w = t->win;
    size_t po = (size_t)(*pp - w->buf), co = (size_t)(t->cur.at - w->buf);
    if (gs_window_more(w, t->err) != 0)
        return -1;
    if (w->bad)
        return yj_win_bad(t);
    *pp = w->buf + po;
    *endp = w->buf + w->len;
    t->cur.at = w->buf + co;
    t->cur.clean = t->cur.probe = t->cur.at; /* the buffer may have moved */
    t->cur.end = *endp;
    return 0;
}

/* Blanks at *pp passed over, reading on while they run to the window's end. */
static int yj_win_ws(gs_yt *t, const char **pp, const char **endp)
{
    for (;;) {
        *pp = gs_js_ws(*pp, *endp);
        if (*pp < *endp || t->win->eof)
            return 0;
        if (yj_win_more(t, pp, endp) != 0)
            return -1;
    }
}

/* Fill until the scan (started in *s at *pp) ends or the stream does. */
static int yj_win_scan(gs_yt *t, gs_js_scan *s, const char **pp, const char **endp)
{
    size_t from = (size_t)(*pp - t->win->buf);
    for (;;) {
        if (gs_js_scan_feed(s, t->win->buf + from, *endp) || t->win->eof)
            return 0;
        from = t->win->len;
        if (yj_win_more(t, pp, endp) != 0)
            return -1;
    }
}

/* Before a streamed item: drop what is behind it (once items were handed out, so a
 * fallback still has the whole value), then have the whole item in the window. */
static int yj_win_item(gs_yt *t, const char **pp, const char **endp)
{
    gs_window *w = t->win;
    if (w->bad)
        return yj_win_bad(t);
    if (yj_win_ws(t, pp, endp) != 0) /* first: a CR LF is never cut where positions are taken */
        return -1;
    if (t->streamed && !t->win_hold && *pp > w->buf) {
        gs_jcur_move(&t->cur, *pp);
        gs_window_drop(w, (size_t)(*pp - w->buf));
        w->line = t->cur.line; /* the same count, kept exact even across a CR LF cut */
        w->col = t->cur.col;
        *pp = w->buf;
        *endp = w->buf + w->len;
        t->cur.at = w->buf;
        t->cur.clean = t->cur.probe = t->cur.at;
        t->cur.end = *endp;
    }
    w->mark = (size_t)(*pp - w->buf);
    gs_js_scan s = {0, GS_JSS_BEFORE};
    return yj_win_scan(t, &s, pp, endp);
}

/* After the streamed items closed: the rest of the document (depth 1) into the window. */
static int yj_win_tail(gs_yt *t, const char **pp, const char **endp)
{
    t->win_tail = false;
    gs_js_scan s = {1, GS_JSS_IN};
    return yj_win_scan(t, &s, pp, endp);
}

/* One value at *pp (no blank before it), with everything it contains. */
static int yj_run(gs_yt *t, const char **pp, const char *end)
{
    const char *p = *pp;
    int rc;
    for (;;) {
        /* ---- a value at p */
        if (t->win && t->stream_depth && t->depth == t->stream_depth &&
            (rc = yj_win_item(t, &p, &end)) != 0)
            return rc;
        yj_value_start(t);
        char c = p < end ? *p : '\0';
        if (c == '{' || c == '[') {
            yt_frame *f = t->depth ? &t->stack[t->depth - 1] : NULL;
            bool in_value = f && f->node->type == GS_YN_MAP && f->count % 2 == 1;
            if (t->o.skip && in_value && t->o.skip(t->o.ctx, f->tail)) {
                gs_yn *n = yj_node(t, p, GS_YN_SCALAR);
                if (!n)
                    return -1;
                n->u.text = "";
                n->plain = n->null = true;
                const char *bad = NULL;
                bool deep;
                const char *q = gs_js_skip(p, end, 0, &bad, &deep);
                if (!q)
                    return yj_bad(t, bad, bad >= end ? "unclosed value" : "unbalanced brackets");
                if (yt_attach(t, n) < 0)
                    return -1;
                p = q;
                goto after_value;
            }
            const gs_yn *key = in_value ? f->tail : NULL;
            gs_yn *n = yj_node(t, p, c == '{' ? GS_YN_MAP : GS_YN_SEQ);
            if (!n || yt_attach(t, n) < 0)
                return -1;
            if (t->depth == t->o.max_depth)
                return yt_fail(t, n->line, n->col, GS_ERR_LIMIT, "YAML nested deeper than %u levels",
                               t->o.max_depth);
            t->stack[t->depth++] = (yt_frame){n, NULL, 0};
            if (c == '[' && t->stream_next && t->depth == 2 && key && t->o.on_item &&
                key_is(key, "items"))
                t->stream_depth = 2;
            p = gs_js_ws(p + 1, end);
            if (t->win && t->stream_depth == t->depth && (rc = yj_win_ws(t, &p, &end)) != 0)
                return rc;
            if (p < end && *p == (c == '{' ? '}' : ']')) {
                p++;
                if ((rc = yj_close(t)) != 0)
                    return rc;
                goto after_value;
            }
            if (c == '{')
                goto key;
            continue;
        }
        if (c == '"')
            rc = yj_string(t, &p, end);
        else if (c == 't' || c == 'f' || c == 'n' || c == '-' || (c >= '0' && c <= '9'))
            rc = yj_plain(t, &p, end);
        else
            rc = yj_bad(t, p, "expected a value");
        if (rc != 0)
            return rc;
    after_value:
        if ((rc = yj_value_end(t)) != 0)
            return rc;
        if (t->win_tail && (rc = yj_win_tail(t, &p, &end)) != 0)
            return rc;
        if (t->depth == 0) {
            *pp = p;
            return 0;
        }
        p = gs_js_ws(p, end);
        {
            yt_frame *f = &t->stack[t->depth - 1];
            bool map = f->node->type == GS_YN_MAP;
            if (p < end && *p == ',') {
                p = gs_js_ws(p + 1, end);
                if (!map)
                    continue;
                goto key;
            }
            if (p < end && *p == (map ? '}' : ']')) {
                p++;
                if ((rc = yj_close(t)) != 0)
                    return rc;
                goto after_value;
            }
            return yj_bad(t, p, map ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    key:
        if (p >= end || *p != '"')
            return yj_bad(t, p, "expected a string key");
        if ((rc = yj_string(t, &p, end)) != 0)
            return rc;
        p = gs_js_ws(p, end);
        if (p >= end || *p != ':')
            return yj_bad(t, p, "expected ':'");
        p = gs_js_ws(p + 1, end);
    }
}

static int yj_parse(gs_yt *t, const char *text, size_t len, uint32_t line_off, uint32_t col_off,
                    size_t *used, const char **endp)
{
    *used = 0;
    bool stream = t->stream_next;
    t->stream_next = false;
    if (len == 0 || (text[0] != '{' && text[0] != '['))
        return 1;
    if (!t->o.text_checked && gs_yt_check_text(&t->o, text, len, line_off, col_off, t->err) != 0)
        return -1;
    uint32_t started = t->docs_started;
    if (++t->docs_started > 1 && !t->o.multi) {
        t->docs_started = started;
        return 1; /* libfyaml says it */
    }
    t->a = t->main_a;
    yt_doc_reset(t);
    t->in_lo = text;
    t->in_hi = text + len;
    t->line_off = line_off;
    t->col_off = col_off;
    /* CR line breaks (rare): the cursor finds them on its way and counts them as YAML does */
    gs_jcur_init_text(&t->cur, text, text + len, line_off + 1, col_off + 1, false);
    t->stream_next = stream;
    t->stream_depth = 0;
    t->item = NULL;
    t->item_index = 0;
    t->streamed = false;
    const char *p = text;
    t->win_tail = false;
    int rc = yj_run(t, &p, text + len);
    *endp = p;
    t->win_tail = false;
    t->stream_next = false;
    t->stream_depth = 0;
    t->a = t->main_a;
    if (t->item) {
        t->item = NULL;
        gs_arena_reset(&t->item_arena);
    }
    if (rc == 1) {
        t->docs_started = started;
        t->depth = 0;
        t->doc_root = NULL;
        return 1;
    }
    if (rc != 0)
        return -1;
    *used = t->win ? 0 : (size_t)(p - text);
    return yt_doc_end(t);
}

int gs_yt_parse_json(gs_yt *t, const char *text, size_t len, uint32_t line_off, uint32_t col_off,
                     size_t *used)
{
    const char *e;
    t->win = NULL;
    return yj_parse(t, text, len, line_off, col_off, used, &e);
}

int gs_yt_parse_json_window(gs_yt *t, gs_window *w, size_t off, uint32_t line_off, uint32_t col_off,
                            size_t *end_off)
{
    size_t used;
    const char *e = NULL;
    t->win = w;
    t->win_hold = false;
    *end_off = off;
    int rc = yj_parse(t, w->buf + off, w->len - off, line_off, col_off, &used, &e);
    t->win = NULL;
    if (rc == 0)
        *end_off = (size_t)(e - w->buf);
    return rc;
}
