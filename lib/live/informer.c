/*
 * informer.c - list + watch per kind into the shared object store, one thread per kind
 * (docs/live.md "Informers"). The recipe is client-go's reflector: list (the streaming
 * list, sendInitialEvents, where the server has it), watch from the list's
 * resourceVersion with bookmarks, re-watch from the last resourceVersion seen when a watch
 * ends, relist on 410, back off exponentially with jitter after failures.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpusched/live.h"
#include "live/live_int.h"

typedef struct kstate {
    gs_live_informer *inf;
    gs_live_kind k;
    bool on;                 /* in the informer's kinds */
    pthread_t th;
    bool running;
    gs_live_client *c;
    char path[512];
    /* the reflector's state (the kind's thread only, or the step caller) */
    char rv[GS_LIVE_RV_MAX];
    bool need_list;          /* not synced yet, or a 410 */
    bool refused;            /* an optional kind's last list was refused (404/403) */
    int watch_list;          /* 1 try the streaming list, 0 the server has none */
    long backoff_ms;
    int64_t last_backoff_ms; /* monotonic time of the last backoff */
    uint64_t rng;
    /* shared with readers: under inf->mu */
    gs_live_informer_stats st;
} kstate;

struct gs_live_informer {
    gs_live_config *cfg;
    gs_live_store *store;
    gs_live_informer_opts o;
    gs_live_client_opts copts;
    bool have_copts;
    char *ns;
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* a kind synced */
    int stop;                /* atomic: the threads' stop flag (their clients see it) */
    kstate k[GS_LIVE_NKINDS];
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool stopping(gs_live_informer *inf) { return __atomic_load_n(&inf->stop, __ATOMIC_RELAXED) != 0; }

static uint64_t rnd(kstate *ks)
{
    uint64_t x = ks->rng += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void note_error(kstate *ks, const gs_error *e)
{
    pthread_mutex_lock(&ks->inf->mu);
    snprintf(ks->st.last_error, sizeof ks->st.last_error, "%s", e && e->msg[0] ? e->msg : "unknown error");
    pthread_mutex_unlock(&ks->inf->mu);
}

static void bump(kstate *ks, uint64_t *field, uint64_t by)
{
    pthread_mutex_lock(&ks->inf->mu);
    *field += by;
    pthread_mutex_unlock(&ks->inf->mu);
}

gs_live_informer *gs_live_informer_new(gs_live_config *cfg, gs_live_store *st, const gs_live_informer_opts *o,
                                       gs_error *err)
{
    gs_live_informer *inf = calloc(1, sizeof *inf);
    if (!inf) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    inf->cfg = cfg;
    inf->store = st;
    if (o)
        inf->o = *o;
    if (inf->o.client) {
        inf->copts = *inf->o.client;
        inf->have_copts = true;
    }
    inf->o.client = NULL;
    if (!inf->o.kinds)
        inf->o.kinds = GS_LIVE_SNAPSHOT_KINDS;
    if (!inf->o.backoff_initial_ms)
        inf->o.backoff_initial_ms = 800;
    if (!inf->o.backoff_max_ms)
        inf->o.backoff_max_ms = 30000;
    if (!inf->o.backoff_reset_ms)
        inf->o.backoff_reset_ms = 120000;
    if (inf->o.namespace_ && inf->o.namespace_[0] && !(inf->ns = strdup(inf->o.namespace_))) {
        free(inf);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    inf->o.namespace_ = inf->ns;
    pthread_mutex_init(&inf->mu, NULL);
    pthread_cond_init(&inf->cv, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        kstate *ks = &inf->k[k];
        ks->inf = inf;
        ks->k = (gs_live_kind)k;
        ks->on = (inf->o.kinds & GS_LIVE_KIND_BIT(k)) != 0;
        ks->need_list = true;
        ks->watch_list = inf->o.no_watch_list ? 0 : 1;
        ks->backoff_ms = inf->o.backoff_initial_ms;
        ks->rng = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull + (uint64_t)k * 0x632be59bd9b4e019ull + (uint64_t)ts.tv_sec;
        if (!ks->on)
            continue;
        const gs_live_kind_info *ki = gs_live_kind_get(ks->k);
        if (!ki || !gs_live_kind_path(ks->k, ki->namespaced ? inf->ns : NULL, ks->path, sizeof ks->path)) {
            gs_fail(err, GS_ERR_INVALID, "informer: no collection path for kind %d", k);
            gs_live_informer_free(inf);
            return NULL;
        }
    }
    if (inf->o.kinds >= GS_LIVE_KIND_BIT(GS_LIVE_NKINDS)) {
        gs_fail(err, GS_ERR_INVALID, "informer: unknown kinds in the mask 0x%x", (unsigned)inf->o.kinds);
        gs_live_informer_free(inf);
        return NULL;
    }
    return inf;
}

static int ensure_client(kstate *ks, gs_error *err)
{
    if (ks->c)
        return 0;
    gs_live_informer *inf = ks->inf;
    ks->c = gs_live_client_new(inf->cfg, inf->have_copts ? &inf->copts : NULL, err);
    if (!ks->c)
        return -1;
    gs_live_client_set_stop(ks->c, &inf->stop);
    return 0;
}

static void mark_synced(kstate *ks, bool watch_list)
{
    gs_live_informer *inf = ks->inf;
    pthread_mutex_lock(&inf->mu);
    if (ks->st.lists)
        ks->st.relists++;
    ks->st.lists++;
    ks->st.synced = true;
    ks->st.watch_list = watch_list;
    _Static_assert(sizeof ks->st.resource_version == sizeof ks->rv, "resourceVersion buffers");
    memcpy(ks->st.resource_version, ks->rv, sizeof ks->rv);
    pthread_cond_broadcast(&inf->cv);
    pthread_mutex_unlock(&inf->mu);
    ks->need_list = false;
}

/* ---------------------------------------------------------------- events */

typedef struct wstate {
    kstate *ks;
    bool listing;            /* a streaming list before its end bookmark */
    gs_error store_err;
} wstate;

static int on_event(void *ctx, const gs_live_watch_event *ev, gs_error *err)
{
    (void)err;
    wstate *w = ctx;
    kstate *ks = w->ks;
    gs_live_store *st = ks->inf->store;
    int rc = 0;
    switch (ev->type) {
    case GS_LIVE_WATCH_ADDED:
    case GS_LIVE_WATCH_MODIFIED:
        rc = gs_live_store_put(st, ks->k, ev->object, ev->object_len, &w->store_err);
        break;
    case GS_LIVE_WATCH_DELETED:
        rc = gs_live_store_delete(st, ks->k, ev->object, ev->object_len, &w->store_err);
        break;
    case GS_LIVE_WATCH_BOOKMARK:
        bump(ks, &ks->st.bookmarks, 1);
        if (ev->resource_version[0])
            memcpy(ks->rv, ev->resource_version, sizeof ks->rv);
        if (w->listing && ev->initial_events_end) {
            gs_live_store_replace_end(st, ks->k);
            w->listing = false;
            mark_synced(ks, true);
        }
        return 0;
    case GS_LIVE_WATCH_ERROR:
        return 0; /* gs_live_watch handles them */
    }
    if (rc) {
        if (w->store_err.code == GS_ERR_NOMEM) {
            *err = w->store_err;
            return -1;
        }
        bump(ks, &ks->st.store_errors, 1); /* an object the store refuses: skipped */
        note_error(ks, &w->store_err);
    } else {
        bump(ks, &ks->st.events, 1);
    }
    if (ev->resource_version[0])
        memcpy(ks->rv, ev->resource_version, sizeof ks->rv);
    return 0;
}

/* ---------------------------------------------------------------- list */

static int do_list(kstate *ks, gs_error *err)
{
    char rv[GS_LIVE_RV_MAX];
    /* client-go lists from the watch cache (resourceVersion=0) at first and after a
     * 410 asks for the latest (""); a consistent read from the cache (1.31+) is as cheap,
     * so the latest always: the store never goes back in time */
    int rc = gs_live_store_list(ks->c, ks->inf->store, ks->k, ks->path, ks->inf->o.page_limit, rv, sizeof rv, err);
    if (rc < 0)
        return -1;
    memcpy(ks->rv, rv, sizeof ks->rv);
    mark_synced(ks, false);
    ks->refused = rc == 1;
    if (rc == 1) {
        /* an optional kind not served or not allowed (404/403): synced as none, listed
         * again after the backoff (the API may be turned on, the role granted) */
        ks->need_list = true;
        ks->watch_list = 0;
        ks->rv[0] = '\0';
    }
    return 0;
}

/* ---------------------------------------------------------------- watch */

static int do_watch(kstate *ks, bool initial, gs_error *err)
{
    gs_live_informer *inf = ks->inf;
    gs_live_watch_opts wo = {
        .resource_version = initial ? NULL : ks->rv,
        .send_initial_events = initial,
        .timeout_s = inf->o.watch_timeout_s,
        .idle_ms = inf->o.idle_ms,
        .stop = &inf->stop,
    };
    wstate w = {.ks = ks, .listing = initial};
    if (initial)
        gs_live_store_replace_begin(inf->store, ks->k);
    gs_live_watch_result res;
    int rc = gs_live_watch(ks->c, ks->path, &wo, on_event, &w, &res, err);
    if (res.http >= 200 && res.http < 300)
        bump(ks, &ks->st.watches, 1);
    if (rc) {
        /* a server without the streaming list refuses the parameters (400/422 Invalid,
         * or a 403/501 from something in between): paged lists from now on */
        if (initial && res.http >= 400 && res.http < 600 && res.http != 401 && res.http != 429 &&
            res.http != 410 && res.http < 500) {
            ks->watch_list = 0;
            if (err)
                gs_error_clear(err);
            return 1; /* try again at once with a paged list */
        }
        return -1;
    }
    if (res.end == GS_LIVE_END_GONE) {
        bump(ks, &ks->st.gone, 1);
        ks->need_list = true;
        return 0;
    }
    if (w.listing) {
        /* the streaming list ended before its end bookmark: an old server that ignored
         * sendInitialEvents sends none; list again, with pages when it never came */
        if (res.end == GS_LIVE_END_CLOSED && !res.initial_events_end && res.events == 0)
            ks->watch_list = 0;
        ks->need_list = true;
        if (res.end == GS_LIVE_END_STOPPED)
            return 0;
        return gs_fail(err, GS_ERR_IO, "the streaming list of %s ended before its initial-events-end bookmark",
                       ks->path);
    }
    pthread_mutex_lock(&inf->mu);
    _Static_assert(sizeof ks->st.resource_version == sizeof ks->rv, "resourceVersion buffers");
    memcpy(ks->st.resource_version, ks->rv, sizeof ks->rv);
    pthread_mutex_unlock(&inf->mu);
    return 0;
}

int gs_live_informer_step(gs_live_informer *inf, gs_live_kind k, gs_error *err)
{
    if ((int)k < 0 || k >= GS_LIVE_NKINDS || !inf->k[k].on)
        return gs_fail(err, GS_ERR_INVALID, "informer: kind %d is not one of its kinds", (int)k);
    kstate *ks = &inf->k[k];
    if (ensure_client(ks, err))
        return -1;
    if (!ks->need_list && ks->rv[0])
        return do_watch(ks, false, err);
    if (ks->watch_list) {
        int rc = do_watch(ks, true, err);
        if (rc <= 0)
            return rc;
    }
    return do_list(ks, err);
}

/* ---------------------------------------------------------------- threads */

static bool nap(gs_live_informer *inf, long ms)
{
    int64_t until = mono_ms() + ms;
    while (!stopping(inf)) {
        int64_t left = until - mono_ms();
        if (left <= 0)
            return true;
        struct timespec ts = {0, (left > 100 ? 100 : left) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void *run(void *arg)
{
    kstate *ks = arg;
    gs_live_informer *inf = ks->inf;
    while (!stopping(inf)) {
        gs_error err;
        gs_error_clear(&err);
        int64_t t0 = mono_ms();
        uint64_t events0 = ks->st.events + ks->st.bookmarks; /* this thread writes them */
        int rc = gs_live_informer_step(inf, ks->k, &err);
        if (stopping(inf))
            break;
        int64_t now = mono_ms();
        bool quick_empty = !rc && now - t0 < 1000 && ks->st.events + ks->st.bookmarks == events0 && !ks->need_list;
        if (!rc && !quick_empty && !ks->refused)
            continue; /* a watch ended as watches do, or a 410 asks for a list: at once (an
                       * optional kind refused is listed again after the backoff) */
        if (rc) {
            note_error(ks, &err);
            bump(ks, &ks->st.reconnects, 1);
        }
        /* client-go's reflector: 800 ms doubling to 30 s, jitter 1.0 (up to as much
         * again), back to the start after 2 minutes without a backoff */
        if (ks->last_backoff_ms && now - ks->last_backoff_ms > inf->o.backoff_reset_ms)
            ks->backoff_ms = inf->o.backoff_initial_ms;
        long wait = ks->backoff_ms + (long)(rnd(ks) % (uint64_t)(ks->backoff_ms + 1));
        ks->last_backoff_ms = now;
        ks->backoff_ms = ks->backoff_ms * 2 > inf->o.backoff_max_ms ? inf->o.backoff_max_ms : ks->backoff_ms * 2;
        if (!nap(inf, wait))
            break;
    }
    return NULL;
}

int gs_live_informer_start(gs_live_informer *inf, gs_error *err)
{
    gs_live_informer_stop(inf);
    __atomic_store_n(&inf->stop, 0, __ATOMIC_RELAXED);
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        kstate *ks = &inf->k[k];
        if (!ks->on)
            continue;
        if (ensure_client(ks, err)) {
            gs_live_informer_stop(inf);
            return -1;
        }
        int e = pthread_create(&ks->th, NULL, run, ks);
        if (e) {
            gs_live_informer_stop(inf);
            return gs_fail(err, GS_ERR_IO, "informer: cannot start a thread: %s", strerror(e));
        }
        ks->running = true;
    }
    return 0;
}

void gs_live_informer_stop(gs_live_informer *inf)
{
    if (!inf)
        return;
    __atomic_store_n(&inf->stop, 1, __ATOMIC_RELAXED);
    for (int k = 0; k < GS_LIVE_NKINDS; k++) {
        kstate *ks = &inf->k[k];
        if (ks->running) {
            pthread_join(ks->th, NULL);
            ks->running = false;
        }
    }
}

void gs_live_informer_free(gs_live_informer *inf)
{
    if (!inf)
        return;
    gs_live_informer_stop(inf);
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        gs_live_client_free(inf->k[k].c);
    pthread_cond_destroy(&inf->cv);
    pthread_mutex_destroy(&inf->mu);
    free(inf->ns);
    free(inf);
}

bool gs_live_informer_synced(gs_live_informer *inf, gs_live_kind k)
{
    if ((int)k < 0 || k >= GS_LIVE_NKINDS)
        return false;
    pthread_mutex_lock(&inf->mu);
    bool s = inf->k[k].st.synced;
    pthread_mutex_unlock(&inf->mu);
    return s;
}

static bool all_synced(gs_live_informer *inf, uint32_t kinds)
{
    for (int k = 0; k < GS_LIVE_NKINDS; k++)
        if ((kinds & GS_LIVE_KIND_BIT(k)) && inf->k[k].on && !inf->k[k].st.synced)
            return false;
    return true;
}

int gs_live_informer_wait_synced(gs_live_informer *inf, uint32_t kinds, long timeout_ms)
{
    if (!kinds)
        kinds = inf->o.kinds;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    if (timeout_ms >= 0) {
        dl.tv_sec += timeout_ms / 1000;
        dl.tv_nsec += (timeout_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    int rc = 0;
    pthread_mutex_lock(&inf->mu);
    while (!all_synced(inf, kinds)) {
        int e = timeout_ms >= 0 ? pthread_cond_timedwait(&inf->cv, &inf->mu, &dl) : pthread_cond_wait(&inf->cv, &inf->mu);
        if (e == ETIMEDOUT) {
            rc = all_synced(inf, kinds) ? 0 : 1;
            break;
        }
    }
    pthread_mutex_unlock(&inf->mu);
    return rc;
}

void gs_live_informer_stats_get(gs_live_informer *inf, gs_live_kind k, gs_live_informer_stats *out)
{
    memset(out, 0, sizeof *out);
    if ((int)k < 0 || k >= GS_LIVE_NKINDS)
        return;
    pthread_mutex_lock(&inf->mu);
    *out = inf->k[k].st;
    pthread_mutex_unlock(&inf->mu);
}
