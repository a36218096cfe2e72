/*
 * fuzz_quantity.c - libFuzzer target for gs_quantity_parse.
 *
 * Any bytes may be fed in. When a parse succeeds, the value must satisfy the parser's
 * invariants (BinarySI capped at 2^63-1 units and never strictly between 0 and 1), its
 * canonical text must fit GS_QUANTITY_STR_MAX, re-parse to exactly the same value, and
 * format identically again (canonical form is a fixed point). Any violation aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gs_quantity q, back;
    gs_error err;
    if (gs_quantity_parse((const char *)data, size, &q, &err) != 0) {
        if (err.code != GS_ERR_INVALID && err.code != GS_ERR_LIMIT)
            abort();
        return 0;
    }
    const __int128 cap = (__int128)INT64_MAX * 1000000000;
    if (q.fmt == GS_QF_BINARY_SI) {
        if (q.nanos > cap || q.nanos < -cap)
            abort();
        if (q.nanos != 0 && q.nanos > -1000000000 && q.nanos < 1000000000)
            abort();
    }

    char text[GS_QUANTITY_STR_MAX];
    size_t n = gs_quantity_format(&q, text, sizeof text);
    if (n == 0 || n >= sizeof text || strlen(text) != n)
        abort();
    if (gs_quantity_parse(text, n, &back, &err) != 0)
        abort();
    if (back.nanos != q.nanos || gs_quantity_cmp(&q, &back) != 0)
        abort();

    char again[GS_QUANTITY_STR_MAX];
    back.fmt = q.fmt;
    size_t n2 = gs_quantity_format(&back, again, sizeof again);
    if (n2 != n || memcmp(text, again, n) != 0)
        abort();

    /* accessors must agree with each other on sign and never trap */
    int64_t v = gs_quantity_value(&q), m = gs_quantity_milli(&q);
    if ((v > 0) != (q.nanos > 0) || (m > 0) != (q.nanos > 0) || (v == 0) != (q.nanos == 0))
        abort();
    (void)gs_quantity_is_integer(&q);
    gs_quantity sum = gs_quantity_add(q, back), diff = gs_quantity_sub(sum, back);
    if (q.nanos < cap && q.nanos > -cap && gs_quantity_cmp(&diff, &q) != 0)
        abort();
    return 0;
}
