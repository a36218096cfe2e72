/*
 * agent.h - the running node agent (`gpusched agent`): NVML discovery, one kubelet device
 * plugin server per advertised resource, registration that recovers from kubelet restarts,
 * device health with recovery, sensor sampling, pod attribution through the kubelet's
 * PodResources API, and the node's GFD-compatible labels. docs/agent.md.
 *
 * Threads (all owned by the agent, started by gs_agent_start, joined by gs_agent_stop):
 *  - one gRPC server thread per resource (grpc.h): the kubelet's calls are answered there
 *    from the plan under the agent's lock;
 *  - the registrar: watches the device-plugin directory with inotify; when kubelet.sock is
 *    created (a kubelet restart) or one of our sockets is gone, it recreates the servers
 *    whose sockets vanished and registers every resource again; it also retries failed
 *    registrations every second;
 *  - the health loop: waits on NVML's event set (up to 1 s), feeds XIDs to the health
 *    policy (health.h), probes unhealthy devices when due, and on a change pushes the full
 *    device list to every open ListAndWatch stream;
 *  - the sampler: reads the sensors every sample interval and the PodResources List every
 *    attribution interval, for /metrics.
 *
 * The library never prints and never exits: what happens at run time is reported through
 * the log callback (one line each) and counted in the agent's metrics.
 */
#ifndef GPUSCHED_AGENT_H
#define GPUSCHED_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/devplugin.h"
#include "gpusched/error.h"
#include "gpusched/exporter.h"
#include "gpusched/gfd.h"
#include "gpusched/health.h"
#include "gpusched/nri.h"
#include "gpusched/nvml.h"
#include "gpusched/util.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_AGENT_PLUGIN_DIR "/var/lib/kubelet/device-plugins"
#define GS_AGENT_KUBELET_SOCKET "kubelet.sock"
#define GS_AGENT_PODRESOURCES_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"

typedef enum gs_agent_log_level { GS_AGENT_INFO = 0, GS_AGENT_WARN, GS_AGENT_ERROR } gs_agent_log_level;
typedef void (*gs_agent_log_fn)(void *user, gs_agent_log_level level, const char *line);

/* A device (GPU or MIG device, by UUID) turned unhealthy or healthy again: for the caller's
 * Event. Called from the health loop, no lock held. */
typedef void (*gs_agent_health_fn)(void *user, const char *uuid, bool healthy, const char *reason);

typedef struct gs_agent_opts {
    const char *node;                 /* node name (labels, metrics' Hostname) */
    const char *nvml_library;         /* NULL: GS_NVML_LIBRARY */
    const char *plugin_dir;           /* NULL: GS_AGENT_PLUGIN_DIR */
    const char *podresources_socket;  /* NULL: GS_AGENT_PODRESOURCES_SOCKET; "" none */
    gs_devplugin_config plugin;       /* device plugin configuration (copied) */
    gs_health_policy health;          /* XID policy, probe interval, quiet period (copied) */
    gs_gfd_config gfd;                /* label options; mig strategy/sharing taken from plugin */
    gs_exporter_opts exporter;        /* metric label options */
    int64_t sample_interval_ms;       /* 0: 1000 */
    int64_t attribution_interval_ms;  /* 0: 10000 */
    int64_t register_timeout_ms;      /* 0: 10000 (the kubelet dials back synchronously) */
    bool no_register;                 /* serve the plugin sockets without calling kubelet.sock */
    const char *nri_socket;           /* NRI plugin (nri.h) on this runtime socket; NULL/"": off.
                                       * Share resources are healthy only while it is connected */
    const char *mps_pipe_dir;         /* NRI: MPS limits for shares under this pipe directory;
                                       * NULL: shares are time-sliced (inject.h) */
    gs_nri_uninjected_fn on_uninjected; /* NRI: a container runs without its devices (user) */
    gs_agent_log_fn log;
    gs_agent_health_fn on_health;
    void *user;
} gs_agent_opts;

void gs_agent_opts_init(gs_agent_opts *o);

typedef struct gs_agent gs_agent;

/* Open NVML, discover, build the plan and the health tracker, start the servers and
 * threads, register every resource (a failed registration is retried by the registrar:
 * not an error here). Fails (GS_ERR_NOTFOUND) without NVML, or when a socket cannot be
 * created in the plugin directory. */
int gs_agent_start(const gs_agent_opts *opts, gs_agent **out, gs_error *err);
/* Stop every thread and server (streams are ended, sockets removed), close NVML. */
void gs_agent_stop(gs_agent *a);

/* The agent's /metrics body: the DCGM-compatible GPU series and the agent's own
 * (registrations, health, ListAndWatch and Allocate counts and latencies). */
void gs_agent_metrics(gs_agent *a, gs_strbuf *out);
/* /readyz: every resource registered with the kubelet since its last restart. */
bool gs_agent_ready(gs_agent *a, gs_strbuf *why);
/* The node's GFD-compatible labels, computed at the start from the inventory and the
 * configuration (both fixed for the agent's life: a MIG reconfiguration restarts the
 * agent, as it restarts NVIDIA's plugin). Valid until gs_agent_stop. */
const gs_gfd_labels *gs_agent_labels(const gs_agent *a);
/* The label options a device plugin configuration implies (MIG strategy, sharing,
 * renameByDefault, the replicas of nvidia.com/gpu), over base (NULL: zero): what the agent
 * labels with, and what `agent discover` shows. */
void gs_agent_gfd_config(const gs_devplugin_config *plugin, const gs_gfd_config *base, gs_gfd_config *out);
/* NVML's inventory as discovered at the start. Valid until gs_agent_stop. */
const gs_nvml_inventory *gs_agent_inventory(const gs_agent *a);

/* ---------------------------------------------------------------- agent check */
/* `gpusched agent check`: the promote-path gate. It discovers NVML's devices and the plan
 * the agent would serve with the same configuration, then asks the node:
 *   nvml         NVML loads; no GPU is lost;
 *   serving      each planned resource's socket answers GetDevicePluginOptions;
 *   devices      its ListAndWatch lists exactly the planned device IDs;
 *   healthy      every listed device is Healthy;
 *   registered   the kubelet's PodResources GetAllocatableResources knows the resource
 *                with the same device IDs (skipped when podresources_socket is "").
 * Every check runs; each outcome is one item. */
typedef struct gs_agent_check_item {
    char check[16];       /* "nvml", "serving", "devices", "healthy", "registered" */
    char resource[64];    /* "" for nvml */
    bool ok;
    char message[512];
} gs_agent_check_item;

typedef struct gs_agent_check_report {
    size_t n, failed;
    gs_agent_check_item *items;
    char driver_version[80];
    size_t n_gpus;
} gs_agent_check_report;

typedef struct gs_agent_check_opts {
    const char *nvml_library;         /* NULL: GS_NVML_LIBRARY */
    const char *plugin_dir;           /* NULL: GS_AGENT_PLUGIN_DIR */
    const char *podresources_socket;  /* NULL: GS_AGENT_PODRESOURCES_SOCKET; "": skipped */
    gs_devplugin_config plugin;
    long timeout_ms;                  /* per call; 0: 10 s */
} gs_agent_check_opts;

/* Run the checks into *out (free with gs_agent_check_report_free). -1 with err only when
 * the checks cannot run at all (no memory); an NVML that does not load is a failed item. */
int gs_agent_check(const gs_agent_check_opts *o, gs_agent_check_report *out, gs_error *err);
void gs_agent_check_report_free(gs_agent_check_report *r);

#ifdef __cplusplus
}
#endif
#endif
