/*
 * fuzz_grpc.c - libFuzzer target for the gRPC server (lib/agent/grpc.c): arbitrary bytes
 * fed as a client's side of one HTTP/2 connection (gs_grpc_server_feed) to a server with
 * the device plugin's routes: a unary route that decodes the request with protobuf-c
 * (AllocateRequest) and answers, a streaming route that sends two messages and finishes, and
 * one that keeps the call open until the connection ends (released in `closed`).
 *
 * Crashes, leaks, hangs and sanitizer reports are the findings. Invariants checked: the
 * session always starts (feed never returns -1); every kept call, never finished by the
 * handler, is reported closed exactly once when the connection ends, and sends on it fail
 * from then on.
 *
 * Seeds (tests/fuzz/corpus/fuzz_grpc/): a unary Allocate call (preface, SETTINGS, HEADERS,
 * DATA), ListAndWatch with the socket path as :authority, an unknown method with a
 * WINDOW_UPDATE, PING and RST_STREAM, a compressed-flag message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/grpc_int.h"
#include "deviceplugin/v1beta1/api.pb-c.h"
#include "gpusched/grpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gs_grpc_server *server;
static long kept, closed;

static void allocate(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    V1beta1__AllocateRequest *rq = v1beta1__allocate_request__unpack(NULL, len, msg);
    if (!rq) {
        gs_grpc_fail(call, GS_GRPC_INVALID_ARGUMENT, "cannot decode AllocateRequest \xff%");
        return;
    }
    uint8_t out[64];
    size_t n = snprintf((char *)out, sizeof out, "%zu", rq->n_container_requests);
    v1beta1__allocate_request__free_unpacked(rq, NULL);
    gs_grpc_reply(call, out, n);
}

static void stream_two(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    gs_grpc_send(call, (const uint8_t *)"one", 3);
    gs_grpc_send(call, (const uint8_t *)"two", 3);
    gs_grpc_finish(call, GS_GRPC_OK, NULL);
    gs_grpc_call_release(call);
}

static void stream_keep(void *ctx, gs_grpc_call *call, const uint8_t *msg, size_t len)
{
    kept++;
    gs_grpc_send(call, (const uint8_t *)"devices", 7);
}

static void on_closed(void *ctx, gs_grpc_call *call)
{
    closed++;
    if (gs_grpc_send(call, (const uint8_t *)"late", 4) != -1) abort();
    gs_grpc_call_release(call);
}

static void setup(void)
{
    char dir[] = "/tmp/gs-fuzz-grpc.XXXXXX";
    if (!mkdtemp(dir)) abort();
    char sock[64];
    snprintf(sock, sizeof sock, "%s/f.sock", dir);
    gs_error err;
    if (gs_grpc_server_new(sock, &server, &err) != 0 ||
        gs_grpc_server_route(server, "/v1beta1.DevicePlugin/Allocate", false, allocate, NULL, &err) ||
        gs_grpc_server_route(server, "/v1beta1.DevicePlugin/GetDevicePluginOptions", false, allocate, NULL, &err) ||
        gs_grpc_server_route(server, "/v1beta1.DevicePlugin/GetPreferredAllocation", true, stream_two, NULL, &err) ||
        gs_grpc_server_route(server, "/v1beta1.DevicePlugin/ListAndWatch", true, stream_keep, NULL, &err))
        abort();
    gs_grpc_server_on_closed(server, on_closed, NULL);
    /* the socket file is not needed: the fuzzer feeds the session directly */
    unlink(sock);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!server) setup();
    kept = closed = 0;
    if (gs_grpc_server_feed(server, data, size) < 0) abort();
    if (kept != closed) abort();
    return 0;
}
