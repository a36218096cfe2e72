/*
 * fy_int.h - what every libfyaml-based reader of the library sets up the same way (the
 * YAML tree builder, yaml_tree.c, under manifests, the check configuration and MIG inputs;
 * the AdmissionReview JSON decoder). Private to lib/.
 */
#ifndef GPUSCHED_FY_INT_H
#define GPUSCHED_FY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <libfyaml.h>

#include "gpusched/util.h"

/* A diagnostic object that prints nothing and collects errors (for gs__fy_first_error);
 * NULL when out of memory. Destroy with fy_diag_destroy(). */
struct fy_diag *gs__fy_quiet_diag(void);

/* The diagnostic to report for a failed parse: the first error, else the first warning
 * (libfyaml collects warnings such as unknown directives before the error); NULL if none. */
struct fy_diag_error *gs__fy_first_error(struct fy_diag *diag);

/* Text of a scalar token. Single-quoted scalars are decoded from the source, input[0..n)
 * (what the parser reads; token marks are offsets into it), into arena `a`: libfyaml
 * 0.7.12 gets consecutive '' escapes wrong ('a''''b' reads as "a'''") and leaks memory on
 * long runs of them. Other scalars come from fy_token_get_text (pointing into input or
 * into libfyaml's memory, valid while the event lives). *in_arena says which. NULL when
 * out of memory. */
const char *gs__fy_scalar_text(struct fy_token *tok, const char *input, size_t n, gs_arena *a,
                               size_t *len_out, bool *in_arena);

#endif
