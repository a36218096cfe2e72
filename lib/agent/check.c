/*
 * check.c - `gpusched agent check` (agent.h, "agent check"): NVML's devices and the plan
 * against what the plugin sockets serve and what the kubelet knows.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "podresources/v1/api.pb-c.h"

#include "gpusched/agent.h"
#include "gpusched/grpc.h"

static int add(gs_agent_check_report *r, const char *check, const char *res, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int add(gs_agent_check_report *r, const char *check, const char *res, bool ok, const char *fmt, ...)
{
    gs_agent_check_item *ni = realloc(r->items, (r->n + 1) * sizeof *ni);
    if (!ni)
        return -1;
    r->items = ni;
    gs_agent_check_item *it = &ni[r->n++];
    memset(it, 0, sizeof *it);
    snprintf(it->check, sizeof it->check, "%s", check);
    snprintf(it->resource, sizeof it->resource, "%s", res ? res : "");
    it->ok = ok;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->message, sizeof it->message, fmt, ap);
    va_end(ap);
    if (!ok)
        r->failed++;
    return 0;
}

void gs_agent_check_report_free(gs_agent_check_report *r)
{
    if (!r)
        return;
    free(r->items);
    memset(r, 0, sizeof *r);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Compare the planned IDs of res with got[0..n): a text naming up to 3 missing and 3 extra
 * IDs into msg; true when equal as sets. */
static bool same_ids(const gs_devplugin_resource *res, char **got, size_t n, char *msg, size_t cap)
{
    const char **want = calloc(res->n_devices ? res->n_devices : 1, sizeof *want);
    char **have = calloc(n ? n : 1, sizeof *have);
    if (!want || !have) {
        free(want);
        free(have);
        snprintf(msg, cap, "out of memory");
        return false;
    }
    for (size_t i = 0; i < res->n_devices; i++)
        want[i] = res->devices[i].id;
    memcpy(have, got, n * sizeof *have);
    qsort(want, res->n_devices, sizeof *want, cmp_str);
    qsort(have, n, sizeof *have, cmp_str);
    size_t i = 0, j = 0, nmiss = 0, nextra = 0;
    char miss[256] = "", extra[256] = "";
    while (i < res->n_devices || j < n) {
        int c = i >= res->n_devices ? 1 : j >= n ? -1 : strcmp(want[i], have[j]);
        if (c == 0) {
            i++;
            j++;
        } else if (c < 0) {
            if (nmiss++ < 3)
                snprintf(miss + strlen(miss), sizeof miss - strlen(miss), "%s%s", nmiss > 1 ? ", " : "", want[i]);
            i++;
        } else {
            if (nextra++ < 3)
                snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "%s%s", nextra > 1 ? ", " : "",
                         have[j]);
            j++;
        }
    }
    free(want);
    free(have);
    if (!nmiss && !nextra)
        return true;
    snprintf(msg, cap, "%zu device(s) NVML shows are not advertised%s%s%s; %zu advertised device(s) NVML does not show%s%s%s",
             nmiss, nmiss ? " (" : "", miss, nmiss > 3 ? ", ...)" : nmiss ? ")" : "", nextra, nextra ? " (" : "",
             extra, nextra > 3 ? ", ...)" : nextra ? ")" : "");
    return false;
}

static void check_resource(const gs_agent_check_opts *o, const char *dir, const gs_devplugin_resource *res,
                           V1__AllocatableResourcesResponse *alloc, bool alloc_ok, size_t lost,
                           gs_agent_check_report *r)
{
    const char *lost_hint = lost ? " (a lost GPU is not visible to NVML: see the nvml check)" : "";
    long to = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, res->socket);
    struct stat st;
    gs_strbuf reply = {0}, smsg = {0};
    gs_error err;
    gs_error_clear(&err);
    int status = -1;
    if (stat(path, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        add(r, "serving", res->name, false, "no plugin socket %s: the agent is not running on this node, or the kubelet "
            "removed its socket and it did not serve it again", path);
        goto registered;
    }
    uint8_t empty[1];
    if (gs_grpc_unary(path, "/v1beta1.DevicePlugin/GetDevicePluginOptions", empty, 0, to, &reply, &status, &smsg,
                      &err) != 0 || status != 0) {
        add(r, "serving", res->name, false, "%s does not answer GetDevicePluginOptions: %s", path,
            status > 0 ? gs_strbuf_cstr(&smsg) : err.msg);
        goto registered;
    }
    add(r, "serving", res->name, true, "the plugin answers on %s", path);
    gs_strbuf_reset(&reply);
    gs_error_clear(&err);
    if (gs_grpc_stream_first(path, "/v1beta1.DevicePlugin/ListAndWatch", empty, 0, to, &reply, &err) != 0) {
        add(r, "devices", res->name, false, "ListAndWatch gave no device list: %s", err.msg);
        goto registered;
    }
    V1beta1__ListAndWatchResponse *law =
        v1beta1__list_and_watch_response__unpack(NULL, reply.len, (const uint8_t *)reply.buf);
    if (!law) {
        add(r, "devices", res->name, false, "ListAndWatch sent a malformed device list");
        goto registered;
    }
    char **ids = calloc(law->n_devices ? law->n_devices : 1, sizeof *ids);
    char msg[512];
    size_t bad = 0;
    char bads[256] = "";
    for (size_t i = 0; ids && i < law->n_devices; i++) {
        ids[i] = law->devices[i]->id;
        if (strcmp(law->devices[i]->health, "Healthy") != 0 && bad++ < 3)
            snprintf(bads + strlen(bads), sizeof bads - strlen(bads), "%s%s", bad > 1 ? ", " : "", ids[i]);
    }
    if (ids && same_ids(res, ids, law->n_devices, msg, sizeof msg))
        add(r, "devices", res->name, true, "advertises the %zu device(s) NVML shows", law->n_devices);
    else
        add(r, "devices", res->name, false, "advertised devices differ from NVML's: %s%s", ids ? msg : "out of memory",
            lost_hint);
    if (bad)
        add(r, "healthy", res->name, false, "%zu of %zu device(s) Unhealthy (%s%s): see the agent's log, its Events "
            "on the node and gpusched_agent_devices", bad, law->n_devices, bads, bad > 3 ? ", ..." : "");
    else
        add(r, "healthy", res->name, true, "all %zu device(s) Healthy", law->n_devices);
    free(ids);
    v1beta1__list_and_watch_response__free_unpacked(law, NULL);
registered:
    gs_strbuf_free(&reply);
    gs_strbuf_free(&smsg);
    if (!o->podresources_socket || o->podresources_socket[0]) {
        if (!alloc_ok)
            return; /* reported once by the caller */
        const V1__ContainerDevices *cd = NULL;
        for (size_t i = 0; i < alloc->n_devices && !cd; i++)
            if (strcmp(alloc->devices[i]->resource_name, res->name) == 0)
                cd = alloc->devices[i];
        if (!cd) {
            add(r, "registered", res->name, false, "the kubelet does not know %s: the plugin is not registered (the "
                "node advertises 0 of it once the kubelet's 5-minute grace ends)", res->name);
            return;
        }
        char m2[512];
        if (same_ids(res, cd->device_ids, cd->n_device_ids, m2, sizeof m2))
            add(r, "registered", res->name, true, "registered with the kubelet, which knows its %zu device(s)",
                cd->n_device_ids);
        else
            add(r, "registered", res->name, false, "the kubelet's devices differ from NVML's: %s%s", m2, lost_hint);
    }
}

int gs_agent_check(const gs_agent_check_opts *o, gs_agent_check_report *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    const char *dir = o->plugin_dir ? o->plugin_dir : GS_AGENT_PLUGIN_DIR;
    const char *podres = o->podresources_socket ? o->podresources_socket : GS_AGENT_PODRESOURCES_SOCKET;
    gs_nvml *nvml = NULL;
    gs_nvml_inventory inv;
    memset(&inv, 0, sizeof inv);
    gs_devplugin_plan plan;
    memset(&plan, 0, sizeof plan);
    gs_error e;
    gs_error_clear(&e);
    int rc = 0;
    if (gs_nvml_open(o->nvml_library, &nvml, &e) != 0 || gs_nvml_discover(nvml, &inv, &e) != 0) {
        rc = add(out, "nvml", NULL, false, "%s", e.msg);
        goto done;
    }
    snprintf(out->driver_version, sizeof out->driver_version, "%s", inv.driver_version);
    out->n_gpus = inv.n_gpus;
    size_t lost = 0;
    for (size_t g = 0; g < inv.n_gpus; g++)
        if (inv.gpus[g].lost) {
            lost++;
            rc |= add(out, "nvml", NULL, false, "GPU %u%s%s%s is lost: %s", inv.gpus[g].index,
                      inv.gpus[g].uuid[0] || inv.gpus[g].pci_bus_id[0] ? " (" : "",
                      inv.gpus[g].uuid[0] ? inv.gpus[g].uuid : inv.gpus[g].pci_bus_id,
                      inv.gpus[g].uuid[0] || inv.gpus[g].pci_bus_id[0] ? ")" : "", inv.gpus[g].lost_reason);
        }
    if (!lost)
        rc |= add(out, "nvml", NULL, true, "%zu GPU(s), driver %s", inv.n_gpus, inv.driver_version);
    gs_error_clear(&e);
    if (gs_devplugin_plan_build(&inv, &o->plugin, &plan, &e) != 0) {
        rc |= add(out, "nvml", NULL, false, "the configuration cannot serve this node: %s", e.msg);
        goto done;
    }
    if (plan.nothing)
        rc |= add(out, "nvml", NULL, false, "nothing would be advertised: %s", plan.n_notes ? plan.notes[0] : "");

    V1__AllocatableResourcesResponse *alloc = NULL;
    bool alloc_ok = false;
    if (podres[0]) {
        gs_strbuf reply = {0}, smsg = {0};
        int status = -1;
        gs_error_clear(&e);
        uint8_t empty[1];
        if (gs_grpc_unary(podres, "/v1.PodResourcesLister/GetAllocatableResources", empty, 0,
                          o->timeout_ms > 0 ? o->timeout_ms : 10000, &reply, &status, &smsg, &e) != 0 || status != 0)
            rc |= add(out, "registered", NULL, false, "cannot ask the kubelet (PodResources %s): %s", podres,
                      status > 0 ? gs_strbuf_cstr(&smsg) : e.msg);
        else if (!(alloc = v1__allocatable_resources_response__unpack(NULL, reply.len, (const uint8_t *)reply.buf)))
            rc |= add(out, "registered", NULL, false, "the kubelet's PodResources answer is malformed");
        else
            alloc_ok = true;
        gs_strbuf_free(&reply);
        gs_strbuf_free(&smsg);
    }
    for (size_t i = 0; i < plan.n_resources; i++)
        check_resource(o, dir, &plan.resources[i], alloc, alloc_ok, lost, out);
    if (alloc)
        v1__allocatable_resources_response__free_unpacked(alloc, NULL);
done:
    gs_devplugin_plan_free(&plan);
    gs_nvml_inventory_free(&inv);
    gs_nvml_close(nvml);
    if (rc != 0) {
        gs_agent_check_report_free(out);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    return 0;
}
