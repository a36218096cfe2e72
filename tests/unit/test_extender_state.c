/*
 * test_extender_state.c - the extender's device state (extender.h "device state"): whole
 * GPUs, shares packed best fit, MIG instances, time-slicing replicas, resolvable vs
 * unresolvable filter answers, prioritize order, the assume cache (idempotent reserve,
 * forget, TTL, confirmation), a restart rebuilt from the records, pods bound without a
 * record, preemption narrowing kube-scheduler's victims, and 8 threads reserving at once
 * never over-committing a device (checked on the returned records against fresh
 * inventories), and FGD scoring (a node order best fit does not give, the target workload's
 * refresh, MIG falling back to best fit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "gpusched/assign.h"
#include "gpusched/extender.h"
#include "gpusched/gpu.h"
#include "gpusched/sim.h"

static int64_t fake_ms;
static int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_ms;
}
static int64_t fake_wall(void *ctx)
{
    (void)ctx;
    return 1767323045;
}

static gs_ext_state *new_state(void)
{
    gs_error err;
    gs_error_clear(&err);
    gs_ext_state_opts o = {.assume_ttl_ms = 30000, .clock_ms = fake_clock, .wall_s = fake_wall};
    gs_ext_state *s = gs_ext_state_new(&o, &err);
    assert_non_null(s);
    gs_ext_state_set_ready(s, true);
    return s;
}

static void put(gs_ext_state *s, gs_live_kind k, const char *json)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_ext_state_put(s, k, json, strlen(json), &err) != 0)
        fail_msg("put: %s (%s)", err.msg, json);
}

/* Nodes: whole A100 80GB GPUs; MIG mixed (2x 3g.40gb on one GPU); time-sliced (replicas). */
static char *node_whole(const char *name, int gpus)
{
    static char buf[8][1024];
    static int i;
    char *b = buf[i++ & 7];
    snprintf(b, 1024,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\",\"nvidia.com/gpu.memory\":\"81920\","
             "\"nvidia.com/gpu.count\":\"%d\"}},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"nvidia.com/gpu\":\"%d\"}}}",
             name, gpus, gpus);
    return b;
}

static const char node_mig[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"mig\",\"labels\":{"
    "\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\",\"nvidia.com/gpu.count\":\"1\","
    "\"nvidia.com/mig.strategy\":\"mixed\"}},\"status\":{\"allocatable\":{\"nvidia.com/mig-3g.40gb\":\"2\"}}}";

static const char node_ts[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"ts\",\"labels\":{"
    "\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-40GB-SHARED\",\"nvidia.com/gpu.count\":\"2\","
    "\"nvidia.com/gpu.replicas\":\"4\",\"nvidia.com/gpu.sharing-strategy\":\"time-slicing\"}},"
    "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}";

#define UIDF "0f6c2a9e-54b1-4c1e-9d7e-%012d"

/* A pod: `res` is the container's limits JSON ("" none), `ann` extra annotations JSON
 * members ("" none), node "" = pending. */
static char *pod_json(int id, const char *res, const char *ann, const char *node, const char *phase, int prio,
                      const char *start)
{
    char *b = malloc(4096);
    char uid[40];
    snprintf(uid, sizeof uid, UIDF, id);
    snprintf(b, 4096,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ml\","
             "\"uid\":\"%s\",\"annotations\":{%s}},\"spec\":{\"nodeName\":\"%s\",\"priority\":%d,"
             "\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":{%s}}}]},"
             "\"status\":{\"phase\":\"%s\"%s%s%s}}",
             id, uid, ann, node, prio, res, phase, start ? ",\"startTime\":\"" : "", start ? start : "",
             start ? "\"" : "");
    return b;
}

static gs_snapshot psnap;

static const gs_pod *pod_of(const char *json)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_free(&psnap);
    gs_snapshot_init(&psnap);
    if (gs_snapshot_read_buffer(&psnap, "pod", json, strlen(json), NULL, &err) != 0)
        fail_msg("pod: %s", err.msg);
    assert_int_equal(psnap.pods.n, 1);
    return &psnap.pods.v[0];
}

/* pod id with res/ann, pending */
static const gs_pod *pending(int id, const char *res, const char *ann)
{
    char *j = pod_json(id, res, ann, "", "Pending", 0, NULL);
    const gs_pod *p = pod_of(j);
    free(j);
    return p;
}

/* Reserve; returns rc and copies the record into *rec (caller frees). */
static int reserve(gs_ext_state *s, const gs_pod *p, const char *node, char **rec)
{
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_error err;
    gs_error_clear(&err);
    int rc = gs_ext_state_reserve(s, p, node, &sb, &err);
    if (rec)
        *rec = rc >= 0 ? strdup(gs_strbuf_cstr(&sb)) : strdup(err.msg);
    gs_strbuf_free(&sb);
    return rc;
}

/* The bound pod as the informer would see it after the bind: same pod, the record as an
 * annotation, nodeName set, Running. */
static char *bound_with(int id, const char *res, const char *ann, const char *node, const char *rec, int prio)
{
    gs_strbuf a = GS_STRBUF_INIT;
    if (ann[0]) {
        gs_strbuf_add(&a, ann, strlen(ann));
        gs_strbuf_add(&a, ",", 1);
    }
    gs_strbuf_add(&a, "\"" GS_ASSIGN_ANNOTATION "\":\"", strlen(GS_ASSIGN_ANNOTATION) + 4);
    for (const char *c = rec; *c; c++) {
        if (*c == '"' || *c == '\\')
            gs_strbuf_add(&a, "\\", 1);
        gs_strbuf_add(&a, c, 1);
    }
    gs_strbuf_add(&a, "\"", 1);
    char *j = pod_json(id, res, gs_strbuf_cstr(&a), node, "Running", prio, "2026-01-01T00:00:00Z");
    gs_strbuf_free(&a);
    return j;
}

typedef struct fres {
    gs_arena arena;
    gs_ext_filter_result r;
} fres;

static void filter(gs_ext_state *s, const gs_pod *p, const char *const *names, uint32_t n, fres *f)
{
    gs_arena_init(&f->arena, 0);
    gs_error err;
    gs_error_clear(&err);
    if (gs_ext_state_filter(s, p, names, n, &f->arena, &f->r, &err) != 0)
        fail_msg("filter: %s", err.msg);
}

static const char *msg_of(const gs_ext_node_msg *m, uint32_t n, const char *node)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(m[i].node, node) == 0)
            return m[i].message;
    return NULL;
}

/* ---------------------------------------------------------------- tests */
static void test_whole(void **state)
{
    (void)state;
    gs_ext_state *s = new_state();
    put(s, GS_LIVE_NODE, node_whole("n1", 4));
    put(s, GS_LIVE_NODE, node_whole("n2", 1));
    /* a node without GPUs (its inventory is empty, not refused); seen in CI under UBSan */
    put(s, GS_LIVE_NODE,
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"cpu\"},"
        "\"status\":{\"allocatable\":{\"cpu\":\"8\"}}}");
    char *rec = NULL;
    assert_int_equal(reserve(s, pending(1, "\"nvidia.com/gpu\":2", ""), "n1", &rec), 0);
    assert_non_null(strstr(rec, "\"kind\":\"whole\""));
    assert_non_null(strstr(rec, "{\"gpu\":0,"));
    assert_non_null(strstr(rec, "{\"gpu\":1,"));
    free(rec);
    const char *names[] = {"n1", "n2", "ghost", "cpu"};
    fres f;
    filter(s, pending(2, "\"nvidia.com/gpu\":3", ""), names, 3, &f);
    assert_int_equal(f.r.nnodes, 0);
    assert_string_equal(msg_of(f.r.failed, f.r.nfailed, "n1"), "Insufficient nvidia.com/gpu");
    assert_string_equal(msg_of(f.r.unresolvable, f.r.nunresolvable, "n2"), "Insufficient nvidia.com/gpu");
    assert_non_null(msg_of(f.r.unresolvable, f.r.nunresolvable, "ghost"));
    gs_arena_free(&f.arena);
    filter(s, pending(3, "\"nvidia.com/gpu\":2", ""), names, 3, &f);
    assert_int_equal(f.r.nnodes, 1);
    assert_string_equal(f.r.nodes[0], "n1");
    assert_string_equal(msg_of(f.r.unresolvable, f.r.nunresolvable, "n2"), "Insufficient nvidia.com/gpu");
    gs_arena_free(&f.arena);
    /* a pod without a GPU request passes everywhere */
    filter(s, pending(4, "\"cpu\":\"1\"", ""), names, 4, &f);
    assert_int_equal(f.r.nnodes, 4);
    gs_arena_free(&f.arena);
    /* and a GPU pod does not fit the node without GPUs */
    filter(s, pending(5, "\"nvidia.com/gpu\":1", ""), names + 3, 1, &f);
    assert_int_equal(f.r.nnodes, 0);
    assert_non_null(msg_of(f.r.unresolvable, f.r.nunresolvable, "cpu"));
    gs_arena_free(&f.arena);
    gs_ext_state_free(s);
}

static void test_shares_pack(void **state)
{
    (void)state;
    gs_ext_state *s = new_state();
    put(s, GS_LIVE_NODE, node_whole("a", 1));
    put(s, GS_LIVE_NODE, node_whole("b", 1));
    const char *names[] = {"a", "b"};
    const char *half = "\"gpusched.io/gpu-milli\":\"500\"";
    gs_arena ar;
    gs_arena_init(&ar, 0);
    gs_error err;
    gs_error_clear(&err);
    gs_ext_host_priority *pr;
    /* empty nodes score alike */
    assert_int_equal(gs_ext_state_prioritize(s, pending(1, "", half), names, 2, &ar, &pr, &err), 0);
    assert_int_equal(pr[0].score, 5);
    assert_int_equal(pr[1].score, 5);
    char *r1, *r2, *r3;
    assert_int_equal(reserve(s, pending(1, "", half), "a", &r1), 0);
    /* best fit: the started GPU scores higher */
    assert_int_equal(gs_ext_state_prioritize(s, pending(2, "", half), names, 2, &ar, &pr, &err), 0);
    assert_string_equal(pr[0].host, "a");
    assert_int_equal(pr[0].score, 10);
    assert_int_equal(pr[1].score, 5);
    assert_int_equal(reserve(s, pending(2, "", half), "a", &r2), 0);
    assert_non_null(strstr(r1, "\"gpu\":0,\"milli\":500"));
    assert_non_null(strstr(r2, "\"gpu\":0,\"milli\":500"));
    /* the third one: a is full now (resolvable), b passes */
    fres f;
    filter(s, pending(3, "", half), names, 2, &f);
    assert_int_equal(f.r.nnodes, 1);
    assert_string_equal(f.r.nodes[0], "b");
    assert_non_null(msg_of(f.r.failed, f.r.nfailed, "a"));
    gs_arena_free(&f.arena);
    assert_int_equal(gs_ext_state_prioritize(s, pending(3, "", half), names, 2, &ar, &pr, &err), 0);
    assert_int_equal(pr[0].score, 0);
    assert_int_equal(pr[1].score, 5);
    assert_int_equal(reserve(s, pending(3, "", half), "a", &r3), -1);
    free(r3);
    assert_int_equal(reserve(s, pending(3, "", half), "b", &r3), 0);
    free(r1);
    free(r2);
    free(r3);
    gs_arena_free(&ar);
    gs_ext_state_free(s);
}

static void test_mig(void **state)
{
    (void)state;
    gs_ext_state *s = new_state();
    put(s, GS_LIVE_NODE, node_mig);
    const char *res = "\"nvidia.com/mig-3g.40gb\":1";
    char *r1, *r2;
    assert_int_equal(reserve(s, pending(1, res, ""), "mig", &r1), 0);
    assert_int_equal(reserve(s, pending(2, res, ""), "mig", &r2), 0);
    assert_non_null(strstr(r1, "\"profile\":\"3g.40gb\""));
    const char *s1 = strstr(r1, "\"start\":"), *s2 = strstr(r2, "\"start\":");
    assert_non_null(s1);
    assert_non_null(s2);
    assert_true(atoi(s1 + 8) != atoi(s2 + 8)); /* distinct instances */
    const char *names[] = {"mig"};
    fres f;
    filter(s, pending(3, res, ""), names, 1, &f);
    assert_string_equal(msg_of(f.r.failed, f.r.nfailed, "mig"), "no MIG 3g.40gb instance free");
    gs_arena_free(&f.arena);
    filter(s, pending(4, "\"nvidia.com/mig-1g.10gb\":1", ""), names, 1, &f);
    assert_int_equal(f.r.nfailed, 0);
    assert_int_equal(f.r.nunresolvable, 1);
    gs_arena_free(&f.arena);
    free(r1);
    free(r2);
    gs_ext_state_free(s);
}

static void test_time_slicing(void **state)
{
    (void)state;
    gs_ext_state *s = new_state();
    put(s, GS_LIVE_NODE, node_ts);
    for (int i = 0; i < 8; i++)
        assert_int_equal(reserve(s, pending(i, "\"nvidia.com/gpu\":1", ""), "ts", NULL), 0);
    char *r;
    assert_int_equal(reserve(s, pending(9, "\"nvidia.com/gpu\":1", ""), "ts", &r), -1);
    assert_non_null(strstr(r, "Insufficient nvidia.com/gpu"));
    free(r);
    gs_node_gpus g;
    assert_int_equal(gs_ext_state_node_gpus(s, "ts", &g), 0);
    assert_int_equal(g.devs[0].slots_used, 4);
    assert_int_equal(g.devs[1].slots_used, 4);
    gs_node_gpus_free(&g);
    gs_ext_state_free(s);
}

static void test_idempotent_confirm_forget_ttl(void **state)
{
    (void)state;
    fake_ms = 1000;
    gs_ext_state *s = new_state();
    put(s, GS_LIVE_NODE, node_whole("n1", 2));
    const char *res = "\"nvidia.com/gpu\":1";
    char *r1, *r1b;
    assert_int_equal(reserve(s, pending(1, res, ""), "n1", &r1), 0);
    assert_int_equal(reserve(s, pending(1, res, ""), "n1", &r1b), 1);
    assert_string_equal(r1, r1b);
    free(r1b);
    assert_int_equal(reserve(s, pending(1, res, ""), "n2", &r1b), -1); /* elsewhere */
    free(r1b);
    /* forget releases */
    assert_int_equal(reserve(s, pending(2, res, ""), "n1", NULL), 0);
    gs_node_gpus g;
    gs_ext_state_node_gpus(s, "n1", &g);
    assert_int_equal(g.devs[1].npods, 1);
    gs_node_gpus_free(&g);
    assert_int_equal(gs_ext_state_forget(s, "0f6c2a9e-54b1-4c1e-9d7e-000000000002"), 0);
    assert_int_equal(gs_ext_state_forget(s, "0f6c2a9e-54b1-4c1e-9d7e-000000000002"), 1);
    gs_ext_state_node_gpus(s, "n1", &g);
    assert_int_equal(g.devs[1].npods, 0);
    gs_node_gpus_free(&g);
    /* TTL: counted from bind_done */
    assert_int_equal(reserve(s, pending(3, res, ""), "n1", NULL), 0);
    fake_ms += 100000; /* a bind in flight never expires */
    gs_ext_state_expire(s);
    gs_ext_state_stats st;
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 2);
    assert_int_equal(gs_ext_state_bind_done(s, "0f6c2a9e-54b1-4c1e-9d7e-000000000003"), 0);
    fake_ms += 29000;
    gs_ext_state_expire(s);
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 2);
    fake_ms += 2000;
    const char *names[] = {"n1"};
    fres f; /* a decision expires it too */
    filter(s, pending(4, res, ""), names, 1, &f);
    gs_arena_free(&f.arena);
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 1);
    assert_int_equal(st.expired, 1);
    /* confirmation: pod 1 observed bound with the same record */
    char *b = bound_with(1, res, "", "n1", r1, 0);
    put(s, GS_LIVE_POD, b);
    free(b);
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 0);
    assert_int_equal(st.confirmed, 1);
    assert_int_equal(st.recorded, 1);
    gs_ext_state_node_gpus(s, "n1", &g);
    assert_int_equal(g.devs[0].npods, 1);
    assert_int_equal(g.devs[1].npods, 0);
    gs_node_gpus_free(&g);
    /* bind again after the observation: the same record, no new reservation */
    assert_int_equal(reserve(s, pending(1, res, ""), "n1", &r1b), 1);
    assert_string_equal(r1, r1b);
    free(r1b);
    free(r1);
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 0);
    gs_ext_state_free(s);
}

/* A pod deleted after its bind, before the informer saw it bound, ends its reservation;
 * a delete of the same name before the informer delivered the reserved pod (an older pod
 * of that name) does not. */
static void test_delete_ends_reservation(void **state)
{
    (void)state;
    fake_ms = 1000;
    gs_ext_state *s = new_state();
    put(s, GS_LIVE_NODE, node_whole("n1", 2));
    const char *res = "\"nvidia.com/gpu\":1";
    assert_int_equal(reserve(s, pending(1, res, ""), "n1", NULL), 0);
    assert_int_equal(reserve(s, pending(2, res, ""), "n1", NULL), 0);
    assert_int_equal(gs_ext_state_bind_done(s, "0f6c2a9e-54b1-4c1e-9d7e-000000000001"), 0);
    gs_ext_state_stats st;
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 2);
    /* p2: a delete of "ml/p2" before its pod was delivered: an older pod's, kept */
    gs_ext_state_delete(s, GS_LIVE_POD, "ml/p2");
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 2);
    /* p1 delivered pending (the bind's Binding not yet seen), then deleted: released */
    char *j = pod_json(1, res, "", "", "Pending", 0, NULL);
    put(s, GS_LIVE_POD, j);
    free(j);
    gs_ext_state_delete(s, GS_LIVE_POD, "ml/p1");
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, 1);
    gs_node_gpus g;
    assert_int_equal(gs_ext_state_node_gpus(s, "n1", &g), 0);
    assert_int_equal(g.devs[0].npods + g.devs[1].npods, 1);
    gs_node_gpus_free(&g);
    gs_ext_state_free(s);
}

static bool same_gpus(const gs_node_gpus *a, const gs_node_gpus *b)
{
    if (a->ndevs != b->ndevs || a->nmig != b->nmig)
        return false;
    for (uint32_t i = 0; i < a->ndevs; i++)
        if (a->devs[i].milli_used != b->devs[i].milli_used || a->devs[i].mem_used != b->devs[i].mem_used ||
            a->devs[i].slots_used != b->devs[i].slots_used || a->devs[i].npods != b->devs[i].npods)
            return false;
    for (uint32_t i = 0; i < a->nmig; i++)
        if (a->mig[i].used != b->mig[i].used)
            return false;
    return true;
}

static void test_restart_and_unrecorded(void **state)
{
    (void)state;
    gs_ext_state *s = new_state();
    char *objs[16];
    int no = 0;
    objs[no++] = strdup(node_whole("n1", 4));
    objs[no++] = strdup(node_mig);
    const char *half = "\"gpusched.io/gpu-milli\":\"500\"";
    struct {
        int id;
        const char *res, *ann, *node;
    } pl[] = {{1, "", half, "n1"}, {2, "\"nvidia.com/gpu\":1", "", "n1"}, {3, "\"nvidia.com/mig-3g.40gb\":1", "", "mig"},
              {4, "", half, "n1"}};
    for (int i = 0; i < no; i++)
        put(s, GS_LIVE_NODE, objs[i]);
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        char *rec;
        if (reserve(s, pending(pl[i].id, pl[i].res, pl[i].ann), pl[i].node, &rec) != 0)
            fail_msg("reserve %d: %s", pl[i].id, rec);
        objs[no] = bound_with(pl[i].id, pl[i].res, pl[i].ann, pl[i].node, rec, 0);
        put(s, GS_LIVE_POD, objs[no++]);
        free(rec);
    }
    /* a pod bound by someone else, no record: counted by the engine's rule */
    objs[no] = pod_json(9, "\"nvidia.com/gpu\":2", "", "n1", "Running", 0, "2026-01-01T00:00:00Z");
    put(s, GS_LIVE_POD, objs[no++]);
    gs_ext_state_stats st;
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.recorded, 4);
    assert_int_equal(st.reconstructed, 1);
    assert_int_equal(st.reservations, 0);
    const char *names[] = {"n1"};
    fres f;
    filter(s, pending(20, "\"nvidia.com/gpu\":1", ""), names, 1, &f);
    assert_int_equal(f.r.nfailed, 1); /* 0.5+0.5 on one, 1 whole, 2 unrecorded: full */
    gs_arena_free(&f.arena);

    /* restart: a new state fed the same objects (pods first this time) */
    gs_ext_state *s2 = new_state();
    for (int i = no - 1; i >= 0; i--)
        put(s2, strstr(objs[i], "\"kind\":\"Node\"") ? GS_LIVE_NODE : GS_LIVE_POD, objs[i]);
    const char *nodes[] = {"n1", "mig"};
    for (int i = 0; i < 2; i++) {
        gs_node_gpus a, b;
        assert_int_equal(gs_ext_state_node_gpus(s, nodes[i], &a), 0);
        assert_int_equal(gs_ext_state_node_gpus(s2, nodes[i], &b), 0);
        assert_true(same_gpus(&a, &b));
        gs_node_gpus_free(&a);
        gs_node_gpus_free(&b);
    }
    /* a repeated put is skipped */
    put(s2, GS_LIVE_POD, objs[no - 1]);
    gs_ext_state_stats_get(s2, &st);
    assert_int_equal(st.skipped, 1);
    /* the unrecorded pod finishes: released; then pod 2 is deleted: released */
    char *done = pod_json(9, "\"nvidia.com/gpu\":2", "", "n1", "Succeeded", 0, "2026-01-01T00:00:00Z");
    put(s2, GS_LIVE_POD, done);
    free(done);
    gs_ext_state_delete(s2, GS_LIVE_POD, "ml/p2");
    gs_node_gpus g;
    gs_ext_state_node_gpus(s2, "n1", &g);
    uint32_t busy = 0;
    for (uint32_t i = 0; i < g.ndevs; i++)
        busy += g.devs[i].npods > 0;
    assert_int_equal(busy, 1); /* only the two halves' GPU */
    gs_node_gpus_free(&g);
    /* not ready: decisions refuse */
    gs_ext_state_set_ready(s2, false);
    gs_arena ar;
    gs_arena_init(&ar, 0);
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_ext_state_filter(s2, pending(21, "\"nvidia.com/gpu\":1", ""), names, 1, &ar, &f.r, &err), -1);
    assert_int_equal(err.code, GS_ERR_IO);
    gs_arena_free(&ar);
    for (int i = 0; i < no; i++)
        free(objs[i]);
    gs_ext_state_free(s);
    gs_ext_state_free(s2);
}

static void test_preempt(void **state)
{
    (void)state;
    gs_ext_state *s = new_state();
    put(s, GS_LIVE_NODE, node_whole("a", 1));
    put(s, GS_LIVE_NODE, node_whole("b", 1));
    const char *half = "\"gpusched.io/gpu-milli\":\"500\"";
    const char *q40 = "\"gpusched.io/gpu-milli\":\"400\"";
    /* a: v1 (0.5, prio 1), v2 (0.5, prio 5); b: v4 (0.4, prio 1), v5 (0.4 prio 1) */
    struct {
        int id;
        const char *ann, *node;
        int prio;
    } pl[] = {{1, half, "a", 1}, {2, half, "a", 5}, {4, q40, "b", 1}, {5, q40, "b", 1}};
    for (size_t i = 0; i < 4; i++) {
        char *rec;
        assert_int_equal(reserve(s, pending(pl[i].id, "", pl[i].ann), pl[i].node, &rec), 0);
        char *b = bound_with(pl[i].id, "", pl[i].ann, pl[i].node, rec, pl[i].prio);
        put(s, GS_LIVE_POD, b);
        free(b);
        free(rec);
    }
    char u[5][40];
    for (int i = 0; i < 5; i++)
        snprintf(u[i], 40, UIDF, i + 1);
    gs_ext_victim va[] = {{u[0], "", ""}, {u[1], "", ""}, {u[2], "", ""}}; /* u[2]: no GPU here */
    gs_ext_victim vb[] = {{u[3], "", ""}};
    gs_ext_victims in[] = {{"a", va, 3, 2}, {"b", vb, 1, 0}, {"ghost", vb, 1, 0}};
    gs_arena ar;
    gs_arena_init(&ar, 0);
    gs_error err;
    gs_error_clear(&err);
    gs_ext_victims *out;
    uint32_t nout;
    /* a 0.5 preemptor: on a, v1 (lower priority) is enough; v2 reprieved; the victim
     * holding nothing here is kept. On b, removing v4 frees only 0.6: 0.4 + 0.5 > 1.0
     * with v5 staying? 1000 - 400 = 600 >= 500: it fits, b kept with v4. ghost dropped. */
    assert_int_equal(gs_ext_state_preempt(s, pending(30, "", half), in, 3, &ar, &out, &nout, &err), 0);
    assert_int_equal(nout, 2);
    assert_string_equal(out[0].node, "a");
    assert_int_equal(out[0].npods, 2);
    assert_string_equal(out[0].pods[0].uid, u[0]);
    assert_string_equal(out[0].pods[1].uid, u[2]);
    assert_int_equal(out[0].num_pdb_violations, 2);
    assert_string_equal(out[1].node, "b");
    assert_int_equal(out[1].npods, 1);
    /* a whole-GPU preemptor: b's one victim does not free the GPU (v5 stays): b dropped */
    assert_int_equal(gs_ext_state_preempt(s, pending(31, "\"nvidia.com/gpu\":1", ""), in, 3, &ar, &out, &nout, &err), 0);
    assert_int_equal(nout, 1);
    assert_string_equal(out[0].node, "a");
    assert_int_equal(out[0].npods, 3);
    /* the same with priority 10: kube-scheduler's dry run (node totals) sent v4 alone, the
     * devices need v5 gone too; v5 (priority 1 < 10) is added, in the UID form */
    char *j = pod_json(32, "\"nvidia.com/gpu\":1", "", "", "Pending", 10, NULL);
    const gs_pod *hi = pod_of(j);
    free(j);
    assert_int_equal(gs_ext_state_preempt(s, hi, in + 1, 1, &ar, &out, &nout, &err), 0);
    assert_int_equal(nout, 1);
    assert_string_equal(out[0].node, "b");
    assert_int_equal(out[0].npods, 2);
    assert_string_equal(out[0].pods[0].uid, u[3]);
    assert_string_equal(out[0].pods[1].uid, u[4]);
    assert_string_equal(out[0].pods[1].name, "");
    assert_int_equal(out[0].num_pdb_violations, 0);
    /* priority 1: v5 (priority 1) may not be added: b dropped */
    j = pod_json(33, "\"nvidia.com/gpu\":1", "", "", "Pending", 1, NULL);
    const gs_pod *eq = pod_of(j);
    free(j);
    assert_int_equal(gs_ext_state_preempt(s, eq, in + 1, 1, &ar, &out, &nout, &err), 0);
    assert_int_equal(nout, 0);
    /* a 0.5 preemptor of priority 10 sent v4 alone on b: 0.6 free is enough, v5 not added */
    j = pod_json(34, "", half, "", "Pending", 10, NULL);
    const gs_pod *hh = pod_of(j);
    free(j);
    assert_int_equal(gs_ext_state_preempt(s, hh, in + 1, 1, &ar, &out, &nout, &err), 0);
    assert_int_equal(nout, 1);
    assert_int_equal(out[0].npods, 1);
    assert_string_equal(out[0].pods[0].uid, u[3]);
    gs_arena_free(&ar);
    gs_ext_state_free(s);
}

/* ---------------------------------------------------------------- threads */
#define TN 20
#define TP 200
#define TT 8

typedef struct tctx {
    gs_ext_state *s;
    int t;
    char *rec[TP];
    int ok;
} tctx;

static void *worker(void *arg)
{
    tctx *c = arg;
    for (int i = c->t; i < TP; i += TT) {
        char *j = pod_json(1000 + i, "", "\"gpusched.io/gpu-milli\":\"300\"", "", "Pending", 0, NULL);
        gs_snapshot sn;
        gs_snapshot_init(&sn);
        gs_error err;
        gs_error_clear(&err);
        if (gs_snapshot_read_buffer(&sn, "pod", j, strlen(j), NULL, &err) == 0) {
            for (int k = 0; k < TN; k++) {
                char node[16];
                snprintf(node, sizeof node, "t%02d", (i + k) % TN);
                gs_strbuf sb = GS_STRBUF_INIT;
                if (gs_ext_state_reserve(c->s, &sn.pods.v[0], node, &sb, &err) == 0) {
                    c->rec[i] = gs_strbuf_detach(&sb);
                    c->ok++;
                    break;
                }
                gs_strbuf_free(&sb);
            }
        }
        gs_snapshot_free(&sn);
        free(j);
    }
    return NULL;
}

static void test_threads_never_overcommit(void **state)
{
    (void)state;
    gs_ext_state *s = new_state();
    char name[16];
    for (int n = 0; n < TN; n++) {
        snprintf(name, sizeof name, "t%02d", n);
        put(s, GS_LIVE_NODE, node_whole(name, 4));
    }
    tctx c[TT];
    pthread_t th[TT];
    for (int t = 0; t < TT; t++) {
        memset(&c[t], 0, sizeof c[t]);
        c[t].s = s;
        c[t].t = t;
        assert_int_equal(pthread_create(&th[t], NULL, worker, &c[t]), 0);
    }
    int ok = 0;
    for (int t = 0; t < TT; t++) {
        pthread_join(th[t], NULL);
        ok += c[t].ok;
    }
    assert_int_equal(ok, TP); /* capacity 20 x 4 x 3 = 240 */
    /* the invariant on the records: each node's records fit a fresh inventory together */
    gs_node_gpus inv[TN];
    for (int n = 0; n < TN; n++) {
        snprintf(name, sizeof name, "t%02d", n);
        const char *j = node_whole(name, 4);
        gs_snapshot sn;
        gs_snapshot_init(&sn);
        gs_error err;
        gs_error_clear(&err);
        assert_int_equal(gs_snapshot_read_buffer(&sn, "n", j, strlen(j), NULL, &err), 0);
        assert_int_equal(gs_node_gpus_build(&sn.nodes.v[0], &inv[n], &err), 0);
        gs_snapshot_free(&sn);
    }
    gs_assign_record *rec = malloc(sizeof *rec);
    for (int t = 0; t < TT; t++)
        for (int i = 0; i < TP; i++) {
            if (!c[t].rec[i])
                continue;
            gs_error err;
            gs_error_clear(&err);
            assert_int_equal(gs_assign_decode(c[t].rec[i], strlen(c[t].rec[i]), NULL, rec, &err), 0);
            int n = atoi(rec->node + 1);
            gs_gpu_assign a;
            if (gs_assign_check(rec, &inv[n], rec->node, GS_ASSIGN_CHECK_FREE, &a, &err) != 0)
                fail_msg("over-commit: %s: %s", c[t].rec[i], err.msg);
            gs_gpu_bind(&inv[n], &a);
            free(c[t].rec[i]);
        }
    free(rec);
    uint32_t used = 0;
    for (int n = 0; n < TN; n++) {
        for (uint32_t d = 0; d < inv[n].ndevs; d++)
            used += inv[n].devs[d].milli_used;
        gs_node_gpus_free(&inv[n]);
    }
    assert_int_equal(used, TP * 300);
    gs_ext_state_stats st;
    gs_ext_state_stats_get(s, &st);
    assert_int_equal(st.reservations, TP);
    gs_ext_state_free(s);
}

/* ---------------------------------------------------------------- FGD */
static gs_ext_state *new_state_fgd(void)
{
    gs_error err;
    gs_error_clear(&err);
    gs_ext_state_opts o = {.assume_ttl_ms = 30000, .clock_ms = fake_clock, .wall_s = fake_wall,
                           .score = GS_EXT_SCORE_FGD, .fgd_refresh_ms = 10000};
    gs_ext_state *s = gs_ext_state_new(&o, &err);
    assert_non_null(s);
    gs_ext_state_set_ready(s, true);
    return s;
}

/* reserve, then put the pod bound with its record (as the informer sees it after the bind) */
static void bind_share(gs_ext_state *s, int id, int milli, const char *node)
{
    char ann[64];
    snprintf(ann, sizeof ann, "\"gpusched.io/gpu-milli\":\"%d\"", milli);
    char *rec = NULL;
    if (reserve(s, pending(id, "", ann), node, &rec) != 0)
        fail_msg("reserve %d on %s: %s", id, node, rec);
    char *j = bound_with(id, "", ann, node, rec, 0);
    put(s, GS_LIVE_POD, j);
    free(j);
    free(rec);
}

static void prio(gs_ext_state *s, const gs_pod *p, const char *const *names, uint32_t n, gs_arena *ar,
                 int64_t *scores)
{
    gs_error err;
    gs_error_clear(&err);
    gs_ext_host_priority *pr;
    if (gs_ext_state_prioritize(s, p, names, n, ar, &pr, &err) != 0)
        fail_msg("prioritize: %s", err.msg);
    for (uint32_t i = 0; i < n; i++) {
        assert_string_equal(pr[i].host, names[i]);
        assert_true(pr[i].score >= GS_EXT_MIN_PRIORITY && pr[i].score <= GS_EXT_MAX_PRIORITY);
        scores[i] = pr[i].score;
    }
}

static uint64_t fgd_builds(gs_ext_state *s, uint32_t *pods, uint32_t *types)
{
    gs_ext_state_stats st;
    gs_ext_state_stats_get(s, &st);
    if (pods)
        *pods = st.fgd_pods;
    if (types)
        *types = st.fgd_types;
    return st.fgd_builds;
}

/* The same pods in a best-fit state and an FGD state: A (1 GPU, 0.4 used), B (1 GPU, empty),
 * C (8 GPUs, ten 0.5 shares on 5 of them). A 0.3 share asks. */
static void test_fgd_scores(void **state)
{
    (void)state;
    fake_ms = 0;
    gs_ext_state *bf = new_state(), *fg = new_state_fgd();
    gs_ext_state *both[2] = {bf, fg};
    for (int k = 0; k < 2; k++) {
        put(both[k], GS_LIVE_NODE, node_whole("fa", 1));
        put(both[k], GS_LIVE_NODE, node_whole("fb", 1));
        put(both[k], GS_LIVE_NODE, node_whole("fc", 8));
        put(both[k], GS_LIVE_NODE, node_mig);
        bind_share(both[k], 1, 400, "fa");
        for (int i = 0; i < 10; i++)
            bind_share(both[k], 10 + i, 500, "fc");
    }
    const char *names[] = {"fa", "fb"};
    const char *p3 = "\"gpusched.io/gpu-milli\":\"300\"";
    gs_arena ar;
    gs_arena_init(&ar, 0);
    int64_t sb[2], sf[2], again[2];
    prio(bf, pending(100, "", p3), names, 2, &ar, sb);
    prio(fg, pending(100, "", p3), names, 2, &ar, sf);
    /* best fit: A's GPU ends 700 used (score 70 -> 7), B's 300 (30 -> 3): A first */
    assert_int_equal(sb[0], 7);
    assert_int_equal(sb[1], 3);
    /* FGD. The target workload (GetTypicalPods, 95 %) of the 11 bound pods: 0.5 x1
     * (10/11 of the pods: 90.9 % < 95 %, so the next key is taken too) and 0.4 x1 (1/11).
     * A: left 600 -> 300. Before, both types fit its GPU: F = 0. After, 300 is too small
     * for either: F = 300 * 10/11 + 300 * 1/11 = 300. B: left 1000 -> 700, both types
     * still fit: F = 0 before and after. So A's fragmentation grows by 300 milli-GPU
     * (gs_fgd_score: int(sigmoid(-0.3) * 100) = 42 -> (42 + 5) / 10 = 4) and B's by
     * nothing (50 -> 5): FGD keeps A's 600 for a 0.5 pod and puts the 0.3 on B. */
    gs_frag_podres keys[11];
    keys[0] = (gs_frag_podres){100, 400, 1, ""};
    for (int i = 1; i < 11; i++)
        keys[i] = (gs_frag_podres){100, 500, 1, ""};
    gs_frag_target t;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_frag_target_workload(keys, 11, 95.0, &t, &err), 0);
    assert_int_equal(t.ntypes, 2);
    gs_frag_node a0 = {INT64_C(1) << 50, "", 1, {600}}, a1 = {INT64_C(1) << 50, "", 1, {300}};
    gs_frag_node b0 = {INT64_C(1) << 50, "", 1, {1000}}, b1 = {INT64_C(1) << 50, "", 1, {700}};
    double fa0 = gs_frag_node_amount(&a0, &t, NULL), fa1 = gs_frag_node_amount(&a1, &t, NULL);
    double fb0 = gs_frag_node_amount(&b0, &t, NULL), fb1 = gs_frag_node_amount(&b1, &t, NULL);
    assert_true(fa0 == 0.0 && fb0 == 0.0 && fb1 == 0.0);
    assert_true(fa1 > 299.999 && fa1 < 300.001);
    assert_int_equal(gs_fgd_score(fa0, fa1), 42);
    assert_int_equal(gs_fgd_score(fb0, fb1), 50);
    assert_int_equal(sf[0], (gs_fgd_score(fa0, fa1) + 5) / 10);
    assert_int_equal(sf[1], (gs_fgd_score(fb0, fb1) + 5) / 10);
    assert_true(sf[1] > sf[0]); /* FGD prefers B where best fit prefers A */
    gs_frag_target_free(&t);
    /* deterministic: the same answer again, from the same (cached) target */
    uint32_t np, nt;
    assert_int_equal(fgd_builds(fg, &np, &nt), 1);
    assert_int_equal(np, 11);
    assert_int_equal(nt, 2);
    for (int r = 0; r < 3; r++) {
        prio(fg, pending(100, "", p3), names, 2, &ar, again);
        assert_int_equal(again[0], sf[0]);
        assert_int_equal(again[1], sf[1]);
    }
    assert_int_equal(fgd_builds(fg, NULL, NULL), 1);
    /* a MIG request scores by best fit in the FGD state too */
    const char *mig[] = {"mig"};
    prio(bf, pending(101, "\"nvidia.com/mig-3g.40gb\":1", ""), mig, 1, &ar, sb);
    prio(fg, pending(101, "\"nvidia.com/mig-3g.40gb\":1", ""), mig, 1, &ar, sf);
    assert_int_equal(sb[0], sf[0]);
    assert_true(sf[0] > 0);
    /* a pod that does not fit scores 0 */
    prio(fg, pending(102, "", "\"gpusched.io/gpu-milli\":\"700\""), names, 2, &ar, sf);
    assert_int_equal(sf[0], 0);
    assert_int_equal(sf[1], 4); /* B: 1000 -> 300, too small for both types: F 0 -> 300 */
    gs_arena_free(&ar);
    gs_ext_state_free(bf);
    gs_ext_state_free(fg);
}

/* The target workload: the default (the pod being scored) while no pod holds a device;
 * rebuilt after fgd_refresh_ms, or at once when the pod count moved by more than 10 %. */
static void test_fgd_target_refresh(void **state)
{
    (void)state;
    fake_ms = 1000;
    gs_ext_state *s = new_state_fgd();
    put(s, GS_LIVE_NODE, node_whole("fa", 1));
    put(s, GS_LIVE_NODE, node_whole("fb", 1));
    put(s, GS_LIVE_NODE, node_whole("fc", 8));
    const char *names[] = {"fa", "fb"};
    gs_arena ar;
    gs_arena_init(&ar, 0);
    int64_t sc[2];
    /* a reservation holds 0.2 of A but no pod holds a device yet: the target is the asking
     * 0.45 pod itself. A: 800 -> 350, too small for another one: F 0 -> 350,
     * int(sigmoid(-0.35) * 100) = 41 -> 4; B: 1000 -> 550, still fits one: F 0 -> 0, 5.
     * (Best fit would say A 7, B 5.) */
    char *rec = NULL;
    assert_int_equal(reserve(s, pending(1, "", "\"gpusched.io/gpu-milli\":\"200\""), "fa", &rec), 0);
    free(rec);
    prio(s, pending(2, "", "\"gpusched.io/gpu-milli\":\"450\""), names, 2, &ar, sc);
    uint32_t np, nt;
    assert_int_equal(fgd_builds(s, &np, &nt), 1);
    assert_int_equal(np, 0);
    assert_int_equal(nt, 0);
    assert_int_equal(sc[0], 4);
    assert_int_equal(sc[1], 5);
    assert_int_equal(gs_ext_state_forget(s, "0f6c2a9e-54b1-4c1e-9d7e-000000000001"), 0);
    /* 10 bound pods: the count moved from 0: rebuilt at the next call */
    for (int i = 0; i < 10; i++)
        bind_share(s, 10 + i, 500, "fc");
    prio(s, pending(2, "", "\"gpusched.io/gpu-milli\":\"450\""), names, 2, &ar, sc);
    assert_int_equal(fgd_builds(s, &np, &nt), 2);
    assert_int_equal(np, 10);
    assert_int_equal(nt, 1);
    /* one more (10 %: not more than 10 %): kept */
    bind_share(s, 20, 1000, "fc");
    prio(s, pending(2, "", "\"gpusched.io/gpu-milli\":\"450\""), names, 2, &ar, sc);
    assert_int_equal(fgd_builds(s, &np, NULL), 2);
    assert_int_equal(np, 10);
    /* 10 s later: rebuilt, the whole-GPU pod counted */
    fake_ms += 10000;
    prio(s, pending(2, "", "\"gpusched.io/gpu-milli\":\"450\""), names, 2, &ar, sc);
    assert_int_equal(fgd_builds(s, &np, &nt), 3);
    assert_int_equal(np, 11);
    assert_int_equal(nt, 2);
    /* two more within the 10 s (2/11 > 10 %): rebuilt at once */
    bind_share(s, 21, 250, "fa");
    bind_share(s, 22, 250, "fc");
    prio(s, pending(2, "", "\"gpusched.io/gpu-milli\":\"450\""), names, 2, &ar, sc);
    assert_int_equal(fgd_builds(s, &np, &nt), 4);
    assert_int_equal(np, 13);
    assert_int_equal(nt, 3);
    gs_arena_free(&ar);
    gs_ext_state_free(s);
}

static int teardown_all(void **state)
{
    (void)state;
    gs_snapshot_free(&psnap);
    return 0;
}

static int setup_all(void **state)
{
    (void)state;
    gs_snapshot_init(&psnap);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_shares_pack),
        cmocka_unit_test(test_mig),
        cmocka_unit_test(test_time_slicing),
        cmocka_unit_test(test_idempotent_confirm_forget_ttl),
        cmocka_unit_test(test_delete_ends_reservation),
        cmocka_unit_test(test_restart_and_unrecorded),
        cmocka_unit_test(test_preempt),
        cmocka_unit_test(test_threads_never_overcommit),
        cmocka_unit_test(test_fgd_scores),
        cmocka_unit_test(test_fgd_target_refresh),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
