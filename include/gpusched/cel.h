/*
 * cel.h - the subset of CEL that DRA device selectors use (docs/cel.md).
 *
 * A selector (DeviceClass spec.selectors[].cel.expression, a claim request's selectors) is
 * compiled once and evaluated against one device at a time. The environment mirrors
 * Kubernetes' dynamic-resource-allocation CEL environment:
 *   device.driver                       string
 *   device.attributes["domain"].name    int | bool | string | version (semver)
 *   device.capacity["domain"].name      quantity
 *   device.allowMultipleAllocations     bool
 * plus quantity()/semver() and their methods, string functions, `in`, has(), ternary.
 * Anything outside the subset is refused at compile time with a clear message, never
 * answered wrongly.
 *
 * Errors: gs_error with code GS_ERR_PARSE (syntax), GS_ERR_INVALID (unsupported, type or
 * evaluation errors), GS_ERR_LIMIT (length, depth, node count, cost), GS_ERR_NOMEM; line and
 * col are 1-based positions in the expression (col counts bytes); file and path are left
 * empty for the caller (who knows which object and field held the expression).
 *
 * The library never prints and never exits. A compiled program is immutable: several
 * threads may evaluate one program at once.
 */
#ifndef GPUSCHED_CEL_H
#define GPUSCHED_CEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/quantity.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_CEL_MAX_LEN (10 * 1024)      /* resource.k8s.io CELSelectorExpressionMaxLength */
#define GS_CEL_MAX_DEPTH 128            /* AST depth */
#define GS_CEL_MAX_NODES 8192           /* AST nodes */
#define GS_CEL_COST_LIMIT 1000000       /* resource.k8s.io CELSelectorExpressionMaxCost */
#define GS_CEL_STR_MAX 256              /* string results copied into gs_cel_result */

typedef enum gs_cel_attr_kind {
    GS_CEL_ATTR_INT = 0,
    GS_CEL_ATTR_BOOL,
    GS_CEL_ATTR_STRING,
    GS_CEL_ATTR_VERSION, /* semver 2.0 text, e.g. "8.0.0" or "550.54.15" */
} gs_cel_attr_kind;

/* One device attribute, already split into its domain ("gpu.nvidia.com") and name
 * ("productName"); unqualified names in a ResourceSlice belong to the driver's domain. */
typedef struct gs_cel_attr {
    const char *domain;
    const char *name;
    gs_cel_attr_kind kind;
    int64_t i;          /* GS_CEL_ATTR_INT */
    bool b;             /* GS_CEL_ATTR_BOOL */
    const char *s;      /* GS_CEL_ATTR_STRING / GS_CEL_ATTR_VERSION, NUL-terminated */
} gs_cel_attr;

typedef struct gs_cel_capacity {
    const char *domain;
    const char *name;
    gs_quantity value;
} gs_cel_capacity;

/* The device under evaluation; the arrays are borrowed for the call. */
typedef struct gs_cel_device {
    const char *driver;
    const gs_cel_attr *attrs;
    size_t n_attrs;
    const gs_cel_capacity *caps;
    size_t n_caps;
    bool allow_multiple_allocations;
} gs_cel_device;

typedef enum gs_cel_type {
    GS_CEL_BOOL = 0,
    GS_CEL_INT,
    GS_CEL_STRING,
    GS_CEL_QUANTITY,
    GS_CEL_SEMVER,
    GS_CEL_LIST,
    GS_CEL_MAP,
} gs_cel_type;

typedef struct gs_cel_result {
    gs_cel_type type;
    bool b;                     /* GS_CEL_BOOL */
    int64_t i;                  /* GS_CEL_INT; element count for LIST and MAP */
    gs_quantity q;              /* GS_CEL_QUANTITY */
    char str[GS_CEL_STR_MAX];   /* STRING (truncated) or SEMVER text (major.minor.patch[-pre]) */
    bool truncated;
    uint64_t cost;              /* cost units spent */
} gs_cel_result;

typedef struct gs_cel_program gs_cel_program;

/* Compile expr[0..len). On success *out owns a program (gs_cel_free). */
int gs_cel_compile(const char *expr, size_t len, gs_cel_program **out, gs_error *err);
void gs_cel_free(gs_cel_program *prog);

/* Lower the evaluation cost budget of a program (default GS_CEL_COST_LIMIT; 0 = default). */
void gs_cel_set_cost_limit(gs_cel_program *prog, uint64_t limit);
/* Number of AST nodes (for tests and limits). */
size_t gs_cel_node_count(const gs_cel_program *prog);

/* Evaluate against dev. Returns 0 with *out filled, or -1 with err (the position of the
 * sub-expression that failed). */
int gs_cel_eval(const gs_cel_program *prog, const gs_cel_device *dev, gs_cel_result *out,
                gs_error *err);

/* Evaluate as a selector: the result must be a bool ("selector must evaluate to bool"
 * otherwise). */
int gs_cel_select(const gs_cel_program *prog, const gs_cel_device *dev, bool *match,
                  gs_error *err);

/* Semver 2.0: parse text ("1.2.3-rc.1+build") and compare by precedence (build ignored).
 * gs_cel_semver_cmp returns -1/0/1, or -2 when either side does not parse. */
int gs_cel_semver_cmp(const char *a, const char *b);
bool gs_cel_semver_valid(const char *s, size_t len);

#ifdef __cplusplus
}
#endif
#endif
