/*
 * extender.h - `gpusched extender`: kube-scheduler's HTTP extender protocol and the
 * parts built on it.
 *
 * ================================================================ protocol
 * The wire types of kube-scheduler's extender (`extender/v1`), decoded from the request
 * bodies kube-scheduler POSTs and encoded into the answers it reads (docs/extender.md,
 * "Protocol"). The upstream types have no JSON tags: the keys are the Go field names
 * ("Pod", "NodeNames", "FailedNodes", "Host", ...).
 *
 * Decoding follows Go's encoding/json where kube-scheduler relies on it: keys of the
 * extender types match case-insensitively (Unicode simple folding, so "nodenames",
 * "NODENAMES" and "NodeName\u017F" all name NodeNames), unknown keys are ignored (their
 * values are still checked as JSON), `null` is an unset pointer, slice or map (and
 * leaves a string "" and a number 0). Stricter than Go: a key of an extender type given
 * twice (in any case) and a node named twice in one map are refused (Go would keep the
 * last), and strings holding a NUL character are refused. The embedded Kubernetes
 * objects (the Pod, the NodeList's items) are read by the snapshot reader
 * (gs_snapshot_read_buffer), with the same rules, defaults and limits as every other
 * input: exact key case there, as Kubernetes writes them. A Pod or NodeList without
 * apiVersion/kind (kube-scheduler sends its informer's objects, whose type fields are
 * empty) is taken as v1 Pod / v1 NodeList. Of a victim pod only metadata.uid, .namespace
 * and .name are read.
 *
 * Bodies are untrusted: never read past body[len) (no NUL needed); the whole body must be
 * one strict JSON object (RFC 8259, UTF-8); sizes and counts are bounded by
 * gs_ext_limits while scanning.
 *
 * Errors: GS_ERR_PARSE with line:col for malformed JSON or bad UTF-8; GS_ERR_INVALID for
 * well-formed JSON of the wrong shape, with the field path in err->path ("Pod",
 * "NodeNames[3]", "NodeNameToVictims[n1].Pods[0].metadata.uid"; the reader's own object
 * path for a bad Pod, e.g. "Pod default/x: spec.containers[0]...") and line:col of the
 * value; GS_ERR_LIMIT when a limit is exceeded; GS_ERR_NOMEM.
 *
 * Encoding writes compact JSON, capitalized keys in the upstream field order, valid
 * UTF-8 whatever the strings hold (gs_strbuf_json_str), maps in the order given
 * (callers pass each node once). Answers never fail: an out-of-memory strbuf is sticky
 * (sb->oom).
 *
 * Ownership: decoded strings and arrays live in the caller's `arena` (one per request);
 * the decoded Pod and Nodes live in the struct's own snapshot, released by the matching
 * *_free() (after a failed decode there is nothing to free, but calling it is harmless).
 * The body is not referenced after decoding. Nothing here prints or exits.
 */
#ifndef GPUSCHED_EXTENDER_H
#define GPUSCHED_EXTENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/gpu.h"
#include "gpusched/kube.h"
#include "gpusched/live.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- protocol */
#define GS_EXT_MIN_PRIORITY 0  /* MinExtenderPriority */
#define GS_EXT_MAX_PRIORITY 10 /* MaxExtenderPriority */

/* Defaults of gs_ext_limits (a 0 field means its default). 16 MiB holds a NodeList of
 * about 2,000 real nodes (non-cache mode); in cache mode a body is a pod and the names
 * (100,000 names are about 3 MiB). */
#define GS_EXT_MAX_BODY_DEFAULT (16u * 1024u * 1024u)
#define GS_EXT_MAX_NODES_DEFAULT 100000u  /* NodeNames, Nodes.items, victim map entries */
#define GS_EXT_MAX_VICTIMS_DEFAULT 10000u /* victim pods of one node */
#define GS_EXT_MAX_DEPTH 128              /* JSON nesting (GS_ERR_LIMIT beyond) */

typedef struct gs_ext_limits {
    size_t max_body;      /* bytes of one body; 0 = GS_EXT_MAX_BODY_DEFAULT */
    uint32_t max_nodes;   /* entries of NodeNames, of Nodes.items, and nodes of a victims
                             map; 0 = GS_EXT_MAX_NODES_DEFAULT */
    uint32_t max_victims; /* pods of one node's victims; 0 = GS_EXT_MAX_VICTIMS_DEFAULT */
} gs_ext_limits;

/* ExtenderArgs: the filter and prioritize request. */
typedef struct gs_ext_args {
    gs_snapshot snap;         /* owns pod and nodes */
    const gs_pod *pod;        /* Pod, decoded (never NULL after a successful decode) */
    const char *pod_json;     /* the Pod's bytes as sent (in the arena, NUL-terminated) */
    size_t pod_json_len;
    bool cache_mode;          /* NodeNames was given (not null): nodeCacheCapable */
    bool has_nodes;           /* Nodes was given (not null) */
    /* The candidate names in the order sent: NodeNames in cache mode, else the names of
     * Nodes.items (NULL/0 when neither was given). */
    const char **node_names;
    uint32_t nnode_names;
    const gs_node *nodes;     /* Nodes.items decoded, in order (snap.nodes); NULL/0 when
                                 Nodes is null or empty */
    uint32_t nnodes;
    const char *nodes_json;   /* the NodeList's bytes as sent (arena), NULL when null */
    size_t nodes_json_len;
} gs_ext_args;

/* ExtenderBindingArgs: the bind request. Every field is required (non-empty). */
typedef struct gs_ext_binding_args {
    const char *pod_name;      /* PodName */
    const char *pod_namespace; /* PodNamespace */
    const char *pod_uid;       /* PodUID */
    const char *node;          /* Node */
} gs_ext_binding_args;

/* One victim pod: MetaPod {UID} (cache mode) or a v1.Pod (uid, namespace, name). */
typedef struct gs_ext_victim {
    const char *uid;        /* never empty after a decode */
    const char *namespace_; /* "" for a MetaPod */
    const char *name;       /* "" for a MetaPod */
} gs_ext_victim;

/* Victims or MetaVictims of one node (an entry of NodeNameTo[Meta]Victims). */
typedef struct gs_ext_victims {
    const char *node;
    gs_ext_victim *pods; /* Pods, in order */
    uint32_t npods;
    int64_t num_pdb_violations; /* NumPDBViolations */
} gs_ext_victims;

/* ExtenderPreemptionArgs: the preempt request. */
typedef struct gs_ext_preemption_args {
    gs_snapshot snap;     /* owns pod */
    const gs_pod *pod;    /* Pod, decoded */
    const char *pod_json; /* as in gs_ext_args */
    size_t pod_json_len;
    bool has_victims;     /* NodeNameToVictims given (not null): non-cache mode */
    gs_ext_victims *victims; /* its entries, in the order sent */
    uint32_t nvictims;
    bool has_meta_victims; /* NodeNameToMetaVictims given (not null): cache mode */
    gs_ext_victims *meta_victims;
    uint32_t nmeta_victims;
} gs_ext_preemption_args;

/* Decoders. lim NULL = defaults. On failure out holds nothing (zeroed). */
int gs_ext_args_decode(const char *body, size_t len, const gs_ext_limits *lim, gs_arena *arena,
                       gs_ext_args *out, gs_error *err);
void gs_ext_args_free(gs_ext_args *a);
int gs_ext_binding_args_decode(const char *body, size_t len, const gs_ext_limits *lim, gs_arena *arena,
                               gs_ext_binding_args *out, gs_error *err);
int gs_ext_preemption_args_decode(const char *body, size_t len, const gs_ext_limits *lim, gs_arena *arena,
                                  gs_ext_preemption_args *out, gs_error *err);
void gs_ext_preemption_args_free(gs_ext_preemption_args *a);

/* A node and a message (FailedNodes, FailedAndUnresolvableNodes). */
typedef struct gs_ext_node_msg {
    const char *node;
    const char *message;
} gs_ext_node_msg;

/* ExtenderFilterResult. cache_mode: the passing nodes go out as NodeNames (and
 * "Nodes":null); otherwise as Nodes, a NodeList whose items carry only metadata.name
 * (kube-scheduler reads nothing else of them), and "NodeNames":null. An empty map is
 * written null. error NULL = "". */
typedef struct gs_ext_filter_result {
    bool cache_mode;
    const char *const *nodes; /* passing nodes, in order */
    uint32_t nnodes;
    const gs_ext_node_msg *failed; /* FailedNodes: preemption may help */
    uint32_t nfailed;
    const gs_ext_node_msg *unresolvable; /* FailedAndUnresolvableNodes: it cannot */
    uint32_t nunresolvable;
    const char *error; /* Error: non-empty fails the scheduling attempt */
} gs_ext_filter_result;

/* HostPriority. */
typedef struct gs_ext_host_priority {
    const char *host;
    int64_t score; /* written clamped to GS_EXT_MIN_PRIORITY..GS_EXT_MAX_PRIORITY */
} gs_ext_host_priority;

/* {"Nodes":null,"NodeNames":["n2"],"FailedNodes":{"n1":"..."},
 *  "FailedAndUnresolvableNodes":null,"Error":""} */
void gs_ext_filter_result_encode(const gs_ext_filter_result *r, gs_strbuf *sb);
/* HostPriorityList: [{"Host":"myhost","Score":1},...] ([] when n is 0). */
void gs_ext_priorities_encode(const gs_ext_host_priority *v, uint32_t n, gs_strbuf *sb);
/* ExtenderBindingResult: {"Error":"..."} (error NULL = ""). */
void gs_ext_binding_result_encode(const char *error, gs_strbuf *sb);
/* ExtenderPreemptionResult: {"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"..."}],
 * "NumPDBViolations":0}}} — always the UID form; {} when n is 0 (ends preemption). */
void gs_ext_preemption_result_encode(const gs_ext_victims *v, uint32_t n, gs_strbuf *sb);

/* Request encoders (what kube-scheduler sends: for tests, benchmarks and clients).
 * gs_ext_args_encode writes pod_json and nodes_json as they are (they must be JSON
 * objects; pod_json NULL writes "Pod":null) and NodeNames from node_names when
 * cache_mode; victim pods of NodeNameToVictims are written as {"metadata":{"name",
 * "namespace","uid"}}. Decoding the output gives back the same values. */
void gs_ext_args_encode(const gs_ext_args *a, gs_strbuf *sb);
void gs_ext_binding_args_encode(const gs_ext_binding_args *a, gs_strbuf *sb);
void gs_ext_preemption_args_encode(const gs_ext_preemption_args *a, gs_strbuf *sb);

/* ---------------------------------------------------------------- device state
 * What `gpusched extender` answers filter, prioritize, bind and preempt from
 * (docs/extender.md, "Device state and decisions"), implemented in lib/extender/state.c.
 *
 * Held: per node its GPU inventory (gs_node_gpus_build on the node as the snapshot reader
 * reads it) and the devices held on it by
 *  - bound, non-terminal pods with a valid assignment record (gs_assign_decode with the
 *    pod's UID, gs_assign_check against the node): exactly the record's devices;
 *  - bound, non-terminal GPU pods without one (placed by another scheduler or by a device
 *    plugin alone): devices reconstructed by the engine's rule (gs_gpu_bound_cmp), after
 *    the recorded pods and the reservations; an invalid record counts as none;
 *  - reservations (the assume cache): devices chosen by gs_ext_state_reserve for a pod UID
 *    and not yet observed on the pod.
 * Succeeded/Failed and deleted pods hold nothing. A change of one pod or node recomputes
 * that node alone. Fed by a gs_live_store observer (gs_ext_state_observer: nodes and pods;
 * an object put again with the same text is skipped) or by gs_ext_state_put/_delete.
 *
 * Assume cache: a reservation is confirmed (dropped, the pod then holding the devices
 * itself) when the pod is observed bound to that node with the same record text; dropped
 * when the pod is observed bound otherwise, terminal or deleted, on gs_ext_state_forget (the
 * bind's API calls failed), and assume_ttl_ms after gs_ext_state_bind_done if never
 * observed. A reservation whose bind never finishes is kept (the caller always ends a bind
 * with bind_done or forget).
 *
 * Concurrency: every function is thread-safe. Filter, prioritize and preempt take a read
 * lock (any number at once); reserve, the observer and the assume-cache calls take the
 * write lock briefly (reserve: choose + reserve, no API call under it), so concurrent
 * reserves never over-commit a device. Decisions refuse (GS_ERR_IO "not ready") until
 * gs_ext_state_set_ready: after a restart, the caller sets it once the informer has listed
 * nodes and pods (gs_live_informer_wait_synced), so the first answer already counts every
 * recorded assignment.
 */
#define GS_EXT_ASSUME_TTL_MS_DEFAULT 30000
#define GS_EXT_FGD_REFRESH_MS_DEFAULT 10000

typedef struct gs_ext_state gs_ext_state;

/* What prioritize scores by (docs/extender.md, "What the verbs answer"). */
typedef enum gs_ext_score {
    GS_EXT_SCORE_BESTFIT = 0, /* gs_gpu_binpack_score: the devices end fuller */
    GS_EXT_SCORE_FGD,         /* FGD: the least increase of the node's fragmentation */
} gs_ext_score;

typedef struct gs_ext_state_opts {
    int64_t assume_ttl_ms;          /* 0: GS_EXT_ASSUME_TTL_MS_DEFAULT */
    gs_ext_score score;             /* prioritize's score (default best fit) */
    /* FGD's target workload is rebuilt from the bound GPU pods when it is this old, or at
     * once when the number of pods holding devices moved by more than 10 % since it was
     * built. 0: GS_EXT_FGD_REFRESH_MS_DEFAULT. */
    int64_t fgd_refresh_ms;
    /* Monotonic milliseconds for the TTL (NULL: CLOCK_MONOTONIC; tests use a fake one). */
    int64_t (*clock_ms)(void *ctx);
    void *clock_ctx;
    /* Unix seconds written as a record's time (NULL: time(NULL)). */
    int64_t (*wall_s)(void *ctx);
} gs_ext_state_opts;

gs_ext_state *gs_ext_state_new(const gs_ext_state_opts *o, gs_error *err);
void gs_ext_state_free(gs_ext_state *s); /* NULL is fine; detach the observer first */

/* The observer to install with gs_live_store_observe(store, gs_ext_state_observer, s)
 * before the informer starts; it takes GS_LIVE_NODE and GS_LIVE_POD and ignores the rest
 * (objects the reader refuses are counted in stats.bad_objects and skipped). */
void gs_ext_state_observer(void *state, gs_live_kind k, const char *key, size_t klen, const char *raw,
                           size_t raw_len, const char *text, size_t text_len);
/* One Node or Pod JSON object put (as a store put: replaces the one of the same key), or
 * removed by key ("name" for a node, "namespace/name" for a pod). 0, or -1 with err (the
 * reader's error) for put. */
int gs_ext_state_put(gs_ext_state *s, gs_live_kind k, const char *json, size_t len, gs_error *err);
void gs_ext_state_delete(gs_ext_state *s, gs_live_kind k, const char *key);
/* Put every node and pod the store holds now (a state attached to a store already
 * filled). */
int gs_ext_state_load(gs_ext_state *s, gs_live_store *st, gs_error *err);
void gs_ext_state_set_ready(gs_ext_state *s, bool ready);
bool gs_ext_state_ready(gs_ext_state *s);

/* Filter (cache mode): each of names[0..n) goes to out->nodes (the pod fits now), to
 * out->failed (not enough free now: "Insufficient nvidia.com/gpu", "no MIG 3g.40gb instance
 * free": preemption or finishing pods may help) or to out->unresolvable (never on that
 * node: no GPUs of the request's family, model or MIG profile, a request larger than the
 * node, a node not in the cache). A pod without a GPU request passes everywhere. Arrays
 * live in arena (the names are the caller's); out->cache_mode is set, error NULL. */
int gs_ext_state_filter(gs_ext_state *s, const gs_pod *pod, const char *const *names, uint32_t n,
                        gs_arena *arena, gs_ext_filter_result *out, gs_error *err);
/* Prioritize: out[0..n) (in arena), in the order of names, GS_EXT_MIN..MAX_PRIORITY;
 * 0 where the pod does not fit now or asks for no GPU. Deterministic. Per node where the
 * pod fits, on the devices gs_gpu_fit_node chooses (those reserve would take):
 *  - best fit (default): (gs_gpu_binpack_score + 5) / 10 (fuller after placing: higher);
 *  - FGD (opts.score): (gs_fgd_score(F_before, F_after) + 5) / 10, F the node's
 *    fragmentation amount (gs_frag_node_amount) against the target workload before and
 *    after placing: 5 when it does not change, lower the more it grows. The node as the
 *    measure sees it: per device, left = 1000 - milli_used; 0 for a device unhealthy,
 *    MIG-enabled, with every replica taken (a whole-GPU holder) or, on vGPU nodes, with
 *    its pod slots full; on time-sliced / MPS nodes at most 1000 * free replicas /
 *    replicas. cpu_left is 2^50 milli (the state does not track CPU: never short). The
 *    target workload: GetTypicalPods (95 %) of the pods holding devices (per pod: the
 *    largest per-device milli of its assignment, a replica counting 1000, and its device
 *    count; GPU type "" (any model); cpu 100), rebuilt under its own mutex as
 *    fgd_refresh_ms says; while no pod holds a device, one type: the pod being scored
 *    (its per-device share on the first node of names where it fits). MIG placements
 *    (MIG requests, whole GPUs on single-strategy nodes) and nodes of more than
 *    GS_SIM_MAX_GPUS devices score by best fit. */
int gs_ext_state_prioritize(gs_ext_state *s, const gs_pod *pod, const char *const *names, uint32_t n,
                            gs_arena *arena, gs_ext_host_priority **out, gs_error *err);

/* Reserve devices for pod (its metadata.uid) on node: gs_gpu_fit_node on the node's free
 * state (holders and other reservations counted), the record (gs_assign_from_pod +
 * gs_assign_encode) appended to record (reset first), the devices reserved. Returns 0 for
 * a new reservation, 1 when the pod already has one on that node or is already observed
 * there with a record (record then holds that same text: bind is idempotent per UID), -1
 * with err: not ready (GS_ERR_IO), node not in the cache (GS_ERR_NOTFOUND), the pod does
 * not fit or is reserved or bound elsewhere (GS_ERR_INVALID, the filter's message). The
 * caller then creates the Binding carrying the record as an annotation, and calls bind_done
 * (success) or forget (failure). */
int gs_ext_state_reserve(gs_ext_state *s, const gs_pod *pod, const char *node, gs_strbuf *record,
                         gs_error *err);
/* The bind's API calls succeeded: the reservation expires assume_ttl_ms from now unless
 * the pod is observed first. 0, or 1 when uid has no reservation. */
int gs_ext_state_bind_done(gs_ext_state *s, const char *uid);
/* Drop uid's reservation and release its devices. 0, or 1 when it had none. */
int gs_ext_state_forget(gs_ext_state *s, const char *uid);
/* Drop the reservations expired now (also done by every change and decision). */
void gs_ext_state_expire(gs_ext_state *s);

/* Preempt (cache mode): per node of in[0..n) (kube-scheduler's candidates), the victims
 * to send back. Of the victims that hold devices on that node in the state, the fewest of
 * the lowest priority whose removal lets the pod fit on the devices (kube-scheduler's
 * reprieve: all removed, then each put back, most important first (priority, then earlier
 * start), when the pod still fits). When removing them all is not enough (kube-scheduler's
 * dry run counts node totals, not devices), the node's other GPU pods of lower priority
 * than the pod are added, least important first, until it fits, and go through the same
 * reprieve; an added victim is returned in the UID form and counts no PDB violation (the
 * state holds no PDBs). Victims holding no device here are kept as they are (their removal
 * may be what the in-tree filters needed). A node where the pod cannot fit even then, or
 * that the state does not know, is dropped. NumPDBViolations is kept, capped at the sent
 * victims kept. *out (in arena; victim strings are the caller's or the arena's) gets the
 * nodes kept, in order. */
int gs_ext_state_preempt(gs_ext_state *s, const gs_pod *pod, const gs_ext_victims *in, uint32_t n,
                         gs_arena *arena, gs_ext_victims **out, uint32_t *nout, gs_error *err);

/* A deep copy of a node's current device state (holders and reservations applied) for
 * tests and inspection; free with gs_node_gpus_free. 0, or 1 when the node is unknown. */
int gs_ext_state_node_gpus(gs_ext_state *s, const char *node, gs_node_gpus *out);

typedef struct gs_ext_state_stats {
    uint32_t nodes;          /* nodes in the cache */
    uint32_t gpu_nodes;      /* of which with GPUs */
    uint32_t pods;           /* pods holding devices */
    uint32_t recorded;       /* of which by a valid record */
    uint32_t reconstructed;  /* of which by the engine's rule (no or invalid record) */
    uint32_t reservations;   /* assumed, not yet observed */
    uint64_t events;         /* puts and deletes applied (repeats skipped not counted) */
    uint64_t skipped;        /* puts skipped: same text as held */
    uint64_t bad_objects;    /* objects the reader refused */
    uint64_t bad_records;    /* records refused (decode or check); counted as no record */
    uint64_t reserved, confirmed, expired, forgotten, superseded; /* reservations */
    size_t bytes;            /* memory held (approximate) */
    /* FGD scoring: target workloads built, and the current one's pods and types */
    uint64_t fgd_builds;
    uint32_t fgd_pods, fgd_types;
} gs_ext_state_stats;
void gs_ext_state_stats_get(gs_ext_state *s, gs_ext_state_stats *out);

#ifdef __cplusplus
}
#endif
#endif
