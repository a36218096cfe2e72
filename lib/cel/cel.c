/*
 * cel.c - the CEL subset of DRA device selectors: lexer, precedence-climbing (Pratt)
 * parser into a flat AST, and a tree-walking evaluator with CEL's error values,
 * commutative &&/|| absorption and a cost budget. See include/gpusched/cel.h, docs/cel.md.
 */
#include "gpusched/cel.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* ---------- program ---------- */

enum { N_BOOL, N_INT, N_STR, N_LIST, N_DEVICE, N_SELECT, N_INDEX, N_CALL, N_HAS, N_NOT, N_NEG,
       N_BIN, N_AND, N_OR, N_COND };
enum { B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_IN, B_ADD, B_SUB, B_MUL, B_DIV, B_MOD };
enum { F_SIZE, F_STARTS, F_ENDS, F_CONTAINS, F_MATCHES, F_LOWER, F_UPPER, F_QUANTITY,
       F_ISQUANTITY, F_SEMVER, F_ISSEMVER, F_COMPARETO, F_ISGT, F_ISLT, F_MAJOR, F_MINOR,
       F_PATCH, F_SIGN, F_ISINTEGER, F_ASINTEGER, F_ADD, F_SUB };

typedef struct node {
    uint8_t op, sub;
    uint16_t depth;
    int32_t a, b, c;     /* children; a = receiver for methods (-1 for globals) */
    uint32_t args, nargs; /* into kids[] for lists, calls, &&, || */
    uint32_t pos;        /* byte offset in the expression */
    int64_t i;
    uint32_t soff, slen; /* string literal / field name in pool */
    int32_t aux;         /* precompiled constant: quantity or regex index, -1 none */
} node;

struct gs_cel_program {
    node *nodes;
    size_t n_nodes, cap_nodes;
    uint32_t *kids;
    size_t n_kids, cap_kids;
    char *pool;
    size_t n_pool, cap_pool;
    gs_quantity *quants;
    size_t n_quants;
    regex_t *rx;
    size_t n_rx;
    char *text;
    size_t len;
    int32_t root;
    uint64_t cost_limit;
};

static void pos_to_linecol(const char *s, size_t len, size_t pos, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t k = 0; k < pos && k < len; k++) {
        if (s[k] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* ---------- regex: RE2 syntax translated to POSIX ERE (subset) ---------- */

static int rx_translate(const char *re, size_t len, char *out, size_t cap, const char **why)
{
    size_t o = 0;
    uint64_t reps = 1; /* product of counted repetitions: bounds glibc's tree copies */
    int nrep = 0;
    bool after_rep = false;
    if (len > 1024) {
        *why = "regex longer than 1024 bytes";
        return -1;
    }
#define PUT(ch) do { if (o + 1 >= cap) { *why = "regex too long"; return -1; } out[o++] = (ch); } while (0)
#define PUTS(str) do { for (const char *q_ = (str); *q_; q_++) PUT(*q_); } while (0)
    for (size_t k = 0; k < len; k++) {
        char ch = re[k];
        if (ch == '\0') {
            *why = "NUL in regex";
            return -1;
        }
        if (ch == '(' && k + 1 < len && re[k + 1] == '?') {
            *why = "unsupported regex group or flag '(?'";
            return -1;
        }
        if ((ch == '*' || ch == '+' || ch == '?' || ch == '}') && k + 1 < len && re[k + 1] == '?') {
            *why = "unsupported non-greedy repetition";
            return -1;
        }
        bool rep = ch == '*' || ch == '+' || ch == '?';
        if (ch == '{') {
            size_t m = k + 1;
            uint64_t lo = 0, hi = 0;
            bool ok = m < len && re[m] >= '0' && re[m] <= '9';
            while (m < len && re[m] >= '0' && re[m] <= '9' && lo <= 1000)
                lo = lo * 10 + (uint64_t)(re[m++] - '0');
            hi = lo;
            if (ok && m < len && re[m] == ',') {
                m++;
                hi = 0;
                if (m < len && re[m] >= '0' && re[m] <= '9') {
                    while (m < len && re[m] >= '0' && re[m] <= '9' && hi <= 1000)
                        hi = hi * 10 + (uint64_t)(re[m++] - '0');
                } else {
                    hi = lo;
                }
            }
            if (!ok || m >= len || re[m] != '}') {
                PUT('\\'); /* RE2 reads a '{' that starts no repetition literally */
                PUT('{');
                after_rep = false;
                continue;
            }
            if (hi > 1000 || lo > hi) {
                *why = "bad repetition count";
                return -1;
            }
            reps *= hi + 1;
            rep = true;
            if (after_rep || reps > 1000) {
                *why = after_rep ? "bad repetition operator" : "repetition too large";
                return -1;
            }
            for (; k <= m; k++)
                PUT(re[k]);
            k--;
            after_rep = true;
            nrep++;
            continue;
        }
        if (rep) {
            if (after_rep) {
                *why = "bad repetition operator";
                return -1;
            }
            if (++nrep > 64) {
                *why = "too many repetition operators";
                return -1;
            }
            after_rep = true;
            PUT(ch);
            continue;
        }
        after_rep = false;
        if (ch == '\\') {
            if (++k >= len) {
                *why = "trailing backslash in regex";
                return -1;
            }
            char e = re[k];
            switch (e) {
            case 'd': PUTS("[0-9]"); continue;
            case 'D': PUTS("[^0-9]"); continue;
            case 'w': PUTS("[A-Za-z0-9_]"); continue;
            case 'W': PUTS("[^A-Za-z0-9_]"); continue;
            case 's': PUTS("[ \t\n\r\f\v]"); continue;
            case 'S': PUTS("[^ \t\n\r\f\v]"); continue;
            case 'n': PUT('\n'); continue;
            case 't': PUT('\t'); continue;
            case 'r': PUT('\r'); continue;
            default: break;
            }
            if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
                *why = "unsupported regex escape";
                return -1;
            }
            if (strchr(".[]()*+?{}|^$\\", e))
                PUT('\\');
            PUT(e);
            continue;
        }
        if (ch == '[') {
            bool dash = false; /* an escaped '-' goes last, where POSIX reads it literally */
            PUT('[');
            k++;
            if (k < len && re[k] == '^')
                PUT(re[k++]);
            if (k < len && re[k] == ']')
                PUT(re[k++]);
            for (; k < len && re[k] != ']'; k++) {
                char b = re[k];
                if (b == '\0') {
                    *why = "NUL in regex";
                    return -1;
                }
                if (b == '[' && k + 1 < len && re[k + 1] == ':') {
                    const char *end = NULL;
                    for (size_t m = k + 2; m + 1 < len; m++)
                        if (re[m] == ':' && re[m + 1] == ']') {
                            end = re + m;
                            break;
                        }
                    if (!end) {
                        *why = "bad character class";
                        return -1;
                    }
                    for (; re + k < end + 2; k++)
                        PUT(re[k]);
                    k--;
                    continue;
                }
                if (b == '\\') {
                    if (++k >= len) {
                        *why = "trailing backslash in regex";
                        return -1;
                    }
                    char e = re[k];
                    if (e == 'd') PUTS("0-9");
                    else if (e == 'w') PUTS("A-Za-z0-9_");
                    else if (e == 's') PUTS(" \t\n\r\f\v");
                    else if (e == '-') dash = true;
                    else if (e == 'n') PUT('\n');
                    else if (e == 't') PUT('\t');
                    else if (e == '\\' || e == '.' || e == '*' || e == '+' || e == '?' ||
                             e == '(' || e == ')' || e == '{' || e == '}' || e == '|' ||
                             e == '$' || e == '/' || e == ':' || e == '_')
                        PUT(e);
                    else {
                        *why = "unsupported escape in regex character class";
                        return -1;
                    }
                    continue;
                }
                PUT(b);
            }
            if (k >= len) {
                *why = "missing closing ]";
                return -1;
            }
            if (dash)
                PUT('-');
            PUT(']');
            continue;
        }
        PUT(ch);
    }
    out[o] = '\0';
    return 0;
#undef PUT
#undef PUTS
}

/* 0 ok; -1 with *why */
static int rx_compile(const char *re, size_t len, regex_t *rx, const char **why)
{
    size_t cap = len * 16 + 16;
    char *buf = malloc(cap);
    if (!buf) {
        *why = "out of memory";
        return -1;
    }
    if (rx_translate(re, len, buf, cap, why) != 0) {
        free(buf);
        return -1;
    }
    int rc = regcomp(rx, buf, REG_EXTENDED | REG_NOSUB);
    free(buf);
    if (rc != 0) {
        *why = "invalid regex";
        return -1;
    }
    return 0;
}

/* ---------- semver ---------- */

typedef struct semver {
    uint64_t v[3];
    const char *pre;
    size_t prelen;
} semver;

static bool is_alnum_dash(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           ch == '-';
}

/* identifiers separated by '.', each non-empty; numeric ones without leading zeros if strict */
static bool ids_valid(const char *s, size_t len, bool strict_num)
{
    if (len == 0)
        return false;
    size_t start = 0;
    for (size_t k = 0; k <= len; k++) {
        if (k == len || s[k] == '.') {
            size_t n = k - start;
            if (n == 0)
                return false;
            bool num = true;
            for (size_t m = start; m < k; m++)
                if (s[m] < '0' || s[m] > '9')
                    num = false;
            if (strict_num && num && n > 1 && s[start] == '0')
                return false;
            start = k + 1;
        } else if (!is_alnum_dash(s[k])) {
            return false;
        }
    }
    return true;
}

static bool semver_parse(const char *s, size_t len, semver *sv)
{
    size_t k = 0;
    for (int part = 0; part < 3; part++) {
        if (k >= len || s[k] < '0' || s[k] > '9')
            return false;
        if (s[k] == '0' && k + 1 < len && s[k + 1] >= '0' && s[k + 1] <= '9')
            return false;
        uint64_t v = 0;
        while (k < len && s[k] >= '0' && s[k] <= '9') {
            if (v > (UINT64_MAX - 9) / 10)
                return false;
            v = v * 10 + (uint64_t)(s[k] - '0');
            k++;
        }
        sv->v[part] = v;
        if (part < 2) {
            if (k >= len || s[k] != '.')
                return false;
            k++;
        }
    }
    sv->pre = NULL;
    sv->prelen = 0;
    size_t plus = len;
    for (size_t m = k; m < len; m++)
        if (s[m] == '+') {
            plus = m;
            break;
        }
    if (k < len && s[k] == '-') {
        sv->pre = s + k + 1;
        sv->prelen = plus - k - 1;
        if (!ids_valid(sv->pre, sv->prelen, true))
            return false;
        k = plus;
    }
    if (k < len) {
        if (s[k] != '+' || !ids_valid(s + k + 1, len - k - 1, false))
            return false;
    }
    return true;
}

static int semver_cmp(const semver *a, const semver *b)
{
    for (int k = 0; k < 3; k++)
        if (a->v[k] != b->v[k])
            return a->v[k] < b->v[k] ? -1 : 1;
    if (!a->pre || !b->pre)
        return a->pre ? -1 : b->pre ? 1 : 0;
    size_t i = 0, j = 0;
    while (i < a->prelen && j < b->prelen) {
        size_t ie = i, je = j;
        while (ie < a->prelen && a->pre[ie] != '.')
            ie++;
        while (je < b->prelen && b->pre[je] != '.')
            je++;
        bool an = true, bn = true;
        for (size_t m = i; m < ie; m++)
            if (a->pre[m] < '0' || a->pre[m] > '9')
                an = false;
        for (size_t m = j; m < je; m++)
            if (b->pre[m] < '0' || b->pre[m] > '9')
                bn = false;
        size_t la = ie - i, lb = je - j;
        int r;
        if (an && bn) {
            r = la != lb ? (la < lb ? -1 : 1) : memcmp(a->pre + i, b->pre + j, la);
        } else if (an != bn) {
            r = an ? -1 : 1;
        } else {
            r = memcmp(a->pre + i, b->pre + j, la < lb ? la : lb);
            if (r == 0 && la != lb)
                r = la < lb ? -1 : 1;
        }
        if (r != 0)
            return r < 0 ? -1 : 1;
        i = ie + 1;
        j = je + 1;
    }
    bool amore = i < a->prelen, bmore = j < b->prelen;
    return amore == bmore ? 0 : amore ? 1 : -1;
}

bool gs_cel_semver_valid(const char *s, size_t len)
{
    semver sv;
    return s && semver_parse(s, len, &sv);
}

int gs_cel_semver_cmp(const char *a, const char *b)
{
    semver x, y;
    if (!a || !b || !semver_parse(a, strlen(a), &x) || !semver_parse(b, strlen(b), &y))
        return -2;
    return semver_cmp(&x, &y);
}

/* ---------- lexer ---------- */

enum { T_EOF, T_IDENT, T_INT, T_STR, T_LP, T_RP, T_LB, T_RB, T_LC, T_DOT, T_COMMA, T_QUEST,
       T_COLON, T_NOT, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_AND, T_OR, T_PLUS, T_MINUS,
       T_STAR, T_SLASH, T_PCT, T_IN, T_TRUE, T_FALSE };

typedef struct token {
    int t;
    size_t pos, end;
    uint64_t u;
    uint32_t soff, slen; /* identifier or decoded string in pool */
} token;

typedef struct parser {
    gs_cel_program *p;
    const char *s;
    size_t len, at;
    token tok;
    gs_error *err;
    bool failed;
    int depth;
} parser;

static int perr(parser *ps, gs_code code, size_t pos, const char *fmt, const char *arg)
{
    if (ps->failed)
        return -1;
    ps->failed = true;
    int line, col;
    pos_to_linecol(ps->s, ps->len, pos, &line, &col);
    gs_error_set(ps->err, code, NULL, line, col, NULL, fmt, arg ? arg : "");
    return -1;
}

static int pool_add(parser *ps, const char *s, size_t n, uint32_t *off)
{
    gs_cel_program *p = ps->p;
    if (p->n_pool + n + 1 > p->cap_pool) {
        size_t nc = (p->cap_pool ? p->cap_pool * 2 : 256) + n + 1;
        char *np = realloc(p->pool, nc);
        if (!np)
            return perr(ps, GS_ERR_NOMEM, 0, "out of memory%s", NULL);
        p->pool = np;
        p->cap_pool = nc;
    }
    memcpy(p->pool + p->n_pool, s, n);
    p->pool[p->n_pool + n] = '\0';
    *off = (uint32_t)p->n_pool;
    p->n_pool += n + 1;
    return 0;
}

static int put_utf8(char *buf, size_t *o, uint32_t cp)
{
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    if (cp < 0x80) {
        buf[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        buf[(*o)++] = (char)(0xC0 | (cp >> 6));
        buf[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        buf[(*o)++] = (char)(0xE0 | (cp >> 12));
        buf[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        buf[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        buf[(*o)++] = (char)(0xF0 | (cp >> 18));
        buf[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        buf[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        buf[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
    return 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static int lex_string(parser *ps, size_t start, bool raw)
{
    const char *s = ps->s;
    size_t k = ps->at;
    char q = s[k];
    bool triple = k + 2 < ps->len && s[k + 1] == q && s[k + 2] == q;
    k += triple ? 3 : 1;
    char *buf = malloc(ps->len + 1);
    if (!buf)
        return perr(ps, GS_ERR_NOMEM, start, "out of memory%s", NULL);
    size_t o = 0;
    for (;;) {
        if (k >= ps->len || (!triple && (s[k] == '\n' || s[k] == '\r'))) {
            free(buf);
            return perr(ps, GS_ERR_PARSE, start, "unterminated string literal%s", NULL);
        }
        if (s[k] == q && (!triple || (k + 2 < ps->len && s[k + 1] == q && s[k + 2] == q))) {
            k += triple ? 3 : 1;
            break;
        }
        if (s[k] == '\\' && !raw) {
            size_t epos = k;
            k++;
            if (k >= ps->len)
                continue;
            char e = s[k++];
            uint32_t cp = 0;
            int nd = 0;
            switch (e) {
            case '\\': case '"': case '\'': case '`': case '?': buf[o++] = e; continue;
            case 'a': buf[o++] = '\a'; continue;
            case 'b': buf[o++] = '\b'; continue;
            case 'f': buf[o++] = '\f'; continue;
            case 'n': buf[o++] = '\n'; continue;
            case 'r': buf[o++] = '\r'; continue;
            case 't': buf[o++] = '\t'; continue;
            case 'v': buf[o++] = '\v'; continue;
            case 'x': case 'X': nd = 2; break;
            case 'u': nd = 4; break;
            case 'U': nd = 8; break;
            default:
                if (e >= '0' && e <= '3' && k + 1 < ps->len && s[k] >= '0' && s[k] <= '7' &&
                    s[k + 1] >= '0' && s[k + 1] <= '7') {
                    cp = (uint32_t)((e - '0') * 64 + (s[k] - '0') * 8 + (s[k + 1] - '0'));
                    k += 2;
                    if (put_utf8(buf, &o, cp) != 0)
                        goto bad;
                    continue;
                }
                goto bad;
            }
            for (int d = 0; d < nd; d++, k++) {
                int h = k < ps->len ? hexval(s[k]) : -1;
                if (h < 0)
                    goto bad;
                cp = cp * 16 + (uint32_t)h;
            }
            if (put_utf8(buf, &o, cp) != 0)
                goto bad;
            continue;
        bad:
            free(buf);
            return perr(ps, GS_ERR_PARSE, epos, "invalid escape sequence in string literal%s",
                        NULL);
        }
        buf[o++] = s[k++];
    }
    int rc = pool_add(ps, buf, o, &ps->tok.soff);
    free(buf);
    ps->tok.slen = (uint32_t)o;
    ps->tok.t = T_STR;
    ps->at = k;
    return rc;
}

static const char *const reserved[] = {"as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
    "void", "while", NULL};

static int next(parser *ps)
{
    const char *s = ps->s;
    size_t k = ps->at;
    for (;;) {
        while (k < ps->len && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r' ||
                               s[k] == '\f'))
            k++;
        if (k + 1 < ps->len && s[k] == '/' && s[k + 1] == '/') {
            while (k < ps->len && s[k] != '\n')
                k++;
            continue;
        }
        break;
    }
    token *t = &ps->tok;
    memset(t, 0, sizeof *t);
    t->pos = k;
    ps->at = k;
    if (k >= ps->len) {
        t->t = T_EOF;
        t->end = k;
        return 0;
    }
    char ch = s[k];
    char c2 = k + 1 < ps->len ? s[k + 1] : '\0';
    if ((ch == 'r' || ch == 'R') && (c2 == '"' || c2 == '\'')) {
        ps->at = k + 1;
        int rc = lex_string(ps, k, true);
        t->end = ps->at;
        return rc;
    }
    if ((ch == 'b' || ch == 'B') && (c2 == '"' || c2 == '\'' || c2 == 'r' || c2 == 'R'))
        return perr(ps, GS_ERR_INVALID, k, "unsupported: bytes literal%s", NULL);
    if (ch == '"' || ch == '\'') {
        int rc = lex_string(ps, k, false);
        t->end = ps->at;
        return rc;
    }
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
        size_t e = k;
        while (e < ps->len && ((s[e] >= 'a' && s[e] <= 'z') || (s[e] >= 'A' && s[e] <= 'Z') ||
                               (s[e] >= '0' && s[e] <= '9') || s[e] == '_'))
            e++;
        size_t n = e - k;
        ps->at = e;
        t->end = e;
        if (n == 2 && !memcmp(s + k, "in", 2)) { t->t = T_IN; return 0; }
        if (n == 4 && !memcmp(s + k, "true", 4)) { t->t = T_TRUE; return 0; }
        if (n == 5 && !memcmp(s + k, "false", 5)) { t->t = T_FALSE; return 0; }
        if (n == 4 && !memcmp(s + k, "null", 4))
            return perr(ps, GS_ERR_INVALID, k, "unsupported: null%s", NULL);
        for (int r = 0; reserved[r]; r++)
            if (strlen(reserved[r]) == n && !memcmp(s + k, reserved[r], n))
                return perr(ps, GS_ERR_PARSE, k, "reserved identifier '%s'", reserved[r]);
        t->t = T_IDENT;
        return pool_add(ps, s + k, n, &t->soff) < 0 ? -1 : (t->slen = (uint32_t)n, 0);
    }
    if ((ch >= '0' && ch <= '9') || (ch == '.' && c2 >= '0' && c2 <= '9')) {
        size_t e = k;
        uint64_t v = 0;
        bool over = false;
        if (ch == '0' && (c2 == 'x' || c2 == 'X')) {
            e += 2;
            size_t d0 = e;
            while (e < ps->len && hexval(s[e]) >= 0) {
                if (v > UINT64_MAX / 16) over = true;
                v = v * 16 + (uint64_t)hexval(s[e]);
                e++;
            }
            if (e == d0)
                return perr(ps, GS_ERR_PARSE, k, "invalid hexadecimal literal%s", NULL);
        } else {
            while (e < ps->len && s[e] >= '0' && s[e] <= '9') {
                if (v > (UINT64_MAX - 9) / 10) over = true;
                v = v * 10 + (uint64_t)(s[e] - '0');
                e++;
            }
            if (e < ps->len && (s[e] == '.' || s[e] == 'e' || s[e] == 'E') &&
                (s[e] != '.' || (e + 1 < ps->len && s[e + 1] >= '0' && s[e + 1] <= '9')))
                return perr(ps, GS_ERR_INVALID, k, "unsupported: double literal%s", NULL);
        }
        if (e < ps->len && (s[e] == 'u' || s[e] == 'U'))
            return perr(ps, GS_ERR_INVALID, k, "unsupported: unsigned integer literal%s", NULL);
        if (over || v > (uint64_t)INT64_MAX + 1)
            return perr(ps, GS_ERR_PARSE, k, "integer literal out of range%s", NULL);
        t->t = T_INT;
        t->u = v;
        ps->at = t->end = e;
        return 0;
    }
    int tt = -1;
    size_t n = 1;
    switch (ch) {
    case '(': tt = T_LP; break;
    case ')': tt = T_RP; break;
    case '[': tt = T_LB; break;
    case ']': tt = T_RB; break;
    case '{': tt = T_LC; break;
    case '.': tt = T_DOT; break;
    case ',': tt = T_COMMA; break;
    case '?': tt = T_QUEST; break;
    case ':': tt = T_COLON; break;
    case '+': tt = T_PLUS; break;
    case '-': tt = T_MINUS; break;
    case '*': tt = T_STAR; break;
    case '/': tt = T_SLASH; break;
    case '%': tt = T_PCT; break;
    case '!': if (c2 == '=') { tt = T_NE; n = 2; } else tt = T_NOT; break;
    case '=': if (c2 == '=') { tt = T_EQ; n = 2; } break;
    case '<': if (c2 == '=') { tt = T_LE; n = 2; } else tt = T_LT; break;
    case '>': if (c2 == '=') { tt = T_GE; n = 2; } else tt = T_GT; break;
    case '&': if (c2 == '&') { tt = T_AND; n = 2; } break;
    case '|': if (c2 == '|') { tt = T_OR; n = 2; } break;
    default: break;
    }
    if (tt < 0) {
        char what[8] = {0};
        if ((unsigned char)ch >= 0x20 && (unsigned char)ch < 0x7f)
            what[0] = ch;
        else
            memcpy(what, "?", 2);
        return perr(ps, GS_ERR_PARSE, k, "Syntax error: token recognition error at '%s'", what);
    }
    t->t = tt;
    ps->at = t->end = k + n;
    return 0;
}

/* ---------- parser ---------- */

static int32_t mk(parser *ps, int op, size_t pos, int32_t a, int32_t b, int32_t c)
{
    gs_cel_program *p = ps->p;
    if (ps->failed)
        return -1;
    if (p->n_nodes >= GS_CEL_MAX_NODES)
        return perr(ps, GS_ERR_LIMIT, pos, "expression too large (more than 8192 nodes)%s", NULL);
    if (p->n_nodes == p->cap_nodes) {
        size_t nc = p->cap_nodes ? p->cap_nodes * 2 : 64;
        node *nn = realloc(p->nodes, nc * sizeof *nn);
        if (!nn)
            return perr(ps, GS_ERR_NOMEM, pos, "out of memory%s", NULL);
        p->nodes = nn;
        p->cap_nodes = nc;
    }
    node *n = &p->nodes[p->n_nodes];
    memset(n, 0, sizeof *n);
    n->op = (uint8_t)op;
    n->a = a;
    n->b = b;
    n->c = c;
    n->pos = (uint32_t)pos;
    n->aux = -1;
    int d = 0;
    int32_t ch[3] = {a, b, c};
    for (int k = 0; k < 3; k++)
        if (ch[k] >= 0 && p->nodes[ch[k]].depth > d)
            d = p->nodes[ch[k]].depth;
    n->depth = (uint16_t)(d + 1);
    if (n->depth > GS_CEL_MAX_DEPTH)
        return perr(ps, GS_ERR_LIMIT, pos, "expression nested too deeply (more than 128 levels)%s",
                    NULL);
    return (int32_t)p->n_nodes++;
}

/* attach kid list; updates depth */
static int set_kids(parser *ps, int32_t id, const int32_t *k, size_t n)
{
    gs_cel_program *p = ps->p;
    if (id < 0)
        return -1;
    if (p->n_kids + n > p->cap_kids) {
        size_t nc = (p->cap_kids ? p->cap_kids * 2 : 64) + n;
        uint32_t *nk = realloc(p->kids, nc * sizeof *nk);
        if (!nk)
            return perr(ps, GS_ERR_NOMEM, 0, "out of memory%s", NULL);
        p->kids = nk;
        p->cap_kids = nc;
    }
    node *nd = &p->nodes[id];
    nd->args = (uint32_t)p->n_kids;
    nd->nargs = (uint32_t)n;
    int d = nd->depth - 1;
    for (size_t m = 0; m < n; m++) {
        p->kids[p->n_kids++] = (uint32_t)k[m];
        if (p->nodes[k[m]].depth > d)
            d = p->nodes[k[m]].depth;
    }
    nd->depth = (uint16_t)(d + 1);
    if (nd->depth > GS_CEL_MAX_DEPTH)
        return perr(ps, GS_ERR_LIMIT, nd->pos,
                    "expression nested too deeply (more than 128 levels)%s", NULL);
    return 0;
}

static int32_t parse_expr(parser *ps);

static int expect(parser *ps, int t, const char *what)
{
    if (ps->failed)
        return -1;
    if (ps->tok.t != t)
        return perr(ps, GS_ERR_PARSE, ps->tok.pos, "Syntax error: expected %s", what);
    return next(ps);
}

typedef struct fninfo {
    const char *name;
    int id;
    int8_t global, method, nargs; /* nargs excluding the receiver */
} fninfo;

static const fninfo fns[] = {
    {"size", F_SIZE, 1, 1, 0},        {"startsWith", F_STARTS, 0, 1, 1},
    {"endsWith", F_ENDS, 0, 1, 1},    {"contains", F_CONTAINS, 0, 1, 1},
    {"matches", F_MATCHES, 0, 1, 1},  {"lowerAscii", F_LOWER, 0, 1, 0},
    {"upperAscii", F_UPPER, 0, 1, 0}, {"quantity", F_QUANTITY, 1, 0, 1},
    {"isQuantity", F_ISQUANTITY, 1, 0, 1}, {"semver", F_SEMVER, 1, 0, 1},
    {"isSemver", F_ISSEMVER, 1, 0, 1}, {"compareTo", F_COMPARETO, 0, 1, 1},
    {"isGreaterThan", F_ISGT, 0, 1, 1}, {"isLessThan", F_ISLT, 0, 1, 1},
    {"major", F_MAJOR, 0, 1, 0},      {"minor", F_MINOR, 0, 1, 0},
    {"patch", F_PATCH, 0, 1, 0},      {"sign", F_SIGN, 0, 1, 0},
    {"isInteger", F_ISINTEGER, 0, 1, 0}, {"asInteger", F_ASINTEGER, 0, 1, 0},
    {"add", F_ADD, 0, 1, 1},          {"sub", F_SUB, 0, 1, 1},
};
static const char *const macros[] = {"all", "exists", "exists_one", "map", "filter",
                                     "transformList", "transformMap", "optMap", NULL};

/* parse "(args)" after a function name; recv -1 for a global call */
static int32_t parse_call(parser *ps, size_t pos, uint32_t name_off, uint32_t name_len,
                          int32_t recv)
{
    /* a copy: the pool moves as the arguments are lexed; longer names match nothing */
    char name[64];
    size_t nl = name_len < sizeof name - 1 ? name_len : sizeof name - 1;
    memcpy(name, ps->p->pool + name_off, nl);
    name[nl] = '\0';
    if (name_len >= sizeof name)
        name_len = 0;
    for (int m = 0; macros[m]; m++)
        if (name_len && !strcmp(macros[m], name))
            return perr(ps, GS_ERR_INVALID, pos, "unsupported: list comprehension macro %s()", name);
    if (next(ps) < 0) /* past '(' */
        return -1;
    int32_t args[8];
    size_t n = 0;
    if (recv < 0 && name_len && !strcmp(name, "has")) {
        size_t apos = ps->tok.pos;
        int32_t a = parse_expr(ps);
        if (a < 0)
            return -1;
        if (ps->p->nodes[a].op != N_SELECT)
            return perr(ps, GS_ERR_INVALID, apos,
                        "invalid argument to has() macro: expected a field selection like "
                        "device.attributes[\"domain\"].name%s", NULL);
        if (expect(ps, T_RP, "')' after has() argument") < 0)
            return -1;
        return mk(ps, N_HAS, pos, a, -1, -1);
    }
    if (ps->tok.t != T_RP) {
        for (;;) {
            int32_t a = parse_expr(ps);
            if (a < 0)
                return -1;
            if (n >= 8)
                return perr(ps, GS_ERR_INVALID, pos, "too many arguments to %s()", name);
            args[n++] = a;
            if (ps->tok.t == T_COMMA) {
                if (next(ps) < 0)
                    return -1;
                continue;
            }
            break;
        }
    }
    if (expect(ps, T_RP, "')' closing the argument list") < 0)
        return -1;
    const fninfo *f = NULL;
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
        if (strlen(fns[k].name) == name_len && !memcmp(fns[k].name, name, name_len))
            f = &fns[k];
    if (!f)
        return perr(ps, GS_ERR_INVALID, pos, "unsupported function: %s()", name);
    if ((recv < 0 && !f->global) || (recv >= 0 && !f->method))
        return perr(ps, GS_ERR_INVALID, pos,
                    recv < 0 ? "%s() must be called as a method" : "%s() is not a method",
                    name);
    /* size(x) global form: argument becomes receiver */
    if (recv < 0 && f->id == F_SIZE) {
        if (n != 1)
            return perr(ps, GS_ERR_INVALID, pos, "wrong number of arguments to %s()", name);
        recv = args[0];
        n = 0;
    } else if ((int)n != f->nargs) {
        return perr(ps, GS_ERR_INVALID, pos, "wrong number of arguments to %s()", name);
    }
    int32_t id = mk(ps, N_CALL, pos, recv, -1, -1);
    if (id < 0 || set_kids(ps, id, args, n) < 0)
        return -1;
    node *nd = &ps->p->nodes[id];
    nd->sub = (uint8_t)f->id;
    /* constant arguments checked and precompiled now */
    if (n == 1 && ps->p->nodes[args[0]].op == N_STR) {
        const node *lit = &ps->p->nodes[args[0]];
        const char *ls = ps->p->pool + lit->soff;
        gs_cel_program *p = ps->p;
        if (f->id == F_QUANTITY) {
            gs_quantity q;
            gs_error qe;
            if (gs_quantity_parse(ls, lit->slen, &q, &qe) != 0)
                return perr(ps, GS_ERR_INVALID, lit->pos, "invalid quantity: %s", qe.msg);
            gs_quantity *nq = realloc(p->quants, (p->n_quants + 1) * sizeof *nq);
            if (!nq)
                return perr(ps, GS_ERR_NOMEM, pos, "out of memory%s", NULL);
            p->quants = nq;
            nq[p->n_quants] = q;
            p->nodes[id].aux = (int32_t)p->n_quants++;
        } else if (f->id == F_SEMVER) {
            semver sv;
            if (!semver_parse(ls, lit->slen, &sv))
                return perr(ps, GS_ERR_INVALID, lit->pos,
                            "invalid semver: \"%s\" (expected MAJOR.MINOR.PATCH[-pre][+build])", ls);
        } else if (f->id == F_MATCHES) {
            regex_t *nr = realloc(p->rx, (p->n_rx + 1) * sizeof *nr);
            if (!nr)
                return perr(ps, GS_ERR_NOMEM, pos, "out of memory%s", NULL);
            p->rx = nr;
            const char *why = NULL;
            if (rx_compile(ls, lit->slen, &nr[p->n_rx], &why) != 0)
                return perr(ps, GS_ERR_INVALID, lit->pos, "invalid regex: %s", why);
            p->nodes[id].aux = (int32_t)p->n_rx++;
        }
    }
    return id;
}

static int32_t parse_primary(parser *ps)
{
    token t = ps->tok;
    switch (t.t) {
    case T_INT:
        if (t.u > (uint64_t)INT64_MAX)
            return perr(ps, GS_ERR_PARSE, t.pos, "integer literal out of range%s", NULL);
        if (next(ps) < 0) return -1;
        {
            int32_t id = mk(ps, N_INT, t.pos, -1, -1, -1);
            if (id >= 0) ps->p->nodes[id].i = (int64_t)t.u;
            return id;
        }
    case T_STR: {
        if (next(ps) < 0) return -1;
        int32_t id = mk(ps, N_STR, t.pos, -1, -1, -1);
        if (id >= 0) {
            ps->p->nodes[id].soff = t.soff;
            ps->p->nodes[id].slen = t.slen;
        }
        return id;
    }
    case T_TRUE: case T_FALSE: {
        if (next(ps) < 0) return -1;
        int32_t id = mk(ps, N_BOOL, t.pos, -1, -1, -1);
        if (id >= 0) ps->p->nodes[id].i = t.t == T_TRUE;
        return id;
    }
    case T_LP: {
        if (next(ps) < 0) return -1;
        int32_t e = parse_expr(ps);
        if (e < 0 || expect(ps, T_RP, "')'") < 0) return -1;
        return e;
    }
    case T_LB: {
        if (next(ps) < 0) return -1;
        int32_t *items = NULL;
        size_t n = 0, cap = 0;
        while (ps->tok.t != T_RB) {
            int32_t e = parse_expr(ps);
            if (e < 0) { free(items); return -1; }
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                int32_t *ni = realloc(items, cap * sizeof *ni);
                if (!ni) { free(items); return perr(ps, GS_ERR_NOMEM, t.pos, "out of memory%s", NULL); }
                items = ni;
            }
            items[n++] = e;
            if (ps->tok.t == T_COMMA) {
                if (next(ps) < 0) { free(items); return -1; }
                continue;
            }
            if (ps->tok.t != T_RB) {
                free(items);
                return perr(ps, GS_ERR_PARSE, ps->tok.pos, "Syntax error: expected %s", "',' or ']' in list");
            }
        }
        if (next(ps) < 0) { free(items); return -1; }
        int32_t id = mk(ps, N_LIST, t.pos, -1, -1, -1);
        int rc = set_kids(ps, id, items, n);
        free(items);
        return rc < 0 ? -1 : id;
    }
    case T_LC:
        return perr(ps, GS_ERR_INVALID, t.pos, "unsupported: map literal%s", NULL);
    case T_IDENT: {
        if (next(ps) < 0) return -1;
        const char *name = ps->p->pool + t.soff; /* after next(): the pool may move */
        if (ps->tok.t == T_LP)
            return parse_call(ps, t.pos, t.soff, t.slen, -1);
        if (!strcmp(name, "device"))
            return mk(ps, N_DEVICE, t.pos, -1, -1, -1);
        return perr(ps, GS_ERR_INVALID, t.pos, "undeclared reference to '%s' (only 'device' is defined)", name);
    }
    case T_EOF:
        return perr(ps, GS_ERR_PARSE, t.pos, "Syntax error: unexpected end of expression%s", NULL);
    default:
        return perr(ps, GS_ERR_PARSE, t.pos, "Syntax error: unexpected token%s", NULL);
    }
}

static int32_t parse_member(parser *ps)
{
    int32_t e = parse_primary(ps);
    while (e >= 0) {
        if (ps->tok.t == T_DOT) {
            size_t dpos = ps->tok.pos;
            if (next(ps) < 0) return -1;
            if (ps->tok.t != T_IDENT)
                return perr(ps, GS_ERR_PARSE, ps->tok.pos, "Syntax error: expected %s", "a field name after '.'");
            token f = ps->tok;
            if (next(ps) < 0) return -1;
            if (ps->tok.t == T_LP) {
                e = parse_call(ps, f.pos, f.soff, f.slen, e);
                continue;
            }
            if (ps->p->nodes[e].op == N_DEVICE) {
                const char *fn = ps->p->pool + f.soff;
                if (strcmp(fn, "driver") && strcmp(fn, "attributes") && strcmp(fn, "capacity") &&
                    strcmp(fn, "allowMultipleAllocations"))
                    return perr(ps, GS_ERR_INVALID, f.pos, "undefined field '%s' of device", fn);
            }
            (void)dpos;
            int32_t id = mk(ps, N_SELECT, f.pos, e, -1, -1);
            if (id >= 0) {
                ps->p->nodes[id].soff = f.soff;
                ps->p->nodes[id].slen = f.slen;
            }
            e = id;
        } else if (ps->tok.t == T_LB) {
            size_t bpos = ps->tok.pos;
            if (next(ps) < 0) return -1;
            int32_t k = parse_expr(ps);
            if (k < 0 || expect(ps, T_RB, "']'") < 0) return -1;
            e = mk(ps, N_INDEX, bpos, e, k, -1);
        } else {
            break;
        }
    }
    return e;
}

static int32_t parse_unary(parser *ps)
{
    if (ps->tok.t == T_NOT || ps->tok.t == T_MINUS) {
        size_t ops[GS_CEL_MAX_DEPTH + 1];
        int kinds[GS_CEL_MAX_DEPTH + 1];
        int n = 0;
        while (ps->tok.t == T_NOT || ps->tok.t == T_MINUS) {
            if (n > GS_CEL_MAX_DEPTH)
                return perr(ps, GS_ERR_LIMIT, ps->tok.pos,
                            "expression nested too deeply (more than 128 levels)%s", NULL);
            ops[n] = ps->tok.pos;
            kinds[n++] = ps->tok.t;
            if (next(ps) < 0) return -1;
        }
        int32_t e;
        if (kinds[n - 1] == T_MINUS && ps->tok.t == T_INT) {
            token t = ps->tok;
            if (next(ps) < 0) return -1;
            e = mk(ps, N_INT, ops[n - 1], -1, -1, -1);
            if (e < 0) return -1;
            ps->p->nodes[e].i = t.u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)t.u;
            n--;
            if (ps->tok.t == T_DOT || ps->tok.t == T_LB)
                return perr(ps, GS_ERR_INVALID, ps->tok.pos, "no such overload: member access on int%s", NULL);
        } else {
            e = parse_member(ps);
        }
        while (e >= 0 && n > 0) {
            n--;
            e = mk(ps, kinds[n] == T_NOT ? N_NOT : N_NEG, ops[n], e, -1, -1);
        }
        return e;
    }
    return parse_member(ps);
}

static int binprec(int t, int *op)
{
    switch (t) {
    case T_EQ: *op = B_EQ; return 3;
    case T_NE: *op = B_NE; return 3;
    case T_LT: *op = B_LT; return 3;
    case T_LE: *op = B_LE; return 3;
    case T_GT: *op = B_GT; return 3;
    case T_GE: *op = B_GE; return 3;
    case T_IN: *op = B_IN; return 3;
    case T_PLUS: *op = B_ADD; return 4;
    case T_MINUS: *op = B_SUB; return 4;
    case T_STAR: *op = B_MUL; return 5;
    case T_SLASH: *op = B_DIV; return 5;
    case T_PCT: *op = B_MOD; return 5;
    default: return -1;
    }
}

static const char *lit_type(int op)
{
    return op == N_BOOL ? "bool" : op == N_INT ? "int" : op == N_STR ? "string" : NULL;
}

/* precedence climbing over relations and arithmetic (levels 3..5) */
static int32_t parse_bin(parser *ps, int minprec)
{
    int32_t l = parse_unary(ps);
    for (;;) {
        if (l < 0) return -1;
        int op = 0;
        int prec = binprec(ps->tok.t, &op);
        if (prec < minprec || prec < 0)
            return l;
        size_t pos = ps->tok.pos;
        if (next(ps) < 0) return -1;
        int32_t r = parse_bin(ps, prec + 1);
        if (r < 0) return -1;
        const char *lt = lit_type(ps->p->nodes[l].op), *rt = lit_type(ps->p->nodes[r].op);
        if (op <= B_GE && lt && rt && lt != rt) {
            char buf[96];
            memcpy(buf, lt, strlen(lt) + 1);
            strcat(buf, ", ");
            strcat(buf, rt);
            return perr(ps, GS_ERR_INVALID, pos, "found no matching overload for a comparison applied to (%s)", buf);
        }
        l = mk(ps, N_BIN, pos, l, r, -1);
        if (l >= 0) ps->p->nodes[l].sub = (uint8_t)op;
    }
}

static int32_t parse_logic(parser *ps, int tokt, int op)
{
    int32_t first = tokt == T_OR ? parse_logic(ps, T_AND, N_AND) : parse_bin(ps, 3);
    if (first < 0 || ps->tok.t != tokt)
        return first;
    size_t pos = ps->tok.pos;
    int32_t *items = malloc(sizeof *items * 16);
    size_t n = 0, cap = 16;
    if (!items) return perr(ps, GS_ERR_NOMEM, pos, "out of memory%s", NULL);
    items[n++] = first;
    while (ps->tok.t == tokt) {
        if (next(ps) < 0) { free(items); return -1; }
        int32_t e = tokt == T_OR ? parse_logic(ps, T_AND, N_AND) : parse_bin(ps, 3);
        if (e < 0) { free(items); return -1; }
        if (n == cap) {
            cap *= 2;
            int32_t *ni = realloc(items, cap * sizeof *ni);
            if (!ni) { free(items); return perr(ps, GS_ERR_NOMEM, pos, "out of memory%s", NULL); }
            items = ni;
        }
        items[n++] = e;
    }
    int32_t id = mk(ps, op, pos, -1, -1, -1);
    int rc = set_kids(ps, id, items, n);
    free(items);
    return rc < 0 ? -1 : id;
}

static int32_t parse_expr(parser *ps)
{
    if (++ps->depth > GS_CEL_MAX_DEPTH) {
        ps->depth--;
        return perr(ps, GS_ERR_LIMIT, ps->tok.pos, "expression nested too deeply (more than 128 levels)%s", NULL);
    }
    int32_t c = parse_logic(ps, T_OR, N_OR);
    if (c >= 0 && ps->tok.t == T_QUEST) {
        size_t pos = ps->tok.pos;
        if (next(ps) < 0) { ps->depth--; return -1; }
        int32_t a = parse_logic(ps, T_OR, N_OR);
        if (a < 0 || expect(ps, T_COLON, "':' in conditional expression") < 0) { ps->depth--; return -1; }
        int32_t b = parse_expr(ps);
        c = b < 0 ? -1 : mk(ps, N_COND, pos, c, a, b);
    }
    ps->depth--;
    return c;
}

void gs_cel_free(gs_cel_program *p)
{
    if (!p)
        return;
    for (size_t k = 0; k < p->n_rx; k++)
        regfree(&p->rx[k]);
    free(p->rx);
    free(p->quants);
    free(p->nodes);
    free(p->kids);
    free(p->pool);
    free(p->text);
    free(p);
}

int gs_cel_compile(const char *expr, size_t len, gs_cel_program **out, gs_error *err)
{
    *out = NULL;
    if (!expr)
        return gs_fail(err, GS_ERR_INVALID, "empty CEL expression");
    if (len > GS_CEL_MAX_LEN)
        return gs_error_set(err, GS_ERR_LIMIT, NULL, 1, 1, NULL,
                            "expression too long: %zu bytes (at most %d)", len, GS_CEL_MAX_LEN);
    gs_cel_program *p = calloc(1, sizeof *p);
    if (!p)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    p->cost_limit = GS_CEL_COST_LIMIT;
    p->text = malloc(len + 1);
    if (!p->text) {
        free(p);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    memcpy(p->text, expr, len);
    p->text[len] = '\0';
    p->len = len;
    parser ps = {.p = p, .s = p->text, .len = len, .err = err};
    int32_t root = -1;
    if (next(&ps) == 0) {
        if (ps.tok.t == T_EOF)
            perr(&ps, GS_ERR_PARSE, 0, "empty CEL expression%s", NULL);
        else
            root = parse_expr(&ps);
        if (root >= 0 && ps.tok.t != T_EOF)
            root = perr(&ps, GS_ERR_PARSE, ps.tok.pos, "Syntax error: unexpected token after the expression%s", NULL);
    }
    if (ps.failed || root < 0) {
        if (!ps.failed)
            perr(&ps, GS_ERR_INTERNAL, 0, "parse failed%s", NULL);
        gs_cel_free(p);
        return -1;
    }
    p->root = root;
    *out = p;
    return 0;
}

void gs_cel_set_cost_limit(gs_cel_program *prog, uint64_t limit)
{
    if (prog)
        prog->cost_limit = limit ? limit : GS_CEL_COST_LIMIT;
}

size_t gs_cel_node_count(const gs_cel_program *prog)
{
    return prog ? prog->n_nodes : 0;
}

/* ---------- evaluation ---------- */

enum { V_BOOL, V_INT, V_STR, V_QTY, V_SEMVER, V_LIST, V_MAP, V_DEVICE, V_ERR };
enum { MK_ATTR_DOMAINS, MK_ATTRS, MK_CAP_DOMAINS, MK_CAPS };

typedef struct val {
    uint8_t t, mk;
    bool b;
    int64_t i;
    const char *s; /* string, map domain, semver text, error message */
    size_t len;
    gs_quantity q;
    semver sv;
    struct val *items;
    size_t n;
    uint32_t pos;
} val;

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) char data[]; /* values hold __int128 quantities */
} chunk;

typedef struct ctx {
    const gs_cel_program *p;
    const gs_cel_device *dev;
    chunk *arena;
    uint64_t cost;
    bool fatal;
    gs_code fatal_code;
} ctx;

static void *aalloc(ctx *c, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!c->arena || c->arena->cap - c->arena->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        chunk *ch = malloc(sizeof *ch + cap);
        if (!ch)
            return NULL;
        ch->next = c->arena;
        ch->used = 0;
        ch->cap = cap;
        c->arena = ch;
    }
    void *r = c->arena->data + c->arena->used;
    c->arena->used += n;
    return r;
}

static val verr(ctx *c, uint32_t pos, const char *msg, const char *arg)
{
    val v;
    memset(&v, 0, sizeof v);
    v.t = V_ERR;
    v.pos = pos;
    size_t ml = strlen(msg), al = arg ? strlen(arg) : 0;
    if (al > 200)
        al = 200;
    char *m = aalloc(c, ml + al + 1);
    if (!m) {
        c->fatal = true;
        c->fatal_code = GS_ERR_NOMEM;
        v.s = "out of memory";
        return v;
    }
    memcpy(m, msg, ml);
    if (al)
        memcpy(m + ml, arg, al);
    m[ml + al] = '\0';
    v.s = m;
    return v;
}

static val vfatal(ctx *c, uint32_t pos, gs_code code, const char *msg)
{
    val v;
    memset(&v, 0, sizeof v);
    v.t = V_ERR;
    v.pos = pos;
    v.s = msg;
    c->fatal = true;
    c->fatal_code = code;
    return v;
}

static val vbool(bool b) { val v; memset(&v, 0, sizeof v); v.t = V_BOOL; v.b = b; return v; }
static val vint(int64_t i) { val v; memset(&v, 0, sizeof v); v.t = V_INT; v.i = i; return v; }
static val vstr(const char *s, size_t n) { val v; memset(&v, 0, sizeof v); v.t = V_STR; v.s = s; v.len = n; return v; }

static const char *tname(const val *v)
{
    static const char *const names[] = {"bool", "int", "string", "quantity", "semver", "list",
                                        "map", "device", "error"};
    return names[v->t];
}

static val no_overload(ctx *c, uint32_t pos, const char *op, const val *a, const val *b)
{
    char buf[128];
    size_t n = strlen(op);
    memcpy(buf, op, n + 1);
    strcat(buf, " applied to (");
    strcat(buf, tname(a));
    if (b) {
        strcat(buf, ", ");
        strcat(buf, tname(b));
    }
    strcat(buf, ")");
    return verr(c, pos, "no such overload: ", buf);
}

static bool streq(const char *z, const char *s, size_t n)
{
    return z && strlen(z) == n && !memcmp(z, s, n);
}

static val eval(ctx *c, int32_t id);

static val attr_value(ctx *c, const gs_cel_attr *a, uint32_t pos)
{
    switch (a->kind) {
    case GS_CEL_ATTR_INT: return vint(a->i);
    case GS_CEL_ATTR_BOOL: return vbool(a->b);
    case GS_CEL_ATTR_STRING: return vstr(a->s ? a->s : "", a->s ? strlen(a->s) : 0);
    case GS_CEL_ATTR_VERSION: {
        val v;
        memset(&v, 0, sizeof v);
        v.t = V_SEMVER;
        v.s = a->s ? a->s : "";
        v.len = strlen(v.s);
        if (!semver_parse(v.s, v.len, &v.sv))
            return verr(c, pos, "invalid version attribute value: ", v.s);
        return v;
    }
    }
    return verr(c, pos, "bad attribute kind", NULL);
}

/* map lookup: found -> 1 with *out; missing -> 0 */
static int map_get(ctx *c, const val *m, const char *k, size_t kl, val *out, uint32_t pos)
{
    const gs_cel_device *d = c->dev;
    memset(out, 0, sizeof *out);
    switch (m->mk) {
    case MK_ATTR_DOMAINS:
    case MK_CAP_DOMAINS: {
        out->t = V_MAP;
        out->mk = m->mk == MK_ATTR_DOMAINS ? MK_ATTRS : MK_CAPS;
        out->s = k;
        out->len = kl;
        if (m->mk == MK_ATTR_DOMAINS) {
            for (size_t i = 0; i < d->n_attrs; i++)
                if (streq(d->attrs[i].domain, k, kl))
                    return 1;
        } else {
            for (size_t i = 0; i < d->n_caps; i++)
                if (streq(d->caps[i].domain, k, kl))
                    return 1;
        }
        return 0; /* the caller may still use the empty default map */
    }
    case MK_ATTRS:
        for (size_t i = 0; i < d->n_attrs; i++)
            if (streq(d->attrs[i].domain, m->s, m->len) && streq(d->attrs[i].name, k, kl)) {
                *out = attr_value(c, &d->attrs[i], pos);
                return 1;
            }
        return 0;
    case MK_CAPS:
        for (size_t i = 0; i < d->n_caps; i++)
            if (streq(d->caps[i].domain, m->s, m->len) && streq(d->caps[i].name, k, kl)) {
                out->t = V_QTY;
                out->q = d->caps[i].value;
                return 1;
            }
        return 0;
    default:
        return 0;
    }
}

static size_t map_size(ctx *c, const val *m)
{
    const gs_cel_device *d = c->dev;
    size_t n = 0;
    if (m->mk == MK_ATTRS || m->mk == MK_CAPS) {
        size_t tot = m->mk == MK_ATTRS ? d->n_attrs : d->n_caps;
        for (size_t i = 0; i < tot; i++) {
            const char *dom = m->mk == MK_ATTRS ? d->attrs[i].domain : d->caps[i].domain;
            if (streq(dom, m->s, m->len))
                n++;
        }
        return n;
    }
    size_t tot = m->mk == MK_ATTR_DOMAINS ? d->n_attrs : d->n_caps;
    for (size_t i = 0; i < tot; i++) {
        const char *dom = m->mk == MK_ATTR_DOMAINS ? d->attrs[i].domain : d->caps[i].domain;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *o = m->mk == MK_ATTR_DOMAINS ? d->attrs[j].domain : d->caps[j].domain;
            seen = dom && o && !strcmp(dom, o);
        }
        if (!seen)
            n++;
    }
    return n;
}

static val device_field(ctx *c, const char *f, size_t fl, uint32_t pos)
{
    val v;
    memset(&v, 0, sizeof v);
    if (streq("driver", f, fl))
        return vstr(c->dev->driver ? c->dev->driver : "", c->dev->driver ? strlen(c->dev->driver) : 0);
    if (streq("allowMultipleAllocations", f, fl))
        return vbool(c->dev->allow_multiple_allocations);
    if (streq("attributes", f, fl) || streq("capacity", f, fl)) {
        v.t = V_MAP;
        v.mk = f[0] == 'a' ? MK_ATTR_DOMAINS : MK_CAP_DOMAINS;
        return v;
    }
    return verr(c, pos, "no such key: ", f);
}

/* select or index with a string key; missing -> error */
static val lookup(ctx *c, const val *m, const char *k, size_t kl, uint32_t pos)
{
    if (m->t == V_DEVICE)
        return device_field(c, k, kl, pos);
    if (m->t != V_MAP)
        return verr(c, pos, "no such overload: field or key access on ", tname(m));
    val out;
    int r = map_get(c, m, k, kl, &out, pos);
    if (r == 0 && (m->mk == MK_ATTRS || m->mk == MK_CAPS)) {
        char key[128];
        size_t n = kl < sizeof key - 1 ? kl : sizeof key - 1;
        memcpy(key, k, n);
        key[n] = '\0';
        return verr(c, pos, "no such key: ", key);
    }
    return out; /* domains: empty default map when absent */
}

/* CEL equality: different types are not equal; 0 ok, -1 unsupported */
static int equal(const val *a, const val *b, bool *res)
{
    if (a->t != b->t) {
        *res = false;
        return 0;
    }
    switch (a->t) {
    case V_BOOL: *res = a->b == b->b; return 0;
    case V_INT: *res = a->i == b->i; return 0;
    case V_STR: *res = a->len == b->len && !memcmp(a->s, b->s, a->len); return 0;
    case V_QTY: *res = gs_quantity_cmp(&a->q, &b->q) == 0; return 0;
    case V_SEMVER: *res = semver_cmp(&a->sv, &b->sv) == 0; return 0;
    case V_LIST:
        if (a->n != b->n) {
            *res = false;
            return 0;
        }
        for (size_t k = 0; k < a->n; k++) {
            bool e;
            if (equal(&a->items[k], &b->items[k], &e) != 0)
                return -1;
            if (!e) {
                *res = false;
                return 0;
            }
        }
        *res = true;
        return 0;
    default:
        return -1;
    }
}

static bool cost(ctx *c, uint64_t n)
{
    c->cost += n;
    return c->cost > c->p->cost_limit;
}

static int cmp3(int64_t a, int64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

static val eval_bin(ctx *c, const node *n)
{
    val a = eval(c, n->a);
    if (a.t == V_ERR) return a;
    val b = eval(c, n->b);
    if (b.t == V_ERR) return b;
    static const char *const opn[] = {"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "@in",
                                      "_+_", "_-_", "_*_", "_/_", "_%_"};
    switch (n->sub) {
    case B_EQ: case B_NE: {
        bool e;
        if (equal(&a, &b, &e) != 0)
            return no_overload(c, n->pos, opn[n->sub], &a, &b);
        return vbool(n->sub == B_EQ ? e : !e);
    }
    case B_LT: case B_LE: case B_GT: case B_GE: {
        int r;
        if (a.t != b.t)
            return no_overload(c, n->pos, opn[n->sub], &a, &b);
        if (a.t == V_INT) r = cmp3(a.i, b.i);
        else if (a.t == V_BOOL) r = cmp3(a.b, b.b);
        else if (a.t == V_STR) {
            int m = memcmp(a.s, b.s, a.len < b.len ? a.len : b.len);
            r = m != 0 ? (m < 0 ? -1 : 1) : cmp3((int64_t)a.len, (int64_t)b.len);
            if (cost(c, (a.len + b.len) / 10)) return vfatal(c, n->pos, GS_ERR_LIMIT, "cost limit exceeded");
        } else
            return no_overload(c, n->pos, opn[n->sub], &a, &b);
        bool res = n->sub == B_LT ? r < 0 : n->sub == B_LE ? r <= 0 : n->sub == B_GT ? r > 0 : r >= 0;
        return vbool(res);
    }
    case B_IN:
        if (b.t == V_LIST) {
            if (cost(c, b.n)) return vfatal(c, n->pos, GS_ERR_LIMIT, "cost limit exceeded");
            for (size_t k = 0; k < b.n; k++) {
                bool e;
                if (equal(&a, &b.items[k], &e) != 0)
                    return no_overload(c, n->pos, opn[n->sub], &a, &b);
                if (e) return vbool(true);
            }
            return vbool(false);
        }
        if (b.t == V_MAP || b.t == V_DEVICE) {
            if (a.t != V_STR) return vbool(false);
            if (b.t == V_DEVICE) {
                val f = device_field(c, a.s, a.len, n->pos);
                return vbool(f.t != V_ERR);
            }
            val out;
            return vbool(map_get(c, &b, a.s, a.len, &out, n->pos) == 1);
        }
        return no_overload(c, n->pos, opn[n->sub], &a, &b);
    case B_ADD:
        if (a.t == V_INT && b.t == V_INT) {
            int64_t r;
            if (__builtin_add_overflow(a.i, b.i, &r)) return verr(c, n->pos, "integer overflow", NULL);
            return vint(r);
        }
        if (a.t == V_STR && b.t == V_STR) {
            if (cost(c, (a.len + b.len) / 10)) return vfatal(c, n->pos, GS_ERR_LIMIT, "cost limit exceeded");
            char *s = aalloc(c, a.len + b.len + 1);
            if (!s) return vfatal(c, n->pos, GS_ERR_NOMEM, "out of memory");
            memcpy(s, a.s, a.len);
            memcpy(s + a.len, b.s, b.len);
            s[a.len + b.len] = '\0';
            return vstr(s, a.len + b.len);
        }
        if (a.t == V_LIST && b.t == V_LIST) {
            val *it = aalloc(c, (a.n + b.n + 1) * sizeof *it);
            if (!it) return vfatal(c, n->pos, GS_ERR_NOMEM, "out of memory");
            if (a.n) memcpy(it, a.items, a.n * sizeof *it);
            if (b.n) memcpy(it + a.n, b.items, b.n * sizeof *it);
            a.items = it;
            a.n += b.n;
            return a;
        }
        return no_overload(c, n->pos, opn[n->sub], &a, &b);
    case B_SUB: case B_MUL: case B_DIV: case B_MOD: {
        if (a.t != V_INT || b.t != V_INT)
            return no_overload(c, n->pos, opn[n->sub], &a, &b);
        int64_t r = 0;
        bool ov = false;
        if (n->sub == B_SUB) ov = __builtin_sub_overflow(a.i, b.i, &r);
        else if (n->sub == B_MUL) ov = __builtin_mul_overflow(a.i, b.i, &r);
        else {
            if (b.i == 0) return verr(c, n->pos, n->sub == B_DIV ? "division by zero" : "modulus by zero", NULL);
            if (a.i == INT64_MIN && b.i == -1) ov = true;
            else r = n->sub == B_DIV ? a.i / b.i : a.i % b.i;
        }
        if (ov) return verr(c, n->pos, "integer overflow", NULL);
        return vint(r);
    }
    default:
        return verr(c, n->pos, "internal: bad operator", NULL);
    }
}

static val make_quantity(ctx *c, const node *n, const val *s)
{
    if (n->aux >= 0) {
        val v;
        memset(&v, 0, sizeof v);
        v.t = V_QTY;
        v.q = c->p->quants[n->aux];
        return v;
    }
    gs_quantity q;
    gs_error qe;
    if (gs_quantity_parse(s->s, s->len, &q, &qe) != 0)
        return verr(c, n->pos, "invalid quantity: ", qe.msg);
    val v;
    memset(&v, 0, sizeof v);
    v.t = V_QTY;
    v.q = q;
    return v;
}

static val eval_call(ctx *c, const node *n)
{
    val r;
    bool has_recv = n->a >= 0;
    if (has_recv) {
        r = eval(c, n->a);
        if (r.t == V_ERR) return r;
    } else {
        memset(&r, 0, sizeof r);
    }
    val arg;
    memset(&arg, 0, sizeof arg);
    if (n->nargs == 1) {
        arg = eval(c, (int32_t)c->p->kids[n->args]);
        if (arg.t == V_ERR) return arg;
    }
    static const char *const fname[] = {"size", "startsWith", "endsWith", "contains", "matches",
        "lowerAscii", "upperAscii", "quantity", "isQuantity", "semver", "isSemver", "compareTo",
        "isGreaterThan", "isLessThan", "major", "minor", "patch", "sign", "isInteger",
        "asInteger", "add", "sub"};
    const char *fn = fname[n->sub];
#define NOOV() return no_overload(c, n->pos, fn, has_recv ? &r : &arg, has_recv && n->nargs ? &arg : NULL)
    switch (n->sub) {
    case F_SIZE:
        if (r.t == V_STR) {
            int64_t cnt = 0;
            for (size_t k = 0; k < r.len; k++)
                if (((unsigned char)r.s[k] & 0xC0) != 0x80) cnt++;
            return vint(cnt);
        }
        if (r.t == V_LIST) return vint((int64_t)r.n);
        if (r.t == V_MAP) return vint((int64_t)map_size(c, &r));
        NOOV();
    case F_STARTS: case F_ENDS: case F_CONTAINS: {
        if (r.t != V_STR || arg.t != V_STR) NOOV();
        if (cost(c, (r.len + arg.len) / 10)) return vfatal(c, n->pos, GS_ERR_LIMIT, "cost limit exceeded");
        if (arg.len > r.len) return vbool(false);
        if (n->sub == F_STARTS) return vbool(!memcmp(r.s, arg.s, arg.len));
        if (n->sub == F_ENDS) return vbool(!memcmp(r.s + r.len - arg.len, arg.s, arg.len));
        for (size_t k = 0; k + arg.len <= r.len; k++)
            if (!memcmp(r.s + k, arg.s, arg.len)) return vbool(true);
        return vbool(false);
    }
    case F_MATCHES: {
        if (r.t != V_STR || arg.t != V_STR) NOOV();
        if (cost(c, r.len + arg.len)) return vfatal(c, n->pos, GS_ERR_LIMIT, "cost limit exceeded");
        if (memchr(r.s, '\0', r.len)) return vbool(false);
        char *subject = aalloc(c, r.len + 1);
        if (!subject) return vfatal(c, n->pos, GS_ERR_NOMEM, "out of memory");
        memcpy(subject, r.s, r.len);
        subject[r.len] = '\0';
        if (n->aux >= 0)
            return vbool(regexec(&c->p->rx[n->aux], subject, 0, NULL, 0) == 0);
        regex_t rx;
        const char *why = NULL;
        if (rx_compile(arg.s, arg.len, &rx, &why) != 0)
            return verr(c, n->pos, "invalid regex: ", why);
        bool m = regexec(&rx, subject, 0, NULL, 0) == 0;
        regfree(&rx);
        return vbool(m);
    }
    case F_LOWER: case F_UPPER: {
        if (r.t != V_STR) NOOV();
        char *s = aalloc(c, r.len + 1);
        if (!s) return vfatal(c, n->pos, GS_ERR_NOMEM, "out of memory");
        for (size_t k = 0; k < r.len; k++) {
            char ch = r.s[k];
            if (n->sub == F_LOWER && ch >= 'A' && ch <= 'Z') ch = (char)(ch + 32);
            if (n->sub == F_UPPER && ch >= 'a' && ch <= 'z') ch = (char)(ch - 32);
            s[k] = ch;
        }
        s[r.len] = '\0';
        return vstr(s, r.len);
    }
    case F_QUANTITY:
        if (arg.t != V_STR) NOOV();
        return make_quantity(c, n, &arg);
    case F_ISQUANTITY: {
        if (arg.t != V_STR) NOOV();
        gs_quantity q;
        gs_error qe;
        return vbool(gs_quantity_parse(arg.s, arg.len, &q, &qe) == 0);
    }
    case F_SEMVER: {
        if (arg.t != V_STR) NOOV();
        val v;
        memset(&v, 0, sizeof v);
        v.t = V_SEMVER;
        v.s = arg.s;
        v.len = arg.len;
        if (!semver_parse(arg.s, arg.len, &v.sv))
            return verr(c, n->pos, "invalid semver: ", arg.s);
        return v;
    }
    case F_ISSEMVER: {
        if (arg.t != V_STR) NOOV();
        semver sv;
        return vbool(semver_parse(arg.s, arg.len, &sv));
    }
    case F_COMPARETO: case F_ISGT: case F_ISLT: {
        int cmp;
        if (r.t == V_QTY && arg.t == V_QTY) cmp = gs_quantity_cmp(&r.q, &arg.q);
        else if (r.t == V_SEMVER && arg.t == V_SEMVER) cmp = semver_cmp(&r.sv, &arg.sv);
        else NOOV();
        if (n->sub == F_COMPARETO) return vint(cmp);
        return vbool(n->sub == F_ISGT ? cmp > 0 : cmp < 0);
    }
    case F_MAJOR: case F_MINOR: case F_PATCH: {
        if (r.t != V_SEMVER) NOOV();
        uint64_t x = r.sv.v[n->sub - F_MAJOR];
        if (x > (uint64_t)INT64_MAX) return verr(c, n->pos, "integer overflow", NULL);
        return vint((int64_t)x);
    }
    case F_SIGN:
        if (r.t != V_QTY) NOOV();
        return vint(r.q.nanos > 0 ? 1 : r.q.nanos < 0 ? -1 : 0);
    case F_ISINTEGER:
        if (r.t != V_QTY) NOOV();
        return vbool(r.q.nanos % 1000000000 == 0 && r.q.nanos <= (__int128)INT64_MAX * 1000000000 &&
                     r.q.nanos >= (__int128)INT64_MIN * 1000000000);
    case F_ASINTEGER:
        if (r.t != V_QTY) NOOV();
        if (r.q.nanos % 1000000000 != 0 || r.q.nanos > (__int128)INT64_MAX * 1000000000 ||
            r.q.nanos < (__int128)INT64_MIN * 1000000000)
            return verr(c, n->pos, "cannot convert value to integer", NULL);
        return vint((int64_t)(r.q.nanos / 1000000000));
    case F_ADD: case F_SUB: {
        if (r.t != V_QTY) NOOV();
        gs_quantity o;
        if (arg.t == V_QTY) o = arg.q;
        else if (arg.t == V_INT) o = gs_quantity_from_int(arg.i, r.q.fmt);
        else NOOV();
        const __int128 lim = (__int128)1 << 96;
        if (r.q.nanos > lim || r.q.nanos < -lim || o.nanos > lim || o.nanos < -lim)
            return verr(c, n->pos, "quantity overflow", NULL);
        val v = r;
        v.q = n->sub == F_ADD ? gs_quantity_add(r.q, o) : gs_quantity_sub(r.q, o);
        return v;
    }
    default:
        break;
    }
#undef NOOV
    return verr(c, n->pos, "internal: bad function", NULL);
}

static val eval(ctx *c, int32_t id)
{
    const node *n = &c->p->nodes[id];
    if (cost(c, 1))
        return vfatal(c, n->pos, GS_ERR_LIMIT, "cost limit exceeded");
    switch (n->op) {
    case N_BOOL: return vbool(n->i != 0);
    case N_INT: return vint(n->i);
    case N_STR: return vstr(c->p->pool + n->soff, n->slen);
    case N_DEVICE: { val v; memset(&v, 0, sizeof v); v.t = V_DEVICE; return v; }
    case N_LIST: {
        val v;
        memset(&v, 0, sizeof v);
        v.t = V_LIST;
        v.n = n->nargs;
        v.items = aalloc(c, (n->nargs + 1) * sizeof *v.items);
        if (!v.items) return vfatal(c, n->pos, GS_ERR_NOMEM, "out of memory");
        for (uint32_t k = 0; k < n->nargs; k++) {
            v.items[k] = eval(c, (int32_t)c->p->kids[n->args + k]);
            if (v.items[k].t == V_ERR) return v.items[k];
        }
        return v;
    }
    case N_SELECT: {
        val m = eval(c, n->a);
        if (m.t == V_ERR) return m;
        return lookup(c, &m, c->p->pool + n->soff, n->slen, n->pos);
    }
    case N_INDEX: {
        val m = eval(c, n->a);
        if (m.t == V_ERR) return m;
        val k = eval(c, n->b);
        if (k.t == V_ERR) return k;
        if (m.t == V_LIST) {
            if (k.t != V_INT) return no_overload(c, n->pos, "_[_]", &m, &k);
            if (k.i < 0 || (uint64_t)k.i >= m.n) {
                char buf[32];
                int64_t x = k.i;
                int o = 0;
                char tmp[24];
                bool neg = x < 0;
                uint64_t ux = neg ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
                do { tmp[o++] = (char)('0' + ux % 10); ux /= 10; } while (ux);
                int w = 0;
                if (neg) buf[w++] = '-';
                while (o) buf[w++] = tmp[--o];
                buf[w] = '\0';
                return verr(c, n->pos, "index out of bounds: ", buf);
            }
            return m.items[k.i];
        }
        if (m.t != V_MAP && m.t != V_DEVICE) return no_overload(c, n->pos, "_[_]", &m, &k);
        if (k.t != V_STR) return verr(c, n->pos, "unsupported key type: ", tname(&k));
        return lookup(c, &m, k.s, k.len, n->pos);
    }
    case N_HAS: {
        const node *sel = &c->p->nodes[n->a];
        val m = eval(c, sel->a);
        if (m.t == V_ERR) return m;
        const char *f = c->p->pool + sel->soff;
        if (m.t == V_DEVICE) return vbool(device_field(c, f, sel->slen, n->pos).t != V_ERR);
        if (m.t != V_MAP) return no_overload(c, n->pos, "has()", &m, NULL);
        val out;
        return vbool(map_get(c, &m, f, sel->slen, &out, n->pos) == 1);
    }
    case N_NOT: {
        val v = eval(c, n->a);
        if (v.t == V_ERR) return v;
        if (v.t != V_BOOL) return no_overload(c, n->pos, "!_", &v, NULL);
        return vbool(!v.b);
    }
    case N_NEG: {
        val v = eval(c, n->a);
        if (v.t == V_ERR) return v;
        if (v.t != V_INT) return no_overload(c, n->pos, "-_", &v, NULL);
        if (v.i == INT64_MIN) return verr(c, n->pos, "integer overflow", NULL);
        return vint(-v.i);
    }
    case N_BIN: return eval_bin(c, n);
    case N_CALL: return eval_call(c, n);
    case N_AND: case N_OR: {
        bool is_and = n->op == N_AND;
        val first_err;
        bool have_err = false;
        for (uint32_t k = 0; k < n->nargs; k++) {
            val v = eval(c, (int32_t)c->p->kids[n->args + k]);
            if (c->fatal) return v;
            if (v.t != V_ERR && v.t != V_BOOL)
                v = no_overload(c, c->p->nodes[c->p->kids[n->args + k]].pos, is_and ? "_&&_" : "_||_", &v, NULL);
            if (v.t == V_ERR) {
                if (!have_err) { first_err = v; have_err = true; }
                continue;
            }
            if (is_and && !v.b) return vbool(false);
            if (!is_and && v.b) return vbool(true);
        }
        if (have_err) return first_err;
        return vbool(is_and);
    }
    case N_COND: {
        val cnd = eval(c, n->a);
        if (cnd.t == V_ERR) return cnd;
        if (cnd.t != V_BOOL) return no_overload(c, n->pos, "_?_:_", &cnd, NULL);
        return eval(c, cnd.b ? n->b : n->c);
    }
    default:
        return verr(c, n->pos, "internal: bad node", NULL);
    }
}

static void sv_format(const val *v, char *buf, size_t cap)
{
    size_t n = v->len < cap - 1 ? v->len : cap - 1;
    memcpy(buf, v->s, n);
    buf[n] = '\0';
}

int gs_cel_eval(const gs_cel_program *prog, const gs_cel_device *dev, gs_cel_result *out,
                gs_error *err)
{
    if (!prog || !dev || !out)
        return gs_fail(err, GS_ERR_INVALID, "gs_cel_eval: missing program, device or result");
    ctx c = {.p = prog, .dev = dev};
    val v = eval(&c, prog->root);
    memset(out, 0, sizeof *out);
    out->cost = c.cost;
    int rc = 0;
    if (v.t == V_ERR) {
        int line, col;
        pos_to_linecol(prog->text, prog->len, v.pos, &line, &col);
        gs_code code = c.fatal ? c.fatal_code : GS_ERR_INVALID;
        gs_error_set(err, code, NULL, line, col, NULL, "%s", v.s ? v.s : "error");
        rc = -1;
    } else {
        switch (v.t) {
        case V_BOOL: out->type = GS_CEL_BOOL; out->b = v.b; break;
        case V_INT: out->type = GS_CEL_INT; out->i = v.i; break;
        case V_STR: {
            out->type = GS_CEL_STRING;
            size_t n = v.len < GS_CEL_STR_MAX - 1 ? v.len : GS_CEL_STR_MAX - 1;
            memcpy(out->str, v.s, n);
            out->str[n] = '\0';
            out->truncated = n < v.len;
            break;
        }
        case V_QTY: out->type = GS_CEL_QUANTITY; out->q = v.q; break;
        case V_SEMVER: out->type = GS_CEL_SEMVER; sv_format(&v, out->str, sizeof out->str); break;
        case V_LIST: out->type = GS_CEL_LIST; out->i = (int64_t)v.n; break;
        case V_MAP: out->type = GS_CEL_MAP; out->i = (int64_t)map_size(&c, &v); break;
        default: out->type = GS_CEL_MAP; out->i = 4; break; /* device: a map of 4 fields */
        }
    }
    while (c.arena) {
        chunk *nx = c.arena->next;
        free(c.arena);
        c.arena = nx;
    }
    return rc;
}

int gs_cel_select(const gs_cel_program *prog, const gs_cel_device *dev, bool *match,
                  gs_error *err)
{
    gs_cel_result r;
    *match = false;
    if (gs_cel_eval(prog, dev, &r, err) != 0)
        return -1;
    if (r.type != GS_CEL_BOOL)
        return gs_error_set(err, GS_ERR_INVALID, NULL, 1, 1, NULL,
                            "selector must evaluate to bool, not %s",
                            r.type == GS_CEL_INT ? "int" : r.type == GS_CEL_STRING ? "string"
                            : r.type == GS_CEL_QUANTITY ? "quantity" : r.type == GS_CEL_SEMVER ? "semver"
                            : r.type == GS_CEL_LIST ? "list" : "map");
    *match = r.b;
    return 0;
}
