/*
 * fuzz_health_policy.c - libFuzzer target for gs_health_policy_parse and
 * gs_health_policy_dp (lib/agent/health.c).
 *
 * Any bytes may be fed in. A failed parse must leave the policy byte-for-byte unchanged and
 * report GS_ERR_INVALID; a successful one must keep the invariants (threshold 1..1000,
 * durations 1 ms..168 h, every XID class one of the three). The input is also split at its
 * first NUL into DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS values. A health state
 * machine built on the result must survive a few events. Any violation aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/health.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const gs_health_policy *p)
{
    if (p->threshold < 1 || p->threshold > 1000)
        abort();
    const int64_t max = INT64_C(7) * 24 * 3600 * 1000;
    if (p->window_ms < 1 || p->window_ms > max || p->probe_interval_ms < 1 ||
        p->probe_interval_ms > max || p->quiet_ms < 1 || p->quiet_ms > max)
        abort();
    for (size_t x = 0; x < GS_HEALTH_XID_MAX; x++)
        if (p->xid_class[x] > GS_XID_CRITICAL)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gs_health_policy p, before;
    gs_error err;
    gs_health_policy_default(&p);
    before = p;
    if (gs_health_policy_parse(&p, (const char *)data, size, &err) != 0) {
        if (err.code != GS_ERR_INVALID || memcmp(&p, &before, sizeof p) != 0)
            abort();
    }
    check(&p);

    /* the DP_* pair: "<disable>\0<enable>" */
    char *copy = malloc(size + 2);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = copy[size + 1] = '\0';
    const char *dis = copy, *en = copy + strlen(copy) + 1;
    if (en > copy + size)
        en = "";
    gs_health_policy q = p;
    if (gs_health_policy_dp(&q, dis, en, &err) != 0 && memcmp(&q, &p, sizeof q) != 0)
        abort();
    check(&q);
    free(copy);

    /* the state machine on it: one whole GPU */
    gs_nvml_gpu g;
    memset(&g, 0, sizeof g);
    gs_nvml_inventory inv = {.n_gpus = 1, .gpus = &g};
    gs_health *h = gs_health_new(&inv, &q);
    if (!h)
        return 0;
    for (unsigned k = 0; k < 8; k++) {
        gs_nvml_event e = {0, GS_NVML_EVENT_XID, size ? data[k % size] : k, ~0u, ~0u, -1};
        gs_health_event(h, &e, (int64_t)k * 1000);
    }
    size_t due[1];
    if (gs_health_probe_due(h, INT64_C(1) << 40, due, 1) == 1)
        gs_health_probe_result(h, due[0], 1, NULL, INT64_C(1) << 40);
    gs_health_tick(h, INT64_C(1) << 41);
    if (gs_health_unhealthy(h) != 0)
        abort(); /* a good probe long after the last event always brings it back */
    gs_health_free(h);
    return 0;
}
