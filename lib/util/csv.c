/* csv.c - the RFC 4180 record splitter (csv_int.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/csv_int.h"

static int csv_fail(gs_csv *c, gs_code code, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int csv_fail(gs_csv *c, gs_code code, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (!c->err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(c->err, code, c->file, (int)line, (int)col, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

void gs_csv_init(gs_csv *c, const char *file, const char *data, size_t len, uint32_t max_fields,
                 uint32_t max_field_bytes, gs_error *err)
{
    memset(c, 0, sizeof *c);
    c->file = file ? file : "";
    c->err = err;
    c->p = data;
    c->end = data + len;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        c->p += 3; /* byte-order mark: columns count from after it */
    c->line_start = c->p;
    c->line = 1;
    c->max_fields = max_fields && max_fields < GS_CSV_MAX_FIELDS ? max_fields : GS_CSV_MAX_FIELDS;
    c->max_field = max_field_bytes ? max_field_bytes : 4096u;
}

void gs_csv_free(gs_csv *c)
{
    free(c->buf);
    c->buf = NULL;
    c->blen = c->bcap = 0;
}

static int put(gs_csv *c, char ch)
{
    if (c->blen + 1 >= c->bcap) {
        size_t nc = c->bcap ? c->bcap * 2 : 1024;
        char *nb = realloc(c->buf, nc);
        if (!nb) {
            if (c->err)
                gs_fail(c->err, GS_ERR_NOMEM, "out of memory reading %s", c->file);
            return -1;
        }
        c->buf = nb;
        c->bcap = nc;
    }
    c->buf[c->blen++] = ch;
    return 0;
}

static uint32_t cur_col(const gs_csv *c) { return (uint32_t)(c->p - c->line_start) + 1; }

int gs_csv_next(gs_csv *c, bool *eof)
{
    *eof = false;
    c->nfields = 0;
    c->blen = 0;
    /* skip empty lines */
    for (;;) {
        if (c->p >= c->end) {
            *eof = true;
            return 0;
        }
        if (*c->p == '\n') {
            c->p++;
        } else if (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n') {
            c->p += 2;
        } else {
            break;
        }
        c->line++;
        c->line_start = c->p;
    }
    for (;;) {
        if (c->nfields == c->max_fields)
            return csv_fail(c, GS_ERR_LIMIT, c->line, cur_col(c), "more than %u columns",
                            c->max_fields);
        gs_csv_field *f = &c->fields[c->nfields];
        f->line = c->line;
        f->col = cur_col(c);
        f->off = (uint32_t)c->blen;
        if (c->p < c->end && *c->p == '"') {
            c->p++;
            for (;;) {
                if (c->p >= c->end)
                    return csv_fail(c, GS_ERR_PARSE, f->line, f->col, "unterminated quoted field");
                char ch = *c->p;
                if (ch == '"') {
                    if (c->p + 1 < c->end && c->p[1] == '"') {
                        c->p += 2;
                    } else {
                        c->p++;
                        break;
                    }
                } else {
                    c->p++;
                    if (ch == '\n') {
                        c->line++;
                        c->line_start = c->p;
                    }
                }
                if (ch == 0)
                    return csv_fail(c, GS_ERR_PARSE, c->line, cur_col(c) - 1, "NUL byte in field");
                if (c->blen - f->off >= c->max_field)
                    return csv_fail(c, GS_ERR_LIMIT, f->line, f->col, "field longer than %u bytes",
                                    c->max_field);
                if (put(c, ch) < 0)
                    return -1;
            }
            if (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
                !(*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n'))
                return csv_fail(c, GS_ERR_PARSE, c->line, cur_col(c),
                                "unexpected character after a closing quote");
        } else {
            while (c->p < c->end && *c->p != ',' && *c->p != '\n') {
                char ch = *c->p;
                if (ch == '\r') {
                    if (c->p + 1 < c->end && c->p[1] == '\n')
                        break;
                    return csv_fail(c, GS_ERR_PARSE, c->line, cur_col(c),
                                    "carriage return not followed by a line feed");
                }
                if (ch == '"')
                    return csv_fail(c, GS_ERR_PARSE, c->line, cur_col(c),
                                    "quote inside an unquoted field (quote the whole field)");
                if (ch == 0)
                    return csv_fail(c, GS_ERR_PARSE, c->line, cur_col(c), "NUL byte in field");
                if (c->blen - f->off >= c->max_field)
                    return csv_fail(c, GS_ERR_LIMIT, f->line, f->col, "field longer than %u bytes",
                                    c->max_field);
                if (put(c, ch) < 0)
                    return -1;
                c->p++;
            }
        }
        f->len = (uint32_t)(c->blen - f->off);
        if (put(c, 0) < 0)
            return -1;
        c->nfields++;
        if (c->p >= c->end)
            return 0;
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        /* end of record: LF or CRLF */
        c->p += *c->p == '\r' ? 2 : 1;
        c->line++;
        c->line_start = c->p;
        return 0;
    }
}
