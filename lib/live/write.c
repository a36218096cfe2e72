/*
 * write.c - the write requests of lib/live: paths, create, replace, the patch kinds,
 * server-side apply, delete, pods/binding, MicroTime. The caller gives bodies; this file
 * gives the method, path, content type, query parameters and client-side refusals. The
 * recorder is in write_event.c, leader election in write_lease.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpusched/live_write.h"
#include "live/write_int.h"

/* ---------------------------------------------------------------- clock, sending */

static int64_t sys_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t gs_lw_now(const gs_live_clock *c)
{
    return c && c->now_us ? c->now_us(c->ctx) : sys_clock(CLOCK_REALTIME);
}

int64_t gs_lw_mono(const gs_live_clock *c)
{
    return c && c->mono_us ? c->mono_us(c->ctx) : sys_clock(CLOCK_MONOTONIC);
}

void gs_lw_sleep(const gs_live_clock *c, int64_t us)
{
    if (us <= 0)
        return;
    if (c && c->sleep_us) {
        c->sleep_us(c->ctx, us);
        return;
    }
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

int gs_lw_send(gs_live_send_fn fn, void *ctx, gs_live_client *client, const gs_live_request *rq,
               gs_live_response *rs, gs_error *err)
{
    if (fn)
        return fn(ctx, rq, rs, err);
    if (!client)
        return gs_fail(err, GS_ERR_INTERNAL, "no client to send %s %s", rq->method ? rq->method : "GET",
                       rq->path);
    return gs_live_do(client, rq, rs, err);
}

void gs_lw_member(gs_strbuf *out, const char *key, const char *s, bool first)
{
    if (!s)
        return;
    if (!first)
        gs_strbuf_putc(out, ',');
    gs_strbuf_json_str(out, key);
    gs_strbuf_putc(out, ':');
    gs_strbuf_json_str(out, s);
}

/* ---------------------------------------------------------------- paths */

static int check_segment(const char *what, const char *s, gs_error *err)
{
    gs_strbuf q = GS_STRBUF_INIT;
    const char *why = NULL;
    if (!*s)
        why = "may not be empty";
    else if (!strcmp(s, ".") || !strcmp(s, ".."))
        why = !strcmp(s, ".") ? "may not be '.'" : "may not be '..'";
    else if (strchr(s, '/'))
        why = "may not contain '/'";
    else if (strchr(s, '%'))
        why = "may not contain '%'";
    if (!why)
        return 0;
    gs_strbuf_json_str(&q, s);
    gs_fail(err, GS_ERR_INVALID, "invalid %s %s: %s", what, gs_strbuf_cstr(&q), why);
    gs_strbuf_free(&q);
    return -1;
}

/* Percent-encode what is not unreserved (RFC 3986) or one of ':' '@'. */
static void put_segment(gs_strbuf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == ':' || ch == '@') {
            gs_strbuf_putc(out, (char)ch);
        } else {
            gs_strbuf_putc(out, '%');
            gs_strbuf_putc(out, hex[ch >> 4]);
            gs_strbuf_putc(out, hex[ch & 15]);
        }
    }
}

/* API group, version, resource and subresource names: lowercase DNS characters. */
static bool api_word(const char *s, bool empty_ok)
{
    if (!*s)
        return empty_ok;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '.' || *s == '-'))
            return false;
    return true;
}

int gs_live_path(gs_strbuf *out, const char *group, const char *version, const char *resource,
                 const char *ns, const char *name, const char *sub, gs_error *err)
{
    if (!api_word(version, false) || !api_word(resource, false) || (group && !api_word(group, true)) ||
        (sub && !api_word(sub, false)))
        return gs_fail(err, GS_ERR_INVALID, "a path needs a version and a resource of [a-z0-9.-] (a group too)");
    if (ns && *ns && check_segment("namespace", ns, err))
        return -1;
    if (name && check_segment("resource name", name, err))
        return -1;
    if (sub && !name)
        return gs_fail(err, GS_ERR_INVALID, "subresource \"%s\" without a resource name", sub);
    if (group && *group) {
        gs_strbuf_puts(out, "/apis/");
        gs_strbuf_puts(out, group);
        gs_strbuf_putc(out, '/');
    } else {
        gs_strbuf_puts(out, "/api/");
    }
    gs_strbuf_puts(out, version);
    if (ns && *ns) {
        gs_strbuf_puts(out, "/namespaces/");
        put_segment(out, ns);
    }
    gs_strbuf_putc(out, '/');
    gs_strbuf_puts(out, resource);
    if (name) {
        gs_strbuf_putc(out, '/');
        put_segment(out, name);
        if (sub) {
            gs_strbuf_putc(out, '/');
            gs_strbuf_puts(out, sub);
        }
    }
    return out->oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
}

/* ---------------------------------------------------------------- requests */

const char *gs_live_patch_content_type(gs_live_patch_type t)
{
    switch (t) {
    case GS_LIVE_PATCH_MERGE:
        return "application/merge-patch+json";
    case GS_LIVE_PATCH_STRATEGIC:
        return "application/strategic-merge-patch+json";
    case GS_LIVE_PATCH_JSON:
        return "application/json-patch+json";
    case GS_LIVE_PATCH_APPLY:
        return "application/apply-patch+yaml";
    default:
        return NULL;
    }
}

/* The API server's rule (apimachinery ValidateFieldManager): at most 128 bytes, printable
 * characters only. */
static int check_field_manager(const char *fm, gs_error *err)
{
    size_t n = strlen(fm);
    if (n > 128)
        return gs_fail(err, GS_ERR_INVALID, "fieldManager: Too long: may not be more than 128 bytes");
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = gs_utf8_seq(fm + i, n - i, &cp);
        if (!k || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || gs_text_hidden(cp))
            return gs_fail(err, GS_ERR_INVALID, "fieldManager: Invalid value: must only contain printable characters");
        i += k;
    }
    return 0;
}

int gs_live_write_prepare(gs_live_write_rq *w, const char *method, const char *path,
                          gs_live_patch_type patch, const char *body, size_t len,
                          const gs_live_write_opts *o, gs_error *err)
{
    memset(&w->rq, 0, sizeof w->rq);
    memset(w->query, 0, sizeof w->query);
    gs_strbuf_reset(&w->body);
    static const gs_live_write_opts none;
    if (!o)
        o = &none;
    if (!method || !path || path[0] != '/')
        return gs_fail(err, GS_ERR_INVALID, "a write needs a method and an absolute path");
    bool is_patch = !strcmp(method, "PATCH");
    if (is_patch != (patch != GS_LIVE_PATCH_NONE) || (is_patch && !gs_live_patch_content_type(patch)))
        return gs_fail(err, GS_ERR_INVALID, "%s %s: %s", method, path,
                       is_patch ? "a PATCH needs a patch kind" : "a patch kind is only for PATCH");
    bool needs_body = strcmp(method, "DELETE") != 0;
    if (needs_body && (!body || !len))
        return gs_fail(err, GS_ERR_INVALID, "%s %s: the request needs a body", method, path);
    if (patch == GS_LIVE_PATCH_APPLY && (!o->field_manager || !*o->field_manager))
        return gs_fail(err, GS_ERR_INVALID, "PATCH %s: fieldManager is required for apply patch", path);
    if (o->force && patch != GS_LIVE_PATCH_APPLY)
        return gs_fail(err, GS_ERR_INVALID, "%s %s: force may not be specified for non-apply patch", method, path);
    if (o->field_manager && *o->field_manager && check_field_manager(o->field_manager, err))
        return -1;
    if ((unsigned)o->validation > GS_LIVE_VALIDATION_STRICT)
        return gs_fail(err, GS_ERR_INVALID, "fieldValidation: unknown value %d", (int)o->validation);
    /* query parameters in the order url.Values.Encode writes them (sorted by name) */
    size_t nq = 0;
    if (o->dry_run)
        w->query[nq++] = (gs_live_query){"dryRun", "All"};
    if (o->field_manager && *o->field_manager)
        w->query[nq++] = (gs_live_query){"fieldManager", o->field_manager};
    static const char *const fv[] = {NULL, "Ignore", "Warn", "Strict"};
    if (o->validation && strcmp(method, "DELETE"))
        w->query[nq++] = (gs_live_query){"fieldValidation", fv[o->validation]};
    if (o->force)
        w->query[nq++] = (gs_live_query){"force", "true"};
    w->rq.method = method;
    w->rq.path = path;
    w->rq.query = nq ? w->query : NULL;
    w->rq.nquery = nq;
    w->rq.body = body;
    w->rq.body_len = body ? len : 0;
    w->rq.content_type = is_patch ? gs_live_patch_content_type(patch) : (body && len ? "application/json" : NULL);
    w->rq.timeout_ms = o->timeout_ms;
    return 0;
}

void gs_live_write_rq_free(gs_live_write_rq *w)
{
    if (w)
        gs_strbuf_free(&w->body);
}

static int write_do(gs_live_client *c, const char *method, const char *path, gs_live_patch_type t,
                    const char *body, size_t len, const gs_live_write_opts *o, gs_live_response *rs,
                    gs_error *err)
{
    gs_live_write_rq w = {.body = GS_STRBUF_INIT};
    int rc = gs_live_write_prepare(&w, method, path, t, body, len, o, err);
    if (!rc)
        rc = gs_live_do(c, &w.rq, rs, err);
    gs_live_write_rq_free(&w);
    return rc;
}

int gs_live_create(gs_live_client *c, const char *path, const char *body, size_t len,
                   const gs_live_write_opts *o, gs_live_response *rs, gs_error *err)
{
    return write_do(c, "POST", path, GS_LIVE_PATCH_NONE, body, len, o, rs, err);
}

int gs_live_replace(gs_live_client *c, const char *path, const char *body, size_t len,
                    const gs_live_write_opts *o, gs_live_response *rs, gs_error *err)
{
    return write_do(c, "PUT", path, GS_LIVE_PATCH_NONE, body, len, o, rs, err);
}

int gs_live_patch(gs_live_client *c, const char *path, gs_live_patch_type t, const char *body,
                  size_t len, const gs_live_write_opts *o, gs_live_response *rs, gs_error *err)
{
    if (t == GS_LIVE_PATCH_NONE)
        return gs_fail(err, GS_ERR_INVALID, "PATCH %s: a PATCH needs a patch kind", path ? path : "");
    return write_do(c, "PATCH", path, t, body, len, o, rs, err);
}

int gs_live_apply(gs_live_client *c, const char *path, const char *body, size_t len,
                  const gs_live_write_opts *o, gs_live_response *rs, gs_error *err)
{
    return write_do(c, "PATCH", path, GS_LIVE_PATCH_APPLY, body, len, o, rs, err);
}

int gs_live_delete_body(gs_strbuf *out, const gs_live_delete_opts *o, gs_error *err)
{
    gs_strbuf_reset(out);
    if (!o)
        return 0;
    if (o->propagation && strcmp(o->propagation, "Foreground") && strcmp(o->propagation, "Background") &&
        strcmp(o->propagation, "Orphan"))
        return gs_fail(err, GS_ERR_INVALID, "propagationPolicy must be Foreground, Background or Orphan");
    if (o->has_grace && o->grace_seconds < 0)
        return gs_fail(err, GS_ERR_INVALID, "gracePeriodSeconds may not be negative");
    bool pre = (o->uid && *o->uid) || (o->resource_version && *o->resource_version);
    if (!pre && !o->propagation && !o->has_grace)
        return 0;
    gs_strbuf_puts(out, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\"");
    if (o->has_grace)
        gs_strbuf_printf(out, ",\"gracePeriodSeconds\":%lld", (long long)o->grace_seconds);
    if (pre) {
        gs_strbuf_puts(out, ",\"preconditions\":{");
        bool first = true;
        if (o->uid && *o->uid) {
            gs_lw_member(out, "uid", o->uid, true);
            first = false;
        }
        if (o->resource_version && *o->resource_version)
            gs_lw_member(out, "resourceVersion", o->resource_version, first);
        gs_strbuf_putc(out, '}');
    }
    gs_lw_member(out, "propagationPolicy", o->propagation, false);
    gs_strbuf_putc(out, '}');
    return out->oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
}

int gs_live_delete(gs_live_client *c, const char *path, const gs_live_delete_opts *o,
                   gs_live_response *rs, gs_error *err)
{
    gs_live_write_rq w = {.body = GS_STRBUF_INIT};
    gs_strbuf body = GS_STRBUF_INIT;
    gs_live_write_opts wo = {.dry_run = o && o->dry_run, .timeout_ms = o ? o->timeout_ms : 0};
    int rc = gs_live_delete_body(&body, o, err);
    if (!rc)
        rc = gs_live_write_prepare(&w, "DELETE", path, GS_LIVE_PATCH_NONE, body.buf, body.len, &wo, err);
    if (!rc)
        rc = gs_live_do(c, &w.rq, rs, err);
    gs_live_write_rq_free(&w);
    gs_strbuf_free(&body);
    return rc;
}

/* ---------------------------------------------------------------- pods/binding */

int gs_live_binding_body(gs_strbuf *out, const char *ns, const char *pod, const char *uid,
                         const char *node, const char *const *annotations, gs_error *err)
{
    gs_strbuf_reset(out);
    if (!ns || !*ns || !pod || !*pod || !node || !*node)
        return gs_fail(err, GS_ERR_INVALID, "a binding needs a namespace, a pod and a node");
    gs_strbuf_puts(out, "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{");
    gs_lw_member(out, "name", pod, true);
    gs_lw_member(out, "namespace", ns, false);
    if (uid && *uid)
        gs_lw_member(out, "uid", uid, false);
    if (annotations && annotations[0]) {
        gs_strbuf_puts(out, ",\"annotations\":{");
        for (size_t i = 0; annotations[i]; i += 2) {
            if (!annotations[i + 1] || !*annotations[i])
                return gs_fail(err, GS_ERR_INVALID, "a binding's annotation needs a key and a value");
            gs_lw_member(out, annotations[i], annotations[i + 1], i == 0);
        }
        gs_strbuf_putc(out, '}');
    }
    gs_strbuf_puts(out, "},\"target\":{\"kind\":\"Node\"");
    gs_lw_member(out, "name", node, false);
    gs_strbuf_puts(out, "}}");
    return out->oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
}

int gs_live_eviction_body(gs_strbuf *out, const char *ns, const char *pod, const char *uid, gs_error *err)
{
    gs_strbuf_reset(out);
    if (!ns || !*ns || !pod || !*pod)
        return gs_fail(err, GS_ERR_INVALID, "an eviction needs a namespace and a pod");
    gs_strbuf_puts(out, "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{");
    gs_lw_member(out, "name", pod, true);
    gs_lw_member(out, "namespace", ns, false);
    gs_strbuf_putc(out, '}');
    if (uid && *uid) {
        gs_strbuf_puts(out, ",\"deleteOptions\":{\"preconditions\":{");
        gs_lw_member(out, "uid", uid, true);
        gs_strbuf_puts(out, "}}");
    }
    gs_strbuf_putc(out, '}');
    return out->oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
}

int gs_live_evict(gs_live_client *c, const char *ns, const char *pod, const char *uid, const gs_live_write_opts *o,
                  gs_live_response *rs, gs_error *err)
{
    gs_strbuf path = GS_STRBUF_INIT, body = GS_STRBUF_INIT;
    int rc = gs_live_eviction_body(&body, ns, pod, uid, err);
    if (!rc)
        rc = gs_live_path(&path, "", "v1", "pods", ns, pod, "eviction", err);
    if (!rc)
        rc = gs_live_create(c, path.buf, body.buf, body.len, o, rs, err);
    gs_strbuf_free(&path);
    gs_strbuf_free(&body);
    return rc;
}

int gs_live_bind(gs_live_client *c, const char *ns, const char *pod, const char *uid,
                 const char *node, const char *const *annotations, const gs_live_write_opts *o,
                 gs_live_response *rs, gs_error *err)
{
    gs_strbuf path = GS_STRBUF_INIT, body = GS_STRBUF_INIT;
    int rc = gs_live_binding_body(&body, ns, pod, uid, node, annotations, err);
    if (!rc)
        rc = gs_live_path(&path, "", "v1", "pods", ns, pod, "binding", err);
    if (!rc)
        rc = gs_live_create(c, path.buf, body.buf, body.len, o, rs, err);
    gs_strbuf_free(&path);
    gs_strbuf_free(&body);
    return rc;
}

/* ---------------------------------------------------------------- MicroTime */

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = (unsigned)(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void gs_live_microtime(char *out, int64_t us)
{
    int64_t s = us / 1000000, frac = us % 1000000;
    if (frac < 0) {
        frac += 1000000;
        s--;
    }
    int64_t days = s / 86400, rem = s % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) { /* outside RFC 3339: clamp to its range */
        snprintf(out, 32, "%s", y < 0 ? "0000-01-01T00:00:00.000000Z" : "9999-12-31T23:59:59.999999Z");
        return;
    }
    snprintf(out, 32, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", (int)y, m, d, (int)(rem / 3600),
             (int)(rem / 60 % 60), (int)(rem % 60), (int)frac);
}

int gs_live_microtime_parse(const char *s, int64_t *us)
{
    int64_t secs;
    if (!s || gs_parse_rfc3339(s, &secs))
        return -1;
    int64_t frac = 0;
    if (s[19] == '.') {
        int k = 0;
        for (const char *p = s + 20; *p >= '0' && *p <= '9'; p++, k++)
            if (k < 6)
                frac = frac * 10 + (*p - '0');
        for (; k < 6; k++)
            frac *= 10;
    }
    if (secs > INT64_MAX / 1000000 - 1 || secs < INT64_MIN / 1000000 + 1)
        return -1;
    *us = secs * 1000000 + frac;
    return 0;
}
