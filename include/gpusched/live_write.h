/*
 * live_write.h - writing to a live Kubernetes API server, for the faces to come (monitor,
 * scheduler extender, node agent): create, replace, delete, the four patch kinds
 * (JSON merge, strategic merge, JSON patch, server-side apply), the pods/binding
 * subresource, an Event recorder (events.k8s.io/v1) with client-go's series and dedup, and
 * Lease leader election (coordination.k8s.io/v1) as client-go's leaderelection.
 * docs/live.md ("Writes") says what each does and where it follows or leaves client-go.
 *
 * The caller gives bodies (JSON text); this layer gives the request: method, path, content
 * type, query parameters (fieldManager, force, dryRun=All, fieldValidation) and errors. A
 * refused write is a gs_error whose message is the API server's Status message (for an
 * apply conflict: `Apply failed with 1 conflict: conflict with "mgr-a": .metadata.labels.x`),
 * with reason and code in rs->status (gs_live_status_error's codes: 404 GS_ERR_NOTFOUND,
 * other 4xx GS_ERR_INVALID, 429/5xx and transport GS_ERR_IO).
 *
 * Nothing here prints. The recorder and the elector are used by one thread at a time.
 */
#ifndef GPUSCHED_LIVE_WRITE_H
#define GPUSCHED_LIVE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/live.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- paths */

/* The path of a collection, an object or a subresource, appended to out:
 * group "" (core) -> /api/VERSION/..., else /apis/GROUP/VERSION/...; ns NULL or "" -> cluster
 * scope; name NULL -> the collection; sub (with a name) -> /NAME/SUB. Each namespace and
 * name segment is checked as client-go's request builder does (not empty, not "." or "..",
 * no '/' or '%'): GS_ERR_INVALID `invalid resource name "a/b": may not contain '/'`. */
int gs_live_path(gs_strbuf *out, const char *group, const char *version, const char *resource,
                 const char *ns, const char *name, const char *sub, gs_error *err);

/* ---------------------------------------------------------------- create, replace, patch, delete */

typedef enum gs_live_patch_type {
    GS_LIVE_PATCH_NONE = 0,
    GS_LIVE_PATCH_MERGE,     /* application/merge-patch+json (RFC 7386) */
    GS_LIVE_PATCH_STRATEGIC, /* application/strategic-merge-patch+json (built-in kinds) */
    GS_LIVE_PATCH_JSON,      /* application/json-patch+json (RFC 6902) */
    GS_LIVE_PATCH_APPLY,     /* application/apply-patch+yaml: server-side apply (JSON is YAML) */
} gs_live_patch_type;
/* The Content-Type of a patch kind; NULL for GS_LIVE_PATCH_NONE. */
const char *gs_live_patch_content_type(gs_live_patch_type t);

typedef enum gs_live_validation {
    GS_LIVE_VALIDATION_DEFAULT = 0, /* no parameter: the server's default (Warn since 1.27) */
    GS_LIVE_VALIDATION_IGNORE,
    GS_LIVE_VALIDATION_WARN,
    GS_LIVE_VALIDATION_STRICT,      /* unknown or duplicate fields are a 400 BadRequest */
} gs_live_validation;

typedef struct gs_live_write_opts {
    const char *field_manager;  /* fieldManager (required for apply; <= 128 bytes, printable) */
    bool force;                 /* force=true: apply only (takes fields from other managers) */
    bool dry_run;               /* dryRun=All: validated and admitted, not persisted */
    gs_live_validation validation;
    long timeout_ms;            /* 0: the client's default */
} gs_live_write_opts;

/* A prepared write: the request and the storage its pointers use. */
typedef struct gs_live_write_rq {
    gs_live_request rq;
    gs_live_query query[4];
    gs_strbuf body;             /* bodies built here (delete options) */
} gs_live_write_rq;

/* Fill w for METHOD path (patch: the content type of `patch`, else application/json when a
 * body is given) with the query parameters of o (may be NULL). Refused here, before any
 * request: apply without a field manager ("fieldManager is required for apply patch"), a
 * field manager longer than 128 bytes or not printable, force on anything but apply
 * ("force may not be specified for non-apply patch"), a body that is empty where one is
 * needed. The strings of o, path and body are borrowed. gs_live_write_rq_free after use. */
int gs_live_write_prepare(gs_live_write_rq *w, const char *method, const char *path,
                          gs_live_patch_type patch, const char *body, size_t len,
                          const gs_live_write_opts *o, gs_error *err);
void gs_live_write_rq_free(gs_live_write_rq *w);

/* POST body to the collection `path`; 0 on 2xx with the created object in rs->body. */
int gs_live_create(gs_live_client *c, const char *path, const char *body, size_t len,
                   const gs_live_write_opts *o, gs_live_response *rs, gs_error *err);
/* PUT body to the object `path` (metadata.resourceVersion in the body: 409 Conflict when
 * stale, the server's "the object has been modified; ..." message). */
int gs_live_replace(gs_live_client *c, const char *path, const char *body, size_t len,
                    const gs_live_write_opts *o, gs_live_response *rs, gs_error *err);
/* PATCH the object `path` with a patch of kind t. */
int gs_live_patch(gs_live_client *c, const char *path, gs_live_patch_type t, const char *body,
                  size_t len, const gs_live_write_opts *o, gs_live_response *rs, gs_error *err);
/* Server-side apply: gs_live_patch with GS_LIVE_PATCH_APPLY; o->field_manager required. A
 * conflict is 409 (rs->status.reason "Conflict") with the server's message naming the
 * manager that owns the field; o->force takes the field over. An unknown field is the
 * server's 500 ("... field not declared in schema"), whatever o->validation says. */
int gs_live_apply(gs_live_client *c, const char *path, const char *body, size_t len,
                  const gs_live_write_opts *o, gs_live_response *rs, gs_error *err);

typedef struct gs_live_delete_opts {
    const char *uid;              /* preconditions.uid: 409 when the object was recreated */
    const char *resource_version; /* preconditions.resourceVersion */
    const char *propagation;      /* "Foreground", "Background", "Orphan"; NULL: the kind's default */
    bool has_grace;               /* gracePeriodSeconds = grace_seconds (0: now) */
    int64_t grace_seconds;
    bool dry_run;
    long timeout_ms;
} gs_live_delete_opts;
/* The DeleteOptions body of o into out (reset first); "" when o asks nothing. */
int gs_live_delete_body(gs_strbuf *out, const gs_live_delete_opts *o, gs_error *err);
/* DELETE the object `path` (o may be NULL). */
int gs_live_delete(gs_live_client *c, const char *path, const gs_live_delete_opts *o,
                   gs_live_response *rs, gs_error *err);

/* ---------------------------------------------------------------- pods/binding */

/* The v1 Binding kube-scheduler's DefaultBinder posts, into out (reset first):
 * {"apiVersion":"v1","kind":"Binding","metadata":{"name":POD,"namespace":NS[,"uid":UID]
 *  [,"annotations":{K:V,...}]},"target":{"kind":"Node","name":NODE}}. uid NULL or "": no
 * precondition. annotations (may be NULL): key, value, key, value, ..., NULL; the API
 * server merges them into the pod's annotations in the same write that sets
 * spec.nodeName (BindingREST, setPodHostAndAnnotations), so they land if and only if the
 * pod is bound. */
/* An Eviction (policy/v1) of pod NS/POD, into out (reset first):
 * {"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":POD,"namespace":NS}
 *  [,"deleteOptions":{"preconditions":{"uid":UID}}]}. With a uid a pod recreated under the
 * same name is not evicted (409). */
int gs_live_eviction_body(gs_strbuf *out, const char *ns, const char *pod, const char *uid, gs_error *err);
/* POST .../namespaces/NS/pods/POD/eviction: the API server deletes the pod unless a
 * PodDisruptionBudget forbids it (429 TooManyRequests, GS_ERR_IO: try again later). */
int gs_live_evict(gs_live_client *c, const char *ns, const char *pod, const char *uid, const gs_live_write_opts *o,
                  gs_live_response *rs, gs_error *err);
int gs_live_binding_body(gs_strbuf *out, const char *ns, const char *pod, const char *uid,
                         const char *node, const char *const *annotations, gs_error *err);
/* POST .../namespaces/NS/pods/POD/binding (the body above). With a uid the bind fails
 * when the pod was recreated under the same name (409, "... Precondition failed: UID in
 * precondition: ..."). A pod already bound is the server's 409 Conflict, as it words it:
 * "Operation cannot be fulfilled on pods/binding \"P\": pod P is already assigned to node
 * \"N\"". */
int gs_live_bind(gs_live_client *c, const char *ns, const char *pod, const char *uid,
                 const char *node, const char *const *annotations, const gs_live_write_opts *o,
                 gs_live_response *rs, gs_error *err);

/* ---------------------------------------------------------------- time */

/* A clock for the recorder and the elector. now_us: wall time (microseconds since the
 * epoch) for the timestamps written; mono_us: a monotonic time for the local observations
 * compared (lease expiry, batching); sleep_us: wait. NULL members: the system's
 * (CLOCK_REALTIME, CLOCK_MONOTONIC, nanosleep). Tests pass a fake one. */
typedef struct gs_live_clock {
    int64_t (*now_us)(void *ctx);
    int64_t (*mono_us)(void *ctx);
    void (*sleep_us)(void *ctx, int64_t us);
    void *ctx;
} gs_live_clock;

/* MicroTime as the API writes it: RFC 3339, UTC, six fraction digits
 * ("2026-12-01T22:19:53.000042Z"). out must hold 32 bytes. */
void gs_live_microtime(char *out, int64_t us);
/* RFC 3339 with an optional fraction (digits past the sixth are dropped) and Z or an offset,
 * to microseconds since the epoch. 0 or -1. */
int gs_live_microtime_parse(const char *s, int64_t *us);

/* Where the recorder and the elector send their requests: NULL means gs_live_do on their
 * client. Tests give a double that records and answers requests. */
typedef int (*gs_live_send_fn)(void *ctx, const gs_live_request *rq, gs_live_response *rs,
                               gs_error *err);

/* ---------------------------------------------------------------- events (events.k8s.io/v1) */

/* An object reference (regarding, related): NULL members are left out. */
typedef struct gs_live_objref {
    const char *api_version, *kind, *namespace_, *name, *uid, *resource_version, *field_path;
} gs_live_objref;

typedef enum gs_live_event_type { GS_LIVE_EVENT_NORMAL = 0, GS_LIVE_EVENT_WARNING } gs_live_event_type;

#define GS_LIVE_NOTE_MAX 1024   /* the API's note limit, bytes */
#define GS_LIVE_EVENT_FIELD_MAX 128 /* reason, action, reportingController, reportingInstance */

typedef struct gs_live_event {
    const gs_live_objref *regarding; /* required: name, kind */
    const gs_live_objref *related;   /* NULL: none */
    gs_live_event_type type;
    const char *reason;   /* required, <= 128: "FailedScheduling" */
    const char *action;   /* required, <= 128: "Scheduling" */
    const char *note;     /* human text; longer than 1024 bytes: cut at a character boundary
                             and ended with " ..." (as kube-scheduler does) */
} gs_live_event;

/* The note as it is sent: at most GS_LIVE_NOTE_MAX bytes (see gs_live_event.note). */
size_t gs_live_note_len(const char *note, bool *cut);

/* One Event object, into out (reset first): apiVersion events.k8s.io/v1, kind Event,
 * metadata {name, namespace}, eventTime, series (when series_count >= 2), reportingController,
 * reportingInstance, action, reason, regarding, related, note, type. Every string is JSON
 * escaped (invalid UTF-8 as U+FFFD). */
int gs_live_event_body(gs_strbuf *out, const gs_live_event *ev, const char *name, const char *ns,
                       const char *controller, const char *instance, int64_t event_time_us,
                       int32_t series_count, int64_t last_observed_us, gs_error *err);

/* An Event as the API server answers it (create, patch, get), read with the library's
 * JSON reader. Arena copies; absent strings are NULL, absent numbers 0. */
typedef struct gs_live_event_info {
    char *name, *namespace_, *uid, *resource_version;
    char *reason, *action, *note, *type, *reporting_controller, *reporting_instance;
    char *regarding_kind, *regarding_namespace, *regarding_name, *regarding_uid;
    int64_t event_time_us;
    int32_t series_count;           /* 0: no series */
    int64_t series_last_observed_us;
} gs_live_event_info;
int gs_live_event_parse(const char *json, size_t len, gs_arena *a, gs_live_event_info *out,
                        gs_error *err);

typedef struct gs_live_recorder gs_live_recorder;

typedef struct gs_live_recorder_opts {
    const char *reporting_controller; /* required: "gpusched.io/monitor" */
    const char *reporting_instance;   /* required: "gpusched-monitor-<host>" */
    size_t cache_size;      /* dedup entries kept (LRU); 0: 4096 */
    int64_t refresh_us;     /* series heartbeat; 0: 30 min (client-go's refreshTime) */
    int64_t finish_us;      /* a series idle this long is finished; 0: 6 min (finishTime) */
    const gs_live_clock *clock; /* NULL: the system's */
    gs_live_send_fn send;   /* NULL: gs_live_do on the client */
    void *send_ctx;
} gs_live_recorder_opts;

/* A recorder over c (borrowed; may be NULL when opts->send is given). */
gs_live_recorder *gs_live_recorder_new(gs_live_client *c, const gs_live_recorder_opts *o,
                                       gs_error *err);
void gs_live_recorder_free(gs_live_recorder *r);

/* Record one occurrence. Events are identical when action, reason, regarding and related
 * are (client-go's eventKey; the reporting controller and instance are the recorder's):
 * type and note are not compared, a series keeps its first occurrence's.
 *  - first occurrence: POST a new Event named "<regarding.name>.<unix nanoseconds, hex>"
 *    (a random UUID when that is no DNS subdomain) in regarding's namespace ("default"
 *    when none);
 *  - second: series {count 2, lastObservedTime} sent at once as a strategic merge patch of
 *    that Event (404: the Event is created again, with the series);
 *  - later ones: count and lastObservedTime grow in the cache only; gs_live_recorder_tick
 *    sends them on the heartbeat.
 * The cache keeps cache_size events; the least recently seen is dropped first (a series
 * with an unsent count gets its patch then). 0, or -1 with err (also counted). */
int gs_live_recorder_event(gs_live_recorder *r, const gs_live_event *ev, gs_error *err);
/* Heartbeat, to be called now and then (the loop of the face using it): every refresh_us
 * each series is patched with its count (client-go's refreshExistingEventSeries, which
 * also keeps the Event's TTL alive); every finish_us series idle for finish_us get their
 * final count and leave the cache, and single events older than finish_us leave it
 * (finishSeries). 0, or -1 with the first failure (all counted). */
int gs_live_recorder_tick(gs_live_recorder *r, gs_error *err);
/* Patch every series whose count changed since it was last sent (before exiting). */
int gs_live_recorder_flush(gs_live_recorder *r, gs_error *err);

typedef struct gs_live_recorder_stats {
    uint64_t recorded;      /* occurrences given to gs_live_recorder_event */
    uint64_t created;       /* Events created (POST) */
    uint64_t patched;       /* series patches sent */
    uint64_t aggregated;    /* occurrences only counted (sent later by tick or flush) */
    uint64_t failed;        /* requests or occurrences that failed */
    uint64_t evicted;       /* cache entries dropped to stay within cache_size */
    uint64_t finished;      /* entries that left the cache by finish_us */
    size_t cached;          /* entries now */
    size_t cache_size;
    gs_error last_error;    /* code GS_OK when none */
} gs_live_recorder_stats;
void gs_live_recorder_stats_get(const gs_live_recorder *r, gs_live_recorder_stats *out);

/* ---------------------------------------------------------------- leases (coordination.k8s.io/v1) */

/* A Lease as read (get, create and update answers), with the library's JSON reader. */
typedef struct gs_live_lease {
    char *name, *namespace_, *resource_version;
    char *holder;           /* spec.holderIdentity; "" when absent or empty */
    int32_t duration_s;     /* spec.leaseDurationSeconds; 0 when absent */
    int64_t acquire_us, renew_us; /* spec.acquireTime, spec.renewTime; 0 when absent */
    int32_t transitions;    /* spec.leaseTransitions */
} gs_live_lease;
int gs_live_lease_parse(const char *json, size_t len, gs_arena *a, gs_live_lease *out,
                        gs_error *err);

/* The leader election record client-go writes into a Lease's spec. */
typedef struct gs_live_lease_record {
    const char *holder;
    int32_t duration_s;
    int64_t acquire_us, renew_us;
    int32_t transitions;
} gs_live_lease_record;
/* The spec object of rec ({"holderIdentity":...,"leaseDurationSeconds":...,"acquireTime":
 * ...,"renewTime":...,"leaseTransitions":...}) appended to out. */
void gs_live_lease_spec_json(gs_strbuf *out, const gs_live_lease_record *rec);
/* The body of an update: the Lease `lease` (JSON text as the server sent it: metadata,
 * resourceVersion and all) with its spec replaced by rec, into out (reset first). A text
 * that is not one JSON object, or that names a key twice, is refused. */
int gs_live_lease_update_body(gs_strbuf *out, const char *lease, size_t len,
                              const gs_live_lease_record *rec, gs_error *err);

typedef struct gs_live_elector gs_live_elector;

typedef struct gs_live_elector_opts {
    const char *namespace_, *name;  /* the Lease; required */
    const char *identity;           /* holderIdentity of this candidate; required, unique */
    int64_t lease_duration_us;      /* 0: 15 s */
    int64_t renew_deadline_us;      /* 0: 10 s */
    int64_t retry_period_us;        /* 0: 2 s */
    bool release_on_cancel;         /* gs_live_elector_run releases the lease when stopped */
    const gs_live_clock *clock;     /* NULL: the system's */
    gs_live_send_fn send;           /* NULL: gs_live_do on the client */
    void *send_ctx;
} gs_live_elector_opts;

/* An elector over c (borrowed; may be NULL when opts->send is given). Refused as client-go
 * refuses them: "leaseDuration must be greater than renewDeadline", "renewDeadline must be
 * greater than retryPeriod*JitterFactor" (1.2), durations <= 0, an empty identity. */
gs_live_elector *gs_live_elector_new(gs_live_client *c, const gs_live_elector_opts *o,
                                     gs_error *err);
void gs_live_elector_free(gs_live_elector *e);

/* One round of client-go's tryAcquireOrRenew. `now_us` is the local monotonic time of this
 * round (the clock's mono_us in the loop); the times written are the clock's wall time.
 *  - leader with a lease still valid by our observation: update it at once (fast path);
 *    on any failure, the slow path;
 *  - GET the Lease; absent: create it (holder us, transitions 0);
 *  - a record different from the one observed last restarts the observation at now_us;
 *    held by another and observed_at + its leaseDurationSeconds > now_us: not ours (0);
 *  - else update it (PUT, with the resourceVersion read): renew keeps acquireTime and
 *    leaseTransitions; a takeover sets acquireTime and adds 1 to leaseTransitions.
 * Returns 1 when we hold the lease after the round; 0 when another holds it or we lost
 * the race (409 Conflict on create or update: counted, no error); -1 with err on any
 * other failure (transport, forbidden, a Lease that cannot be read; counted). */
int gs_live_elector_try_acquire_or_renew(gs_live_elector *e, int64_t now_us, gs_error *err);
/* client-go's release: GET the Lease; when we are the holder observed, PUT holderIdentity
 * "", leaseDurationSeconds 1, acquireTime = renewTime = now, transitions kept (a conflict
 * is retried, at most 5 times). 0 (also when not the holder), -1 with err. */
int gs_live_elector_release(gs_live_elector *e, gs_error *err);

bool gs_live_elector_is_leader(const gs_live_elector *e);
/* The holder last observed ("" when none or not yet observed). */
const char *gs_live_elector_leader(const gs_live_elector *e);
/* The record last observed and when (now_us of that round); false when none yet. */
bool gs_live_elector_observed(const gs_live_elector *e, gs_live_lease_record *rec, int64_t *at_us);

typedef struct gs_live_elector_stats {
    uint64_t rounds, acquired, renewed, conflicts, failures, released;
    gs_error last_error;
} gs_live_elector_stats;
void gs_live_elector_stats_get(const gs_live_elector *e, gs_live_elector_stats *out);

/* The loop of client-go's Run: acquire (a round every retry period, jittered up to 1.2
 * times more, as wait.JitterUntil), started_leading, renew (a round every retry period;
 * when rounds keep failing for renew_deadline the leadership is lost), then, when
 * release_on_cancel, release, and stopped_leading. keep_running is asked before each
 * round and every 100 ms of a wait; false stops the loop. new_leader is told each change
 * of the holder observed. Callbacks may be NULL. Returns 0 when stopped by keep_running,
 * 1 when leadership was lost; failures of rounds are counted, not returned. */
typedef struct gs_live_elector_callbacks {
    void (*started_leading)(void *ctx);
    void (*stopped_leading)(void *ctx);
    void (*new_leader)(void *ctx, const char *identity);
    bool (*keep_running)(void *ctx);
    void *ctx;
} gs_live_elector_callbacks;
int gs_live_elector_run(gs_live_elector *e, const gs_live_elector_callbacks *cb);

#ifdef __cplusplus
}
#endif
#endif
