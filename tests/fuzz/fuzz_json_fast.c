/*
 * fuzz_json_fast.c - libFuzzer target for the JSON path of the tree builder
 * (gs_yt_parse_json, lib/util/yaml_tree.c over lib/util/jscan.c), differential against
 * libfyaml (gs_yt_parse) on the same bytes.
 *
 * The first byte picks the options: bit 0 skip the values of "env" keys (the reader's
 * unread-key skip), bit 1 NUL-terminated copies, bit 2 small bounds (depth 8, 200 nodes,
 * 64-byte scalars), bit 3 stream the items of a root "items" sequence. The rest is the
 * input, from its first '{' or '[' on (a blank prefix shifts positions).
 *
 * Invariants (abort on violation):
 *  - the JSON path never reads past the input, returns 0, -1 (a parse, limit or memory
 *    error with the file name) or 1 (not strict JSON: the caller falls back);
 *  - accepted (0): libfyaml accepts the same bytes (the value the JSON path took) and
 *    builds the same tree: types, text, lengths, styles, plain/null flags, line and column
 *    of every node; skipped values are null placeholders at the same place in both;
 *  - refused with an error (-1, not out of memory): libfyaml refuses the same bytes too,
 *    with the same message when it is one the JSON path shares (duplicate key, depth,
 *    node and scalar bounds) and the same position;
 *  - streamed items: each item the JSON path hands out is the tree libfyaml builds for
 *    that item (compared by position and text through a fingerprint).
 *
 *  - the scanning primitives against byte-at-a-time references kept here: gs_js_skip
 *    (64 bytes at a time, string masks from quotes) from every '{' or '[' of the input
 *    (the first 16), with and without a depth bound: the same end, error byte and
 *    too-deep flag; gs_jcur_move (plain runs found ahead, masked last blocks) over the
 *    input in steps the input picks: the same line and column at every step;
 *    gs_js_scan_feed (the pipe window's item scanner) fed in pieces: never ends a value
 *    before gs_js_skip does.
 *
 * Known, intended differences (not checked): inside a skipped value the JSON path checks
 * strings and brackets only, so `{"env": [1 2]}` is accepted by it and refused by libfyaml
 * (no decoder ever reads those values); when streaming, a document with an error after
 * the first item is refused with "invalid JSON: ..." instead of libfyaml's message, and
 * the items before the error were handed out (the reader's callers drop the whole file on
 * error). An error the JSON path reports where both parsers refuse may differ in message
 * when libfyaml finds a syntax error first (it tokenizes ahead to the end of the line), so
 * messages and positions are compared only when the whole input is one strict JSON value
 * (json.c, the library's strict DOM reader, is the referee).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jscan_int.h"
#include "util/json_int.h"
#include "util/yaml_tree_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#ifdef FZ_STATS
long fz_stats[4]; /* error, accepted, fallback, streamed */
#endif

typedef struct fz {
    uint64_t fp;       /* fingerprint of streamed items */
    uint32_t items;
} fz;

static bool skip_env(void *ctx, const gs_yn *key)
{
    (void)ctx;
    return key->len == 3 && !memcmp(key->u.text, "env", 3);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

static uint64_t fingerprint(uint64_t h, const gs_yn *n)
{
    h = mix(h, n->type);
    h = mix(h, n->line);
    h = mix(h, n->col);
    h = mix(h, n->len);
    if (n->type == GS_YN_SCALAR) {
        h = mix(h, (uint64_t)n->style << 2 | (uint64_t)n->plain << 1 | n->null);
        for (uint32_t i = 0; i < n->len; i++)
            h = mix(h, (unsigned char)n->u.text[i]);
        return h;
    }
    for (const gs_yn *c = n->u.first; c; c = c->next)
        h = fingerprint(h, c);
    return h;
}

static int on_item(void *ctx, const gs_yn *item, uint32_t index, const char *done)
{
    fz *f = ctx;
    (void)done;
    if (index != f->items)
        abort();
    f->items++;
    f->fp = fingerprint(f->fp, item);
    return 0;
}

static void same_tree(const gs_yn *a, const gs_yn *b)
{
    if (!a || !b) {
        if (a != b)
            abort();
        return;
    }
    if (a->type != b->type || a->len != b->len || a->line != b->line || a->col != b->col)
        abort();
    if (a->type == GS_YN_SCALAR) {
        if (a->style != b->style || a->plain != b->plain || a->null != b->null)
            abort();
        if (a->len && memcmp(a->u.text, b->u.text, a->len) != 0)
            abort();
        return;
    }
    const gs_yn *x = a->u.first, *y = b->u.first;
    for (; x && y; x = x->next, y = y->next)
        same_tree(x, y);
    if (x || y)
        abort();
}

static bool shared_message(const char *m)
{
    return !strncmp(m, "duplicate mapping key", 21) || strstr(m, "nested deeper than") ||
           strstr(m, "YAML nodes") || !strncmp(m, "scalar longer than", 18);
}

/* One strict JSON value (the library's DOM reader, json.c, as the referee). */
static bool strict_json(const char *text, size_t len)
{
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_json_limits lim = {.max_depth = 100000};
    gs_jv v;
    bool ok = gs_json_parse("x", 1, text, len, &lim, &a, &v, NULL) == 0;
    gs_arena_free(&a);
    return ok;
}


/* ---------------------------------------------------------------- references */

static const char *ref_str_end(const char *p, const char *end, const char **bad)
{
    for (; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p;
        if (c == '\\') {
            if (end - p < 2) {
                *bad = end;
                return NULL;
            }
            if ((unsigned char)p[1] < 0x20) {
                *bad = p + 1;
                return NULL;
            }
            p++;
            continue;
        }
        if (c < 0x20) {
            *bad = p;
            return NULL;
        }
    }
    *bad = end;
    return NULL;
}

static const char *ref_skip(const char *p, const char *end, uint32_t max_depth, const char **bad,
                            bool *too_deep)
{
    static uint8_t kinds[1 << 16];
    size_t depth = 0;
    *too_deep = false;
    for (; p < end; p++) {
        char c = *p;
        if (c == '"') {
            const char *q = ref_str_end(p + 1, end, bad);
            if (!q)
                return NULL;
            p = q;
        } else if (c == '{' || c == '[') {
            if (max_depth && depth >= max_depth) {
                *bad = p;
                *too_deep = true;
                return NULL;
            }
            if (depth < 4096)
                kinds[depth] = c == '[';
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0 || (depth - 1 < 4096 && kinds[depth - 1] != (c == ']'))) {
                *bad = p;
                return NULL;
            }
            if (--depth == 0)
                return p + 1;
        }
    }
    *bad = end;
    return NULL;
}

static void check_primitives(const char *buf, size_t len, uint8_t flags)
{
    const char *end = buf + len;
    int starts = 0;
    for (size_t i = 0; i < len && starts < 16; i++) {
        if (buf[i] != '{' && buf[i] != '[')
            continue;
        starts++;
        for (uint32_t md = 0; md <= 3; md += 3) {
            const char *b1 = NULL, *b2 = NULL;
            bool d1 = false, d2 = false;
            const char *r1 = gs_js_skip(buf + i, end, md, &b1, &d1);
            const char *r2 = ref_skip(buf + i, end, md, &b2, &d2);
            if (r1 != r2 || (!r1 && (b1 != b2 || d1 != d2))) {
                fprintf(stderr, "gs_js_skip from %zu (max_depth %u): %td/%td/%d, reference %td/%td/%d\n", i, md,
                        r1 ? r1 - buf : -1, b1 ? b1 - buf : -1, d1, r2 ? r2 - buf : -1, b2 ? b2 - buf : -1, d2);
                abort();
            }
            /* the window's scanner never stops inside a value that closes */
            gs_js_scan sc = {0, GS_JSS_BEFORE};
            const char *f = NULL, *p = buf + i;
            size_t piece = 1 + (flags >> 4);
            while (p < end && !f) {
                const char *e = (size_t)(end - p) > piece ? p + piece : end;
                f = gs_js_scan_feed(&sc, p, e);
                p = e;
            }
            if (r1 && f && f < r1) {
                fprintf(stderr, "gs_js_scan_feed ended at %td inside a value closing at %td\n", f - buf, r1 - buf);
                abort();
            }
        }
    }
    /* positions: reference counts byte by byte (LF, CR LF, lone CR; characters) */
    gs_jcur c;
    gs_jcur_init_text(&c, buf, end, 1, 1, false);
    uint32_t line = 1, col = 1;
    size_t at = 0, step = 1 + (flags >> 4) * 3;
    uint32_t k = 0;
    while (at < len) {
        size_t to = at + step + (k++ * 7) % 23;
        if (to > len)
            to = len;
        for (size_t j = at; j < to; j++) {
            unsigned char b = (unsigned char)buf[j];
            if (b == '\n' || (b == '\r' && (j + 1 >= len || buf[j + 1] != '\n'))) {
                line++;
                col = 1;
            } else if ((b & 0xC0) != 0x80) {
                col++;
            }
        }
        gs_jcur_move(&c, buf + to);
        if (c.line != line || c.col != col) {
            fprintf(stderr, "gs_jcur_move to %zu: %u:%u, reference %u:%u\n", to, c.line, c.col, line, col);
            abort();
        }
        at = to;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_yt_opts o;
    memset(&o, 0, sizeof o);
    o.file = "fuzz.json";
    o.what = "the input";
    o.multi = true;
    if (flags & 1)
        o.skip = skip_env;
    o.copy_text = (flags & 2) != 0;
    if (flags & 4) {
        o.max_depth = 8;
        o.max_nodes = 200;
        o.max_scalar = 64;
    }
    bool stream = (flags & 8) != 0;
    /* heap copy of exactly len bytes: reads past the end are caught by ASan */
    char *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, text, len);
    gs_error e1, e2;
    gs_error_clear(&e1);
    gs_error_clear(&e2);
    if (gs_yt_check_text(&o, buf, len, 0, 0, &e1) != 0) {
        free(buf);
        return 0;
    }
    o.text_checked = true;
    size_t start = 0;
    while (start < len && (buf[start] == ' ' || buf[start] == '\n' || buf[start] == '\t' || buf[start] == '\r'))
        start++;
    /* position of buf[start] */
    uint32_t line = 0, col = 0;
    for (size_t i = 0; i < start; i++) {
        if (buf[i] == '\n') {
            line++;
            col = 0;
        } else {
            col++;
        }
    }
    fz f1 = {0, 0}, f2 = {0, 0};
    gs_arena a1, a2;
    gs_arena_init(&a1, 0);
    gs_arena_init(&a2, 0);
    o.on_item = on_item;
    o.ctx = &f1;
    gs_yt *t1 = gs_yt_new(&o, &a1, &e1);
    if (!t1)
        abort();
    gs_yt_stream_items(t1, stream);
    size_t used = 0;
    int rc1 = gs_yt_parse_json(t1, buf + start, len - start, line, col, &used);
    if (rc1 != 0 && rc1 != 1 && rc1 != -1)
        abort();
    if (rc1 == 0 && (used == 0 || used > len - start))
        abort();
    if (rc1 == -1 && e1.code != GS_ERR_PARSE && e1.code != GS_ERR_LIMIT && e1.code != GS_ERR_NOMEM &&
        e1.code != GS_ERR_INVALID)
        abort();
    if (rc1 == -1 && strcmp(e1.file, "fuzz.json") != 0)
        abort();
    bool streamed = f1.items > 0;
#ifdef FZ_STATS
    fz_stats[rc1 + 1]++;
    if (streamed)
        fz_stats[3]++;
#endif
    if (rc1 != 1 && !(rc1 == -1 && (e1.code == GS_ERR_NOMEM || streamed))) {
        /* libfyaml on the same bytes: the value the JSON path took, or the rest */
        size_t n = rc1 == 0 ? used : len - start;
        gs_yt_opts o2 = o;
        o2.ctx = &f2;
        o2.on_item = NULL;
        gs_yt *t2 = gs_yt_new(&o2, &a2, &e2);
        if (!t2)
            abort();
        int rc2 = gs_yt_parse(t2, buf + start, n, line, col);
        if (rc1 == 0) {
            if (rc2 != 0 && !(flags & 1))
                abort(); /* the JSON path accepted what libfyaml refuses */
            if (rc2 != 0)
                ; /* inside a skipped value: see the header */
            else if (!stream)
                same_tree(gs_yt_root(t1), gs_yt_root(t2));
            else if (streamed) {
                /* the items libfyaml built, fingerprinted the same way */
                const gs_yn *root = gs_yt_root(t2), *items = NULL;
                for (const gs_yn *k = root && root->type == GS_YN_MAP ? root->u.first : NULL; k;
                     k = k->next->next)
                    if (k->len == 5 && !memcmp(k->u.text, "items", 5))
                        items = k->next;
                if (!items || items->type != GS_YN_SEQ)
                    abort();
                for (const gs_yn *it = items->u.first; it; it = it->next)
                    f2.fp = fingerprint(f2.fp, it);
                if (f2.fp != f1.fp || items->len != f1.items)
                    abort();
            }
        } else if (!(flags & 1)) {
            /* refused: libfyaml refuses too (in a skipped value it may not look) */
            if (rc2 == 0)
                abort();
            /* the same message and place when the whole input is one strict JSON value
             * (otherwise libfyaml, which tokenizes ahead, may stop elsewhere first) */
            if (shared_message(e1.msg) && shared_message(e2.msg) && strict_json(buf + start, len - start) &&
                (strcmp(e1.msg, e2.msg) != 0 || e1.line != e2.line || e1.col != e2.col))
                abort();
        }
        gs_yt_free(t2);
    }
    gs_yt_free(t1);
    gs_arena_free(&a1);
    gs_arena_free(&a2);
    check_primitives(buf, len, flags);
    free(buf);
    return 0;
}
