/*
 * csv_int.h - the one CSV record splitter of the library (RFC 4180), for the openb traces
 * (lib/sim/openb.c) and the `mig plan` CSV inventories (lib/mig/input.c). Private to lib/.
 *
 * Fields are separated by ',', records by LF or CRLF. A field that starts with '"' is
 * quoted: it may hold ',', LF and CR and writes a quote as "". A quote inside an unquoted
 * field, text after a closing quote, a bare CR, a NUL byte or an unterminated quoted field
 * is a syntax error (GS_ERR_PARSE) at its line and column; more columns than the bound or
 * a longer field is GS_ERR_LIMIT. A UTF-8 byte-order mark at the start is skipped; empty
 * lines are skipped (and counted). Positions are 1-based, columns in bytes.
 */
#ifndef GPUSCHED_CSV_INT_H
#define GPUSCHED_CSV_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/util.h"

#define GS_CSV_MAX_FIELDS 64

/* One field of the current record: its unquoted text is buf[off, off + len), followed by
 * a NUL; line and col are where it starts (its opening quote when quoted). */
typedef struct gs_csv_field {
    uint32_t off, len;
    uint32_t line, col;
} gs_csv_field;

typedef struct gs_csv {
    const char *file;
    gs_error *err;       /* may be NULL: errors are then only returned */
    const char *p, *end, *line_start;
    uint32_t line;
    uint32_t max_fields; /* columns per record, at most GS_CSV_MAX_FIELDS */
    uint32_t max_field;  /* bytes per field */
    char *buf;           /* the record's field texts, each NUL-terminated (heap) */
    size_t blen, bcap;
    gs_csv_field fields[GS_CSV_MAX_FIELDS];
    uint32_t nfields;
} gs_csv;

/* Start reading data[0..len). max_fields 0 = GS_CSV_MAX_FIELDS, max_field_bytes 0 = 4096. */
void gs_csv_init(gs_csv *c, const char *file, const char *data, size_t len, uint32_t max_fields,
                 uint32_t max_field_bytes, gs_error *err);
/* The next record into c->fields / c->nfields. *eof is set (and 0 returned) when no record
 * is left. -1 with err set on a syntax error, a bound or out of memory. */
int gs_csv_next(gs_csv *c, bool *eof);
/* Field i's text (NUL-terminated) of the current record. */
static inline const char *gs_csv_text(const gs_csv *c, uint32_t i) { return c->buf + c->fields[i].off; }
void gs_csv_free(gs_csv *c);

#endif
