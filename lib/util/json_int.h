/*
 * json_int.h - the library's one JSON reader (RFC 8259, strict) into a compact tree.
 * Private to lib/.
 *
 * Who uses it: every JSON input that is not a Kubernetes manifest (those go through the
 * snapshot reader's tree builder, whose JSON path scans with jscan_int.h, as does the
 * AdmissionReview decoder): simulation reports
 * (`simulate merge`), JSON-lines traces. One parser, one fuzz target (fuzz_json), one
 * set of limits and error messages.
 *
 * The tree: one gs_jv per value, in an arena the caller owns. A container's children are
 * one contiguous array (objects: key, value, key, value, ...), so walking is a loop over
 * memory, not a pointer chase. Strings are decoded (escapes, surrogate pairs) and
 * NUL-terminated; numbers keep their source text (the caller decides integer or double).
 * Every value records the byte offset where it starts; gs_json_where() turns it into a
 * 1-based line and column (characters, not bytes) only when an error needs it.
 *
 * Strictness: exactly one value per document (whitespace around it), no comments, no
 * trailing commas, no leading '+' or zeros, no control characters in strings, no
 * "\u0000", no unpaired surrogates, UTF-8 validated up front. Limits bound the depth, the
 * items of one container and the length of one string or number, and are enforced while
 * parsing: nothing of a too-deep or too-wide document is built first. Duplicate object
 * keys are refused when the caller asks (readers of configuration should; RFC 8259 only
 * says names SHOULD be unique).
 */
#ifndef GPUSCHED_JSON_INT_H
#define GPUSCHED_JSON_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/util.h"

typedef enum gs_jtype {
    GS_JNULL = 0,
    GS_JBOOL,
    GS_JNUM,
    GS_JSTR,
    GS_JARR,
    GS_JOBJ,
} gs_jtype;

typedef struct gs_jv {
    uint8_t t;           /* gs_jtype */
    bool b;              /* GS_JBOOL */
    uint32_t n;          /* GS_JSTR / GS_JNUM: bytes; GS_JARR: items; GS_JOBJ: pairs */
    size_t off;          /* byte offset of the value's first character in the input */
    const char *s;       /* GS_JSTR: decoded text; GS_JNUM: the number's source text */
    struct gs_jv *kids;  /* GS_JARR: n items; GS_JOBJ: 2n values, key (GS_JSTR) then value */
} gs_jv;

typedef struct gs_json_limits {
    uint32_t max_depth;   /* containers nested deeper are refused (0 = 64) */
    uint32_t max_items;   /* items or pairs of one container (0 = unbounded) */
    uint32_t max_string;  /* bytes of one decoded string (0 = unbounded) */
    bool unique_keys;     /* refuse an object naming one key twice */
} gs_json_limits;

/* Parse data[0..len) into *out; strings, numbers and child arrays live in `a`. `name` is
 * the file name errors carry (kept by pointer), `first_line` the line number of data[0]
 * in that file (1 for a whole file; a JSON-lines reader passes the line it is on).
 * Errors: GS_ERR_PARSE with file:line:col (syntax, limits, encoding), GS_ERR_NOMEM. */
int gs_json_parse(const char *name, int first_line, const char *data, size_t len,
                  const gs_json_limits *lim, gs_arena *a, gs_jv *out, gs_error *err);

/* Value of `key` in an object (the first when keys repeat); NULL when absent or when
 * `obj` is NULL or not an object. Linear: objects of reports and traces are small. */
const gs_jv *gs_json_get(const gs_jv *obj, const char *key);

/* Line and column (1-based; columns count characters) of v in the document `data` that
 * was parsed with `first_line`. */
void gs_json_where(const char *data, int first_line, const gs_jv *v, int *line, int *col);

/* "null", "a boolean", "a number", "a string", "an array", "an object". */
const char *gs_json_type_name(gs_jtype t);

#endif
