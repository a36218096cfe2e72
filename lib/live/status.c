/*
 * status.c - the API server's answers as data: a Status body into a gs_error, a list
 * page's metadata (continue token, resourceVersion), page collection. Pure functions,
 * tested on canned JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/live.h"
#include "util/json_int.h"

static gs_code code_for(int http)
{
    if (http == 404)
        return GS_ERR_NOTFOUND;
    if (http == 429 || http >= 500 || http <= 0)
        return GS_ERR_IO;
    return GS_ERR_INVALID;
}

int gs_live_status_error(int http, const char *body, size_t len, const char *what,
                         gs_live_status *st, gs_error *err)
{
    gs_live_status tmp;
    if (!st)
        st = &tmp;
    memset(st, 0, sizeof *st);
    st->code = http;
    st->retry_after = -1;
    if (!what)
        what = "request";
    gs_arena a;
    gs_arena_init(&a, 4096);
    gs_jv root;
    gs_json_limits lim = {.max_depth = 16, .max_string = 64u << 10};
    const gs_jv *kind = NULL, *msg = NULL;
    bool is_status = false;
    if (body && len && gs_json_parse("status", 1, body, len, &lim, &a, &root, NULL) == 0 &&
        root.t == GS_JOBJ && (kind = gs_json_get(&root, "kind")) && kind->t == GS_JSTR &&
        !strcmp(kind->s, "Status")) {
        is_status = true;
        const gs_jv *reason = gs_json_get(&root, "reason"), *code = gs_json_get(&root, "code");
        const gs_jv *details = gs_json_get(&root, "details");
        const gs_jv *ra = gs_json_get(details, "retryAfterSeconds");
        msg = gs_json_get(&root, "message");
        if (reason && reason->t == GS_JSTR)
            snprintf(st->reason, sizeof st->reason, "%s", reason->s);
        int64_t v;
        if (code && code->t == GS_JNUM && !gs_parse_i64(code->s, code->n, &v) && v >= 100 && v < 600)
            st->code = (int)v;
        if (ra && ra->t == GS_JNUM && !gs_parse_i64(ra->s, ra->n, &v) && v >= 0 && v < 86400)
            st->retry_after = (int)v;
    }
    gs_code gc = code_for(http);
    if (msg && msg->t == GS_JSTR && msg->n) {
        gs_fail(err, gc, "%s", msg->s);
    } else if (is_status) {
        gs_fail(err, gc, "%s: HTTP %d%s%s", what, http, st->reason[0] ? " " : "", st->reason);
    } else {
        /* not a Status: the first line of the body, bounded */
        size_t n = 0;
        while (body && n < len && n < 200 && body[n] != '\n' && body[n] != '\r')
            n++;
        gs_strbuf sb = GS_STRBUF_INIT;
        if (n)
            gs_strbuf_textn(&sb, body, n);
        gs_fail(err, gc, "%s: HTTP %d%s%s", what, http, n ? ": " : "", gs_strbuf_cstr(&sb));
        gs_strbuf_free(&sb);
    }
    gs_arena_free(&a);
    return -1;
}

int gs_live_page_parse(const char *page, size_t len, gs_arena *a, gs_live_page_info *out,
                       gs_error *err)
{
    memset(out, 0, sizeof *out);
    out->remaining = -1;
    gs_arena tmp;
    gs_arena_init(&tmp, 0);
    gs_jv root;
    int rc = -1;
    gs_json_limits lim = {.max_depth = 128};
    if (gs_json_parse("list page", 1, page, len, &lim, &tmp, &root, err))
        goto out;
    const gs_jv *items = gs_json_get(&root, "items"), *md = gs_json_get(&root, "metadata");
    if (root.t != GS_JOBJ || !items || (items->t != GS_JARR && items->t != GS_JNULL)) {
        gs_error_set(err, GS_ERR_INVALID, "list page", 1, 1, NULL, "the answer is not a List (no items array)");
        goto out;
    }
    out->items = items->t == GS_JARR ? items->n : 0;
    const gs_jv *c = gs_json_get(md, "continue"), *rv = gs_json_get(md, "resourceVersion"),
                *rem = gs_json_get(md, "remainingItemCount");
    if (c && c->t == GS_JSTR && c->n && !(out->continue_token = gs_arena_strdup(a, c->s)))
        goto oom;
    if (rv && rv->t == GS_JSTR && !(out->resource_version = gs_arena_strdup(a, rv->s)))
        goto oom;
    int64_t v;
    if (rem && rem->t == GS_JNUM && !gs_parse_i64(rem->s, rem->n, &v) && v >= 0)
        out->remaining = v;
    rc = 0;
    goto out;
oom:
    gs_fail(err, GS_ERR_NOMEM, "out of memory");
out:
    gs_arena_free(&tmp);
    return rc;
}

int gs_live_pages_add(void *pages, const char *page, size_t len, unsigned index, gs_error *err)
{
    gs_live_pages *p = pages;
    if (index == 0) { /* a (re)start: earlier pages are void */
        for (size_t i = 0; i < p->page.n; i++)
            free(p->page.v[i]);
        p->page.n = p->len.n = 0;
    }
    char *copy = malloc(len + 1);
    if (!copy || gs_vec_push(p->page, copy) || gs_vec_push(p->len, len)) {
        if (copy && p->page.n && p->page.v[p->page.n - 1] == copy)
            p->page.n--;
        free(copy);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    memcpy(copy, page, len);
    copy[len] = '\0';
    return 0;
}

void gs_live_pages_free(gs_live_pages *p)
{
    for (size_t i = 0; i < p->page.n; i++)
        free(p->page.v[i]);
    gs_vec_free(p->page);
    gs_vec_free(p->len);
}
