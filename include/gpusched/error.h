/*
 * error.h - the one error value of libgpusched.
 *
 * The library never prints and never exits. Every function that can fail takes a
 * `gs_error *err` (may be NULL when the caller does not care) and returns a negative
 * value or NULL on failure after filling it. The error carries a code, a message, the
 * input file with line and column (1-based, 0 = unknown) and the object path
 * ("Pod default/train-0: spec.containers[0].resources.limits[nvidia.com/gpu]").
 *
 * Ownership: a gs_error is a plain value owned by the caller; it holds no pointers.
 * One table (error.c) maps each code to its name, the CLI exit code and an HTTP status.
 */
#ifndef GPUSCHED_ERROR_H
#define GPUSCHED_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gs_code {
    GS_OK = 0,
    GS_ERR_NOMEM,    /* allocation failed */
    GS_ERR_IO,       /* a file could not be read or written */
    GS_ERR_PARSE,    /* input is not well-formed YAML/JSON/CSV */
    GS_ERR_INVALID,  /* well-formed input with a wrong type, value or quantity */
    GS_ERR_USAGE,    /* bad command-line usage or option value */
    GS_ERR_LIMIT,    /* an input bound was exceeded (sizes, counts) */
    GS_ERR_NOTFOUND, /* a named thing (policy, model, object) does not exist */
    GS_ERR_INTERNAL, /* a bug: an invariant was broken */
    GS_CODE_COUNT_
} gs_code;

#define GS_ERR_FILE_MAX 256
#define GS_ERR_PATH_MAX 256
#define GS_ERR_MSG_MAX 512

typedef struct gs_error {
    gs_code code;
    int line;                    /* 1-based; 0 when unknown */
    int col;                     /* 1-based; 0 when unknown */
    char file[GS_ERR_FILE_MAX];  /* "" when unknown; "-" for stdin */
    char path[GS_ERR_PATH_MAX];  /* object path, "" when none */
    char msg[GS_ERR_MSG_MAX];    /* what was wrong and what was expected */
} gs_error;

/* Reset to GS_OK with empty strings. */
void gs_error_clear(gs_error *err);

/* Fill err (if non-NULL). file/path may be NULL. Always returns -1 so callers can
 * write `return gs_error_set(...)`. */
int gs_error_set(gs_error *err, gs_code code, const char *file, int line, int col,
                 const char *path, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
int gs_error_setv(gs_error *err, gs_code code, const char *file, int line, int col,
                  const char *path, const char *fmt, va_list ap);

/* Shorthand for errors without a source position. */
#define gs_fail(err, code, ...) gs_error_set((err), (code), NULL, 0, 0, NULL, __VA_ARGS__)

/* Prefix the object path (e.g. "Pod ns/name: " before a field path). */
void gs_error_prefix_path(gs_error *err, const char *prefix);

/* Table lookups. */
const char *gs_code_name(gs_code code);   /* "parse", "invalid", ... */
int gs_code_exit_status(gs_code code);     /* CLI exit status: 2 for input/usage, 3 internal */
int gs_code_http_status(gs_code code);     /* 400, 413, 500, ... */

/* Format "file:line:col: error: path: msg" into buf (always NUL-terminated).
 * Parts that are unknown are omitted. Returns the length written. */
size_t gs_error_format(const gs_error *err, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
