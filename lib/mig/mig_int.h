/*
 * mig_int.h - private interface shared by the lib/mig/ sources:
 *   yaml.c     the shared YAML tree read for MIG inputs, embedded configs, accessors
 *   layout.c   catalog listing helpers, layouts, built-in named configs
 *   parted.c   mig-parted files: parse and validate
 *   input.c    the `mig plan` input (services, inventory, CSV inventories)
 *   plan.c     the planner (exact search, greedy, local improvement)
 *   lp.c       a dense simplex for the LP lower bound and a small max-flow
 *   emit.c     mig-parted output, node config names, the waste report
 * Nothing here is part of the public contract.
 */
#ifndef GPUSCHED_MIG_INT_H
#define GPUSCHED_MIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/mig.h"
#include "util/yaml_tree_int.h"

/* ---------------------------------------------------------------- YAML tree */
/* The shared positioned tree (lib/util/yaml_tree_int.h), built with NUL-terminated scalar
 * copies (text may still contain NUL bytes from escapes, which gs_mig__y_str() rejects). */
/* Parse one YAML (or JSON) document into nodes allocated in `a`. Exactly one document
 * is expected; an empty input gives *root = NULL. Aliases are rejected; duplicate keys
 * are errors. Returns 0 or -1 with err (GS_ERR_PARSE with line:col, GS_ERR_LIMIT). */
int gs_mig__yaml_parse(gs_arena *a, const char *file, const char *data, size_t len,
                       gs_yn **root, gs_error *err);

/* Every document of a YAML stream: *first is the root of the first document with content,
 * the others follow through `next` (documents with no content are left out); *ndocs
 * counts them. Same rules and errors as gs_mig__yaml_parse otherwise. */
int gs_mig__yaml_parse_docs(gs_arena *a, const char *file, const char *data, size_t len,
                            gs_yn **first, uint32_t *ndocs, gs_error *err);

/* Positions of a YAML text embedded as the string scalar `s` of an outer text: where the
 * embedded line/column lands in the outer one (gs_mig__y_embed_map). */
typedef struct gs_mig_embed {
    int line, col;         /* the outer scalar: its indicator or opening quote */
    int mode;              /* 0 approximate, 1 literal block, 2 double-quoted on one line */
    int indent;            /* literal block: content indentation; first content line line+1 */
    const char *raw;       /* double-quoted: the outer text just after the opening quote */
    size_t raw_len;
    const char *text;      /* the decoded string (the embedded YAML) */
    size_t text_len;
    /* double-quoted: where the last translation stopped (decoded line/col, offsets) */
    int cur_line, cur_col;
    size_t cur_dec, cur_raw, cur_chars;
} gs_mig_embed;

/* Set up the map for outer scalar `s` of outer text data[0..len). Returns true when
 * positions will be exact. */
bool gs_mig__y_embed_init(gs_mig_embed *e, const gs_yn *s, const char *data, size_t len);
/* Translate an embedded position (1-based; 0 = unknown) into the outer text. */
void gs_mig__y_embed_map(gs_mig_embed *e, int *line, int *col);
/* Translate every node of a tree. */
void gs_mig__y_embed_tree(gs_mig_embed *e, gs_yn *root);

/* Value of `key` in a mapping, or NULL. */
const gs_yn *gs_mig__y_get(const gs_yn *map, const char *key);
/* Fail with the node's position: always returns -1. */
int gs_mig__y_fail(gs_error *err, const char *file, const gs_yn *at, gs_code code,
                   const char *path, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Every key of `map` must be in the NULL-terminated `allowed`; else an error at the key. */
int gs_mig__y_known_keys(gs_error *err, const char *file, const gs_yn *map,
                         const char *path, const char *const *allowed);
/* Typed scalars; each fails with a positioned GS_ERR_INVALID naming `what`. */
int gs_mig__y_str(gs_error *err, const char *file, const gs_yn *n, const char *path,
                  const char **out);
int gs_mig__y_bool(gs_error *err, const char *file, const gs_yn *n, const char *path,
                   bool *out);
int gs_mig__y_int(gs_error *err, const char *file, const gs_yn *n, const char *path,
                  int64_t min, int64_t max, int64_t *out);
int gs_mig__y_num(gs_error *err, const char *file, const gs_yn *n, const char *path,
                  double min, double max, double *out);
/* Strict decimal number: [-]digits[.digits][(e|E)[+-]digits]. 0 or -1. */
int gs_mig__parse_number(const char *s, size_t n, double *out);

/* ---------------------------------------------------------------- profiles and layouts */
/* Parse a mig-devices key "[<C>c.]<G>g.<GB>gb[+attr]" against a model: writes the GI
 * profile index and the CI slices (0 when not CI-split). Returns 0, -1 when the syntax is
 * wrong, -2 when the GI profile does not exist on the model. */
int gs_mig__devkey_parse(const gs_mig_model *m, const char *key, uint8_t *profile,
                         uint8_t *ci_slices);
/* Syntax check alone (no model). */
bool gs_mig__devkey_syntax_ok(const char *key);
/* Per-profile GI counts of one entry on a model: CI-split names are packed floor(G/C)
 * per GI. Returns 0; -1 with a message in msg when a profile is unknown on the model or
 * a count exceeds what one GPU could ever hold. */
int gs_mig__entry_counts(const gs_mig_model *m, const gs_mig_entry *e, uint8_t *counts,
                         char *msg, size_t cap, const gs_mig_devcount **bad);

/* A model's validity table: counts vectors in mixed radix (max_count + 1 per profile). */
typedef struct gs_mig_table {
    const gs_mig_model *m;
    uint8_t np;
    uint32_t stride[GS_MIG_MAX_PROFILES];
    uint32_t size;
    uint8_t *valid; /* size bytes: 1 = placeable */
} gs_mig_table;

int gs_mig__table_build(gs_mig_table *t, const gs_mig_model *m);
void gs_mig__table_free(gs_mig_table *t);
static inline uint32_t gs_mig__table_index(const gs_mig_table *t, const uint8_t *counts)
{
    uint32_t x = 0;
    for (uint8_t p = 0; p < t->np; p++)
        x += counts[p] * t->stride[p];
    return x;
}

/* Memory and compute of a profile in normalised units: 1/8 of a GPU's memory and 1/28
 * of its compute (so A30's quarter slices count 2 and 7). */
static inline uint32_t gs_mig__mem_units(const gs_mig_model *m, const gs_mig_profile *p)
{
    return (uint32_t)p->mem_slices * (8u / m->memory_slices);
}
static inline uint32_t gs_mig__compute_units(const gs_mig_model *m, const gs_mig_profile *p)
{
    /* the catalog's one slice-amount rule, in 1/28 (exact: 28 is a multiple of 7 and 4) */
    return (uint32_t)(gs_mig_profile_fraction(m, p) * 28.0 + 0.5);
}

/* ---------------------------------------------------------------- plan internals */
/* Parse mig-parted entries (a YAML sequence) as one node's current configuration into
 * per-GPU layouts, validating each against the model. Used by input.c for
 * currentConfig. Returns 0 or -1 with a positioned err. */
int gs_mig__parse_entries_for_node(gs_arena *a, const char *file, const gs_yn *seq,
                                   const char *path, const gs_mig_model *m, uint16_t ngpus,
                                   gs_mig_layout *layouts, gs_error *err);
/* One mig-parted entry (a YAML mapping) into e; problems are GS_ERR_INVALID errors. */
int gs_mig__parse_entry(gs_arena *a, const char *file, const gs_yn *map, const char *path,
                        gs_mig_entry *e, gs_error *err);

/* The profile a service gets on a model (NO_PROFILE when none fits); *estimated when the
 * chosen profile's memory is not known exactly. */
uint8_t gs_mig__choose_profile(const gs_mig_model *m, const gs_mig_service *s, bool *estimated);

/* ---------------------------------------------------------------- LP and flow (lp.c) */
typedef enum { GS_LP_LE = 0, GS_LP_GE, GS_LP_EQ } gs_lp_sense;

/* min c.x subject to rows (A x <sense> b), x >= 0. A is rows x cols, row-major.
 * Returns 0 optimal (x, *obj filled), 1 infeasible, 2 unbounded, -1 out of memory or
 * iteration limit. Dense two-phase simplex with Bland's rule: for small LPs only. */
int gs_mig__lp_solve(uint32_t rows, uint32_t cols, const double *A, const double *b,
                     const uint8_t *sense, const double *c, double *x, double *obj);

/* Max flow on a small graph (Dinic). Nodes 0..n-1. Edges are stored in pairs: edge i
 * and its reverse i ^ 1. */
typedef struct gs_mig_flow_edge {
    uint32_t to;
    uint32_t next; /* next edge out of the same node, UINT32_MAX ends */
    int64_t cap;   /* residual capacity */
} gs_mig_flow_edge;

typedef struct gs_mig_flow {
    uint32_t n;
    GS_VEC(gs_mig_flow_edge) e;
    uint32_t *head; /* per node: first edge */
    uint32_t *level, *iter, *queue;
} gs_mig_flow;

int gs_mig__flow_init(gs_mig_flow *f, uint32_t n);
/* Add an edge; returns its index (the reverse edge is index ^ 1), or -1 on OOM. */
int64_t gs_mig__flow_edge(gs_mig_flow *f, uint32_t from, uint32_t to, int64_t cap);
int64_t gs_mig__flow_run(gs_mig_flow *f, uint32_t s, uint32_t t);
/* Flow carried by edge i after run. */
static inline int64_t gs_mig__flow_of(const gs_mig_flow *f, uint32_t i)
{
    return f->e.v[i ^ 1u].cap;
}
void gs_mig__flow_free(gs_mig_flow *f);

#endif
