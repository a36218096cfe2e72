/*
 * metrics.c - the webhook's metrics registry and its Prometheus text rendering
 * (contract in serve.h).
 *
 * Every counter is a C11 atomic updated with relaxed ordering: worker threads never take
 * a lock to count, and a scrape reads each counter once. A scrape is therefore not a
 * single atomic snapshot (a histogram's buckets may lag its _count by the reviews that
 * finished during the scrape), which Prometheus tolerates. Buckets are stored per bucket
 * and made cumulative when rendered.
 *
 * Exposed series (all prefixed gpusched_webhook_):
 *   reviews_total{endpoint, verdict}           answered reviews (allowed / denied)
 *   patches_total                               mutating reviews that returned a patch
 *   unchecked_total{endpoint, reason}           allowed without checking (skipped, limit)
 *   denials_total{rule}                         denied reviews per rule (rule="unreadable"
 *                                               for objects that do not decode)
 *   warnings_total{rule}                        reviews warned per rule
 *   http_errors_total{code}                     requests refused before a decision
 *   audit_errors_total, audit_lost_total, audit_reopens_total{result}, audit_ok
 *   connections, connections_closed_total{reason}, incomplete_requests_total
 *   cert_reloads_total{result}, requests_in_flight
 *   review_duration_seconds{endpoint}           histogram: decode to response, audit included
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/serve.h"
#include "serve/serve_int.h"

#define RULE_SLOTS 64 /* gs_check_config arrays hold 64 rules */
#define SLOT_OTHER RULE_SLOTS /* unreadable objects, warnings not from a rule */

static const uint64_t bucket_ns[GS_METRICS_NBUCKETS] = {
    100000, 250000, 500000, 1000000, 2500000, 5000000,
    10000000, 25000000, 50000000, 100000000, 250000000, 1000000000,
};
static const char *const bucket_le[GS_METRICS_NBUCKETS] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
    "0.01", "0.025", "0.05", "0.1", "0.25", "1",
};

static const int http_codes[] = {400, 401, 403, 404, 405, 408, 413, 415, 429, 500, 503};
static const char *const close_reasons[GS_CLOSE_REASON_COUNT_] = {
    "header_timeout", "body_timeout", "slow_body", "shed", "evicted", "unauthenticated",
};
#define NHTTP (sizeof http_codes / sizeof http_codes[0])

enum { V_ALLOWED = 0, V_DENIED, V_COUNT };
enum { U_SKIPPED = 0, U_LIMIT, U_COUNT };

struct gs_metrics {
    atomic_uint_fast64_t reviews[GS_ENDPOINT_COUNT_][V_COUNT];
    atomic_uint_fast64_t unchecked[GS_ENDPOINT_COUNT_][U_COUNT];
    atomic_uint_fast64_t patches;
    atomic_uint_fast64_t denials[RULE_SLOTS + 1];
    atomic_uint_fast64_t warnings[RULE_SLOTS + 1];
    atomic_uint_fast64_t buckets[GS_ENDPOINT_COUNT_][GS_METRICS_NBUCKETS + 1];
    atomic_uint_fast64_t sum_ns[GS_ENDPOINT_COUNT_];
    atomic_uint_fast64_t http_errors[NHTTP + 1]; /* last: any other code */
    atomic_uint_fast64_t audit_errors, audit_lost, audit_reopen_ok, audit_reopen_failed;
    atomic_int_fast64_t audit_failing; /* 0 = ok */
    atomic_uint_fast64_t reloads_ok, reloads_failed;
    atomic_int_fast64_t in_flight;
    atomic_int_fast64_t connections;
    atomic_uint_fast64_t closed[GS_CLOSE_REASON_COUNT_];
    atomic_uint_fast64_t incomplete;
};

gs_metrics *gs_metrics_new(void)
{
    gs_metrics *m = malloc(sizeof *m);
    if (!m)
        return NULL;
    /* the counters are lock-free integers: all-zero bytes are their zero */
    memset(m, 0, sizeof *m);
    return m;
}

void gs_metrics_free(gs_metrics *m) { free(m); }

static void inc(atomic_uint_fast64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }
static uint64_t get(const atomic_uint_fast64_t *c)
{
    return atomic_load_explicit((atomic_uint_fast64_t *)c, memory_order_relaxed);
}

void gs_metrics_observe_review(gs_metrics *m, const gs_review *rv, uint64_t duration_ns)
{
    if (!m || !rv)
        return;
    int ep = rv->endpoint == GS_ENDPOINT_MUTATE ? GS_ENDPOINT_MUTATE : GS_ENDPOINT_VALIDATE;
    inc(&m->reviews[ep][rv->allowed ? V_ALLOWED : V_DENIED]);
    if (rv->patch)
        inc(&m->patches);
    if (rv->skipped)
        inc(&m->unchecked[ep][U_SKIPPED]);
    else if (rv->object_error && rv->allowed)
        inc(&m->unchecked[ep][U_LIMIT]);
    /* per rule, once per review */
    uint64_t denied_rules = 0, warned_rules = 0;
    bool denied_other = !rv->allowed && rv->object_error, warned_other = false;
    for (uint32_t i = 0; i < rv->nfindings; i++) {
        const gs_review_finding *f = &rv->findings[i];
        if (f->suppressed)
            continue;
        int32_t r = f->rule_index;
        bool known = r >= 0 && r < RULE_SLOTS;
        if (f->severity == GS_SEV_ERROR && !rv->allowed) {
            if (known)
                denied_rules |= 1ull << r;
            else
                denied_other = true;
        } else if (f->severity == GS_SEV_WARNING) {
            if (known)
                warned_rules |= 1ull << r;
            else
                warned_other = true;
        }
    }
    if (rv->object_error && rv->allowed)
        warned_other = true;
    for (int r = 0; r < RULE_SLOTS; r++) {
        if (denied_rules >> r & 1)
            inc(&m->denials[r]);
        if (warned_rules >> r & 1)
            inc(&m->warnings[r]);
    }
    if (denied_other)
        inc(&m->denials[SLOT_OTHER]);
    if (warned_other)
        inc(&m->warnings[SLOT_OTHER]);
    int b = 0;
    while (b < GS_METRICS_NBUCKETS && duration_ns > bucket_ns[b])
        b++;
    inc(&m->buckets[ep][b]);
    atomic_fetch_add_explicit(&m->sum_ns[ep], duration_ns, memory_order_relaxed);
}

void gs_metrics_observe_http_error(gs_metrics *m, int http_code)
{
    if (!m)
        return;
    size_t i = 0;
    while (i < NHTTP && http_codes[i] != http_code)
        i++;
    inc(&m->http_errors[i]);
}

void gs_metrics_observe_audit_error(gs_metrics *m)
{
    if (m)
        inc(&m->audit_errors);
}

void gs_metrics_observe_audit_lost(gs_metrics *m)
{
    if (m)
        inc(&m->audit_lost);
}

void gs_metrics_observe_audit_reopen(gs_metrics *m, bool ok)
{
    if (m)
        inc(ok ? &m->audit_reopen_ok : &m->audit_reopen_failed);
}

void gs_metrics_set_audit_ok(gs_metrics *m, bool ok)
{
    if (m)
        atomic_store_explicit(&m->audit_failing, ok ? 0 : 1, memory_order_relaxed);
}

void gs_metrics_observe_conn_closed(gs_metrics *m, gs_conn_close_reason why)
{
    if (m && (unsigned)why < GS_CLOSE_REASON_COUNT_)
        inc(&m->closed[why]);
}

void gs_metrics_set_connections(gs_metrics *m, int64_t delta)
{
    if (m)
        atomic_fetch_add_explicit(&m->connections, delta, memory_order_relaxed);
}

void gs_metrics_observe_incomplete_request(gs_metrics *m)
{
    if (m)
        inc(&m->incomplete);
}

void gs_metrics_observe_cert_reload(gs_metrics *m, bool ok)
{
    if (m)
        inc(ok ? &m->reloads_ok : &m->reloads_failed);
}

void gs_metrics_set_in_flight(gs_metrics *m, int64_t delta)
{
    if (m)
        atomic_fetch_add_explicit(&m->in_flight, delta, memory_order_relaxed);
}

static void header(gs_strbuf *sb, const char *name, const char *type, const char *help)
{
    gs_strbuf_printf(sb, "# HELP gpusched_webhook_%s %s\n# TYPE gpusched_webhook_%s %s\n", name, help,
                     name, type);
}

static void rule_series(gs_strbuf *sb, const char *name, const atomic_uint_fast64_t *counts,
                        const gs_rule_info *rules, uint32_t nrules, const char *other)
{
    for (uint32_t r = 0; r < nrules && r < RULE_SLOTS; r++)
        gs_strbuf_printf(sb, "gpusched_webhook_%s{rule=\"%s\"} %llu\n", name, rules[r].id,
                         (unsigned long long)get(&counts[r]));
    gs_strbuf_printf(sb, "gpusched_webhook_%s{rule=\"%s\"} %llu\n", name, other,
                     (unsigned long long)get(&counts[SLOT_OTHER]));
}

void gs_metrics_render(const gs_metrics *m, gs_strbuf *sb)
{
    static const char *const verdicts[V_COUNT] = {"allowed", "denied"};
    static const char *const unchecked[U_COUNT] = {"skipped", "limit"};
    uint32_t nrules = 0;
    const gs_rule_info *rules = gs_rules(&nrules);
    if (!rules)
        nrules = 0;

    header(sb, "reviews_total", "counter", "Admission reviews answered, by endpoint and verdict.");
    for (int ep = 0; ep < GS_ENDPOINT_COUNT_; ep++)
        for (int v = 0; v < V_COUNT; v++)
            gs_strbuf_printf(sb, "gpusched_webhook_reviews_total{endpoint=\"%s\",verdict=\"%s\"} %llu\n",
                             gs_review_endpoint_name((gs_review_endpoint)ep), verdicts[v],
                             (unsigned long long)get(&m->reviews[ep][v]));
    header(sb, "patches_total", "counter", "Mutating reviews answered with a JSONPatch.");
    gs_strbuf_printf(sb, "gpusched_webhook_patches_total %llu\n", (unsigned long long)get(&m->patches));
    header(sb, "unchecked_total", "counter",
           "Reviews allowed without running the rules (DELETE, subresources, webhook limits).");
    for (int ep = 0; ep < GS_ENDPOINT_COUNT_; ep++)
        for (int u = 0; u < U_COUNT; u++)
            gs_strbuf_printf(sb, "gpusched_webhook_unchecked_total{endpoint=\"%s\",reason=\"%s\"} %llu\n",
                             gs_review_endpoint_name((gs_review_endpoint)ep), unchecked[u],
                             (unsigned long long)get(&m->unchecked[ep][u]));
    header(sb, "denials_total", "counter",
           "Denied reviews by rule (a review denied by two rules counts for both).");
    rule_series(sb, "denials_total", m->denials, rules, nrules, "unreadable");
    header(sb, "warnings_total", "counter", "Reviews answered with warnings, by rule.");
    rule_series(sb, "warnings_total", m->warnings, rules, nrules, "other");
    header(sb, "http_errors_total", "counter", "Requests refused with an HTTP error status, by code.");
    for (size_t i = 0; i < NHTTP; i++)
        gs_strbuf_printf(sb, "gpusched_webhook_http_errors_total{code=\"%d\"} %llu\n", http_codes[i],
                         (unsigned long long)get(&m->http_errors[i]));
    gs_strbuf_printf(sb, "gpusched_webhook_http_errors_total{code=\"other\"} %llu\n",
                     (unsigned long long)get(&m->http_errors[NHTTP]));
    header(sb, "audit_errors_total", "counter", "Decisions whose audit line could not be made durable.");
    gs_strbuf_printf(sb, "gpusched_webhook_audit_errors_total %llu\n",
                     (unsigned long long)get(&m->audit_errors));
    header(sb, "audit_lost_total", "counter",
           "Decisions answered without a durable audit line (--audit-failure ignore).");
    gs_strbuf_printf(sb, "gpusched_webhook_audit_lost_total %llu\n", (unsigned long long)get(&m->audit_lost));
    header(sb, "audit_reopens_total", "counter",
           "Reopens of a failing audit log by the server, by result.");
    gs_strbuf_printf(sb, "gpusched_webhook_audit_reopens_total{result=\"ok\"} %llu\n",
                     (unsigned long long)get(&m->audit_reopen_ok));
    gs_strbuf_printf(sb, "gpusched_webhook_audit_reopens_total{result=\"error\"} %llu\n",
                     (unsigned long long)get(&m->audit_reopen_failed));
    header(sb, "audit_ok", "gauge", "1 while the audit log takes lines, 0 while it fails.");
    gs_strbuf_printf(sb, "gpusched_webhook_audit_ok %d\n",
                     atomic_load_explicit((atomic_int_fast64_t *)&m->audit_failing, memory_order_relaxed) ? 0
                                                                                                           : 1);
    header(sb, "connections", "gauge", "Open client connections.");
    gs_strbuf_printf(sb, "gpusched_webhook_connections %lld\n",
                     (long long)atomic_load_explicit((atomic_int_fast64_t *)&m->connections,
                                                     memory_order_relaxed));
    header(sb, "connections_closed_total", "counter",
           "Connections the server closed on its own (deadlines, minimum rate, shedding), by reason.");
    for (int r = 0; r < GS_CLOSE_REASON_COUNT_; r++)
        gs_strbuf_printf(sb, "gpusched_webhook_connections_closed_total{reason=\"%s\"} %llu\n", close_reasons[r],
                         (unsigned long long)get(&m->closed[r]));
    header(sb, "incomplete_requests_total", "counter",
           "Requests refused by the HTTP layer before the webhook saw them (malformed HTTP) or "
           "abandoned by the client before their headers ended.");
    gs_strbuf_printf(sb, "gpusched_webhook_incomplete_requests_total %llu\n",
                     (unsigned long long)get(&m->incomplete));
    header(sb, "cert_reloads_total", "counter", "TLS certificate reloads, by result.");
    gs_strbuf_printf(sb, "gpusched_webhook_cert_reloads_total{result=\"ok\"} %llu\n",
                     (unsigned long long)get(&m->reloads_ok));
    gs_strbuf_printf(sb, "gpusched_webhook_cert_reloads_total{result=\"error\"} %llu\n",
                     (unsigned long long)get(&m->reloads_failed));
    header(sb, "requests_in_flight", "gauge", "Requests being received or processed now.");
    gs_strbuf_printf(sb, "gpusched_webhook_requests_in_flight %lld\n",
                     (long long)atomic_load_explicit((atomic_int_fast64_t *)&m->in_flight,
                                                     memory_order_relaxed));
    header(sb, "review_duration_seconds", "histogram",
           "Time from a complete request body to the response, audit log sync included.");
    for (int ep = 0; ep < GS_ENDPOINT_COUNT_; ep++) {
        const char *name = gs_review_endpoint_name((gs_review_endpoint)ep);
        uint64_t cum = 0;
        for (int b = 0; b <= GS_METRICS_NBUCKETS; b++) {
            cum += get(&m->buckets[ep][b]);
            gs_strbuf_printf(sb,
                             "gpusched_webhook_review_duration_seconds_bucket{endpoint=\"%s\",le=\"%s\"} %llu\n",
                             name, b < GS_METRICS_NBUCKETS ? bucket_le[b] : "+Inf",
                             (unsigned long long)cum);
        }
        uint64_t sum = get(&m->sum_ns[ep]);
        gs_strbuf_printf(sb, "gpusched_webhook_review_duration_seconds_sum{endpoint=\"%s\"} %llu.%09llu\n",
                         name, (unsigned long long)(sum / 1000000000u),
                         (unsigned long long)(sum % 1000000000u));
        gs_strbuf_printf(sb, "gpusched_webhook_review_duration_seconds_count{endpoint=\"%s\"} %llu\n",
                         name, (unsigned long long)cum);
    }
}

static void pheader(gs_strbuf *sb, const char *prefix, const char *name, const char *type, const char *help)
{
    gs_strbuf_printf(sb, "# HELP %s%s %s\n# TYPE %s%s %s\n", prefix, name, help, prefix, name, type);
}

void gs_metrics_render_transport(const gs_metrics *m, const char *prefix, gs_strbuf *sb)
{
    const char *p = prefix ? prefix : "gpusched_webhook_";
    pheader(sb, p, "http_errors_total", "counter", "Requests refused with an HTTP error status, by code.");
    for (size_t i = 0; i < NHTTP; i++)
        gs_strbuf_printf(sb, "%shttp_errors_total{code=\"%d\"} %llu\n", p, http_codes[i],
                         (unsigned long long)get(&m->http_errors[i]));
    gs_strbuf_printf(sb, "%shttp_errors_total{code=\"other\"} %llu\n", p,
                     (unsigned long long)get(&m->http_errors[NHTTP]));
    pheader(sb, p, "connections", "gauge", "Open client connections.");
    gs_strbuf_printf(sb, "%sconnections %lld\n", p,
                     (long long)atomic_load_explicit((atomic_int_fast64_t *)&m->connections,
                                                     memory_order_relaxed));
    pheader(sb, p, "connections_closed_total", "counter",
            "Connections the server closed on its own (deadlines, minimum rate, shedding), by reason.");
    for (int r = 0; r < GS_CLOSE_REASON_COUNT_; r++)
        gs_strbuf_printf(sb, "%sconnections_closed_total{reason=\"%s\"} %llu\n", p, close_reasons[r],
                         (unsigned long long)get(&m->closed[r]));
    pheader(sb, p, "incomplete_requests_total", "counter",
            "Requests refused by the HTTP layer before the server saw them (malformed HTTP) or "
            "abandoned by the client before their headers ended.");
    gs_strbuf_printf(sb, "%sincomplete_requests_total %llu\n", p, (unsigned long long)get(&m->incomplete));
    pheader(sb, p, "cert_reloads_total", "counter", "TLS certificate reloads, by result.");
    gs_strbuf_printf(sb, "%scert_reloads_total{result=\"ok\"} %llu\n", p, (unsigned long long)get(&m->reloads_ok));
    gs_strbuf_printf(sb, "%scert_reloads_total{result=\"error\"} %llu\n", p,
                     (unsigned long long)get(&m->reloads_failed));
    pheader(sb, p, "requests_in_flight", "gauge", "Requests being received or processed now.");
    gs_strbuf_printf(sb, "%srequests_in_flight %lld\n", p,
                     (long long)atomic_load_explicit((atomic_int_fast64_t *)&m->in_flight, memory_order_relaxed));
}
