/*
 * monitor.c - gpusched monitor's core (monitor.h, "the monitor"). Placeholder while the
 * core lands: it links and renders empty views.
 */
#include <stdlib.h>
#include <string.h>

#include "gpusched/monitor.h"

struct gs_monitor {
    gs_monitor_opts o;
};

gs_monitor *gs_monitor_new(const gs_monitor_opts *o, gs_error *err)
{
    gs_monitor *m = calloc(1, sizeof *m);
    if (!m) {
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (o)
        m->o = *o;
    return m;
}
void gs_monitor_free(gs_monitor *m) { free(m); }
void gs_monitor_observer(void *monitor, gs_live_kind k, const char *key, size_t klen, const char *raw,
                         size_t raw_len, const char *text, size_t text_len)
{
    (void)monitor, (void)k, (void)key, (void)klen, (void)raw, (void)raw_len, (void)text, (void)text_len;
}
int gs_monitor_update(gs_monitor *m, int64_t now_ms, gs_error *err)
{
    (void)m, (void)now_ms, (void)err;
    return 0;
}
size_t gs_monitor_backlog(gs_monitor *m) { (void)m; return 0; }
void gs_monitor_note_informer(gs_monitor *m, gs_live_kind k, const gs_live_informer_stats *st) { (void)m, (void)k, (void)st; }
void gs_monitor_note_leader(gs_monitor *m, bool leader) { (void)m, (void)leader; }
void gs_monitor_note_event(gs_monitor *m, gs_monitor_event_result r) { (void)m, (void)r; }
void gs_monitor_note_dcgm_error(gs_monitor *m, gs_monitor_util_source s) { (void)m, (void)s; }
int gs_monitor_set_idle(gs_monitor *m, const gs_idle_gpu *v, size_t n, gs_error *err)
{
    (void)m, (void)v, (void)n, (void)err;
    return 0;
}
int gs_monitor_render(gs_monitor *m, gs_monitor_view v, gs_monitor_format f, int64_t now_ms, gs_strbuf *out,
                      gs_error *err)
{
    (void)m, (void)v, (void)now_ms, (void)err;
    gs_strbuf_reset(out);
    gs_strbuf_printf(out, f == GS_MON_JSON ? "{}\n" : "");
    return 0;
}
int gs_monitor_pending_each(gs_monitor *m, gs_monitor_pending_fn fn, void *ctx)
{
    (void)m, (void)fn, (void)ctx;
    return 0;
}
void gs_monitor_stats_get(gs_monitor *m, gs_monitor_stats *out)
{
    (void)m;
    memset(out, 0, sizeof *out);
}
