/* test_inject.c - device injection by pod identity (lib/agent/inject.c): the host's device
 * numbers, and the rule from (pod UID, assignment record, container, node, inventory) to the
 * container's adjustment or a refusal. Inventories are built here (no NVML). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/inject.h"

#define UID_A "0f6c2a9e-54b1-4c1e-9d7e-3f5a8b2c1d40"
#define UID_B "7b1d0c3e-9a2f-4e11-8c6d-5a4b3c2d1e0f"
#define U0 "GPU-8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4d"
#define U1 "GPU-3c1f0b2a-7d4e-4f8a-9b6c-1e2d3f4a5b60"
#define U2 "GPU-11111111-2222-4333-8444-555555555555"
#define M0 "MIG-aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
#define M1 "MIG-bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee"

static gs_nvml_gpu gpus[3];
static gs_nvml_mig_device migs[2];
static gs_nvml_inventory inv;
static gs_inject_host host;
static gs_assign_record rec;

static void setup_inv(void)
{
    memset(gpus, 0, sizeof gpus);
    memset(migs, 0, sizeof migs);
    const char *u[] = {U0, U1, U2};
    for (unsigned i = 0; i < 3; i++) {
        gpus[i].index = i;
        snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "%s", u[i]);
        gpus[i].minor = (int)i + 4; /* minors need not equal indexes */
        gpus[i].memory_mib = 81920;
    }
    /* GPU 2 in MIG mode with two 3g.40gb instances */
    gpus[2].mig_current = 1;
    gpus[2].n_mig = 2;
    gpus[2].mig = migs;
    const char *mu[] = {M0, M1};
    for (unsigned j = 0; j < 2; j++) {
        migs[j].index = j;
        snprintf(migs[j].uuid, sizeof migs[j].uuid, "%s", mu[j]);
        migs[j].gpu_instance_id = 1 + j;
        migs[j].compute_instance_id = 0;
        snprintf(migs[j].profile, sizeof migs[j].profile, "3g.40gb");
    }
    memset(&inv, 0, sizeof inv);
    inv.n_gpus = 3;
    inv.gpus = gpus;
    gs_inject_host_init(&host);
    static const char devs[] = "Character devices:\n  1 mem\n195 nvidia-frontend\n235 nvidia-caps\n"
                               "510 nvidia-uvm\n\nBlock devices:\n  8 sd\n 99 nvidia-uvm\n";
    gs_inject_host_parse_devices(&host, devs, sizeof devs - 1);
    static const char caps[] = "config 1\nmonitor 2\ngpu6/gi1/access 21\ngpu6/gi1/ci0/access 22\n"
                               "gpu6/gi2/access 30\ngpu6/gi2/ci0/access 31\n";
    gs_error err;
    assert_int_equal(gs_inject_host_parse_mig_minors(&host, "mig-minors", caps, sizeof caps - 1, &err), 0);
}

static char recbuf[4096];

/* A record for pod uid on node, container name -> one device JSON (or none). */
static const char *record(const char *uid, const char *node, const char *kind, const char *ctrs)
{
    snprintf(recbuf, sizeof recbuf,
             "{\"v\":\"1.0\",\"node\":\"%s\",\"uid\":\"%s\",\"time\":\"2026-01-02T03:04:05Z\",\"kind\":\"%s\","
             "\"containers\":[%s]}",
             node, uid, kind, ctrs);
    return recbuf;
}

static int decide(const char *uid, const char *assignment, const char *ctr, const char *share, gs_inject_result *out,
                  gs_error *err)
{
    gs_inject_request r = {.pod_uid = uid, .pod_namespace = "ml", .pod_name = "p", .assignment = assignment,
                           .assignment_len = assignment ? strlen(assignment) : 0, .container = ctr,
                           .share_resource = share};
    return gs_inject_decide(&r, "gpu-a", &inv, &host, &rec, out, err);
}

static const char *env(const gs_inject_result *o, const char *k)
{
    for (size_t i = 0; i < o->n_env; i++)
        if (!strcmp(o->env[i].key, k))
            return o->env[i].value;
    return NULL;
}

static const gs_inject_node *node_at(const gs_inject_result *o, const char *path)
{
    for (size_t i = 0; i < o->n_nodes; i++)
        if (!strcmp(o->nodes[i].path, path))
            return &o->nodes[i];
    return NULL;
}

static gs_inject_result res;

static void host_tables(void **state)
{
    (void)state;
    setup_inv();
    assert_int_equal(host.uvm_major, 510); /* the block device of that name does not count */
    assert_int_equal(host.caps_major, 235);
    assert_int_equal(host.n_caps, 4);
    assert_int_equal(host.caps[1].gpu_minor, 6);
    assert_int_equal(host.caps[1].gi, 1);
    assert_int_equal(host.caps[1].ci, 0);
    assert_int_equal(host.caps[1].minor, 22);
    assert_int_equal(host.caps[0].ci, -1);
    gs_error err;
    static const char bad[] = "config 1\ngpu0/gi1/acces 3\n";
    assert_int_equal(gs_inject_host_parse_mig_minors(&host, "f", bad, sizeof bad - 1, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    assert_int_equal(err.line, 2);
    static const char bad2[] = "gpu0/gi1/access x\n";
    assert_int_equal(gs_inject_host_parse_mig_minors(&host, "f", bad2, sizeof bad2 - 1, &err), -1);
    gs_inject_host h2;
    gs_inject_host_init(&h2);
    gs_inject_host_parse_devices(&h2, "Character devices:\n195 nvidia\n", 30);
    assert_int_equal(h2.uvm_major, -1);
    assert_int_equal(h2.caps_major, -1);
}

/* Two identical pods (same request, same node) admitted together: each gets the GPU its own
 * record lists, whatever order the runtime creates them in. */
static void identical_pods_get_their_own_devices(void **state)
{
    (void)state;
    setup_inv();
    gs_error err;
    char ra[1024], rb[1024];
    snprintf(ra, sizeof ra, "%s",
             record(UID_A, "gpu-a", "share", "{\"name\":\"main\",\"devices\":[{\"gpu\":1,\"uuid\":\"" U1 "\",\"mem\":10240}]}"));
    snprintf(rb, sizeof rb, "%s",
             record(UID_B, "gpu-a", "share", "{\"name\":\"main\",\"devices\":[{\"gpu\":0,\"uuid\":\"" U0 "\",\"mem\":10240}]}"));
    /* B first, then A */
    assert_int_equal(decide(UID_B, rb, "main", "aliyun.com/gpu-mem", &res, &err), 0);
    assert_int_equal(res.action, GS_INJECT_DEVICES);
    assert_string_equal(env(&res, "NVIDIA_VISIBLE_DEVICES"), U0);
    assert_non_null(node_at(&res, "/dev/nvidia4"));
    assert_null(node_at(&res, "/dev/nvidia5"));
    assert_int_equal(decide(UID_A, ra, "main", "aliyun.com/gpu-mem", &res, &err), 0);
    assert_string_equal(env(&res, "NVIDIA_VISIBLE_DEVICES"), U1);
    const gs_inject_node *n = node_at(&res, "/dev/nvidia5");
    assert_non_null(n);
    assert_int_equal(n->major, 195);
    assert_int_equal(n->minor, 5);
    assert_null(node_at(&res, "/dev/nvidia4"));
    /* control nodes first */
    assert_string_equal(res.nodes[0].path, "/dev/nvidiactl");
    assert_int_equal(res.nodes[0].minor, 255);
    assert_string_equal(res.nodes[1].path, "/dev/nvidia-uvm");
    assert_int_equal(res.nodes[1].major, 510);
    assert_string_equal(res.nodes[2].path, "/dev/nvidia-uvm-tools");
    assert_int_equal(res.nodes[2].minor, 1);
    assert_int_equal(res.n_nodes, 4);
    /* no MPS configured: time-sliced, said so */
    assert_null(env(&res, "CUDA_MPS_PIPE_DIRECTORY"));
    assert_non_null(strstr(res.summary, "no isolation"));
    /* the record of pod A presented by pod B (a copied annotation) is refused */
    assert_int_equal(decide(UID_B, ra, "main", "aliyun.com/gpu-mem", &res, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "copied records are refused"));
    assert_non_null(strstr(err.path, "Pod ml/p container main: "));
}

static void container_not_listed_gets_void(void **state)
{
    (void)state;
    setup_inv();
    gs_error err;
    const char *r = record(UID_A, "gpu-a", "whole", "{\"name\":\"main\",\"devices\":[{\"gpu\":0}]}");
    assert_int_equal(decide(UID_A, r, "sidecar", NULL, &res, &err), 0);
    assert_int_equal(res.action, GS_INJECT_VOID);
    assert_int_equal(res.n_env, 1);
    assert_string_equal(env(&res, "NVIDIA_VISIBLE_DEVICES"), "void");
    assert_int_equal(res.n_nodes, 0);
    assert_int_equal(res.n_mounts, 0);
    /* listed: a whole GPU without UUID in the record takes NVML's */
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), 0);
    assert_string_equal(env(&res, "NVIDIA_VISIBLE_DEVICES"), U0);
}

static void no_record(void **state)
{
    (void)state;
    setup_inv();
    gs_error err;
    assert_int_equal(decide(UID_A, NULL, "main", NULL, &res, &err), 0);
    assert_int_equal(res.action, GS_INJECT_NONE);
    assert_int_equal(res.n_env + res.n_nodes, 0);
    assert_int_equal(decide(UID_A, NULL, "main", "alibabacloud.com/gpu-milli", &res, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "asks for alibabacloud.com/gpu-milli"));
    assert_non_null(strstr(err.msg, "no gpusched.io/assignment"));
}

static void refusals(void **state)
{
    (void)state;
    setup_inv();
    gs_error err;
    /* another node */
    const char *r = record(UID_A, "gpu-b", "whole", "{\"name\":\"main\",\"devices\":[{\"gpu\":0}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), -1);
    assert_non_null(strstr(err.msg, "for node \"gpu-b\", this is node \"gpu-a\""));
    /* a GPU the node does not have */
    r = record(UID_A, "gpu-a", "whole", "{\"name\":\"main\",\"devices\":[{\"gpu\":7}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    assert_non_null(strstr(err.path, "containers[0].devices[0]"));
    /* the UUID differs from NVML's */
    r = record(UID_A, "gpu-a", "whole", "{\"name\":\"main\",\"devices\":[{\"gpu\":0,\"uuid\":\"" U1 "\"}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), -1);
    assert_non_null(strstr(err.msg, "the record says " U1));
    /* a lost GPU */
    gpus[1].lost = 1;
    snprintf(gpus[1].lost_reason, sizeof gpus[1].lost_reason, "nvmlDeviceGetUUID: GPU is lost (15)");
    r = record(UID_A, "gpu-a", "whole", "{\"name\":\"main\",\"devices\":[{\"gpu\":1}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), -1);
    assert_non_null(strstr(err.msg, "GPU 1 is lost"));
    /* not JSON */
    assert_int_equal(decide(UID_A, "{\"v\":", "main", NULL, &res, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    /* a record but no pod UID in the sandbox */
    r = record(UID_A, "gpu-a", "whole", "{\"name\":\"main\",\"devices\":[{\"gpu\":0}]}");
    assert_int_equal(decide("", r, "main", NULL, &res, &err), -1);
    /* a whole GPU on a MIG-enabled GPU */
    r = record(UID_A, "gpu-a", "whole", "{\"name\":\"main\",\"devices\":[{\"gpu\":2}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), -1);
    assert_non_null(strstr(err.msg, "MIG mode"));
}

static void mig_device(void **state)
{
    (void)state;
    setup_inv();
    gs_error err;
    const char *r = record(UID_A, "gpu-a", "mig",
                           "{\"name\":\"main\",\"devices\":[{\"gpu\":2,\"uuid\":\"" M1 "\",\"mig\":{\"profile\":\"3g.40gb\","
                           "\"start\":4,\"resource\":\"nvidia.com/mig-3g.40gb\"}}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), 0);
    assert_string_equal(env(&res, "NVIDIA_VISIBLE_DEVICES"), M1);
    assert_non_null(node_at(&res, "/dev/nvidia6")); /* the parent */
    const gs_inject_node *gi = node_at(&res, "/dev/nvidia-caps/nvidia-cap30");
    const gs_inject_node *ci = node_at(&res, "/dev/nvidia-caps/nvidia-cap31");
    assert_non_null(gi);
    assert_non_null(ci);
    assert_int_equal(gi->major, 235);
    assert_null(node_at(&res, "/dev/nvidia-caps/nvidia-cap21"));
    /* without a UUID and two instances of the profile: ambiguous, refused */
    r = record(UID_A, "gpu-a", "mig",
               "{\"name\":\"main\",\"devices\":[{\"gpu\":2,\"mig\":{\"profile\":\"3g.40gb\",\"start\":0,"
               "\"resource\":\"nvidia.com/mig-3g.40gb\"}}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), -1);
    assert_non_null(strstr(err.msg, "without a UUID"));
    /* nvidia-caps unknown: the capability nodes are left out and the summary says so */
    host.caps_major = -1;
    host.uvm_major = -1;
    r = record(UID_A, "gpu-a", "mig",
               "{\"name\":\"main\",\"devices\":[{\"gpu\":2,\"uuid\":\"" M0 "\",\"mig\":{\"profile\":\"3g.40gb\","
               "\"start\":0,\"resource\":\"nvidia.com/mig-3g.40gb\"}}]}");
    assert_int_equal(decide(UID_A, r, "main", NULL, &res, &err), 0);
    assert_int_equal(res.n_nodes, 2); /* nvidiactl, nvidia6 */
    assert_non_null(strstr(res.summary, "MIG capabilities of " M0));
    assert_non_null(strstr(res.summary, "nvidia-uvm major unknown"));
}

static void mps_share_limits(void **state)
{
    (void)state;
    setup_inv();
    host.mps_pipe_dir = "/run/nvidia/mps/pipe";
    gs_error err;
    const char *r = record(UID_A, "gpu-a", "share",
                           "{\"name\":\"agent\",\"role\":\"sidecar\",\"devices\":[{\"gpu\":1,\"milli\":300,\"mem\":4000}]},"
                           "{\"name\":\"main\",\"devices\":[{\"gpu\":0,\"milli\":250,\"mem\":10240},"
                           "{\"gpu\":1,\"milli\":125,\"mem\":2048}]}");
    assert_int_equal(decide(UID_A, r, "main", "alibabacloud.com/gpu-milli", &res, &err), 0);
    assert_string_equal(env(&res, "NVIDIA_VISIBLE_DEVICES"), U0 "," U1);
    assert_string_equal(env(&res, "CUDA_MPS_PIPE_DIRECTORY"), "/run/nvidia/mps/pipe");
    assert_string_equal(env(&res, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "13"); /* the smallest share, rounded up */
    assert_string_equal(env(&res, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=10240M,1=2048M");
    assert_int_equal(res.n_mounts, 1);
    assert_string_equal(res.mounts[0].source, "/run/nvidia/mps/pipe");
    assert_non_null(node_at(&res, "/dev/nvidia4"));
    assert_non_null(node_at(&res, "/dev/nvidia5"));
    assert_int_equal(decide(UID_A, r, "agent", "alibabacloud.com/gpu-milli", &res, &err), 0);
    assert_string_equal(env(&res, "NVIDIA_VISIBLE_DEVICES"), U1);
    assert_string_equal(env(&res, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30");
    assert_string_equal(env(&res, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=4000M");
}

/* What live pods hold: a record that would over-commit a GPU is refused; released pods
 * free their share. */
static void book_overcommit(void **state)
{
    (void)state;
    setup_inv();
    gs_inject_book *b = gs_inject_book_new(&inv);
    assert_non_null(b);
    gs_error err;
    char r1[1024];
    snprintf(r1, sizeof r1, "%s",
             record(UID_A, "gpu-a", "share", "{\"name\":\"main\",\"devices\":[{\"gpu\":0,\"milli\":600,\"mem\":40960}]}"));
    assert_int_equal(gs_assign_decode(r1, strlen(r1), UID_A, &rec, &err), 0);
    assert_int_equal(gs_inject_book_admit(b, &rec, "gpu-a", &err), 0);
    assert_int_equal(gs_inject_book_admit(b, &rec, "gpu-a", &err), 1); /* its second container */
    unsigned m, mem;
    assert_true(gs_inject_book_used(b, 0, &m, &mem));
    assert_int_equal(m, 600);
    assert_int_equal(mem, 40960);
    /* B: 500 milli more on GPU 0 over-commits compute */
    const char *r2 = record(UID_B, "gpu-a", "share", "{\"name\":\"main\",\"devices\":[{\"gpu\":0,\"milli\":500,\"mem\":1024}]}");
    assert_int_equal(gs_assign_decode(r2, strlen(r2), UID_B, &rec, &err), 0);
    assert_int_equal(gs_inject_book_admit(b, &rec, "gpu-a", &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "over-committed: 600 milli in use + 500"));
    /* ... and memory: 40960 + 45000 > 81920 */
    r2 = record(UID_B, "gpu-a", "share", "{\"name\":\"main\",\"devices\":[{\"gpu\":0,\"milli\":100,\"mem\":45000}]}");
    assert_int_equal(gs_assign_decode(r2, strlen(r2), UID_B, &rec, &err), 0);
    assert_int_equal(gs_inject_book_admit(b, &rec, "gpu-a", &err), -1);
    assert_non_null(strstr(err.msg, "MiB"));
    assert_int_equal(gs_inject_book_pods(b), 1);
    /* A stops: B fits */
    assert_true(gs_inject_book_release(b, UID_A));
    assert_false(gs_inject_book_release(b, UID_A));
    assert_int_equal(gs_inject_book_admit(b, &rec, "gpu-a", &err), 0);
    assert_true(gs_inject_book_used(b, 0, &m, &mem));
    assert_int_equal(m, 100);
    /* a MIG record is booked without a check */
    const char *r3 = record(UID_A, "gpu-a", "mig",
                            "{\"name\":\"main\",\"devices\":[{\"gpu\":2,\"uuid\":\"" M0 "\",\"mig\":{\"profile\":\"3g.40gb\","
                            "\"start\":0,\"resource\":\"nvidia.com/mig-3g.40gb\"}}]}");
    assert_int_equal(gs_assign_decode(r3, strlen(r3), UID_A, &rec, &err), 0);
    assert_int_equal(gs_inject_book_admit(b, &rec, "gpu-a", &err), 0);
    assert_int_equal(gs_inject_book_pods(b), 2);
    gs_inject_book_clear(b);
    assert_int_equal(gs_inject_book_pods(b), 0);
    assert_true(gs_inject_book_used(b, 0, &m, &mem));
    assert_int_equal(m + mem, 0);
    assert_false(gs_inject_book_used(b, 9, &m, &mem));
    gs_inject_book_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_tables),
        cmocka_unit_test(identical_pods_get_their_own_devices),
        cmocka_unit_test(container_not_listed_gets_void),
        cmocka_unit_test(no_record),
        cmocka_unit_test(refusals),
        cmocka_unit_test(mig_device),
        cmocka_unit_test(mps_share_limits),
        cmocka_unit_test(book_overcommit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
