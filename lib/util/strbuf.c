/* strbuf.c - growable NUL-terminated string buffer with a sticky OOM flag. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

void gs_strbuf_json_str(gs_strbuf *sb, const char *s)
{
    gs_strbuf_putc(sb, '"');
    if (s) {
        const unsigned char *p = (const unsigned char *)s;
        const unsigned char *run = p;
        for (; *p; p++) {
            unsigned char c = *p;
            if (c >= 0x20 && c != '"' && c != '\\')
                continue;
            gs_strbuf_add(sb, (const char *)run, (size_t)(p - run));
            switch (c) {
            case '"': gs_strbuf_add(sb, "\\\"", 2); break;
            case '\\': gs_strbuf_add(sb, "\\\\", 2); break;
            case '\n': gs_strbuf_add(sb, "\\n", 2); break;
            case '\r': gs_strbuf_add(sb, "\\r", 2); break;
            case '\t': gs_strbuf_add(sb, "\\t", 2); break;
            default: gs_strbuf_printf(sb, "\\u%04x", c); break;
            }
            run = p + 1;
        }
        gs_strbuf_add(sb, (const char *)run, (size_t)(p - run));
    }
    gs_strbuf_putc(sb, '"');
}

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
