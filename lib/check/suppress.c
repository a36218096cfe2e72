/*
 * suppress.c - the suppression annotation.
 *
 *   metadata:
 *     annotations:
 *       gpusched.io/suppress: "GS001,gpu-node-missing-labels: pool being drained; GS019: ours"
 *
 * The value is a list of entries separated by ';' or newlines. An entry is a comma list
 * of rule ids or names, a colon, and the reason (required, shown in every report); a ';'
 * or newline that is not followed by a rule id or name belongs to the reason. An
 * entry without a reason or naming an unknown rule suppresses nothing and is itself a
 * finding (GS026 suppression-invalid), so a suppression can never be silent.
 */
#include <stdio.h>
#include <string.h>

#include "check/check_int.h"

#define SUPPRESS_MAX_ENTRIES 64
#define SUPPRESS_SHOWN 60 /* bytes of a bad entry quoted in the message */

static bool is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; }

static void trim(const char **b, const char **e)
{
    while (*b < *e && is_blank(**b))
        (*b)++;
    while (*e > *b && is_blank((*e)[-1]))
        (*e)--;
}

/* Append `before` "<s, quoted and shortened>" `after` to the problem list. */
static void add_problem(gs_strbuf *sb, const char *before, const char *s, size_t n, const char *after)
{
    if (sb->len)
        gs_strbuf_puts(sb, "; ");
    char shown[SUPPRESS_SHOWN + 4];
    size_t k = n < SUPPRESS_SHOWN ? n : SUPPRESS_SHOWN;
    for (size_t i = 0; i < k; i++)
        shown[i] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
    if (n > k) {
        memcpy(shown + k, "...", 3);
        k += 3;
    }
    shown[k] = '\0';
    gs_strbuf_printf(sb, "%s\"%s\"%s", before, shown, after);
}

/* "GS" and digits: a rule id, known or not */
static bool looks_like_id(const char *s, size_t n)
{
    if (n < 3 || (s[0] | 0x20) != 'g' || (s[1] | 0x20) != 's')
        return false;
    for (size_t i = 2; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* Does s (after blanks) begin with a rule name, or anything shaped like a rule id, that
 * ends at ',', ':', a blank or the end? Only then does a ';' or newline before it start
 * a new entry, so reasons may contain either. */
static bool starts_entry(const char *s)
{
    while (is_blank(*s))
        s++;
    size_t n = strcspn(s, ",:; \t\r\n");
    if (n == 0 || n >= 64)
        return false;
    if (looks_like_id(s, n))
        return true;
    char id[64];
    memcpy(id, s, n);
    id[n] = '\0';
    return gs_rule_find(id) != NULL;
}

int ck_parse_suppress(gs_arena *a, const char *value, ck_suppress **out, uint32_t *nout,
                      const char **problems)
{
    *out = NULL;
    *nout = 0;
    *problems = NULL;
    ck_suppress entries[SUPPRESS_MAX_ENTRIES];
    uint32_t n = 0;
    gs_strbuf bad = GS_STRBUF_INIT;
    uint32_t nrules;
    const gs_rule_info *rules = gs_rules(&nrules);

    const char *p = value;
    while (*p) {
        const char *b = p, *e = p;
        while (*e && !((*e == ';' || *e == '\n') && starts_entry(e + 1)))
            e++;
        p = *e ? e + 1 : e;
        trim(&b, &e);
        if (b == e)
            continue;
        const char *colon = memchr(b, ':', (size_t)(e - b));
        const char *rb = colon ? colon + 1 : e, *re = e;
        trim(&rb, &re);
        if (!colon || rb == re) {
            add_problem(&bad, "entry ", b, (size_t)(e - b), " has no reason (write \"<rule>: <why>\")");
            continue;
        }
        uint64_t mask = 0;
        bool ok = true;
        const char *ib = b;
        while (ib < colon) {
            const char *ie = ib;
            while (ie < colon && *ie != ',')
                ie++;
            const char *tb = ib, *te = ie;
            ib = ie < colon ? ie + 1 : ie;
            trim(&tb, &te);
            if (tb == te)
                continue;
            char id[64];
            size_t len = (size_t)(te - tb);
            const gs_rule_info *ri = NULL;
            if (len < sizeof id) {
                memcpy(id, tb, len);
                id[len] = '\0';
                ri = gs_rule_find(id);
            }
            if (!ri) {
                add_problem(&bad, "unknown rule ", tb, len, "");
                ok = false;
                continue;
            }
            mask |= (uint64_t)1 << (ri - rules);
        }
        if (!mask) {
            if (ok)
                add_problem(&bad, "entry ", b, (size_t)(e - b), " names no rule");
            continue;
        }
        if (n >= SUPPRESS_MAX_ENTRIES) {
            add_problem(&bad, "more than 64 entries: ", b, (size_t)(e - b), " and later ones ignored");
            break;
        }
        const char *reason = gs_arena_strndup(a, rb, (size_t)(re - rb));
        if (!reason) {
            gs_strbuf_free(&bad);
            return -1;
        }
        entries[n].rules = mask;
        entries[n].reason = reason;
        n++;
    }
    if (bad.oom) {
        gs_strbuf_free(&bad);
        return -1;
    }
    if (bad.len) {
        *problems = gs_arena_strdup(a, bad.buf);
        gs_strbuf_free(&bad);
        if (!*problems)
            return -1;
    }
    if (n) {
        *out = gs_arena_memdup(a, entries, n * sizeof *entries);
        if (!*out)
            return -1;
        *nout = n;
    }
    return 0;
}
