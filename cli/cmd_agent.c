/*
 * cmd_agent.c - `gpusched agent`: the node agent (docs/cli/agent.md, docs/agent.md).
 *
 *   gpusched agent [options]            run it: device plugin, health, labels, metrics
 *   gpusched agent check [options]      the promote-path gate
 *   gpusched agent discover [options]   what NVML shows and what would be advertised
 *
 * Threads of `agent`: main parses, starts the agent (agent.h: its servers and threads) and
 * the HTTP server (/metrics, /healthz, /readyz), then waits for signals with a 1 s tick on
 * which it publishes the node's labels when they changed (or every --labels-interval) and
 * sends the queued health Events. Everything the library reports arrives through the log
 * callback and is printed here, one line each.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "cmd_agent.h"
#include "gpusched/agent.h"
#include "gpusched/dradriver.h"
#include "gpusched/live.h"
#include "gpusched/live_write.h"
#include "gpusched/serve.h"

const char cli_agent_usage[] =
    "usage: gpusched agent [options]\n"
    "       gpusched agent check [options]\n"
    "       gpusched agent discover [options]\n"
    "\n"
    "The node agent of a GPU node: NVML discovery (libnvidia-ml.so.1 loaded at run\n"
    "time), a kubelet device plugin (API v1beta1) per advertised resource with\n"
    "health that recovers, GFD-compatible node labels and DCGM-compatible metrics.\n"
    "\n"
    "  agent            run it (a DaemonSet: deploy/agent)\n"
    "  agent check      the promote-path gate: exit 1 with the reasons when the\n"
    "                   plugin is not registered, advertises other devices than\n"
    "                   NVML shows, or a device is unhealthy\n"
    "  agent discover   print NVML's inventory, the resources and devices that\n"
    "                   would be advertised and the labels; no kubelet, no cluster\n"
    "\n"
    "Devices (all three forms):\n"
    "      --nvml-library PATH    NVML to load (default libnvidia-ml.so.1)\n"
    "      --config FILE          NVIDIA device plugin's config file (flags.migStrategy,\n"
    "                             sharing.timeSlicing / mps, deviceListStrategy, ...)\n"
    "      --mig-strategy none|single|mixed\n"
    "                             overrides the config's (default none)\n"
    "Kubelet:\n"
    "      --device-plugin-dir DIR\n"
    "                             the kubelet's device plugin directory (default\n"
    "                             /var/lib/kubelet/device-plugins)\n"
    "      --pod-resources-socket PATH\n"
    "                             the kubelet's PodResources API (default\n"
    "                             /var/lib/kubelet/pod-resources/kubelet.sock; \"\"\n"
    "                             none: no pod labels on the metrics)\n"
    "      --no-register          serve the plugin sockets but do not call the\n"
    "                             kubelet's Register (tests)\n"
    "      --nri-socket PATH      inject the share resources' devices by pod identity\n"
    "                             as an NRI plugin of the container runtime on PATH\n"
    "                             (recommended /var/run/nri/nri.sock; default off:\n"
    "                             share resources stay Unhealthy). A container found\n"
    "                             running without its devices (created while the\n"
    "                             plugin was away) has its pod evicted through the API\n"
    "      --mps-pipe-dir DIR     with --nri-socket: shares get CUDA MPS limits (the\n"
    "                             MPS control daemon's pipe directory); default: shares\n"
    "                             are time-sliced, without memory or compute limits\n"
    "DRA driver (agent; Kubernetes 1.34+, resource.k8s.io/v1):\n"
    "      --dra                  be the node's DRA driver (kubelet plugin): publish\n"
    "                             the GPUs and MIG devices as a ResourceSlice, register\n"
    "                             with the kubelet's plugin watcher, prepare claims as\n"
    "                             CDI specs. The device plugin is then not registered\n"
    "                             (its sockets are served): one way to advertise a GPU\n"
    "      --dra-driver NAME      the driver name (default gpu.nvidia.com, NVIDIA's)\n"
    "      --plugins-registry-dir DIR\n"
    "                             the kubelet's plugin watcher directory (default\n"
    "                             /var/lib/kubelet/plugins_registry)\n"
    "      --dra-plugin-dir DIR   dra.sock and the checkpoint of prepared claims\n"
    "                             (default /var/lib/kubelet/plugins/<driver>)\n"
    "      --cdi-dir DIR          where the claims' CDI specs go (default /var/run/cdi)\n"
    "      --dra-keep-slice       leave the ResourceSlice at shutdown (default: deleted)\n"
    "      --dra-with-device-plugin\n"
    "                             register the device plugin too (both advertise the\n"
    "                             same GPUs: only for a migration with separate nodes)\n"
    "Health (agent):\n"
    "      --disable-healthchecks LIST\n"
    "                             as NVIDIA's DP_DISABLE_HEALTHCHECKS: all, xids, or\n"
    "                             XIDs to ignore besides the defaults (also read from\n"
    "                             that variable)\n"
    "      --enable-healthchecks LIST\n"
    "                             XIDs always acted on (DP_ENABLE_HEALTHCHECKS)\n"
    "      --probe-interval D     how often an unhealthy device is probed (default 30s)\n"
    "      --recover-after D      quiet time before a device that answers again is\n"
    "                             healthy again (default 60s)\n"
    "Labels and metrics (agent):\n"
    "      --node NAME            this node (default $NODE_NAME, else the host name)\n"
    "      --labels none|apply|nodefeature|file\n"
    "                             where the GFD-compatible labels go: none (default),\n"
    "                             server-side apply to the Node (field manager\n"
    "                             gpusched-agent), an NFD NodeFeature object, or an NFD\n"
    "                             feature file\n"
    "      --labels-file PATH     for file (default /etc/kubernetes/node-feature-\n"
    "                             discovery/features.d/gpusched)\n"
    "      --labels-namespace NS  for nodefeature (default $POD_NAMESPACE, else\n"
    "                             gpusched-system)\n"
    "      --labels-interval D    apply again this often even when unchanged (default\n"
    "                             60s, as GFD's sleep-interval)\n"
    "      --listen ADDR:PORT     /metrics, /healthz, /readyz (default 0.0.0.0:9400;\n"
    "                             port 0 picks a free port)\n"
    "      --sample-interval D    how often the sensors are read (default 1s)\n"
    "      --no-hostname          no Hostname label on the GPU series\n"
    "      --kubeconfig FILE, --context NAME, --request-timeout D\n"
    "                             the cluster, for --labels apply/nodefeature and the\n"
    "                             health Events (default: in-cluster)\n"
    "Check and discover:\n"
    "  -o, --output text|json     output format (default text)\n"
    "      --timeout D            check: how long to wait for the kubelet and the\n"
    "                             plugin (default 10s)\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Durations: \"30s\", \"5m\", \"1h\", or seconds.\n"
    "\n"
    "Exit status: agent: 0 stopped by SIGTERM or SIGINT, 2 usage error or cannot\n"
    "start (no NVML, plugin directory not writable, address in use), 3 internal\n"
    "error. check: 0 every check passed, 1 a check failed (the reasons are printed),\n"
    "2 usage error or NVML cannot be loaded. discover: 0, 2 NVML cannot be loaded\n"
    "or the config is invalid.\n";

/* ---------------------------------------------------------------- options */
enum {
    OPT_HELP,
    OPT_MPS,
    OPT_NVML,
    OPT_CONFIG,
    OPT_MIG,
    OPT_DIR,
    OPT_PODRES,
    OPT_NO_REGISTER,
    OPT_DISABLE_HC,
    OPT_ENABLE_HC,
    OPT_PROBE,
    OPT_RECOVER,
    OPT_NODE,
    OPT_LABELS,
    OPT_LABELS_FILE,
    OPT_LABELS_NS,
    OPT_LABELS_INTERVAL,
    OPT_LISTEN,
    OPT_SAMPLE,
    OPT_NO_HOSTNAME,
    OPT_OUTPUT,
    OPT_TIMEOUT,
    OPT_NRI,
    OPT_DRA,
    OPT_DRA_DRIVER,
    OPT_DRA_REGISTRY,
    OPT_DRA_PLUGIN_DIR,
    OPT_CDI_DIR,
    OPT_DRA_KEEP,
    OPT_DRA_WITH_DP,
};

static const cli_opt agent_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"nvml-library", 0, true, OPT_NVML},
    {"config", 0, true, OPT_CONFIG},
    {"mig-strategy", 0, true, OPT_MIG},
    {"device-plugin-dir", 0, true, OPT_DIR},
    {"pod-resources-socket", 0, true, OPT_PODRES},
    {"no-register", 0, false, OPT_NO_REGISTER},
    {"nri-socket", 0, true, OPT_NRI},
    {"mps-pipe-dir", 0, true, OPT_MPS},
    {"disable-healthchecks", 0, true, OPT_DISABLE_HC},
    {"enable-healthchecks", 0, true, OPT_ENABLE_HC},
    {"probe-interval", 0, true, OPT_PROBE},
    {"recover-after", 0, true, OPT_RECOVER},
    {"node", 0, true, OPT_NODE},
    {"labels", 0, true, OPT_LABELS},
    {"labels-file", 0, true, OPT_LABELS_FILE},
    {"labels-namespace", 0, true, OPT_LABELS_NS},
    {"labels-interval", 0, true, OPT_LABELS_INTERVAL},
    {"listen", 0, true, OPT_LISTEN},
    {"sample-interval", 0, true, OPT_SAMPLE},
    {"no-hostname", 0, false, OPT_NO_HOSTNAME},
    {"kubeconfig", 0, true, CLI_OPT_KUBECONFIG},
    {"context", 0, true, CLI_OPT_CONTEXT},
    {"request-timeout", 0, true, CLI_OPT_REQUEST_TIMEOUT},
    {"output", 'o', true, OPT_OUTPUT},
    {"timeout", 0, true, OPT_TIMEOUT},
    {"dra", 0, false, OPT_DRA},
    {"dra-driver", 0, true, OPT_DRA_DRIVER},
    {"plugins-registry-dir", 0, true, OPT_DRA_REGISTRY},
    {"dra-plugin-dir", 0, true, OPT_DRA_PLUGIN_DIR},
    {"cdi-dir", 0, true, OPT_CDI_DIR},
    {"dra-keep-slice", 0, false, OPT_DRA_KEEP},
    {"dra-with-device-plugin", 0, false, OPT_DRA_WITH_DP},
};

typedef enum { MODE_RUN = 0, MODE_CHECK, MODE_DISCOVER } agent_mode;
typedef enum { LABELS_NONE = 0, LABELS_APPLY, LABELS_NODEFEATURE, LABELS_FILE } labels_mode;

typedef struct agent_args {
    agent_mode mode;
    cli_live live;
    const char *nvml, *config, *dir, *podres, *nri, *mps;
    int mig; /* -1: the config's */
    bool no_register, no_hostname, json;
    const char *disable_hc, *enable_hc;
    int64_t probe_s, recover_s, sample_ms, labels_interval_s, timeout_s;
    char node[256];
    labels_mode labels;
    const char *labels_file, *labels_ns;
    char host[64];
    uint16_t port;
    bool dra, dra_keep, dra_with_dp;
    const char *dra_driver, *dra_registry, *dra_plugin_dir, *cdi_dir;
} agent_args;

static int parse_duration_opt(const char *what, const char *value, int64_t min_s, int64_t max_s,
                              int64_t *out, gs_error *err)
{
    int64_t s;
    if (gs_parse_duration(value, &s) != 0 || s < min_s || s > max_s)
        return gs_fail(err, GS_ERR_USAGE, "%s: expected a duration from %llds to %llds (\"30s\", \"5m\"), got \"%s\"",
                       what, (long long)min_s, (long long)max_s, value);
    *out = s;
    return 0;
}

/* a DNS subdomain: lowercase alphanumerics, '-' and '.', labels not starting or ending
 * with '-', at most 63 bytes here (a driver name) */
static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    char prev = '.';
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && c != '-' && c != '.')
            return false;
        if ((c == '.' || c == '-') && prev == '.')
            return false;
        if (c == '.' && prev == '-')
            return false;
        prev = c;
    }
    return prev != '.' && prev != '-';
}

static int parse_args(int argc, char **argv, agent_args *a, bool *help, gs_error *err)
{
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "check") == 0) {
        a->mode = MODE_CHECK;
        first = 2;
    } else if (argc > 1 && strcmp(argv[1], "discover") == 0) {
        a->mode = MODE_DISCOVER;
        first = 2;
    }
    cli_args it;
    cli_args_init(&it, argc, argv, first, agent_opts, sizeof agent_opts / sizeof agent_opts[0]);
    a->mig = -1;
    a->probe_s = 30;
    a->recover_s = 60;
    a->sample_ms = 1000;
    a->labels_interval_s = 60;
    a->timeout_s = 10;
    snprintf(a->host, sizeof a->host, "0.0.0.0");
    a->port = 9400;
    a->labels_file = "/etc/kubernetes/node-feature-discovery/features.d/gpusched";
    const char *value;
    int id;
    while ((id = cli_args_next(&it, &value, err)) != CLI_ARG_END) {
        switch (id) {
        case CLI_ARG_ERROR: return -1;
        case CLI_ARG_POSITIONAL:
            return gs_fail(err, GS_ERR_USAGE, "unexpected argument \"%s\" (sub-commands: check, discover)", value);
        case OPT_HELP: *help = true; return 0;
        case CLI_OPT_KUBECONFIG:
        case CLI_OPT_CONTEXT:
        case CLI_OPT_REQUEST_TIMEOUT:
            if (cli_live_parse_opt(&a->live, id, value, err) < 0)
                return -1;
            break;
        case OPT_NVML: a->nvml = value; break;
        case OPT_CONFIG: a->config = value; break;
        case OPT_MIG: {
            static const char *const choices[] = {"none", "single", "mixed", NULL};
            int c = cli_parse_choice("--mig-strategy", value, choices, err);
            if (c < 0)
                return -1;
            a->mig = c == 0 ? GS_MIG_NONE : c == 1 ? GS_MIG_SINGLE : GS_MIG_MIXED;
            break;
        }
        case OPT_DIR:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--device-plugin-dir: expected a directory");
            a->dir = value;
            break;
        case OPT_PODRES: a->podres = value; break;
        case OPT_NO_REGISTER: a->no_register = true; break;
        case OPT_NRI: a->nri = value; break;
        case OPT_MPS:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--mps-pipe-dir: expected a directory");
            a->mps = value;
            break;
        case OPT_DISABLE_HC: a->disable_hc = value; break;
        case OPT_ENABLE_HC: a->enable_hc = value; break;
        case OPT_PROBE:
            if (parse_duration_opt("--probe-interval", value, 1, 3600, &a->probe_s, err) != 0)
                return -1;
            break;
        case OPT_RECOVER:
            if (parse_duration_opt("--recover-after", value, 0, 86400, &a->recover_s, err) != 0)
                return -1;
            break;
        case OPT_SAMPLE: {
            int64_t s = 1;
            if (parse_duration_opt("--sample-interval", value, 1, 3600, &s, err) != 0)
                return -1;
            a->sample_ms = s * 1000;
            break;
        }
        case OPT_LABELS_INTERVAL:
            if (parse_duration_opt("--labels-interval", value, 1, 86400, &a->labels_interval_s, err) != 0)
                return -1;
            break;
        case OPT_TIMEOUT:
            if (parse_duration_opt("--timeout", value, 1, 600, &a->timeout_s, err) != 0)
                return -1;
            break;
        case OPT_NODE:
            if (!value[0] || strlen(value) >= sizeof a->node)
                return gs_fail(err, GS_ERR_USAGE, "--node: expected a node name");
            snprintf(a->node, sizeof a->node, "%s", value);
            break;
        case OPT_LABELS: {
            static const char *const choices[] = {"none", "apply", "nodefeature", "file", NULL};
            int c = cli_parse_choice("--labels", value, choices, err);
            if (c < 0)
                return -1;
            a->labels = (labels_mode)c;
            break;
        }
        case OPT_LABELS_FILE:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--labels-file: expected a file name");
            a->labels_file = value;
            break;
        case OPT_LABELS_NS:
            if (!value[0])
                return gs_fail(err, GS_ERR_USAGE, "--labels-namespace: expected a namespace");
            a->labels_ns = value;
            break;
        case OPT_LISTEN:
            if (cli_parse_listen(value, a->host, sizeof a->host, &a->port, "[::1]:9400", err) != 0)
                return -1;
            break;
        case OPT_NO_HOSTNAME: a->no_hostname = true; break;
        case OPT_DRA: a->dra = true; break;
        case OPT_DRA_KEEP: a->dra_keep = true; break;
        case OPT_DRA_WITH_DP: a->dra_with_dp = true; break;
        case OPT_DRA_DRIVER:
        case OPT_DRA_REGISTRY:
        case OPT_DRA_PLUGIN_DIR:
        case OPT_CDI_DIR: {
            static const char *const what[] = {"--dra-driver", "--plugins-registry-dir", "--dra-plugin-dir", "--cdi-dir"};
            int k = id - OPT_DRA_DRIVER;
            if (!value[0] || (k == 0 && !dns_subdomain(value)))
                return gs_fail(err, GS_ERR_USAGE, "%s: expected %s, got \"%s\"", what[k],
                               k == 0 ? "a DNS subdomain (\"gpu.nvidia.com\")" : "a directory", value);
            const char **dst[] = {&a->dra_driver, &a->dra_registry, &a->dra_plugin_dir, &a->cdi_dir};
            *dst[k] = value;
            break;
        }
        case OPT_OUTPUT:
            if (strcmp(value, "json") == 0)
                a->json = true;
            else if (strcmp(value, "text") != 0)
                return gs_fail(err, GS_ERR_USAGE, "--output: expected text or json, got \"%s\"", value);
            break;
        default: return gs_fail(err, GS_ERR_INTERNAL, "unhandled option %d", id);
        }
    }
    if (!a->node[0]) {
        const char *env = getenv("NODE_NAME");
        if (env && env[0] && strlen(env) < sizeof a->node)
            snprintf(a->node, sizeof a->node, "%s", env);
        else if (gethostname(a->node, sizeof a->node) != 0 || !a->node[0])
            snprintf(a->node, sizeof a->node, "localhost");
        a->node[sizeof a->node - 1] = '\0';
    }
    if (!a->labels_ns) {
        const char *env = getenv("POD_NAMESPACE");
        a->labels_ns = env && env[0] ? env : "gpusched-system";
    }
    return 0;
}

/* ---------------------------------------------------------------- configuration */
static int load_plugin_config(const agent_args *a, gs_devplugin_config *cfg, gs_error *err)
{
    gs_devplugin_config_defaults(cfg);
    if (a->config) {
        size_t len = 0;
        char *data = gs_read_file(a->config, 1 << 20, &len, err);
        if (!data)
            return -1;
        int rc = gs_devplugin_config_parse(a->config, data, len, cfg, err);
        free(data);
        if (rc != 0)
            return -1;
        for (size_t i = 0; i < cfg->n_warnings; i++)
            cli_eprintf("gpusched agent: %s: %s\n", a->config, cfg->warnings[i]);
    }
    if (a->mig >= 0)
        cfg->mig_strategy = (gs_mig_strategy)a->mig;
    return 0;
}

/* ---------------------------------------------------------------- discover */
static void json_kv(gs_strbuf *sb, const char *k, const char *v, bool comma)
{
    gs_strbuf_json_str(sb, k);
    gs_strbuf_puts(sb, ":");
    gs_strbuf_json_str(sb, v ? v : "");
    if (comma)
        gs_strbuf_puts(sb, ",");
}

static int cmd_discover(const agent_args *a)
{
    gs_error err;
    gs_error_clear(&err);
    gs_devplugin_config cfg;
    if (load_plugin_config(a, &cfg, &err) != 0)
        return cli_report_error(&err);
    gs_nvml *nvml = NULL;
    gs_nvml_inventory inv;
    memset(&inv, 0, sizeof inv);
    gs_devplugin_plan plan;
    memset(&plan, 0, sizeof plan);
    gs_gfd_labels labels;
    gs_gfd_labels_init(&labels);
    gs_strbuf sb = {0};
    int status = CLI_EXIT_OK;
    if (gs_nvml_open(a->nvml, &nvml, &err) != 0 || gs_nvml_discover(nvml, &inv, &err) != 0 ||
        gs_devplugin_plan_build(&inv, &cfg, &plan, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    gs_gfd_config g;
    gs_agent_gfd_config(&cfg, NULL, &g);
    if (gs_gfd_labels_compute(&inv, &g, &labels, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    if (a->json) {
        gs_strbuf_puts(&sb, "{");
        json_kv(&sb, "driverVersion", inv.driver_version, true);
        gs_strbuf_printf(&sb, "\"cudaDriverVersion\":%d,\"gpus\":[", inv.cuda_driver_version);
        for (size_t i = 0; i < inv.n_gpus; i++) {
            const gs_nvml_gpu *gp = &inv.gpus[i];
            gs_strbuf_printf(&sb, "%s{\"index\":%u,", i ? "," : "", gp->index);
            json_kv(&sb, "uuid", gp->uuid, true);
            json_kv(&sb, "name", gp->name, true);
            json_kv(&sb, "pciBusId", gp->pci_bus_id, true);
            gs_strbuf_printf(&sb, "\"memoryMiB\":%llu,\"minor\":%d,\"numaNode\":%d,\"computeCapability\":\"%d.%d\","
                             "\"migMode\":%u,\"lost\":%s,",
                             gp->memory_mib, gp->minor, gp->numa_node, gp->cc_major, gp->cc_minor, gp->mig_current,
                             gp->lost ? "true" : "false");
            json_kv(&sb, "lostReason", gp->lost_reason, true);
            gs_strbuf_puts(&sb, "\"nvlinkPeers\":[");
            for (size_t k = 0; k < gp->n_nvlink; k++) {
                if (k)
                    gs_strbuf_puts(&sb, ",");
                gs_strbuf_json_str(&sb, gp->nvlink_peer[k]);
            }
            gs_strbuf_puts(&sb, "],\"migDevices\":[");
            for (size_t m = 0; m < gp->n_mig; m++) {
                const gs_nvml_mig_device *md = &gp->mig[m];
                gs_strbuf_printf(&sb, "%s{\"index\":%u,", m ? "," : "", md->index);
                json_kv(&sb, "uuid", md->uuid, true);
                json_kv(&sb, "profile", md->profile, true);
                gs_strbuf_printf(&sb, "\"gpuInstanceId\":%u,\"computeInstanceId\":%u,\"memoryMiB\":%llu}",
                                 md->gpu_instance_id, md->compute_instance_id, md->memory_mib);
            }
            gs_strbuf_puts(&sb, "]}");
        }
        gs_strbuf_puts(&sb, "],\"resources\":[");
        for (size_t r = 0; r < plan.n_resources; r++) {
            const gs_devplugin_resource *res = &plan.resources[r];
            gs_strbuf_puts(&sb, r ? ",{" : "{");
            json_kv(&sb, "name", res->name, true);
            json_kv(&sb, "socket", res->socket, true);
            gs_strbuf_puts(&sb, "\"devices\":[");
            for (size_t d = 0; d < res->n_devices; d++) {
                if (d)
                    gs_strbuf_puts(&sb, ",");
                gs_strbuf_json_str(&sb, res->devices[d].id);
            }
            gs_strbuf_puts(&sb, "]}");
        }
        gs_strbuf_puts(&sb, "],\"notes\":[");
        for (size_t i = 0; i < plan.n_notes; i++) {
            if (i)
                gs_strbuf_puts(&sb, ",");
            gs_strbuf_json_str(&sb, plan.notes[i]);
        }
        gs_strbuf_puts(&sb, "],\"labels\":{");
        for (size_t i = 0; i < labels.n; i++)
            json_kv(&sb, labels.v[i].key, labels.v[i].value, i + 1 < labels.n);
        gs_strbuf_puts(&sb, "}}\n");
    } else {
        gs_strbuf_printf(&sb, "DRIVER %s  CUDA %d.%d  GPUS %zu\n\n", inv.driver_version[0] ? inv.driver_version : "-",
                         inv.cuda_major, inv.cuda_minor, inv.n_gpus);
        gs_strbuf_printf(&sb, "%-5s %-40s %-24s %-17s %9s %4s %4s %s\n", "GPU", "UUID", "MODEL", "PCI", "MEMORY",
                         "NUMA", "MIG", "NVLINKS");
        for (size_t i = 0; i < inv.n_gpus; i++) {
            const gs_nvml_gpu *gp = &inv.gpus[i];
            if (gp->lost) {
                gs_strbuf_textf(&sb, "%-5u LOST: %s\n", gp->index, gp->lost_reason);
                continue;
            }
            char mem[32], numa[16];
            snprintf(mem, sizeof mem, "%lluMiB", gp->memory_mib);
            snprintf(numa, sizeof numa, "%d", gp->numa_node);
            gs_strbuf_textf(&sb, "%-5u %-40s %-24.24s %-17s %9s %4s %4s %zu\n", gp->index, gp->uuid, gp->name,
                            gp->pci_bus_id, mem, gp->numa_node >= 0 ? numa : "-", gp->mig_current ? "on" : "off",
                            gp->n_nvlink);
            for (size_t m = 0; m < gp->n_mig; m++)
                gs_strbuf_textf(&sb, "  %u:%-3u %-40s %-12s gi=%u ci=%u %lluMiB\n", gp->index, gp->mig[m].index,
                                 gp->mig[m].uuid, gp->mig[m].profile[0] ? gp->mig[m].profile : "-",
                                 gp->mig[m].gpu_instance_id, gp->mig[m].compute_instance_id, gp->mig[m].memory_mib);
        }
        gs_strbuf_puts(&sb, "\nRESOURCE                          DEVICES  SOCKET\n");
        for (size_t r = 0; r < plan.n_resources; r++)
            gs_strbuf_printf(&sb, "%-33s %7zu  %s\n", plan.resources[r].name, plan.resources[r].n_devices,
                             plan.resources[r].socket);
        for (size_t i = 0; i < plan.n_notes; i++)
            gs_strbuf_printf(&sb, "note: %s\n", plan.notes[i]);
        gs_strbuf_puts(&sb, "\nLABELS\n");
        for (size_t i = 0; i < labels.n; i++)
            gs_strbuf_textf(&sb, "%s=%s\n", labels.v[i].key, labels.v[i].value);
    }
    fwrite(sb.buf, 1, sb.len, stdout);
out:
    gs_strbuf_free(&sb);
    gs_gfd_labels_free(&labels);
    gs_devplugin_plan_free(&plan);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(nvml);
    return status;
}

/* ---------------------------------------------------------------- check */
static int cmd_check(const agent_args *a)
{
    gs_error err;
    gs_error_clear(&err);
    gs_agent_check_opts o;
    memset(&o, 0, sizeof o);
    if (load_plugin_config(a, &o.plugin, &err) != 0)
        return cli_report_error(&err);
    o.nvml_library = a->nvml;
    o.plugin_dir = a->dir;
    o.podresources_socket = a->podres;
    o.timeout_ms = (long)a->timeout_s * 1000;
    gs_agent_check_report r;
    if (gs_agent_check(&o, &r, &err) != 0)
        return cli_report_error(&err);
    gs_strbuf sb = {0};
    if (a->json) {
        gs_strbuf_puts(&sb, "{");
        json_kv(&sb, "node", a->node, true);
        gs_strbuf_printf(&sb, "\"passed\":%s,\"failed\":%zu,\"checks\":[", r.failed ? "false" : "true", r.failed);
        for (size_t i = 0; i < r.n; i++) {
            gs_strbuf_puts(&sb, i ? ",{" : "{");
            json_kv(&sb, "check", r.items[i].check, true);
            json_kv(&sb, "resource", r.items[i].resource, true);
            gs_strbuf_printf(&sb, "\"ok\":%s,", r.items[i].ok ? "true" : "false");
            json_kv(&sb, "message", r.items[i].message, false);
            gs_strbuf_puts(&sb, "}");
        }
        gs_strbuf_puts(&sb, "]}\n");
    } else {
        for (size_t i = 0; i < r.n; i++)
            gs_strbuf_textf(&sb, "%-4s  %-10s %s%s%s\n", r.items[i].ok ? "ok" : "FAIL", r.items[i].check,
                                  r.items[i].resource, r.items[i].resource[0] ? ": " : "", r.items[i].message);
        gs_strbuf_printf(&sb, "gpusched agent check: node %s: %s (%zu check(s), %zu failed)\n", a->node,
                         r.failed ? "NOT ready to promote" : "ready", r.n, r.failed);
    }
    fwrite(sb.buf, 1, sb.len, stdout);
    gs_strbuf_free(&sb);
    int status = r.failed ? CLI_EXIT_FOUND : CLI_EXIT_OK;
    gs_agent_check_report_free(&r);
    return status;
}

/* ---------------------------------------------------------------- run */
#define MAX_PENDING_EVENTS 64

typedef struct pending_event {
    char uuid[GS_NVML_STR_MAX];
    bool healthy;
    char reason[GS_HEALTH_REASON_MAX];
} pending_event;

#define MAX_PENDING_EVICTIONS 64

typedef struct pending_eviction {
    char ns[254], pod[254], uid[64], container[64], resource[64];
} pending_eviction;

typedef struct run_ctx {
    agent_args *a;
    gs_agent *agent;
    gs_live_config *cfg;
    gs_live_client *client;
    gs_live_recorder *rec;
    pthread_mutex_t mu;
    pending_event ev[MAX_PENDING_EVENTS];
    size_t nev;
    uint64_t ev_dropped;
    pending_eviction evict[MAX_PENDING_EVICTIONS];
    size_t nevict;
    atomic_uint_fast64_t evictions_ok, evictions_failed;
    atomic_uint_fast64_t label_applies, label_failures;
    gs_drv *drv;                 /* --dra */
    gs_live_client *claims;      /* the DRAPlugin thread's client */
} run_ctx;

static void agent_log(void *user, gs_agent_log_level lvl, const char *line)
{
    (void)user;
    cli_eprintf("gpusched agent: %s%s\n", lvl == GS_AGENT_ERROR ? "error: " : lvl == GS_AGENT_WARN ? "warning: " : "",
                line);
}

static void agent_health(void *user, const char *uuid, bool healthy, const char *reason)
{
    run_ctx *R = user;
    pthread_mutex_lock(&R->mu);
    if (R->drv)
        gs_drv_set_health(R->drv, uuid, healthy);
    if (R->nev < MAX_PENDING_EVENTS) {
        pending_event *e = &R->ev[R->nev++];
        snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
        e->healthy = healthy;
        snprintf(e->reason, sizeof e->reason, "%s", reason);
    } else {
        R->ev_dropped++;
    }
    pthread_mutex_unlock(&R->mu);
}

/* NRI: a container runs without its devices: its pod is evicted from the main loop. */
static void agent_uninjected(void *user, const char *ns, const char *pod, const char *uid, const char *container,
                             const char *resource)
{
    run_ctx *R = user;
    pthread_mutex_lock(&R->mu);
    if (R->nevict < MAX_PENDING_EVICTIONS) {
        pending_eviction *e = &R->evict[R->nevict++];
        snprintf(e->ns, sizeof e->ns, "%s", ns ? ns : "");
        snprintf(e->pod, sizeof e->pod, "%s", pod ? pod : "");
        snprintf(e->uid, sizeof e->uid, "%s", uid ? uid : "");
        snprintf(e->container, sizeof e->container, "%s", container ? container : "");
        snprintf(e->resource, sizeof e->resource, "%s", resource ? resource : "");
    }
    pthread_mutex_unlock(&R->mu);
}

static void send_evictions(run_ctx *R)
{
    pending_eviction ev[MAX_PENDING_EVICTIONS];
    pthread_mutex_lock(&R->mu);
    size_t n = R->nevict;
    memcpy(ev, R->evict, n * sizeof *ev);
    R->nevict = 0;
    pthread_mutex_unlock(&R->mu);
    for (size_t i = 0; i < n; i++) {
        if (!R->client) {
            cli_eprintf("gpusched agent: warning: pod %s/%s runs container %s without its %s devices; no cluster "
                        "credentials to evict it: delete the pod\n", ev[i].ns, ev[i].pod, ev[i].container,
                        ev[i].resource);
            continue;
        }
        gs_live_write_opts wo;
        memset(&wo, 0, sizeof wo);
        gs_live_response rs;
        memset(&rs, 0, sizeof rs);
        gs_error err;
        gs_error_clear(&err);
        if (gs_live_evict(R->client, ev[i].ns, ev[i].pod, ev[i].uid, &wo, &rs, &err) == 0) {
            atomic_fetch_add(&R->evictions_ok, 1);
            cli_eprintf("gpusched agent: evicted pod %s/%s: container %s ran without its %s devices (created while "
                        "the NRI plugin was away); its controller creates it again through the plugin\n",
                        ev[i].ns, ev[i].pod, ev[i].container, ev[i].resource);
        } else {
            atomic_fetch_add(&R->evictions_failed, 1);
            cli_eprintf("gpusched agent: warning: pod %s/%s (container %s without its devices) not evicted: %s\n",
                        ev[i].ns, ev[i].pod, ev[i].container, err.msg);
        }
        gs_live_response_free(&rs);
    }
}

static void send_events(run_ctx *R)
{
    pending_event ev[MAX_PENDING_EVENTS];
    pthread_mutex_lock(&R->mu);
    size_t n = R->nev;
    memcpy(ev, R->ev, n * sizeof *ev);
    R->nev = 0;
    pthread_mutex_unlock(&R->mu);
    if (!R->rec)
        return;
    gs_live_objref node = {.api_version = "v1", .kind = "Node", .name = R->a->node};
    for (size_t i = 0; i < n; i++) {
        char note[GS_LIVE_NOTE_MAX];
        snprintf(note, sizeof note, "GPU %s %s: %s", ev[i].uuid, ev[i].healthy ? "is healthy again" : "is unhealthy",
                 ev[i].reason);
        gs_live_event e = {.regarding = &node,
                           .type = ev[i].healthy ? GS_LIVE_EVENT_NORMAL : GS_LIVE_EVENT_WARNING,
                           .reason = ev[i].healthy ? "GPUHealthy" : "GPUUnhealthy",
                           .action = "HealthCheck",
                           .note = note};
        gs_error err;
        gs_error_clear(&err);
        if (gs_live_recorder_event(R->rec, &e, &err) != 0)
            cli_eprintf("gpusched agent: warning: Event for %s not recorded: %s\n", ev[i].uuid, err.msg);
    }
    gs_error err;
    gs_error_clear(&err);
    gs_live_recorder_tick(R->rec, &err);
}

/* Publish the labels (--labels); 0 or -1 with err. */
static int publish_labels(run_ctx *R, gs_error *err)
{
    const gs_gfd_labels *l = gs_agent_labels(R->agent);
    agent_args *a = R->a;
    if (a->labels == LABELS_FILE)
        return gs_gfd_write_file(a->labels_file, l, err);
    gs_strbuf body = {0}, path = {0};
    int rc;
    if (a->labels == LABELS_APPLY) {
        gs_gfd_node_apply_json(l, a->node, &body);
        rc = gs_live_path(&path, "", "v1", "nodes", NULL, a->node, NULL, err);
    } else {
        char name[320];
        snprintf(name, sizeof name, "%s%s", GS_GFD_NODEFEATURE_PREFIX, a->node);
        gs_gfd_nodefeature_json(l, a->node, a->labels_ns, &body);
        rc = gs_live_path(&path, "nfd.k8s-sigs.io", "v1alpha1", "nodefeatures", a->labels_ns, name, NULL, err);
    }
    if (rc == 0) {
        gs_live_write_opts wo;
        memset(&wo, 0, sizeof wo);
        wo.field_manager = GS_GFD_FIELD_MANAGER;
        wo.force = true;
        gs_live_response rs;
        memset(&rs, 0, sizeof rs);
        rc = gs_live_apply(R->client, gs_strbuf_cstr(&path), body.buf, body.len, &wo, &rs, err);
        gs_live_response_free(&rs);
    }
    gs_strbuf_free(&body);
    gs_strbuf_free(&path);
    return rc;
}

/* DRA: ResourceClaim ns/name (the DRAPlugin thread, its own client) */
static int dra_get_claim(void *ctx, const char *ns, const char *name, gs_strbuf *body, gs_error *err)
{
    run_ctx *R = ctx;
    gs_strbuf path = {0};
    int rc = gs_live_path(&path, "resource.k8s.io", "v1", "resourceclaims", ns, name, NULL, err);
    if (rc == 0) {
        gs_live_request rq = {.method = "GET", .path = gs_strbuf_cstr(&path)};
        gs_live_response rs;
        memset(&rs, 0, sizeof rs);
        rc = gs_live_do(R->claims, &rq, &rs, err);
        if (rc == 0)
            gs_strbuf_add(body, rs.body.buf ? rs.body.buf : "", rs.body.len);
        gs_live_response_free(&rs);
    }
    gs_strbuf_free(&path);
    return rc;
}

static void dra_log(void *user, int warn, const char *line)
{
    (void)user;
    cli_eprintf("gpusched agent: %s%s\n", warn ? "warning: " : "", line);
}

static int h_route(void *user, const char *url)
{
    (void)user;
    (void)url;
    return -1; /* no POST endpoint */
}

static unsigned h_handle(void *user, int route, const char *body, size_t len, gs_strbuf *out, const char **ctype)
{
    (void)user;
    (void)route;
    (void)body;
    (void)len;
    (void)ctype;
    gs_serve_status_body(404, "not found", out);
    return 404;
}

static bool h_ready(void *user, gs_strbuf *why)
{
    run_ctx *R = user;
    bool ok = gs_agent_ready(R->agent, why);
    if (R->drv && !gs_drv_registered(R->drv, why))
        ok = false;
    return ok;
}

static void h_metrics(void *user, gs_strbuf *sb)
{
    run_ctx *R = user;
    gs_agent_metrics(R->agent, sb);
    if (R->drv)
        gs_drv_metrics(R->drv, sb);
    gs_strbuf_printf(sb,
                     "# HELP gpusched_agent_label_applies_total Publications of the node's labels, by result.\n"
                     "# TYPE gpusched_agent_label_applies_total counter\n"
                     "gpusched_agent_label_applies_total{result=\"ok\"} %llu\n"
                     "gpusched_agent_label_applies_total{result=\"error\"} %llu\n"
                     "# HELP gpusched_agent_evictions_total Pods evicted because a container ran without its "
                     "devices (NRI), by result.\n"
                     "# TYPE gpusched_agent_evictions_total counter\n"
                     "gpusched_agent_evictions_total{result=\"ok\"} %llu\n"
                     "gpusched_agent_evictions_total{result=\"error\"} %llu\n",
                     (unsigned long long)atomic_load(&R->label_applies),
                     (unsigned long long)atomic_load(&R->label_failures),
                     (unsigned long long)atomic_load(&R->evictions_ok),
                     (unsigned long long)atomic_load(&R->evictions_failed));
}

static void server_log(void *user, const char *line)
{
    (void)user;
    cli_eprintf("gpusched agent: %s\n", line);
}

static int cmd_run(agent_args *a)
{
    gs_error err;
    gs_error_clear(&err);
    int status = CLI_EXIT_OK;
    sigset_t set;
    cli_daemon_signals(&set, true); /* before any thread: all inherit the mask */

    run_ctx *R = calloc(1, sizeof *R);
    if (!R) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        return cli_report_error(&err);
    }
    R->a = a;
    pthread_mutex_init(&R->mu, NULL);
    gs_agent_opts o;
    gs_agent_opts_init(&o);
    gs_server *srv = NULL;
    gs_metrics *srv_metrics = NULL;
    if (load_plugin_config(a, &o.plugin, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    const char *dis = a->disable_hc ? a->disable_hc : getenv("DP_DISABLE_HEALTHCHECKS");
    const char *en = a->enable_hc ? a->enable_hc : getenv("DP_ENABLE_HEALTHCHECKS");
    if (gs_health_policy_dp(&o.health, dis, en, &err) != 0) {
        err.code = GS_ERR_USAGE;
        status = cli_usage_error("agent", &err);
        goto out;
    }
    o.health.probe_interval_ms = a->probe_s * 1000;
    o.health.quiet_ms = a->recover_s * 1000;
    o.node = a->node;
    o.nvml_library = a->nvml;
    o.plugin_dir = a->dir;
    o.podresources_socket = a->podres;
    o.sample_interval_ms = a->sample_ms;
    o.no_register = a->no_register || (a->dra && !a->dra_with_dp);
    o.nri_socket = a->nri;
    o.mps_pipe_dir = a->mps;
    o.on_uninjected = agent_uninjected;
    o.exporter.host_label = a->no_hostname ? GS_EXPORTER_HOST_NONE : GS_EXPORTER_HOST_LOWER;
    o.log = agent_log;
    o.on_health = agent_health;
    o.user = R;

    /* the cluster: needed for --labels apply/nodefeature; Events when reachable */
    bool need_cluster = a->labels == LABELS_APPLY || a->labels == LABELS_NODEFEATURE || a->dra;
    gs_error cerr;
    gs_error_clear(&cerr);
    R->cfg = cli_live_config_load(&a->live, &cerr);
    if (R->cfg) {
        long to = cli_live_timeout_ms(&a->live, 10000);
        R->client = cli_live_client(R->cfg, "agent", to, 3, to, &cerr);
        if (R->client) {
            gs_live_recorder_opts ro;
            memset(&ro, 0, sizeof ro);
            char instance[320];
            snprintf(instance, sizeof instance, "gpusched-agent-%s", a->node);
            ro.reporting_controller = "gpusched.io/agent";
            ro.reporting_instance = instance;
            R->rec = gs_live_recorder_new(R->client, &ro, &cerr);
        }
        if (R->client && a->dra && !(R->claims = cli_live_client(R->cfg, "agent", to, 3, to, &cerr))) {
            gs_live_client_free(R->client);
            R->client = NULL;
        }
    }
    if (need_cluster && !R->client) {
        status = cli_report_error(&cerr);
        goto out;
    }
    if (!R->client)
        cli_eprintf("gpusched agent: no cluster credentials (%s): no health Events\n", cerr.msg);

    if (gs_agent_start(&o, &R->agent, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    if (a->dra) {
        gs_drv_opts dopt = {.driver = a->dra_driver,
                            .node = a->node,
                            .registry_dir = a->dra_registry,
                            .plugin_dir = a->dra_plugin_dir,
                            .cdi_dir = a->cdi_dir,
                            .inv = gs_agent_inventory(R->agent),
                            .get_claim = dra_get_claim,
                            .claim_ctx = R,
                            .log = dra_log,
                            .user = R};
        gs_drv *drv = NULL;
        if (gs_drv_start(&dopt, &drv, &err) != 0) {
            status = cli_report_error(&err);
            goto stop;
        }
        pthread_mutex_lock(&R->mu);
        R->drv = drv;
        pthread_mutex_unlock(&R->mu);
    }
    if (!(srv_metrics = gs_metrics_new())) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto stop;
    }
    static gs_serve_handler h;
    h.route = h_route;
    h.handle = h_handle;
    h.ready = h_ready;
    h.metrics = h_metrics;
    h.metrics_prefix = "gpusched_agent_";
    h.what = "a request";
    h.user = R;
    gs_serve_opts so;
    memset(&so, 0, sizeof so);
    so.host = a->host;
    so.port = a->port;
    so.threads = 2;
    so.max_body = 4096;
    so.handler = &h;
    so.metrics = srv_metrics;
    so.log = server_log;
    if (!(srv = gs_server_start(&so, &err))) {
        status = cli_report_error(&err);
        goto stop;
    }
    bool v6 = strchr(a->host, ':') != NULL;
    const gs_nvml_inventory *inv = gs_agent_inventory(R->agent);
    cli_eprintf("gpusched agent: node %s: %zu GPU(s), driver %s; serving metrics on http://%s%s%s:%u/metrics\n",
                a->node, inv->n_gpus, inv->driver_version[0] ? inv->driver_version : "-", v6 ? "[" : "", a->host,
                v6 ? "]" : "", (unsigned)gs_server_port(srv));

    int sig = 0;
    int64_t next_labels = 0, next_slice = 0;
    bool labels_failing = false, slice_failing = false;
    for (;;) {
        struct timespec mono;
        clock_gettime(CLOCK_MONOTONIC, &mono);
        int64_t t = (int64_t)mono.tv_sec;
        if (R->drv) {
            /* the slice: at once when a device's health changed, else again every 60 s (the
             * kubelet deletes a driver's slices when the driver is away for a while) */
            gs_error serr;
            gs_error_clear(&serr);
            int rc = gs_drv_publish(R->drv, R->client, t >= next_slice, &serr);
            if (rc > 0) {
                if (slice_failing || next_slice == 0)
                    cli_eprintf("gpusched agent: ResourceSlice published (generation %lld)\n",
                                (long long)gs_drv_generation(R->drv));
                slice_failing = false;
                next_slice = t + 60;
            } else if (rc < 0) {
                if (!slice_failing)
                    cli_eprintf("gpusched agent: warning: ResourceSlice not published: %s; retrying every 5s\n",
                                serr.msg);
                slice_failing = true;
                next_slice = t + 5;
            }
        }
        if (a->labels != LABELS_NONE && t >= next_labels) {
            gs_error lerr;
            gs_error_clear(&lerr);
            if (publish_labels(R, &lerr) == 0) {
                atomic_fetch_add(&R->label_applies, 1);
                if (labels_failing || next_labels == 0)
                    cli_eprintf("gpusched agent: labels published (%zu)\n", gs_agent_labels(R->agent)->n);
                labels_failing = false;
                next_labels = t + a->labels_interval_s;
            } else {
                atomic_fetch_add(&R->label_failures, 1);
                if (!labels_failing)
                    cli_eprintf("gpusched agent: warning: labels not published: %s; retrying every 10s\n", lerr.msg);
                labels_failing = true;
                next_labels = t + 10;
            }
        }
        send_events(R);
        send_evictions(R);
        siginfo_t si;
        struct timespec tick = {1, 0};
        int s = sigtimedwait(&set, &si, &tick);
        if (s == SIGTERM || s == SIGINT) {
            sig = s;
            break;
        }
        if (s == SIGHUP) {
            next_labels = 0; /* publish again now */
            continue;
        }
        if (s < 0 && errno != EINTR && errno != EAGAIN) {
            cli_eprintf("gpusched agent: sigtimedwait: %s; stopping\n", strerror(errno));
            sig = SIGINT;
            break;
        }
    }
    cli_eprintf("gpusched agent: %s: stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
stop:
    if (srv)
        gs_server_stop(srv);
    if (R->drv) {
        pthread_mutex_lock(&R->mu);
        gs_drv *drv = R->drv;
        R->drv = NULL;
        pthread_mutex_unlock(&R->mu);
        if (!a->dra_keep) {
            gs_error uerr;
            gs_error_clear(&uerr);
            if (gs_drv_unpublish(drv, R->client, &uerr) != 0)
                cli_eprintf("gpusched agent: warning: ResourceSlice not deleted: %s\n", uerr.msg);
            else
                cli_eprintf("gpusched agent: ResourceSlice deleted\n");
        }
        gs_drv_stop(drv);
    }
    gs_agent_stop(R->agent);
    send_events(R);
    if (R->rec) {
        gs_error ferr;
        gs_error_clear(&ferr);
        gs_live_recorder_flush(R->rec, &ferr);
    }
out:
    gs_metrics_free(srv_metrics);
    gs_live_recorder_free(R->rec);
    gs_live_client_free(R->client);
    gs_live_client_free(R->claims);
    gs_live_config_free(R->cfg);
    pthread_mutex_destroy(&R->mu);
    free(R);
    return status;
}

int gs_cmd_agent(int argc, char **argv)
{
    agent_args a;
    memset(&a, 0, sizeof a);
    bool help = false;
    gs_error err;
    gs_error_clear(&err);
    if (parse_args(argc, argv, &a, &help, &err) != 0)
        return cli_usage_error("agent", &err);
    if (help)
        return cli_print_usage(cli_agent_usage);
    switch (a.mode) {
    case MODE_CHECK: return cmd_check(&a);
    case MODE_DISCOVER: return cmd_discover(&a);
    default: return cmd_run(&a);
    }
}
