/*
 * review.c - the webhook's decisions: validate (the check rules over a one-object
 * snapshot), mutate (JSONPatch for GPU pods), and the AdmissionReview v1 response and
 * metav1.Status encoders (contracts in serve.h).
 *
 * One review = one arena: the decoded request, the findings copied out of the check
 * result, warnings, the denial message and the patch all live in rv->arena, so the
 * snapshot and the check result can be freed before the response is written and a
 * review costs one free at the end.
 *
 * Findings are deduplicated by (rule, message) before they become a denial message,
 * warnings or audit entries: a Deployment is expanded into its replicas and a rule that
 * fires on the template fires on every replica with the same words.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpusched/gpu.h"
#include "gpusched/serve.h"
#include "serve/serve_int.h"

#define DEFAULT_MAX_REPLICAS 10000u /* per workload in a review: bounds time and memory */
#define DEFAULT_GPU_TAINT_KEY "nvidia.com/gpu"

/* ---------------------------------------------------------------- small helpers */
size_t gs_serve_utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t k = max;
    /* back up over continuation bytes so the cut lands before a lead byte */
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    return k;
}

void gs_serve_put_capped(gs_strbuf *sb, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) {
        gs_strbuf_add(sb, s, n);
        return;
    }
    size_t k = gs_serve_utf8_cut(s, n, max >= 3 ? max - 3 : 0);
    gs_strbuf_add(sb, s, k);
    if (max >= 3)
        gs_strbuf_add(sb, "...", 3);
}

uint64_t gs_serve_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *gs_review_endpoint_name(gs_review_endpoint ep)
{
    return ep == GS_ENDPOINT_MUTATE ? "mutate" : "validate";
}

void gs_base64_encode(const void *data, size_t len, gs_strbuf *sb)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    char quad[4];
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        quad[0] = alphabet[v >> 18];
        quad[1] = alphabet[(v >> 12) & 63];
        quad[2] = alphabet[(v >> 6) & 63];
        quad[3] = alphabet[v & 63];
        gs_strbuf_add(sb, quad, 4);
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        quad[0] = alphabet[v >> 18];
        quad[1] = alphabet[(v >> 12) & 63];
        quad[2] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        quad[3] = '=';
        gs_strbuf_add(sb, quad, 4);
    }
}

/* "Pod team-a/train-0", "Node gpu-1", "Pod team-a/<generated>" */
static const char *object_label(gs_arena *a, const gs_admission *rq)
{
    const char *name = rq->name[0] ? rq->name : "(generated name)";
    if (rq->namespace_[0])
        return gs_arena_printf(a, "%s %s/%s", rq->kind[0] ? rq->kind : "object", rq->namespace_, name);
    return gs_arena_printf(a, "%s %s", rq->kind[0] ? rq->kind : "object", name);
}

/* ---------------------------------------------------------------- patch */
static void put_toleration(gs_strbuf *sb, const char *key)
{
    gs_strbuf_puts(sb, "{\"key\":");
    gs_strbuf_json_str(sb, key);
    gs_strbuf_puts(sb, ",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}");
}

uint32_t gs_review_pod_patch(const gs_webhook *wh, const gs_pod *pod, gs_tolerations_shape tolerations,
                             bool create, gs_strbuf *patch)
{
    static const char *const default_keys[] = {DEFAULT_GPU_TAINT_KEY};
    const gs_check_config *cfg = wh->cfg;
    const char *const *keys = default_keys;
    uint32_t nkeys = 1;
    if (cfg && cfg->ngpu_taint_keys) {
        keys = cfg->gpu_taint_keys;
        nkeys = cfg->ngpu_taint_keys < GS_CHECK_MAX_KEYS ? cfg->ngpu_taint_keys : GS_CHECK_MAX_KEYS;
    }
    const char *missing[GS_CHECK_MAX_KEYS];
    uint32_t nmissing = 0;
    /* a key is covered when the pod tolerates every NoSchedule taint on it, whatever its
     * value (an Exists toleration for the key or for every key); Equal covers one value */
    for (uint32_t i = 0; i < nkeys; i++) {
        if (!keys[i] || !keys[i][0] || gs_pod_tolerates_key(pod, keys[i], GS_EFFECT_NO_SCHEDULE, true))
            continue;
        bool dup = false;
        for (uint32_t k = 0; k < nmissing; k++)
            dup |= strcmp(missing[k], keys[i]) == 0;
        if (!dup)
            missing[nmissing++] = keys[i];
    }
    uint32_t nops = 0;
    size_t start = patch->len;
    gs_strbuf_putc(patch, '[');
    if (nmissing && tolerations == GS_TOLS_ARRAY) {
        for (uint32_t k = 0; k < nmissing; k++) {
            if (nops++)
                gs_strbuf_putc(patch, ',');
            gs_strbuf_puts(patch, "{\"op\":\"add\",\"path\":\"/spec/tolerations/-\",\"value\":");
            put_toleration(patch, missing[k]);
            gs_strbuf_putc(patch, '}');
        }
    } else if (nmissing) {
        /* absent or null: "add" creates the member (or replaces the null) */
        nops++;
        gs_strbuf_puts(patch, "{\"op\":\"add\",\"path\":\"/spec/tolerations\",\"value\":[");
        for (uint32_t k = 0; k < nmissing; k++) {
            if (k)
                gs_strbuf_putc(patch, ',');
            put_toleration(patch, missing[k]);
        }
        gs_strbuf_puts(patch, "]}");
    }
    const char *pc = cfg ? cfg->default_gpu_priority_class : NULL;
    if (create && pc && pc[0] && !pod->priority_class_name[0] && wh->has_gpu_priority_value) {
        /* "add" on an existing member replaces it: spec.priority was already filled in
         * by the Priority admission plugin, which runs before mutating webhooks */
        if (nops++)
            gs_strbuf_putc(patch, ',');
        gs_strbuf_puts(patch, "{\"op\":\"add\",\"path\":\"/spec/priorityClassName\",\"value\":");
        gs_strbuf_json_str(patch, pc);
        gs_strbuf_printf(patch, "},{\"op\":\"add\",\"path\":\"/spec/priority\",\"value\":%d}",
                         (int)wh->gpu_priority_value);
        nops++;
    }
    if (!nops) {
        patch->len = start; /* nothing to do: leave the buffer as it was */
        if (patch->buf)
            patch->buf[start] = '\0';
        return 0;
    }
    gs_strbuf_putc(patch, ']');
    return nops;
}

/* ---------------------------------------------------------------- findings */
typedef struct dedupe {
    uint64_t *hashes; /* 0 = empty slot */
    uint32_t mask;
} dedupe;

static uint64_t finding_hash(const gs_finding *f)
{
    uint64_t h = gs_hash_bytes(f->message ? f->message : "", f->message ? strlen(f->message) : 0);
    h ^= gs_hash_bytes(f->rule ? f->rule->id : "", f->rule ? strlen(f->rule->id) : 0) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)f->severity << 1 ^ (uint64_t)f->suppressed;
    return h ? h : 1;
}

/* true when this (rule, message, severity, suppressed) was not seen before */
static bool dedupe_insert(dedupe *d, uint64_t h)
{
    for (uint32_t i = (uint32_t)h & d->mask;; i = (i + 1) & d->mask) {
        if (d->hashes[i] == h)
            return false;
        if (!d->hashes[i]) {
            d->hashes[i] = h;
            return true;
        }
    }
}

static int32_t rule_index(const gs_rule_info *r)
{
    uint32_t n = 0;
    const gs_rule_info *all = gs_rules(&n);
    if (!r || !all || r < all || r >= all + n)
        return -1;
    return (int32_t)(r - all);
}

/* Copy the distinct findings of res into rv. */
static int copy_findings(gs_review *rv, const gs_check_result *res, gs_error *err)
{
    if (!res->nfindings)
        return 0;
    uint32_t slots = 16;
    while (slots < res->nfindings * 2u && slots < (1u << 30))
        slots <<= 1;
    dedupe d = {calloc(slots, sizeof(uint64_t)), slots - 1};
    rv->findings = gs_arena_alloc(&rv->arena, sizeof *rv->findings * res->nfindings);
    if (!d.hashes || !rv->findings) {
        free(d.hashes);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory copying findings");
    }
    for (uint32_t i = 0; i < res->nfindings; i++) {
        const gs_finding *f = &res->findings[i];
        if (!dedupe_insert(&d, finding_hash(f)))
            continue;
        gs_review_finding *o = &rv->findings[rv->nfindings++];
        o->rule_id = gs_arena_strdup(&rv->arena, f->rule ? f->rule->id : "?");
        o->rule_name = gs_arena_strdup(&rv->arena, f->rule ? f->rule->name : "?");
        o->rule_index = rule_index(f->rule);
        o->severity = f->severity;
        o->message = gs_arena_strdup(&rv->arena, f->message ? f->message : "");
        o->suppressed = f->suppressed;
        if (!o->rule_id || !o->rule_name || !o->message) {
            free(d.hashes);
            return gs_fail(err, GS_ERR_NOMEM, "out of memory copying findings");
        }
    }
    free(d.hashes);
    return 0;
}

static int add_warning(gs_review *rv, const char *text, gs_error *err)
{
    if (!rv->warnings) {
        rv->warnings = gs_arena_alloc(&rv->arena, sizeof *rv->warnings * GS_REVIEW_WARNINGS_MAX);
        if (!rv->warnings)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    if (rv->nwarnings >= GS_REVIEW_WARNINGS_MAX)
        return 0;
    size_t n = strlen(text);
    size_t keep = n <= GS_REVIEW_WARNING_MAX ? n : gs_serve_utf8_cut(text, n, GS_REVIEW_WARNING_MAX - 3);
    char *w = gs_arena_alloc(&rv->arena, keep + 4);
    if (!w)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    memcpy(w, text, keep);
    if (keep < n)
        memcpy(w + keep, "...", 3), keep += 3;
    w[keep] = '\0';
    rv->warnings[rv->nwarnings++] = w;
    return 0;
}

/* Denial message and warnings from the distinct findings. */
static int judge_findings(gs_review *rv, gs_error *err)
{
    gs_strbuf msg = GS_STRBUF_INIT;
    uint32_t nwarn = 0;
    for (uint32_t i = 0; i < rv->nfindings; i++) {
        const gs_review_finding *f = &rv->findings[i];
        if (f->suppressed)
            continue;
        if (f->severity == GS_SEV_ERROR) {
            if (msg.len)
                gs_strbuf_puts(&msg, "; ");
            gs_strbuf_printf(&msg, "%s %s: %s", f->rule_id, f->rule_name, f->message);
        } else if (f->severity == GS_SEV_WARNING) {
            nwarn++;
        }
    }
    uint32_t written = 0;
    for (uint32_t i = 0; i < rv->nfindings; i++) {
        const gs_review_finding *f = &rv->findings[i];
        if (f->suppressed || f->severity != GS_SEV_WARNING)
            continue;
        char line[GS_REVIEW_WARNING_MAX * 2 + 64];
        if (written + 1 == GS_REVIEW_WARNINGS_MAX && nwarn > GS_REVIEW_WARNINGS_MAX) {
            snprintf(line, sizeof line, "gpusched: %u more warnings (see the audit log)",
                     nwarn - written);
            if (add_warning(rv, line, err) < 0)
                goto fail;
            break;
        }
        snprintf(line, sizeof line, "%s: %.*s", f->rule_id, GS_REVIEW_WARNING_MAX * 2, f->message);
        if (add_warning(rv, line, err) < 0)
            goto fail;
        written++;
    }
    if (msg.oom) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (msg.len) {
        gs_strbuf capped = GS_STRBUF_INIT;
        gs_serve_put_capped(&capped, gs_strbuf_cstr(&msg), GS_REVIEW_MESSAGE_MAX);
        rv->message = gs_arena_strdup(&rv->arena, gs_strbuf_cstr(&capped));
        gs_strbuf_free(&capped);
        if (!rv->message) {
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        rv->allowed = false;
        rv->status_code = 403;
        rv->reason = "Forbidden";
    }
    gs_strbuf_free(&msg);
    return 0;
fail:
    gs_strbuf_free(&msg);
    return -1;
}

/* ---------------------------------------------------------------- decisions */
static int validate(const gs_webhook *wh, gs_review *rv, const gs_snapshot *snap, gs_error *err)
{
    gs_check_config defaults;
    const gs_check_config *cfg = wh->cfg;
    if (!cfg) {
        gs_check_config_defaults(&defaults);
        cfg = &defaults;
    }
    gs_check_result res;
    memset(&res, 0, sizeof res);
    int rc = gs_check_run(snap, cfg, &res, err);
    if (rc == 0)
        rc = copy_findings(rv, &res, err);
    gs_check_result_free(&res);
    if (cfg == &defaults)
        gs_check_config_free(&defaults);
    if (rc == 0)
        rc = judge_findings(rv, err);
    return rc;
}

static int mutate(const gs_webhook *wh, gs_review *rv, const gs_snapshot *snap, gs_error *err)
{
    const gs_admission *rq = &rv->req;
    if (strcmp(rq->kind, "Pod") != 0 || snap->pods.n != 1 || snap->workloads.n != 0)
        return 0;
    const gs_pod *pod = &snap->pods.v[0];
    gs_gpu_request gr;
    gs_error e;
    gs_error_clear(&e);
    if (gs_gpu_request_from_pod(pod, &gr, &e) != 0) {
        char line[GS_ERR_MSG_MAX + 64];
        snprintf(line, sizeof line, "gpusched: not mutated: %s", e.msg);
        return add_warning(rv, line, err);
    }
    if (gr.kind == GS_GPU_NONE)
        return 0;
    gs_strbuf patch = GS_STRBUF_INIT;
    uint32_t nops = gs_review_pod_patch(wh, pod, rq->tolerations, strcmp(rq->operation, "CREATE") == 0, &patch);
    int rc = 0;
    if (patch.oom) {
        rc = gs_fail(err, GS_ERR_NOMEM, "out of memory building the patch");
    } else if (nops) {
        char *p = gs_arena_memdup(&rv->arena, patch.buf, patch.len + 1);
        if (!p) {
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory building the patch");
        } else {
            rv->patch = p;
            rv->patch_len = patch.len;
        }
    }
    gs_strbuf_free(&patch);
    return rc;
}

/* The object did not decode: validate denies (as `gpusched check` rejects the file),
 * mutate lets it through untouched; both say why. Limits are ours, not the user's
 * fault: allowed with a warning. Out of memory is a server failure (500). */
static int object_unreadable(gs_review *rv, const gs_error *e, gs_error *err)
{
    if (e->code == GS_ERR_NOMEM || e->code == GS_ERR_INTERNAL || e->code == GS_ERR_IO) {
        *err = *e;
        return -1;
    }
    const char *label = object_label(&rv->arena, &rv->req);
    const char *text = e->path[0] ? gs_arena_printf(&rv->arena, "%s: %s", e->path, e->msg)
                                  : gs_arena_strdup(&rv->arena, e->msg);
    if (!label || !text)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    rv->object_error = text;
    if (rv->endpoint == GS_ENDPOINT_VALIDATE && e->code != GS_ERR_LIMIT) {
        gs_strbuf m = GS_STRBUF_INIT;
        gs_strbuf_printf(&m, "gpusched cannot read %s: %s", label, text);
        gs_strbuf capped = GS_STRBUF_INIT;
        gs_serve_put_capped(&capped, gs_strbuf_cstr(&m), GS_REVIEW_MESSAGE_MAX);
        rv->message = gs_arena_strdup(&rv->arena, gs_strbuf_cstr(&capped));
        gs_strbuf_free(&m);
        gs_strbuf_free(&capped);
        if (!rv->message)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory");
        rv->allowed = false;
        rv->status_code = 422;
        rv->reason = "Invalid";
        return 0;
    }
    char line[GS_ERR_MSG_MAX + GS_ERR_PATH_MAX + 64];
    snprintf(line, sizeof line, "gpusched: not %s: %s",
             rv->endpoint == GS_ENDPOINT_VALIDATE ? "checked" : "mutated", text);
    return add_warning(rv, line, err);
}

int gs_review_run(const gs_webhook *wh, gs_review_endpoint ep, const char *body, size_t len,
                  gs_review *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena_init(&out->arena, 16 * 1024);
    out->endpoint = ep == GS_ENDPOINT_MUTATE ? GS_ENDPOINT_MUTATE : GS_ENDPOINT_VALIDATE;
    out->allowed = true;
    if (gs_admission_decode(body, len, &out->arena, &out->req, err) != 0) {
        gs_arena_free(&out->arena);
        memset(out, 0, sizeof *out);
        return -1;
    }
    const gs_admission *rq = &out->req;
    if (!strcmp(rq->operation, "DELETE") || !strcmp(rq->operation, "CONNECT"))
        out->skipped = rq->operation;
    else if (rq->sub_resource[0])
        out->skipped = "subresource";
    else if (!rq->object)
        out->skipped = "no object";
    if (out->skipped)
        return 0;

    gs_read_opts ro = wh->read_opts;
    if (!ro.max_replicas)
        ro.max_replicas = DEFAULT_MAX_REPLICAS;
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_error e;
    gs_error_clear(&e);
    int rc;
    if (gs_snapshot_read_buffer(&snap, "request.object", rq->object, rq->object_len, &ro, &e) != 0 ||
        gs_snapshot_finish(&snap, &e) != 0)
        rc = object_unreadable(out, &e, err);
    else if (out->endpoint == GS_ENDPOINT_VALIDATE)
        rc = validate(wh, out, &snap, err);
    else
        rc = mutate(wh, out, &snap, err);
    gs_snapshot_free(&snap);
    if (rc != 0) {
        gs_arena_free(&out->arena);
        memset(out, 0, sizeof *out);
        return -1;
    }
    return 0;
}

void gs_review_free(gs_review *rv)
{
    if (!rv)
        return;
    gs_arena_free(&rv->arena);
    memset(rv, 0, sizeof *rv);
}

/* ---------------------------------------------------------------- encoders */
void gs_review_encode(const gs_review *rv, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                       "\"response\":{\"uid\":");
    gs_strbuf_json_str(sb, rv->req.uid ? rv->req.uid : "");
    gs_strbuf_puts(sb, rv->allowed ? ",\"allowed\":true" : ",\"allowed\":false");
    if (!rv->allowed) {
        gs_strbuf_printf(sb, ",\"status\":{\"code\":%d,\"reason\":", (int)rv->status_code);
        gs_strbuf_json_str(sb, rv->reason ? rv->reason : "Forbidden");
        gs_strbuf_puts(sb, ",\"message\":");
        gs_strbuf_json_str(sb, rv->message ? rv->message : "denied by gpusched");
        gs_strbuf_putc(sb, '}');
    }
    if (rv->nwarnings) {
        gs_strbuf_puts(sb, ",\"warnings\":[");
        for (uint32_t i = 0; i < rv->nwarnings; i++) {
            if (i)
                gs_strbuf_putc(sb, ',');
            gs_strbuf_json_str(sb, rv->warnings[i]);
        }
        gs_strbuf_putc(sb, ']');
    }
    if (rv->endpoint == GS_ENDPOINT_MUTATE && rv->patch && rv->patch_len) {
        gs_strbuf_puts(sb, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
        gs_base64_encode(rv->patch, rv->patch_len, sb);
        gs_strbuf_putc(sb, '"');
    }
    /* the API server records these in its audit log as <webhook name>/findings */
    bool any = false;
    for (uint32_t i = 0; i < rv->nfindings; i++) {
        const gs_review_finding *f = &rv->findings[i];
        if (f->suppressed || f->severity == GS_SEV_INFO)
            continue;
        bool dup = false;
        for (uint32_t k = 0; k < i && !dup; k++)
            dup = !rv->findings[k].suppressed && rv->findings[k].severity != GS_SEV_INFO &&
                  strcmp(rv->findings[k].rule_id, f->rule_id) == 0;
        if (dup)
            continue;
        gs_strbuf_puts(sb, any ? "," : ",\"auditAnnotations\":{\"findings\":\"");
        any = true;
        gs_strbuf_puts(sb, f->rule_id); /* rule ids are [A-Z0-9]: no escaping needed */
    }
    if (any)
        gs_strbuf_puts(sb, "\"}");
    gs_strbuf_puts(sb, "}}");
}

const char *gs_serve_status_reason(int http_code)
{
    switch (http_code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 408: return "Timeout";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    default: return http_code >= 500 ? "InternalError" : "BadRequest";
    }
}

void gs_serve_status_body(int http_code, const char *message, gs_strbuf *sb)
{
    gs_strbuf_puts(sb, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                       "\"status\":\"Failure\",\"message\":");
    gs_strbuf_json_str(sb, message ? message : "");
    gs_strbuf_puts(sb, ",\"reason\":");
    gs_strbuf_json_str(sb, gs_serve_status_reason(http_code));
    gs_strbuf_printf(sb, ",\"code\":%d}", http_code);
}
