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
    c->clean = start;
    c->probe = start;
    /* a CR found on the way switches to counting byte by byte (gs_jcur_move) */
}

#define JS_CLEAN_AHEAD 4096 /* bytes looked at ahead of a move, at most */
#define JS_CLEAN_BACKOFF 256

/* After a move to c->at: how far the text ahead is plain ASCII without LF or CR. */
static void jcur_look_ahead(gs_jcur *c)
{
    const char *q = c->at, *lim = c->end;
    if (!lim || q < c->probe)
        return;
    if (lim - q > JS_CLEAN_AHEAD)
        lim = q + JS_CLEAN_AHEAD;
#ifdef JS_SSE2
    const __m128i lf = _mm_set1_epi8('\n'), crv = _mm_set1_epi8('\r');
    while (lim - q >= 64) {
        const __m128i *v = (const __m128i *)(const void *)q;
        __m128i a = _mm_loadu_si128(v), b = _mm_loadu_si128(v + 1), d = _mm_loadu_si128(v + 2),
                e = _mm_loadu_si128(v + 3);
        __m128i any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(d, e));
#define JS_BRK(x) _mm_or_si128(_mm_cmpeq_epi8(x, lf), _mm_cmpeq_epi8(x, crv))
        any = _mm_or_si128(any, _mm_or_si128(_mm_or_si128(JS_BRK(a), JS_BRK(b)), _mm_or_si128(JS_BRK(d), JS_BRK(e))));
#undef JS_BRK
        if (_mm_movemask_epi8(any))
            break;
        q += 64;
    }
#endif
    c->clean = q;
    if (q - c->at < 64)
        c->probe = c->at + JS_CLEAN_BACKOFF;
}

/* Byte by byte from p, with CR line breaks (LF, CR LF and a lone CR: one break each). */
static void jcur_move_cr(gs_jcur *c, const char *p, const char *to)
{
    for (; p < to; p++) {
        if (*p == '\n' || (*p == '\r' && (p + 1 >= c->end || p[1] != '\n'))) {
            c->line++;
            c->col = 1;
        } else if (((unsigned char)*p & 0xC0) != 0x80) {
            c->col++;
        }
    }
    c->at = to;
}

void gs_jcur_move(gs_jcur *c, const char *to)
{
    const char *p = c->at;
    if (to <= p)
        return;
    if (to <= c->clean) {
        c->col += (uint32_t)(to - p);
        c->at = to;
        return;
    }
    if (c->cr) {
        jcur_move_cr(c, p, to);
        jcur_look_ahead(c);
        return;
    }
    /* one pass: line breaks, the last one's place, continuation bytes after it, and a CR
     * (with a known end: from it on, byte by byte) */
    uint32_t lines = 0;
    const char *line_start = NULL; /* after the last LF passed */
    size_t cont = 0;               /* continuation bytes after line_start (or p) */
    const char *q = p;
#ifdef JS_SSE2
    const __m128i lf = _mm_set1_epi8('\n'), crv = _mm_set1_epi8('\r'), mC0 = _mm_set1_epi8((char)0xC0),
                  m80 = _mm_set1_epi8((char)0x80);
    const __m128i crlf = c->end ? crv : lf; /* without a known end, a CR is a character */
fast:
    while (to - q >= 64) {
        /* 64 plain ASCII bytes without a line break (most of any text): 64 columns */
        const __m128i *v = (const __m128i *)(const void *)q;
        __m128i a = _mm_loadu_si128(v), b = _mm_loadu_si128(v + 1), d = _mm_loadu_si128(v + 2),
                e = _mm_loadu_si128(v + 3);
        __m128i any = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(d, e)); /* high bits */
#define JS_BRK(x) _mm_or_si128(_mm_cmpeq_epi8(x, lf), _mm_cmpeq_epi8(x, crlf))
        any = _mm_or_si128(any, _mm_or_si128(_mm_or_si128(JS_BRK(a), JS_BRK(b)), _mm_or_si128(JS_BRK(d), JS_BRK(e))));
#undef JS_BRK
        if (_mm_movemask_epi8(any))
            break;
        q += 64;
    }
    while (to - q >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
        unsigned nl = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, lf));
        if (c->end && _mm_movemask_epi8(_mm_cmpeq_epi8(x, crv)))
            break; /* the byte loop below finds it */
        unsigned hi = (unsigned)_mm_movemask_epi8(x);
        unsigned cm = hi ? (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(x, mC0), m80)) : 0;
        if (nl) {
            int last = 31 - __builtin_clz(nl);
            lines += (uint32_t)__builtin_popcount(nl);
            line_start = q + last + 1;
            cm >>= last + 1;
            cont = cm ? (size_t)__builtin_popcount(cm) : 0;
        } else if (cm) {
            cont += (size_t)__builtin_popcount(cm);
        }
        q += 16;
        if (!nl && !hi && to - q >= 64)
            goto fast; /* back to 64 at a time */
    }
    if (q < to && to - q < 16 && c->end && c->end - q >= 16) {
        /* the last few bytes (a move from one node to the next is often short): one
         * block, the bytes past `to` (still in the text) masked off */
        unsigned keep = (1u << (unsigned)(to - q)) - 1;
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
        if (!((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, crv)) & keep)) {
            unsigned nl = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, lf)) & keep;
            unsigned hi = (unsigned)_mm_movemask_epi8(x) & keep;
            unsigned cm =
                hi ? (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(x, mC0), m80)) & keep : 0;
            if (nl) {
                int last = 31 - __builtin_clz(nl);
                lines += (uint32_t)__builtin_popcount(nl);
                line_start = q + last + 1;
                cm >>= last + 1;
                cont = cm ? (size_t)__builtin_popcount(cm) : 0;
            } else if (cm) {
                cont += (size_t)__builtin_popcount(cm);
            }
            q = to;
        }
    }
#endif
    for (; q < to; q++) {
        unsigned char b = (unsigned char)*q;
        if (b == '\n') {
            lines++;
            line_start = q + 1;
            cont = 0;
        } else if (b == '\r' && c->end) {
            break;
        } else if ((b & 0xC0) == 0x80) {
            cont++;
        }
    }
    if (lines) {
        c->line += lines;
        c->col = 1 + (uint32_t)((size_t)(q - line_start) - cont);
    } else {
        c->col += (uint32_t)((size_t)(q - p) - cont);
    }
    c->at = q;
    if (q < to) {
        c->cr = true; /* from here on, byte by byte */
        jcur_move_cr(c, q, to);
    }
    jcur_look_ahead(c);
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

/* Under both unescapers; no_nul is a constant in each, so gs_js_unescape's copy of the
 * loop has no NUL check. */
static inline long js_unescape(const char *s, size_t n, char *out, bool no_nul, const char **bad,
                               int *why)
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
            *why = GS_JSE_ESCAPE;
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
                *why = GS_JSE_HEX;
                return -1;
            }
            s += 4;
            uint32_t cp = (uint32_t)v;
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                *bad = b;
                *why = GS_JSE_SURROGATE;
                return -1;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = (end - s >= 6 && s[0] == '\\' && s[1] == 'u') ? hex4(s + 2, end) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    *bad = b;
                    *why = GS_JSE_SURROGATE;
                    return -1;
                }
                s += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            }
            if (cp == 0 && no_nul) {
                *bad = b;
                *why = GS_JSE_NUL;
                return -1;
            }
            if (out)
                o += put_utf8(out + o, cp);
            continue;
        }
        default: *bad = b; *why = GS_JSE_ESCAPE; return -1;
        }
        if (out)
            out[o] = e;
        o++;
    }
    return (long)o;
}

long gs_js_unescape(const char *s, size_t n, char *out, const char **bad)
{
    int why;
    return js_unescape(s, n, out, false, bad, &why);
}

long gs_js_unescape_why(const char *s, size_t n, char *out, bool no_nul, const char **bad, int *why)
{
    return js_unescape(s, n, out, no_nul, bad, why);
}

const char *gs_js_literal(const char *p, const char *end, char *kind)
{
    size_t len = p < end ? (*p == 't' ? 4 : *p == 'f' ? 5 : *p == 'n' ? 4 : 0) : 0;
    if (!len || (size_t)(end - p) < len ||
        memcmp(p, *p == 't' ? "true" : *p == 'f' ? "false" : "null", len) != 0)
        return NULL;
    *kind = *p;
    return p + len;
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

typedef struct js_depth {
    uint64_t kinds[JS_KIND_LEVELS / 64]; /* bit set: this level is an array */
    size_t depth;
    uint32_t max_depth;
} js_depth;

/* A bracket at `at` (outside strings): 0 go on, 1 the value closed, -1 error (*bad). */
static inline int js_bracket(js_depth *d, const char *at, const char **bad, bool *too_deep)
{
    char c = *at;
    if (c == '{' || c == '[') {
        if (d->max_depth && d->depth >= d->max_depth) {
            *bad = at;
            *too_deep = true;
            return -1;
        }
        if (d->depth < JS_KIND_LEVELS) {
            uint64_t bit = (uint64_t)1 << (d->depth % 64);
            if (c == '[')
                d->kinds[d->depth / 64] |= bit;
            else
                d->kinds[d->depth / 64] &= ~bit;
        }
        d->depth++;
        return 0;
    }
    /* '}' or ']' */
    if (d->depth == 0) {
        *bad = at;
        return -1;
    }
    d->depth--;
    if (d->depth < JS_KIND_LEVELS) {
        bool arr = (d->kinds[d->depth / 64] >> (d->depth % 64)) & 1;
        if (arr != (c == ']')) {
            *bad = at;
            return -1;
        }
    }
    return d->depth == 0;
}

#ifdef JS_SSE2
/* The masks of one 64-byte block: quotes, backslashes, brackets, control bytes. */
typedef struct js_masks {
    uint64_t q, bs, br, ctl;
} js_masks;

static inline void js_block(const char *p, js_masks *m)
{
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), op = _mm_set1_epi8('{'),
                  cl = _mm_set1_epi8('}'), b20 = _mm_set1_epi8(0x20), c1f = _mm_set1_epi8(0x1F);
    m->q = m->bs = m->br = m->ctl = 0;
    for (int i = 0; i < 4; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        __m128i f = _mm_or_si128(x, b20); /* '{' '[' and '}' ']' fold together (next_structural) */
        int sh = 16 * i;
        m->q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, q)) << sh;
        m->bs |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, bs)) << sh;
        m->br |= (uint64_t)(unsigned)_mm_movemask_epi8(
                     _mm_or_si128(_mm_cmpeq_epi8(f, op), _mm_cmpeq_epi8(f, cl)))
                 << sh;
        m->ctl |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, c1f), x)) << sh;
    }
}

static inline uint64_t prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}
#endif

const char *gs_js_skip(const char *p, const char *end, uint32_t max_depth, const char **bad,
                       bool *too_deep)
{
    js_depth d;
    d.depth = 0;
    d.max_depth = max_depth;
    *too_deep = false;
    bool instr = false;          /* p is inside a string (after a block that ended in one) */
    const char *slow_until = p;  /* a block with a backslash or a control byte in a string:
                                    its structure byte by byte, up to here */
    int r;
    while (p < end) {
#ifdef JS_SSE2
        if (p >= slow_until && end - p >= 64) {
            /* 64 bytes at a time: without a backslash, every quote opens or closes a
             * string, so the bytes inside strings are a prefix XOR of the quotes and the
             * brackets outside them are the structure (simdjson's idea, without carries
             * across escapes: a block with a backslash goes the byte way) */
            js_masks m;
            js_block(p, &m);
            uint64_t in = prefix_xor(m.q) ^ (instr ? ~(uint64_t)0 : 0); /* opening quote .. before closing */
            if (!m.bs && !(m.ctl & in)) {
                uint64_t br = m.br & ~in;
                while (br) {
                    int i = __builtin_ctzll(br);
                    br &= br - 1;
                    if ((r = js_bracket(&d, p + i, bad, too_deep)) != 0)
                        return r < 0 ? NULL : p + i + 1;
                }
                instr = (in >> 63) & 1;
                p += 64;
                continue;
            }
            slow_until = p + 64;
        }
#endif
        if (instr) { /* the rest of a string a block ended in */
            bool esc = false;
            const char *q = gs_js_str_end(p, end, &esc, bad);
            if (!q)
                return NULL;
            p = q + 1;
            instr = false;
            continue;
        }
        p = next_structural(p, end);
        if (p >= end)
            break;
        if (*p == '"') {
            bool esc = false;
            const char *q = gs_js_str_end(p + 1, end, &esc, bad);
            if (!q)
                return NULL;
            p = q + 1;
            continue;
        }
        if ((r = js_bracket(&d, p, bad, too_deep)) != 0)
            return r < 0 ? NULL : p + 1;
        p++;
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
