/*
 * fuzz_admission.c - libFuzzer target for the webhook's AdmissionReview path: arbitrary
 * bytes through gs_admission_decode(), then, for bodies that decode, the whole review
 * (the object through the snapshot reader, the check rules, the JSONPatch) on both
 * endpoints, the response encoder and the audit line formatter.
 *
 * Workload expansion is bounded low (max_replicas 100) so one input cannot take seconds;
 * a default GPU PriorityClass is configured so the patch code runs all its branches.
 * Errors are expected and ignored; crashes, leaks, hangs and sanitizer reports are the
 * findings. Invariants checked: a decoded review has a non-empty uid; every warning is
 * at most GS_REVIEW_WARNING_MAX bytes; validate never carries a patch; mutate never
 * denies.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void review_one(const gs_webhook *wh, gs_review_endpoint ep, const char *body, size_t size)
{
    gs_review rv;
    gs_error err;
    if (gs_review_run(wh, ep, body, size, &rv, &err) != 0)
        return;
    if (!rv.req.uid || !rv.req.uid[0])
        abort();
    for (uint32_t i = 0; i < rv.nwarnings; i++)
        if (strlen(rv.warnings[i]) > GS_REVIEW_WARNING_MAX)
            abort();
    if (ep == GS_ENDPOINT_VALIDATE && rv.patch)
        abort();
    if (ep == GS_ENDPOINT_MUTATE && !rv.allowed)
        abort();
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_review_encode(&rv, &sb);
    gs_strbuf_reset(&sb);
    gs_audit_format(&rv, 1714557600123LL, "GS001", (size & 1) ? "CN=kube-apiserver" : NULL, 1, &sb);
    gs_strbuf_free(&sb);
    gs_review_free(&rv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0; /* the server refuses bodies above max_body before decoding */
    const char *body = (const char *)data;
    gs_arena arena;
    gs_arena_init(&arena, 0);
    gs_admission rq;
    gs_error err;
    int rc = gs_admission_decode(body, size, &arena, &rq, &err);
    gs_arena_free(&arena);
    if (rc != 0)
        return 0;

    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    cfg.default_gpu_priority_class = "gpu-batch";
    gs_webhook wh;
    memset(&wh, 0, sizeof wh);
    wh.cfg = &cfg;
    wh.has_gpu_priority_value = true;
    wh.gpu_priority_value = 1000;
    wh.read_opts.max_replicas = 100;
    wh.read_opts.max_objects = 1000;
    review_one(&wh, GS_ENDPOINT_VALIDATE, body, size);
    review_one(&wh, GS_ENDPOINT_MUTATE, body, size);
    cfg.default_gpu_priority_class = NULL;
    gs_check_config_free(&cfg);
    return 0;
}
