/*
 * quantity.h - Kubernetes resource quantities, exactly as apimachinery defines them.
 *
 * Grammar (resource.ParseQuantity): [sign] number [suffix], where suffix is a binary SI
 * suffix (Ki Mi Gi Ti Pi Ei), a decimal SI suffix (n u m "" k M G T P E) or a decimal
 * exponent (e|E [sign] digits). Values are exact decimals held as a signed 128-bit count of
 * nano-units (value * 10^9); anything finer than 1n is rounded up away from zero. Binary SI
 * values above 2^63-1 are capped at 2^63-1 as upstream does; decimal values are not capped
 * but must stay within +-1.7e29 (the int128 range), beyond which parsing fails with
 * GS_ERR_LIMIT ("quantity too large"), a documented difference from upstream.
 *
 * Canonical output (gs_quantity_format) follows upstream's String() after a recompute
 * (the "cached original text" quirk is not reproduced): the format family is kept,
 * the largest exponent that loses no precision is chosen, zero prints "0".
 *
 * All functions are pure; a gs_quantity is a plain value.
 */
#ifndef GPUSCHED_QUANTITY_H
#define GPUSCHED_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gs_qformat {
    GS_QF_DECIMAL_SI = 0, /* 1500m, 2k, 1G */
    GS_QF_BINARY_SI,      /* 1Gi, 512Mi */
    GS_QF_DECIMAL_EXP,    /* 1e3 */
} gs_qformat;

typedef struct gs_quantity {
    __int128 nanos;  /* value * 10^9, exact */
    gs_qformat fmt;
} gs_quantity;

#define GS_QUANTITY_STR_MAX 64

/* Parse s[0..len). On error fills err->msg with upstream's wording
 * ("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
 * for a bad format, "unable to parse quantity's suffix" for a bad suffix) and returns -1
 * with err->code GS_ERR_INVALID (GS_ERR_LIMIT for out-of-range). err has no file/position:
 * callers add those. */
int gs_quantity_parse(const char *s, size_t len, gs_quantity *out, gs_error *err);

/* Convenience constructors. */
gs_quantity gs_quantity_from_int(int64_t v, gs_qformat fmt);   /* v units */
gs_quantity gs_quantity_from_milli(int64_t m, gs_qformat fmt); /* m thousandths */

/* Canonical string into buf (cap >= GS_QUANTITY_STR_MAX suffices). Returns length. */
size_t gs_quantity_format(const gs_quantity *q, char *buf, size_t cap);

/* Integer value rounded up away from zero (Value()); saturates at INT64 bounds. */
int64_t gs_quantity_value(const gs_quantity *q);
/* Milli-value rounded up away from zero (MilliValue()); saturates at INT64 bounds. */
int64_t gs_quantity_milli(const gs_quantity *q);

/* -1, 0, 1 by exact value; format is irrelevant. */
int gs_quantity_cmp(const gs_quantity *a, const gs_quantity *b);
bool gs_quantity_is_zero(const gs_quantity *q);
bool gs_quantity_is_integer(const gs_quantity *q); /* milli-value multiple of 1000 */
/* a + b and a - b (format of a); exact. */
gs_quantity gs_quantity_add(gs_quantity a, gs_quantity b);
gs_quantity gs_quantity_sub(gs_quantity a, gs_quantity b);

#ifdef __cplusplus
}
#endif
#endif
