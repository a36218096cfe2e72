/* test_dra_driver.c - the agent as a DRA driver (lib/agent/dradriver.c): the device table
 * and ResourceSlice JSON (whole GPUs, MIG devices, NVIDIA's names and attribute types,
 * health), the ResourceClaim reader, the CDI spec, the checkpoint, and the running driver
 * over its sockets: GetInfo, NotifyRegistrationStatus, NodePrepareResources (v1 and
 * v1beta1 paths; idempotence, a restart from the checkpoint, per-claim errors) and
 * NodeUnprepareResources. Inventories are built here; claims come from a table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dra/v1/api.pb-c.h"
#include "gpusched/dradriver.h"
#include "gpusched/grpc.h"
#include "pluginregistration/v1/api.pb-c.h"
#include "util/json_int.h"

#define U0 "GPU-8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4d"
#define U1 "GPU-3c1f0b2a-7d4e-4f8a-9b6c-1e2d3f4a5b60"
#define U2 "GPU-11111111-2222-4333-8444-555555555555"
#define U3 "GPU-44444444-2222-4333-8444-555555555555"
#define M0 "MIG-aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
#define M1 "MIG-bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee"
#define CLAIM_UID "0f6c2a9e-54b1-4c1e-9d7e-3f5a8b2c1d40"

static gs_nvml_gpu gpus[4];
static gs_nvml_mig_device migs[2];
static gs_nvml_inventory inv;

static void setup_inv(void)
{
    memset(gpus, 0, sizeof gpus);
    memset(migs, 0, sizeof migs);
    memset(&inv, 0, sizeof inv);
    const char *u[] = {U0, U1, U2, U3};
    for (unsigned i = 0; i < 4; i++) {
        gpus[i].index = i;
        snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "%s", u[i]);
        snprintf(gpus[i].name, sizeof gpus[i].name, "NVIDIA H100 80GB HBM3");
        gpus[i].minor = (int)i + 4; /* minors need not equal indexes */
        gpus[i].memory_mib = 81559;
        gpus[i].cc_major = 9;
        gpus[i].cc_minor = 0;
        gpus[i].arch = 9;
        gpus[i].numa_node = -1;
        snprintf(gpus[i].pci_bus_id, sizeof gpus[i].pci_bus_id, "00000000:%02X:00.0", 0x1A + i);
    }
    /* GPU 2 in MIG mode: 1g.10gb (GI 9) and 3g.40gb+me-like 3g.40gb (GI 2) */
    gpus[2].mig_current = 1;
    gpus[2].n_mig = 2;
    gpus[2].mig = migs;
    const char *mu[] = {M0, M1};
    const char *prof[] = {"1g.10gb", "3g.40gb"};
    unsigned gi[] = {9, 2};
    for (unsigned j = 0; j < 2; j++) {
        migs[j].index = j;
        snprintf(migs[j].uuid, sizeof migs[j].uuid, "%s", mu[j]);
        migs[j].gpu_instance_id = gi[j];
        migs[j].compute_instance_id = 0;
        migs[j].memory_mib = j ? 40192 : 9856;
        migs[j].have_attributes = 1;
        migs[j].multiprocessors = j ? 60 : 16;
        migs[j].copy_engines = j ? 3 : 1;
        migs[j].decoders = j ? 2 : 1;
        migs[j].encoders = 0;
        migs[j].jpegs = j ? 2 : 1;
        migs[j].ofas = 0;
        snprintf(migs[j].profile, sizeof migs[j].profile, "%s", prof[j]);
    }
    /* GPU 3 fell off the bus */
    gpus[3].lost = 1;
    snprintf(inv.driver_version, sizeof inv.driver_version, "550.107.02");
    inv.cuda_driver_version = 12040;
    inv.cuda_major = 12;
    inv.cuda_minor = 4;
    inv.n_gpus = 4;
    inv.gpus = gpus;
}

static char tmpdir[64];

static void mkdirs(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    for (char *s = p + strlen(tmpdir) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void write_at(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static bool exists_at(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    return access(p, F_OK) == 0;
}

static int setup_dir(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gs-dra-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(tmpdir));
    setup_inv();
    /* a host: sysfs with GPU 0 under PCIe root pci0000:17, /proc tables for MIG caps */
    mkdirs("host/sys/devices/pci0000:17/0000:17:01.0/0000:1a:00.0");
    mkdirs("host/sys/bus/pci/devices");
    char link[512];
    snprintf(link, sizeof link, "%s/host/sys/bus/pci/devices/0000:1a:00.0", tmpdir);
    assert_int_equal(symlink("../../../devices/pci0000:17/0000:17:01.0/0000:1a:00.0", link), 0);
    mkdirs("host/proc/driver/nvidia-caps");
    write_at("host/proc/devices", "Character devices:\n195 nvidia-frontend\n235 nvidia-caps\n510 nvidia-uvm\n");
    write_at("host/proc/driver/nvidia-caps/mig-minors",
             "config 1\nmonitor 2\ngpu6/gi9/access 100\ngpu6/gi9/ci0/access 101\ngpu6/gi2/access 30\n"
             "gpu6/gi2/ci0/access 31\n");
    return 0;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* ---------------------------------------------------------------- helpers over JSON */

static gs_arena arena;

static const gs_jv *parse(const char *text)
{
    static gs_jv root;
    gs_error err;
    gs_arena_free(&arena);
    gs_arena_init(&arena, 0);
    if (gs_json_parse("t", 1, text, strlen(text), NULL, &arena, &root, &err) != 0)
        fail_msg("not JSON: %s\n%s", err.msg, text);
    return &root;
}

static const gs_jv *dev_named(const gs_jv *slice, const char *name)
{
    const gs_jv *devs = gs_json_get(gs_json_get(slice, "spec"), "devices");
    assert_non_null(devs);
    for (uint32_t i = 0; i < devs->n; i++) {
        const gs_jv *n = gs_json_get(&devs->kids[i], "name");
        if (n && strcmp(n->s, name) == 0)
            return &devs->kids[i];
    }
    return NULL;
}

/* attribute `key` of device d: its type ("string", "int", "version") and value text */
static const char *attr(const gs_jv *d, const char *key, const char *type)
{
    const gs_jv *a = gs_json_get(gs_json_get(d, "attributes"), key);
    if (!a)
        return NULL;
    const gs_jv *v = gs_json_get(a, type);
    assert_non_null(v);
    assert_int_equal(a->n, 1); /* exactly one typed value */
    return v->s;
}

static const char *capacity(const gs_jv *d, const char *key)
{
    const gs_jv *c = gs_json_get(gs_json_get(gs_json_get(d, "capacity"), key), "value");
    return c ? c->s : NULL;
}

/* ---------------------------------------------------------------- slice */

static void semver(void **state)
{
    (void)state;
    char v[32];
    assert_true(gs_drv_semver("550.107.02", v, sizeof v));
    assert_string_equal(v, "550.107.2");
    assert_true(gs_drv_semver("12.4", v, sizeof v));
    assert_string_equal(v, "12.4.0");
    assert_true(gs_drv_semver("9", v, sizeof v));
    assert_string_equal(v, "9.0.0");
    assert_false(gs_drv_semver("", v, sizeof v));
    assert_false(gs_drv_semver("1.2.3.4", v, sizeof v));
    assert_false(gs_drv_semver("1..2", v, sizeof v));
    assert_false(gs_drv_semver("1.2-rc1", v, sizeof v));
    assert_false(gs_drv_semver("12345678901.1", v, sizeof v));
}

static void slice_whole_and_mig(void **state)
{
    (void)state;
    gs_drv_devices devs;
    gs_error err;
    char sys[256];
    snprintf(sys, sizeof sys, "%s/host/sys", tmpdir);
    assert_int_equal(gs_drv_devices_build(&inv, sys, &devs, &err), 0);
    /* GPU 0, GPU 1 whole; GPU 2's two MIG devices; GPU 3 lost: 4 */
    assert_int_equal(devs.n, 4);
    assert_string_equal(devs.v[0].name, "gpu-4");
    assert_string_equal(devs.v[1].name, "gpu-5");
    assert_string_equal(devs.v[2].name, "gpu-6-mig-1g10gb-9-0");
    assert_string_equal(devs.v[3].name, "gpu-6-mig-3g40gb-2-0");
    assert_string_equal(devs.v[0].pcie_root, "pci0000:17");
    assert_string_equal(devs.v[1].pcie_root, "");
    assert_int_equal(gs_drv_device_find(&devs, "gpu-6-mig-3g40gb-2-0"), 3);
    assert_int_equal(gs_drv_device_by_uuid(&devs, M0), 2);
    assert_int_equal(gs_drv_device_find(&devs, "gpu-7"), -1);

    gs_strbuf sb = {0};
    assert_int_equal(gs_drv_slice_json(&inv, &devs, NULL, "gpu.nvidia.com", "node-a", 3, &sb, &err), 0);
    const gs_jv *s = parse(gs_strbuf_cstr(&sb));
    assert_string_equal(gs_json_get(s, "apiVersion")->s, "resource.k8s.io/v1");
    assert_string_equal(gs_json_get(s, "kind")->s, "ResourceSlice");
    assert_string_equal(gs_json_get(gs_json_get(s, "metadata"), "name")->s, "node-a-gpu.nvidia.com");
    const gs_jv *spec = gs_json_get(s, "spec");
    assert_string_equal(gs_json_get(spec, "driver")->s, "gpu.nvidia.com");
    assert_string_equal(gs_json_get(spec, "nodeName")->s, "node-a");
    const gs_jv *pool = gs_json_get(spec, "pool");
    assert_string_equal(gs_json_get(pool, "name")->s, "node-a");
    assert_string_equal(gs_json_get(pool, "generation")->s, "3");
    assert_string_equal(gs_json_get(pool, "resourceSliceCount")->s, "1");
    assert_int_equal(gs_json_get(spec, "devices")->n, 4);

    const gs_jv *g = dev_named(s, "gpu-4");
    assert_non_null(g);
    assert_string_equal(attr(g, "type", "string"), "gpu");
    assert_string_equal(attr(g, "uuid", "string"), U0);
    assert_string_equal(attr(g, "productName", "string"), "NVIDIA H100 80GB HBM3");
    assert_string_equal(attr(g, "architecture", "string"), "Hopper");
    assert_string_equal(attr(g, "cudaComputeCapability", "version"), "9.0.0");
    assert_string_equal(attr(g, "driverVersion", "version"), "550.107.2");
    assert_string_equal(attr(g, "cudaDriverVersion", "version"), "12.4.0");
    assert_string_equal(attr(g, "index", "int"), "0");
    assert_string_equal(attr(g, "minor", "int"), "4");
    assert_string_equal(attr(g, "pcieBusID", "string"), "0000:1a:00.0");
    assert_string_equal(attr(g, "resource.kubernetes.io/pcieRoot", "string"), "pci0000:17");
    assert_string_equal(capacity(g, "memory"), "81559Mi");
    /* no root known for GPU 1: the attribute is left out, not empty */
    assert_null(attr(dev_named(s, "gpu-5"), "resource.kubernetes.io/pcieRoot", "string"));

    const gs_jv *m = dev_named(s, "gpu-6-mig-1g10gb-9-0");
    assert_non_null(m);
    assert_string_equal(attr(m, "type", "string"), "mig");
    assert_string_equal(attr(m, "uuid", "string"), M0);
    assert_string_equal(attr(m, "parentUUID", "string"), U2);
    assert_string_equal(attr(m, "profile", "string"), "1g.10gb");
    assert_string_equal(attr(m, "productName", "string"), "NVIDIA H100 80GB HBM3");
    assert_string_equal(attr(m, "driverVersion", "version"), "550.107.2");
    assert_string_equal(attr(m, "parentMinor", "int"), "6");
    assert_string_equal(capacity(m, "multiprocessors"), "16");
    assert_string_equal(capacity(m, "copyEngines"), "1");
    assert_string_equal(capacity(m, "decoders"), "1");
    assert_string_equal(capacity(m, "encoders"), "0");
    assert_string_equal(capacity(m, "jpegEngines"), "1");
    assert_string_equal(capacity(m, "ofaEngines"), "0");
    assert_string_equal(capacity(m, "memory"), "9856Mi");
    /* the MIG-enabled parent and the lost GPU are not devices */
    assert_null(dev_named(s, "gpu-6"));
    assert_null(dev_named(s, "gpu-7"));

    /* an unhealthy device is left out */
    bool usable[4] = {true, false, true, true};
    assert_int_equal(gs_drv_slice_json(&inv, &devs, usable, "gpu.nvidia.com", "node-a", 4, &sb, &err), 0);
    s = parse(gs_strbuf_cstr(&sb));
    assert_int_equal(gs_json_get(gs_json_get(s, "spec"), "devices")->n, 3);
    assert_null(dev_named(s, "gpu-5"));
    assert_string_equal(gs_json_get(gs_json_get(gs_json_get(s, "spec"), "pool"), "generation")->s, "4");

    /* a name over 253 bytes is refused */
    char longnode[300];
    memset(longnode, 'a', 250);
    longnode[250] = '\0';
    assert_int_equal(gs_drv_slice_json(&inv, &devs, NULL, "gpu.nvidia.com", longnode, 1, &sb, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    gs_strbuf_free(&sb);
    gs_drv_devices_free(&devs);
}

/* ---------------------------------------------------------------- claim */

static char claimbuf[8192];

static const char *claim_json(const char *uid, const char *results)
{
    if (results)
        snprintf(claimbuf, sizeof claimbuf,
                 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c1\","
                 "\"namespace\":\"ml\",\"uid\":\"%s\"},\"spec\":{},\"status\":{\"allocation\":{\"devices\":"
                 "{\"results\":[%s]},\"nodeSelector\":{}}}}",
                 uid, results);
    else
        snprintf(claimbuf, sizeof claimbuf,
                 "{\"metadata\":{\"name\":\"c1\",\"namespace\":\"ml\",\"uid\":\"%s\"},\"spec\":{},\"status\":{}}", uid);
    return claimbuf;
}

#define RES(req, drv, pool, dev) \
    "{\"request\":\"" req "\",\"driver\":\"" drv "\",\"pool\":\"" pool "\",\"device\":\"" dev "\"}"

static void claim_reader(void **state)
{
    (void)state;
    gs_drv_claim c;
    gs_error err;
    const char *j = claim_json(CLAIM_UID, RES("gpu", "gpu.nvidia.com", "node-a", "gpu-4") ","
                                          RES("nic", "nic.example.com", "node-a", "eth0") ","
                                          RES("mig", "gpu.nvidia.com", "node-a", "gpu-6-mig-1g10gb-9-0"));
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &c, &err), 0);
    assert_string_equal(c.uid, CLAIM_UID);
    assert_string_equal(c.namespace_, "ml");
    assert_string_equal(c.name, "c1");
    assert_true(c.allocated);
    assert_int_equal(c.n_results, 2);
    assert_int_equal(c.n_other, 1);
    assert_string_equal(c.results[0].request, "gpu");
    assert_string_equal(c.results[1].device, "gpu-6-mig-1g10gb-9-0");

    j = claim_json(CLAIM_UID, NULL);
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &c, &err), 0);
    assert_false(c.allocated);

    /* bad input: errors, never a crash */
    static const char *const bad[] = {"", "[]", "{", "{\"metadata\":1}", "{\"metadata\":{\"uid\":5}}",
                                      "{\"metadata\":{},\"status\":{\"allocation\":{\"devices\":{\"results\":{}}}}}",
                                      "{\"metadata\":{},\"status\":{\"allocation\":{\"devices\":{\"results\":[1]}}}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(gs_drv_claim_parse(bad[i], strlen(bad[i]), "gpu.nvidia.com", &c, &err), -1);
    /* a result without a device */
    j = claim_json(CLAIM_UID, "{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"node-a\"}");
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &c, &err), -1);
    /* 33 results of ours */
    char many[8000] = "";
    for (int i = 0; i < 33; i++)
        strcat(many, i ? "," RES("g", "gpu.nvidia.com", "n", "gpu-0") : RES("g", "gpu.nvidia.com", "n", "gpu-0"));
    j = claim_json(CLAIM_UID, many);
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &c, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    /* an over-long uid */
    char longuid[100];
    memset(longuid, 'u', 80);
    longuid[80] = '\0';
    j = claim_json(longuid, NULL);
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &c, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
}

/* ---------------------------------------------------------------- CDI, checkpoint */

static void cdi_spec(void **state)
{
    (void)state;
    gs_drv_devices devs;
    gs_error err;
    assert_int_equal(gs_drv_devices_build(&inv, NULL, &devs, &err), 0);
    gs_inject_host host;
    gs_inject_host_init(&host);
    static const char d[] = "Character devices:\n235 nvidia-caps\n510 nvidia-uvm\n";
    gs_inject_host_parse_devices(&host, d, sizeof d - 1);
    static const char caps[] = "gpu6/gi9/access 100\ngpu6/gi9/ci0/access 101\ngpu6/gi2/access 30\n";
    assert_int_equal(gs_inject_host_parse_mig_minors(&host, "m", caps, sizeof caps - 1, &err), 0);
    gs_drv_claim c;
    const char *j = claim_json(CLAIM_UID, RES("gpu", "gpu.nvidia.com", "node-a", "gpu-4") ","
                                          RES("mig", "gpu.nvidia.com", "node-a", "gpu-6-mig-1g10gb-9-0"));
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &c, &err), 0);
    gs_strbuf sb = {0};
    assert_int_equal(gs_drv_cdi_json(&c, &inv, &devs, &host, &sb, &err), 0);
    const gs_jv *s = parse(gs_strbuf_cstr(&sb));
    assert_string_equal(gs_json_get(s, "cdiVersion")->s, "0.6.0");
    assert_string_equal(gs_json_get(s, "kind")->s, "gpusched.io/claim");
    const gs_jv *dv = gs_json_get(s, "devices");
    assert_int_equal(dv->n, 2);
    assert_string_equal(gs_json_get(&dv->kids[0], "name")->s, CLAIM_UID "-gpu-4");
    const gs_jv *n0 = gs_json_get(gs_json_get(&dv->kids[0], "containerEdits"), "deviceNodes");
    assert_int_equal(n0->n, 1);
    assert_string_equal(gs_json_get(&n0->kids[0], "path")->s, "/dev/nvidia4");
    const gs_jv *n1 = gs_json_get(gs_json_get(&dv->kids[1], "containerEdits"), "deviceNodes");
    assert_int_equal(n1->n, 3); /* the parent, GI 9 access, CI 0 access */
    assert_string_equal(gs_json_get(&n1->kids[0], "path")->s, "/dev/nvidia6");
    assert_string_equal(gs_json_get(&n1->kids[1], "path")->s, "/dev/nvidia-caps/nvidia-cap100");
    assert_string_equal(gs_json_get(&n1->kids[2], "path")->s, "/dev/nvidia-caps/nvidia-cap101");
    const gs_jv *ce = gs_json_get(s, "containerEdits");
    assert_string_equal(gs_json_get(ce, "env")->kids[0].s, "NVIDIA_VISIBLE_DEVICES=" U0 "," M0);
    const gs_jv *cn = gs_json_get(ce, "deviceNodes");
    assert_int_equal(cn->n, 3);
    assert_string_equal(gs_json_get(&cn->kids[0], "path")->s, "/dev/nvidiactl");
    assert_string_equal(gs_json_get(&cn->kids[1], "path")->s, "/dev/nvidia-uvm");
    char id[256];
    gs_drv_cdi_id(CLAIM_UID, "gpu-4", id, sizeof id);
    assert_string_equal(id, "gpusched.io/claim=" CLAIM_UID "-gpu-4");
    /* a device the node does not have */
    c.results[0].device[3] = '9';
    assert_int_equal(gs_drv_cdi_json(&c, &inv, &devs, &host, &sb, &err), -1);
    assert_int_equal(err.code, GS_ERR_NOTFOUND);
    gs_strbuf_free(&sb);
    gs_drv_devices_free(&devs);
}

static void checkpoint_round_trip(void **state)
{
    (void)state;
    gs_drv_claim a, b;
    gs_error err;
    const char *j = claim_json(CLAIM_UID, RES("gpu", "gpu.nvidia.com", "node-a", "gpu-4"));
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &a, &err), 0);
    j = claim_json("uid-2", RES("g\\\"x", "gpu.nvidia.com", "node-a", "gpu-5") ","
                            RES("m", "gpu.nvidia.com", "node-a", "gpu-6-mig-1g10gb-9-0"));
    assert_int_equal(gs_drv_claim_parse(j, strlen(j), "gpu.nvidia.com", &b, &err), 0);
    const gs_drv_claim *v[] = {&a, &b};
    gs_strbuf sb = {0};
    gs_drv_checkpoint_json(v, 2, "gpu.nvidia.com", "node-a", &sb);
    gs_drv_claim *out;
    size_t n;
    assert_int_equal(gs_drv_checkpoint_parse(sb.buf, sb.len, "gpu.nvidia.com", &out, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(out[1].uid, "uid-2");
    assert_string_equal(out[1].results[0].request, "g\"x");
    assert_int_equal(out[1].n_results, 2);
    assert_string_equal(out[1].results[1].device, "gpu-6-mig-1g10gb-9-0");
    free(out);
    /* another driver's checkpoint, another version, a uid twice, garbage */
    assert_int_equal(gs_drv_checkpoint_parse(sb.buf, sb.len, "other.example.com", &out, &n, &err), -1);
    static const char *const bad[] = {
        "{\"version\":2,\"driver\":\"gpu.nvidia.com\",\"claims\":[]}",
        "{\"version\":1,\"driver\":\"gpu.nvidia.com\",\"claims\":[{\"uid\":\"a\"},{\"uid\":\"a\"}]}",
        "{\"version\":1,\"driver\":\"gpu.nvidia.com\",\"claims\":[{\"name\":\"a\"}]}",
        "{\"version\":1,\"driver\":\"gpu.nvidia.com\",\"claims\":{}}",
        "{\"version\":1,\"version\":1,\"driver\":\"gpu.nvidia.com\",\"claims\":[]}",
        "nonsense"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gs_drv_checkpoint_parse(bad[i], strlen(bad[i]), "gpu.nvidia.com", &out, &n, &err), -1);
        assert_null(out);
    }
    gs_strbuf_free(&sb);
}

/* ---------------------------------------------------------------- the running driver */

typedef struct claim_src {
    const char *name;
    char json[4096];
    int calls;
} claim_src;

static claim_src src[4];

static int get_claim(void *ctx, const char *ns, const char *name, gs_strbuf *body, gs_error *err)
{
    (void)ctx;
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++)
        if (src[i].name && strcmp(src[i].name, name) == 0 && strcmp(ns, "ml") == 0) {
            src[i].calls++;
            gs_strbuf_puts(body, src[i].json);
            return 0;
        }
    return gs_fail(err, GS_ERR_NOTFOUND, "resourceclaims.resource.k8s.io \"%s\" not found", name);
}

static void set_claim(size_t i, const char *name, const char *uid, const char *results)
{
    src[i].name = name;
    src[i].calls = 0;
    claim_json(uid, results);
    /* the claim's own name */
    char *p = strstr(claimbuf, "\"c1\"");
    assert_non_null(p);
    snprintf(src[i].json, sizeof src[i].json, "%.*s\"%s\"%s", (int)(p - claimbuf), claimbuf, name, p + 4);
}

static gs_drv *start(void)
{
    char reg[256], plug[256], cdi[256], root[256];
    snprintf(reg, sizeof reg, "%s/plugins_registry", tmpdir);
    snprintf(plug, sizeof plug, "%s/plugins/gpu.nvidia.com", tmpdir);
    snprintf(cdi, sizeof cdi, "%s/cdi", tmpdir);
    snprintf(root, sizeof root, "%s/host", tmpdir);
    gs_drv_opts o = {.node = "node-a", .registry_dir = reg, .plugin_dir = plug, .cdi_dir = cdi, .host_root = root,
                     .inv = &inv, .get_claim = get_claim};
    gs_drv *d;
    gs_error err;
    if (gs_drv_start(&o, &d, &err) != 0)
        fail_msg("start: %s", err.msg);
    return d;
}

typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse prep_rs;

static prep_rs *prepare(const char *service, size_t n, const char *const *names, const char *const *uids)
{
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim cl[8], *clp[8];
    for (size_t i = 0; i < n; i++) {
        k8s__io__kubelet__pkg__apis__dra__v1__claim__init(&cl[i]);
        cl[i].namespace_ = "ml";
        cl[i].name = (char *)names[i];
        cl[i].uid = (char *)uids[i];
        clp[i] = &cl[i];
    }
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest rq =
        K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_REQUEST__INIT;
    rq.n_claims = n;
    rq.claims = clp;
    uint8_t buf[4096];
    size_t len = k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__pack(&rq, buf);
    char sock[256], path[128];
    snprintf(sock, sizeof sock, "%s/plugins/gpu.nvidia.com/dra.sock", tmpdir);
    snprintf(path, sizeof path, "/k8s.io.kubelet.pkg.apis.dra.%s.DRAPlugin/NodePrepareResources", service);
    gs_strbuf reply = {0};
    int status = -1;
    gs_error err;
    if (gs_grpc_unary(sock, path, buf, len, 5000, &reply, &status, NULL, &err) != 0)
        fail_msg("NodePrepareResources: %s", err.msg);
    assert_int_equal(status, 0);
    prep_rs *r = k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__unpack(
        NULL, reply.len, (const uint8_t *)reply.buf);
    assert_non_null(r);
    gs_strbuf_free(&reply);
    return r;
}

static const K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse *entry(const prep_rs *r,
                                                                                     const char *uid)
{
    for (size_t i = 0; i < r->n_claims; i++)
        if (strcmp(r->claims[i]->key, uid) == 0)
            return r->claims[i]->value;
    fail_msg("no answer for claim %s", uid);
    return NULL;
}

static void unprepare(const char *uid, const char *want_error)
{
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim cl;
    k8s__io__kubelet__pkg__apis__dra__v1__claim__init(&cl);
    cl.namespace_ = "ml";
    cl.name = "x";
    cl.uid = (char *)uid;
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim *clp = &cl;
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest rq =
        K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_REQUEST__INIT;
    rq.n_claims = 1;
    rq.claims = &clp;
    uint8_t buf[512];
    size_t len = k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__pack(&rq, buf);
    char sock[256];
    snprintf(sock, sizeof sock, "%s/plugins/gpu.nvidia.com/dra.sock", tmpdir);
    gs_strbuf reply = {0};
    int status = -1;
    gs_error err;
    assert_int_equal(gs_grpc_unary(sock, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources", buf, len,
                                   5000, &reply, &status, NULL, &err),
                     0);
    assert_int_equal(status, 0);
    K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse *r =
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__unpack(NULL, reply.len,
                                                                                     (const uint8_t *)reply.buf);
    assert_non_null(r);
    assert_int_equal(r->n_claims, 1);
    assert_string_equal(r->claims[0]->key, uid);
    if (want_error)
        assert_non_null(strstr(r->claims[0]->value->error, want_error));
    else
        assert_string_equal(r->claims[0]->value->error, "");
    k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__free_unpacked(r, NULL);
    gs_strbuf_free(&reply);
}

static void running_driver(void **state)
{
    (void)state;
    memset(src, 0, sizeof src);
    set_claim(0, "c1", CLAIM_UID,
              RES("gpu", "gpu.nvidia.com", "node-a", "gpu-4") "," RES("nic", "nic.example.com", "node-a", "eth0"));
    set_claim(1, "c2", "uid-c2", NULL);                                              /* not allocated */
    set_claim(2, "c3", "uid-c3", RES("gpu", "gpu.nvidia.com", "node-a", "gpu-7"));   /* the lost GPU */
    set_claim(3, "c4", "uid-c4", RES("gpu", "gpu.nvidia.com", "node-b", "gpu-4"));   /* another node's pool */
    gs_drv *d = start();

    /* registration: GetInfo and NotifyRegistrationStatus */
    char reg[256];
    snprintf(reg, sizeof reg, "%s/plugins_registry/gpu.nvidia.com-reg.sock", tmpdir);
    Pluginregistration__InfoRequest ir = PLUGINREGISTRATION__INFO_REQUEST__INIT;
    uint8_t buf[256];
    size_t len = pluginregistration__info_request__pack(&ir, buf);
    gs_strbuf reply = {0};
    int status = -1;
    gs_error err;
    assert_int_equal(gs_grpc_unary(reg, "/pluginregistration.Registration/GetInfo", buf, len, 5000, &reply, &status,
                                   NULL, &err),
                     0);
    assert_int_equal(status, 0);
    Pluginregistration__PluginInfo *info =
        pluginregistration__plugin_info__unpack(NULL, reply.len, (const uint8_t *)reply.buf);
    assert_non_null(info);
    assert_string_equal(info->type, "DRAPlugin");
    assert_string_equal(info->name, "gpu.nvidia.com");
    char want[256];
    snprintf(want, sizeof want, "%s/plugins/gpu.nvidia.com/dra.sock", tmpdir);
    assert_string_equal(info->endpoint, want);
    assert_int_equal(info->n_supported_versions, 2);
    assert_string_equal(info->supported_versions[0], "v1.DRAPlugin");
    assert_string_equal(info->supported_versions[1], "v1beta1.DRAPlugin");
    pluginregistration__plugin_info__free_unpacked(info, NULL);
    gs_strbuf why = {0};
    assert_false(gs_drv_registered(d, &why));
    Pluginregistration__RegistrationStatus rs = PLUGINREGISTRATION__REGISTRATION_STATUS__INIT;
    rs.plugin_registered = 1;
    len = pluginregistration__registration_status__pack(&rs, buf);
    assert_int_equal(gs_grpc_unary(reg, "/pluginregistration.Registration/NotifyRegistrationStatus", buf, len, 5000,
                                   &reply, &status, NULL, &err),
                     0);
    assert_int_equal(status, 0);
    assert_true(gs_drv_registered(d, NULL));

    /* prepare: our device only, the other driver's result is not ours */
    const char *n1[] = {"c1"}, *u1[] = {CLAIM_UID};
    prep_rs *r = prepare("v1", 1, n1, u1);
    const K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse *e = entry(r, CLAIM_UID);
    assert_string_equal(e->error, "");
    assert_int_equal(e->n_devices, 1);
    assert_string_equal(e->devices[0]->device_name, "gpu-4");
    assert_string_equal(e->devices[0]->pool_name, "node-a");
    assert_int_equal(e->devices[0]->n_request_names, 1);
    assert_string_equal(e->devices[0]->request_names[0], "gpu");
    assert_int_equal(e->devices[0]->n_cdi_device_ids, 1);
    assert_string_equal(e->devices[0]->cdi_device_ids[0], "gpusched.io/claim=" CLAIM_UID "-gpu-4");
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_true(exists_at("cdi/gpusched.io-claim_" CLAIM_UID ".json"));
    assert_true(exists_at("plugins/gpu.nvidia.com/checkpoint.json"));
    assert_int_equal(src[0].calls, 1);

    /* a retry (v1beta1 this time) gets the same answer without reading the claim again */
    r = prepare("v1beta1", 1, n1, u1);
    e = entry(r, CLAIM_UID);
    assert_string_equal(e->error, "");
    assert_int_equal(e->n_devices, 1);
    assert_string_equal(e->devices[0]->cdi_device_ids[0], "gpusched.io/claim=" CLAIM_UID "-gpu-4");
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_int_equal(src[0].calls, 1);

    /* per-claim errors, in one call with a good claim */
    const char *n5[] = {"c2", "c3", "c4", "missing", "c1"};
    const char *u5[] = {"uid-c2", "uid-c3", "uid-c4", "uid-m", "another-uid"};
    r = prepare("v1", 5, n5, u5);
    assert_int_equal(r->n_claims, 5);
    assert_non_null(strstr(entry(r, "uid-c2")->error, "is not allocated"));
    assert_non_null(strstr(entry(r, "uid-c3")->error, "device gpu-7 is not a device of node node-a"));
    assert_non_null(strstr(entry(r, "uid-c4")->error, "pool node-b"));
    assert_non_null(strstr(entry(r, "uid-m")->error, "not found"));
    assert_non_null(strstr(entry(r, "another-uid")->error, "has UID " CLAIM_UID));
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_false(exists_at("cdi/gpusched.io-claim_uid-c3.json"));
    assert_int_equal(src[0].calls, 2); /* read once more for "another-uid" */

    /* health: an unhealthy GPU is withheld from the slice */
    gs_strbuf m = {0};
    gs_drv_set_health(d, U0, false);
    gs_drv_metrics(d, &m);
    assert_non_null(strstr(gs_strbuf_cstr(&m), "gpusched_agent_dra_devices{state=\"withheld\"} 1\n"));
    assert_non_null(strstr(gs_strbuf_cstr(&m), "gpusched_agent_dra_prepared_claims 1\n"));
    assert_non_null(strstr(gs_strbuf_cstr(&m), "gpusched_agent_dra_prepare_total{result=\"error\"} 5\n"));
    /* the parent's UUID covers its MIG devices */
    gs_drv_set_health(d, U2, false);
    gs_strbuf_reset(&m);
    gs_drv_metrics(d, &m);
    assert_non_null(strstr(gs_strbuf_cstr(&m), "gpusched_agent_dra_devices{state=\"withheld\"} 3\n"));

    /* a restart: the checkpoint answers, the claim is not read again */
    gs_drv_stop(d);
    assert_false(exists_at("plugins_registry/gpu.nvidia.com-reg.sock"));
    d = start();
    r = prepare("v1", 1, n1, u1);
    e = entry(r, CLAIM_UID);
    assert_string_equal(e->error, "");
    assert_int_equal(e->n_devices, 1);
    assert_string_equal(e->devices[0]->device_name, "gpu-4");
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__free_unpacked(r, NULL);
    assert_int_equal(src[0].calls, 2);

    /* unprepare: the spec goes, the checkpoint forgets; again and unknown claims succeed */
    unprepare(CLAIM_UID, NULL);
    assert_false(exists_at("cdi/gpusched.io-claim_" CLAIM_UID ".json"));
    unprepare(CLAIM_UID, NULL);
    unprepare("never-seen", NULL);
    unprepare("../etc", "valid uid");
    gs_drv_stop(d);
    d = start();
    gs_strbuf_reset(&m);
    gs_drv_metrics(d, &m);
    assert_non_null(strstr(gs_strbuf_cstr(&m), "gpusched_agent_dra_prepared_claims 0\n"));
    gs_drv_stop(d);

    /* a damaged checkpoint stops the start: nothing is forgotten silently */
    write_at("plugins/gpu.nvidia.com/checkpoint.json", "{\"version\":1,");
    char regd[256], plug[256], cdi[256];
    snprintf(regd, sizeof regd, "%s/plugins_registry", tmpdir);
    snprintf(plug, sizeof plug, "%s/plugins/gpu.nvidia.com", tmpdir);
    snprintf(cdi, sizeof cdi, "%s/cdi", tmpdir);
    gs_drv_opts o = {.node = "node-a", .registry_dir = regd, .plugin_dir = plug, .cdi_dir = cdi, .inv = &inv};
    assert_int_equal(gs_drv_start(&o, &d, &err), -1);
    assert_int_equal(err.code, GS_ERR_PARSE);
    gs_strbuf_free(&m);
    gs_strbuf_free(&why);
    gs_strbuf_free(&reply);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(semver),
        cmocka_unit_test(slice_whole_and_mig),
        cmocka_unit_test(claim_reader),
        cmocka_unit_test(cdi_spec),
        cmocka_unit_test(checkpoint_round_trip),
        cmocka_unit_test(running_driver),
    };
    int rc = cmocka_run_group_tests(tests, setup_dir, teardown_dir);
    gs_arena_free(&arena);
    return rc;
}
