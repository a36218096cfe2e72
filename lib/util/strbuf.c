/* strbuf.c - growable NUL-terminated string buffer with a sticky OOM flag. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpusched/util.h"

static bool sb_grow(gs_strbuf *sb, size_t extra)
{
    if (sb->oom)
        return false;
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap *= 2;
    char *nb = realloc(sb->buf, cap);
    if (!nb) {
        sb->oom = true;
        return false;
    }
    sb->buf = nb;
    sb->cap = cap;
    return true;
}

void gs_strbuf_add(gs_strbuf *sb, const char *s, size_t n)
{
    if (!sb_grow(sb, n))
        return;
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void gs_strbuf_puts(gs_strbuf *sb, const char *s) { gs_strbuf_add(sb, s, strlen(s)); }

void gs_strbuf_putc(gs_strbuf *sb, char c) { gs_strbuf_add(sb, &c, 1); }

void gs_strbuf_printf(gs_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        gs_strbuf_add(sb, small, (size_t)n);
        return;
    }
    if (!sb_grow(sb, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (n >= 1) with its code point in *cp,
 * or 0 when s[0] does not start one (overlong forms, surrogates, code points above
 * U+10FFFF and truncated sequences are not well-formed). */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0)
        len = 2, v = c & 0x1Fu, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        len = 3, v = c & 0x0Fu, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        len = 4, v = c & 0x07u, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[k] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

size_t gs_utf8_seq(const char *s, size_t n, uint32_t *cp) { return utf8_seq((const unsigned char *)s, n, cp); }

bool gs_text_hidden(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

void gs_strbuf_json_strn(gs_strbuf *sb, const char *str, size_t n)
{
    gs_strbuf_putc(sb, '"');
    const unsigned char *s = (const unsigned char *)str;
    size_t run = 0, i = 0;
    while (s && i < n) {
        unsigned char c = s[i];
        bool legacy = c == '[' && i >= 2 && s[i - 1] == '#' && s[i - 2] == '#';
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && !legacy) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t len = utf8_seq(s + i, n - i, &cp);
        if (len > 1 && cp > 0x9f && cp != 0x2028 && cp != 0x2029) {
            i += len;
            continue;
        }
        gs_strbuf_add(sb, str + run, i - run);
        switch (c) {
        case '"': gs_strbuf_add(sb, "\\\"", 2); break;
        case '\\': gs_strbuf_add(sb, "\\\\", 2); break;
        case '\n': gs_strbuf_add(sb, "\\n", 2); break;
        case '\r': gs_strbuf_add(sb, "\\r", 2); break;
        case '\t': gs_strbuf_add(sb, "\\t", 2); break;
        case '[': gs_strbuf_add(sb, "\\u005b", 6); break; /* "##[": GitHub's legacy command */
        default:
            /* other controls, DEL, C1 controls, U+2028/U+2029 (line breaks to JavaScript),
             * and a byte that starts no well-formed sequence: U+FFFD */
            gs_strbuf_printf(sb, "\\u%04x", len ? (unsigned)cp : 0xfffdu);
            break;
        }
        i += len ? len : 1;
        run = i;
    }
    if (s)
        gs_strbuf_add(sb, str + run, n - run);
    gs_strbuf_putc(sb, '"');
}

void gs_strbuf_json_str(gs_strbuf *sb, const char *s) { gs_strbuf_json_strn(sb, s, s ? strlen(s) : 0); }

/* ---------------------------------------------------------------- human text */
/* What .NET's TrimStart and JavaScript's trimStart skip before looking for "::". */
static bool text_blank(uint32_t cp)
{
    return cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
           cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

/* Offset of the "::" that starts the line at s[i..n) after blanks, or n when none. */
static size_t line_command_at(const unsigned char *s, size_t i, size_t n)
{
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_seq(s + i, n - i, &cp);
        if (!len || !text_blank(cp))
            break;
        i += len;
    }
    return n - i >= 2 && s[i] == ':' && s[i + 1] == ':' ? i : n;
}

enum { TEXT_LINE, TEXT_LINES, TEXT_XML };

static void text_escape(gs_strbuf *sb, const char *str, size_t n, int mode)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!s)
        return;
    bool lines = mode != TEXT_LINE, xml = mode == TEXT_XML;
    size_t run = 0, i = 0;
    size_t guard = line_command_at(s, 0, n);
    while (i < n) {
        unsigned char c = s[i];
        bool plain = c >= 0x20 && c < 0x7f && c != ':' && c != '[' &&
                     !(xml && (c == '&' || c == '<' || c == '>' || c == '"' || c == '\''));
        if (plain || (lines && c == '\t')) {
            i++;
            continue;
        }
        if (lines && c == '\n') {
            i++;
            guard = line_command_at(s, i, n);
            continue;
        }
        uint32_t cp = c;
        size_t len = c < 0x80 ? 1 : utf8_seq(s + i, n - i, &cp);
        bool keep;
        if (c == ':')
            keep = i != guard;
        else if (c == '[')
            keep = i < 2 || s[i - 1] != '#' || s[i - 2] != '#';
        else
            keep = len > 1 && !gs_text_hidden(cp) && !(xml && (cp == 0xfffe || cp == 0xffff));
        if (keep) {
            i += len;
            continue;
        }
        gs_strbuf_add(sb, str + run, i - run);
        switch (len ? c : 0) {
        case '&': gs_strbuf_add(sb, "&amp;", 5); break;
        case '<': gs_strbuf_add(sb, "&lt;", 4); break;
        case '>': gs_strbuf_add(sb, "&gt;", 4); break;
        case '"': gs_strbuf_add(sb, "&quot;", 6); break;
        case '\'': gs_strbuf_add(sb, "&apos;", 6); break;
        case '\n': gs_strbuf_add(sb, "\\n", 2); break;
        case '\t': gs_strbuf_add(sb, "\\t", 2); break;
        case '\r': gs_strbuf_add(sb, "\\r", 2); break;
        default:
            if (!len || cp < 0x80) /* not UTF-8; controls, DEL; a workflow command's ':' or '[' */
                gs_strbuf_printf(sb, "\\x%02x", c);
            else
                gs_strbuf_printf(sb, "\\u{%x}", (unsigned)cp);
            break;
        }
        i += len ? len : 1;
        run = i;
    }
    gs_strbuf_add(sb, str + run, n - run);
}

void gs_strbuf_textn(gs_strbuf *sb, const char *s, size_t n) { text_escape(sb, s, n, TEXT_LINE); }
void gs_strbuf_text(gs_strbuf *sb, const char *s) { text_escape(sb, s, s ? strlen(s) : 0, TEXT_LINE); }
void gs_strbuf_text_lines(gs_strbuf *sb, const char *s, size_t n) { text_escape(sb, s, n, TEXT_LINES); }
void gs_strbuf_xml(gs_strbuf *sb, const char *s) { text_escape(sb, s, s ? strlen(s) : 0, TEXT_XML); }

void gs_strbuf_reset(gs_strbuf *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = '\0';
}

char *gs_strbuf_detach(gs_strbuf *sb)
{
    char *b = sb->buf;
    if (!b)
        b = calloc(1, 1);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    sb->oom = false;
    return b;
}

void gs_strbuf_free(gs_strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    sb->oom = false;
}

/* ---------------------------------------------------------------- printf with escaped %s */
void gs_strbuf_vtextf(gs_strbuf *sb, const char *fmt, va_list ap)
{
    const char *p = fmt;
    while (*p) {
        const char *pct = strchr(p, '%');
        if (!pct) {
            gs_strbuf_puts(sb, p);
            return;
        }
        gs_strbuf_add(sb, p, (size_t)(pct - p));
        const char *q = pct + 1;
        if (*q == '%') {
            gs_strbuf_putc(sb, '%');
            p = q + 1;
            continue;
        }
        /* %[flags][width][.precision][length]conversion, '*' taken from the arguments */
        char spec[64];
        size_t o = 0;
        spec[o++] = '%';
        bool left = false;
        while (*q && strchr("-+ #0", *q)) {
            left |= *q == '-';
            if (o < 8)
                spec[o++] = *q;
            q++;
        }
        int width = -1, prec = -1;
        if (*q == '*') {
            width = va_arg(ap, int);
            q++;
        } else if (*q >= '0' && *q <= '9') {
            width = 0;
            while (*q >= '0' && *q <= '9')
                width = width * 10 + (*q++ - '0');
        }
        if (width < -1) { /* a negative '*' width is the '-' flag */
            left = true;
            spec[o++] = '-';
            width = -width;
        }
        if (*q == '.') {
            q++;
            prec = 0;
            if (*q == '*') {
                prec = va_arg(ap, int);
                q++;
            } else {
                while (*q >= '0' && *q <= '9')
                    prec = prec * 10 + (*q++ - '0');
            }
        }
        if (width >= 0)
            o += (size_t)snprintf(spec + o, sizeof spec - o, "%d", width);
        if (prec >= 0)
            o += (size_t)snprintf(spec + o, sizeof spec - o, ".%d", prec);
        char len[3] = {0};
        size_t ln = 0;
        while (*q && strchr("hlLzjt", *q) && ln < 2)
            len[ln++] = *q++;
        char conv = *q ? *q++ : '\0';
        memcpy(spec + o, len, ln);
        o += ln;
        spec[o++] = conv;
        spec[o] = '\0';
        p = q;
        char num[128];
        int n = 0;
        bool is_ll = ln == 2 && len[0] == 'l', is_l = ln == 1 && len[0] == 'l';
        bool is_z = len[0] == 'z', is_j = len[0] == 'j', is_t = len[0] == 't';
        bool is_h = len[0] == 'h';
        switch (conv) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            size_t sl = prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
            size_t before = sb->len;
            if (!left && width > 0) {
                gs_strbuf tmp = GS_STRBUF_INIT;
                gs_strbuf_textn(&tmp, s, sl);
                for (size_t k = tmp.len; k < (size_t)width; k++)
                    gs_strbuf_putc(sb, ' ');
                gs_strbuf_add(sb, gs_strbuf_cstr(&tmp), tmp.len);
                if (tmp.oom)
                    sb->oom = true;
                gs_strbuf_free(&tmp);
            } else {
                gs_strbuf_textn(sb, s, sl);
                for (size_t k = sb->len - before; width > 0 && k < (size_t)width; k++)
                    gs_strbuf_putc(sb, ' ');
            }
            continue;
        }
        case 'c': n = snprintf(num, sizeof num, spec, va_arg(ap, int)); break;
        case 'd':
        case 'i':
            if (is_ll)
                n = snprintf(num, sizeof num, spec, va_arg(ap, long long));
            else if (is_l)
                n = snprintf(num, sizeof num, spec, va_arg(ap, long));
            else if (is_z || is_t)
                n = snprintf(num, sizeof num, spec, va_arg(ap, ptrdiff_t));
            else if (is_j)
                n = snprintf(num, sizeof num, spec, va_arg(ap, intmax_t));
            else
                n = snprintf(num, sizeof num, spec, va_arg(ap, int));
            break;
        case 'u':
        case 'x':
        case 'X':
        case 'o':
            if (is_ll)
                n = snprintf(num, sizeof num, spec, va_arg(ap, unsigned long long));
            else if (is_l)
                n = snprintf(num, sizeof num, spec, va_arg(ap, unsigned long));
            else if (is_z || is_t)
                n = snprintf(num, sizeof num, spec, va_arg(ap, size_t));
            else if (is_j)
                n = snprintf(num, sizeof num, spec, va_arg(ap, uintmax_t));
            else
                n = snprintf(num, sizeof num, spec, va_arg(ap, unsigned));
            break;
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
        case 'a':
        case 'A':
            if (len[0] == 'L')
                n = snprintf(num, sizeof num, spec, va_arg(ap, long double));
            else
                n = snprintf(num, sizeof num, spec, va_arg(ap, double));
            break;
        case 'p': n = snprintf(num, sizeof num, spec, va_arg(ap, void *)); break;
        default: /* not a conversion this helper knows: written as it stands */
            gs_strbuf_add(sb, pct, (size_t)(q - pct));
            continue;
        }
        (void)is_h;
        if (n > 0)
            gs_strbuf_add(sb, num, (size_t)n < sizeof num ? (size_t)n : sizeof num - 1);
    }
}

void gs_strbuf_textf(gs_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_strbuf_vtextf(sb, fmt, ap);
    va_end(ap);
}
