/*
 * jscan_int.h - the JSON scanning primitives under the fast JSON paths (private to lib/).
 *
 * Who uses them: the tree builder's JSON path (yaml_tree.c, gs_yt_parse_json: manifests,
 * kubectl dumps, watch streams), the AdmissionReview decoder (lib/serve/admission.c) and
 * the snapshot reader's prescan of a List's kind (lib/kube/read.c) and the strict DOM
 * reader gs_json_parse (json.c: reports, traces, annotations, the live client). One
 * grammar: RFC 8259 whitespace, strings (escapes, surrogate pairs), numbers and literals
 * as defined here; the callers add structure, limits and their own error wording.
 *
 * Speed: the loops that touch every byte look at 16 bytes at a time (SSE2 where the
 * compiler targets it, a portable word-at-a-time or byte loop otherwise): the end of a
 * string, the next structural byte of a skipped subtree, runs of indentation, line breaks
 * and UTF-8 character counts for positions.
 *
 * Positions: a gs_jcur walks forward through the text and gives the 1-based line and
 * column (columns count characters, as libfyaml and gs_text_line_col do) of any later
 * byte; moving it costs the bytes passed over once (memchr for line breaks, a
 * word-at-a-time count of UTF-8 lead bytes for columns), so positions for every node of
 * a one-line document cost O(n) in all.
 */
#ifndef GPUSCHED_JSCAN_INT_H
#define GPUSCHED_JSCAN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- positions */
typedef struct gs_jcur {
    const char *at; /* the byte whose position line/col give */
    uint32_t line, col;
    const char *end; /* of the text (a CR is looked past: CR LF is one break) */
    bool cr;         /* the text holds a CR: line breaks are LF, CR LF and a lone CR (as in
                        YAML and libfyaml), counted byte by byte */
    const char *clean; /* [at, clean): ASCII without a line break (columns are bytes: a
                          move inside costs an addition), found ahead of the parser a
                          block at a time when the end is known */
    const char *probe; /* no look ahead before here (the last one found a break at once) */
} gs_jcur;

/* Start at `start`, which sits at 1-based (line, col), in a text ending at end (NULL:
 * unknown, LF only). cr: count byte by byte from the start; otherwise the cursor switches
 * to it by itself at the first CR it passes over (it looks for one in each span it moves
 * over, so it never touches bytes ahead of the parser). */
void gs_jcur_init(gs_jcur *c, const char *start, uint32_t line, uint32_t col);
void gs_jcur_init_text(gs_jcur *c, const char *start, const char *end, uint32_t line, uint32_t col,
                       bool cr);
/* Move forward to `to` (to >= c->at; an earlier `to` is recomputed from nothing and is
 * a caller bug). */
void gs_jcur_move(gs_jcur *c, const char *to);

/* UTF-8 characters (bytes that are not continuation bytes) in s[0..n). */
size_t gs_utf8_chars(const char *s, size_t n);

/* ---------------------------------------------------------------- scanning */
/* The first byte at or after p that is '"', '\\' or a control byte (< 0x20); end if none. */
const char *gs_js_str_special(const char *p, const char *end);
/* The first byte at or after p that is not ' ', '\t', '\r' or '\n'; end if none. */
const char *gs_js_ws(const char *p, const char *end);

/* The end of the string whose opening quote is at p[-1]: a pointer to its closing quote,
 * or NULL when the string is not closed (*bad = end) or holds a raw control byte (*bad
 * at it). *escaped tells whether it holds a backslash. Escapes are not checked here. */
const char *gs_js_str_end(const char *p, const char *end, bool *escaped, const char **bad);

/* Decode the escapes of the string body s[0..n) (no quotes) into out (room for n bytes:
 * the decoded text is never longer). Returns the decoded length, or -1 with *bad at the
 * offending backslash: an unknown escape, a bad \u, or a lone surrogate. "\u0000" gives
 * a NUL byte (as libfyaml does); the caller decides whether that is allowed. out NULL:
 * check only (the return value is then not a length). */
long gs_js_unescape(const char *s, size_t n, char *out, const char **bad);

/* Why gs_js_unescape_why refused the escape at *bad. */
enum {
    GS_JSE_ESCAPE = 1, /* not one of \" \\ \/ \b \f \n \r \t \u, or a backslash ends the body */
    GS_JSE_HEX,        /* \u without four hex digits */
    GS_JSE_SURROGATE,  /* a low surrogate alone, or a high one not followed by \u and a low one */
    GS_JSE_NUL         /* \u0000, when no_nul refuses it */
};

/* gs_js_unescape that also says why it stopped (*why: GS_JSE_*; *bad at the backslash, as
 * there). no_nul: refuse "\u0000" (GS_JSE_NUL) instead of decoding it to a NUL byte, for
 * callers whose strings are C strings (json.c). */
long gs_js_unescape_why(const char *s, size_t n, char *out, bool no_nul, const char **bad, int *why);

/* The literal true, false or null at p: the byte after it, *kind set to 't', 'f' or 'n';
 * NULL when p does not start one. What follows is the caller's grammar (not checked). */
const char *gs_js_literal(const char *p, const char *end, char *kind);

/* The end of an RFC 8259 number starting at p, or NULL (*bad at the offending byte)
 * when p does not start one or it is malformed (leading zeros, "1.", "-", ...). */
const char *gs_js_number(const char *p, const char *end, const char **bad);

/* p at '{' or '[': the byte after the matching close. Validated: every string closed,
 * without raw control bytes (escapes consume one byte, not checked further), brackets
 * balanced and of matching kind (kinds are tracked for the first 4096 levels; deeper
 * levels are counted only). Not validated: what lies between structural bytes (tokens,
 * commas, colons). max_depth > 0: nesting deeper than that (counted from this value, 1
 * for p's own bracket) is an error. NULL on error, with *bad at the offending byte (end
 * when the value does not close) and *too_deep set when the depth was the reason. */
const char *gs_js_skip(const char *p, const char *end, uint32_t max_depth, const char **bad,
                       bool *too_deep);

/* In the JSON object starting at p ('{'), the value of the top-level member `key` when
 * it is a string without escapes: *val and *vlen point into the text. Other members are
 * passed over with gs_js_skip. false when the key is absent, not a plain string, or the
 * object is malformed on the way. */
bool gs_js_top_string(const char *p, const char *end, const char *key, const char **val,
                      size_t *vlen);

/* ---------------------------------------------------------------- resumable scan */
/* Where a value ends in a text that arrives in pieces (a pipe read through a window):
 * strings (with their escapes) and bracket depth only, like gs_js_skip, with the state
 * kept between calls. Used to know that a whole List item, or the rest of a document, is
 * in memory before the parser (which needs its value whole) is given it. */
typedef struct gs_js_scan {
    uint64_t depth;
    uint8_t state; /* GS_JSS_* */
} gs_js_scan;

enum {
    GS_JSS_BEFORE = 0, /* blanks before the value */
    GS_JSS_TOKEN,      /* in a number or literal at depth 0 */
    GS_JSS_STR,        /* in a string */
    GS_JSS_ESC,        /* in a string, after a backslash */
    GS_JSS_IN,         /* inside brackets, between strings */
    GS_JSS_AFTER       /* the value ended: blanks up to the next byte */
};

/* Feed p[0..end): the first non-blank byte after the value (the ',' or ']' that follows
 * an item, ...) once it is there; NULL when the piece ran out first (call again with the
 * bytes that follow). A byte that cannot start a value where one is expected (',', ']',
 * '}') ends the scan at once: the parser says what is wrong there. */
const char *gs_js_scan_feed(gs_js_scan *s, const char *p, const char *end);

#endif
