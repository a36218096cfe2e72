/*
 * json.c - the library's JSON reader (contract in json_int.h).
 *
 * Recursive descent over the bytes. Children of the container being read are collected on
 * one growable stack shared by the whole parse and moved into the arena as one block when
 * the container closes, so the tree costs one allocation per container and per string
 * that needs decoding; strings without escapes are copied once, numbers point into the
 * arena copy of their text. Depth is bounded before recursing, so hostile nesting costs
 * stack frames only up to the limit. The grammar of the pieces (whitespace, strings and
 * their escapes, numbers, literals) is jscan_int.h's, shared with the fast JSON paths;
 * this file adds structure, limits, unique keys and its own error wording and places.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/jscan_int.h"
#include "util/json_int.h"

#define JSON_DEFAULT_DEPTH 64u
#define JSON_MAX_NUMBER 64u

typedef struct jp {
    const char *name;
    int first_line;
    const char *start, *p, *end;
    gs_arena *a;
    GS_VEC(gs_jv) stack;
    gs_json_limits lim;
    gs_error *err;
} jp;

static int jp_fail(jp *j, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int jp_fail(jp *j, const char *at, const char *fmt, ...)
{
    if (!j->err)
        return -1;
    int line, col;
    gs_text_line_col(j->start, (size_t)(at - j->start), &line, &col);
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(j->err, GS_ERR_PARSE, j->name, j->first_line + line - 1, col, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

static int jp_nomem(jp *j)
{
    return gs_fail(j->err, GS_ERR_NOMEM, "out of memory reading %s", j->name ? j->name : "JSON");
}

static inline void jp_ws(jp *j) { j->p = gs_js_ws(j->p, j->end); }

/* j->p is at the opening quote. The grammar is jscan's (gs_js_str_end finds the end 16
 * bytes at a time, gs_js_unescape_why decodes); the wording of errors is this reader's. */
static int jp_string(jp *j, gs_jv *out)
{
    const char *at = j->p, *s = j->p + 1, *bad = NULL;
    bool escapes = false;
    const char *q = gs_js_str_end(s, j->end, &escapes, &bad);
    if (!q) {
        if (bad >= j->end)
            return jp_fail(j, at, "unterminated string");
        return jp_fail(j, bad, "control character in a string (escape it)");
    }
    size_t srclen = (size_t)(q - s), n = srclen;
    if (j->lim.max_string && srclen > j->lim.max_string && !escapes)
        return jp_fail(j, at, "string longer than %u bytes", j->lim.max_string);
    char *o = gs_arena_alloc(j->a, srclen + 1); /* the decoded text is never longer */
    if (!o)
        return jp_nomem(j);
    if (!escapes) {
        memcpy(o, s, srclen);
    } else {
        int why = 0;
        long m = gs_js_unescape_why(s, srclen, o, true, &bad, &why);
        if (m < 0) {
            switch (why) {
            case GS_JSE_HEX: return jp_fail(j, bad, "bad \\u escape");
            case GS_JSE_SURROGATE: return jp_fail(j, bad, "unpaired UTF-16 surrogate in \\u escape");
            case GS_JSE_NUL: return jp_fail(j, bad, "\\u0000 is not allowed");
            default: {
                char e = bad + 1 < q ? bad[1] : '?';
                return jp_fail(j, bad, "bad escape \\%c", e >= 0x20 && e < 0x7f ? e : '?');
            }
            }
        }
        n = (size_t)m;
        if (j->lim.max_string && n > j->lim.max_string)
            return jp_fail(j, at, "string longer than %u bytes", j->lim.max_string);
    }
    j->p = q + 1;
    o[n] = 0;
    out->t = GS_JSTR;
    out->s = o;
    out->n = (uint32_t)n;
    return 0;
}

/* j->p is at '-' or a digit. The grammar is gs_js_number's; the message says which rule
 * the byte where it stopped (*bad) broke, reported at the number's start. */
static int jp_number(jp *j, gs_jv *out)
{
    const char *at = j->p, *bad = at;
    const char *p = gs_js_number(at, j->end, &bad);
    if (!p) {
        if (bad < j->end && *bad >= '0' && *bad <= '9')
            return jp_fail(j, at, "bad number: leading zero");
        if (bad > at + 1) { /* past a digit: "1." or "1e" */
            if (bad[-1] == '.')
                return jp_fail(j, at, "bad number: digits expected after '.'");
            return jp_fail(j, at, "bad number: exponent digits expected");
        }
        return jp_fail(j, at, "bad number");
    }
    if ((size_t)(p - at) > JSON_MAX_NUMBER)
        return jp_fail(j, at, "number longer than %u characters", JSON_MAX_NUMBER);
    out->t = GS_JNUM;
    out->s = gs_arena_strndup(j->a, at, (size_t)(p - at));
    if (!out->s)
        return jp_nomem(j);
    out->n = (uint32_t)(p - at);
    j->p = p;
    return 0;
}

static int jp_value(jp *j, gs_jv *out, uint32_t depth);

/* Objects up to this many pairs are checked for duplicate keys as each key arrives; larger
 * ones once more when they close, by sorting (so a hostile object costs n log n). */
#define SMALL_OBJECT 16

typedef struct keyref {
    const char *s;
    uint32_t n;
    size_t off;
} keyref;

static int cmp_keyref(const void *a, const void *b)
{
    const keyref *x = a, *y = b;
    uint32_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    if (c)
        return c;
    if (x->n != y->n)
        return x->n < y->n ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Fails on the first key (in input order) that repeats an earlier one; 0 when none does. */
static int large_object_dups(jp *j, const gs_jv *kids, size_t pairs)
{
    keyref *k = malloc(pairs * sizeof *k);
    if (!k)
        return jp_nomem(j);
    for (size_t i = 0; i < pairs; i++)
        k[i] = (keyref){kids[2 * i].s, kids[2 * i].n, kids[2 * i].off};
    qsort(k, pairs, sizeof *k, cmp_keyref);
    size_t dup = SIZE_MAX;
    const char *name = NULL;
    for (size_t i = 1; i < pairs; i++)
        if (k[i].n == k[i - 1].n && memcmp(k[i].s, k[i - 1].s, k[i].n) == 0 && k[i].off < dup) {
            dup = k[i].off;
            name = k[i].s;
        }
    free(k);
    if (dup == SIZE_MAX)
        return 0;
    return jp_fail(j, j->start + dup, "duplicate key \"%s\"", name);
}

static bool key_seen(const gs_jv *kids, size_t npairs, const gs_jv *key)
{
    for (size_t i = 0; i < npairs; i++)
        if (kids[2 * i].n == key->n && memcmp(kids[2 * i].s, key->s, key->n) == 0)
            return true;
    return false;
}

static int jp_container(jp *j, gs_jv *out, uint32_t depth, bool object)
{
    const char *at = j->p;
    if (depth >= j->lim.max_depth)
        return jp_fail(j, at, "nesting deeper than %u levels", j->lim.max_depth);
    j->p++;
    size_t base = j->stack.n;
    char close = object ? '}' : ']';
    jp_ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
    } else {
        for (;;) {
            jp_ws(j);
            gs_jv item;
            memset(&item, 0, sizeof item);
            if (object) {
                if (j->p >= j->end || *j->p != '"')
                    return jp_fail(j, j->p, "expected a quoted key");
                item.off = (size_t)(j->p - j->start);
                if (jp_string(j, &item) < 0)
                    return -1;
                size_t pairs = (j->stack.n - base) / 2;
                if (j->lim.unique_keys && pairs && pairs < SMALL_OBJECT &&
                    key_seen(j->stack.v + base, pairs, &item))
                    return jp_fail(j, j->start + item.off, "duplicate key \"%s\"", item.s);
                if (gs_vec_push(j->stack, item) < 0)
                    return jp_nomem(j);
                jp_ws(j);
                if (j->p >= j->end || *j->p != ':')
                    return jp_fail(j, j->p, "expected ':' after a key");
                j->p++;
                memset(&item, 0, sizeof item);
            }
            if (jp_value(j, &item, depth + 1) < 0)
                return -1;
            if (gs_vec_push(j->stack, item) < 0)
                return jp_nomem(j);
            size_t items = (j->stack.n - base) / (object ? 2 : 1);
            if (j->lim.max_items && items > j->lim.max_items)
                return jp_fail(j, at, "more than %u items", j->lim.max_items);
            jp_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == close) {
                j->p++;
                break;
            }
            return jp_fail(j, j->p, "expected ',' or '%c'", close);
        }
    }
    size_t n = j->stack.n - base;
    if (object && j->lim.unique_keys && n / 2 >= SMALL_OBJECT &&
        large_object_dups(j, j->stack.v + base, n / 2) < 0)
        return -1;
    out->t = object ? GS_JOBJ : GS_JARR;
    out->n = (uint32_t)(object ? n / 2 : n);
    out->kids = NULL;
    if (n) {
        out->kids = gs_arena_memdup(j->a, &j->stack.v[base], sizeof(gs_jv) * n);
        if (!out->kids)
            return jp_nomem(j);
    }
    j->stack.n = base;
    return 0;
}

static int jp_value(jp *j, gs_jv *out, uint32_t depth)
{
    jp_ws(j);
    if (j->p >= j->end)
        return jp_fail(j, j->p, "expected a value");
    out->off = (size_t)(j->p - j->start);
    char c = *j->p;
    if (c == '"')
        return jp_string(j, out);
    if (c == '{' || c == '[')
        return jp_container(j, out, depth, c == '{');
    if (c == '-' || (c >= '0' && c <= '9'))
        return jp_number(j, out);
    char kind;
    const char *q = gs_js_literal(j->p, j->end, &kind);
    if (q) {
        out->t = kind == 'n' ? GS_JNULL : GS_JBOOL;
        out->b = kind == 't';
        j->p = q;
        return 0;
    }
    return jp_fail(j, j->p, "unexpected character '%c'", c >= 0x20 && c < 0x7f ? c : '?');
}

int gs_json_parse(const char *name, int first_line, const char *data, size_t len,
                  const gs_json_limits *lim, gs_arena *a, gs_jv *out, gs_error *err)
{
    jp j;
    memset(&j, 0, sizeof j);
    j.name = name;
    j.first_line = first_line > 0 ? first_line : 1;
    j.start = j.p = data;
    j.end = data + len;
    j.a = a;
    j.err = err;
    if (lim)
        j.lim = *lim;
    if (!j.lim.max_depth)
        j.lim.max_depth = JSON_DEFAULT_DEPTH;
    memset(out, 0, sizeof *out);
    size_t bad = gs_utf8_invalid_at(data, len);
    if (bad < len)
        return jp_fail(&j, data + bad, "not valid UTF-8");
    int rc = jp_value(&j, out, 0);
    if (rc == 0) {
        jp_ws(&j);
        if (j.p < j.end)
            rc = jp_fail(&j, j.p, "text after the JSON value");
    }
    gs_vec_free(j.stack);
    if (rc < 0)
        memset(out, 0, sizeof *out);
    return rc;
}

const gs_jv *gs_json_get(const gs_jv *obj, const char *key)
{
    if (!obj || obj->t != GS_JOBJ)
        return NULL;
    size_t klen = strlen(key);
    for (uint32_t i = 0; i < obj->n; i++) {
        const gs_jv *k = &obj->kids[2 * i];
        if (k->n == klen && memcmp(k->s, key, klen) == 0)
            return &obj->kids[2 * i + 1];
    }
    return NULL;
}

void gs_json_where(const char *data, int first_line, const gs_jv *v, int *line, int *col)
{
    gs_text_line_col(data, v ? v->off : 0, line, col);
    *line += (first_line > 0 ? first_line : 1) - 1;
}

const char *gs_json_type_name(gs_jtype t)
{
    switch (t) {
    case GS_JNULL: return "null";
    case GS_JBOOL: return "a boolean";
    case GS_JNUM: return "a number";
    case GS_JSTR: return "a string";
    case GS_JARR: return "an array";
    case GS_JOBJ: return "an object";
    }
    return "value";
}
