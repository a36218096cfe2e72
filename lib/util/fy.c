/* fy.c - shared libfyaml set-up (fy_int.h). */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "util/fy_int.h"

static void discard(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    (void)diag;
    (void)user;
    (void)buf;
    (void)len;
}

struct fy_diag *gs__fy_quiet_diag(void)
{
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = discard;
    dcfg.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (diag)
        fy_diag_set_collect_errors(diag, true);
    return diag;
}

struct fy_diag_error *gs__fy_first_error(struct fy_diag *diag)
{
    void *it = NULL;
    struct fy_diag_error *de, *first = NULL;
    while ((de = fy_diag_errors_iterate(diag, &it)) != NULL)
        if (!first || (first->type < FYET_ERROR && de->type >= FYET_ERROR))
            first = de;
    return first;
}

/* Text of a single-quoted scalar from its raw source (between the quotes).
 *
 * libfyaml 0.7.12 gets consecutive '' escapes wrong ('a''''b' reads as "a'''" instead
 * of "a''b") and leaks memory on long runs of them, so these scalars are decoded here:
 * YAML flow folding first (the first line loses trailing blanks, inner lines both,
 * the last line leading blanks; a single line break becomes a space, each empty line
 * a newline), then '' -> '. Output is never longer than the input. */
static const char *single_quoted_text(gs_arena *a, const char *raw, size_t n, size_t *len_out)
{
    char *out = gs_arena_alloc(a, n + 1);
    if (!out)
        return NULL;
    size_t o = 0, pos = 0, empty_lines = 0;
    bool first = true;
    while (pos <= n) {
        const char *nl = memchr(raw + pos, '\n', n - pos);
        size_t end = nl ? (size_t)(nl - raw) : n;
        bool last = nl == NULL;
        size_t b = pos, e = end;
        if (e > b && raw[e - 1] == '\r')
            e--;
        if (!first)
            while (b < e && (raw[b] == ' ' || raw[b] == '\t'))
                b++;
        if (!last)
            while (e > b && (raw[e - 1] == ' ' || raw[e - 1] == '\t'))
                e--;
        if (first) {
            first = false;
        } else if (b == e && !last) {
            empty_lines++;
            pos = end + 1;
            continue;
        } else if (empty_lines) {
            for (; empty_lines; empty_lines--)
                out[o++] = '\n';
        } else {
            out[o++] = ' ';
        }
        for (size_t i = b; i < e; i++) {
            out[o++] = raw[i];
            if (raw[i] == '\'' && i + 1 < e && raw[i + 1] == '\'')
                i++;
        }
        pos = end + 1;
    }
    out[o] = '\0';
    *len_out = o;
    return out;
}

const char *gs__fy_scalar_text(struct fy_token *tok, const char *input, size_t n, gs_arena *a,
                               size_t *len_out, bool *in_arena)
{
    *in_arena = false;
    const struct fy_mark *sm = fy_token_start_mark(tok);
    const struct fy_mark *em = fy_token_end_mark(tok);
    if (fy_token_scalar_style(tok) == FYSS_SINGLE_QUOTED && input && sm && em &&
        sm->input_pos <= em->input_pos && em->input_pos <= n) {
        *in_arena = true;
        return single_quoted_text(a, input + sm->input_pos, em->input_pos - sm->input_pos,
                                  len_out);
    }
    if (fy_token_scalar_style(tok) == FYSS_DOUBLE_QUOTED) {
        /* libfyaml 0.7.12 leaks 512 bytes in fy_token_get_text for a double-quoted scalar
         * with CR LF line breaks ("\"s\r\n\n\r\n\""; found by fuzz_devplugin_config), and
         * its fy_token_iter_read writes every chunk at the buffer's start: the text's length
         * and the iterator's chunks neither leak nor misplace, so it is copied from them */
        size_t len = fy_token_get_text_length(tok);
        char *out = gs_arena_alloc(a, len + 1);
        struct fy_token_iter *it = out ? fy_token_iter_create(tok) : NULL;
        if (!it)
            return NULL;
        size_t got = 0;
        const struct fy_iter_chunk *ic = NULL;
        int ierr = 0;
        while ((ic = fy_token_iter_chunk_next(it, ic, &ierr)) != NULL && got + ic->len <= len) {
            memcpy(out + got, ic->str, ic->len);
            got += ic->len;
        }
        fy_token_iter_destroy(it);
        out[got] = '\0';
        *in_arena = true;
        *len_out = got;
        return out;
    }
    return fy_token_get_text(tok, len_out);
}
