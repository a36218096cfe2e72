/*
 * output.c - the CLI's JSON/YAML document emitter, aligned text tables and the shared
 * emitters of engine records (contracts in output.h).
 *
 * How the emitter lays out YAML without looking ahead: every container is a frame that
 * remembers how it was opened (at the root, after "key:", or after "- ") and the column
 * of its children. Nothing is written when a container begins; its first child decides:
 *   after "key:"  the child starts on a new line at the frame's column;
 *   after "- "    the child is written inline, on the dash's line ("- name: x");
 *   at the root   the child starts at column 0.
 * Later children always start a new line at the frame's column. A container that ends
 * with no children prints "{}" or "[]" where its first child would have gone. Sequences
 * under a key sit at the key's column (kubectl's style); mappings under a key and
 * anything inside a sequence item are indented by two.
 * JSON uses the same frames with the depth as indentation: the comma and newline go
 * before each child, so an empty container is simply "{}" / "[]".
 */
#include "output.h"
#include "args.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { OPEN_ROOT = 0, OPEN_KEY, OPEN_DASH };

#define CLI_NO_MIG 0xffff /* gs_gpu_assign.mig entry of a non-MIG device */

static void pad(gs_strbuf *sb, int n)
{
    static const char spaces[] = "                                                                ";
    while (n > 0) {
        int k = n < (int)sizeof spaces - 1 ? n : (int)sizeof spaces - 1;
        gs_strbuf_add(sb, spaces, (size_t)k);
        n -= k;
    }
}

void cli_emit_init(cli_emit *e, gs_strbuf *sb, cli_format fmt)
{
    memset(e, 0, sizeof *e);
    e->sb = sb;
    e->fmt = fmt == CLI_FORMAT_YAML ? CLI_FORMAT_YAML : CLI_FORMAT_JSON;
}

static cli_emit_frame *top(cli_emit *e) { return e->depth ? &e->stack[e->depth - 1] : NULL; }

/* YAML: position the cursor where the next child of f starts. */
static void yaml_child_start(cli_emit *e, cli_emit_frame *f)
{
    if (f->n == 0) {
        if (f->opened == OPEN_KEY) {
            gs_strbuf_putc(e->sb, '\n');
            pad(e->sb, f->indent);
        } else if (f->opened == OPEN_ROOT) {
            pad(e->sb, f->indent);
        } /* OPEN_DASH: inline after "- " */
    } else {
        pad(e->sb, f->indent);
    }
    f->n++;
}

/* Write whatever precedes a value (scalar or container) at the current position.
 * Returns false on misuse. */
static bool value_prefix(cli_emit *e)
{
    cli_emit_frame *f = top(e);
    if (!f) {
        if (e->root_done) {
            e->misuse = true; /* a second root value */
            return false;
        }
        e->root_done = true;
        return true;
    }
    if (!f->is_array) {
        if (!e->have_key) {
            e->misuse = true;
            return false;
        }
        e->have_key = false;
        if (e->fmt == CLI_FORMAT_YAML)
            gs_strbuf_putc(e->sb, ' ');
        return true;
    }
    if (e->fmt == CLI_FORMAT_JSON) {
        if (f->n)
            gs_strbuf_putc(e->sb, ',');
        gs_strbuf_putc(e->sb, '\n');
        pad(e->sb, e->depth * 2);
        f->n++;
    } else {
        yaml_child_start(e, f);
        gs_strbuf_add(e->sb, "- ", 2);
    }
    return true;
}

static void value_suffix(cli_emit *e)
{
    if (e->fmt == CLI_FORMAT_YAML)
        gs_strbuf_putc(e->sb, '\n');
}

/* ---------------------------------------------------------------- YAML strings */
static bool yaml_reserved(const char *s, size_t n)
{
    static const char *const words[] = {"null", "~", "true", "false", "yes", "no", "on",
                                        "off", "y", "n", "<<", "=", NULL};
    for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == n && strncasecmp(s, words[i], n) == 0)
            return true;
    return false;
}

/* Would this string, written plain, be read back as something else (number, bool, null),
 * start a YAML construct, or be cut by a comment or mapping indicator? Over-quoting is
 * harmless, under-quoting corrupts, so the test errs on the quoting side: every string
 * starting with a digit, sign or dot is quoted. */
static bool yaml_needs_quotes(const char *s, size_t n)
{
    if (n == 0)
        return true;
    unsigned char c0 = (unsigned char)s[0];
    if (strchr("-?:,[]{}#&*!|>'\"%@`~+. \t", c0) || isdigit(c0))
        return true;
    if (s[n - 1] == ' ' || s[n - 1] == ':')
        return true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return true;
        uint32_t cp;
        size_t len = c < 0x80 ? 1 : gs_utf8_seq(s + i, n - i, &cp);
        if (!len || (len > 1 && (gs_text_hidden(cp) || cp == 0xfeff || cp == 0xfffe || cp == 0xffff)))
            return true;
        i += len - 1;
        if (c == ':' && i + 1 < n && s[i + 1] == ' ')
            return true;
        if (c == '#' && i > 0 && s[i - 1] == ' ')
            return true;
        if (c == '[' && i > 1 && s[i - 1] == '#' && s[i - 2] == '#')
            return true; /* "##[": written as ##\x5b */
    }
    return yaml_reserved(s, n);
}

static void yaml_str(gs_strbuf *sb, const char *s, size_t n)
{
    if (!yaml_needs_quotes(s, n)) {
        gs_strbuf_add(sb, s, n);
        return;
    }
    gs_strbuf_putc(sb, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && (c != '[' || i < 2 || s[i - 1] != '#' || s[i - 2] != '#'))
            continue;
        uint32_t cp = c;
        size_t len = c < 0x80 ? 1 : gs_utf8_seq(s + i, n - i, &cp);
        if (len > 1 && !gs_text_hidden(cp) && cp != 0xfeff && cp != 0xfffe && cp != 0xffff) {
            i += len - 1;
            continue;
        }
        gs_strbuf_add(sb, s + run, i - run);
        if (len != 1) {
            /* YAML text must be printable Unicode: C1 controls as \xNN, line separators as
             * \L \P, the rest as \uNNNN, a byte that starts no UTF-8 sequence as U+FFFD */
            if (!len)
                gs_strbuf_add(sb, "\\ufffd", 6);
            else if (cp <= 0x9f)
                gs_strbuf_printf(sb, "\\x%02x", (unsigned)cp);
            else if (cp == 0x2028 || cp == 0x2029)
                gs_strbuf_add(sb, cp == 0x2028 ? "\\L" : "\\P", 2);
            else
                gs_strbuf_printf(sb, "\\u%04x", (unsigned)cp);
            i += len ? len - 1 : 0;
            run = i + 1;
            continue;
        }
        switch (c) {
        case '"': gs_strbuf_add(sb, "\\\"", 2); break;
        case '\\': gs_strbuf_add(sb, "\\\\", 2); break;
        case '\n': gs_strbuf_add(sb, "\\n", 2); break;
        case '\t': gs_strbuf_add(sb, "\\t", 2); break;
        case '\r': gs_strbuf_add(sb, "\\r", 2); break;
        default: gs_strbuf_printf(sb, "\\x%02x", c); break; /* controls, DEL, the '[' of "##[" */
        }
        run = i + 1;
    }
    gs_strbuf_add(sb, s + run, n - run);
    gs_strbuf_putc(sb, '"');
}

/* ---------------------------------------------------------------- containers */
static void begin(cli_emit *e, bool is_array)
{
    if (e->misuse)
        return;
    if (e->depth >= CLI_EMIT_MAX_DEPTH) {
        e->misuse = true;
        return;
    }
    cli_emit_frame *parent = top(e);
    cli_emit_frame f = {is_array, OPEN_ROOT, 0, 0};
    if (e->fmt == CLI_FORMAT_JSON) {
        if (!value_prefix(e))
            return;
        gs_strbuf_putc(e->sb, is_array ? '[' : '{');
    } else if (!parent) {
        if (e->root_done) {
            e->misuse = true;
            return;
        }
        e->root_done = true;
        f.opened = OPEN_ROOT;
        f.indent = 0;
    } else if (!parent->is_array) {
        if (!e->have_key) {
            e->misuse = true;
            return;
        }
        e->have_key = false;
        f.opened = OPEN_KEY;
        f.indent = is_array ? parent->indent : parent->indent + 2;
    } else {
        yaml_child_start(e, parent);
        gs_strbuf_add(e->sb, "- ", 2);
        f.opened = OPEN_DASH;
        f.indent = parent->indent + 2;
    }
    e->stack[e->depth++] = f;
}

static void end(cli_emit *e, bool is_array)
{
    if (e->misuse)
        return;
    cli_emit_frame *f = top(e);
    if (!f || f->is_array != is_array || e->have_key) {
        e->misuse = true;
        return;
    }
    cli_emit_frame done = *f;
    e->depth--;
    if (e->fmt == CLI_FORMAT_JSON) {
        if (done.n) {
            gs_strbuf_putc(e->sb, '\n');
            pad(e->sb, e->depth * 2);
        }
        gs_strbuf_putc(e->sb, is_array ? ']' : '}');
        return;
    }
    if (done.n == 0) {
        if (done.opened == OPEN_KEY)
            gs_strbuf_putc(e->sb, ' ');
        gs_strbuf_puts(e->sb, is_array ? "[]\n" : "{}\n");
    }
}

void cli_emit_begin_object(cli_emit *e) { begin(e, false); }
void cli_emit_end_object(cli_emit *e) { end(e, false); }
void cli_emit_begin_array(cli_emit *e) { begin(e, true); }
void cli_emit_end_array(cli_emit *e) { end(e, true); }

void cli_emit_key(cli_emit *e, const char *key)
{
    if (e->misuse)
        return;
    cli_emit_frame *f = top(e);
    if (!f || f->is_array || e->have_key) {
        e->misuse = true;
        return;
    }
    if (e->fmt == CLI_FORMAT_JSON) {
        if (f->n)
            gs_strbuf_putc(e->sb, ',');
        gs_strbuf_putc(e->sb, '\n');
        pad(e->sb, e->depth * 2);
        gs_strbuf_json_str(e->sb, key);
        gs_strbuf_add(e->sb, ": ", 2);
        f->n++;
    } else {
        yaml_child_start(e, f);
        yaml_str(e->sb, key, strlen(key));
        gs_strbuf_putc(e->sb, ':');
    }
    e->have_key = true;
}

/* ---------------------------------------------------------------- scalars */
static void raw_value(cli_emit *e, const char *token)
{
    if (e->misuse || !value_prefix(e))
        return;
    gs_strbuf_puts(e->sb, token);
    value_suffix(e);
}

void cli_emit_strn(cli_emit *e, const char *s, size_t n)
{
    if (e->misuse || !value_prefix(e))
        return;
    if (e->fmt == CLI_FORMAT_JSON)
        gs_strbuf_json_strn(e->sb, s, n);
    else
        yaml_str(e->sb, s, n);
    value_suffix(e);
}

void cli_emit_str(cli_emit *e, const char *s)
{
    if (!s)
        raw_value(e, "null");
    else
        cli_emit_strn(e, s, strlen(s));
}

void cli_emit_int(cli_emit *e, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    raw_value(e, buf);
}

void cli_emit_uint(cli_emit *e, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    raw_value(e, buf);
}

void cli_emit_double(cli_emit *e, double v, int decimals)
{
    if (!isfinite(v)) {
        raw_value(e, "null");
        return;
    }
    if (decimals < 0)
        decimals = 0;
    if (decimals > 9)
        decimals = 9;
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf);
        while (end > dot + 1 && end[-1] == '0')
            *--end = '\0';
        if (end == dot + 1)
            *dot = '\0';
    }
    raw_value(e, strcmp(buf, "-0") == 0 ? "0" : buf);
}

void cli_emit_bool(cli_emit *e, bool v) { raw_value(e, v ? "true" : "false"); }
void cli_emit_null(cli_emit *e) { raw_value(e, "null"); }

void cli_emit_kv_str(cli_emit *e, const char *key, const char *s)
{
    cli_emit_key(e, key);
    cli_emit_str(e, s);
}

void cli_emit_kv_int(cli_emit *e, const char *key, int64_t v)
{
    cli_emit_key(e, key);
    cli_emit_int(e, v);
}

void cli_emit_kv_bool(cli_emit *e, const char *key, bool v)
{
    cli_emit_key(e, key);
    cli_emit_bool(e, v);
}

int cli_emit_finish(cli_emit *e)
{
    if (e->misuse || e->depth != 0 || e->have_key)
        return -1;
    if (e->fmt == CLI_FORMAT_JSON)
        gs_strbuf_putc(e->sb, '\n');
    return 0;
}

/* ---------------------------------------------------------------- text table */
void cli_table_init(cli_table *t, uint32_t ncols)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols < 1 ? 1 : ncols > CLI_TABLE_MAX_COLS ? CLI_TABLE_MAX_COLS : ncols;
    gs_arena_init(&t->arena, 0);
}

void cli_table_cell(cli_table *t, const char *fmt, ...)
{
    /* a cell is one line: names and values in it are escaped (gs_strbuf_textf) */
    gs_strbuf sb = GS_STRBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    gs_strbuf_vtextf(&sb, fmt, ap);
    va_end(ap);
    char *cell = sb.oom ? NULL : gs_arena_strndup(&t->arena, gs_strbuf_cstr(&sb), sb.len);
    gs_strbuf_free(&sb);
    if (!cell || gs_vec_push(t->cells, (const char *)cell))
        t->oom = true;
}

void cli_table_render(const cli_table *t, gs_strbuf *sb, const char *indent)
{
    size_t width[CLI_TABLE_MAX_COLS] = {0};
    for (size_t i = 0; i < t->cells.n; i++) {
        size_t len = strlen(t->cells.v[i]);
        size_t col = i % t->ncols;
        if (len > width[col])
            width[col] = len;
    }
    for (size_t row = 0; row * t->ncols < t->cells.n; row++) {
        size_t line_start = sb->len;
        gs_strbuf_puts(sb, indent);
        for (size_t col = 0; col < t->ncols; col++) {
            size_t i = row * t->ncols + col;
            if (i >= t->cells.n)
                break;
            size_t len = strlen(t->cells.v[i]);
            gs_strbuf_add(sb, t->cells.v[i], len);
            if (col + 1 < t->ncols)
                pad(sb, (int)(width[col] - len + 2));
        }
        /* no trailing blanks when the last cells are empty */
        while (!sb->oom && sb->len > line_start && sb->buf[sb->len - 1] == ' ')
            sb->buf[--sb->len] = '\0';
        gs_strbuf_putc(sb, '\n');
    }
}

void cli_table_free(cli_table *t)
{
    gs_vec_free(t->cells);
    gs_arena_free(&t->arena);
}

/* ---------------------------------------------------------------- engine records */
const char *cli_gpu_kind_name(gs_gpu_kind kind)
{
    switch (kind) {
    case GS_GPU_WHOLE: return "whole";
    case GS_GPU_SHARE: return "share";
    case GS_GPU_MIG: return "mig";
    case GS_GPU_NONE: break;
    }
    return "none";
}

void cli_emit_gpu_request(cli_emit *e, const gs_gpu_request *r)
{
    bool share = r->kind == GS_GPU_SHARE;
    cli_emit_begin_object(e);
    cli_emit_kv_str(e, "kind", cli_gpu_kind_name(r->kind));
    cli_emit_kv_int(e, "count", r->kind == GS_GPU_NONE ? 0 : r->count);
    cli_emit_key(e, "milli");
    if (share)
        cli_emit_int(e, r->milli);
    else
        cli_emit_null(e);
    cli_emit_key(e, "memoryMiB");
    if (share)
        cli_emit_int(e, r->mem_mib);
    else
        cli_emit_null(e);
    cli_emit_key(e, "migProfile");
    cli_emit_str(e, r->kind == GS_GPU_MIG ? r->mig_profile : NULL);
    cli_emit_key(e, "models");
    cli_emit_begin_array(e);
    for (uint32_t i = 0; i < r->nmodels && i < GS_GPU_MAX_MODELS; i++)
        if (r->models[i])
            cli_emit_strn(e, r->models[i], gs_gpu_model_len(r->models[i]));
    cli_emit_end_array(e);
    cli_emit_end_object(e);
}

void cli_emit_devices(cli_emit *e, const gs_node_gpus *g, const gs_gpu_assign *a)
{
    cli_emit_begin_array(e);
    for (uint32_t i = 0; a && i < a->n && i < GS_GPU_ASSIGN_MAX; i++) {
        cli_emit_begin_object(e);
        cli_emit_kv_int(e, "gpu", a->dev[i]);
        if (a->mig[i] == CLI_NO_MIG) {
            cli_emit_kv_int(e, "milli", a->milli[i]);
            cli_emit_kv_int(e, "memoryMiB", a->mem[i]);
            cli_emit_kv_str(e, "mig", NULL);
            cli_emit_key(e, "migStart");
            cli_emit_null(e);
        } else {
            const gs_mig_profile *p = NULL;
            if (g && g->mig_model && a->mig[i] < g->nmig &&
                g->mig[a->mig[i]].profile < g->mig_model->nprofiles)
                p = &g->mig_model->profiles[g->mig[a->mig[i]].profile];
            cli_emit_key(e, "milli");
            cli_emit_null(e);
            cli_emit_key(e, "memoryMiB");
            if (p && p->mem_mib)
                cli_emit_int(e, p->mem_mib);
            else
                cli_emit_null(e);
            cli_emit_kv_str(e, "mig", p ? p->name : NULL);
            cli_emit_key(e, "migStart");
            if (g && a->mig[i] < g->nmig)
                cli_emit_int(e, g->mig[a->mig[i]].start);
            else
                cli_emit_null(e);
        }
        cli_emit_end_object(e);
    }
    cli_emit_end_array(e);
}

int cli_parse_format(const char *value, cli_format *f, gs_error *err)
{
    static const char *const formats[] = {"text", "json", "yaml", NULL};
    int i = cli_parse_choice("--output", value, formats, err);
    if (i < 0)
        return -1;
    *f = i == 0 ? CLI_FORMAT_TEXT : i == 1 ? CLI_FORMAT_JSON : CLI_FORMAT_YAML;
    return 0;
}
