/*
 * util.h - arenas, string buffers, growable arrays, string interning, RNG.
 *
 * Ownership rules used across libgpusched:
 *  - gs_arena: owns every block it hands out; gs_arena_free() releases all of them at once.
 *    Pointers from an arena live exactly as long as the arena.
 *  - gs_strbuf: owns its heap buffer; gs_strbuf_free() releases it, gs_strbuf_detach() hands
 *    it to the caller (free() it).
 *  - GS_VEC: a {T *v; size_t n, cap;} triple owned by whoever holds it; free(vec.v).
 *  - gs_intern: owns copies of the strings it interns; ids are dense from 0 and stable.
 * Allocation failure is reported (NULL / -1), never handled by exiting.
 */
#ifndef GPUSCHED_UTIL_H
#define GPUSCHED_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gpusched/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- arena */
typedef struct gs_arena_block gs_arena_block;
typedef struct gs_arena {
    gs_arena_block *head;
    size_t block_size; /* default size of new blocks */
    size_t used_total; /* bytes handed out, for memory reports */
} gs_arena;

void gs_arena_init(gs_arena *a, size_t block_size); /* 0 = 64 KiB */
void *gs_arena_alloc(gs_arena *a, size_t size);     /* 16-byte aligned, zeroed; NULL on OOM */
void *gs_arena_memdup(gs_arena *a, const void *p, size_t size);
char *gs_arena_strndup(gs_arena *a, const char *s, size_t n); /* NUL-terminates */
char *gs_arena_strdup(gs_arena *a, const char *s);            /* NULL in -> NULL out */
char *gs_arena_printf(gs_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_arena_reset(gs_arena *a); /* keep the first block, drop the rest, reuse memory */
void gs_arena_free(gs_arena *a);

/* ---------------------------------------------------------------- strbuf */
typedef struct gs_strbuf {
    char *buf; /* always NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
    bool oom; /* sticky: set when a grow failed; later appends are dropped */
} gs_strbuf;

#define GS_STRBUF_INIT {NULL, 0, 0, false}
void gs_strbuf_add(gs_strbuf *sb, const char *s, size_t n);
void gs_strbuf_puts(gs_strbuf *sb, const char *s);
void gs_strbuf_putc(gs_strbuf *sb, char c);
void gs_strbuf_printf(gs_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Quoted JSON string: '"', '\\' and every control (C0, DEL, C1) escaped, U+2028/U+2029 as
 * \u2028/\u2029, and each byte that starts no well-formed UTF-8 sequence as \ufffd, so the
 * result is valid UTF-8 JSON whatever the input. NULL writes "". */
void gs_strbuf_json_str(gs_strbuf *sb, const char *s);
void gs_strbuf_json_strn(gs_strbuf *sb, const char *s, size_t n);
/* Human text (terminals, CI logs) from untrusted input: file and object names, values
 * quoted in messages, request uids. Valid printable UTF-8 passes unchanged; escaped are
 *   \n \t \r, the other C0 controls and DEL as \xNN, a byte that starts no well-formed
 *   UTF-8 sequence as \xNN, C1 controls, U+2028/U+2029 and the bidirectional formatting
 *   characters (U+061C, U+200E/F, U+202A-E, U+2066-9) as \u{NN};
 *   a line's first ':' when the line starts with "::" after blanks (a GitHub Actions
 *   workflow command, e.g. "::error ...") and the '[' of "##[" (the legacy form, matched
 *   anywhere in a line) as \x3a and \x5b.
 * gs_strbuf_text/_textn: one line (newlines and tabs escaped too; the string is one line
 * that may start an output line). gs_strbuf_text_lines: a whole document whose '\n' and
 * '\t' are its own layout (kept), every line guarded. gs_strbuf_xml: XML 1.0 character
 * data and attribute values: gs_strbuf_text_lines plus & < > " ' as entities and
 * U+FFFE/U+FFFF escaped, so no character XML 1.0 forbids is written. */
void gs_strbuf_text(gs_strbuf *sb, const char *s);
void gs_strbuf_textn(gs_strbuf *sb, const char *s, size_t n);
void gs_strbuf_text_lines(gs_strbuf *sb, const char *s, size_t n);
void gs_strbuf_xml(gs_strbuf *sb, const char *s);
/* gs_strbuf_printf whose %s arguments are written with gs_strbuf_textn (width and
 * precision kept; the other conversions as printf writes them): for text lines that quote
 * names and values. Numbers longer than 127 characters are cut. */
void gs_strbuf_textf(gs_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_strbuf_vtextf(gs_strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Length of the well-formed UTF-8 sequence at s[0..n) with its code point in *cp, or 0
 * when s[0] starts none (overlong, surrogate, above U+10FFFF, truncated, or n == 0). */
size_t gs_utf8_seq(const char *s, size_t n, uint32_t *cp);
/* A code point gs_strbuf_text escapes though valid: C1 controls, U+2028/U+2029 and the
 * bidirectional formatting characters. */
bool gs_text_hidden(uint32_t cp);
void gs_strbuf_reset(gs_strbuf *sb);                     /* len = 0, keeps memory */
char *gs_strbuf_detach(gs_strbuf *sb);                   /* caller frees; sb reset */
void gs_strbuf_free(gs_strbuf *sb);
static inline const char *gs_strbuf_cstr(const gs_strbuf *sb) { return sb->buf ? sb->buf : ""; }

/* ---------------------------------------------------------------- vectors */
#define GS_VEC(T) struct { T *v; size_t n, cap; }
/* Grow vec to hold at least `need` elements; evaluates to 0 or -1 on OOM. */
int gs_vec_grow_(void **v, size_t *cap, size_t need, size_t elem);
#define gs_vec_reserve(vec, need) \
    gs_vec_grow_((void **)&(vec).v, &(vec).cap, (need), sizeof(*(vec).v))
/* Push one element; evaluates to 0 or -1 on OOM. */
#define gs_vec_push(vec, x) \
    (gs_vec_reserve((vec), (vec).n + 1) ? -1 : ((vec).v[(vec).n++] = (x), 0))
#define gs_vec_free(vec) (free((vec).v), (vec).v = NULL, (vec).n = (vec).cap = 0)

/* ---------------------------------------------------------------- hashing, interning */
uint64_t gs_hash_bytes(const void *p, size_t n); /* FNV-1a 64 */
#define GS_HASH_INIT 1469598103934665603ULL    /* FNV-1a 64's offset basis */
/* Continue an FNV-1a 64 hash h over p[0..n) (gs_hash_bytes = gs_hash_mix(GS_HASH_INIT, ...)). */
uint64_t gs_hash_mix(uint64_t h, const void *p, size_t n);

typedef struct gs_intern {
    char **strs;     /* id -> string (owned) */
    uint32_t *lens;
    uint32_t n, cap;
    uint32_t *slots; /* open addressing: id+1, 0 = empty */
    uint32_t nslots; /* power of two */
} gs_intern;

void gs_intern_init(gs_intern *t);
/* Intern s[0..n): returns its id (>= 0) or -1 on OOM. */
int32_t gs_intern_id(gs_intern *t, const char *s, size_t n);
/* Look up without inserting: id or -1. */
int32_t gs_intern_find(const gs_intern *t, const char *s, size_t n);
static inline const char *gs_intern_str(const gs_intern *t, int32_t id) { return t->strs[id]; }
void gs_intern_free(gs_intern *t);

/* ---------------------------------------------------------------- RNG */
/* splitmix64-seeded xoshiro256**: fast, reproducible across platforms. */
typedef struct gs_rng {
    uint64_t s[4];
} gs_rng;
void gs_rng_seed(gs_rng *r, uint64_t seed);
uint64_t gs_rng_next(gs_rng *r);
uint64_t gs_rng_below(gs_rng *r, uint64_t n); /* uniform in [0, n), unbiased; n > 0 */
double gs_rng_double(gs_rng *r);             /* [0, 1) */

/* ---------------------------------------------------------------- files */
/* Read a whole file ("-" = stdin) into a NUL-terminated heap buffer (caller frees).
 * max_bytes bounds the size (GS_ERR_LIMIT beyond). */
char *gs_read_file(const char *path, size_t max_bytes, size_t *len_out, gs_error *err);
/* Write data to path atomically: a temporary file in the same directory (O_TMPFILE, or a
 * FILE.tmp.<random> created with O_EXCL|O_NOFOLLOW: a planted file or symlink is never
 * followed), fsync, rename over path, fsync the directory; on failure no temporary is left.
 * The file gets mode 0666 less the umask. path "-" writes to stdout. */
int gs_write_file_atomic(const char *path, const char *data, size_t len, gs_error *err);

/* A listening TCP socket on a numeric IPv4 or IPv6 address (host "" or NULL: every
 * address) and port (0: the kernel picks one, *bound says which): SO_REUSEADDR,
 * non-blocking, close-on-exec, IPv6 only for an IPv6 address. The descriptor, or -1 with
 * GS_ERR_USAGE (not a numeric address) or GS_ERR_IO (bind/listen failed: in use, denied). */
int gs_tcp_listen(const char *host, uint16_t port, int backlog, uint16_t *bound, bool *v6, gs_error *err);

/* ---------------------------------------------------------------- strings */
/* Strict decimal integer parse of s[0..n): optional sign, digits, no spaces; range checked. */
int gs_parse_i64(const char *s, size_t n, int64_t *out);
/* Kubernetes RFC3339 timestamp ("2024-05-01T10:00:00Z", fractional seconds and offsets
 * allowed) to Unix seconds. Returns 0 or -1. */
int gs_parse_rfc3339(const char *s, int64_t *out);
/* Duration: a bare integer of seconds, or Go's duration syntax with fractions and the
 * units ns, us, ms, s, m, h plus d = 24h ("90s", "1h30m", "1.5h", "300ms", "2h45m");
 * non-negative; rounded up to whole seconds. */
int gs_parse_duration(const char *s, int64_t *seconds_out);

/* Offset of the first byte of s[0..n) that is not well-formed UTF-8 (overlong forms,
 * surrogates and code points above U+10FFFF are not), or n when all of it is. Every
 * parser checks its input with it before libfyaml sees the bytes (libfyaml 0.7.12 loops
 * forever on some malformed sequences). */
size_t gs_utf8_invalid_at(const char *s, size_t n);
/* 1-based line and column of byte offset `off` of text (columns count characters: UTF-8
 * continuation bytes do not move them). */
void gs_text_line_col(const char *text, size_t off, int *line, int *col);

#ifdef __cplusplus
}
#endif
#endif
