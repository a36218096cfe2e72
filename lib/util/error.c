/* error.c - the error value and the one table of codes. */
#include "gpusched/error.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int exit_status;
    int http_status;
} code_table[GS_CODE_COUNT_] = {
    [GS_OK] = {"ok", 0, 200},
    [GS_ERR_NOMEM] = {"nomem", 3, 503},
    [GS_ERR_IO] = {"io", 2, 500},
    [GS_ERR_PARSE] = {"parse", 2, 400},
    [GS_ERR_INVALID] = {"invalid", 2, 422},
    [GS_ERR_USAGE] = {"usage", 2, 400},
    [GS_ERR_LIMIT] = {"limit", 2, 413},
    [GS_ERR_NOTFOUND] = {"notfound", 2, 404},
    [GS_ERR_INTERNAL] = {"internal", 3, 500},
};

static void copy_str(char *dst, size_t cap, const char *src)
{
    if (!src) {
        dst[0] = '\0';
        return;
    }
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void gs_error_clear(gs_error *err)
{
    if (!err)
        return;
    err->code = GS_OK;
    err->line = err->col = 0;
    err->file[0] = err->path[0] = err->msg[0] = '\0';
}

int gs_error_setv(gs_error *err, gs_code code, const char *file, int line, int col,
                  const char *path, const char *fmt, va_list ap)
{
    if (!err)
        return -1;
    err->code = code;
    err->line = line;
    err->col = col;
    copy_str(err->file, sizeof err->file, file);
    copy_str(err->path, sizeof err->path, path);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    return -1;
}

int gs_error_set(gs_error *err, gs_code code, const char *file, int line, int col,
                 const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(err, code, file, line, col, path, fmt, ap);
    va_end(ap);
    return -1;
}

void gs_error_prefix_path(gs_error *err, const char *prefix)
{
    if (!err || !prefix || !*prefix)
        return;
    char tmp[GS_ERR_PATH_MAX];
    if (err->path[0])
        snprintf(tmp, sizeof tmp, "%s%s", prefix, err->path);
    else
        snprintf(tmp, sizeof tmp, "%s", prefix);
    copy_str(err->path, sizeof err->path, tmp);
}

const char *gs_code_name(gs_code code)
{
    if ((unsigned)code >= GS_CODE_COUNT_)
        return "unknown";
    return code_table[code].name;
}

int gs_code_exit_status(gs_code code)
{
    if ((unsigned)code >= GS_CODE_COUNT_)
        return 3;
    return code_table[code].exit_status;
}

int gs_code_http_status(gs_code code)
{
    if ((unsigned)code >= GS_CODE_COUNT_)
        return 500;
    return code_table[code].http_status;
}

size_t gs_error_format(const gs_error *err, char *buf, size_t cap)
{
    if (!cap)
        return 0;
    int n = 0;
    if (err->file[0]) {
        if (err->line > 0 && err->col > 0)
            n = snprintf(buf, cap, "%s:%d:%d: ", err->file, err->line, err->col);
        else if (err->line > 0)
            n = snprintf(buf, cap, "%s:%d: ", err->file, err->line);
        else
            n = snprintf(buf, cap, "%s: ", err->file);
    }
    if (n < 0 || (size_t)n >= cap)
        return cap - 1;
    int m;
    if (err->path[0])
        m = snprintf(buf + n, cap - (size_t)n, "error: %s: %s", err->path, err->msg);
    else
        m = snprintf(buf + n, cap - (size_t)n, "error: %s", err->msg);
    if (m < 0)
        return (size_t)n;
    return ((size_t)(n + m) >= cap) ? cap - 1 : (size_t)(n + m);
}
