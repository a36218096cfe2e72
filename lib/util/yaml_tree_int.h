/*
 * yaml_tree_int.h - the one YAML/JSON tree reader of the library: libfyaml's event stream
 * into a compact positioned tree. The manifest reader (lib/kube/read.c), the check
 * configuration (lib/check/config.c) and the MIG inputs (lib/mig: mig-parted configs,
 * MigPlan, MigInventory) all read through it. Private to lib/.
 *
 * Why a tree of our own instead of libfyaml's documents: libfyaml 0.7.12 exposes no start
 * position for mapping and sequence nodes, but its events carry one. Building from the
 * events gives every node a line/column for error messages, lets aliases be refused (no
 * billion-laughs expansion) and duplicate keys be found once, and costs less than a
 * libfyaml document (32 bytes a node; scalars point into the input when libfyaml allows).
 *
 * What every reader gets the same way:
 *  - input: UTF-8 only, checked before libfyaml sees a byte (0.7.12 loops forever on some
 *    malformed input: an unknown directive followed by an invalid sequence); NUL bytes are
 *    refused too (YAML forbids them). A leading byte-order mark is skipped.
 *  - aliases refused, at the alias: "YAML aliases are not supported in <what>; ...";
 *  - duplicate mapping keys refused, at the later key: "duplicate mapping key \"k\""
 *    (pairwise for small mappings, sorted key pointers for large ones: n log n);
 *  - mapping keys must be scalars; nesting depth, nodes per document and scalar size
 *    bounded while building (GS_ERR_LIMIT);
 *  - single-quoted scalars decoded here ('' escapes; libfyaml 0.7.12 gets them wrong);
 *  - positions: 1-based line and column of the node's first character (a quoted scalar:
 *    its opening quote), shifted by the offset the caller gives for a text that starts
 *    inside a larger file.
 *
 * Error codes: GS_ERR_PARSE (YAML syntax, duplicate keys, UTF-8, a second document where
 * one is expected), GS_ERR_INVALID (aliases, non-scalar keys), GS_ERR_LIMIT (bounds),
 * GS_ERR_NOMEM. Errors carry the file and position and no object path.
 */
#ifndef GPUSCHED_YAML_TREE_INT_H
#define GPUSCHED_YAML_TREE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/util.h"

enum { GS_YN_SCALAR = 1, GS_YN_MAP, GS_YN_SEQ };

/* Scalar styles (gs_yn.style). */
enum { GS_YS_PLAIN = 0, GS_YS_SINGLE, GS_YS_DOUBLE, GS_YS_LITERAL, GS_YS_FOLDED };

/* One node. Mappings hold 2*len children (key, value, key, value, ...), sequences len
 * children, linked through next (document roots of a multi-document tree too). Scalar
 * text is NUL-terminated only when the tree was built with copy_text; otherwise it points
 * into the input (when libfyaml could give it unchanged) or into the arena. */
typedef struct gs_yn {
    struct gs_yn *next;
    union {
        struct gs_yn *first; /* mappings, sequences */
        const char *text;    /* scalars */
    } u;
    uint32_t len;  /* scalar: text bytes; mapping: pairs; sequence: items */
    uint32_t line; /* 1-based */
    uint32_t col;  /* 1-based */
    uint8_t type;  /* GS_YN_* */
    uint8_t style; /* scalars: GS_YS_* */
    bool plain;    /* scalar written without quotes or block style (numbers, booleans) */
    bool null;     /* plain null scalar: "", "~", "null", "Null", "NULL" */
} gs_yn;

#define GS_YT_MAX_DEPTH 128          /* the largest max_depth accepted */
#define GS_YT_SHOWN 60               /* bytes of a scalar quoted in messages */

/* A document root, for gs_yt_opts.on_doc. Return 0 to go on, -1 (err set) to stop. */
typedef int (*gs_yt_doc_fn)(void *ctx, const gs_yn *root);
/* Whether the collection value of mapping key `key` is never read: it is then replaced by
 * a null scalar and its events skipped (no nodes, no checks inside). */
typedef bool (*gs_yt_skip_fn)(void *ctx, const gs_yn *key);
/* A streamed List item (gs_yt_stream_items), index counting from 0. Its nodes live until
 * the call returns. `done`: the input before it is behind the parser (only the root's
 * own members still point there). Return 0 to go on, -1 (err set) to stop; over a
 * window (gs_yt_parse_json_window) 1 holds the window from this item on: no byte from
 * the item's start is dropped any more (the caller reads the held items again). */
typedef int (*gs_yt_item_fn)(void *ctx, const gs_yn *item, uint32_t index, const char *done);

typedef struct gs_yt_opts {
    const char *file;     /* named in every error */
    const char *what;     /* in messages: "manifests", "a check configuration" */
    uint32_t max_depth;   /* nested collections; 0 = GS_YT_MAX_DEPTH */
    uint32_t max_nodes;   /* nodes per document; 0 = no bound but memory */
    uint32_t max_scalar;  /* bytes per scalar; 0 = UINT32_MAX / 2 */
    bool copy_text;       /* every scalar a NUL-terminated arena copy */
    bool multi;           /* several documents; else a second one is an error */
    bool text_checked;    /* the caller ran gs_yt_check_text over the input already */
    /* multi: called with each document's root (documents whose root is a null scalar are
     * left out); the arena is scratch then, reset at the start of every document. NULL:
     * the roots stay in the arena, linked through next (gs_yt_root). */
    gs_yt_doc_fn on_doc;
    gs_yt_skip_fn skip;   /* NULL: every value is built */
    gs_yt_item_fn on_item; /* JSON path only, see gs_yt_stream_items */
    void *ctx;            /* for on_doc, skip and on_item */
} gs_yt_opts;

typedef struct gs_yt gs_yt;

/* A builder over arena `a` (nodes and copied text go there). NULL with err when out of
 * memory. The builder keeps one libfyaml parser for all of its gs_yt_parse calls. */
gs_yt *gs_yt_new(const gs_yt_opts *opts, gs_arena *a, gs_error *err);
void gs_yt_free(gs_yt *t);

/* Parse text[0..len), a whole YAML stream, whose first byte sits at 0-based (line_off,
 * col_off) of the file (positions on the first line shift by col_off). Several calls add
 * to the same tree (or call on_doc for each). 0, or -1 with err set. */
int gs_yt_parse(gs_yt *t, const char *text, size_t len, uint32_t line_off, uint32_t col_off);

/* The JSON path: one strict JSON value (RFC 8259) at text[0] ('{' or '['), built into
 * the same tree as gs_yt_parse builds from the same bytes (positions, styles, limits,
 * duplicate keys, skipped values, messages), without libfyaml. Values under keys the skip
 * callback names are passed over with gs_js_skip (jscan_int.h: strings and brackets are
 * checked, tokens inside are not). *used: the bytes the value took. Returns 0, -1 (err
 * set), or 1 when the bytes are not strict JSON and nothing was handed out: the caller
 * then parses the same text with gs_yt_parse (libfyaml: YAML flow style, comments and
 * its own messages). text must be checked (gs_yt_check_text) unless opts.text_checked
 * says it was. */
int gs_yt_parse_json(gs_yt *t, const char *text, size_t len, uint32_t line_off, uint32_t col_off,
                     size_t *used);
/* For the next gs_yt_parse_json document only: when its root is a mapping whose "items"
 * is a sequence, each item is built in a scratch arena, handed to opts.on_item when
 * complete, and dropped (the items sequence stays empty in the tree). Memory is then the
 * root's own members plus one item, whatever the List's size. A malformed document whose
 * items were handed out already is an error here ("invalid JSON: ..."), not a fallback. */
void gs_yt_stream_items(gs_yt *t, bool on);

/* The JSON path over a stream (map_int.h's gs_window: a pipe), with gs_yt_stream_items
 * on: the document at w->buf[off], at 0-based (line_off, col_off), whose bytes up to the
 * '[' of its top-level "items" are in the window already (the caller looked for it).
 * Before each item, the bytes behind it are dropped from the window (once an item was
 * handed out) and the window is filled until the whole item and the byte after it are
 * there (gs_js_scan_feed); after the items, until the document closes. Memory: the
 * root's own members (their text copied out of the window) plus one item and one read.
 * The window's bytes are checked as they arrive: a bad byte (w->bad) is reported when the
 * parser reaches the window holding it, with gs_yt_check_text's message. Returns as
 * gs_yt_parse_json; *end_off: the offset in w->buf after the value. On 1 (not strict
 * JSON, nothing handed out) nothing was dropped: the value still starts at w->buf[off]. */
struct gs_window;
int gs_yt_parse_json_window(gs_yt *t, struct gs_window *w, size_t off, uint32_t line_off,
                            uint32_t col_off, size_t *end_off);

/* The first document root with content (NULL when none); later ones follow through next. */
gs_yn *gs_yt_root(const gs_yt *t);
/* Documents with content so far. */
uint32_t gs_yt_docs(const gs_yt *t);

/* One call: build the tree of data[0..len) into `a`. *root as gs_yt_root (NULL for an
 * empty input or a null document); ndocs may be NULL. */
int gs_yt_build(const gs_yt_opts *opts, gs_arena *a, const char *data, size_t len, gs_yn **root,
                uint32_t *ndocs, gs_error *err);

/* The input checks every build runs first: well-formed UTF-8 and no NUL byte. Errors
 * (GS_ERR_PARSE) name opts->file and opts->what, positioned as gs_yt_parse would. */
int gs_yt_check_text(const gs_yt_opts *opts, const char *data, size_t len, uint32_t line_off,
                     uint32_t col_off, gs_error *err);

/* Scalar text for a message into buf: quoted, at most GS_YT_SHOWN bytes (cut on a
 * character boundary, "..." after), control bytes as '?'. Returns buf. */
const char *gs_yn_shown(const gs_yn *n, char *buf, size_t cap);

/* Plain null spellings of YAML 1.2's core schema: "", "~", "null", "Null", "NULL". */
bool gs_yn_null_text(const char *t, size_t n);

#endif
