/*
 * health.h - the node agent's device health: an XID policy and recovery, as a pure state
 * machine.
 *
 * No NVML in here and no clock: the caller feeds events (gs_nvml_event from
 * gs_nvml_events_wait), event-registration outcomes, event-wait failures and probe results
 * (gs_nvml_probe), each with the time as int64 milliseconds on a clock of its choosing, and
 * asks which devices to probe and whether anything changed (the generation counter) so it
 * knows when to send a new ListAndWatch response.
 *
 * Devices are the inventory's advertised devices: a GPU in MIG mode with MIG devices is
 * represented by its MIG devices (gpu index, mig index into gs_nvml_gpu.mig), any other GPU
 * by itself (mig -1). A GPU lost at discovery starts unhealthy.
 *
 * The rules (docs/agent.md, "Health: the XID policy"):
 *   - ignored XIDs (application errors; default 13, 31, 43, 45, 68, 109) change nothing;
 *   - critical XIDs make the device unhealthy at once;
 *   - any other XID makes it unhealthy when `threshold` of them arrive within `window_ms`;
 *   - events other than XID events (ECC counters) change nothing, as in NVIDIA's plugin;
 *   - attribution: an event with GI and CI ids marks only the MIG device with those ids;
 *     without, every device of that GPU; from an unknown device, every device;
 *   - an event-registration failure other than NOT_SUPPORTED makes the GPU's devices
 *     unhealthy; an event-wait failure makes every device unhealthy;
 *   - recovery: an unhealthy device is due for a probe every `probe_interval_ms`; it is
 *     healthy again once its latest probe succeeded and `quiet_ms` passed since the last
 *     thing that made or kept it unhealthy. A lost GPU (XID 79, GPU_IS_LOST) needs that
 *     successful probe too: no timer alone brings a device back.
 *
 * The library never prints and never exits.
 */
#ifndef GPUSCHED_HEALTH_H
#define GPUSCHED_HEALTH_H

#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/nvml.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_HEALTH_XID_MAX 1024 /* XIDs at or above this are "other" (counted) */
#define GS_HEALTH_REASON_MAX 256

typedef enum gs_xid_class {
    GS_XID_COUNTED = 0,  /* unhealthy after `threshold` within `window_ms` */
    GS_XID_IGNORED = 1,  /* an application error: the device stays healthy */
    GS_XID_CRITICAL = 2, /* unhealthy at once */
} gs_xid_class;

typedef struct gs_health_policy {
    int checks;                 /* 0: XID checks off (DP_DISABLE_HEALTHCHECKS=all): events,
                                 * registration and wait failures change nothing; probes of
                                 * devices lost at discovery still run */
    unsigned char xid_class[GS_HEALTH_XID_MAX]; /* gs_xid_class per XID */
    unsigned threshold;         /* counted XIDs within the window that make unhealthy (>= 1) */
    int64_t window_ms;
    int64_t probe_interval_ms;
    int64_t quiet_ms;
} gs_health_policy;

/* The defaults: ignored 13,31,43,45,68,109; critical 48,62,63,64,74,79,95,119,120,140,154;
 * threshold 3 within 10 minutes; probe every 30 s; 60 s quiet. */
void gs_health_policy_default(gs_health_policy *p);

/* The class of an XID under p (XIDs >= GS_HEALTH_XID_MAX are counted). */
gs_xid_class gs_health_xid_class(const gs_health_policy *p, unsigned long long xid);

/* Apply a policy string to p (start from gs_health_policy_default). Items separated by ';'
 * or blanks, each key=value:
 *   ignore=<xids> / critical=<xids> / counted=<xids>  put those XIDs in that class
 *   threshold=<n>  window=<dur>  probe=<dur>  quiet=<dur>   dur: <n>ms|s|m|h
 *   disable=<DP_DISABLE_HEALTHCHECKS value>  enable=<DP_ENABLE_HEALTHCHECKS value>
 * <xids> is a comma list of XIDs (0..1023). GS_ERR_INVALID naming the item on bad input;
 * p is then unchanged. len bytes of s are read (no terminator needed). */
int gs_health_policy_parse(gs_health_policy *p, const char *s, size_t len, gs_error *err);

/* NVIDIA's plugin's environment variables, for drop-in compatibility (NULL or "" = unset):
 *   DP_DISABLE_HEALTHCHECKS: "all", or any value containing "xids", turns XID checks off;
 *     otherwise a comma list of XIDs ignored in addition to the defaults;
 *   DP_ENABLE_HEALTHCHECKS: "all"/"xids" un-ignores every XID (the default ignore list too)
 *     and turns checks back on; otherwise a comma list of XIDs made critical (the plugin
 *     marks a device unhealthy at the first one), winning over any disable.
 * GS_ERR_INVALID on a list item that is not an XID; p is then unchanged. */
int gs_health_policy_dp(gs_health_policy *p, const char *disable, const char *enable,
                        gs_error *err);

typedef struct gs_health gs_health;

typedef struct gs_health_device {
    int gpu;                        /* index into the inventory's gpus */
    int mig;                        /* index into that gpu's mig, or -1 (whole GPU) */
    unsigned gpu_instance_id, compute_instance_id; /* ~0u for a whole GPU */
    char uuid[GS_NVML_STR_MAX];     /* to probe it (gs_nvml_probe) */
    int healthy;
    char reason[GS_HEALTH_REASON_MAX]; /* why unhealthy: "XID 79 (GPU has fallen off the bus)
                                        * at <time>"; "" when healthy */
    int64_t since_ms;               /* of the current state (0: since the start) */
    unsigned transitions;           /* healthy<->unhealthy changes so far */
    long long last_xid;             /* the last XID seen (any class), -1 none */
    int64_t last_xid_ms;
    int64_t last_bad_ms;            /* the last event that made/kept it unhealthy */
    int probe_ok;                   /* the latest probe while unhealthy: -1 none, 0 failed, 1 ok */
    char probe_reason[GS_HEALTH_REASON_MAX]; /* the failed probe's reason */
    int64_t next_probe_ms;          /* when unhealthy: when the next probe is due */
} gs_health_device;

/* The devices of inv under policy (copied; inv may be freed after). NULL on allocation
 * failure. */
gs_health *gs_health_new(const gs_nvml_inventory *inv, const gs_health_policy *policy);
void gs_health_free(gs_health *h);

size_t gs_health_count(const gs_health *h);
const gs_health_device *gs_health_get(const gs_health *h, size_t i);
/* The index of the device (gpu, mig), or -1. */
long gs_health_find(const gs_health *h, int gpu, int mig);
/* Bumped by one on every transition (healthy<->unhealthy) of any device, never otherwise. */
uint64_t gs_health_generation(const gs_health *h);
/* Devices unhealthy now. */
size_t gs_health_unhealthy(const gs_health *h);

/* One NVML event at now. Returns the number of devices that turned unhealthy. */
size_t gs_health_event(gs_health *h, const gs_nvml_event *ev, int64_t now);

/* The registration outcome of a GPU (gs_nvml_events_registration): FAILED makes its devices
 * unhealthy ("health events could not be registered: <reason>"). */
size_t gs_health_registration(gs_health *h, int gpu, gs_nvml_reg reg, const char *reason,
                              int64_t now);

/* gs_nvml_events_wait failed: every device unhealthy ("health checks failing: <reason>"). */
size_t gs_health_wait_error(gs_health *h, const char *reason, int64_t now);

/* The unhealthy devices whose probe is due at now: their indices into out (at most cap; the
 * count is returned). Each returned device's next probe moves one interval on. */
size_t gs_health_probe_due(gs_health *h, int64_t now, size_t *out, size_t cap);

/* The result of probing device i (gs_nvml_probe: ok 1, or 0 with its reason). Returns 1 when
 * the device became healthy. */
int gs_health_probe_result(gs_health *h, size_t i, int ok, const char *reason, int64_t now);

/* Apply the passage of time: devices whose quiet period ended after a successful probe
 * become healthy. Returns the number of transitions. */
size_t gs_health_tick(gs_health *h, int64_t now);

/* NVIDIA's meaning of an XID for reasons and docs ("GPU has fallen off the bus"), or NULL. */
const char *gs_health_xid_meaning(unsigned long long xid);

#ifdef __cplusplus
}
#endif
#endif
