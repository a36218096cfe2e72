/*
 * nri.h - the node agent's NRI plugin: devices injected by pod identity when the container
 * runtime (containerd >= 1.7, CRI-O >= 1.26 with NRI enabled) creates a container
 * (docs/agent.md, "Injection by pod identity (NRI)").
 *
 * One thread: connect to the runtime's NRI socket, RegisterPlugin(name, index), answer
 * Configure (subscribing to CreateContainer, StopPodSandbox and RemovePodSandbox; failure
 * policy "fail the request": a container the plugin could not answer for is not created
 * without its devices), Synchronize (the book of what live pods hold is rebuilt; containers
 * that asked for a share resource and run without injection are logged; eviction is not
 * done), CreateContainer (inject.h's rule and the book's over-commit check: the
 * adjustment, or an error that fails the container's creation; the kubelet retries it with
 * back-off) and Stop/RemovePodSandbox (the pod's devices are released). When the runtime
 * goes away the thread reconnects every reconnect interval (1 s).
 *
 * Wire: NRI v0.12.5's ttrpc protocol over its connection multiplexer, spoken here in C
 * (lib/agent/ttrpc.c; messages from proto/nri/api.proto, proto/ttrpc/request.proto).
 * The library never prints: what happens is reported through the log callback.
 */
#ifndef GPUSCHED_NRI_H
#define GPUSCHED_NRI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"
#include "gpusched/inject.h"
#include "gpusched/nvml.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GS_NRI_SOCKET "/var/run/nri/nri.sock"
#define GS_NRI_PLUGIN_NAME "gpusched"
#define GS_NRI_PLUGIN_INDEX "10"
#define GS_NRI_API_VERSION "v0.12.5" /* the NRI API the messages follow */

/* level: 0 info, 1 warning, 2 error (the values of gs_agent_log_level). */
typedef void (*gs_nri_log_fn)(void *user, int level, const char *line);
/* connected: registered, configured and synchronized (true); the connection ended (false).
 * Called on the plugin's thread. */
typedef void (*gs_nri_state_fn)(void *user, bool connected);
/* Synchronize found a container that asked for a share resource and runs without its
 * devices (created while the plugin was not registered): the caller evicts its pod so the
 * kubelet creates it again through the plugin (design.md). Called on the plugin's thread. */
typedef void (*gs_nri_uninjected_fn)(void *user, const char *ns, const char *pod, const char *uid,
                                     const char *container, const char *resource);

typedef struct gs_nri_opts {
    const char *socket;       /* NULL or "": GS_NRI_SOCKET */
    const char *plugin_name;  /* NULL: GS_NRI_PLUGIN_NAME */
    const char *plugin_index; /* NULL: GS_NRI_PLUGIN_INDEX (two digits) */
    const char *node;         /* node name: records for another node are refused; NULL: not checked */
    const gs_nvml_inventory *inv; /* NVML's inventory; kept by pointer until gs_nri_stop */
    const char *proc_root;    /* NULL: "/proc" (devices, driver/nvidia-caps/mig-minors) */
    const char *mps_pipe_dir; /* NULL: shares are time-sliced (inject.h) */
    long reconnect_ms;        /* 0: 1000 */
    gs_nri_log_fn log;
    gs_nri_state_fn on_state;
    gs_nri_uninjected_fn on_uninjected; /* NULL: only logged */
    void *user;
} gs_nri_opts;

typedef struct gs_nri_stats {
    bool connected;
    uint64_t connections;       /* successful registrations */
    uint64_t injected, voided, untouched, refused; /* CreateContainer outcomes */
    int64_t request_timeout_ms; /* the runtime's, from ConfigureRequest (0 before) */
    char runtime[128];          /* "containerd v2.1.0" */
} gs_nri_stats;

typedef struct gs_nri gs_nri;

/* Copy the options, read the host's device numbers, start the thread. Not being able to
 * reach the runtime is not an error (the thread retries). -1 with err: bad options (a
 * plugin index that is not two digits, a socket path too long), no memory, no thread. */
int gs_nri_start(const gs_nri_opts *opts, gs_nri **out, gs_error *err);
/* Stop the thread, close the connection. NULL accepted. */
void gs_nri_stop(gs_nri *n);
void gs_nri_stats_get(gs_nri *n, gs_nri_stats *out);

#ifdef __cplusplus
}
#endif
#endif
