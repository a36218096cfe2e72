/*
 * read_int.h - private interface shared by the snapshot reader's files
 * (read.c: input, YAML tree, field helpers, object decoders;
 *  read_workloads.c: workload controllers expanded into pods, DaemonSets at finish;
 *  read_crd.c: workload custom resources; read_dra.c: resource.k8s.io kinds).
 *
 * The reader turns each document into a compact tree of gs_yn nodes (the shared builder,
 * lib/util/yaml_tree.c, in a scratch arena reset per document), then decodes the tree
 * into typed objects whose strings and arrays live in the snapshot's arena.
 *
 * Errors: every helper that fails fills the reader's gs_error through gs_rd_fail(),
 * which adds the file, the line/column of the offending node and the object path
 * ("Pod default/x: spec.containers[0].resources"). Helpers that take a parent mapping
 * and a key push the key onto the path themselves before failing.
 */
#ifndef GPUSCHED_KUBE_READ_INT_H
#define GPUSCHED_KUBE_READ_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/kube.h"
#include "util/yaml_tree_int.h"

/* ---------------------------------------------------------------- YAML tree */
/* gs_yn, the shared positioned YAML tree (lib/util/yaml_tree_int.h). Scalar text is NOT
 * NUL-terminated here and lives either in the input buffer or in the scratch arena; both
 * outlive the document's decoding. */

/* ---------------------------------------------------------------- reader state */
/* A DaemonSet waiting for gs_snapshot_finish(): its decoded pod template (tolerations
 * already extended with the controller's automatic ones). Lives in the snapshot arena. */
typedef struct gs_rd_daemonset {
    struct gs_rd_daemonset *next;
    gs_pod tmpl;
    gs_src src;
} gs_rd_daemonset;

/* An object as written, for the duplicate warnings of gs_snapshot_finish(). */
typedef struct gs_rd_objrec {
    const char *kind;          /* "Pod", "Job.batch.volcano.sh", ... */
    const char *ns;            /* "" for cluster-scoped */
    const char *name;
    gs_src src;
} gs_rd_objrec;

/* Heap state behind gs_snapshot.pending_daemonsets; freed by gs_snapshot_free(). */
typedef struct gs_rd_state {
    gs_intern skipped_ids;     /* kind string -> index into snapshot->skipped */
    gs_intern templated_ids;   /* kind string -> index into snapshot->templated */
    GS_VEC(gs_rd_objrec) objs; /* named objects as written, input order */
    gs_intern strings;         /* frequent small strings, deduplicated ... */
    GS_VEC(const char *) interned; /* ... id -> the one arena copy */
    gs_rd_daemonset *ds_head, *ds_tail;
    uint32_t max_objects;      /* from the last read, used by finish */
} gs_rd_state;

/* One read call: where errors go and the current object path. */
typedef struct gs_rd {
    gs_snapshot *s;
    gs_rd_state *st;
    gs_error *err;
    const char *file; /* in the snapshot arena */
    uint32_t max_objects;
    uint32_t max_replicas;
    bool no_positions;             /* gs_read_opts.no_positions */
    char obj[192]; /* "Pod default/train-0": kind <= 30, namespace <= 63, name <= 90 bytes */
    char path[GS_ERR_PATH_MAX];    /* "spec.containers[0]" */
    size_t plen;
    /* a JSON List whose items are streamed (parse_input) */
    const char *list_kind;         /* "PodList" (NULL: no List planned) */
    bool list_confirmed;           /* the streamed document's kind was list_kind */
    const char *list_inner;        /* "Pod", NULL for "List" */
    bool list_spec;                /* a pipe's List streamed before its kind was seen */
    const void *spec_root;         /* list_spec: the document's root (a gs_yn), kept for
                                      a root that proves not to be a List */
    struct gs_window *win;         /* a pipe's window, or NULL */
    bool spec_hold;                /* list_spec: an item needs the List's kind: the items
                                      from it on are held in the window, read at the end */
    size_t hold_off;               /* its offset in the window */
    uint32_t hold_index;
    const struct gs_mapped *map;   /* the mapped input, or NULL */
    const char *released;          /* mapped pages before this were let go */
} gs_rd;

/* ---------------------------------------------------------------- errors and paths */
int gs_rd_fail(gs_rd *r, const gs_yn *at, gs_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int gs_rd_nomem(gs_rd *r);
/* Each push returns a mark for gs_rd_pop(). */
size_t gs_rd_push(gs_rd *r, const char *field);             /* ".field" */
size_t gs_rd_push_index(gs_rd *r, uint32_t i);             /* "[i]" */
size_t gs_rd_push_key(gs_rd *r, const char *k, size_t n);  /* "[k]" */
void gs_rd_pop(gs_rd *r, size_t mark);
/* Set the object label from kind and the object's metadata (name, namespace). */
void gs_rd_set_object(gs_rd *r, const char *kind, const gs_yn *obj, bool namespaced);

/* ---------------------------------------------------------------- field helpers */
/* Value of key in mapping m, or NULL when m is not a mapping, the key is absent or the
 * value is null. */
const gs_yn *gs_rd_get(const gs_yn *m, const char *key);
/* Optional mapping / sequence field: *out = NULL when absent. */
int gs_rd_map(gs_rd *r, const gs_yn *m, const char *key, const gs_yn **out);
int gs_rd_seq(gs_rd *r, const gs_yn *m, const char *key, const gs_yn **out);
/* Check that node n is a mapping (the path must already name it). */
int gs_rd_expect_map(gs_rd *r, const gs_yn *n);
/* Optional string field (any scalar, copied to the arena); dflt when absent. */
int gs_rd_str(gs_rd *r, const gs_yn *m, const char *key, const char *dflt, const char **out);
/* Optional integer field (plain scalar), range-checked; *has says whether it was present. */
int gs_rd_int(gs_rd *r, const gs_yn *m, const char *key, int64_t min, int64_t max, bool *has,
              int64_t *out);
/* Optional boolean field. */
int gs_rd_bool(gs_rd *r, const gs_yn *m, const char *key, bool *out);
/* Deduplicated arena copy for strings that repeat (names of resources, label keys). */
const char *gs_rd_intern(gs_rd *r, const char *s, size_t n);
/* Optional string field, interned (names that repeat: classes, drivers, pools). */
int gs_rd_istr(gs_rd *r, const gs_yn *m, const char *key, const char *dflt, const char **out);
/* Text of scalar n (the path names it): "" for null; an error for collections. */
int gs_rd_text(gs_rd *r, const gs_yn *n, bool intern, const char **out);
/* Whether n is the scalar s. */
bool gs_rd_text_is(const gs_yn *n, const char *s);
/* "a mapping", "a sequence" or the quoted scalar, for messages (buf: GS_YT_SHOWN + 8). */
const char *gs_rd_describe(const gs_yn *n, char *buf, size_t cap);
/* Arena array of n elements (NULL when n is 0; *oom on failure). */
void *gs_rd_array(gs_rd *r, size_t n, size_t sz, bool *oom);
/* Quantity scalar v (the path names it): "invalid quantity ..." otherwise. */
int gs_rd_quantity(gs_rd *r, const gs_yn *v, gs_quantity *q);
/* Optional core NodeSelector field {nodeSelectorTerms} (the node-affinity decoder). */
int gs_rd_node_selector(gs_rd *r, const gs_yn *m, const char *key, const gs_node_selector **out);

/* ---------------------------------------------------------------- decoders */
/* metadata of obj into m (src = obj's position; input_index is set when stored). */
int gs_rd_meta(gs_rd *r, const gs_yn *obj, bool namespaced, gs_meta *m);
/* labels from template metadata (labels, annotations) only. */
int gs_rd_template_meta(gs_rd *r, const gs_yn *tmeta, gs_meta *m);
/* Pod spec into pod (scheduler name and other defaults applied). */
int gs_rd_pod_spec(gs_rd *r, const gs_yn *spec, gs_pod *pod);
/* Check the max_objects bound before adding n objects (error at node `at`). */
int gs_rd_reserve_objects(gs_rd *r, const gs_yn *at, uint64_t n);

/* Remember a named object for the duplicate warnings (objects without a name are not). */
int gs_rd_note_object(gs_rd *r, const char *kind, const gs_meta *m);

/* read_workloads.c: Deployment, ReplicaSet, StatefulSet, Job, CronJob, DaemonSet. */
int gs_rd_workload(gs_rd *r, const gs_yn *obj, const char *kind);
/* A PodTemplateSpec node decoded as a pod (path must name the template); host_network
 * may be NULL. */
int gs_rd_pod_template(gs_rd *r, const gs_yn *tmpl, gs_pod *pod, bool *host_network);
/* Pods a Job spec runs at once (parallelism, completions - succeeded, suspend); at and
 * field name the node and field that decided the count. */
int gs_rd_job_active_pods(gs_rd *r, const gs_yn *jspec, int64_t succeeded, int64_t *count,
                          const gs_yn **at, const char **field);
/* "<base>-<i>" in the arena. */
char *gs_rd_pod_name(gs_arena *a, const char *base, uint64_t i);
/* Keep a workload (or one template of a custom resource) in snapshot->workloads. */
int gs_rd_store_workload(gs_rd *r, const gs_meta *wm, const char *kind, int32_t replicas,
                         const gs_pod *tmpl, const char *role, uint32_t part);
/* "required field is missing (what)" at node `at`, with field pushed on the path. */
int gs_rd_missing(gs_rd *r, const gs_yn *at, const char *field, const char *what);

/* read_crd.c: workload custom resources with pod templates. */
typedef enum gs_rd_crd_kind {
    GS_RD_CRD_JOBSET = 1,
    GS_RD_CRD_LWS,
    GS_RD_CRD_KUBEFLOW,
    GS_RD_CRD_RAYCLUSTER,
    GS_RD_CRD_RAYJOB,
    GS_RD_CRD_RAYSERVICE,
    GS_RD_CRD_VOLCANO_JOB,
} gs_rd_crd_kind;
/* Decode the custom resource obj; label is the kind as findings show it. */
int gs_rd_crd(gs_rd *r, const gs_yn *obj, gs_rd_crd_kind which, const char *label);
/* read_dra.c: resource.k8s.io DeviceClass, ResourceClaim, ResourceClaimTemplate and
 * ResourceSlice (v1, v1beta2, v1beta1 shapes into the v1 model). version: "v1", ... */
typedef enum gs_rd_dra_kind {
    GS_RD_DRA_CLASS = 1,
    GS_RD_DRA_CLAIM,
    GS_RD_DRA_CLAIM_TEMPLATE,
    GS_RD_DRA_SLICE,
} gs_rd_dra_kind;
int gs_rd_dra(gs_rd *r, const gs_yn *obj, gs_rd_dra_kind which);

/* Expand the pending DaemonSets over the snapshot's nodes. */
int gs_rd_expand_daemonsets(gs_snapshot *s, gs_rd_state *st, gs_error *err);

#endif
