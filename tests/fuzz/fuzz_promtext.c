/*
 * fuzz_promtext.c - libFuzzer target for the monitor's utilization input
 * (lib/monitor/promtext.c): the Prometheus text exposition reader and the /api/v1/query
 * JSON reader.
 *
 * The first byte picks the reader (even: text, odd: query JSON; for JSON bits 1-2 pick the
 * default family) and, through bit 3, small limits. Every input is read twice into a set that
 * already holds samples.
 *
 * Invariants: a failure is one of the input error codes with a position inside the input
 * (text errors: line >= 1 and col >= 1) and leaves the set exactly as it was; a success adds
 * samples whose utilization is finite and within [0, 1], whose metric is one of the two
 * families, whose strings are non-NULL, whose gpu and MIG ids are -1 or small, and whose line
 * is within the input; reading the same input again succeeds and adds the same samples.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char seed_text[] =
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",Hostname=\"n\"} 12\n";

static void check_code(const gs_error *err)
{
    switch (err->code) {
    case GS_ERR_PARSE:
    case GS_ERR_INVALID:
    case GS_ERR_LIMIT:
    case GS_ERR_NOMEM:
        return;
    default:
        abort();
    }
}

static void check_samples(const gs_util_set *s, size_t from, size_t len)
{
    for (size_t i = from; i < s->n; i++) {
        const gs_util_sample *x = &s->v[i];
        if (!isfinite(x->util) || x->util < 0 || x->util > 1)
            abort();
        if (x->metric != GS_UTIL_GPU_UTIL && x->metric != GS_UTIL_GR_ENGINE_ACTIVE)
            abort();
        if (!x->node || !x->uuid || !x->device || !x->model || !x->mig_profile || !x->ns ||
            !x->pod || !x->container)
            abort();
        if (x->gpu < -1 || x->gpu > 9999999 || x->mig_instance < -1 || x->mig_instance > 9999999)
            abort();
        if (x->line < 1 || x->line > len + 1)
            abort();
        /* strings are C strings of the input's bytes: no longer than the input */
        if (strlen(x->node) > len || strlen(x->pod) > len || strlen(x->uuid) > len)
            abort();
    }
}

static int read_one(gs_util_set *s, int json, gs_util_metric m, const gs_util_limits *lim,
                    const char *text, size_t len, gs_error *err)
{
    gs_error_clear(err);
    if (json)
        return gs_util_parse_query_json(s, "fuzz.json", text, len, m, lim, err);
    return gs_util_parse_promtext(s, "fuzz.prom", text, len, lim, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int json = data[0] & 1;
    gs_util_metric m = (gs_util_metric)((data[0] >> 1) % 3);
    gs_util_limits small = {64, 3, 5}, *lim = (data[0] & 8) ? &small : NULL;
    /* an exact-size heap copy: reads past the end are caught by ASan */
    size_t len = size - 1;
    char *text = malloc(len ? len : 1);
    if (!text)
        return 0;
    memcpy(text, data + 1, len);

    gs_util_set s;
    gs_util_set_init(&s);
    gs_error err;
    gs_error_clear(&err);
    if (gs_util_parse_promtext(&s, "seed.prom", seed_text, sizeof seed_text - 1, NULL, &err) != 0 ||
        s.n != 1)
        abort();
    size_t n0 = s.n;
    uint64_t series0 = s.series, dropped0 = s.dropped;

    int rc = read_one(&s, json, m, lim, text, len, &err);
    if (rc < 0) {
        check_code(&err);
        if (!json && err.code != GS_ERR_NOMEM && (err.line < 1 || err.col < 1))
            abort();
        if (s.n != n0 || s.series != series0 || s.dropped != dropped0)
            abort();
    } else {
        check_samples(&s, n0, len);
        size_t n1 = s.n;
        uint64_t added = s.series - series0;
        if (read_one(&s, json, m, lim, text, len, &err) != 0)
            abort(); /* the same input reads the same way */
        if (s.n - n1 != n1 - n0 || s.series - series0 != 2 * added)
            abort();
        for (size_t i = 0; i < n1 - n0; i++) {
            const gs_util_sample *a = &s.v[n0 + i], *b = &s.v[n1 + i];
            if (a->util != b->util || a->gpu != b->gpu || a->mig_instance != b->mig_instance ||
                a->metric != b->metric || strcmp(a->node, b->node) != 0 ||
                strcmp(a->pod, b->pod) != 0 || strcmp(a->mig_profile, b->mig_profile) != 0)
                abort();
        }
    }
    gs_util_set_free(&s);
    free(text);
    return 0;
}
