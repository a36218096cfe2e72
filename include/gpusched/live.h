/*
 * live.h - talking to a live Kubernetes API server: credentials resolved exactly as kubectl
 * resolves them, a libcurl request layer (requests with retries and a rate limiter, paged
 * lists, watches), the object store and informers that keep it current. docs/live.md says
 * what is built and what comes next.
 *
 * Credentials (gs_live_config_load):
 *  - --kubeconfig (opts.kubeconfig): that one file, no merge;
 *  - else $KUBECONFIG, a ':'-separated list merged by kubectl's rules: files that do not
 *    exist are skipped, the first file to name a cluster, user or context wins that whole
 *    entry, current-context comes from the first file that sets it; relative paths
 *    (certificate-authority, client-certificate, client-key, tokenFile, exec.command with a
 *    '/') are resolved against the directory of the file that names them;
 *  - else ~/.kube/config; when no kubeconfig file exists and KUBERNETES_SERVICE_HOST/PORT
 *    are set, the in-cluster service account (as kubectl does);
 *  - opts.context overrides current-context.
 * Errors are gs_error values with the kubeconfig file and the line:col of the offending
 * node ("context \"x\" does not exist", "user \"u\" was not found for context \"c\"",
 * "illegal base64 data", ...).
 *
 * Ownership: a gs_live_config owns every string and buffer it points to (one arena) and
 * the cached credentials; gs_live_config_free releases them. A client is used by one
 * thread at a time; clients of several threads may share one config (its credential cache
 * and rate limiter are locked), which must outlive them.
 */
#ifndef GPUSCHED_LIVE_H
#define GPUSCHED_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "gpusched/error.h"
#include "gpusched/kube.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the user authenticates (client certificates may come with any of them). */
typedef enum gs_live_auth {
    GS_LIVE_AUTH_NONE = 0,   /* anonymous, or client certificate only */
    GS_LIVE_AUTH_TOKEN,      /* user.token */
    GS_LIVE_AUTH_TOKEN_FILE, /* user.tokenFile, or the in-cluster service-account token */
    GS_LIVE_AUTH_BASIC,      /* user.username + user.password */
    GS_LIVE_AUTH_EXEC,       /* user.exec: an ExecCredential plugin */
} gs_live_auth;

typedef struct gs_live_opts {
    const char *kubeconfig;     /* --kubeconfig: one file, no merge; NULL: $KUBECONFIG, ~/.kube/config */
    const char *context;        /* --context; NULL: current-context */
    /* The service-account directory (token, ca.crt, namespace); NULL:
     * /var/run/secrets/kubernetes.io/serviceaccount. Tests point it at a fake root. */
    const char *serviceaccount_dir;
    bool in_cluster;            /* use the in-cluster service account, no kubeconfig at all */
} gs_live_opts;

typedef struct gs_live_exec {
    char *command;           /* resolved against the kubeconfig's directory when it has a '/' */
    char **args;             /* nargs strings */
    size_t nargs;
    char **env;              /* nenv "NAME=value" strings, added to the process environment */
    size_t nenv;
    char *api_version;       /* client.authentication.k8s.io/v1 (v1beta1 accepted too) */
    char *install_hint;      /* shown when the command cannot be run */
    bool provide_cluster_info;
} gs_live_exec;

typedef struct gs_live_state gs_live_state; /* cached credentials, private */

typedef struct gs_live_config {
    /* where it came from */
    char *source;            /* the kubeconfig file of the user entry ("in-cluster" otherwise) */
    char *context;           /* context name; "" in-cluster */
    char *cluster_name, *user_name;
    char *namespace_;        /* the context's namespace, or the service account's; "default" */
    /* cluster */
    char *server;            /* https://host:port[/prefix], no trailing '/' */
    char *tls_server_name;   /* NULL: the server's host */
    char *proxy_url;         /* NULL: libcurl's environment (https_proxy, no_proxy) */
    bool insecure_skip_tls_verify;
    bool disable_compression;
    char *ca_pem;            /* PEM bundle from -data or the file; NULL: system roots */
    size_t ca_len;
    /* user */
    gs_live_auth auth;
    char *cert_pem, *key_pem; /* client certificate and key (PEM), both or neither */
    size_t cert_len, key_len;
    char *token;             /* GS_LIVE_AUTH_TOKEN */
    char *token_file;        /* GS_LIVE_AUTH_TOKEN_FILE: path (re-read when it changes) */
    char *username, *password;
    gs_live_exec exec;       /* GS_LIVE_AUTH_EXEC */
    gs_arena arena;          /* owns the strings above */
    gs_live_state *state;
} gs_live_config;

/* Resolve credentials. NULL with err set on failure. */
gs_live_config *gs_live_config_load(const gs_live_opts *opts, gs_error *err);
void gs_live_config_free(gs_live_config *cfg);

/* The credentials to send now. Token files are re-read when their size, mtime or inode
 * changed; exec plugins are run when nothing is cached or the cached credential expires
 * within 10 seconds of `now` (0: time(NULL)). Pointers stay valid until the next call
 * or gs_live_invalidate. */
typedef struct gs_live_cred {
    const char *token;        /* bearer token or NULL */
    const char *username, *password; /* basic auth or NULL */
    const char *cert_pem, *key_pem;  /* client certificate (static or from the plugin) or NULL */
    size_t cert_len, key_len;
    time_t expires;           /* exec: expirationTimestamp; 0 = none */
    uint64_t generation;      /* changes whenever the credential changed */
} gs_live_cred;
int gs_live_credentials(gs_live_config *cfg, time_t now, gs_live_cred *out, gs_error *err);
/* A 401 came back: forget the cached exec credential and token file contents. */
void gs_live_invalidate(gs_live_config *cfg);
/* How many times the exec plugin ran (tests, metrics). */
unsigned gs_live_exec_runs(const gs_live_config *cfg);

/* Standard base64 (RFC 4648, padding required, no whitespace but line breaks) into a
 * NUL-terminated arena copy. -1 on bad data (*bad_at: offset of the first bad byte). */
int gs_live_base64_decode(gs_arena *a, const char *s, size_t n, char **out, size_t *out_len,
                          size_t *bad_at);

/* ---------------------------------------------------------------- the API server's answers */

/* What a failed request said: the Status object's fields when the body was one. */
typedef struct gs_live_status {
    int code;              /* HTTP status */
    char reason[64];       /* "Forbidden", "NotFound", "Expired", ... ("" when none) */
    int retry_after;       /* seconds: details.retryAfterSeconds or the Retry-After header; -1 */
} gs_live_status;

/* Turn a non-2xx answer into err: the Status message when the body is a Status
 * ("pods is forbidden: User \"x\" cannot list resource \"pods\" ..."), else
 * "<what>: HTTP <code>" with the first line of the body. Code: 404 -> GS_ERR_NOTFOUND,
 * 401/403/4xx -> GS_ERR_INVALID, 429 and 5xx -> GS_ERR_IO. st may be NULL. Returns -1. */
int gs_live_status_error(int http, const char *body, size_t len, const char *what,
                         gs_live_status *st, gs_error *err);

/* One list page: metadata.continue (NULL when the last page), metadata.resourceVersion
 * and the number of items, into arena copies. 0, or -1 when the page is not a List. */
typedef struct gs_live_page_info {
    char *continue_token;
    char *resource_version;
    size_t items;
    int64_t remaining;     /* metadata.remainingItemCount, -1 when absent */
} gs_live_page_info;
int gs_live_page_parse(const char *page, size_t len, gs_arena *a, gs_live_page_info *out,
                       gs_error *err);

/* ---------------------------------------------------------------- requests */

typedef struct gs_live_client gs_live_client;

/* One request. Method, body and content_type are for the writes to come (GET only now). */
typedef struct gs_live_query {
    const char *name, *value;
} gs_live_query;
typedef struct gs_live_request {
    const char *method;        /* NULL: "GET" */
    const char *path;          /* "/api/v1/pods" */
    const gs_live_query *query; /* nquery parameters, URL-escaped here */
    size_t nquery;
    const char *body;          /* writes (later increments) */
    size_t body_len;
    const char *content_type;
    long timeout_ms;           /* whole request; 0: the client's default (60 s) */
} gs_live_request;

typedef struct gs_live_response {
    int http;                  /* status code, 0 when no answer came */
    gs_strbuf body;            /* owned; gs_strbuf_free */
    int retry_after;           /* Retry-After header in seconds, -1 when absent */
    gs_live_status status;     /* filled on a non-2xx answer */
    unsigned retries;          /* attempts after the first (429/5xx with Retry-After, a GET's
                                * lost connection); 0 when the first answer was final */
} gs_live_response;

typedef struct gs_live_client_opts {
    long connect_timeout_ms;   /* 0: 10 s */
    long timeout_ms;           /* 0: 60 s */
    size_t max_body;           /* 0: 1 GiB */
    const char *user_agent;    /* NULL: "gpusched/<version>" */
    /* Retries (docs/live.md "Retries"): a 429 or 5xx answer with a Retry-After (header or
     * Status details.retryAfterSeconds) is sent again after that delay (capped at
     * retry_max_wait_ms), at most max_retries times (0: 10, as client-go; -1: never), and
     * never after retry_deadline_ms since the first attempt began (0: 120 s). A GET whose
     * connection broke (reset, EOF, HTTP/2 stream error; not a refused connection or a TLS
     * failure, which fail at once) is retried with exponential backoff and full jitter
     * (250 ms doubling, capped at 8 s) under the same count and deadline. */
    int max_retries;
    long retry_max_wait_ms;    /* 0: 30 s */
    long retry_deadline_ms;    /* 0: 120 s */
} gs_live_client_opts;

/* A client over cfg (borrowed; must outlive the client). opts may be NULL. */
gs_live_client *gs_live_client_new(gs_live_config *cfg, const gs_live_client_opts *opts,
                                   gs_error *err);
void gs_live_client_free(gs_live_client *c);

/* Send one request. 0 on 2xx (rs->body holds the answer); -1 with err set otherwise:
 * transport failures (GS_ERR_IO: "cannot connect to https://...: ..."), or the server's
 * Status (gs_live_status_error). A 401 with an exec or token-file user invalidates the
 * credential and retries once. rs is reset first and owned by the caller. */
int gs_live_do(gs_live_client *c, const gs_live_request *rq, gs_live_response *rs,
               gs_error *err);
void gs_live_response_free(gs_live_response *rs);

/* What a client did since it was made (tests, the monitor to come). */
typedef struct gs_live_client_stats {
    uint64_t requests;         /* attempts sent (each retry counts) */
    uint64_t retries;          /* attempts after the first, over all requests */
    uint64_t throttled;        /* requests that waited for the rate limiter */
    uint64_t throttled_ms;     /* total time waited for it */
} gs_live_client_stats;
void gs_live_client_stats_get(const gs_live_client *c, gs_live_client_stats *out);

/* The client-side rate limiter of every client over cfg: a token bucket of `burst`
 * requests refilled at `qps` per second, taken by each attempt (retries, list pages and
 * watch requests included), so a relist storm after an API server restart does not amplify
 * itself. Default 50 qps, burst 100 (kube-scheduler's clientConnection defaults; client-go's
 * own 5/10 would throttle the start of 13 informers). qps <= 0: unlimited. Thread-safe. */
void gs_live_config_set_rate(gs_live_config *cfg, double qps, int burst);

/* A list page for a callback: `index` counts from 0; index 0 after earlier pages means
 * the list restarted (410 Expired on a continue token) and earlier pages are void. */
typedef int (*gs_live_page_fn)(void *ctx, const char *page, size_t len, unsigned index,
                               gs_error *err);
/* GET path with limit (0: 500) and continue, every page to fn until the continue token is
 * empty. A 410 on a continue token relists from scratch (at most 3 times). */
int gs_live_list(gs_live_client *c, const char *path, const gs_live_query *query,
                 size_t nquery, unsigned limit, gs_live_page_fn fn, void *ctx, gs_error *err);

/* Page collection, for gs_live_list callers that want every page in memory. */
typedef struct gs_live_pages {
    GS_VEC(char *) page;       /* NUL-terminated, owned */
    GS_VEC(size_t) len;
} gs_live_pages;
int gs_live_pages_add(void *pages, const char *page, size_t len, unsigned index, gs_error *err);
void gs_live_pages_free(gs_live_pages *p);

/* ---------------------------------------------------------------- watch
 *
 * A watch is one streaming GET (watch=1) whose body is newline-delimited JSON documents
 * {"type":T,"object":{...}} (one per line, as the API server's JSON encoder writes them).
 * The line splitter cuts the stream into lines of bounded length; the event parser reads
 * a line with the JSON scanning primitives, without building a tree of the object: its
 * type, the byte span of its object, metadata.resourceVersion, the initial-events-end
 * annotation of a BOOKMARK, and an ERROR's Status (code, reason, message). */

typedef enum gs_live_watch_event_type {
    GS_LIVE_WATCH_ADDED = 1,
    GS_LIVE_WATCH_MODIFIED,
    GS_LIVE_WATCH_DELETED,
    GS_LIVE_WATCH_BOOKMARK,
    GS_LIVE_WATCH_ERROR,
} gs_live_watch_event_type;

#define GS_LIVE_RV_MAX 128     /* resourceVersions are short decimal strings; longer: refused */

typedef struct gs_live_watch_event {
    gs_live_watch_event_type type;
    const char *object;        /* the object's JSON text, inside the line given to parse */
    size_t object_len;
    char resource_version[GS_LIVE_RV_MAX]; /* metadata.resourceVersion, "" when absent */
    bool initial_events_end;   /* BOOKMARK annotated k8s.io/initial-events-end: "true" */
    /* ERROR: the Status */
    int code;                  /* Status code (410: the resourceVersion is gone); 0 when absent */
    char reason[64];           /* "Expired", "Gone", ... */
    char message[256];         /* decoded, truncated */
} gs_live_watch_event;

/* Parse one watch event line (no trailing newline needed; blanks around are allowed).
 * GS_ERR_PARSE with the column when the line is not one JSON object with a known "type"
 * string and an "object" object, or holds bytes after it; strings are checked for valid
 * escapes where they are decoded (type, resourceVersion, annotation, reason, message). */
int gs_live_watch_event_parse(const char *line, size_t len, gs_live_watch_event *ev, gs_error *err);
const char *gs_live_watch_event_type_name(gs_live_watch_event_type t);

/* Lines of a byte stream that arrives in pieces. Each complete line (without its '\n',
 * and without a '\r' before it) goes to fn; blank lines are skipped. A line longer than
 * max_line is an error (GS_ERR_LIMIT) and the splitter stays failed. */
typedef int (*gs_live_line_fn)(void *ctx, const char *line, size_t len, gs_error *err);
typedef struct gs_live_lines {
    gs_strbuf part;            /* the unfinished line */
    size_t max_line;           /* 0: 16 MiB */
    uint64_t lines;            /* lines delivered */
    bool failed;
} gs_live_lines;
void gs_live_lines_init(gs_live_lines *l, size_t max_line);
/* Feed n bytes; fn's non-zero return stops and is returned (err set by fn). */
int gs_live_lines_feed(gs_live_lines *l, const char *p, size_t n, gs_live_line_fn fn, void *ctx,
                       gs_error *err);
/* The stream ended: a last line without '\n' goes to fn (the server always ends one). */
int gs_live_lines_finish(gs_live_lines *l, gs_live_line_fn fn, void *ctx, gs_error *err);
void gs_live_lines_free(gs_live_lines *l);

/* A streaming request: like gs_live_do (credentials, rate limiter, 401 retry), but a 2xx
 * body goes to fn as it arrives instead of into memory. A non-2xx answer is collected
 * (bounded) into rs and made an error as gs_live_do does. The transfer ends early when
 * *stop becomes non-zero (checked at least once a second: rs->http keeps the status, the
 * return is 0 and *ended is GS_LIVE_END_STOPPED) or when no byte arrives for idle_ms (0:
 * none; GS_LIVE_END_IDLE). fn's non-zero return aborts it and is returned. */
typedef enum gs_live_end {
    GS_LIVE_END_CLOSED = 0,    /* the server ended the body (timeoutSeconds, shutdown) */
    GS_LIVE_END_STOPPED,       /* *stop was set */
    GS_LIVE_END_IDLE,          /* nothing for idle_ms */
    GS_LIVE_END_GONE,          /* watch: 410 (HTTP or an ERROR event): relist */
    GS_LIVE_END_ERROR,         /* the call returned -1 */
} gs_live_end;
/* fn gets the body's bytes as they come: 0 goes on, > 0 ends the transfer without an error
 * (gs_live_stream returns 0, *ended GS_LIVE_END_STOPPED), < 0 aborts it (err set by fn;
 * gs_live_stream returns -1, *ended GS_LIVE_END_ERROR). */
typedef int (*gs_live_data_fn)(void *ctx, const char *p, size_t n, gs_error *err);
int gs_live_stream(gs_live_client *c, const gs_live_request *rq, gs_live_data_fn fn, void *ctx,
                   const volatile int *stop, long idle_ms, gs_live_response *rs, gs_live_end *ended,
                   gs_error *err);
/* A stop flag for every request and wait of this client (rate limiter, retry delays,
 * transfers): when *stop becomes non-zero they end within about a second (gs_live_do:
 * -1, GS_ERR_IO "stopped"). NULL: none. Set it before the client is used by its thread. */
void gs_live_client_set_stop(gs_live_client *c, const volatile int *stop);

/* One watch of a collection path. */
typedef struct gs_live_watch_opts {
    const char *resource_version; /* NULL or "": the server's choice (see below) */
    /* The streaming list (sendInitialEvents=true, resourceVersionMatch=NotOlderThan): the
     * current state as ADDED events, then a BOOKMARK with initial_events_end set. */
    bool send_initial_events;
    const char *label_selector, *field_selector;
    int timeout_s;             /* timeoutSeconds; 0: random in [300, 600) as client-go's
                                * reflector; the transfer itself may last 30 s more */
    long idle_ms;              /* no byte for this long ends the watch (0: 180 s; -1: never).
                                 * The API server bookmarks an idle watch every minute (the
                                 * first 60 to 120 s in) */
    size_t max_line;           /* 0: 16 MiB */
    const volatile int *stop;  /* non-zero: end the watch (checked at least once a second) */
} gs_live_watch_opts;

typedef struct gs_live_watch_result {
    gs_live_end end;
    int http;                  /* the answer's status (0: none) */
    uint64_t events;           /* events given to fn (bookmarks included, ERROR not) */
    char resource_version[GS_LIVE_RV_MAX]; /* the last event's (or the start's) rv */
    bool initial_events_end;   /* the streaming list's end bookmark arrived */
} gs_live_watch_result;

/* Events to fn (ERROR events are not given to fn: a 410 ends the watch with
 * GS_LIVE_END_GONE and returns 0; any other ERROR is an error with the Status message).
 * allowWatchBookmarks is always set. 0 when the watch ended (closed, stopped, idle, gone:
 * res->end says which; resume from res->resource_version unless gone), -1 with err on a
 * transport failure, a refused request (res->http), a bad line or fn's error. */
typedef int (*gs_live_watch_event_fn)(void *ctx, const gs_live_watch_event *ev, gs_error *err);
int gs_live_watch(gs_live_client *c, const char *path, const gs_live_watch_opts *o,
                  gs_live_watch_event_fn fn, void *ctx, gs_live_watch_result *res, gs_error *err);

/* ---------------------------------------------------------------- kinds and the object store
 *
 * One store holds the objects of a cluster, per kind, as the API server sent them minus
 * what no reader looks at (gs_read_key_unread: managedFields, env, volumes, statuses,
 * node images, ...; and the kubectl.kubernetes.io/last-applied-configuration annotation),
 * keyed by "namespace/name" (cluster-scoped kinds: "name"). A one-shot read (the CLI) and
 * the informers (list + watch) fill it the same way; gs_live_store_snapshot hands it to
 * the snapshot reader, so files and live clusters give one model and one set of rules.
 * Thread-safe: informer threads put while another thread takes snapshots. */

typedef enum gs_live_kind {
    /* the kinds of a snapshot, in the order a snapshot reads them (kubectl's order in
     * `kubectl get nodes,namespaces,priorityclasses,resourcequotas,poddisruptionbudgets,pods,
     * deviceclasses,resourceclaims,resourceclaimtemplates,resourceslices -A -o json`) */
    GS_LIVE_NODE = 0,
    GS_LIVE_NAMESPACE,
    GS_LIVE_PRIORITYCLASS,
    GS_LIVE_RESOURCEQUOTA,
    GS_LIVE_PDB,
    GS_LIVE_POD,
    /* resource.k8s.io/v1 (DRA), optional: a cluster that does not serve them (404: before
     * Kubernetes 1.34, or the API turned off) or a user who may not list them (403) reads
     * as none of them, with one warning in the snapshot */
    GS_LIVE_DEVICECLASS,
    GS_LIVE_RESOURCECLAIM,
    GS_LIVE_RESOURCECLAIMTEMPLATE,
    GS_LIVE_RESOURCESLICE,
    /* watched for the faces to come (monitor, extender, agent), not read into snapshots
     * by default: a live cluster's controllers already created their pods */
    GS_LIVE_EVENT,          /* events.k8s.io/v1 */
    GS_LIVE_DAEMONSET,
    GS_LIVE_DEPLOYMENT,
    GS_LIVE_REPLICASET,
    GS_LIVE_STATEFULSET,
    GS_LIVE_JOB,
    GS_LIVE_CRONJOB,
    GS_LIVE_NKINDS
} gs_live_kind;

#define GS_LIVE_KIND_BIT(k) (1u << (k))
/* Node, Namespace, PriorityClass, ResourceQuota, PodDisruptionBudget, Pod, DeviceClass,
 * ResourceClaim, ResourceClaimTemplate, ResourceSlice */
#define GS_LIVE_SNAPSHOT_KINDS 0x3ffu

typedef struct gs_live_kind_info {
    const char *kind;        /* "PriorityClass" */
    const char *api_version; /* "scheduling.k8s.io/v1" */
    const char *resource;    /* "priorityclasses" */
    bool namespaced;
    bool optional;           /* a 404 or 403 on its list reads as none (gs_live_store_list) */
} gs_live_kind_info;
const gs_live_kind_info *gs_live_kind_get(gs_live_kind k);
/* By resource name ("pods") or kind ("Pod"), case-insensitive; -1 when unknown. */
int gs_live_kind_find(const char *name);
/* The collection path: "/api/v1/pods"; with a namespace (namespaced kinds only)
 * "/api/v1/namespaces/<ns>/pods"; "/apis/apps/v1/daemonsets". NULL when cap is too small. */
const char *gs_live_kind_path(gs_live_kind k, const char *ns, char *buf, size_t cap);

typedef struct gs_live_store gs_live_store;
gs_live_store *gs_live_store_new(gs_error *err);
void gs_live_store_free(gs_live_store *st);

/* Add or replace one object (its JSON text, as in a list item or a watch event's object;
 * kind and apiVersion are added when absent, as kubectl does for list items). The text is
 * pruned, then stored compactly. GS_ERR_PARSE on text that is not a JSON object with
 * metadata.name. */
int gs_live_store_put(gs_live_store *st, gs_live_kind k, const char *obj, size_t len, gs_error *err);
/* Remove the object (a DELETED event's object; only its metadata is looked at). Removing
 * an object that is not there is not an error. */
int gs_live_store_delete(gs_live_store *st, gs_live_kind k, const char *obj, size_t len, gs_error *err);
/* Every item of one List page (a gs_live_list page) put. */
int gs_live_store_put_list(gs_live_store *st, gs_live_kind k, const char *page, size_t len, gs_error *err);
/* A relist replaces a kind: objects not put between begin and end are removed at end
 * (the DELETED events a watch missed while it was gone). */
void gs_live_store_replace_begin(gs_live_store *st, gs_live_kind k);
void gs_live_store_replace_end(gs_live_store *st, gs_live_kind k);

typedef struct gs_live_store_stats {
    size_t objects;          /* objects held */
    size_t bytes;            /* pruned JSON held (their texts) */
    size_t overhead;         /* index and free space in the store's buffers */
    size_t received;         /* bytes of object text given to put since the store began */
    uint64_t changes;        /* puts that changed something and deletes that removed one */
} gs_live_store_stats;
void gs_live_store_stats_get(gs_live_store *st, gs_live_kind k, gs_live_store_stats *out);
/* Changes to any kind since the store began: a consumer compares it with the value it
 * saw last to know whether a new snapshot is worth taking. */
uint64_t gs_live_store_version(gs_live_store *st);

/* An observer sees every change as it is made (the monitor keeps its own facts from it):
 * for each object put, changed or not (a relist puts every object again), `raw` is the
 * text as given and `text` the pruned text the store keeps; for each object removed (a
 * delete, or a relist's end) raw and text are NULL. The key ("ns/name" or "name") is not
 * NUL-terminated. Called from the thread that changes the store, with the store locked:
 * the observer must be quick and must not call back into the store. One observer per
 * store; fn NULL removes it. */
typedef void (*gs_live_store_observer)(void *ctx, gs_live_kind k, const char *key, size_t klen,
                                       const char *raw, size_t raw_len, const char *text,
                                       size_t text_len);
void gs_live_store_observe(gs_live_store *st, gs_live_store_observer fn, void *ctx);

/* The objects of kind k in the API server's list order (keys bytewise: what etcd and the
 * watch cache return), each as its pruned JSON text. The store is locked during the walk:
 * fn must not call back into it. A non-zero return from fn stops the walk and is returned. */
typedef int (*gs_live_store_fn)(void *ctx, const char *key, const char *obj, size_t len);
int gs_live_store_each(gs_live_store *st, gs_live_kind k, gs_live_store_fn fn, void *ctx);
/* One object's pruned text by key ("ns/name" or "name") into out (reset first); 0 found,
 * 1 absent. */
int gs_live_store_get(gs_live_store *st, gs_live_kind k, const char *key, gs_strbuf *out);

/* List one kind (path: gs_live_kind_path) into the store as a relist: every page of
 * `limit` items (0: 500) put, a restart after an expired continue token restarts the
 * relist, objects not listed removed at the end. rv (NULL: not wanted) gets the list's
 * resourceVersion, where a watch continues. Nothing is removed when the list fails.
 * An optional kind (gs_live_kind_info.optional) answered 404 (not served) or 403 (not
 * allowed) is emptied instead, the answer kept for gs_live_store_snapshot's warning, and
 * 1 returned (err untouched); a later list that succeeds clears it. */
int gs_live_store_list(gs_live_client *c, gs_live_store *st, gs_live_kind k, const char *path, unsigned limit,
                       char *rv, size_t rv_cap, gs_error *err);

/* Read the kinds of `kinds` (GS_LIVE_KIND_BIT mask; 0: GS_LIVE_SNAPSHOT_KINDS) into s, in
 * the enum's order, each kind's objects in list order, through gs_snapshot_read_buffer:
 * the same reader and the same rules as files. `name` is the objects' src.file (the
 * cluster's name, e.g. "context kind-dev"); objects carry no line or column (0). Optional
 * kinds of the mask whose last list was refused (404/403) add one warning to s->warnings
 * per answer ("resource.k8s.io/v1 deviceclasses, ...: not served ..."). Does not call
 * gs_snapshot_finish. */
int gs_live_store_snapshot(gs_live_store *st, uint32_t kinds, gs_snapshot *s, const char *name,
                           const gs_read_opts *ro, gs_error *err);

/* One-shot read of a cluster (the CLI's live input): list every kind of `kinds` (0:
 * GS_LIVE_SNAPSHOT_KINDS), namespaced kinds in `namespace_` only when it is set and not
 * empty ("" or NULL: all namespaces), pages of `limit` (0: 500), into a store, then
 * gs_live_store_snapshot. A forbidden or failing list is an error with the server's Status
 * message (nothing is read into s then), except for the optional kinds (read as none, with
 * a warning). */
typedef struct gs_live_read_opts {
    const char *namespace_;
    uint32_t kinds;
    unsigned limit;
    const char *name;        /* src.file of the objects; NULL: "cluster" */
} gs_live_read_opts;
int gs_live_read_snapshot(gs_live_client *c, const gs_live_read_opts *o, gs_snapshot *s,
                          const gs_read_opts *ro, gs_error *err);

/* ---------------------------------------------------------------- informers
 *
 * An informer keeps kinds of a gs_live_store current: per kind a list (the streaming list
 * where the server has it, else pages), then watches from the list's resourceVersion,
 * events put into or deleted from the store; a 410 (the resourceVersion is gone) relists,
 * replacing the kind; a failure reconnects after an exponential backoff with jitter
 * (client-go's reflector: 800 ms, doubling, 30 s cap, reset after 2 minutes without one).
 * One thread per kind, each with its own client over the shared config (docs/live.md
 * "Informers"). */

typedef struct gs_live_informer gs_live_informer;

typedef struct gs_live_informer_opts {
    uint32_t kinds;               /* GS_LIVE_KIND_BIT mask; 0: GS_LIVE_SNAPSHOT_KINDS */
    const char *namespace_;       /* namespaced kinds in this namespace only; NULL/"": all */
    unsigned page_limit;          /* paged lists: 0: 500 */
    bool no_watch_list;           /* never try the streaming list (sendInitialEvents) */
    int watch_timeout_s;          /* 0: random in [300, 600) per watch */
    long idle_ms;                 /* gs_live_watch_opts.idle_ms (0: 180 s) */
    long backoff_initial_ms;      /* 0: 800 */
    long backoff_max_ms;          /* 0: 30000 */
    long backoff_reset_ms;        /* 0: 120000 */
    const gs_live_client_opts *client; /* each kind's client; NULL: defaults */
} gs_live_informer_opts;

/* cfg and st are borrowed and must outlive the informer. Nothing is sent yet. */
gs_live_informer *gs_live_informer_new(gs_live_config *cfg, gs_live_store *st, const gs_live_informer_opts *o,
                                       gs_error *err);
/* Start one thread per kind (again after a stop: resuming from each kind's last
 * resourceVersion, so a watch from an old one meets a 410 and relists). */
int gs_live_informer_start(gs_live_informer *inf, gs_error *err);
/* Ask every thread to stop and join them: within about a second (a transfer notices
 * its stop flag at least once a second; waits are cut short). Idempotent. */
void gs_live_informer_stop(gs_live_informer *inf);
/* Stops, joins, frees its clients. NULL is fine. */
void gs_live_informer_free(gs_live_informer *inf);

/* Whether kind k has been listed into the store since the informer began (stays true). */
bool gs_live_informer_synced(gs_live_informer *inf, gs_live_kind k);
/* Wait until every kind of `kinds` (0: the informer's) is synced: 0, or 1 after
 * timeout_ms (< 0: forever). */
int gs_live_informer_wait_synced(gs_live_informer *inf, uint32_t kinds, long timeout_ms);

typedef struct gs_live_informer_stats {
    bool synced;
    bool watch_list;          /* the last list was a streaming list */
    uint64_t events;          /* ADDED/MODIFIED/DELETED applied to the store */
    uint64_t bookmarks;
    uint64_t lists;           /* complete lists (paged or streaming), the first included */
    uint64_t relists;         /* lists after the first: after a 410 or a broken streaming list */
    uint64_t gone;            /* 410s met (HTTP or ERROR event) */
    uint64_t watches;         /* watches (streaming lists included) that ended after a 2xx answer */
    uint64_t reconnects;      /* failures followed by a backoff */
    uint64_t store_errors;    /* objects the store refused (skipped) */
    char resource_version[GS_LIVE_RV_MAX]; /* where the next watch starts */
    char last_error[256];     /* "" when none yet */
} gs_live_informer_stats;
void gs_live_informer_stats_get(gs_live_informer *inf, gs_live_kind k, gs_live_informer_stats *out);

/* Synchronous driving (tests, single-threaded tools; not while the threads run): one list
 * when kind k is not synced or a 410 asked for a relist, else one watch until it ends.
 * 0, or -1 with err (the caller decides about backoff). */
int gs_live_informer_step(gs_live_informer *inf, gs_live_kind k, gs_error *err);

#ifdef __cplusplus
}
#endif
#endif
