/*
 * serve.h - the admission webhook of `gpusched serve --webhook`: AdmissionReview v1
 * decoding, the validating and mutating decisions (the rules of check.h applied to one
 * object; JSONPatch for GPU pods), the response encoder, the metrics registry, the audit
 * log, and the HTTP(S) server that ties them together (libmicrohttpd + GnuTLS).
 *
 * Layers, each usable alone (the unit tests use the first four without a network):
 *   gs_admission_decode  body bytes -> gs_admission (what the API server asked)
 *   gs_review_run        body bytes -> gs_review (the decision, findings, patch)
 *   gs_review_encode     gs_review -> AdmissionReview v1 response JSON
 *   gs_metrics_*         counters and a latency histogram, Prometheus text format
 *   gs_audit_*           one JSON line per decision, on disk before the response
 *   gs_server_*          the daemon: endpoints, limits, TLS with atomic cert reload
 *
 * Contract with the API server (k8s-semantics section 9): the request must be
 * `admission.k8s.io/v1` `AdmissionReview` with a `request.uid`; the response copies the
 * uid, says allowed or not, and for denials carries status {code, reason, message}.
 * Warnings are at most GS_REVIEW_WARNING_MAX bytes each (the API server may cut longer
 * ones). Only the mutating endpoint returns a patch (JSONPatch, base64 in the response).
 *
 * Ownership: a gs_admission and a gs_review live in an arena (the one passed in, or the
 * review's own) and die with it; the request body is not referenced after decoding.
 * gs_metrics, gs_audit and gs_server are opaque handles created and freed by their
 * *_new/_open/_start and *_free/_close/_stop functions; metrics and audit are safe to
 * use from many threads at once. Nothing here prints or exits.
 */
#ifndef GPUSCHED_SERVE_H
#define GPUSCHED_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/check.h"
#include "gpusched/error.h"
#include "gpusched/kube.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Request bodies larger than this are refused with 413 (`--max-body` changes it). The
 * API server's own limit for an object is about 1.5 MiB of JSON (etcd's 1.5 MiB value
 * limit), and GPU pods are a few KiB, so 1 MiB leaves room for any real pod while a
 * client cannot make the webhook buffer more than this per request. */
#define GS_SERVE_MAX_BODY_DEFAULT (1024u * 1024u)
#define GS_REVIEW_WARNING_MAX 120 /* bytes per warning, "..." included when cut */
#define GS_REVIEW_WARNINGS_MAX 16 /* warnings per response; the rest are counted in one */
#define GS_REVIEW_MESSAGE_MAX 2048 /* bytes of a denial message */

/* ---------------------------------------------------------------- decoding */
/* Shape of request.object.spec.tolerations, for the patch (absent and null are patched
 * by adding the whole array; an array by appending to it). */
typedef enum gs_tolerations_shape {
    GS_TOLS_ABSENT = 0,
    GS_TOLS_NULL,
    GS_TOLS_ARRAY,
    GS_TOLS_OTHER, /* a scalar or a mapping: the object does not decode anyway */
} gs_tolerations_shape;

typedef struct gs_admission {
    const char *api_version; /* of the review: "admission.k8s.io/v1" */
    const char *uid;         /* request.uid, never empty after a successful decode */
    const char *group;       /* request.kind.group ("" for core), version, kind ("Pod") */
    const char *version;
    const char *kind;
    const char *sub_resource; /* request.subResource, "" for the main resource */
    const char *operation;   /* CREATE, UPDATE, DELETE, CONNECT ("" if absent) */
    const char *username;    /* request.userInfo.username ("" if absent) */
    const char *namespace_;  /* request.namespace ("" for cluster-scoped) */
    const char *name;        /* request.name ("" on CREATE with generateName) */
    bool dry_run;            /* request.dryRun */
    /* request.object as a self-contained JSON object ready for gs_snapshot_read_buffer:
     * the object's bytes from the body, with apiVersion/kind (from request.kind) and
     * metadata.namespace (from request.namespace) inserted when the object lacks them.
     * NULL when the object is absent or null (DELETE, CONNECT). */
    const char *object;
    size_t object_len;
    gs_tolerations_shape tolerations; /* spec.tolerations of the object */
} gs_admission;

/* Decode an AdmissionReview request body into `out`; strings are copied into `arena`.
 * Errors: GS_ERR_PARSE for malformed JSON or text that is not UTF-8 (with line:col),
 * GS_ERR_INVALID for well-formed JSON that is not an admission.k8s.io/v1 AdmissionReview
 * with a request and a request.uid (wrong kind or version, duplicate fields, fields of
 * the wrong type). Never reads past body[len); body need not be NUL-terminated. */
int gs_admission_decode(const char *body, size_t len, gs_arena *arena, gs_admission *out,
                        gs_error *err);

/* ---------------------------------------------------------------- decisions */
typedef enum gs_review_endpoint {
    GS_ENDPOINT_VALIDATE = 0,
    GS_ENDPOINT_MUTATE,
    GS_ENDPOINT_COUNT_
} gs_review_endpoint;

const char *gs_review_endpoint_name(gs_review_endpoint ep); /* "validate", "mutate" */

/* What the webhook decides with. Immutable while a server uses it. */
typedef struct gs_webhook {
    const gs_check_config *cfg;  /* rules, severities, GPU taint keys, default class */
    /* The value of cfg->default_gpu_priority_class. The API server's Priority admission
     * plugin resolves spec.priority before mutating webhooks run, so a webhook that sets
     * priorityClassName must set spec.priority too. The class is only set when
     * has_gpu_priority_value is true. */
    bool has_gpu_priority_value;
    int32_t gpu_priority_value;
    gs_read_opts read_opts;      /* limits for decoding the object; 0 fields = defaults
                                    below (max_replicas 10,000 per workload) */
} gs_webhook;

/* One finding as the review keeps it (copied out of the check result). */
typedef struct gs_review_finding {
    const char *rule_id;     /* "GS003" */
    const char *rule_name;
    int32_t rule_index;      /* position in gs_rules(), -1 if unknown */
    gs_severity severity;
    const char *message;
    bool suppressed;
} gs_review_finding;

typedef struct gs_review {
    gs_arena arena;           /* owns everything below */
    gs_review_endpoint endpoint;
    gs_admission req;
    bool allowed;
    int32_t status_code;      /* denials: 403 (rules) or 422 (object does not decode) */
    const char *reason;       /* denials: "Forbidden" / "Invalid"; else NULL */
    const char *message;      /* denials: the rule ids and messages; else NULL */
    const char **warnings;    /* each at most GS_REVIEW_WARNING_MAX bytes */
    uint32_t nwarnings;
    gs_review_finding *findings;
    uint32_t nfindings;
    const char *patch;        /* JSONPatch array text (mutate only), NULL when none */
    size_t patch_len;
    const char *skipped;      /* why the object was not checked ("DELETE", ...), or NULL */
    const char *object_error; /* decode error of the object (denied or warned), or NULL */
} gs_review;

/* Decide one review. On success (0) `out` holds the decision; it must then be freed
 * with gs_review_free(). On failure (-1: the body is not a usable AdmissionReview, or
 * the rules failed internally) err says why and `out` holds nothing to free.
 * Decision rules:
 *  - DELETE, CONNECT, subresources and a missing object are allowed unchecked.
 *  - validate: the object is read as a one-object snapshot and every enabled rule runs;
 *    any unsuppressed finding of severity error denies (403, message "GS003 name:
 *    message; ..."); warnings become response warnings ("GS002: message"). An object
 *    that does not decode is denied (422) like `gpusched check` rejects the file, except
 *    when it exceeds a webhook limit (GS_ERR_LIMIT): allowed, with a warning.
 *  - mutate: never denies. A Pod that requests GPUs (gs_gpu_request_from_pod) gets a
 *    toleration {key: K, operator: Exists, effect: NoSchedule} for each GPU taint key K
 *    it does not tolerate yet, and on CREATE, when configured, the default GPU
 *    PriorityClass if it names none. */
int gs_review_run(const gs_webhook *wh, gs_review_endpoint ep, const char *body, size_t len,
                  gs_review *out, gs_error *err);
void gs_review_free(gs_review *rv);

/* The JSONPatch (RFC 6902 array, compact JSON) the mutating endpoint applies to a pod
 * whose canonical GPU request is `gpu`; appends nothing when no change is needed.
 * `tolerations` is the shape of spec.tolerations in the object; `create` is true for
 * CREATE. Returns the number of operations written. */
uint32_t gs_review_pod_patch(const gs_webhook *wh, const gs_pod *pod, gs_tolerations_shape tolerations,
                             bool create, gs_strbuf *patch);

/* The AdmissionReview v1 response for rv (compact JSON, no newline). */
void gs_review_encode(const gs_review *rv, gs_strbuf *sb);
/* A metav1.Status body for an HTTP error (400, 404, 405, 413, 415, 500, 503). */
void gs_serve_status_body(int http_code, const char *message, gs_strbuf *sb);
/* Standard base64 (RFC 4648, with padding) of data[0..len). */
void gs_base64_encode(const void *data, size_t len, gs_strbuf *sb);

/* ---------------------------------------------------------------- metrics */
typedef struct gs_metrics gs_metrics;

/* Latency histogram bucket upper bounds in seconds (Prometheus "le"), +Inf implied. */
#define GS_METRICS_NBUCKETS 12

gs_metrics *gs_metrics_new(void); /* NULL on OOM */
void gs_metrics_free(gs_metrics *m);
/* Count one answered review: endpoint, verdict, denials by rule, warnings by rule,
 * patches, and its processing time in nanoseconds. */
void gs_metrics_observe_review(gs_metrics *m, const gs_review *rv, uint64_t duration_ns);
/* Count one request answered with an HTTP error status (400, 413, ...). */
void gs_metrics_observe_http_error(gs_metrics *m, int http_code);
void gs_metrics_observe_audit_error(gs_metrics *m);
/* A decision answered without a durable audit line (--audit-failure ignore). */
void gs_metrics_observe_audit_lost(gs_metrics *m);
/* An attempt of the server to reopen a failing audit log, and its result. */
void gs_metrics_observe_audit_reopen(gs_metrics *m, bool ok);
/* Whether the audit log takes lines now (1) or is failing (0); starts at 1. */
void gs_metrics_set_audit_ok(gs_metrics *m, bool ok);
void gs_metrics_observe_cert_reload(gs_metrics *m, bool ok);
void gs_metrics_set_in_flight(gs_metrics *m, int64_t delta);

/* Why the server closed a connection on its own. */
typedef enum gs_conn_close_reason {
    GS_CLOSE_HEADER_TIMEOUT = 0, /* headers not complete within the header deadline */
    GS_CLOSE_BODY_TIMEOUT,       /* body not complete within the body deadline */
    GS_CLOSE_SLOW_BODY,          /* body arriving below the minimum rate */
    GS_CLOSE_SHED,               /* slowest body dropped to make room in the body budget */
    GS_CLOSE_EVICTED,            /* waiting longest for its headers when the slots ran out */
    GS_CLOSE_UNAUTHENTICATED,    /* a review without a valid client certificate (mTLS) */
    GS_CLOSE_REASON_COUNT_
} gs_conn_close_reason;
void gs_metrics_observe_conn_closed(gs_metrics *m, gs_conn_close_reason why);
/* Open connections (gauge), counted by the server. */
void gs_metrics_set_connections(gs_metrics *m, int64_t delta);
/* A request the HTTP layer refused before the webhook saw it (malformed HTTP, answered
 * by libmicrohttpd's own error page) or whose client hung up before its headers ended. */
void gs_metrics_observe_incomplete_request(gs_metrics *m);
/* Prometheus text exposition format 0.0.4. */
void gs_metrics_render(const gs_metrics *m, gs_strbuf *sb);
/* The server's transport series only (http_errors_total, connections,
 * connections_closed_total, incomplete_requests_total, cert_reloads_total,
 * requests_in_flight), each name prefixed with prefix ("gpusched_extender_"). */
void gs_metrics_render_transport(const gs_metrics *m, const char *prefix, gs_strbuf *sb);

/* ---------------------------------------------------------------- audit log */
typedef struct gs_audit gs_audit;

/* Open (create, mode 0640) `path` for appending. The path must be a regular file (or
 * absent): a FIFO or a device is refused without blocking. A torn last line (a crash
 * or a full disk in the middle of a write) is cut off first, so that every line in the
 * file is whole. NULL with err on failure. */
gs_audit *gs_audit_open(const char *path, gs_error *err);
/* Close and reopen the same path (log rotation: call after the file was moved away; or
 * recovery after a failure), cutting a torn last line like gs_audit_open. On failure
 * the old file stays in use. Clears an earlier sync failure on success. */
int gs_audit_reopen(gs_audit *a, gs_error *err);
/* Bytes of torn last lines cut off by gs_audit_open and gs_audit_reopen so far. */
uint64_t gs_audit_repaired_bytes(const gs_audit *a);
/* Recovery after a failure: reopen (as gs_audit_reopen), sync the new file, and check
 * that its file system has at least min_free bytes available. 0 when the log takes
 * lines again. */
int gs_audit_recover(gs_audit *a, uint64_t min_free, gs_error *err);
void gs_audit_close(gs_audit *a);
/* The audit line of one decision (one JSON object and a newline): time (RFC 3339 UTC,
 * milliseconds), uid, claimedUser (request.userInfo.username: what the request claims;
 * the webhook cannot verify it), caller (the subject of the client certificate the
 * server verified, or null without mTLS), endpoint, operation, object {group, version, kind,
 * namespace, name}, dryRun, verdict (allowed/denied), code, rules (every finding: id,
 * severity, suppressed), warnings, patch (the JSONPatch applied, or null), skipped,
 * objectError, ruleset (the enabled rule ids: which checks passed it), latencyUs.
 * `ruleset` and `caller` may be NULL. Every string is written as valid UTF-8 (an
 * invalid or cut sequence becomes U+FFFD), so the line is UTF-8 JSON whatever the
 * review held. */
void gs_audit_format(const gs_review *rv, int64_t unix_ms, const char *ruleset, const char *caller,
                     uint64_t latency_us, gs_strbuf *line);
/* Append one line and make it durable (write + fdatasync) before returning. The line
 * is written with one write(2); when the write is short (a full disk) the part written
 * is cut off again, so a line is in the file whole or not at all. Concurrent
 * callers share one fdatasync (group commit): each returns only after a sync that
 * covered its own line. GS_ERR_IO when the write or the sync failed; after a failed
 * sync every later call fails until gs_audit_reopen() succeeds (the kernel may have
 * dropped the unsynced pages, so nothing after them can be called durable). */
int gs_audit_write(gs_audit *a, const char *line, size_t len, gs_error *err);
/* The two halves of gs_audit_write, for callers that do not want to block in the sync:
 * append returns the line's sequence number (lines are numbered from 1 in the order
 * they were written); sync returns once that line and every line before it is durable,
 * sharing syncs as gs_audit_write does. Same errors as gs_audit_write. */
int gs_audit_append(gs_audit *a, const char *line, size_t len, uint64_t *seq_out, gs_error *err);
int gs_audit_sync(gs_audit *a, uint64_t seq, gs_error *err);
/* The enabled rule ids of cfg joined with ',' (for the ruleset field), in `arena`. */
const char *gs_audit_ruleset(const gs_check_config *cfg, gs_arena *arena);

/* ---------------------------------------------------------------- server */
typedef void (*gs_serve_log_fn)(void *user, const char *line);

/* Another service on the same hardened server (the scheduler extender): instead of a
 * webhook, the POST endpoints are the handler's. Everything else is the server's: limits,
 * deadlines, connection slots, TLS and its reload, /healthz, drain. */
typedef struct gs_serve_handler {
    /* Which POST endpoint url is: a route id >= 0, or -1 (404). Called with the headers. */
    int (*route)(void *user, const char *url);
    /* The whole body of a request to route: fill out with the answer and return the HTTP
     * status (200, 400, 503, ...); *ctype (default "application/json") may be set to a
     * static string. Runs on the worker thread owning the connection; it may block for
     * the time of its API calls (that worker's other connections wait meanwhile). */
    unsigned (*handle)(void *user, int route, const char *body, size_t len, gs_strbuf *out,
                       const char **ctype);
    /* /readyz: true when ready; else false with the reason in why. NULL: always ready. */
    bool (*ready)(void *user, gs_strbuf *why);
    /* /metrics: the handler's series; the server's transport series (connections, HTTP
     * errors, certificate reloads, ...) follow, rendered with metrics_prefix. */
    void (*metrics)(void *user, gs_strbuf *sb);
    const char *metrics_prefix; /* "gpusched_extender_"; NULL: "gpusched_webhook_" */
    const char *what;           /* the request named in errors: "an ExtenderArgs" */
    void *user;
} gs_serve_handler;

typedef struct gs_serve_opts {
    const char *host;        /* numeric address to bind: "0.0.0.0", "127.0.0.1", "::1" */
    uint16_t port;           /* 0 = any free port (see gs_server_port) */
    const char *tls_cert;    /* PEM certificate chain file; NULL with tls_key = plain HTTP */
    const char *tls_key;     /* PEM private key file */
    const char *client_ca;   /* PEM CA bundle: POST /validate and /mutate then require a
                                client certificate it signed (mTLS); NULL = no client auth */
    size_t max_body;         /* 0 = GS_SERVE_MAX_BODY_DEFAULT */
    size_t body_budget;      /* bytes of all bodies in flight together; 0 = 64 x max_body,
                                at least 64 MiB (never below max_body) */
    unsigned timeout_s;      /* idle connection timeout (no byte at all); 0 = 10 */
    unsigned header_timeout_s; /* a request's headers, from its first byte; 0 = 5 */
    unsigned body_timeout_s; /* a request's body, from the end of its headers; 0 = 10 */
    unsigned min_body_rate;  /* bytes/s a body must average after its first 2 s; 0 = 1024 */
    unsigned threads;        /* worker threads; 0 = online CPUs (at most 64) */
    unsigned max_connections;/* 0 = 1000; a reserve of max(16, 1/16) more is kept for
                                health probes (see gs_server_start) */
    unsigned max_connections_per_ip; /* 0 = half of max_connections */
    bool audit_ignore_failures; /* answer reviews whose audit line failed (counted as
                                lost) instead of 500; /readyz stays 200 */
    const gs_webhook *webhook; /* required unless handler is set; borrowed, must outlive
                                  the server */
    const gs_serve_handler *handler; /* instead of the webhook: its POST endpoints; borrowed */
    gs_metrics *metrics;     /* required; borrowed */
    gs_audit *audit;         /* NULL = no audit log; borrowed */
    const char *ruleset;     /* for audit lines (gs_audit_ruleset); may be NULL */
    gs_serve_log_fn log;     /* receives one line per problem the server meets at run time
                                (audit failures, ...); may be NULL */
    void *log_user;
} gs_serve_opts;

typedef struct gs_server gs_server;

/* Bind, load the certificate (when TLS) and start serving:
 *   POST /validate, POST /mutate  AdmissionReview v1 (application/json)
 *   GET  /healthz                 200 while the process serves
 *   GET  /readyz                  200 when ready, 503 while draining or while the
 *                                 audit log fails (the server reopens it every second)
 *   GET  /metrics                 Prometheus text
 * Bad requests get a 4xx metav1.Status body: 400 malformed or not an AdmissionReview,
 * 404, 405, 413 body above max_body, 415 not JSON; 503 when the bodies in flight would
 * exceed the memory budget. Only one TLS server may run per process (GnuTLS's
 * certificate callback has no closure). NULL with err on failure. */
gs_server *gs_server_start(const gs_serve_opts *opts, gs_error *err);
uint16_t gs_server_port(const gs_server *s); /* the bound port */
bool gs_server_tls(const gs_server *s);
/* Load the certificate and key files again and switch to them atomically: handshakes
 * that already started keep the old pair. On failure (unreadable, malformed, key not
 * matching the certificate) the old pair stays in use and err says why. */
int gs_server_reload_tls(gs_server *s, gs_error *err);
/* Graceful stop, step 0: answer /readyz with 503 and every response with Connection:
 * close, but keep accepting and serving (the drain period, while load balancers and the
 * API server notice). Idempotent. */
void gs_server_set_unready(gs_server *s);
/* Graceful stop, first half: refuse new connections, answer /readyz with 503, and wait
 * up to timeout_ms for the requests in flight to finish. Returns how many were still
 * in flight when it gave up (0 = drained). */
unsigned gs_server_drain(gs_server *s, unsigned timeout_ms);
/* Stop the threads, close every connection, free the server. NULL is fine. */
void gs_server_stop(gs_server *s);

#ifdef __cplusplus
}
#endif
#endif
