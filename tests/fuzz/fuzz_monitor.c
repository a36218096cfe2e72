/*
 * fuzz_monitor.c - libFuzzer target for the monitor's core (lib/monitor/monitor.c): objects
 * of every watched kind, as an informer puts them, through a gs_live_store and its
 * observer, then updates and every view rendered.
 *
 * Input: records separated by NUL bytes; a record's first byte picks the kind (mod the
 * kinds the monitor watches) and whether it is a delete (bit 7), the rest is the object's
 * JSON. Every fourth record is followed by an update at a later time; the world is
 * re-read from the store after every replaced object (reclaim_bytes 1), and a second
 * monitor begins after the first (a restart) over the same store.
 *
 * Invariants: nothing crashes or leaks; an update fails only for memory; every render
 * succeeds; the metrics exposition is text lines that each start with '#' or
 * "gpusched_" and end in a newline; JSON views start with '{' and end with "}\n".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/live.h"
#include "gpusched/monitor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const gs_live_kind kinds[] = {GS_LIVE_NODE, GS_LIVE_POD, GS_LIVE_EVENT, GS_LIVE_DAEMONSET,
                                     GS_LIVE_RESOURCEQUOTA, GS_LIVE_PRIORITYCLASS, GS_LIVE_PDB,
                                     GS_LIVE_NAMESPACE};

static void check_views(gs_monitor *m, int64_t now)
{
    gs_strbuf out = GS_STRBUF_INIT;
    gs_error err;
    for (int v = 0; v < 4; v++)
        for (int f = 0; f < 2; f++) {
            if (gs_monitor_render(m, (gs_monitor_view)v, (gs_monitor_format)f, now, &out, &err))
                abort();
            const char *t = gs_strbuf_cstr(&out);
            if (v == GS_MON_METRICS) {
                for (const char *l = t; *l;) {
                    if (*l != '#' && strncmp(l, "gpusched_", 9) != 0)
                        abort();
                    const char *nl = strchr(l, '\n');
                    if (!nl)
                        abort();
                    l = nl + 1;
                }
            } else if (f == GS_MON_JSON && (out.len < 3 || t[0] != '{' || strcmp(t + out.len - 2, "}\n") != 0))
                abort();
        }
    gs_strbuf_free(&out);
}

static int noop(void *ctx, const gs_monitor_pending *p)
{
    (void)ctx;
    if (!p->ns || !p->name || !p->reason || !p->why || !p->fix)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gs_error err;
    gs_live_store *st = gs_live_store_new(&err);
    if (!st)
        return 0;
    int64_t now = 1767225600000LL;
    gs_monitor *m = NULL;
    for (int round = 0; round < 2; round++) {
        gs_monitor_opts o = {.start_ms = now, .store = st, .reclaim_bytes = 1};
        m = gs_monitor_new(&o, &err);
        if (!m)
            break;
        gs_live_store_observe(st, gs_monitor_observer, m);
        size_t i = 0, nrec = 0;
        while (i < size) {
            const uint8_t *end = memchr(data + i, 0, size - i);
            size_t len = end ? (size_t)(end - (data + i)) : size - i;
            if (len) {
                gs_live_kind k = kinds[data[i] % (sizeof kinds / sizeof kinds[0])];
                const char *obj = (const char *)data + i + 1;
                if (data[i] & 0x80)
                    (void)gs_live_store_delete(st, k, obj, len - 1, &err);
                else
                    (void)gs_live_store_put(st, k, obj, len - 1, &err);
                if (++nrec % 4 == 0) {
                    now += 61000;
                    if (gs_monitor_update(m, now, &err) < 0 && err.code != GS_ERR_NOMEM)
                        abort();
                }
            }
            i += len + 1;
        }
        now += 700000;
        if (gs_monitor_update(m, now, &err) < 0 && err.code != GS_ERR_NOMEM)
            abort();
        check_views(m, now);
        gs_monitor_pending_each(m, noop, NULL);
        gs_live_store_observe(st, NULL, NULL);
        gs_monitor_free(m);
        /* the restart replays the store's objects into the new monitor */
        gs_live_store_replace_begin(st, GS_LIVE_POD);
        gs_live_store_replace_end(st, GS_LIVE_POD);
    }
    gs_live_store_free(st);
    return 0;
}
