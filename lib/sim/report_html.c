/*
 * report_html.c - the self-contained HTML report of `gpusched simulate` (gs_report_html,
 * report.h): inline CSS and SVG, no external resource, every input string escaped.
 *
 * Layout: a title block, the headline table (one row per run group = workload, variant,
 * policy; numbers are means over the group's seeds), then the charts:
 *   - GPU allocation vs arrived load, one line per group (mean over seeds at each x);
 *   - FGD runs: fragmentation ratio vs arrived load;
 *   - replay runs: pending-time CDF per priority class (one chart per group, its first
 *     seed), GPU allocation, GPUs stranded and GPU nodes in use over time (one line per
 *     group, first seed), and the pending reasons of each group's first seed.
 * Charts are plain SVG: axes with "nice" ticks (1, 2, 5 x 10^k; time axes in s, min, h or
 * days), one <path> per series inside <g class="plot">, gaps where a value is missing.
 * Legends are HTML lists under each chart. A few lines of inline script at the end only
 * count the charts whose plot has a non-empty bounding box and write the count into
 * <body data-charts-rendered="N" data-charts="M"> (tests/html/check-report.sh reads it).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/report.h"

#define CHART_W 720
#define CHART_H 340
#define M_LEFT 64
#define M_RIGHT 20
#define M_TOP 16
#define M_BOTTOM 48
#define MAX_GROUPS 24
#define MAX_CDF_CHARTS 8

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf",
                                      "#7f7f7f", "#bcbd22", "#393b79", "#637939"};
#define NPALETTE (sizeof palette / sizeof palette[0])

void gs_html_escape(gs_strbuf *sb, const char *s)
{
    if (!s)
        return;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': gs_strbuf_puts(sb, "&amp;"); break;
        case '<': gs_strbuf_puts(sb, "&lt;"); break;
        case '>': gs_strbuf_puts(sb, "&gt;"); break;
        case '"': gs_strbuf_puts(sb, "&quot;"); break;
        case '\'': gs_strbuf_puts(sb, "&#39;"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                gs_strbuf_printf(sb, "&#%u;", c == '\t' || c == '\n' ? c : 0xfffd);
            else
                gs_strbuf_putc(sb, (char)c);
        }
    }
}

/* ================================================================ groups */

typedef struct group {
    const gs_sim_run *first; /* lowest index (first seed) */
    uint32_t runs;
    uint32_t nx;
    /* headline means */
    double alloc100, final_alloc, final_frag, failed, pods;
    double never, rejected, preempt, alloc_time_mean, stranded_peak, stranded_mean, wait_p95;
} group;

static bool same_group(const gs_sim_run *a, const gs_sim_run *b)
{
    return a->method == b->method && strcmp(a->workload, b->workload) == 0 &&
           strcmp(a->variant, b->variant) == 0 && strcmp(a->policy, b->policy) == 0;
}

static void mean_curve(const gs_sim_report *rep, const group *g, bool frag, double *out)
{
    for (uint32_t x = 0; x < g->nx; x++) {
        double s = 0;
        uint32_t c = 0;
        for (size_t i = 0; i < rep->runs.n; i++) {
            const gs_sim_run *r = &rep->runs.v[i];
            if (!same_group(r, g->first) || x >= r->nx)
                continue;
            double v = frag ? r->frag_ratio[x] : r->alloc[x];
            if (!isnan(v)) {
                s += v;
                c++;
            }
        }
        out[x] = c ? s / c : NAN;
    }
}

static uint32_t build_groups(const gs_sim_report *rep, group *g, uint32_t cap)
{
    uint32_t n = 0;
    for (size_t i = 0; i < rep->runs.n; i++) {
        const gs_sim_run *r = &rep->runs.v[i];
        uint32_t k = 0;
        while (k < n && !same_group(g[k].first, r))
            k++;
        if (k == n) {
            if (n == cap)
                continue; /* beyond the charted groups: left out of charts and table */
            memset(&g[n], 0, sizeof g[n]);
            g[n].first = r;
            n++;
        }
        group *x = &g[k];
        x->runs++;
        if (r->nx > x->nx)
            x->nx = r->nx;
        x->alloc100 += r->nx > 100 && !isnan(r->alloc[100]) ? r->alloc[100] : NAN;
        x->final_alloc += r->final_alloc_pct;
        x->final_frag += r->final_frag_ratio;
        x->failed += r->failed;
        x->pods += r->pods;
        if (r->has_replay) {
            const gs_replay_metrics *m = &r->replay;
            x->never += m->never_started;
            x->rejected += m->rejected;
            x->preempt += m->preemptions;
            x->alloc_time_mean += m->alloc_mean_pct;
            x->stranded_peak += m->stranded_peak;
            x->stranded_mean += m->stranded_mean;
            x->wait_p95 += (double)m->all.p95;
        }
    }
    for (uint32_t k = 0; k < n; k++) {
        group *x = &g[k];
        double d = x->runs;
        x->alloc100 /= d;
        x->final_alloc /= d;
        x->final_frag /= d;
        x->failed /= d;
        x->pods /= d;
        x->never /= d;
        x->rejected /= d;
        x->preempt /= d;
        x->alloc_time_mean /= d;
        x->stranded_peak /= d;
        x->stranded_mean /= d;
        x->wait_p95 /= d;
    }
    return n;
}

/* Label flags: the workload name (several workloads), "as given" for the base variant
 * (when the report has variants). */
#define NAME_WORKLOAD 1
#define NAME_AS_GIVEN 2

static void group_name(gs_strbuf *sb, const gs_sim_run *r, int flags)
{
    if (flags & NAME_WORKLOAD) {
        gs_html_escape(sb, r->workload);
        gs_strbuf_puts(sb, " · ");
    }
    if (r->variant[0]) {
        gs_html_escape(sb, r->variant);
        gs_strbuf_puts(sb, " · ");
    } else if (flags & NAME_AS_GIVEN) {
        gs_strbuf_puts(sb, "as given · ");
    }
    gs_html_escape(sb, r->method == GS_SIM_FGD ? r->label : r->policy);
}

/* ================================================================ axes */

static double nice_step(double range, int target)
{
    if (!(range > 0))
        return 1;
    double raw = range / target;
    double p = pow(10, floor(log10(raw)));
    double f = raw / p;
    double m = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    return m * p;
}

typedef struct axis {
    double lo, hi;   /* data range shown */
    double step;     /* tick step, data units */
    double unit;     /* divide tick values by this for labels */
    const char *suffix;
} axis;

static void axis_linear(axis *a, double lo, double hi, int target)
{
    if (!(hi > lo))
        hi = lo + 1;
    a->step = nice_step(hi - lo, target);
    a->lo = floor(lo / a->step) * a->step;
    a->hi = ceil(hi / a->step) * a->step;
    a->unit = 1;
    a->suffix = "";
}

/* A time axis in seconds, labelled in s, min, h or days. */
static void axis_time(axis *a, double lo, double hi)
{
    if (!(hi > lo))
        hi = lo + 1;
    double range = hi - lo;
    double unit = range >= 3 * 86400 ? 86400 : range >= 3 * 3600 ? 3600 : range >= 180 ? 60 : 1;
    const char *suffix = unit == 86400 ? "d" : unit == 3600 ? "h" : unit == 60 ? "min" : "s";
    axis_linear(a, lo / unit, hi / unit, 6);
    a->lo *= unit;
    a->hi *= unit;
    a->step *= unit;
    a->unit = unit;
    a->suffix = suffix;
}

static double px(const axis *a, double v)
{
    return M_LEFT + (v - a->lo) / (a->hi - a->lo) * (CHART_W - M_LEFT - M_RIGHT);
}

static double py(const axis *a, double v)
{
    return CHART_H - M_BOTTOM - (v - a->lo) / (a->hi - a->lo) * (CHART_H - M_TOP - M_BOTTOM);
}

static void put_tick_label(gs_strbuf *sb, double v, const axis *a)
{
    double t = v / a->unit;
    if (fabs(t - rint(t)) < 1e-9)
        gs_strbuf_printf(sb, "%.0f%s", t, a->suffix);
    else
        gs_strbuf_printf(sb, "%g%s", t, a->suffix);
}

/* ================================================================ charts */

typedef struct series {
    const double *x, *y; /* NULL x: x = index */
    uint32_t n;
    const gs_sim_run *run; /* for the legend name */
    const char *name;      /* or an explicit name */
    int color;
    bool step;             /* right-continuous steps (CDFs): across, then up */
} series;

static void chart_open(gs_strbuf *sb, const char *title, const char *desc)
{
    gs_strbuf_puts(sb, "<figure class=\"card\">\n<figcaption>");
    gs_html_escape(sb, title);
    gs_strbuf_puts(sb, "</figcaption>\n");
    if (desc && *desc) {
        gs_strbuf_puts(sb, "<p class=\"desc\">");
        gs_html_escape(sb, desc);
        gs_strbuf_puts(sb, "</p>\n");
    }
}

/* Number of tick steps of an axis; 0 when the axis is degenerate (non-finite values, or a
 * step too small to move: ticks are then left out). */
static int nticks(const axis *a)
{
    double n = (a->hi - a->lo) / a->step;
    if (!isfinite(n) || !isfinite(a->lo) || !(a->step > 0) || a->lo + a->step == a->lo)
        return 0;
    n = rint(n);
    return n > 100 ? 100 : n < 0 ? 0 : (int)n;
}

static void draw_axes(gs_strbuf *sb, const axis *ax, const axis *ay, const char *xlabel,
                      const char *ylabel)
{
    int nx = nticks(ax), ny = nticks(ay);
    gs_strbuf_puts(sb, "<g class=\"grid\">");
    for (int k = 0; k <= ny && ny; k++) {
        double y = py(ay, ay->lo + k * ay->step);
        gs_strbuf_printf(sb, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", M_LEFT, y,
                         CHART_W - M_RIGHT, y);
    }
    gs_strbuf_puts(sb, "</g>\n<g class=\"axis\">");
    gs_strbuf_printf(sb, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", M_LEFT,
                     CHART_H - M_BOTTOM, CHART_W - M_RIGHT, CHART_H - M_BOTTOM);
    gs_strbuf_printf(sb, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", M_LEFT, M_TOP, M_LEFT,
                     CHART_H - M_BOTTOM);
    for (int k = 0; k <= ny && ny; k++) {
        double v = ay->lo + k * ay->step;
        gs_strbuf_printf(sb, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", M_LEFT - 6,
                         py(ay, v) + 4);
        put_tick_label(sb, v, ay);
        gs_strbuf_puts(sb, "</text>");
    }
    for (int k = 0; k <= nx && nx; k++) {
        double v = ax->lo + k * ax->step;
        double x = px(ax, v);
        gs_strbuf_printf(sb, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x,
                         CHART_H - M_BOTTOM, x, CHART_H - M_BOTTOM + 4);
        gs_strbuf_printf(sb, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x,
                         CHART_H - M_BOTTOM + 18);
        put_tick_label(sb, v, ax);
        gs_strbuf_puts(sb, "</text>");
    }
    gs_strbuf_printf(sb, "<text class=\"label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
                     (M_LEFT + CHART_W - M_RIGHT) / 2, CHART_H - 8);
    gs_html_escape(sb, xlabel);
    gs_strbuf_printf(sb, "</text><text class=\"label\" transform=\"translate(14 %d) rotate(-90)\" "
                         "text-anchor=\"middle\">",
                     (M_TOP + CHART_H - M_BOTTOM) / 2);
    gs_html_escape(sb, ylabel);
    gs_strbuf_puts(sb, "</text></g>\n");
}

/* A line chart; x_time: the x axis is seconds. */
static void line_chart(gs_strbuf *sb, const char *title, const char *desc, const char *xlabel,
                       const char *ylabel, const series *s, uint32_t ns, bool x_time,
                       double ymin_fixed, double ymax_fixed, int name_flags, bool bridge_gaps)
{
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (uint32_t k = 0; k < ns; k++)
        for (uint32_t i = 0; i < s[k].n; i++) {
            double x = s[k].x ? s[k].x[i] : i, y = s[k].y[i];
            if (isnan(y))
                continue;
            xlo = fmin(xlo, x);
            xhi = fmax(xhi, x);
            ylo = fmin(ylo, y);
            yhi = fmax(yhi, y);
        }
    if (!isfinite(xlo)) {
        xlo = 0;
        xhi = 1;
        ylo = 0;
        yhi = 1;
    }
    if (!isnan(ymin_fixed))
        ylo = fmin(ylo, ymin_fixed);
    if (!isnan(ymax_fixed))
        yhi = fmax(yhi, ymax_fixed);
    axis ax, ay;
    if (x_time)
        axis_time(&ax, xlo, xhi);
    else
        axis_linear(&ax, xlo, xhi, 8);
    axis_linear(&ay, ylo, yhi, 5);
    chart_open(sb, title, desc);
    gs_strbuf_printf(sb, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
                         "xmlns=\"http://www.w3.org/2000/svg\" aria-label=\"",
                     CHART_W, CHART_H);
    gs_html_escape(sb, title);
    gs_strbuf_puts(sb, "\">\n");
    draw_axes(sb, &ax, &ay, xlabel, ylabel);
    gs_strbuf_puts(sb, "<g class=\"plot\">\n");
    for (uint32_t k = 0; k < ns; k++) {
        gs_strbuf_printf(sb, "<path stroke=\"%s\" d=\"", palette[s[k].color % NPALETTE]);
        bool pen = false;
        uint32_t drawn = 0;
        double last_y = 0;
        for (uint32_t i = 0; i < s[k].n; i++) {
            double x = s[k].x ? s[k].x[i] : i, y = s[k].y[i];
            if (isnan(y)) {
                pen = pen && bridge_gaps;
                continue;
            }
            if (pen && s[k].step) /* across at the previous level, then up */
                gs_strbuf_printf(sb, " L%.1f %.1f", px(&ax, x), py(&ay, last_y));
            gs_strbuf_printf(sb, "%s%.1f %.1f", pen ? " L" : (drawn ? " M" : "M"), px(&ax, x),
                             py(&ay, y));
            pen = true;
            last_y = y;
            drawn++;
        }
        if (drawn == 1) /* a single point: a short tick so it shows */
            gs_strbuf_puts(sb, " h2");
        gs_strbuf_puts(sb, "\"/>\n");
    }
    gs_strbuf_puts(sb, "</g>\n</svg>\n<ul class=\"legend\">");
    for (uint32_t k = 0; k < ns; k++) {
        gs_strbuf_printf(sb, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
                         palette[s[k].color % NPALETTE]);
        if (s[k].name)
            gs_html_escape(sb, s[k].name);
        else
            group_name(sb, s[k].run, name_flags);
        gs_strbuf_puts(sb, "</li>");
    }
    gs_strbuf_puts(sb, "</ul>\n</figure>\n");
}

/* ================================================================ tables */

static void td_num(gs_strbuf *sb, double v, const char *fmt)
{
    gs_strbuf_puts(sb, "<td class=\"n\">");
    if (isnan(v))
        gs_strbuf_puts(sb, "–");
    else
        gs_strbuf_printf(sb, fmt, v);
    gs_strbuf_puts(sb, "</td>");
}

static void td_dur(gs_strbuf *sb, double seconds)
{
    char buf[64];
    if (!(fabs(seconds) < 9e18)) {
        gs_strbuf_puts(sb, "<td class=\"n\">–</td>");
        return;
    }
    gs_format_duration((int64_t)llround(seconds), buf, sizeof buf);
    gs_strbuf_printf(sb, "<td class=\"n\">%s</td>", buf);
}

static void td_text(gs_strbuf *sb, const char *s)
{
    gs_strbuf_puts(sb, "<td>");
    gs_html_escape(sb, s && *s ? s : "–");
    gs_strbuf_puts(sb, "</td>");
}

static void headline_table(gs_strbuf *sb, const group *g, uint32_t ng, bool replay, bool fgd)
{
    gs_strbuf_puts(sb, "<section>\n<h2>Headline numbers</h2>\n<p class=\"desc\">One row per "
                       "workload, variant and policy; numbers are means over its runs "
                       "(seeds).</p>\n<div class=\"scroll\"><table>\n<thead><tr><th>Workload"
                       "</th><th>Variant</th><th>Policy</th><th>Runs</th><th>Pods</th>");
    if (fgd)
        gs_strbuf_puts(sb, "<th>Alloc. at 100% load</th><th>Final alloc.</th>"
                           "<th>Final frag. ratio</th><th>Failed pods</th>");
    if (replay)
        gs_strbuf_puts(sb, "<th>GPU alloc. (avg)</th><th>Stranded GPUs (peak)</th>"
                           "<th>Stranded (avg)</th><th>Wait p95</th>"
                           "<th>Wait p95 by class</th><th>Never scheduled</th>"
                           "<th>Rejected</th><th>Preempted</th>");
    gs_strbuf_puts(sb, "</tr></thead>\n<tbody>\n");
    for (uint32_t k = 0; k < ng; k++) {
        const group *x = &g[k];
        const gs_sim_run *r = x->first;
        gs_strbuf_puts(sb, "<tr>");
        td_text(sb, r->workload);
        td_text(sb, r->variant[0] ? r->variant : "as given");
        td_text(sb, r->method == GS_SIM_FGD ? r->label : r->policy);
        td_num(sb, x->runs, "%.0f");
        td_num(sb, x->pods, "%.0f");
        if (fgd) {
            if (r->method == GS_SIM_FGD) {
                td_num(sb, x->alloc100, "%.2f%%");
                td_num(sb, x->final_alloc, "%.2f%%");
                td_num(sb, x->final_frag, "%.2f%%");
                td_num(sb, x->failed, "%.1f");
            } else {
                gs_strbuf_puts(sb, "<td></td><td></td><td></td><td></td>");
            }
        }
        if (replay) {
            if (r->has_replay) {
                td_num(sb, x->alloc_time_mean, "%.1f%%");
                td_num(sb, x->stranded_peak, "%.1f");
                td_num(sb, x->stranded_mean, "%.2f");
                td_dur(sb, x->wait_p95);
                gs_strbuf_puts(sb, "<td>");
                for (uint32_t c = 0; c < r->replay.nclasses; c++) {
                    char buf[64];
                    gs_format_duration(r->replay.classes[c].p95, buf, sizeof buf);
                    if (c)
                        gs_strbuf_puts(sb, "<br>");
                    gs_html_escape(sb, r->replay.classes[c].name[0] ? r->replay.classes[c].name
                                                                     : "(no class)");
                    gs_strbuf_printf(sb, ": %s", buf);
                }
                if (x->runs > 1)
                    gs_strbuf_puts(sb, " <small>(first seed)</small>");
                gs_strbuf_puts(sb, "</td>");
                td_num(sb, x->never, "%.1f");
                td_num(sb, x->rejected, "%.1f");
                td_num(sb, x->preempt, "%.1f");
            } else {
                gs_strbuf_puts(sb, "<td></td><td></td><td></td><td></td><td></td><td></td>"
                                   "<td></td><td></td>");
            }
        }
        gs_strbuf_puts(sb, "</tr>\n");
    }
    gs_strbuf_puts(sb, "</tbody></table></div>\n</section>\n");
}

static bool has_mig(const gs_sim_run *r)
{
    return r->has_replay && (r->replay.mig_gpus || r->replay.mig_dynamic);
}

/* MIG: the policy, re-partitions, where the compute slices were, and the pending time of
 * each MIG profile requested (first seed of each group). */
static void mig_table(gs_strbuf *sb, const group *g, uint32_t ng)
{
    gs_strbuf_puts(sb, "<section>\n<h2>MIG</h2>\n<p class=\"desc\">Compute slices of the "
                       "MIG-enabled GPUs, time averages (peaks): in instances used by pods, in "
                       "idle instances, in no instance (GPUs being re-partitioned included). "
                       "Dynamic: an idle GPU is re-partitioned for a pending MIG profile and "
                       "offers nothing for the delay. First seed of each group.</p>\n"
                       "<div class=\"scroll\"><table>\n<thead><tr><th>Workload</th>"
                       "<th>Variant</th><th>Policy</th><th>MIG policy</th><th>Re-partitions"
                       "</th><th>Slices</th><th>In use (avg)</th><th>Idle in instances</th>"
                       "<th>In no instance</th><th>Wait p50 / p95 by MIG profile</th></tr>"
                       "</thead>\n<tbody>\n");
    for (uint32_t k = 0; k < ng; k++) {
        const gs_sim_run *r = g[k].first;
        if (!has_mig(r))
            continue;
        const gs_replay_metrics *m = &r->replay;
        gs_strbuf_puts(sb, "<tr>");
        td_text(sb, r->workload);
        td_text(sb, r->variant[0] ? r->variant : "as given");
        td_text(sb, r->policy);
        if (m->mig_dynamic) {
            char d[64];
            gs_format_duration(m->mig_delay, d, sizeof d);
            gs_strbuf_printf(sb, "<td>dynamic, %s</td>", d);
        } else {
            gs_strbuf_puts(sb, "<td>static</td>");
        }
        td_num(sb, m->mig_reconfigs, "%.0f");
        td_num(sb, m->mig_slices, "%.0f");
        td_num(sb, m->mig_used_mean, "%.1f");
        gs_strbuf_printf(sb, "<td>%.1f (%u)</td><td>%.1f (%u)</td><td>", m->mig_idle_mean,
                         m->mig_idle_peak, m->mig_unpart_mean, m->mig_unpart_peak);
        bool first = true;
        for (uint32_t c = 0; c < m->nshapes; c++) {
            const gs_wait_stats *w = &m->shapes[c];
            if (!strstr(w->name, " MIG "))
                continue;
            char a[64], b[64];
            gs_format_duration(w->p50, a, sizeof a);
            gs_format_duration(w->p95, b, sizeof b);
            if (!first)
                gs_strbuf_puts(sb, "<br>");
            first = false;
            gs_html_escape(sb, w->name);
            gs_strbuf_printf(sb, ": %s / %s", a, b);
        }
        gs_strbuf_puts(sb, "</td></tr>\n");
    }
    gs_strbuf_puts(sb, "</tbody></table></div>\n</section>\n");
}

static void reasons_table(gs_strbuf *sb, const group *g, uint32_t ng, int name_flags)
{
    bool any = false;
    for (uint32_t k = 0; k < ng; k++)
        any |= g[k].first->has_replay && g[k].first->replay.nreasons > 0;
    if (!any)
        return;
    gs_strbuf_puts(sb, "<section>\n<h2>Why pods stayed pending</h2>\n<p class=\"desc\">The "
                       "scheduler's last message for the pods still pending at the end (and "
                       "admission rejections), most common first; first seed of each "
                       "group.</p>\n");
    for (uint32_t k = 0; k < ng; k++) {
        const gs_sim_run *r = g[k].first;
        if (!r->has_replay || !r->replay.nreasons)
            continue;
        gs_strbuf_puts(sb, "<h3>");
        group_name(sb, r, name_flags);
        gs_strbuf_puts(sb, "</h3>\n<div class=\"scroll\"><table class=\"reasons\">\n<thead><tr>"
                           "<th>Pods</th><th>Kind</th><th>Message</th></tr></thead>\n<tbody>\n");
        for (uint32_t i = 0; i < r->replay.nreasons; i++) {
            const gs_reason_stat *rs = &r->replay.reasons[i];
            gs_strbuf_printf(sb, "<tr><td class=\"n\">%u</td><td>%s</td><td class=\"msg\">",
                             rs->pods, rs->rejected ? "rejected" : "pending");
            gs_html_escape(sb, rs->reason);
            gs_strbuf_puts(sb, "</td></tr>\n");
        }
        gs_strbuf_puts(sb, "</tbody></table></div>\n");
    }
    gs_strbuf_puts(sb, "</section>\n");
}

/* ================================================================ page */

static const char page_css[] =
    ":root{--fg:#1d2330;--muted:#5b6476;--line:#d9dee7;--bg:#f6f7fa;--card:#fff}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "color:var(--fg);background:var(--bg)}"
    "main{max-width:1180px;margin:0 auto;padding:24px 20px 48px}"
    "header h1{margin:0 0 4px;font-size:26px}"
    "header p{margin:0;color:var(--muted)}"
    "h2{margin:32px 0 8px;font-size:19px}h3{margin:18px 0 6px;font-size:15px}"
    ".desc{color:var(--muted);margin:0 0 10px;font-size:13.5px}"
    ".scroll{overflow-x:auto}"
    "table{border-collapse:collapse;background:var(--card);font-size:12.5px;"
    "border:1px solid var(--line)}"
    "th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;"
    "vertical-align:top;white-space:nowrap}"
    "th{background:#eef1f6;font-weight:600;white-space:normal;vertical-align:bottom}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "td.msg{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;white-space:normal}"
    ".grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:16px}"
    "figure.card{margin:0 0 16px;background:var(--card);border:1px solid var(--line);"
    "border-radius:8px;padding:12px 14px}"
    "figcaption{font-weight:600;margin-bottom:4px}"
    "svg.chart{width:100%;height:auto;display:block}"
    "svg .grid line{stroke:#e8ebf1}"
    "svg .axis line{stroke:#8a93a5}"
    "svg text{font-size:11px;fill:#4a5264}"
    "svg text.label{font-size:12px;fill:#1d2330}"
    "svg .plot path{fill:none;stroke-width:2;stroke-linejoin:round;stroke-linecap:round}"
    "ul.legend{list-style:none;margin:6px 0 0;padding:0;display:flex;flex-wrap:wrap;"
    "gap:4px 16px;font-size:12.5px}"
    ".swatch{display:inline-block;width:14px;height:4px;border-radius:2px;margin-right:6px;"
    "vertical-align:middle}"
    "footer{margin-top:36px;color:var(--muted);font-size:12px}";

static const char page_script[] =
    "<script>(function(){var c=document.querySelectorAll('svg.chart'),n=0;"
    "for(var i=0;i<c.length;i++){var p=c[i].querySelector('g.plot');"
    "if(p){var b=p.getBBox();if(b.width>0&&b.height>0)n++;}}"
    "document.body.setAttribute('data-charts',String(c.length));"
    "document.body.setAttribute('data-charts-rendered',String(n));})();</script>\n";

void gs_report_html(const gs_sim_report *rep, const char *title, gs_strbuf *sb)
{
    group *g = calloc(MAX_GROUPS, sizeof *g);
    if (!g) {
        sb->oom = true;
        return;
    }
    uint32_t ng = build_groups(rep, g, MAX_GROUPS);
    bool replay = false, fgd = false, many_workloads = false, variants = false;
    for (size_t i = 0; i < rep->runs.n; i++) {
        replay |= rep->runs.v[i].method == GS_SIM_REPLAY;
        fgd |= rep->runs.v[i].method == GS_SIM_FGD;
        many_workloads |= strcmp(rep->runs.v[i].workload, rep->runs.v[0].workload) != 0;
        variants |= rep->runs.v[i].variant[0] != '\0';
    }
    int names = (many_workloads ? NAME_WORKLOAD : 0) | (variants ? NAME_AS_GIVEN : 0);
    gs_strbuf_puts(sb, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                       "<title>");
    gs_html_escape(sb, title);
    gs_strbuf_printf(sb, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n<header>\n<h1>",
                     page_css);
    gs_html_escape(sb, title);
    gs_strbuf_printf(sb, "</h1>\n<p>gpusched simulate, method %s: %zu run%s",
                     rep->sweep.method[0] ? rep->sweep.method : (fgd ? "fgd" : "replay"),
                     rep->runs.n, rep->runs.n == 1 ? "" : "s");
    if (rep->runs.n) {
        gs_strbuf_puts(sb, " on ");
        gs_html_escape(sb, rep->runs.v[0].workload);
        if (many_workloads)
            gs_strbuf_puts(sb, " and other workloads");
        gs_strbuf_printf(sb, " (%u GPUs)", rep->runs.v[0].total_gpus);
    }
    if (rep->sweep.nshards > 1)
        gs_strbuf_printf(sb, "; shard %u of %u", rep->sweep.shard, rep->sweep.nshards);
    if (ng == MAX_GROUPS)
        gs_strbuf_printf(sb, "; the first %d groups are shown", MAX_GROUPS);
    gs_strbuf_puts(sb, ".</p>\n</header>\n");

    if (!rep->runs.n) {
        gs_strbuf_puts(sb, "<p>No runs.</p>\n");
    } else {
        headline_table(sb, g, ng, replay, fgd);
        bool mig = false;
        for (uint32_t k = 0; k < ng; k++)
            mig |= has_mig(g[k].first);
        if (mig)
            mig_table(sb, g, ng);
        /* allocation vs arrived load */
        series *s = calloc(ng ? ng : 1, sizeof *s);
        double **curves = calloc(ng ? ng : 1, sizeof *curves);
        bool ok = s && curves;
        for (uint32_t k = 0; ok && k < ng; k++) {
            curves[k] = malloc((g[k].nx ? g[k].nx : 1) * sizeof(double));
            ok = curves[k] != NULL;
            if (ok)
                mean_curve(rep, &g[k], false, curves[k]);
            s[k] = (series){NULL, curves[k], g[k].nx, g[k].first, NULL, (int)k, false};
        }
        if (ok) {
            gs_strbuf_puts(sb, "<section>\n<h2>GPU allocation vs arrived load</h2>\n");
            line_chart(sb, "GPU allocation vs arrived load",
                       "x: GPUs requested by the pods arrived so far, in % of the cluster's GPUs "
                       "(failed and departed pods included); y: GPUs allocated, in %. Mean over "
                       "seeds, as the FGD artifact's analysis_allo_discrete.csv.",
                       "arrived GPU request (% of capacity)", "GPUs allocated (%)", s, ng, false,
                       0, 100, names, true);
            gs_strbuf_puts(sb, "</section>\n");
        }
        if (ok && fgd) {
            uint32_t nf = 0;
            for (uint32_t k = 0; k < ng; k++) {
                if (g[k].first->method != GS_SIM_FGD)
                    continue;
                mean_curve(rep, &g[k], true, curves[k]);
                s[nf++] = (series){NULL, curves[k], g[k].nx, g[k].first, NULL, (int)k, false};
            }
            gs_strbuf_puts(sb, "<section>\n<h2>Fragmentation</h2>\n");
            line_chart(sb, "GPU fragmentation ratio vs arrived load",
                       "Fragmentation amount in % of the idle GPU capacity (the FGD paper's "
                       "measure against the target workload), mean over seeds.",
                       "arrived GPU request (% of capacity)", "fragmentation (% of idle)", s, nf,
                       false, 0, NAN, names, true);
            gs_strbuf_puts(sb, "</section>\n");
        }
        if (ok && replay) {
            /* pending-time CDF per class, one chart per group */
            gs_strbuf_puts(sb, "<section>\n<h2>Pending time by priority class</h2>\n<p class=\"desc\">"
                               "Share of the admitted pods of each PriorityClass that waited at "
                               "most x (pods never scheduled count with their wait up to the "
                               "end); first seed of each group.</p>\n<div class=\"grid2\">\n");
            uint32_t charts = 0;
            for (uint32_t k = 0; k < ng && charts < MAX_CDF_CHARTS; k++) {
                const gs_sim_run *r = g[k].first;
                if (!r->has_replay || !r->replay.nclasses)
                    continue;
                charts++;
                uint32_t nc = r->replay.nclasses;
                series *cs = calloc(nc, sizeof *cs);
                double *xs = calloc((size_t)nc * 21, sizeof *xs);
                double ys[21];
                for (int q = 0; q <= 20; q++)
                    ys[q] = 5.0 * q;
                if (!cs || !xs) {
                    free(cs);
                    free(xs);
                    sb->oom = true;
                    break;
                }
                for (uint32_t c = 0; c < nc; c++) {
                    const gs_wait_stats *w = &r->replay.classes[c];
                    for (int q = 0; q <= 20; q++)
                        xs[c * 21 + (uint32_t)q] = (double)w->cdf[q];
                    cs[c] = (series){&xs[c * 21], ys, 21, NULL,
                                     w->name[0] ? w->name : "(no class)", (int)c, true};
                }
                gs_strbuf t = GS_STRBUF_INIT;
                gs_strbuf_puts(&t, "Pending time CDF: ");
                if (many_workloads)
                    gs_strbuf_printf(&t, "%s · ", r->workload);
                if (r->variant[0])
                    gs_strbuf_printf(&t, "%s · ", r->variant);
                else if (variants)
                    gs_strbuf_puts(&t, "as given · ");
                gs_strbuf_puts(&t, r->policy);
                line_chart(sb, gs_strbuf_cstr(&t), NULL, "pending time", "pods (%)", cs, nc,
                           true, 0, 100, 0, false);
                gs_strbuf_free(&t);
                free(cs);
                free(xs);
            }
            gs_strbuf_puts(sb, "</div>\n</section>\n");
            /* allocation and stranded GPUs over time */
            double **tx = calloc(ng ? ng : 1, sizeof *tx);
            double **ty = calloc(ng ? ng : 1, sizeof *ty);
            double **st = calloc(ng ? ng : 1, sizeof *st);
            double **gn = calloc(ng ? ng : 1, sizeof *gn);
            uint32_t nr = 0;
            bool tok = tx && ty && st && gn;
            for (uint32_t k = 0; tok && k < ng; k++) {
                const gs_sim_run *r = g[k].first;
                if (!r->has_replay)
                    continue;
                uint32_t n = r->replay.nseries;
                tx[nr] = malloc((n ? n : 1) * sizeof(double));
                ty[nr] = malloc((n ? n : 1) * sizeof(double));
                st[nr] = malloc((n ? n : 1) * sizeof(double));
                gn[nr] = malloc((n ? n : 1) * sizeof(double));
                if (!tx[nr] || !ty[nr] || !st[nr] || !gn[nr]) {
                    free(tx[nr]);
                    free(ty[nr]);
                    free(st[nr]);
                    free(gn[nr]);
                    tok = false;
                    break;
                }
                double total = r->total_gpus ? r->total_gpus : 1;
                for (uint32_t i = 0; i < n; i++) {
                    const gs_replay_sample *p = &r->replay.series[i];
                    tx[nr][i] = (double)(p->t - r->replay.t_start);
                    ty[nr][i] = 100.0 * p->gpus_allocated / total;
                    st[nr][i] = p->gpus_stranded;
                    gn[nr][i] = mig ? (double)p->mig_idle + p->mig_unpartitioned
                                    : p->gpu_nodes_used;
                }
                s[nr] = (series){tx[nr], ty[nr], n, r, NULL, (int)k, true};
                nr++;
            }
            if (tok) {
                gs_strbuf_puts(sb, "<section>\n<h2>Over time</h2>\n<div class=\"grid2\">\n");
                line_chart(sb, "GPU allocation over time",
                           "GPUs allocated in % of the cluster's GPUs; first seed of each group.",
                           "time since the first arrival", "GPUs allocated (%)", s, nr, true, 0,
                           100, names, false);
                bool stranded = !mig; /* MIG-only clusters: no whole GPU to strand */
                for (uint32_t k = 0; k < ng; k++)
                    stranded |= g[k].first->has_replay && g[k].first->replay.stranded_peak > 0;
                for (uint32_t k = 0; k < nr; k++)
                    s[k].y = st[k];
                if (stranded)
                    line_chart(sb, "GPUs stranded over time",
                           "Whole GPUs left idle on nodes whose free cpu or memory cannot feed "
                           "them (at the node's own cpu and memory per GPU).",
                           "time since the first arrival", "GPUs stranded", s, nr, true, 0, 1,
                           names, false);
                for (uint32_t k = 0; k < nr; k++)
                    s[k].y = gn[k];
                if (mig)
                    line_chart(sb, "MIG slices not serving pods over time",
                               "Compute slices of the MIG GPUs in idle instances or in no "
                               "instance (being re-partitioned included); first seed of each "
                               "group.",
                               "time since the first arrival", "MIG compute slices", s, nr, true,
                               0, 1, names, false);
                else
                    line_chart(sb, "GPU nodes in use over time",
                               "Node occupancy: GPU nodes with at least one GPU allocated; first "
                               "seed of each group.",
                               "time since the first arrival", "GPU nodes in use", s, nr, true, 0,
                               1, names, false);
                gs_strbuf_puts(sb, "</div>\n</section>\n");
            } else {
                sb->oom = true;
            }
            for (uint32_t k = 0; k < nr; k++) {
                free(tx[k]);
                free(ty[k]);
                free(st[k]);
                free(gn[k]);
            }
            free(tx);
            free(ty);
            free(st);
            free(gn);
            reasons_table(sb, g, ng, names);
        }
        if (!ok)
            sb->oom = true;
        for (uint32_t k = 0; curves && k < ng; k++)
            free(curves[k]);
        free(curves);
        free(s);
    }
    gs_strbuf_puts(sb, "<footer>Generated by gpusched simulate. Definitions: "
                       "docs/simulate-replay.md and docs/simulate-fgd.md.</footer>\n</main>\n");
    gs_strbuf_puts(sb, page_script);
    gs_strbuf_puts(sb, "</body>\n</html>\n");
    free(g);
}
