/*
 * write_event.c - an Event recorder (events.k8s.io/v1) after client-go's tools/events:
 * the Event a first occurrence creates, the series {count, lastObservedTime} a repeat
 * turns it into (a strategic merge patch), later repeats counted in a bounded LRU cache and
 * sent on a heartbeat (refresh 30 min, finish 6 min, as client-go's event_broadcaster).
 * Synchronous: each call sends what client-go's goroutines would send for it; failures
 * are returned and counted, never printed, never retried in a loop (client-go retries up
 * to 12 times, 10 s apart, in the background: a caller that wants that calls again).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpusched/live_write.h"
#include "live/write_int.h"
#include "util/json_int.h"

#define CACHE_DEFAULT 4096
#define REFRESH_DEFAULT (30LL * 60 * 1000000)
#define FINISH_DEFAULT (6LL * 60 * 1000000)

/* ---------------------------------------------------------------- bodies */

size_t gs_live_note_len(const char *note, bool *cut)
{
    *cut = false;
    if (!note)
        return 0;
    size_t n = strlen(note), i = 0, sent = 0;
    /* the bytes the server counts: the decoded JSON string (a byte that starts no UTF-8
     * sequence arrives as U+FFFD, three bytes) */
    while (i < n) {
        uint32_t cp;
        size_t k = gs_utf8_seq(note + i, n - i, &cp);
        sent += k ? k : 3;
        i += k ? k : 1;
    }
    if (sent <= GS_LIVE_NOTE_MAX)
        return n;
    *cut = true;
    size_t keep = GS_LIVE_NOTE_MAX - 4; /* room for " ..." */
    i = sent = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = gs_utf8_seq(note + i, n - i, &cp);
        size_t w = k ? k : 3;
        if (sent + w > keep)
            break;
        sent += w;
        i += k ? k : 1;
    }
    return i;
}

static void put_ref(gs_strbuf *out, const char *key, const gs_live_objref *r)
{
    gs_strbuf_putc(out, ',');
    gs_strbuf_json_str(out, key);
    gs_strbuf_puts(out, ":{");
    size_t start = out->len;
    gs_lw_member(out, "kind", r->kind, out->len == start);
    gs_lw_member(out, "namespace", r->namespace_, out->len == start);
    gs_lw_member(out, "name", r->name, out->len == start);
    gs_lw_member(out, "uid", r->uid, out->len == start);
    gs_lw_member(out, "apiVersion", r->api_version, out->len == start);
    gs_lw_member(out, "resourceVersion", r->resource_version, out->len == start);
    gs_lw_member(out, "fieldPath", r->field_path, out->len == start);
    gs_strbuf_putc(out, '}');
}

static int check_field(const char *what, const char *s, gs_error *err)
{
    if (!s || !*s)
        return gs_fail(err, GS_ERR_INVALID, "event: %s is required", what);
    if (strlen(s) > GS_LIVE_EVENT_FIELD_MAX)
        return gs_fail(err, GS_ERR_INVALID, "event: %s may not be more than %d bytes", what,
                       GS_LIVE_EVENT_FIELD_MAX);
    return 0;
}

static int check_event(const gs_live_event *ev, gs_error *err)
{
    if (!ev || !ev->regarding || !ev->regarding->name || !*ev->regarding->name)
        return gs_fail(err, GS_ERR_INVALID, "event: regarding needs a name");
    if (ev->regarding->namespace_ && strlen(ev->regarding->namespace_) > 253)
        return gs_fail(err, GS_ERR_INVALID, "event: regarding's namespace is longer than 253 bytes");
    if (ev->type != GS_LIVE_EVENT_NORMAL && ev->type != GS_LIVE_EVENT_WARNING)
        return gs_fail(err, GS_ERR_INVALID, "event: type must be Normal or Warning");
    if (check_field("reason", ev->reason, err) || check_field("action", ev->action, err))
        return -1;
    return 0;
}

int gs_live_event_body(gs_strbuf *out, const gs_live_event *ev, const char *name, const char *ns,
                       const char *controller, const char *instance, int64_t event_time_us,
                       int32_t series_count, int64_t last_observed_us, gs_error *err)
{
    gs_strbuf_reset(out);
    if (check_event(ev, err) || check_field("reportingController", controller, err) ||
        check_field("reportingInstance", instance, err))
        return -1;
    if (!name || !*name || !ns || !*ns)
        return gs_fail(err, GS_ERR_INVALID, "event: a name and a namespace are needed");
    char t[32];
    gs_strbuf_puts(out, "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{");
    gs_lw_member(out, "name", name, true);
    gs_lw_member(out, "namespace", ns, false);
    gs_live_microtime(t, event_time_us);
    gs_strbuf_printf(out, "},\"eventTime\":\"%s\"", t);
    if (series_count >= 2) {
        gs_live_microtime(t, last_observed_us);
        gs_strbuf_printf(out, ",\"series\":{\"count\":%d,\"lastObservedTime\":\"%s\"}", (int)series_count, t);
    }
    gs_lw_member(out, "reportingController", controller, false);
    gs_lw_member(out, "reportingInstance", instance, false);
    gs_lw_member(out, "action", ev->action, false);
    gs_lw_member(out, "reason", ev->reason, false);
    put_ref(out, "regarding", ev->regarding);
    if (ev->related)
        put_ref(out, "related", ev->related);
    if (ev->note) {
        bool cut;
        size_t n = gs_live_note_len(ev->note, &cut);
        gs_strbuf_puts(out, ",\"note\":");
        if (cut) {
            gs_strbuf tmp = GS_STRBUF_INIT;
            gs_strbuf_add(&tmp, ev->note, n);
            gs_strbuf_puts(&tmp, " ...");
            gs_strbuf_json_strn(out, gs_strbuf_cstr(&tmp), tmp.len);
            gs_strbuf_free(&tmp);
        } else {
            gs_strbuf_json_strn(out, ev->note, n);
        }
    }
    gs_strbuf_printf(out, ",\"type\":\"%s\"}", ev->type == GS_LIVE_EVENT_WARNING ? "Warning" : "Normal");
    return out->oom ? gs_fail(err, GS_ERR_NOMEM, "out of memory") : 0;
}

/* ---------------------------------------------------------------- answers */

static char *str_of(gs_arena *a, const gs_jv *v)
{
    return v && v->t == GS_JSTR ? gs_arena_strndup(a, v->s, v->n) : NULL;
}

static int time_of(const gs_jv *v, int64_t *us)
{
    *us = 0;
    if (!v || v->t == GS_JNULL)
        return 0;
    return v->t == GS_JSTR && !gs_live_microtime_parse(v->s, us) ? 0 : -1;
}

static int int32_of(const gs_jv *v, int32_t *out)
{
    int64_t x;
    *out = 0;
    if (!v || v->t == GS_JNULL)
        return 0;
    if (v->t != GS_JNUM || gs_parse_i64(v->s, v->n, &x) || x < INT32_MIN || x > INT32_MAX)
        return -1;
    *out = (int32_t)x;
    return 0;
}

int gs_live_event_parse(const char *json, size_t len, gs_arena *a, gs_live_event_info *out,
                        gs_error *err)
{
    memset(out, 0, sizeof *out);
    gs_arena tmp;
    gs_arena_init(&tmp, 0);
    gs_jv root;
    gs_json_limits lim = {.max_depth = 64, .max_string = 1u << 20};
    int rc = -1;
    if (gs_json_parse("event", 1, json, len, &lim, &tmp, &root, err))
        goto out;
    const gs_jv *md = gs_json_get(&root, "metadata"), *name = gs_json_get(md, "name");
    if (root.t != GS_JOBJ || !name || name->t != GS_JSTR) {
        gs_error_set(err, GS_ERR_INVALID, "event", 1, 1, NULL, "the answer is not an object with metadata.name");
        goto out;
    }
    const gs_jv *series = gs_json_get(&root, "series"), *reg = gs_json_get(&root, "regarding");
    out->name = str_of(a, name);
    out->namespace_ = str_of(a, gs_json_get(md, "namespace"));
    out->uid = str_of(a, gs_json_get(md, "uid"));
    out->resource_version = str_of(a, gs_json_get(md, "resourceVersion"));
    out->reason = str_of(a, gs_json_get(&root, "reason"));
    out->action = str_of(a, gs_json_get(&root, "action"));
    out->note = str_of(a, gs_json_get(&root, "note"));
    out->type = str_of(a, gs_json_get(&root, "type"));
    out->reporting_controller = str_of(a, gs_json_get(&root, "reportingController"));
    out->reporting_instance = str_of(a, gs_json_get(&root, "reportingInstance"));
    out->regarding_kind = str_of(a, gs_json_get(reg, "kind"));
    out->regarding_namespace = str_of(a, gs_json_get(reg, "namespace"));
    out->regarding_name = str_of(a, gs_json_get(reg, "name"));
    out->regarding_uid = str_of(a, gs_json_get(reg, "uid"));
    if (!out->name) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        goto out;
    }
    const gs_jv *bad = NULL;
    if (time_of(gs_json_get(&root, "eventTime"), &out->event_time_us))
        bad = gs_json_get(&root, "eventTime");
    else if (int32_of(gs_json_get(series, "count"), &out->series_count))
        bad = gs_json_get(series, "count");
    else if (time_of(gs_json_get(series, "lastObservedTime"), &out->series_last_observed_us))
        bad = gs_json_get(series, "lastObservedTime");
    if (bad) {
        int line, col;
        gs_json_where(json, 1, bad, &line, &col);
        gs_error_set(err, GS_ERR_INVALID, "event", line, col, NULL, "expected %s, got %s",
                     bad->t == GS_JNUM || bad == gs_json_get(series, "count") ? "a 32-bit integer" : "a MicroTime",
                     gs_json_type_name((gs_jtype)bad->t));
        goto out;
    }
    rc = 0;
out:
    gs_arena_free(&tmp);
    return rc;
}

/* ---------------------------------------------------------------- the recorder */

/* The fields of a key in this order: client-go's eventKey (action, reason, reporting
 * controller (the recorder's own), regarding, related) first, then what it does not
 * compare (type and note: a repeat with another note joins the series, which keeps the
 * first occurrence's note, as client-go's). matchlen is the length of the first part. */
enum { F_REASON, F_ACTION, F_REG, F_REL = F_REG + 7, F_RELREF = F_REL + 1, F_TYPE = F_RELREF + 7, F_NOTE, F_N };

typedef struct entry {
    char *key;            /* F_N fields: a presence byte, then the text and a NUL */
    size_t keylen, matchlen;
    uint64_t hash;
    char name[300], ns[256];
    int64_t event_time_us, first_mono;
    int32_t count, written; /* count 0: no series yet */
    int64_t last_us, last_mono;
    int32_t prev, next, chain; /* LRU list, hash chain; -1 = none */
    bool used;
} entry;

struct gs_live_recorder {
    gs_live_client *client;
    gs_live_send_fn send;
    void *send_ctx;
    const gs_live_clock *clock;
    char *controller, *instance;
    size_t cap;
    entry *e;
    int32_t *bucket;      /* nbucket heads */
    size_t nbucket;
    int32_t head, tail, free_; /* most recent, least recent, free list (through next) */
    int64_t refresh_us, finish_us, last_refresh, last_finish;
    gs_rng rng;
    gs_live_recorder_stats st;
};

static void fail_count(gs_live_recorder *r, const gs_error *e)
{
    r->st.failed++;
    if (e)
        r->st.last_error = *e;
}

static void key_put(gs_strbuf *k, const char *s)
{
    if (!s) {
        gs_strbuf_putc(k, 0);
        return;
    }
    gs_strbuf_putc(k, 1);
    gs_strbuf_add(k, s, strlen(s) + 1);
}

static size_t key_of(gs_strbuf *k, const gs_live_event *ev)
{
    key_put(k, ev->reason);
    key_put(k, ev->action);
    const gs_live_objref *refs[2] = {ev->regarding, ev->related};
    for (int i = 0; i < 2; i++) {
        const gs_live_objref *r = refs[i];
        if (i == 1)
            key_put(k, r ? "" : NULL);
        static const gs_live_objref none;
        if (!r)
            r = &none;
        key_put(k, r->api_version);
        key_put(k, r->kind);
        key_put(k, r->namespace_);
        key_put(k, r->name);
        key_put(k, r->uid);
        key_put(k, r->resource_version);
        key_put(k, r->field_path);
    }
    size_t matchlen = k->len;
    key_put(k, ev->type == GS_LIVE_EVENT_WARNING ? "Warning" : "Normal");
    key_put(k, ev->note);
    return matchlen;
}

/* The event back from its key (pointers into the key). */
static void event_of(const entry *en, gs_live_event *ev, gs_live_objref *reg, gs_live_objref *rel)
{
    const char *f[F_N];
    const char *p = en->key;
    for (int i = 0; i < F_N; i++) {
        if (*p++) {
            f[i] = p;
            p += strlen(p) + 1;
        } else {
            f[i] = NULL;
        }
    }
    *reg = (gs_live_objref){f[F_REG], f[F_REG + 1], f[F_REG + 2], f[F_REG + 3], f[F_REG + 4], f[F_REG + 5], f[F_REG + 6]};
    *rel = (gs_live_objref){f[F_RELREF], f[F_RELREF + 1], f[F_RELREF + 2], f[F_RELREF + 3], f[F_RELREF + 4],
                            f[F_RELREF + 5], f[F_RELREF + 6]};
    *ev = (gs_live_event){reg, f[F_REL] ? rel : NULL,
                          !strcmp(f[F_TYPE], "Warning") ? GS_LIVE_EVENT_WARNING : GS_LIVE_EVENT_NORMAL,
                          f[F_REASON], f[F_ACTION], f[F_NOTE]};
}

gs_live_recorder *gs_live_recorder_new(gs_live_client *c, const gs_live_recorder_opts *o, gs_error *err)
{
    if (!o || check_field("reportingController", o->reporting_controller, err) ||
        check_field("reportingInstance", o->reporting_instance, err)) {
        if (!o)
            gs_fail(err, GS_ERR_INVALID, "event recorder: options are required");
        return NULL;
    }
    if (!c && !o->send) {
        gs_fail(err, GS_ERR_INVALID, "event recorder: a client is required");
        return NULL;
    }
    gs_live_recorder *r = calloc(1, sizeof *r);
    if (!r) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    r->client = c;
    r->send = o->send;
    r->send_ctx = o->send_ctx;
    r->clock = o->clock;
    r->cap = o->cache_size ? o->cache_size : CACHE_DEFAULT;
    if (r->cap > (1u << 24))
        r->cap = 1u << 24;
    r->refresh_us = o->refresh_us > 0 ? o->refresh_us : REFRESH_DEFAULT;
    r->finish_us = o->finish_us > 0 ? o->finish_us : FINISH_DEFAULT;
    for (r->nbucket = 16; r->nbucket < 2 * r->cap; r->nbucket *= 2)
        ;
    r->controller = strdup(o->reporting_controller);
    r->instance = strdup(o->reporting_instance);
    r->e = calloc(r->cap, sizeof *r->e);
    r->bucket = malloc(r->nbucket * sizeof *r->bucket);
    if (!r->controller || !r->instance || !r->e || !r->bucket) {
        gs_live_recorder_free(r);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < r->nbucket; i++)
        r->bucket[i] = -1;
    for (size_t i = 0; i < r->cap; i++)
        r->e[i].next = i + 1 < r->cap ? (int32_t)(i + 1) : -1;
    r->free_ = 0;
    r->head = r->tail = -1;
    r->last_refresh = r->last_finish = gs_lw_mono(r->clock);
    gs_rng_seed(&r->rng, (uint64_t)gs_lw_now(r->clock) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)r);
    r->st.cache_size = r->cap;
    return r;
}

void gs_live_recorder_free(gs_live_recorder *r)
{
    if (!r)
        return;
    if (r->e)
        for (size_t i = 0; i < r->cap; i++)
            free(r->e[i].key);
    free(r->e);
    free(r->bucket);
    free(r->controller);
    free(r->instance);
    free(r);
}

void gs_live_recorder_stats_get(const gs_live_recorder *r, gs_live_recorder_stats *out)
{
    *out = r->st;
}

static void lru_unlink(gs_live_recorder *r, int32_t i)
{
    entry *en = &r->e[i];
    if (en->prev >= 0)
        r->e[en->prev].next = en->next;
    else
        r->head = en->next;
    if (en->next >= 0)
        r->e[en->next].prev = en->prev;
    else
        r->tail = en->prev;
}

static void lru_front(gs_live_recorder *r, int32_t i)
{
    entry *en = &r->e[i];
    en->prev = -1;
    en->next = r->head;
    if (r->head >= 0)
        r->e[r->head].prev = i;
    r->head = i;
    if (r->tail < 0)
        r->tail = i;
}

static void remove_entry(gs_live_recorder *r, int32_t i)
{
    entry *en = &r->e[i];
    int32_t *pp = &r->bucket[en->hash & (r->nbucket - 1)];
    while (*pp != i)
        pp = &r->e[*pp].chain;
    *pp = en->chain;
    lru_unlink(r, i);
    free(en->key);
    memset(en, 0, sizeof *en);
    en->next = r->free_;
    r->free_ = i;
    r->st.cached--;
}

static int events_path(gs_strbuf *p, const char *ns, const char *name, gs_error *err)
{
    return gs_live_path(p, "events.k8s.io", "v1", "events", ns, name, NULL, err);
}

/* POST the event of en (with its series when it has one). */
static int send_create(gs_live_recorder *r, entry *en, gs_error *err)
{
    gs_live_event ev;
    gs_live_objref reg, rel;
    event_of(en, &ev, &reg, &rel);
    gs_strbuf body = GS_STRBUF_INIT, path = GS_STRBUF_INIT;
    gs_live_response rs = {.body = GS_STRBUF_INIT};
    gs_live_write_rq w = {.body = GS_STRBUF_INIT};
    int rc = gs_live_event_body(&body, &ev, en->name, en->ns, r->controller, r->instance, en->event_time_us,
                                en->count, en->last_us, err);
    if (!rc)
        rc = events_path(&path, en->ns, NULL, err);
    if (!rc)
        rc = gs_live_write_prepare(&w, "POST", path.buf, GS_LIVE_PATCH_NONE, body.buf, body.len, NULL, err);
    if (!rc)
        rc = gs_lw_send(r->send, r->send_ctx, r->client, &w.rq, &rs, err);
    if (!rc) {
        r->st.created++;
        en->written = en->count;
    } else if (rs.http == 409) {
        rc = 1; /* AlreadyExists */
    }
    gs_live_write_rq_free(&w);
    gs_live_response_free(&rs);
    gs_strbuf_free(&body);
    gs_strbuf_free(&path);
    return rc;
}

/* Send en's series (client-go's recordEvent for a series): a strategic merge patch; a 404
 * creates the Event again with its series; AlreadyExists then: the patch once more. */
static int send_series(gs_live_recorder *r, entry *en, gs_error *err)
{
    char t[32];
    gs_live_microtime(t, en->last_us);
    char body[128];
    int n = snprintf(body, sizeof body, "{\"series\":{\"count\":%d,\"lastObservedTime\":\"%s\"}}", (int)en->count, t);
    gs_strbuf path = GS_STRBUF_INIT;
    gs_live_response rs = {.body = GS_STRBUF_INIT};
    gs_live_write_rq w = {.body = GS_STRBUF_INIT};
    int rc = events_path(&path, en->ns, en->name, err);
    if (!rc)
        rc = gs_live_write_prepare(&w, "PATCH", path.buf, GS_LIVE_PATCH_STRATEGIC, body, (size_t)n, NULL, err);
    for (int attempt = 0; !rc && attempt < 2; attempt++) {
        rc = gs_lw_send(r->send, r->send_ctx, r->client, &w.rq, &rs, err);
        if (!rc) {
            r->st.patched++;
            en->written = en->count;
            break;
        }
        if (rs.http != 404)
            break;
        rc = send_create(r, en, err);
        if (rc != 1)
            break;
        rc = 0; /* created meanwhile by someone: patch it */
    }
    if (rc > 0)
        rc = gs_fail(err, GS_ERR_IO, "event %s/%s: created and deleted again while its series was sent", en->ns,
                     en->name);
    gs_live_write_rq_free(&w);
    gs_live_response_free(&rs);
    gs_strbuf_free(&path);
    return rc;
}

static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && ch != '-' && ch != '.')
            return false;
        if (!alnum && (i == 0 || i + 1 == n || s[i - 1] == '.' || (ch == '.' && s[i - 1] == '-') ||
                       (ch == '.' && s[i + 1] == '-')))
            return false;
    }
    return true;
}

static void event_name(gs_live_recorder *r, const char *regarding, int64_t now_us, char *out, size_t cap)
{
    snprintf(out, cap, "%s.%llx", regarding, (unsigned long long)now_us * 1000ull);
    if (strlen(regarding) + 18 >= cap || !dns_subdomain(out)) {
        /* client-go: a random UUID when "<name>.<nanos>" is not a valid name */
        uint64_t a = gs_rng_next(&r->rng), b = gs_rng_next(&r->rng);
        a = (a & ~0xf000ull) | 0x4000ull;                 /* version 4 */
        b = (b & 0x3fffffffffffffffull) | 0x8000000000000000ull; /* variant */
        snprintf(out, cap, "%08llx-%04llx-%04llx-%04llx-%012llx", (unsigned long long)(a >> 32),
                 (unsigned long long)((a >> 16) & 0xffff), (unsigned long long)(a & 0xffff),
                 (unsigned long long)(b >> 48), (unsigned long long)(b & 0xffffffffffffull));
    }
}

int gs_live_recorder_event(gs_live_recorder *r, const gs_live_event *ev, gs_error *err)
{
    gs_error local;
    if (!err)
        err = &local;
    r->st.recorded++;
    if (check_event(ev, err)) {
        fail_count(r, err);
        return -1;
    }
    int64_t now = gs_lw_now(r->clock), mono = gs_lw_mono(r->clock);
    gs_strbuf k = GS_STRBUF_INIT;
    size_t matchlen = key_of(&k, ev);
    if (k.oom) {
        gs_strbuf_free(&k);
        fail_count(r, NULL);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    uint64_t h = gs_hash_bytes(k.buf, matchlen);
    int32_t i = r->bucket[h & (r->nbucket - 1)];
    while (i >= 0 &&
           !(r->e[i].hash == h && r->e[i].matchlen == matchlen && !memcmp(r->e[i].key, k.buf, matchlen)))
        i = r->e[i].chain;
    int rc = 0;
    if (i >= 0) {
        gs_strbuf_free(&k);
        entry *en = &r->e[i];
        lru_unlink(r, i);
        lru_front(r, i);
        en->last_us = now;
        en->last_mono = mono;
        if (en->count >= 2) {
            en->count++;
            r->st.aggregated++;
            return 0;
        }
        en->count = 2;
        rc = send_series(r, en, err);
        if (rc)
            fail_count(r, err);
        return rc;
    }
    if (r->free_ < 0) { /* full: the least recently seen goes, its unsent count first */
        int32_t old = r->tail;
        if (r->e[old].count > r->e[old].written) {
            gs_error e2;
            gs_error_clear(&e2);
            if (send_series(r, &r->e[old], &e2))
                fail_count(r, &e2);
        }
        remove_entry(r, old);
        r->st.evicted++;
    }
    i = r->free_;
    entry *en = &r->e[i];
    r->free_ = en->next;
    memset(en, 0, sizeof *en);
    en->used = true;
    en->keylen = k.len;
    en->matchlen = matchlen;
    en->key = gs_strbuf_detach(&k);
    en->hash = h;
    const char *rns = ev->regarding->namespace_;
    snprintf(en->ns, sizeof en->ns, "%s", rns && *rns ? rns : "default");
    event_name(r, ev->regarding->name, now, en->name, sizeof en->name);
    en->event_time_us = now;
    en->first_mono = en->last_mono = mono;
    en->last_us = now;
    en->chain = r->bucket[h & (r->nbucket - 1)];
    r->bucket[h & (r->nbucket - 1)] = i;
    lru_front(r, i);
    r->st.cached++;
    rc = send_create(r, en, err);
    if (rc) {
        if (rc > 0)
            rc = gs_fail(err, GS_ERR_INVALID, "event %s/%s already exists", en->ns, en->name);
        fail_count(r, err);
    }
    return rc;
}

int gs_live_recorder_tick(gs_live_recorder *r, gs_error *err)
{
    int64_t mono = gs_lw_mono(r->clock);
    int rc = 0;
    gs_error e2;
    if (mono - r->last_refresh >= r->refresh_us) {
        r->last_refresh = mono;
        for (int32_t i = r->head; i >= 0; i = r->e[i].next) {
            if (r->e[i].count < 2)
                continue;
            gs_error_clear(&e2);
            if (send_series(r, &r->e[i], &e2)) {
                fail_count(r, &e2);
                if (!rc && err)
                    *err = e2;
                rc = -1;
            }
        }
    }
    if (mono - r->last_finish >= r->finish_us) {
        r->last_finish = mono;
        for (int32_t i = r->head, next; i >= 0; i = next) {
            next = r->e[i].next;
            entry *en = &r->e[i];
            if (en->count >= 2 ? en->last_mono >= mono - r->finish_us : en->first_mono >= mono - r->finish_us)
                continue;
            if (en->count > en->written) {
                gs_error_clear(&e2);
                if (send_series(r, en, &e2)) { /* kept: the next finish tries again */
                    fail_count(r, &e2);
                    if (!rc && err)
                        *err = e2;
                    rc = -1;
                    continue;
                }
            }
            remove_entry(r, i);
            r->st.finished++;
        }
    }
    return rc;
}

int gs_live_recorder_flush(gs_live_recorder *r, gs_error *err)
{
    int rc = 0;
    gs_error e2;
    for (int32_t i = r->head; i >= 0; i = r->e[i].next) {
        if (r->e[i].count <= r->e[i].written)
            continue;
        gs_error_clear(&e2);
        if (send_series(r, &r->e[i], &e2)) {
            fail_count(r, &e2);
            if (!rc && err)
                *err = e2;
            rc = -1;
        }
    }
    return rc;
}
