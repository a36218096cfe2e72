/* test_ttrpc.c - ttrpc over NRI's multiplexer (lib/agent/ttrpc.c) and the NRI plugin's
 * service (lib/agent/nri.c) without a runtime: frames cut and fed byte by byte, bounds,
 * frames of other connections, a call answered on connection 2, and Configure /
 * CreateContainer requests answered over a socketpair. The real runtime side (containerd/nri's
 * adaptation package) is exercised by the agent/nri test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/nri_int.h"
#include "agent/ttrpc_int.h"
#include "nri/api.pb-c.h"
#include "ttrpc/request.pb-c.h"

typedef struct got {
    size_t n;
    gs_ttrpc_msg m[8];
    uint8_t data[8][70000];
} got;

static int collect(void *ud, const gs_ttrpc_msg *m, gs_error *err)
{
    (void)err;
    got *g = ud;
    if (g->n < 8) {
        g->m[g->n] = *m;
        size_t l = m->len < sizeof g->data[0] ? m->len : sizeof g->data[0];
        memcpy(g->data[g->n], m->data, l);
        g->m[g->n].data = g->data[g->n];
        g->n++;
    }
    return 0;
}

static got G;

static void frames_roundtrip(void **state)
{
    (void)state;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    static uint8_t big[10000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7);
    assert_int_equal(gs_ttrpc_encode(&buf, &len, &cap, 1, 3, GS_TTRPC_REQUEST, 1, (const uint8_t *)"hello", 5), 0);
    assert_int_equal(len, 8 + 10 + 5);
    assert_int_equal(gs_ttrpc_encode(&buf, &len, &cap, 2, 5, GS_TTRPC_RESPONSE, 0, big, sizeof big), 0);
    /* 10,010 bytes of ttrpc message: frames of 4,096, 4,096 and 1,818 */
    assert_int_equal(len, 23 + 3 * 8 + 10 + sizeof big);
    const uint8_t *f = buf + 23;
    assert_int_equal(f[0] << 24 | f[1] << 16 | f[2] << 8 | f[3], 2);
    assert_int_equal(f[4] << 24 | f[5] << 16 | f[6] << 8 | f[7], 4096);
    /* a frame of another connection, and an empty frame, in between */
    static const uint8_t other[] = {0, 0, 0, 9, 0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 1, 0, 0, 0, 0};
    uint8_t *all = malloc(len + sizeof other);
    memcpy(all, buf, 23);
    memcpy(all + 23, other, sizeof other);
    memcpy(all + 23 + sizeof other, buf + 23, len - 23);
    size_t total = len + sizeof other;
    for (size_t step = 1; step <= total; step = step * 3 + 1) {
        memset(&G, 0, sizeof G);
        gs_mux_decoder d;
        gs_mux_decoder_init(&d, 0);
        gs_error err;
        for (size_t off = 0; off < total; off += step)
            assert_int_equal(gs_mux_feed(&d, all + off, total - off < step ? total - off : step, collect, &G, &err), 0);
        assert_int_equal(G.n, 2);
        assert_int_equal(G.m[0].conn, 1);
        assert_int_equal(G.m[0].stream, 3);
        assert_int_equal(G.m[0].type, GS_TTRPC_REQUEST);
        assert_int_equal(G.m[0].flags, 1);
        assert_memory_equal(G.m[0].data, "hello", 5);
        assert_int_equal(G.m[1].conn, 2);
        assert_int_equal(G.m[1].stream, 5);
        assert_int_equal(G.m[1].len, sizeof big);
        assert_memory_equal(G.m[1].data, big, sizeof big);
        assert_int_equal(d.dropped, 1);
        gs_mux_decoder_free(&d);
    }
    free(all);
    free(buf);
}

static void bounds(void **state)
{
    (void)state;
    gs_mux_decoder d;
    gs_error err;
    /* a frame longer than 10 + 4 MiB */
    gs_mux_decoder_init(&d, 0);
    static const uint8_t huge[] = {0, 0, 0, 1, 0, 0x40, 0, 0x0b};
    assert_int_equal(gs_mux_feed(&d, huge, sizeof huge, collect, &G, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    gs_mux_decoder_free(&d);
    /* a ttrpc message longer than the bound (64 here) */
    gs_mux_decoder_init(&d, 64);
    static const uint8_t msg[] = {0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 65, 0, 0, 0, 1, 1, 0};
    assert_int_equal(gs_mux_feed(&d, msg, sizeof msg, collect, &G, &err), -1);
    assert_int_equal(err.code, GS_ERR_LIMIT);
    assert_non_null(strstr(err.msg, "65 bytes"));
    gs_mux_decoder_free(&d);
    /* too large to encode */
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    static uint8_t one;
    assert_int_equal(gs_ttrpc_encode(&buf, &len, &cap, 1, 1, 1, 0, &one, GS_TTRPC_MAX_MSG + 1), -1);
    free(buf);
}

/* Write a request for the plugin service on connection 1, stream `stream`. */
static void send_request(int fd, uint32_t stream, const char *service, const char *method, const ProtobufCMessage *m)
{
    size_t pl = m ? protobuf_c_message_get_packed_size(m) : 0;
    uint8_t *p = malloc(pl + 1);
    if (m)
        protobuf_c_message_pack(m, p);
    Ttrpc__Request r = TTRPC__REQUEST__INIT;
    r.service = (char *)service;
    r.method = (char *)method;
    r.payload.data = p;
    r.payload.len = pl;
    size_t n = ttrpc__request__get_packed_size(&r);
    uint8_t *q = malloc(n + 1);
    ttrpc__request__pack(&r, q);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(gs_ttrpc_encode(&buf, &len, &cap, 1, stream, GS_TTRPC_REQUEST, 1, q, n), 0);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    free(buf);
    free(q);
    free(p);
}

/* Read frames from fd until one response arrived; decode it. */
static Ttrpc__Response *read_response(int fd, uint32_t *stream)
{
    memset(&G, 0, sizeof G);
    gs_mux_decoder d;
    gs_mux_decoder_init(&d, 0);
    gs_error err;
    uint8_t buf[65536];
    while (G.n == 0) {
        ssize_t n = read(fd, buf, sizeof buf);
        assert_true(n > 0);
        assert_int_equal(gs_mux_feed(&d, buf, (size_t)n, collect, &G, &err), 0);
    }
    gs_mux_decoder_free(&d);
    assert_int_equal(G.m[0].conn, 1);
    assert_int_equal(G.m[0].type, GS_TTRPC_RESPONSE);
    *stream = G.m[0].stream;
    return ttrpc__response__unpack(NULL, G.m[0].len, G.m[0].data);
}

static gs_nvml_gpu gpus[2];

static void plugin_service(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    memset(gpus, 0, sizeof gpus);
    for (unsigned i = 0; i < 2; i++) {
        gpus[i].index = i;
        snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "GPU-8a9b0c1d-2e3f-4a5b-8c7d-9e0f1a2b3c4%u", i);
        gpus[i].minor = (int)i;
    }
    gs_nvml_inventory inv = {.n_gpus = 2, .gpus = gpus};
    gs_nri_opts o = {.node = "gpu-a", .inv = &inv, .proc_root = "/nonexistent"};
    gs_nri *n;
    gs_error err;
    assert_int_equal(gs_nri_open(&o, &n, &err), 0);
    gs_ttrpc_conn c;
    gs_ttrpc_conn_init(&c, sv[0], -1, gs_nri_handle, n);

    /* Configure: subscribes to CreateContainer (bit 3), failure policy fail_request */
    Nri__Pkg__Api__V1alpha1__ConfigureRequest cr = NRI__PKG__API__V1ALPHA1__CONFIGURE_REQUEST__INIT;
    cr.runtime_name = "containerd";
    cr.runtime_version = "v2.1.0";
    cr.request_timeout = 2000;
    send_request(sv[1], 1, "nri.pkg.api.v1alpha1.Plugin", "Configure", &cr.base);
    assert_int_equal(gs_ttrpc_pump(&c, 1000, &err), 0);
    uint32_t stream;
    Ttrpc__Response *r = read_response(sv[1], &stream);
    assert_non_null(r);
    assert_int_equal(stream, 1);
    assert_true(!r->status || r->status->code == 0);
    Nri__Pkg__Api__V1alpha1__ConfigureResponse *cfg =
        nri__pkg__api__v1alpha1__configure_response__unpack(NULL, r->payload.len, r->payload.data);
    assert_non_null(cfg);
    assert_int_equal(cfg->events, 1 << 1 | 1 << 2 | 1 << 3); /* StopPodSandbox, RemovePodSandbox, CreateContainer */
    assert_non_null(cfg->failure_policy);
    assert_true(cfg->failure_policy->fail_request);
    nri__pkg__api__v1alpha1__configure_response__free_unpacked(cfg, NULL);
    ttrpc__response__free_unpacked(r, NULL);
    gs_nri_stats st;
    gs_nri_stats_get(n, &st);
    assert_int_equal(st.request_timeout_ms, 2000);
    assert_string_equal(st.runtime, "containerd v2.1.0");

    /* CreateContainer with a record naming GPU 1 for "main" */
    Nri__Pkg__Api__V1alpha1__PodSandbox pod = NRI__PKG__API__V1ALPHA1__POD_SANDBOX__INIT;
    Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry ann = NRI__PKG__API__V1ALPHA1__POD_SANDBOX__ANNOTATIONS_ENTRY__INIT;
    Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry *annp = &ann;
    ann.key = "gpusched.io/assignment";
    ann.value = "{\"v\":\"1.0\",\"node\":\"gpu-a\",\"uid\":\"0f6c2a9e-54b1-4c1e-9d7e-3f5a8b2c1d40\","
                "\"time\":\"2026-01-02T03:04:05Z\",\"kind\":\"whole\",\"containers\":[{\"name\":\"main\",\"devices\":[{\"gpu\":1}]}]}";
    pod.uid = "0f6c2a9e-54b1-4c1e-9d7e-3f5a8b2c1d40";
    pod.name = "p";
    pod.namespace_ = "ml";
    pod.n_annotations = 1;
    pod.annotations = &annp;
    Nri__Pkg__Api__V1alpha1__Container ctr = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT;
    ctr.name = "main";
    Nri__Pkg__Api__V1alpha1__CreateContainerRequest cc = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
    cc.pod = &pod;
    cc.container = &ctr;
    send_request(sv[1], 3, "nri.pkg.api.v1alpha1.Plugin", "CreateContainer", &cc.base);
    assert_int_equal(gs_ttrpc_pump(&c, 1000, &err), 0);
    r = read_response(sv[1], &stream);
    assert_int_equal(stream, 3);
    assert_true(!r->status || r->status->code == 0);
    Nri__Pkg__Api__V1alpha1__CreateContainerResponse *ccr =
        nri__pkg__api__v1alpha1__create_container_response__unpack(NULL, r->payload.len, r->payload.data);
    assert_non_null(ccr);
    assert_non_null(ccr->adjust);
    assert_int_equal(ccr->adjust->n_env, 1);
    assert_string_equal(ccr->adjust->env[0]->key, "NVIDIA_VISIBLE_DEVICES");
    assert_string_equal(ccr->adjust->env[0]->value, gpus[1].uuid);
    assert_non_null(ccr->adjust->linux);
    assert_int_equal(ccr->adjust->linux->n_devices, 2); /* nvidiactl, nvidia1 (no uvm: no /proc) */
    assert_string_equal(ccr->adjust->linux->devices[1]->path, "/dev/nvidia1");
    assert_string_equal(ccr->adjust->linux->devices[1]->type, "c");
    assert_int_equal(ccr->adjust->linux->devices[1]->minor, 1);
    assert_int_equal(ccr->adjust->linux->devices[1]->file_mode->value, 0666);
    nri__pkg__api__v1alpha1__create_container_response__free_unpacked(ccr, NULL);
    ttrpc__response__free_unpacked(r, NULL);

    /* another pod's UID: refused with the reason */
    pod.uid = "7b1d0c3e-9a2f-4e11-8c6d-5a4b3c2d1e0f";
    send_request(sv[1], 5, "nri.pkg.api.v1alpha1.Plugin", "CreateContainer", &cc.base);
    assert_int_equal(gs_ttrpc_pump(&c, 1000, &err), 0);
    r = read_response(sv[1], &stream);
    assert_non_null(r->status);
    assert_int_equal(r->status->code, GS_TTRPC_FAILED_PRECONDITION);
    assert_non_null(strstr(r->status->message, "copied records are refused"));
    ttrpc__response__free_unpacked(r, NULL);

    /* unknown method, garbage payload, even stream id */
    send_request(sv[1], 7, "nri.pkg.api.v1alpha1.Plugin", "Frobnicate", NULL);
    assert_int_equal(gs_ttrpc_pump(&c, 1000, &err), 0);
    r = read_response(sv[1], &stream);
    assert_int_equal(r->status->code, GS_TTRPC_UNIMPLEMENTED);
    ttrpc__response__free_unpacked(r, NULL);
    send_request(sv[1], 8, "nri.pkg.api.v1alpha1.Plugin", "Configure", NULL);
    assert_int_equal(gs_ttrpc_pump(&c, 1000, &err), 0);
    r = read_response(sv[1], &stream);
    assert_int_equal(stream, 8);
    assert_int_equal(r->status->code, GS_TTRPC_INVALID_ARGUMENT);
    ttrpc__response__free_unpacked(r, NULL);

    /* a call on connection 2, its answer already waiting */
    Ttrpc__Response ok = TTRPC__RESPONSE__INIT;
    Ttrpc__Status st0 = TTRPC__STATUS__INIT;
    ok.status = &st0;
    ok.payload.data = (uint8_t *)"xy";
    ok.payload.len = 2;
    uint8_t p[64];
    size_t pl = ttrpc__response__pack(&ok, p);
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(gs_ttrpc_encode(&buf, &len, &cap, 2, 1, GS_TTRPC_RESPONSE, 0, p, pl), 0);
    assert_int_equal(write(sv[1], buf, len), (ssize_t)len);
    free(buf);
    uint8_t *resp;
    size_t rl;
    assert_int_equal(gs_ttrpc_call(&c, "nri.pkg.api.v1alpha1.Runtime", "RegisterPlugin", (const uint8_t *)"", 0, 1000,
                                   &resp, &rl, &err),
                     0);
    assert_int_equal(rl, 2);
    assert_memory_equal(resp, "xy", 2);
    free(resp);
    /* the request went out on connection 2, stream 1 */
    memset(&G, 0, sizeof G);
    gs_mux_decoder d;
    gs_mux_decoder_init(&d, 0);
    uint8_t rb[4096];
    ssize_t nr = read(sv[1], rb, sizeof rb);
    assert_true(nr > 0);
    assert_int_equal(gs_mux_feed(&d, rb, (size_t)nr, collect, &G, &err), 0);
    gs_mux_decoder_free(&d);
    assert_int_equal(G.m[0].conn, 2);
    assert_int_equal(G.m[0].stream, 1);
    Ttrpc__Request *rq = ttrpc__request__unpack(NULL, G.m[0].len, G.m[0].data);
    assert_string_equal(rq->method, "RegisterPlugin");
    assert_int_equal(rq->timeout_nano, 1000000000LL);
    ttrpc__request__free_unpacked(rq, NULL);
    /* no answer: times out; the runtime gone: closed */
    assert_int_equal(gs_ttrpc_call(&c, "s", "m", NULL, 0, 50, &resp, &rl, &err), -1);
    assert_non_null(strstr(err.msg, "timed out"));
    close(sv[1]);
    assert_int_equal(gs_ttrpc_pump(&c, 1000, &err), -1);
    assert_non_null(strstr(err.msg, "closed by the runtime"));
    gs_ttrpc_conn_close(&c);
    gs_nri_stop(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frames_roundtrip),
        cmocka_unit_test(bounds),
        cmocka_unit_test(plugin_service),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
