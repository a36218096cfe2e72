/* test_exporter.c - dcgm-exporter-compatible metrics (lib/agent/exporter.c): exact text for
 * a small inventory (an H100 shared by two pods through replicas, an A100 with two MIG
 * devices held through a MIG UUID and the index form), read back with the monitor's
 * parser (gs_util_parse_promtext); host label spellings, escaping, device id forms, errors.
 * Samples are made here: no NVML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/exporter.h"
#include "gpusched/monitor.h"

typedef struct tinv {
    gs_nvml_inventory inv;
    gs_nvml_gpu gpus[2];
    gs_nvml_mig_device migs[2];
    gs_nvml_samples samples;
    gs_nvml_sample gs[2];
    gs_nvml_sample ms[2];
    gs_nvml_sample *mp[2];
    gs_exporter_gpu_state st[2];
    int64_t mig_idle[2];
} tinv;

static void blank(gs_nvml_sample *s)
{
    memset(s, 0xff, sizeof *s); /* every field -1 */
}

static void ti_make(tinv *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->inv.driver_version, sizeof t->inv.driver_version, "550.107.02");
    t->inv.cuda_driver_version = 12040;
    t->inv.n_gpus = 2;
    t->inv.gpus = t->gpus;
    gs_nvml_gpu *g = &t->gpus[0];
    g->index = 0;
    snprintf(g->uuid, sizeof g->uuid, "GPU-aaaa");
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:07:00.0");
    g->minor = 0;
    g->memory_mib = 81559;
    g = &t->gpus[1];
    g->index = 1;
    snprintf(g->uuid, sizeof g->uuid, "GPU-bbbb");
    snprintf(g->name, sizeof g->name, "NVIDIA A100-SXM4-80GB");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:0F:00.0");
    g->minor = 3;
    g->mig_capable = 1;
    g->mig_current = 1;
    g->n_mig = 2;
    g->mig = t->migs;
    for (unsigned j = 0; j < 2; j++) {
        gs_nvml_mig_device *m = &t->migs[j];
        m->index = j;
        snprintf(m->uuid, sizeof m->uuid, "MIG-bbbb-%u", j);
        m->gpu_instance_id = j == 0 ? 1 : 2;
        m->compute_instance_id = 0;
        m->memory_mib = 40192;
        snprintf(m->profile, sizeof m->profile, "3g.40gb");
    }
    blank(&t->gs[0]);
    t->gs[0].gpu_util = 87;
    t->gs[0].fb_used_mib = 1024;
    t->gs[0].power_mw = 61476;
    t->gs[0].temp_c = 40;
    blank(&t->gs[1]);
    t->gs[1].temp_c = 35;
    t->gs[1].fb_used_mib = 2048;
    blank(&t->ms[0]);
    t->ms[0].fb_used_mib = 512;
    t->ms[0].fb_free_mib = 39000;
    blank(&t->ms[1]);
    t->ms[1].fb_used_mib = 0;
    t->ms[1].fb_free_mib = 40192;
    t->mp[0] = NULL;
    t->mp[1] = t->ms;
    t->samples.n_gpus = 2;
    t->samples.gpu = t->gs;
    t->samples.mig = t->mp;
    t->st[0] = (gs_exporter_gpu_state){0, NULL, 120, NULL};
    t->mig_idle[0] = 600;
    t->mig_idle[1] = -1;
    t->st[1] = (gs_exporter_gpu_state){79, "GPU has fallen off the bus", -1, t->mig_idle};
}

static const gs_exporter_holder holders[] = {
    {"nvidia.com/gpu", "GPU-aaaa::1", "team-b", "p2", "main"},
    {"nvidia.com/gpu", "GPU-aaaa::0", "team-a", "p1", "main"},
    {"nvidia.com/gpu", "GPU-aaaa::2", "team-a", "p1", "main"}, /* same container again */
    {"nvidia.com/mig-3g.40gb", "MIG-bbbb-0", "team-c", "p3", "w"},
    {"nvidia.com/mig-3g.40gb", "1:1", "team-c", "p4", "w"},
    {"nvidia.com/gpu", "GPU-gone", "team-d", "p5", "x"}, /* no such device: ignored */
};

#define G0 "gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\"," \
           "modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"gpu-node-1\","                 \
           "DCGM_FI_DRIVER_VERSION=\"550.107.02\""
#define G1 "gpu=\"1\",UUID=\"GPU-bbbb\",pci_bus_id=\"00000000:0F:00.0\",device=\"nvidia3\"," \
           "modelName=\"NVIDIA A100-SXM4-80GB\""
#define G1T ",hostname=\"gpu-node-1\",DCGM_FI_DRIVER_VERSION=\"550.107.02\""
#define M0 G1 ",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\"" G1T
#define M1 G1 ",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\"" G1T
#define P1 ",namespace=\"team-a\",pod=\"p1\",container=\"main\",vgpu=\"0\""
#define P2 ",namespace=\"team-b\",pod=\"p2\",container=\"main\",vgpu=\"1\""
#define P3 ",namespace=\"team-c\",pod=\"p3\",container=\"w\""
#define P4 ",namespace=\"team-c\",pod=\"p4\",container=\"w\""

static const char golden[] =
    "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
    "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
    "DCGM_FI_DEV_GPU_TEMP{" G0 P1 "} 40\n"
    "DCGM_FI_DEV_GPU_TEMP{" G0 P2 "} 40\n"
    "DCGM_FI_DEV_GPU_TEMP{" G1 G1T "} 35\n"
    "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
    "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
    "DCGM_FI_DEV_POWER_USAGE{" G0 P1 "} 61.476\n"
    "DCGM_FI_DEV_POWER_USAGE{" G0 P2 "} 61.476\n"
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{" G0 P1 "} 87\n"
    "DCGM_FI_DEV_GPU_UTIL{" G0 P2 "} 87\n"
    "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
    "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
    "DCGM_FI_DEV_XID_ERRORS{" G0 P1 ",err_code=\"0\",err_msg=\"No Error\"} 0\n"
    "DCGM_FI_DEV_XID_ERRORS{" G0 P2 ",err_code=\"0\",err_msg=\"No Error\"} 0\n"
    "DCGM_FI_DEV_XID_ERRORS{" G1 G1T ",err_code=\"79\",err_msg=\"GPU has fallen off the bus\"} 79\n"
    "# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).\n"
    "# TYPE DCGM_FI_DEV_FB_FREE gauge\n"
    "DCGM_FI_DEV_FB_FREE{" M0 P3 "} 39000\n"
    "DCGM_FI_DEV_FB_FREE{" M1 P4 "} 40192\n"
    "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
    "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
    "DCGM_FI_DEV_FB_USED{" G0 P1 "} 1024\n"
    "DCGM_FI_DEV_FB_USED{" G0 P2 "} 1024\n"
    "DCGM_FI_DEV_FB_USED{" G1 G1T "} 2048\n"
    "DCGM_FI_DEV_FB_USED{" M0 P3 "} 512\n"
    "DCGM_FI_DEV_FB_USED{" M1 P4 "} 0\n"
    "# HELP gpusched_agent_gpu_idle_seconds Seconds an allocated GPU or MIG device has stayed "
    "under the utilization threshold (0 while busy).\n"
    "# TYPE gpusched_agent_gpu_idle_seconds gauge\n"
    "gpusched_agent_gpu_idle_seconds{" G0 P1 "} 120\n"
    "gpusched_agent_gpu_idle_seconds{" G0 P2 "} 120\n"
    "gpusched_agent_gpu_idle_seconds{" M0 P3 "} 600\n";

static gs_exporter_input input_of(const tinv *t)
{
    gs_exporter_input in = {&t->inv, &t->samples, t->st, holders,
                            sizeof holders / sizeof holders[0]};
    return in;
}

static void render_ok(const gs_exporter_input *in, const gs_exporter_opts *o, gs_strbuf *sb)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_exporter_render(in, o, sb, &err) != 0)
        fail_msg("gs_exporter_render: %s", err.msg);
}

static void parse_ok(gs_util_set *s, const gs_strbuf *sb)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_util_parse_promtext(s, "agent", gs_strbuf_cstr(sb), sb->len, NULL, &err) != 0)
        fail_msg("parse: %d:%d: %s", err.line, err.col, err.msg);
}

static void test_golden_and_parse(void **state)
{
    (void)state;
    tinv t;
    ti_make(&t);
    gs_exporter_input in = input_of(&t);
    gs_exporter_opts o = {"gpu-node-1", GS_EXPORTER_HOST_LOWER, false};
    gs_strbuf sb = GS_STRBUF_INIT;
    render_ok(&in, &o, &sb);
    if (strcmp(gs_strbuf_cstr(&sb), golden) != 0)
        fail_msg("got:\n%s", gs_strbuf_cstr(&sb));

    /* the monitor's reader: every series read, the utilization ones as samples */
    gs_util_set s;
    gs_util_set_init(&s);
    parse_ok(&s, &sb);
    assert_int_equal(s.series, 20);
    assert_int_equal(s.n, 2); /* DCGM_FI_DEV_GPU_UTIL of GPU 0, one per holder */
    for (size_t i = 0; i < s.n; i++) {
        const gs_util_sample *x = &s.v[i];
        assert_int_equal(x->metric, GS_UTIL_GPU_UTIL);
        assert_string_equal(x->node, "gpu-node-1");
        assert_string_equal(x->uuid, "GPU-aaaa");
        assert_string_equal(x->device, "nvidia0");
        assert_string_equal(x->model, "NVIDIA H100 80GB HBM3");
        assert_int_equal(x->gpu, 0);
        assert_int_equal(x->mig_instance, -1);
        assert_true(x->util > 0.869 && x->util < 0.871);
        assert_string_equal(x->pod, i == 0 ? "p1" : "p2");
        assert_string_equal(x->ns, i == 0 ? "team-a" : "team-b");
        assert_string_equal(x->container, "main");
    }
    gs_util_set_free(&s);
    gs_strbuf_free(&sb);
}

static void test_host_label_and_model(void **state)
{
    (void)state;
    tinv t;
    ti_make(&t);
    gs_exporter_input in = input_of(&t);
    in.holders = NULL;
    in.nholders = 0;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_exporter_opts o = {"gpu-node-1", GS_EXPORTER_HOST_UPPER, true};
    render_ok(&in, &o, &sb);
    assert_non_null(strstr(gs_strbuf_cstr(&sb), ",Hostname=\"gpu-node-1\","));
    assert_null(strstr(gs_strbuf_cstr(&sb), "hostname="));
    assert_non_null(strstr(gs_strbuf_cstr(&sb), "modelName=\"NVIDIA-H100-80GB-HBM3\""));
    /* no holders: one series per device, no pod labels, no idle gauge */
    assert_null(strstr(gs_strbuf_cstr(&sb), "namespace="));
    assert_null(strstr(gs_strbuf_cstr(&sb), "gpusched_agent_gpu_idle_seconds"));
    gs_util_set s;
    gs_util_set_init(&s);
    parse_ok(&s, &sb);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.v[0].node, "gpu-node-1");
    assert_string_equal(s.v[0].pod, "");
    gs_util_set_reset(&s);

    gs_strbuf_reset(&sb);
    o.host_label = GS_EXPORTER_HOST_NONE;
    render_ok(&in, &o, &sb);
    assert_null(strstr(gs_strbuf_cstr(&sb), "ostname="));
    parse_ok(&s, &sb);
    assert_string_equal(s.v[0].node, "");
    gs_util_set_free(&s);

    /* no samples, no state: nothing at all */
    gs_strbuf_reset(&sb);
    in.samples = NULL;
    in.state = NULL;
    render_ok(&in, &o, &sb);
    assert_int_equal(sb.len, 0);
    gs_strbuf_free(&sb);
}

static void test_every_family(void **state)
{
    (void)state;
    tinv t;
    ti_make(&t);
    gs_nvml_sample *s = &t.gs[0];
    s->mem_copy_util = 12;
    s->fb_free_mib = 80000;
    s->fb_reserved_mib = 535;
    s->power_mw = 60000;
    s->energy_mj = 123456789;
    s->ecc_sbe_volatile = 3;
    s->ecc_dbe_volatile = 0;
    s->remapped_correctable = 1;
    s->remapped_uncorrectable = 0;
    s->remap_failure = 0;
    s->sm_clock_mhz = 1980;
    s->mem_clock_mhz = 2619;
    s->pcie_replay = 7;
    gs_exporter_input in = input_of(&t);
    in.holders = NULL;
    in.nholders = 0;
    gs_exporter_opts o = {"n", GS_EXPORTER_HOST_LOWER, false};
    gs_strbuf sb = GS_STRBUF_INIT;
    render_ok(&in, &o, &sb);
    const char *txt = gs_strbuf_cstr(&sb);
    static const char *const want[] = {
        "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\nDCGM_FI_DEV_SM_CLOCK{gpu=\"0\"",
        "DCGM_FI_DEV_MEM_CLOCK{gpu=\"0\"",
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n",
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:07:00.0\","
        "device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",hostname=\"n\","
        "DCGM_FI_DRIVER_VERSION=\"550.107.02\"} 60\n",
        "} 123456789\n",
        "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n",
        "DCGM_FI_DEV_MEM_COPY_UTIL{",
        "DCGM_FI_DEV_FB_RESERVED{",
        "# TYPE DCGM_FI_DEV_ECC_SBE_VOL_TOTAL counter\n",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{",
        "# TYPE DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS counter\n",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{",
        "# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(txt, want[i]))
            fail_msg("missing %s in:\n%s", want[i], txt);
    /* unknown values are left out, never written as DCGM blanks */
    assert_null(strstr(txt, "92233720368547"));
    assert_null(strstr(txt, "} -1\n"));
    gs_util_set us;
    gs_util_set_init(&us);
    parse_ok(&us, &sb);
    assert_int_equal(us.dropped, 0);
    gs_util_set_free(&us);
    gs_strbuf_free(&sb);
}

static void test_escaping(void **state)
{
    (void)state;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_exporter_label_value(&sb, "a\"b\\c\nd\re\x01" "f\xff" "g\xc3\xa9");
    assert_string_equal(gs_strbuf_cstr(&sb), "a\\\"b\\\\c\\nd e f\xef\xbf\xbdg\xc3\xa9");
    gs_strbuf_free(&sb);

    /* hostile pod names still give a parseable exposition */
    tinv t;
    ti_make(&t);
    static const gs_exporter_holder bad[] = {
        {"nvidia.com/gpu", "GPU-aaaa", "ns\"x", "p\\1\n", "c\r\xfe"},
    };
    gs_exporter_input in = input_of(&t);
    in.holders = bad;
    in.nholders = 1;
    gs_exporter_opts o = {"node\"1", GS_EXPORTER_HOST_LOWER, false};
    render_ok(&in, &o, &sb);
    gs_util_set s;
    gs_util_set_init(&s);
    parse_ok(&s, &sb);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.v[0].pod, "p\\1\n");
    assert_string_equal(s.v[0].ns, "ns\"x");
    assert_string_equal(s.v[0].node, "node\"1");
    gs_util_set_free(&s);
    gs_strbuf_free(&sb);
}

static void test_resolve(void **state)
{
    (void)state;
    tinv t;
    ti_make(&t);
    size_t g;
    long m, r;
    assert_true(gs_exporter_resolve(&t.inv, "GPU-bbbb", &g, &m, &r));
    assert_int_equal(g, 1);
    assert_int_equal(m, -1);
    assert_int_equal(r, -1);
    assert_true(gs_exporter_resolve(&t.inv, "MIG-bbbb-1::3", &g, &m, &r));
    assert_int_equal(g, 1);
    assert_int_equal(m, 1);
    assert_int_equal(r, 3);
    assert_true(gs_exporter_resolve(&t.inv, "0", &g, &m, &r));
    assert_int_equal(g, 0);
    assert_true(gs_exporter_resolve(&t.inv, "1:0", &g, &m, &r));
    assert_int_equal(g, 1);
    assert_int_equal(m, 0);
    assert_true(gs_exporter_resolve(&t.inv, "0::4", &g, &m, &r));
    assert_int_equal(r, 4);
    assert_false(gs_exporter_resolve(&t.inv, "2", &g, &m, &r));
    assert_false(gs_exporter_resolve(&t.inv, "1:7", &g, &m, &r));
    assert_false(gs_exporter_resolve(&t.inv, "GPU-aaaa::x", &g, &m, &r));
    assert_false(gs_exporter_resolve(&t.inv, "::1", &g, &m, &r));
    assert_false(gs_exporter_resolve(&t.inv, "", &g, &m, &r));
    assert_false(gs_exporter_resolve(&t.inv, "GPU-aaa", &g, &m, &r));
}

static void test_errors(void **state)
{
    (void)state;
    tinv t;
    ti_make(&t);
    gs_exporter_input in = input_of(&t);
    t.samples.n_gpus = 1;
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_error err;
    gs_error_clear(&err);
    assert_int_equal(gs_exporter_render(&in, NULL, &sb, &err), -1);
    assert_int_equal(err.code, GS_ERR_INVALID);
    assert_non_null(strstr(err.msg, "1 samples for an inventory of 2 GPUs"));
    gs_exporter_input none = {NULL, NULL, NULL, NULL, 0};
    gs_error_clear(&err);
    assert_int_equal(gs_exporter_render(&none, NULL, &sb, &err), -1);
    /* a GPU lost before it was identified has no series; a MIG device without a GI id none */
    t.samples.n_gpus = 2;
    t.gpus[0].uuid[0] = '\0';
    t.migs[1].gpu_instance_id = ~0u;
    render_ok(&in, NULL, &sb);
    assert_null(strstr(gs_strbuf_cstr(&sb), "gpu=\"0\""));
    assert_null(strstr(gs_strbuf_cstr(&sb), "GPU_I_ID=\"2\""));
    assert_non_null(strstr(gs_strbuf_cstr(&sb), "GPU_I_ID=\"1\""));
    assert_null(strstr(gs_strbuf_cstr(&sb), "ostname")); /* opts NULL: no host */
    gs_strbuf_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_and_parse), cmocka_unit_test(test_host_label_and_model),
        cmocka_unit_test(test_every_family),     cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_resolve),          cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
