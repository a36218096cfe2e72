/*
 * fuzz_json.c - libFuzzer target for the library's JSON reader (lib/util/json.c), which
 * simulation reports and JSON-lines traces are read with.
 *
 * The first byte picks limits (depth, items, string length, unique keys); the rest is the
 * document. A rejected input must fail with GS_ERR_PARSE (or NOMEM) and a position inside
 * the input. An accepted one is written back as canonical JSON, which must parse again
 * under the same limits and write to the same bytes (the tree holds everything the
 * document said), and every string must be valid UTF-8 without NUL. The reader scans with
 * jscan's primitives, so an accepted array or object must also be one value to gs_js_skip
 * (the structural scanner of the fast paths), ending where the reader's value ended.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/jscan_int.h"
#include "util/json_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void emit(gs_strbuf *sb, const gs_jv *v)
{
    switch ((gs_jtype)v->t) {
    case GS_JNULL: gs_strbuf_puts(sb, "null"); break;
    case GS_JBOOL: gs_strbuf_puts(sb, v->b ? "true" : "false"); break;
    case GS_JNUM: gs_strbuf_add(sb, v->s, v->n); break;
    case GS_JSTR:
        if (strlen(v->s) != v->n || gs_utf8_invalid_at(v->s, v->n) != v->n)
            abort();
        gs_strbuf_json_str(sb, v->s);
        break;
    case GS_JARR:
        gs_strbuf_putc(sb, '[');
        for (uint32_t i = 0; i < v->n; i++) {
            if (i)
                gs_strbuf_putc(sb, ',');
            emit(sb, &v->kids[i]);
        }
        gs_strbuf_putc(sb, ']');
        break;
    case GS_JOBJ:
        gs_strbuf_putc(sb, '{');
        for (uint32_t i = 0; i < v->n; i++) {
            if (i)
                gs_strbuf_putc(sb, ',');
            if (v->kids[2 * i].t != GS_JSTR)
                abort();
            emit(sb, &v->kids[2 * i]);
            gs_strbuf_putc(sb, ':');
            emit(sb, &v->kids[2 * i + 1]);
        }
        gs_strbuf_putc(sb, '}');
        break;
    default: abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 20)
        return 0;
    uint8_t sel = data[0];
    gs_json_limits lim = {(uint32_t)(sel & 7) * 4, (uint32_t)(sel >> 3 & 3) * 8,
                          (uint32_t)(sel >> 5 & 3) * 16, (sel & 0x80) != 0};
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_jv v;
    gs_error err;
    gs_error_clear(&err);
    if (gs_json_parse("fuzz.json", 1, text, len, &lim, &a, &v, &err) != 0) {
        if (err.code != GS_ERR_PARSE && err.code != GS_ERR_NOMEM)
            abort();
        if (err.line < 1 || err.col < 1 || (size_t)err.line > len + 1)
            abort();
        gs_arena_free(&a);
        return 0;
    }
    const char *end = text + len, *p = gs_js_ws(text, end);
    if (p < end && (*p == '{' || *p == '[')) {
        const char *bad = NULL;
        bool deep = false;
        const char *q = gs_js_skip(p, end, 0, &bad, &deep);
        if (!q || gs_js_ws(q, end) != end)
            abort();
    }
    gs_strbuf s1 = GS_STRBUF_INIT, s2 = GS_STRBUF_INIT;
    emit(&s1, &v);
    gs_jv back;
    if (gs_json_parse("again.json", 1, s1.buf, s1.len, &lim, &a, &back, &err) != 0)
        abort();
    emit(&s2, &back);
    if (s1.len != s2.len || memcmp(s1.buf, s2.buf, s1.len) != 0)
        abort();
    gs_strbuf_free(&s1);
    gs_strbuf_free(&s2);
    gs_arena_free(&a);
    return 0;
}
