/*
 * write_lease.c - leader election on a Lease (coordination.k8s.io/v1) as client-go's
 * tools/leaderelection with a LeaseLock: tryAcquireOrRenew as a step function over a
 * local observation time (a candidate compares the time it saw a record change with its
 * own clock, never the holder's renewTime), optimistic concurrency through the
 * resourceVersion of the Lease read (PUT of that object, 409 = lost the race), release
 * as ReleaseOnCancel does, and the Run loop (acquire, renew, release).
 */
#include <stdio.h>
#include <string.h>

#include "gpusched/live_write.h"
#include "live/write_int.h"
#include "util/json_int.h"

#define JITTER 1.2
#define RELEASE_TRIES 5

/* ---------------------------------------------------------------- the Lease as data */

static char *dup_str(gs_arena *a, const gs_jv *v)
{
    return v && v->t == GS_JSTR ? gs_arena_strndup(a, v->s, v->n) : NULL;
}

int gs_live_lease_parse(const char *json, size_t len, gs_arena *a, gs_live_lease *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena tmp;
    gs_arena_init(&tmp, 0);
    gs_jv root;
    gs_json_limits lim = {.max_depth = 64, .max_string = 1u << 20};
    int rc = -1;
    if (gs_json_parse("lease", 1, json, len, &lim, &tmp, &root, err))
        goto out;
    const gs_jv *md = gs_json_get(&root, "metadata"), *spec = gs_json_get(&root, "spec");
    const gs_jv *name = gs_json_get(md, "name");
    if (root.t != GS_JOBJ || !name || name->t != GS_JSTR) {
        gs_error_set(err, GS_ERR_INVALID, "lease", 1, 1, NULL, "the answer is not an object with metadata.name");
        goto out;
    }
    if (spec && spec->t != GS_JOBJ && spec->t != GS_JNULL) {
        int line, col;
        gs_json_where(json, 1, spec, &line, &col);
        gs_error_set(err, GS_ERR_INVALID, "lease", line, col, NULL, "spec: expected an object, got %s",
                     gs_json_type_name((gs_jtype)spec->t));
        goto out;
    }
    out->name = dup_str(a, name);
    out->namespace_ = dup_str(a, gs_json_get(md, "namespace"));
    out->resource_version = dup_str(a, gs_json_get(md, "resourceVersion"));
    const gs_jv *holder = gs_json_get(spec, "holderIdentity");
    out->holder = holder && holder->t == GS_JSTR ? dup_str(a, holder) : gs_arena_strdup(a, "");
    if (!out->name || !out->holder) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    static const char *const nums[] = {"leaseDurationSeconds", "leaseTransitions"};
    int32_t *dst[] = {&out->duration_s, &out->transitions};
    static const char *const times[] = {"acquireTime", "renewTime"};
    int64_t *tdst[] = {&out->acquire_us, &out->renew_us};
    const gs_jv *bad = NULL;
    const char *want = NULL;
    if (holder && holder->t != GS_JSTR && holder->t != GS_JNULL) {
        bad = holder;
        want = "a string";
    }
    for (int i = 0; i < 2 && !bad; i++) {
        const gs_jv *v = gs_json_get(spec, nums[i]);
        int64_t x;
        if (!v || v->t == GS_JNULL)
            continue;
        if (v->t != GS_JNUM || gs_parse_i64(v->s, v->n, &x) || x < INT32_MIN || x > INT32_MAX) {
            bad = v;
            want = "a 32-bit integer";
        } else {
            *dst[i] = (int32_t)x;
        }
    }
    for (int i = 0; i < 2 && !bad; i++) {
        const gs_jv *v = gs_json_get(spec, times[i]);
        if (!v || v->t == GS_JNULL)
            continue;
        if (v->t != GS_JSTR || gs_live_microtime_parse(v->s, tdst[i])) {
            bad = v;
            want = "a MicroTime (RFC 3339)";
        }
    }
    if (bad) {
        int line, col;
        gs_json_where(json, 1, bad, &line, &col);
        gs_error_set(err, GS_ERR_INVALID, "lease", line, col, NULL, "expected %s, got %s", want,
                     bad->t == GS_JSTR ? "another string" : gs_json_type_name((gs_jtype)bad->t));
        goto out;
    }
    rc = 0;
out:
    gs_arena_free(&tmp);
    return rc;
}

void gs_live_lease_spec_json(gs_strbuf *out, const gs_live_lease_record *rec)
{
    char a[32], r[32];
    gs_live_microtime(a, rec->acquire_us);
    gs_live_microtime(r, rec->renew_us);
    gs_strbuf_puts(out, "{\"holderIdentity\":");
    gs_strbuf_json_str(out, rec->holder ? rec->holder : "");
    gs_strbuf_printf(out, ",\"leaseDurationSeconds\":%d,\"acquireTime\":\"%s\",\"renewTime\":\"%s\","
                          "\"leaseTransitions\":%d}",
                     (int)rec->duration_s, a, r, (int)rec->transitions);
}

int gs_live_lease_update_body(gs_strbuf *out, const char *lease, size_t len, const gs_live_lease_record *rec,
                              gs_error *err)
{
    gs_strbuf_reset(out);
    gs_arena tmp;
    gs_arena_init(&tmp, 0);
    gs_jv root;
    /* duplicate keys refused: which "spec" the server would read is not ours to guess */
    gs_json_limits lim = {.max_depth = 64, .unique_keys = true};
    int rc = -1;
    if (gs_json_parse("lease", 1, lease, len, &lim, &tmp, &root, err))
        goto out;
    if (root.t != GS_JOBJ) {
        gs_error_set(err, GS_ERR_INVALID, "lease", 1, 1, NULL, "the Lease is not an object");
        goto out;
    }
    /* the text of the root object ends with its last '}' (only whitespace follows) */
    size_t close = len;
    while (close > root.off && lease[close - 1] != '}')
        close--;
    close--;
    size_t at = root.n;
    for (size_t i = 0; i < root.n; i++)
        if (!strcmp(root.kids[2 * i].s, "spec"))
            at = i;
    if (at == root.n) {
        gs_strbuf_add(out, lease, root.off + 1);
        gs_strbuf_puts(out, "\"spec\":");
        gs_live_lease_spec_json(out, rec);
        if (root.n)
            gs_strbuf_putc(out, ',');
        gs_strbuf_add(out, lease + root.off + 1, close + 1 - (root.off + 1));
    } else {
        const gs_jv *v = &root.kids[2 * at + 1];
        gs_strbuf_add(out, lease + root.off, v->off - root.off);
        gs_live_lease_spec_json(out, rec);
        if (at + 1 < root.n) {
            gs_strbuf_putc(out, ',');
            size_t next = root.kids[2 * (at + 1)].off;
            gs_strbuf_add(out, lease + next, close + 1 - next);
        } else {
            gs_strbuf_putc(out, '}');
        }
    }
    rc = out->oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
out:
    gs_arena_free(&tmp);
    return rc;
}

/* ---------------------------------------------------------------- the elector */

typedef struct record {
    char *holder;        /* owned */
    int32_t duration_s, transitions;
    int64_t acquire_us, renew_us;
} record;

struct gs_live_elector {
    gs_live_client *client;
    gs_live_send_fn send;
    void *send_ctx;
    const gs_live_clock *clock;
    char *ns, *name, *identity;
    int64_t duration_us, deadline_us, retry_us;
    bool release_on_cancel;
    bool observed_any;
    record observed;     /* the record observed last */
    int64_t observed_at; /* local time it was observed (now_us of that round) */
    gs_strbuf lease;     /* the Lease as the server sent it last (PUT bodies start from it) */
    gs_strbuf path, coll;
    gs_rng rng;
    gs_live_elector_stats st;
};

static void set_observed(gs_live_elector *e, const record *r, int64_t at)
{
    char *h = strdup(r->holder ? r->holder : "");
    if (!h)
        return; /* keep the old one: the next round observes again */
    free(e->observed.holder);
    e->observed = *r;
    e->observed.holder = h;
    e->observed_at = at;
    e->observed_any = true;
}

static bool same_record(const record *a, const record *b)
{
    return !strcmp(a->holder ? a->holder : "", b->holder ? b->holder : "") && a->duration_s == b->duration_s &&
           a->transitions == b->transitions && a->acquire_us == b->acquire_us && a->renew_us == b->renew_us;
}

gs_live_elector *gs_live_elector_new(gs_live_client *c, const gs_live_elector_opts *o, gs_error *err)
{
    if (!o) {
        gs_fail(err, GS_ERR_INVALID, "leader election: options are required");
        return NULL;
    }
    int64_t d = o->lease_duration_us ? o->lease_duration_us : 15000000;
    int64_t rd = o->renew_deadline_us ? o->renew_deadline_us : 10000000;
    int64_t rp = o->retry_period_us ? o->retry_period_us : 2000000;
    const char *why = NULL;
    if (d <= rd)
        why = "leaseDuration must be greater than renewDeadline";
    else if ((double)rd <= JITTER * (double)rp)
        why = "renewDeadline must be greater than retryPeriod*JitterFactor";
    else if (d < 1)
        why = "leaseDuration must be greater than zero";
    else if (rd < 1)
        why = "renewDeadline must be greater than zero";
    else if (rp < 1)
        why = "retryPeriod must be greater than zero";
    else if (!o->identity || !*o->identity)
        why = "Lock identity is empty";
    else if (!o->name || !*o->name || !o->namespace_ || !*o->namespace_)
        why = "the Lease needs a namespace and a name";
    else if (!c && !o->send)
        why = "a client is required";
    if (why) {
        gs_fail(err, GS_ERR_INVALID, "leader election: %s", why);
        return NULL;
    }
    gs_live_elector *e = calloc(1, sizeof *e);
    if (!e) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    e->client = c;
    e->send = o->send;
    e->send_ctx = o->send_ctx;
    e->clock = o->clock;
    e->duration_us = d;
    e->deadline_us = rd;
    e->retry_us = rp;
    e->release_on_cancel = o->release_on_cancel;
    e->ns = strdup(o->namespace_);
    e->name = strdup(o->name);
    e->identity = strdup(o->identity);
    if (!e->ns || !e->name || !e->identity ||
        gs_live_path(&e->path, "coordination.k8s.io", "v1", "leases", o->namespace_, o->name, NULL, err) ||
        gs_live_path(&e->coll, "coordination.k8s.io", "v1", "leases", o->namespace_, NULL, NULL, err)) {
        if (err && err->code == GS_OK)
            gs_fail(err, GS_ERR_NOMEM, "out of memory");
        gs_live_elector_free(e);
        return NULL;
    }
    gs_rng_seed(&e->rng, (uint64_t)gs_lw_now(e->clock) ^ (uint64_t)(uintptr_t)e);
    return e;
}

void gs_live_elector_free(gs_live_elector *e)
{
    if (!e)
        return;
    free(e->observed.holder);
    free(e->ns);
    free(e->name);
    free(e->identity);
    gs_strbuf_free(&e->lease);
    gs_strbuf_free(&e->path);
    gs_strbuf_free(&e->coll);
    free(e);
}

bool gs_live_elector_is_leader(const gs_live_elector *e)
{
    return e->observed_any && !strcmp(e->observed.holder, e->identity);
}

const char *gs_live_elector_leader(const gs_live_elector *e)
{
    return e->observed_any ? e->observed.holder : "";
}

bool gs_live_elector_observed(const gs_live_elector *e, gs_live_lease_record *rec, int64_t *at_us)
{
    if (!e->observed_any)
        return false;
    if (rec)
        *rec = (gs_live_lease_record){e->observed.holder, e->observed.duration_s, e->observed.acquire_us,
                                      e->observed.renew_us, e->observed.transitions};
    if (at_us)
        *at_us = e->observed_at;
    return true;
}

void gs_live_elector_stats_get(const gs_live_elector *e, gs_live_elector_stats *out)
{
    *out = e->st;
}

static int failed(gs_live_elector *e, gs_error *err)
{
    e->st.failures++;
    if (err)
        e->st.last_error = *err;
    return -1;
}

static bool lease_valid(const gs_live_elector *e, int64_t now_us)
{
    return e->observed_at + (int64_t)e->observed.duration_s * 1000000 > now_us;
}

/* Send one request; the answer's body becomes the Lease kept when it is a 2xx. */
static int lease_do(gs_live_elector *e, const char *method, const char *path, const char *body, size_t len,
                    gs_live_response *rs, gs_error *err)
{
    gs_live_write_rq w = {.body = GS_STRBUF_INIT};
    int rc;
    if (!strcmp(method, "GET")) {
        memset(&w.rq, 0, sizeof w.rq);
        w.rq.method = "GET";
        w.rq.path = path;
        rc = 0;
    } else {
        rc = gs_live_write_prepare(&w, method, path, GS_LIVE_PATCH_NONE, body, len, NULL, err);
    }
    if (!rc)
        rc = gs_lw_send(e->send, e->send_ctx, e->client, &w.rq, rs, err);
    if (!rc) {
        gs_strbuf_reset(&e->lease);
        gs_strbuf_add(&e->lease, gs_strbuf_cstr(&rs->body), rs->body.len);
        if (e->lease.oom)
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    gs_live_write_rq_free(&w);
    return rc;
}

/* PUT the Lease kept with its spec = rec. 0 done, 1 conflict, -1 error. */
static int lease_update(gs_live_elector *e, const record *rec, gs_error *err)
{
    if (!e->lease.len)
        return gs_fail(err, GS_ERR_INTERNAL, "lease not initialized, call get or create first");
    gs_strbuf body = GS_STRBUF_INIT;
    gs_live_lease_record lr = {rec->holder, rec->duration_s, rec->acquire_us, rec->renew_us, rec->transitions};
    gs_live_response rs = {.body = GS_STRBUF_INIT};
    int rc = gs_live_lease_update_body(&body, e->lease.buf, e->lease.len, &lr, err);
    if (!rc)
        rc = lease_do(e, "PUT", e->path.buf, body.buf, body.len, &rs, err);
    if (rc && rs.http == 409)
        rc = 1;
    gs_live_response_free(&rs);
    gs_strbuf_free(&body);
    return rc;
}

/* GET the Lease: 0 with *rec (holder owned by the caller), 1 when it does not exist, -1. */
static int lease_get(gs_live_elector *e, record *rec, gs_error *err)
{
    gs_live_response rs = {.body = GS_STRBUF_INIT};
    int rc = lease_do(e, "GET", e->path.buf, NULL, 0, &rs, err);
    if (rc) {
        rc = rs.http == 404 ? 1 : -1;
        gs_live_response_free(&rs);
        return rc;
    }
    gs_live_response_free(&rs);
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_lease l;
    rc = gs_live_lease_parse(e->lease.buf, e->lease.len, &a, &l, err);
    if (!rc) {
        *rec = (record){strdup(l.holder), l.duration_s, l.transitions, l.acquire_us, l.renew_us};
        if (!rec->holder)
            rc = gs_fail(err, GS_ERR_NOMEM, "out of memory");
    } else {
        gs_error_prefix_path(err, e->path.buf);
    }
    gs_arena_free(&a);
    return rc;
}

int gs_live_elector_try_acquire_or_renew(gs_live_elector *e, int64_t now_us, gs_error *err)
{
    gs_error local;
    if (!err)
        err = &local;
    e->st.rounds++;
    int64_t wall = gs_lw_now(e->clock);
    record want = {e->identity, (int32_t)(e->duration_us / 1000000), 0, wall, wall};
    /* 1. fast path: the leader updates the Lease it holds, assuming it is still current */
    if (gs_live_elector_is_leader(e) && lease_valid(e, now_us) && e->lease.len) {
        want.acquire_us = e->observed.acquire_us;
        want.transitions = e->observed.transitions;
        gs_error e2;
        gs_error_clear(&e2);
        int rc = lease_update(e, &want, &e2);
        if (rc == 0) {
            set_observed(e, &want, now_us);
            e->st.renewed++;
            return 1;
        }
        if (rc == 1)
            e->st.conflicts++;
        want.acquire_us = wall;
        want.transitions = 0;
    }
    /* 2. get, or create */
    record old = {0};
    int rc = lease_get(e, &old, err);
    if (rc < 0)
        return failed(e, err);
    if (rc == 1) {
        gs_strbuf body = GS_STRBUF_INIT;
        gs_live_lease_record lr = {want.holder, want.duration_s, want.acquire_us, want.renew_us, 0};
        gs_strbuf_puts(&body, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{");
        gs_lw_member(&body, "name", e->name, true);
        gs_lw_member(&body, "namespace", e->ns, false);
        gs_strbuf_puts(&body, "},\"spec\":");
        gs_live_lease_spec_json(&body, &lr);
        gs_strbuf_putc(&body, '}');
        gs_live_response rs = {.body = GS_STRBUF_INIT};
        rc = body.oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory")
                      : lease_do(e, "POST", e->coll.buf, body.buf, body.len, &rs, err);
        int http = rs.http;
        gs_live_response_free(&rs);
        gs_strbuf_free(&body);
        if (rc) {
            if (http == 409) { /* another candidate created it first */
                e->st.conflicts++;
                return 0;
            }
            return failed(e, err);
        }
        set_observed(e, &want, now_us);
        e->st.acquired++;
        return 1;
    }
    /* 3. a record we have not seen: observed now */
    if (!e->observed_any || !same_record(&old, &e->observed))
        set_observed(e, &old, now_us);
    if (old.holder[0] && lease_valid(e, now_us) && !gs_live_elector_is_leader(e)) {
        free(old.holder);
        return 0;
    }
    /* 4. renew (ours) or take over (expired or released) */
    bool renew = gs_live_elector_is_leader(e);
    if (renew) {
        want.acquire_us = old.acquire_us;
        want.transitions = old.transitions;
    } else {
        want.transitions = old.transitions + 1;
    }
    free(old.holder);
    rc = lease_update(e, &want, err);
    if (rc == 1) {
        e->st.conflicts++;
        gs_error_clear(err);
        return 0;
    }
    if (rc)
        return failed(e, err);
    set_observed(e, &want, now_us);
    if (renew)
        e->st.renewed++;
    else
        e->st.acquired++;
    return 1;
}

int gs_live_elector_release(gs_live_elector *e, gs_error *err)
{
    gs_error local;
    if (!err)
        err = &local;
    for (int tries = 0; tries < RELEASE_TRIES; tries++) {
        record old = {0};
        int rc = lease_get(e, &old, err);
        if (rc == 1)
            return failed(e, err);
        if (rc < 0)
            return failed(e, err);
        if (!gs_live_elector_is_leader(e)) {
            free(old.holder);
            return 0;
        }
        int64_t wall = gs_lw_now(e->clock);
        record rel = {"", 1, old.transitions, wall, wall};
        free(old.holder);
        rc = lease_update(e, &rel, err);
        if (rc == 0) {
            set_observed(e, &rel, gs_lw_mono(e->clock));
            e->st.released++;
            return 0;
        }
        if (rc < 0)
            return failed(e, err);
        e->st.conflicts++; /* a renew in flight moved the resourceVersion: read again */
    }
    gs_fail(err, GS_ERR_IO, "leader election: releasing %s/%s kept conflicting", e->ns, e->name);
    return failed(e, err);
}

/* ---------------------------------------------------------------- the loop */

static bool keep(const gs_live_elector_callbacks *cb)
{
    return !cb || !cb->keep_running || cb->keep_running(cb->ctx);
}

/* Wait us, asking keep_running every 100 ms. false when told to stop. */
static bool wait_for(gs_live_elector *e, const gs_live_elector_callbacks *cb, int64_t us)
{
    while (us > 0) {
        if (!keep(cb))
            return false;
        int64_t step = us < 100000 ? us : 100000;
        gs_lw_sleep(e->clock, step);
        us -= step;
    }
    return keep(cb);
}

static void report(gs_live_elector *e, const gs_live_elector_callbacks *cb, char **reported)
{
    const char *now = gs_live_elector_leader(e);
    if (*reported && !strcmp(*reported, now))
        return;
    free(*reported);
    *reported = strdup(now);
    if (cb && cb->new_leader && *reported)
        cb->new_leader(cb->ctx, now);
}

int gs_live_elector_run(gs_live_elector *e, const gs_live_elector_callbacks *cb)
{
    char *reported = NULL;
    int result = 0;
    gs_error err;
    /* acquire: a round, then RetryPeriod jittered up to JitterFactor more (wait.JitterUntil) */
    for (;;) {
        if (!keep(cb))
            goto stopped;
        gs_error_clear(&err);
        int rc = gs_live_elector_try_acquire_or_renew(e, gs_lw_mono(e->clock), &err);
        report(e, cb, &reported);
        if (rc == 1)
            break;
        int64_t wait = e->retry_us + (int64_t)(gs_rng_double(&e->rng) * JITTER * (double)e->retry_us);
        if (!wait_for(e, cb, wait))
            goto stopped;
    }
    if (cb && cb->started_leading)
        cb->started_leading(cb->ctx);
    /* renew: every RetryPeriod a round; rounds failing for RenewDeadline lose the lease */
    for (;;) {
        int64_t deadline = gs_lw_mono(e->clock) + e->deadline_us;
        bool ok = false;
        for (;;) {
            if (!keep(cb))
                goto leading_stopped;
            gs_error_clear(&err);
            int64_t now = gs_lw_mono(e->clock);
            if (now >= deadline)
                break;
            ok = gs_live_elector_try_acquire_or_renew(e, now, &err) == 1;
            report(e, cb, &reported);
            if (ok)
                break;
            int64_t left = deadline - gs_lw_mono(e->clock);
            if (!wait_for(e, cb, left < e->retry_us ? left : e->retry_us))
                goto leading_stopped;
        }
        if (!ok) {
            result = 1;
            goto leading_stopped;
        }
        if (!wait_for(e, cb, e->retry_us))
            goto leading_stopped;
    }
leading_stopped:
    if (e->release_on_cancel) {
        gs_error_clear(&err);
        gs_live_elector_release(e, &err);
        report(e, cb, &reported);
    }
    if (cb && cb->stopped_leading)
        cb->stopped_leading(cb->ctx);
    free(reported);
    return result;
stopped:
    /* never led: client-go's Run still calls OnStoppedLeading (deferred) */
    if (cb && cb->stopped_leading)
        cb->stopped_leading(cb->ctx);
    free(reported);
    return 0;
}
