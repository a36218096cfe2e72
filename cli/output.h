/*
 * output.h - formatting helpers shared by the CLI commands: one structured-document
 * emitter that writes the same calls as JSON or YAML, an aligned text table, and the
 * emitters of the engine records that several commands print (GPU requests, devices).
 *
 * Everything writes into a caller-owned gs_strbuf; nothing here prints or allocates
 * outside the buffer (the table keeps its cells in its own arena). A command builds its
 * whole output first and writes it at once, so an error never leaves half a document.
 *
 * The emitter (cli_emit) is a push API: begin/end containers, key before every value
 * inside an object. Output is deterministic: key order is call order, 2-space indentation.
 *   JSON: pretty-printed, empty containers as {} and [], a final newline.
 *   YAML: block style as kubectl prints it (sequences under a key are not indented),
 *         empty containers as {} and [], strings quoted only when a plain scalar would be
 *         read back as something else (see yaml_needs_quotes in output.c).
 * Misuse (a value without a key in an object, unbalanced end, nesting deeper than
 * CLI_EMIT_MAX_DEPTH) sets a sticky flag that cli_emit_finish() reports.
 */
#ifndef GPUSCHED_CLI_OUTPUT_H
#define GPUSCHED_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpusched/engine.h"
#include "gpusched/gpu.h"
#include "gpusched/util.h"

typedef enum cli_format {
    CLI_FORMAT_TEXT = 0,
    CLI_FORMAT_JSON,
    CLI_FORMAT_YAML,
} cli_format;

/* --output text|json|yaml into *f; GS_ERR_USAGE naming the choices otherwise. */
int cli_parse_format(const char *value, cli_format *f, gs_error *err);

/* ---------------------------------------------------------------- document emitter */
#define CLI_EMIT_MAX_DEPTH 16

typedef struct cli_emit_frame {
    bool is_array;
    uint8_t opened;   /* how the container started: root, after a key, after "- " */
    uint32_t n;       /* children written so far */
    int indent;       /* YAML: column of the children (keys or "- ") */
} cli_emit_frame;

typedef struct cli_emit {
    gs_strbuf *sb;    /* borrowed */
    cli_format fmt;   /* CLI_FORMAT_JSON or CLI_FORMAT_YAML */
    cli_emit_frame stack[CLI_EMIT_MAX_DEPTH];
    int depth;
    bool have_key;    /* a key was written and waits for its value */
    bool root_done;   /* the root value was started (a document has one) */
    bool misuse;
} cli_emit;

void cli_emit_init(cli_emit *e, gs_strbuf *sb, cli_format fmt);
void cli_emit_begin_object(cli_emit *e);
void cli_emit_end_object(cli_emit *e);
void cli_emit_begin_array(cli_emit *e);
void cli_emit_end_array(cli_emit *e);
void cli_emit_key(cli_emit *e, const char *key);
void cli_emit_str(cli_emit *e, const char *s); /* NULL writes null */
void cli_emit_strn(cli_emit *e, const char *s, size_t n);
void cli_emit_int(cli_emit *e, int64_t v);
void cli_emit_uint(cli_emit *e, uint64_t v);
/* Fixed-point with at most `decimals` digits, trailing zeros dropped (27.5, 28, 0.125). */
void cli_emit_double(cli_emit *e, double v, int decimals);
void cli_emit_bool(cli_emit *e, bool v);
void cli_emit_null(cli_emit *e);
/* Shorthands: key then value. */
void cli_emit_kv_str(cli_emit *e, const char *key, const char *s);
void cli_emit_kv_int(cli_emit *e, const char *key, int64_t v);
void cli_emit_kv_bool(cli_emit *e, const char *key, bool v);
/* Close the document (adds JSON's final newline). 0, or -1 when the calls were unbalanced
 * or misused (a bug in the caller). */
int cli_emit_finish(cli_emit *e);

/* ---------------------------------------------------------------- text table */
#define CLI_TABLE_MAX_COLS 12

/* Rows of cells, rendered with every column as wide as its widest cell, two spaces
 * between columns, no trailing spaces. Cells live in the table's arena. */
typedef struct cli_table {
    uint32_t ncols;
    gs_arena arena;
    GS_VEC(const char *) cells; /* row-major */
    bool oom;
} cli_table;

void cli_table_init(cli_table *t, uint32_t ncols);
/* Append one cell (printf format, %s arguments escaped as gs_strbuf_textf does: a cell is
 * one line); rows fill left to right. */
void cli_table_cell(cli_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Render every row, each line prefixed by `indent`. */
void cli_table_render(const cli_table *t, gs_strbuf *sb, const char *indent);
void cli_table_free(cli_table *t);

/* ---------------------------------------------------------------- engine records */
/* "whole", "share", "mig", "none" */
const char *cli_gpu_kind_name(gs_gpu_kind kind);
/* The gpuRequest object of docs/output-json.md. */
void cli_emit_gpu_request(cli_emit *e, const gs_gpu_request *r);
/* The devices array: one {gpu, milli, memoryMiB, mig} per assignment entry. g may be NULL
 * (MIG profile names then print as null). */
void cli_emit_devices(cli_emit *e, const gs_node_gpus *g, const gs_gpu_assign *a);

#endif
