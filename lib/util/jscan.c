/* jscan.c - JSON scanning primitives (contract in jscan_int.h). */
#include <string.h>

#include "util/jscan_int.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define JS_SSE2 1
#endif

/* ---------------------------------------------------------------- positions */

size_t gs_utf8_chars(const char *s, size_t n)
{
    /* characters = bytes - continuation bytes (10xxxxxx) */
    size_t cont = 0, i = 0;
#ifdef JS_SSE2
    const __m128i mC0 = _mm_set1_epi8((char)0xC0), m80 = _mm_set1_epi8((char)0x80);
    for (; i + 16 <= n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        unsigned m = (unsigned)_mm_movemask_epi8(x); /* bytes >= 0x80 */
        if (!m)
            continue;
        __m128i c = _mm_cmpeq_epi8(_mm_and_si128(x, mC0), m80);
        cont += (size_t)__builtin_popcount((unsigned)_mm_movemask_epi8(c));
    }
#endif
    for (; i < n; i++)
        cont += ((unsigned char)s[i] & 0xC0) == 0x80;
    return n - cont;
}

void gs_jcur_init(gs_jcur *c, const char *start, uint32_t line, uint32_t col)
{
    gs_jcur_init_text(c, start, NULL, line, col, false);
}

void gs_jcur_init_text(gs_jcur *c, const char *start, const char *end, uint32_t line, uint32_t col,
                       bool cr)
{
    c->at = start;
    c->line = line;
    c->col = col;
    c->end = end;
    c->cr = cr && end;
    /* a CR found on the way switches to counting byte by byte (gs_jcur_move) */
}

void gs_jcur_move(gs_jcur *c, const char *to)
{
    const char *p = c->at;
    if (to <= p)
        return;
    if (!c->cr && c->end && memchr(p, '\r', (size_t)(to - p)))
        c->cr = true; /* from here on, byte by byte */
    if (c->cr) {
        for (; p < to; p++) {
            if (*p == '\n' || (*p == '\r' && (p + 1 >= c->end || p[1] != '\n'))) {
                c->line++;
                c->col = 1;
            } else if (((unsigned char)*p & 0xC0) != 0x80) {
                c->col++;
            }
        }
        c->at = to;
        return;
    }
    const char *nl, *last = NULL;
    size_t n = (size_t)(to - p);
    while ((nl = memchr(p, '\n', n)) != NULL) {
        c->line++;
        last = nl;
        n -= (size_t)(nl + 1 - p);
        p = nl + 1;
    }
    if (last)
        c->col = 1;
    c->col += (uint32_t)gs_utf8_chars(p, (size_t)(to - p));
    c->at = to;
}

/* ---------------------------------------------------------------- scanning */

const char *gs_js_str_special(const char *p, const char *end)
{
#ifdef JS_SSE2
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), c1f = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(x, c1f), x); /* x <= 0x1F */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)), ctl);
        unsigned m = (unsigned)_mm_movemask_epi8(hit);
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#endif
    for (; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\' || c < 0x20)
            return p;
    }
    return end;
}

const char *gs_js_ws(const char *p, const char *end)
{
    /* short runs first (", " and ": "), then indentation 16 bytes at a time */
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
        p++;
#ifdef JS_SSE2
        if (p < end && *p == ' ') {
            const __m128i sp = _mm_set1_epi8(' ');
            while (end - p >= 16) {
                unsigned m = (unsigned)_mm_movemask_epi8(
                    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), sp));
                if (m != 0xFFFF) {
                    p += __builtin_ctz(~m);
                    break;
                }
                p += 16;
            }
        }
#endif
    }
    return p;
}

const char *gs_js_str_end(const char *p, const char *end, bool *escaped, const char **bad)
{
    for (;;) {
        p = gs_js_str_special(p, end);
        if (p >= end) {
            *bad = end;
            return NULL;
        }
        if (*p == '"')
            return p;
        if (*p == '\\') {
            *escaped = true;
            if (end - p < 2) {
                *bad = end;
                return NULL;
            }
            if ((unsigned char)p[1] < 0x20) {
                *bad = p + 1;
                return NULL;
            }
            p += 2;
            continue;
        }
        *bad = p; /* control byte */
        return NULL;
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static long hex4(const char *p, const char *end)
{
    if (end - p < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

long gs_js_unescape(const char *s, size_t n, char *out, const char **bad)
{
    const char *end = s + n;
    size_t o = 0;
    while (s < end) {
        const char *b = memchr(s, '\\', (size_t)(end - s));
        size_t run = (size_t)((b ? b : end) - s);
        if (out)
            memmove(out + o, s, run);
        o += run;
        if (!b)
            break;
        s = b + 1;
        if (s >= end) {
            *bad = b;
            return -1;
        }
        char c = *s++, e;
        switch (c) {
        case '"': e = '"'; break;
        case '\\': e = '\\'; break;
        case '/': e = '/'; break;
        case 'b': e = '\b'; break;
        case 'f': e = '\f'; break;
        case 'n': e = '\n'; break;
        case 'r': e = '\r'; break;
        case 't': e = '\t'; break;
        case 'u': {
            long v = hex4(s, end);
            if (v < 0) {
                *bad = b;
                return -1;
            }
            s += 4;
            uint32_t cp = (uint32_t)v;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                *bad = b;
                return -1;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = (end - s >= 6 && s[0] == '\\' && s[1] == 'u') ? hex4(s + 2, end) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    *bad = b;
                    return -1;
                }
                s += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            }
            if (out)
                o += put_utf8(out + o, cp);
            continue;
        }
        default: *bad = b; return -1;
        }
        if (out)
            out[o] = e;
        o++;
    }
    return (long)o;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

const char *gs_js_number(const char *p, const char *end, const char **bad)
{
    const char *q = p;
    if (q < end && *q == '-')
        q++;
    if (q >= end || !is_digit(*q)) {
        *bad = q;
        return NULL;
    }
    if (*q == '0') {
        q++;
        if (q < end && is_digit(*q)) {
            *bad = q;
            return NULL;
        }
    } else {
        while (q < end && is_digit(*q))
            q++;
    }
    if (q < end && *q == '.') {
        q++;
        if (q >= end || !is_digit(*q)) {
            *bad = q;
            return NULL;
        }
        while (q < end && is_digit(*q))
            q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q >= end || !is_digit(*q)) {
            *bad = q;
            return NULL;
        }
        while (q < end && is_digit(*q))
            q++;
    }
    return q;
}

/* The next byte that is '"', '{', '}', '[' or ']' at or after p; end if none. */
static const char *next_structural(const char *p, const char *end)
{
#ifdef JS_SSE2
    /* '{' 0x7B and '[' 0x5B differ in bit 5 only, as do '}' 0x7D and ']' 0x5D: OR 0x20
     * folds each pair into one compare (no other byte folds onto 0x7B or 0x7D but
     * themselves and their pair partner) */
    const __m128i q = _mm_set1_epi8('"'), op = _mm_set1_epi8('{'), cl = _mm_set1_epi8('}'),
                  b20 = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i f = _mm_or_si128(x, b20);
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(x, q),
                                   _mm_or_si128(_mm_cmpeq_epi8(f, op), _mm_cmpeq_epi8(f, cl)));
        unsigned m = (unsigned)_mm_movemask_epi8(hit);
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#endif
    for (; p < end; p++) {
        char c = *p;
        if (c == '"' || c == '{' || c == '}' || c == '[' || c == ']')
            return p;
    }
    return end;
}

#define JS_KIND_LEVELS 4096

const char *gs_js_skip(const char *p, const char *end, uint32_t max_depth, const char **bad,
                       bool *too_deep)
{
    uint64_t kinds[JS_KIND_LEVELS / 64]; /* bit set: this level is an array */
    size_t depth = 0;
    *too_deep = false;
    while (p < end) {
        p = next_structural(p, end);
        if (p >= end)
            break;
        char c = *p;
        if (c == '"') {
            bool esc = false;
            const char *q = gs_js_str_end(p + 1, end, &esc, bad);
            if (!q)
                return NULL;
            p = q + 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (max_depth && depth >= max_depth) {
                *bad = p;
                *too_deep = true;
                return NULL;
            }
            if (depth < JS_KIND_LEVELS) {
                uint64_t bit = (uint64_t)1 << (depth % 64);
                if (c == '[')
                    kinds[depth / 64] |= bit;
                else
                    kinds[depth / 64] &= ~bit;
            }
            depth++;
            p++;
            continue;
        }
        /* '}' or ']' */
        if (depth == 0) {
            *bad = p;
            return NULL;
        }
        depth--;
        if (depth < JS_KIND_LEVELS) {
            bool arr = (kinds[depth / 64] >> (depth % 64)) & 1;
            if (arr != (c == ']')) {
                *bad = p;
                return NULL;
            }
        }
        p++;
        if (depth == 0)
            return p;
    }
    *bad = end;
    return NULL;
}

bool gs_js_top_string(const char *p, const char *end, const char *key, const char **val,
                      size_t *vlen)
{
    size_t kl = strlen(key);
    const char *bad;
    if (p >= end || *p != '{')
        return false;
    p = gs_js_ws(p + 1, end);
    if (p < end && *p == '}')
        return false;
    for (;;) {
        if (p >= end || *p != '"')
            return false;
        bool esc = false;
        const char *q = gs_js_str_end(p + 1, end, &esc, &bad);
        if (!q)
            return false;
        bool match = !esc && (size_t)(q - p - 1) == kl && memcmp(p + 1, key, kl) == 0;
        p = gs_js_ws(q + 1, end);
        if (p >= end || *p != ':')
            return false;
        p = gs_js_ws(p + 1, end);
        if (p >= end)
            return false;
        if (*p == '"') {
            esc = false;
            q = gs_js_str_end(p + 1, end, &esc, &bad);
            if (!q)
                return false;
            if (match) {
                if (esc)
                    return false;
                *val = p + 1;
                *vlen = (size_t)(q - p - 1);
                return true;
            }
            p = q + 1;
        } else if (*p == '{' || *p == '[') {
            bool deep;
            if (match)
                return false;
            p = gs_js_skip(p, end, 0, &bad, &deep);
            if (!p)
                return false;
        } else {
            if (match)
                return false;
            while (p < end && *p != ',' && *p != '}')
                p++;
        }
        p = gs_js_ws(p, end);
        if (p >= end || *p != ',')
            return false;
        p = gs_js_ws(p + 1, end);
    }
}

const char *gs_js_scan_feed(gs_js_scan *s, const char *p, const char *end)
{
    while (p < end) {
        switch (s->state) {
        case GS_JSS_BEFORE:
        case GS_JSS_AFTER: {
            p = gs_js_ws(p, end);
            if (p >= end)
                return NULL;
            if (s->state == GS_JSS_AFTER)
                return p;
            char c = *p;
            if (c == ',' || c == ']' || c == '}')
                return p;
            p++;
            if (c == '"') {
                s->state = GS_JSS_STR;
            } else if (c == '{' || c == '[') {
                s->depth = 1;
                s->state = GS_JSS_IN;
            } else {
                s->state = GS_JSS_TOKEN;
            }
            break;
        }
        case GS_JSS_TOKEN:
            while (p < end && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != ',' &&
                   *p != ']' && *p != '}' && *p != '"' && *p != '[' && *p != '{')
                p++;
            if (p < end)
                s->state = GS_JSS_AFTER;
            break;
        case GS_JSS_STR:
            p = gs_js_str_special(p, end);
            if (p >= end)
                return NULL;
            if (*p == '"')
                s->state = s->depth ? GS_JSS_IN : GS_JSS_AFTER;
            else if (*p == '\\')
                s->state = GS_JSS_ESC;
            p++; /* a raw control byte is passed over: the parser names it */
            break;
        case GS_JSS_ESC:
            p++;
            s->state = GS_JSS_STR;
            break;
        default: { /* GS_JSS_IN */
            p = next_structural(p, end);
            if (p >= end)
                return NULL;
            char c = *p++;
            if (c == '"') {
                s->state = GS_JSS_STR;
            } else if (c == '{' || c == '[') {
                s->depth++;
            } else if (--s->depth == 0) {
                s->state = GS_JSS_AFTER;
            }
            break;
        }
        }
    }
    return NULL;
}
