/*
 * yaml.c - the MIG inputs (mig-parted files, ConfigMaps holding them, `mig plan`
 * documents) read through the library's one YAML tree (lib/util/yaml_tree.c), positions
 * of configs embedded in ConfigMap strings, and strict typed accessors.
 *
 * Every node keeps the 1-based line and column where it starts, so every later error can
 * name file:line:col. The tree is allocated in a caller-owned arena and dies with it.
 * Limits: nesting depth GS_MIG_MAX_DEPTH, at most MAX_NODES nodes, scalars of MAX_SCALAR
 * bytes, one document unless several are asked for.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mig_int.h"

#define MAX_NODES 4000000u
#define MAX_SCALAR (1u << 24)
#define SHOWN_MAX 40 /* bytes of a scalar quoted in messages */

static void shown(const gs_yn *n, char *buf, size_t cap)
{
    size_t k = 0;
    if (cap < 8) {
        if (cap)
            buf[0] = '\0';
        return;
    }
    buf[k++] = '"';
    for (uint32_t i = 0; i < n->len && k + 5 < cap && i < SHOWN_MAX; i++) {
        unsigned char c = (unsigned char)n->u.text[i];
        buf[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n->len > SHOWN_MAX && k + 4 < cap) {
        buf[k++] = '.';
        buf[k++] = '.';
        buf[k++] = '.';
    }
    buf[k++] = '"';
    buf[k] = '\0';
}

int gs_mig__y_fail(gs_error *err, const char *file, const gs_yn *at, gs_code code,
                   const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_error_setv(err, code, file, at ? (int)at->line : 0, at ? (int)at->col : 0, path, fmt, ap);
    va_end(ap);
    return -1;
}

static int yaml_parse(gs_arena *a, const char *file, const char *data, size_t len, bool multi,
                      gs_yn **root, uint32_t *ndocs, gs_error *err)
{
    *root = NULL;
    if (ndocs)
        *ndocs = 0;
    if (len > GS_MIG_MAX_FILE_BYTES)
        return gs_error_set(err, GS_ERR_LIMIT, file, 0, 0, NULL, "input larger than %u bytes",
                            GS_MIG_MAX_FILE_BYTES);
    gs_yt_opts o;
    memset(&o, 0, sizeof o);
    o.file = file;
    o.what = "a MIG input";
    o.max_depth = GS_MIG_MAX_DEPTH;
    o.max_nodes = MAX_NODES;
    o.max_scalar = MAX_SCALAR;
    o.copy_text = true;
    o.multi = multi;
    return gs_yt_build(&o, a, data, len, root, ndocs, err);
}

int gs_mig__yaml_parse(gs_arena *a, const char *file, const char *data, size_t len,
                       gs_yn **root, gs_error *err)
{
    return yaml_parse(a, file, data, len, false, root, NULL, err);
}

int gs_mig__yaml_parse_docs(gs_arena *a, const char *file, const char *data, size_t len,
                            gs_yn **first, uint32_t *ndocs, gs_error *err)
{
    return yaml_parse(a, file, data, len, true, first, ndocs, err);
}

/* ---------------------------------------------------------------- embedded YAML */
/* Byte offset of 1-based (line, col) in data[0..len), columns counted in characters (as
 * libfyaml counts them); len when out of range. */
static size_t offset_of(const char *data, size_t len, int line, int col)
{
    size_t o = 0;
    for (int l = 1; l < line && o < len; o++)
        if (data[o] == '\n')
            l++;
    for (int c = 1; c < col && o < len && data[o] != '\n'; c++) {
        o++;
        while (o < len && ((unsigned char)data[o] & 0xC0) == 0x80)
            o++;
    }
    return o;
}

bool gs_mig__y_embed_init(gs_mig_embed *e, const gs_yn *s, const char *data, size_t len)
{
    memset(e, 0, sizeof *e);
    e->line = s->line;
    e->col = s->col;
    e->text = s->u.text;
    e->text_len = s->len;
    if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3)) {
        data += 3;
        len -= 3;
    }
    size_t o = offset_of(data, len, s->line, s->col);
    if (o >= len)
        return false;
    if (s->style == GS_YS_LITERAL) {
        /* header line ("|", indicators, comment), then content lines; the indentation is
         * the first non-blank content line's unless an explicit indentation digit is given.
         * libfyaml 0.7 marks the scalar at the start of its first content line; other
         * versions may mark the '|' itself: take either. */
        size_t q;
        if (data[o] == '|') {
            q = o;
            e->line = s->line;
        } else {
            q = o;
            while (q > 0 && data[q - 1] != '\n')
                q--;
            if (q == 0)
                return false;
            q--; /* the newline ending the header line */
            while (q > 0 && data[q - 1] != '\n' && data[q] != '|')
                q--;
            if (data[q] != '|')
                return false;
            e->line = s->line - 1;
        }
        size_t h = q + 1;
        bool explicit_indent = false;
        while (h < len && data[h] != '\n' && data[h] != ' ' && data[h] != '#') {
            if (data[h] >= '1' && data[h] <= '9')
                explicit_indent = true;
            h++;
        }
        if (explicit_indent)
            return false;
        while (h < len && data[h] != '\n')
            h++;
        q = h + 1;
        while (q < len) {
            size_t sp = 0;
            while (q + sp < len && data[q + sp] == ' ')
                sp++;
            if (q + sp < len && data[q + sp] != '\n' && data[q + sp] != '\r') {
                e->indent = (int)sp;
                e->mode = 1;
                return true;
            }
            q += sp + 1;
        }
        return false;
    }
    if (s->style == GS_YS_DOUBLE && data[o] == '"') {
        /* exact only when the string ends on the same line */
        size_t q = o + 1;
        while (q < len && data[q] != '"' && data[q] != '\n') {
            if (data[q] == '\\' && q + 1 < len && data[q + 1] != '\n')
                q++;
            q++;
        }
        if (q >= len || data[q] != '"')
            return false;
        e->raw = data + o + 1;
        e->raw_len = q - (o + 1);
        e->mode = 2;
        return true;
    }
    return false;
}

/* The raw length of the escape (or plain byte) at raw[i] of a double-quoted string, and the
 * bytes it decodes to in *decoded. A surrogate pair written as two \\u escapes decodes
 * to 4 bytes, not 3 + 3: positions after one drift by two columns at most. */
static size_t escape_len(const char *raw, size_t n, size_t i, size_t *decoded)
{
    *decoded = 1;
    if (raw[i] != '\\' || i + 1 >= n)
        return 1;
    char c = raw[i + 1];
    if (c == 'N' || c == '_') { /* U+0085, U+00A0 */
        *decoded = 2;
        return 2;
    }
    if (c == 'L' || c == 'P') { /* U+2028, U+2029 */
        *decoded = 3;
        return 2;
    }
    size_t hex = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (!hex)
        return 2;
    uint32_t cp = 0;
    for (size_t k = 0; k < hex && i + 2 + k < n; k++) {
        char d = raw[i + 2 + k];
        cp = cp * 16 + (uint32_t)(d >= '0' && d <= '9' ? d - '0' : ((d | 0x20) - 'a' + 10) & 15);
    }
    *decoded = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    return i + 2 + hex <= n ? 2 + hex : n - i;
}

static bool pos_before(int l1, int c1, int l2, int c2)
{
    return l1 < l2 || (l1 == l2 && c1 < c2);
}

void gs_mig__y_embed_map(gs_mig_embed *e, int *line, int *col)
{
    if (*line <= 0) {
        *line = e->line;
        *col = e->col;
        return;
    }
    if (e->mode == 1) {
        *line = e->line + *line;
        *col = (*col > 0 ? *col : 1) + e->indent;
        return;
    }
    if (e->mode == 2) {
        /* walk the decoded text and the raw string together from a cursor (tree nodes come
         * in document order, so a whole tree is one pass) up to (line, col) */
        int tl = *line, tc = *col > 0 ? *col : 1;
        if (!e->cur_line || pos_before(tl, tc, e->cur_line, e->cur_col)) {
            e->cur_line = e->cur_col = 1;
            e->cur_dec = e->cur_raw = e->cur_chars = 0;
        }
        while (pos_before(e->cur_line, e->cur_col, tl, tc) && e->cur_raw < e->raw_len &&
               e->cur_dec < e->text_len) {
            size_t dec;
            size_t k = escape_len(e->raw, e->raw_len, e->cur_raw, &dec);
            for (size_t i = 0; i < dec && e->cur_dec < e->text_len; i++, e->cur_dec++) {
                unsigned char ch = (unsigned char)e->text[e->cur_dec];
                if (ch == '\n') {
                    e->cur_line++;
                    e->cur_col = 1;
                } else if ((ch & 0xC0) != 0x80) {
                    e->cur_col++;
                }
            }
            for (size_t i = 0; i < k; i++)
                e->cur_chars += ((unsigned char)e->raw[e->cur_raw + i] & 0xC0) != 0x80;
            e->cur_raw += k;
        }
        *line = e->line;
        *col = e->col + 1 + (int)e->cur_chars;
        return;
    }
    *line = e->line;
    *col = e->col;
}

void gs_mig__y_embed_tree(gs_mig_embed *e, gs_yn *n)
{
    for (; n; n = n->next) {
        int line = (int)n->line, col = (int)n->col;
        gs_mig__y_embed_map(e, &line, &col);
        n->line = line > 0 ? (uint32_t)line : 0;
        n->col = col > 0 ? (uint32_t)col : 0;
        if (n->type != GS_YN_SCALAR)
            gs_mig__y_embed_tree(e, n->u.first);
    }
}

/* ---------------------------------------------------------------- accessors */
const gs_yn *gs_mig__y_get(const gs_yn *map, const char *key)
{
    if (!map || map->type != GS_YN_MAP)
        return NULL;
    size_t kl = strlen(key);
    for (const gs_yn *k = map->u.first; k; k = k->next->next)
        if (k->len == kl && memcmp(k->u.text, key, kl) == 0)
            return k->next;
    return NULL;
}

int gs_mig__y_known_keys(gs_error *err, const char *file, const gs_yn *map,
                         const char *path, const char *const *allowed)
{
    if (!map || map->type != GS_YN_MAP)
        return 0;
    for (const gs_yn *k = map->u.first; k; k = k->next->next) {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = k->len == strlen(allowed[i]) && memcmp(k->u.text, allowed[i], k->len) == 0;
        if (ok)
            continue;
        char s[SHOWN_MAX + 8], list[256];
        shown(k, s, sizeof s);
        size_t o = 0;
        list[0] = '\0';
        for (size_t i = 0; allowed[i] && o < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", allowed[i]);
        return gs_mig__y_fail(err, file, k, GS_ERR_INVALID, path,
                              "unknown field %s (expected one of: %s)", s, list);
    }
    return 0;
}

static const char *type_name(const gs_yn *n)
{
    if (n->type == GS_YN_MAP)
        return "a mapping";
    if (n->type == GS_YN_SEQ)
        return "a sequence";
    return n->null ? "null" : "a scalar";
}

int gs_mig__y_str(gs_error *err, const char *file, const gs_yn *n, const char *path,
                  const char **out)
{
    if (n->type != GS_YN_SCALAR || n->null)
        return gs_mig__y_fail(err, file, n, GS_ERR_INVALID, path, "expected a string, got %s",
                              type_name(n));
    if (strlen(n->u.text) != n->len)
        return gs_mig__y_fail(err, file, n, GS_ERR_INVALID, path,
                              "string contains a NUL character");
    *out = n->u.text;
    return 0;
}

int gs_mig__y_bool(gs_error *err, const char *file, const gs_yn *n, const char *path,
                   bool *out)
{
    /* YAML 1.2 core schema booleans; quoted "true" is a string, as in Go's decoder */
    if (n->type == GS_YN_SCALAR && n->plain) {
        static const char *const yes[] = {"true", "True", "TRUE"};
        static const char *const no[] = {"false", "False", "FALSE"};
        for (int i = 0; i < 3; i++) {
            if (!strcmp(n->u.text, yes[i])) {
                *out = true;
                return 0;
            }
            if (!strcmp(n->u.text, no[i])) {
                *out = false;
                return 0;
            }
        }
    }
    char s[SHOWN_MAX + 8];
    if (n->type == GS_YN_SCALAR)
        shown(n, s, sizeof s);
    return gs_mig__y_fail(err, file, n, GS_ERR_INVALID, path, "expected true or false, got %s",
                          n->type == GS_YN_SCALAR ? s : type_name(n));
}

int gs_mig__y_int(gs_error *err, const char *file, const gs_yn *n, const char *path,
                  int64_t min, int64_t max, int64_t *out)
{
    int64_t v = 0;
    if (n->type != GS_YN_SCALAR || n->null || n->len == 0 ||
        gs_parse_i64(n->u.text, n->len, &v) != 0 || (n->u.text[0] == '+')) {
        char s[SHOWN_MAX + 8];
        if (n->type == GS_YN_SCALAR)
            shown(n, s, sizeof s);
        return gs_mig__y_fail(err, file, n, GS_ERR_INVALID, path, "expected an integer, got %s",
                              n->type == GS_YN_SCALAR ? s : type_name(n));
    }
    if (v < min || v > max)
        return gs_mig__y_fail(err, file, n, GS_ERR_INVALID, path,
                              "%lld is out of range (expected %lld to %lld)", (long long)v,
                              (long long)min, (long long)max);
    *out = v;
    return 0;
}

int gs_mig__parse_number(const char *s, size_t n, double *out)
{
    /* digits are accumulated exactly into an integer mantissa (up to 18 significant
     * digits) and scaled once by a power of ten: no locale, no strtod surprises */
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    uint64_t mant = 0;
    int digits = 0, exp10 = 0;
    bool any = false;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        any = true;
        if (digits < 18) {
            mant = mant * 10 + (uint64_t)(s[i] - '0');
            if (mant)
                digits++;
        } else {
            exp10++;
        }
        i++;
    }
    if (i < n && s[i] == '.') {
        i++;
        bool frac = false;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            frac = true;
            if (digits < 18) {
                mant = mant * 10 + (uint64_t)(s[i] - '0');
                if (mant)
                    digits++;
                exp10--;
            }
            i++;
        }
        any = any || frac;
    }
    if (!any)
        return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        int e = 0;
        bool edig = false;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            edig = true;
            if (e < 10000)
                e = e * 10 + (s[i] - '0');
            i++;
        }
        if (!edig)
            return -1;
        exp10 += eneg ? -e : e;
    }
    if (i != n)
        return -1;
    if (exp10 > 300 || exp10 < -300)
        return mant == 0 ? (*out = 0.0, 0) : -1;
    double v = (double)mant;
    double p = 1.0;
    int ae = exp10 < 0 ? -exp10 : exp10;
    double base = 10.0;
    while (ae) {
        if (ae & 1)
            p *= base;
        base *= base;
        ae >>= 1;
    }
    v = exp10 < 0 ? v / p : v * p;
    *out = neg ? -v : v;
    return 0;
}

int gs_mig__y_num(gs_error *err, const char *file, const gs_yn *n, const char *path,
                  double min, double max, double *out)
{
    double v;
    if (n->type != GS_YN_SCALAR || n->null || gs_mig__parse_number(n->u.text, n->len, &v) != 0) {
        char s[SHOWN_MAX + 8];
        if (n->type == GS_YN_SCALAR)
            shown(n, s, sizeof s);
        return gs_mig__y_fail(err, file, n, GS_ERR_INVALID, path, "expected a number, got %s",
                              n->type == GS_YN_SCALAR ? s : type_name(n));
    }
    if (!(v >= min && v <= max))
        return gs_mig__y_fail(err, file, n, GS_ERR_INVALID, path,
                              "%g is out of range (expected %g to %g)", v, min, max);
    *out = v;
    return 0;
}
