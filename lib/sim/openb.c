/*
 * openb.c - strict reader for the openb node and pod CSVs (cluster-trace-gpu-v2023).
 *
 * How it reads:
 *  - Records come from the library's one RFC 4180 splitter (lib/util/csv.c): fields
 *    separated by ',', records by LF or CRLF; a field that starts with '"' is quoted, may
 *    hold ',', LF and CR, and writes a quote as "". A quote inside an unquoted field, text
 *    after a closing quote, a bare CR, a NUL byte or an unterminated quoted field is a
 *    syntax error at its line and column. A UTF-8 byte-order mark before the header is
 *    skipped; empty lines are skipped.
 *  - The header line decides where each known column is (header-driven: any order, unknown
 *    columns ignored, a known column twice is an error, a required one missing is an error).
 *    Every data row must have exactly as many fields as the header.
 *  - Values are parsed with gs_parse_i64 (strict decimal, no spaces) and range checked; an
 *    error names the column and shows the offending text.
 *  - Rows of one file are appended only when the whole file is valid.
 * Bounds: file size, rows per file, bytes per field, 64 columns.
 */
#include <stdio.h>
#include <string.h>

#include "gpusched/sim.h"
#include "util/csv_int.h"

#define OB_MAX_COLUMNS 64
#define OB_DEFAULT_FILE_BYTES ((size_t)256 << 20)
#define OB_DEFAULT_ROWS 10000000u
#define OB_DEFAULT_FIELD_BYTES 4096u
#define OB_MAX_CPU_MILLI 1000000000LL
#define OB_MAX_MEMORY_MIB (1LL << 40)
#define OB_MAX_POD_GPUS 1024

typedef gs_csv ob_reader;
typedef gs_csv_field ob_field;

/* ---------------------------------------------------------------- messages */

/* Quote at most 40 bytes of s for a message, control bytes as '?'. */
static const char *shown(const char *s, size_t n, char *out, size_t cap)
{
    size_t lim = n < 40 ? n : 40, o = 0;
    for (size_t i = 0; i < lim && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (n > lim && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
    return out;
}

static int rd_fail(ob_reader *r, gs_code code, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int rd_fail(ob_reader *r, gs_code code, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (!r->err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(r->err, code, r->file, (int)line, (int)col, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---------------------------------------------------------------- columns */

typedef struct ob_column {
    const char *name;
    bool required;
} ob_column;

enum { NC_SN, NC_CPU, NC_MEM, NC_GPU, NC_MODEL, NC_COUNT };
static const ob_column node_columns[NC_COUNT] = {
    {"sn", true}, {"cpu_milli", true}, {"memory_mib", true}, {"gpu", true}, {"model", false},
};

enum {
    PC_NAME, PC_CPU, PC_MEM, PC_NUM_GPU, PC_GPU_MILLI, PC_SPEC, PC_QOS, PC_PHASE,
    PC_CREATION, PC_DELETION, PC_SCHEDULED, PC_COUNT
};
static const ob_column pod_columns[PC_COUNT] = {
    {"name", true},         {"cpu_milli", true},      {"memory_mib", true},
    {"num_gpu", true},      {"gpu_milli", true},      {"gpu_spec", false},
    {"qos", false},         {"pod_phase", false},     {"creation_time", false},
    {"deletion_time", false}, {"scheduled_time", false},
};

/* Map the header record onto the known columns: where[i] = field index or -1. */
static int map_header(ob_reader *r, const ob_column *cols, int ncols, int *where)
{
    for (int i = 0; i < ncols; i++)
        where[i] = -1;
    for (uint32_t f = 0; f < r->nfields; f++) {
        const char *name = r->buf + r->fields[f].off;
        for (int i = 0; i < ncols; i++) {
            if (strcmp(name, cols[i].name) != 0)
                continue;
            if (where[i] >= 0)
                return rd_fail(r, GS_ERR_INVALID, r->fields[f].line, r->fields[f].col,
                               "column %s appears twice in the header", cols[i].name);
            where[i] = (int)f;
        }
    }
    for (int i = 0; i < ncols; i++)
        if (cols[i].required && where[i] < 0)
            return rd_fail(r, GS_ERR_INVALID, r->fields[0].line, 1,
                           "missing column %s in the header", cols[i].name);
    return 0;
}

static const ob_field *col_field(const ob_reader *r, const int *where, int c)
{
    return where[c] >= 0 ? &r->fields[where[c]] : NULL;
}

static const char *ftext(const ob_reader *r, const ob_field *f) { return r->buf + f->off; }

/* Integer cell. Empty cells: *has = false when has != NULL (optional), else an error. */
static int int_cell(ob_reader *r, const int *where, int c, const ob_column *cols, int64_t lo,
                    int64_t hi, int64_t *out, bool *has)
{
    const ob_field *f = col_field(r, where, c);
    if (has)
        *has = false;
    if (!f) {
        *out = 0;
        return 0;
    }
    const char *s = ftext(r, f);
    char sh[64];
    if (f->len == 0) {
        *out = 0;
        if (has)
            return 0;
        return rd_fail(r, GS_ERR_INVALID, f->line, f->col, "column %s: empty value, expected an integer",
                       cols[c].name);
    }
    int64_t v;
    if (gs_parse_i64(s, f->len, &v) < 0)
        return rd_fail(r, GS_ERR_INVALID, f->line, f->col,
                       "column %s: expected an integer, got \"%s\"", cols[c].name,
                       shown(s, f->len, sh, sizeof sh));
    if (v < lo || v > hi)
        return rd_fail(r, GS_ERR_INVALID, f->line, f->col,
                       "column %s: %lld is out of range [%lld, %lld]", cols[c].name,
                       (long long)v, (long long)lo, (long long)hi);
    *out = v;
    if (has)
        *has = true;
    return 0;
}

/* String cell copied into the arena ("" when the column is absent). */
static int str_cell(ob_reader *r, gs_arena *a, const int *where, int c, const char **out)
{
    const ob_field *f = col_field(r, where, c);
    if (!f || f->len == 0) {
        *out = "";
        return 0;
    }
    *out = gs_arena_strndup(a, ftext(r, f), f->len);
    if (!*out)
        return gs_fail(r->err, GS_ERR_NOMEM, "out of memory reading %s", r->file);
    return 0;
}

/* Name cell: non-empty, unique in this file and in `seen` (earlier files). */
static int name_cell(ob_reader *r, gs_arena *a, const int *where, int c, const ob_column *cols,
                     const gs_intern *seen, gs_intern *local, const char **out)
{
    const ob_field *f = col_field(r, where, c);
    char sh[64];
    if (f->len == 0)
        return rd_fail(r, GS_ERR_INVALID, f->line, f->col, "column %s: empty name", cols[c].name);
    const char *s = ftext(r, f);
    if (gs_intern_find(seen, s, f->len) >= 0 || gs_intern_find(local, s, f->len) >= 0)
        return rd_fail(r, GS_ERR_INVALID, f->line, f->col, "column %s: duplicate name \"%s\"",
                       cols[c].name, shown(s, f->len, sh, sizeof sh));
    if (gs_intern_id(local, s, f->len) < 0)
        return gs_fail(r->err, GS_ERR_NOMEM, "out of memory reading %s", r->file);
    return str_cell(r, a, where, c, out);
}

/* ---------------------------------------------------------------- table */

void gs_openb_init(gs_openb *t)
{
    memset(t, 0, sizeof *t);
    gs_arena_init(&t->arena, 0);
    gs_intern_init(&t->node_names);
    gs_intern_init(&t->pod_names);
}

void gs_openb_free(gs_openb *t)
{
    gs_vec_free(t->nodes);
    gs_vec_free(t->pods);
    gs_intern_free(&t->node_names);
    gs_intern_free(&t->pod_names);
    gs_arena_free(&t->arena);
}

typedef enum { OB_NODES, OB_PODS } ob_kind;

static int commit_names(gs_intern *dst, const gs_intern *local, gs_error *err)
{
    for (uint32_t i = 0; i < local->n; i++)
        if (gs_intern_id(dst, local->strs[i], local->lens[i]) < 0)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    return 0;
}

static int parse_rows(gs_openb *t, ob_kind kind, const char *name, const char *data, size_t len,
                      const gs_openb_limits *lim, gs_error *err)
{
    uint32_t max_rows = lim && lim->max_rows ? lim->max_rows : OB_DEFAULT_ROWS;
    ob_reader r;
    gs_csv_init(&r, name, data, len, OB_MAX_COLUMNS,
                lim && lim->max_field_bytes ? lim->max_field_bytes : OB_DEFAULT_FIELD_BYTES, err);
    const char *file_copy = gs_arena_strdup(&t->arena, r.file);
    size_t old_nodes = t->nodes.n, old_pods = t->pods.n;
    gs_intern local;
    gs_intern_init(&local);
    int rc = -1;
    bool eof;
    const ob_column *cols = kind == OB_NODES ? node_columns : pod_columns;
    int ncols = kind == OB_NODES ? NC_COUNT : PC_COUNT;
    int where[PC_COUNT];
    if (!file_copy) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", r.file);
        goto out;
    }
    if (gs_csv_next(&r, &eof) < 0)
        goto out;
    if (eof) {
        rd_fail(&r, GS_ERR_PARSE, 1, 1, "empty file: expected a header line");
        goto out;
    }
    if (map_header(&r, cols, ncols, where) < 0)
        goto out;
    uint32_t header_fields = r.nfields;
    uint32_t rows = 0;
    for (;;) {
        if (gs_csv_next(&r, &eof) < 0)
            goto out;
        if (eof)
            break;
        if (++rows > max_rows) {
            rd_fail(&r, GS_ERR_LIMIT, r.fields[0].line, 1, "more than %u rows", max_rows);
            goto out;
        }
        if (r.nfields != header_fields) {
            rd_fail(&r, GS_ERR_PARSE, r.fields[0].line, 1, "row has %u fields, the header has %u",
                    r.nfields, header_fields);
            goto out;
        }
        gs_src src = {file_copy, r.fields[0].line, 1};
        if (kind == OB_NODES) {
            gs_openb_node n;
            memset(&n, 0, sizeof n);
            int64_t gpus = 0;
            if (name_cell(&r, &t->arena, where, NC_SN, cols, &t->node_names, &local, &n.name) < 0 ||
                int_cell(&r, where, NC_CPU, cols, 0, OB_MAX_CPU_MILLI, &n.cpu_milli, NULL) < 0 ||
                int_cell(&r, where, NC_MEM, cols, 0, OB_MAX_MEMORY_MIB, &n.memory_mib, NULL) < 0)
                goto out;
            const ob_field *gf = col_field(&r, where, NC_GPU);
            if (int_cell(&r, where, NC_GPU, cols, 0, INT32_MAX, &gpus, NULL) < 0)
                goto out;
            if (gpus > GS_SIM_MAX_GPUS) {
                rd_fail(&r, GS_ERR_LIMIT, gf->line, gf->col,
                        "column gpu: %lld GPUs on one node, at most %d are supported",
                        (long long)gpus, GS_SIM_MAX_GPUS);
                goto out;
            }
            n.gpus = (uint32_t)gpus;
            if (str_cell(&r, &t->arena, where, NC_MODEL, &n.model) < 0)
                goto out;
            n.src = src;
            if (gs_vec_push(t->nodes, n) < 0) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", r.file);
                goto out;
            }
        } else {
            gs_openb_pod p;
            memset(&p, 0, sizeof p);
            int64_t num_gpu = 0;
            if (name_cell(&r, &t->arena, where, PC_NAME, cols, &t->pod_names, &local, &p.name) < 0 ||
                int_cell(&r, where, PC_CPU, cols, 0, OB_MAX_CPU_MILLI, &p.cpu_milli, NULL) < 0 ||
                int_cell(&r, where, PC_MEM, cols, 0, OB_MAX_MEMORY_MIB, &p.memory_mib, NULL) < 0 ||
                int_cell(&r, where, PC_NUM_GPU, cols, 0, OB_MAX_POD_GPUS, &num_gpu, NULL) < 0 ||
                int_cell(&r, where, PC_GPU_MILLI, cols, INT32_MIN, INT32_MAX, &p.gpu_milli, NULL) < 0 ||
                str_cell(&r, &t->arena, where, PC_SPEC, &p.gpu_spec) < 0 ||
                str_cell(&r, &t->arena, where, PC_QOS, &p.qos) < 0 ||
                str_cell(&r, &t->arena, where, PC_PHASE, &p.phase) < 0 ||
                int_cell(&r, where, PC_CREATION, cols, INT64_MIN + 1, INT64_MAX, &p.creation_time,
                         &p.has_creation) < 0 ||
                int_cell(&r, where, PC_DELETION, cols, INT64_MIN + 1, INT64_MAX, &p.deletion_time,
                         &p.has_deletion) < 0 ||
                int_cell(&r, where, PC_SCHEDULED, cols, INT64_MIN + 1, INT64_MAX,
                         &p.scheduled_time, &p.has_scheduled) < 0)
                goto out;
            p.num_gpu = (uint32_t)num_gpu;
            p.src = src;
            if (gs_vec_push(t->pods, p) < 0) {
                gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", r.file);
                goto out;
            }
        }
    }
    if (commit_names(kind == OB_NODES ? &t->node_names : &t->pod_names, &local, err) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0) {
        t->nodes.n = old_nodes;
        t->pods.n = old_pods;
    }
    gs_intern_free(&local);
    gs_csv_free(&r);
    return rc;
}

int gs_openb_parse_nodes(gs_openb *t, const char *name, const char *data, size_t len,
                         const gs_openb_limits *lim, gs_error *err)
{
    return parse_rows(t, OB_NODES, name, data, len, lim, err);
}

int gs_openb_parse_pods(gs_openb *t, const char *name, const char *data, size_t len,
                        const gs_openb_limits *lim, gs_error *err)
{
    return parse_rows(t, OB_PODS, name, data, len, lim, err);
}

static int read_file_rows(gs_openb *t, ob_kind kind, const char *path, const gs_openb_limits *lim,
                          gs_error *err)
{
    size_t max = lim && lim->max_file_bytes ? lim->max_file_bytes : OB_DEFAULT_FILE_BYTES;
    size_t len = 0;
    char *data = gs_read_file(path, max, &len, err);
    if (!data)
        return -1;
    int rc = parse_rows(t, kind, path, data, len, lim, err);
    free(data);
    return rc;
}

int gs_openb_read_nodes(gs_openb *t, const char *path, const gs_openb_limits *lim, gs_error *err)
{
    return read_file_rows(t, OB_NODES, path, lim, err);
}

int gs_openb_read_pods(gs_openb *t, const char *path, const gs_openb_limits *lim, gs_error *err)
{
    return read_file_rows(t, OB_PODS, path, lim, err);
}
