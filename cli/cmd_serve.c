/*
 * cmd_serve.c - `gpusched serve --webhook`: runs the admission webhook of lib/serve
 * (serve.h) until SIGTERM or SIGINT, reloading the TLS certificate and reopening the
 * audit log on SIGHUP (docs/cli/serve.md).
 *
 * Signals: SIGTERM, SIGINT and SIGHUP are blocked before the server starts, so every
 * server thread inherits the mask and the signals are only ever taken by this thread in
 * sigwaitinfo(): no handler runs inside library code. SIGPIPE is ignored (a client that
 * hangs up mid-response must not kill the server).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "cli.h"
#include "cmd_serve.h"
#include "gpusched/check.h"
#include "gpusched/serve.h"

const char cli_serve_usage[] =
    "usage: gpusched serve --webhook [options]\n"
    "\n"
    "Run the Kubernetes admission webhook. POST /validate applies the check rules to\n"
    "each object (errors deny, warnings become AdmissionReview warnings); POST /mutate\n"
    "adds the GPU toleration to pods that request GPUs and, when configured, the default\n"
    "GPU PriorityClass. GET /healthz, /readyz and /metrics (Prometheus) are served too.\n"
    "SIGHUP reloads the TLS certificate and reopens the audit log. SIGTERM makes\n"
    "/readyz fail, keeps serving for the drain period, then stops accepting, finishes\n"
    "the requests in flight and exits 0 (SIGINT, or a second SIGTERM, skips the rest\n"
    "of the drain period).\n"
    "\n"
    "Options:\n"
    "      --webhook              serve the admission webhook (required)\n"
    "      --listen ADDR:PORT     address to listen on (default 0.0.0.0:8443; IPv6 as\n"
    "                             [::]:8443; port 0 picks a free port)\n"
    "      --tls-cert FILE        PEM certificate chain (with --tls-key; without both the\n"
    "                             server speaks plain HTTP, for tests only)\n"
    "      --tls-key FILE         PEM private key\n"
    "      --client-ca FILE       PEM CA bundle: /validate and /mutate answer only\n"
    "                             clients with a certificate it signed (mTLS; the API\n"
    "                             server's webhook client certificate); 401 otherwise\n"
    "      --config FILE          check configuration (CheckConfig YAML)\n"
    "      --gpu-priority-value N the value of the config's defaultGpuPriorityClass\n"
    "                             (required when that class is set)\n"
    "      --audit-log FILE       append one JSON line per decision, synced to disk\n"
    "                             before the response\n"
    "      --audit-failure MODE   when a line cannot be made durable: fail (default:\n"
    "                             answer 500, /readyz 503 until the log recovers) or\n"
    "                             ignore (answer anyway; the line is lost and counted)\n"
    "      --max-body BYTES       largest request body (default 1048576); larger: 413\n"
    "      --timeout SECONDS      idle connection timeout, and how long requests in\n"
    "                             flight may take to finish at stop (default 10)\n"
    "      --header-timeout SECONDS  a request's headers must arrive within this from\n"
    "                             its first byte (default 5)\n"
    "      --body-timeout SECONDS a request's body must arrive within this after its\n"
    "                             headers (default 10)\n"
    "      --body-budget BYTES  memory for all request bodies in flight together (default\n"
    "                             64 x --max-body, at least 64 MiB); when it is spent the\n"
    "                             slowest body is dropped for a faster one\n"
    "      --min-body-rate BYTES  a body must average this many bytes per second after\n"
    "                             its first 2 s (default 1024)\n"
    "      --drain-period SECONDS after SIGTERM, keep serving with /readyz failing for\n"
    "                             this long before closing the listener (default 10)\n"
    "      --threads N            worker threads (default: one per CPU)\n"
    "      --max-connections N    concurrent connections (default 1000; a reserve of\n"
    "                             1/16 more, at least 16, keeps health probes answered)\n"
    "      --max-connections-per-ip N  connections from one client address (default\n"
    "                             half of --max-connections)\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Exit status: 0 stopped by SIGTERM or SIGINT, 2 usage or startup error (bad\n"
    "certificate, address in use), 3 internal error.\n";

enum {
    OPT_HELP,
    OPT_WEBHOOK,
    OPT_LISTEN,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_CONFIG,
    OPT_PRIORITY_VALUE,
    OPT_AUDIT_LOG,
    OPT_MAX_BODY,
    OPT_TIMEOUT,
    OPT_THREADS,
    OPT_MAX_CONNECTIONS,
    OPT_CLIENT_CA,
    OPT_AUDIT_FAILURE,
    OPT_HEADER_TIMEOUT,
    OPT_BODY_TIMEOUT,
    OPT_MIN_BODY_RATE,
    OPT_BODY_BUDGET,
    OPT_DRAIN_PERIOD,
    OPT_MAX_CONN_PER_IP,
};

static const cli_opt serve_opts[] = {
    {"help", 'h', false, OPT_HELP},
    {"webhook", 0, false, OPT_WEBHOOK},
    {"listen", 0, true, OPT_LISTEN},
    {"tls-cert", 0, true, OPT_TLS_CERT},
    {"tls-key", 0, true, OPT_TLS_KEY},
    {"config", 0, true, OPT_CONFIG},
    {"gpu-priority-value", 0, true, OPT_PRIORITY_VALUE},
    {"audit-log", 0, true, OPT_AUDIT_LOG},
    {"max-body", 0, true, OPT_MAX_BODY},
    {"timeout", 0, true, OPT_TIMEOUT},
    {"threads", 0, true, OPT_THREADS},
    {"max-connections", 0, true, OPT_MAX_CONNECTIONS},
    {"client-ca", 0, true, OPT_CLIENT_CA},
    {"audit-failure", 0, true, OPT_AUDIT_FAILURE},
    {"header-timeout", 0, true, OPT_HEADER_TIMEOUT},
    {"body-timeout", 0, true, OPT_BODY_TIMEOUT},
    {"min-body-rate", 0, true, OPT_MIN_BODY_RATE},
    {"body-budget", 0, true, OPT_BODY_BUDGET},
    {"drain-period", 0, true, OPT_DRAIN_PERIOD},
    {"max-connections-per-ip", 0, true, OPT_MAX_CONN_PER_IP},
};

#define SERVE_HOST_MAX 64

typedef struct serve_args {
    bool webhook;
    char host[SERVE_HOST_MAX];
    uint16_t port;
    const char *tls_cert, *tls_key, *config, *audit_log, *client_ca;
    bool has_priority_value;
    int32_t priority_value;
    size_t max_body;
    size_t body_budget;
    unsigned timeout_s, threads, max_connections;
    unsigned header_timeout_s, body_timeout_s, min_body_rate, drain_period_s, max_conn_per_ip;
    bool audit_ignore;
} serve_args;

static int parse_listen(const char *s, serve_args *a, gs_error *err)
{
    return cli_parse_listen(s, a->host, sizeof a->host, &a->port, "[::1]:8443", err);
}

static int parse_args(int argc, char **argv, serve_args *a, bool *help, gs_error *err)
{
    cli_args it;
    cli_args_init(&it, argc, argv, 1, serve_opts, sizeof serve_opts / sizeof serve_opts[0]);
    snprintf(a->host, sizeof a->host, "0.0.0.0");
    a->port = 8443;
    a->max_body = GS_SERVE_MAX_BODY_DEFAULT;
    a->timeout_s = 10;
    a->header_timeout_s = 5;
    a->body_timeout_s = 10;
    a->min_body_rate = 1024;
    a->drain_period_s = 10;
    const char *value;
    int id;
    int64_t v;
    while ((id = cli_args_next(&it, &value, err)) != CLI_ARG_END) {
        switch (id) {
        case CLI_ARG_ERROR: return -1;
        case CLI_ARG_POSITIONAL:
            return gs_fail(err, GS_ERR_USAGE, "unexpected argument \"%s\"", value);
        case OPT_HELP: *help = true; return 0;
        case OPT_WEBHOOK: a->webhook = true; break;
        case OPT_LISTEN:
            if (parse_listen(value, a, err) != 0)
                return -1;
            break;
        case OPT_TLS_CERT: a->tls_cert = value; break;
        case OPT_TLS_KEY: a->tls_key = value; break;
        case OPT_CONFIG: a->config = value; break;
        case OPT_AUDIT_LOG: a->audit_log = value; break;
        case OPT_PRIORITY_VALUE:
            if (cli_parse_int("--gpu-priority-value", value, -2147483647 - 1, 1000000000, &v, err) != 0)
                return -1;
            a->has_priority_value = true;
            a->priority_value = (int32_t)v;
            break;
        case OPT_MAX_BODY:
            if (cli_parse_int("--max-body", value, 1024, 64 * 1024 * 1024, &v, err) != 0)
                return -1;
            a->max_body = (size_t)v;
            break;
        case OPT_TIMEOUT:
            if (cli_parse_int("--timeout", value, 1, 600, &v, err) != 0)
                return -1;
            a->timeout_s = (unsigned)v;
            break;
        case OPT_THREADS:
            if (cli_parse_int("--threads", value, 1, 64, &v, err) != 0)
                return -1;
            a->threads = (unsigned)v;
            break;
        case OPT_MAX_CONNECTIONS:
            if (cli_parse_int("--max-connections", value, 1, 100000, &v, err) != 0)
                return -1;
            a->max_connections = (unsigned)v;
            break;
        case OPT_CLIENT_CA: a->client_ca = value; break;
        case OPT_AUDIT_FAILURE:
            if (!strcmp(value, "fail"))
                a->audit_ignore = false;
            else if (!strcmp(value, "ignore"))
                a->audit_ignore = true;
            else
                return gs_fail(err, GS_ERR_USAGE, "--audit-failure: expected fail or ignore, got \"%s\"", value);
            break;
        case OPT_HEADER_TIMEOUT:
            if (cli_parse_int("--header-timeout", value, 1, 600, &v, err) != 0)
                return -1;
            a->header_timeout_s = (unsigned)v;
            break;
        case OPT_BODY_TIMEOUT:
            if (cli_parse_int("--body-timeout", value, 1, 600, &v, err) != 0)
                return -1;
            a->body_timeout_s = (unsigned)v;
            break;
        case OPT_BODY_BUDGET:
            if (cli_parse_int("--body-budget", value, 1024, (int64_t)1 << 40, &v, err) != 0)
                return -1;
            a->body_budget = (size_t)v;
            break;
        case OPT_MIN_BODY_RATE:
            if (cli_parse_int("--min-body-rate", value, 1, 1024 * 1024 * 1024, &v, err) != 0)
                return -1;
            a->min_body_rate = (unsigned)v;
            break;
        case OPT_DRAIN_PERIOD:
            if (cli_parse_int("--drain-period", value, 0, 600, &v, err) != 0)
                return -1;
            a->drain_period_s = (unsigned)v;
            break;
        case OPT_MAX_CONN_PER_IP:
            if (cli_parse_int("--max-connections-per-ip", value, 1, 100000, &v, err) != 0)
                return -1;
            a->max_conn_per_ip = (unsigned)v;
            break;
        default: return gs_fail(err, GS_ERR_INTERNAL, "unhandled option %d", id);
        }
    }
    if (!a->webhook)
        return gs_fail(err, GS_ERR_USAGE, "nothing to serve: give --webhook");
    if (!a->tls_cert != !a->tls_key)
        return gs_fail(err, GS_ERR_USAGE, "give both --tls-cert and --tls-key, or neither");
    if (a->client_ca && !a->tls_cert)
        return gs_fail(err, GS_ERR_USAGE, "--client-ca needs --tls-cert and --tls-key");
    return 0;
}

/* Server log lines quote request data (uids): control characters are written as \xNN
 * so that a request cannot forge log lines or drive the terminal. */
static void log_line(void *user, const char *line)
{
    (void)user;
    fputs("gpusched serve: ", stderr);
    for (const unsigned char *p = (const unsigned char *)line; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(stderr, "\\x%02x", *p);
        else
            fputc(*p, stderr);
    }
    fputc('\n', stderr);
}

static void report(const char *what, const gs_error *err)
{
    char buf[GS_ERR_FILE_MAX + GS_ERR_PATH_MAX + GS_ERR_MSG_MAX + 64];
    gs_error_format(err, buf, sizeof buf);
    fprintf(stderr, "gpusched serve: %s: %s\n", what, buf);
}

static void on_sighup(gs_server *srv, gs_audit *audit)
{
    gs_error err;
    gs_error_clear(&err);
    if (gs_server_tls(srv)) {
        if (gs_server_reload_tls(srv, &err) == 0)
            fprintf(stderr, "gpusched serve: SIGHUP: certificate reloaded\n");
        else
            report("SIGHUP: certificate not reloaded, keeping the old one", &err);
    }
    if (audit) {
        if (gs_audit_reopen(audit, &err) == 0)
            fprintf(stderr, "gpusched serve: SIGHUP: audit log reopened\n");
        else
            report("SIGHUP: audit log not reopened", &err);
    }
}

/* Wait for signals until SIGTERM or SIGINT; SIGHUP reloads. Returns the signal. */
static int run_until_stopped(gs_server *srv, gs_audit *audit, const sigset_t *set)
{
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(set, &si);
        if (sig < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "gpusched serve: sigwaitinfo: %s; stopping\n", strerror(errno));
            return SIGINT;
        }
        if (sig == SIGTERM || sig == SIGINT)
            return sig;
        if (sig == SIGHUP)
            on_sighup(srv, audit);
    }
}

/* The drain period: /readyz fails, everything else is served as before, so that the
 * endpoints controller and the API server move away before the listener closes.
 * SIGHUP still reloads; SIGINT or another SIGTERM ends the period early. */
static void drain_period(gs_server *srv, gs_audit *audit, const sigset_t *set, unsigned seconds)
{
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += seconds;
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left_ns = (long long)(end.tv_sec - now.tv_sec) * 1000000000LL + (end.tv_nsec - now.tv_nsec);
        if (left_ns <= 0)
            return;
        struct timespec wait = {(time_t)(left_ns / 1000000000LL), (long)(left_ns % 1000000000LL)};
        siginfo_t si;
        int sig = sigtimedwait(set, &si, &wait);
        if (sig == SIGHUP)
            on_sighup(srv, audit);
        else if (sig == SIGTERM || sig == SIGINT) {
            fprintf(stderr, "gpusched serve: %s during the drain period: stopping now\n",
                    sig == SIGTERM ? "SIGTERM" : "SIGINT");
            return;
        } else if (sig < 0 && errno != EINTR && errno != EAGAIN)
            return;
    }
}

int gs_cmd_serve(int argc, char **argv)
{
    serve_args a;
    memset(&a, 0, sizeof a);
    bool help = false;
    gs_error err;
    gs_error_clear(&err);
    if (parse_args(argc, argv, &a, &help, &err) != 0)
        return cli_usage_error("serve", &err);
    if (help)
        return cli_print_usage(cli_serve_usage);

    int status = CLI_EXIT_OK;
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    gs_audit *audit = NULL;
    gs_metrics *metrics = NULL;
    gs_server *srv = NULL;
    gs_arena arena;
    gs_arena_init(&arena, 4096);

    if (a.config && gs_check_config_read(&cfg, a.config, &err) != 0) {
        status = cli_report_error(&err);
        goto out;
    }
    if (cfg.default_gpu_priority_class && cfg.default_gpu_priority_class[0] && !a.has_priority_value) {
        gs_fail(&err, GS_ERR_USAGE,
                "defaultGpuPriorityClass \"%s\" needs --gpu-priority-value (the class's value): "
                "the API server resolves spec.priority before webhooks run, so the webhook "
                "sets both",
                cfg.default_gpu_priority_class);
        status = cli_usage_error("serve", &err);
        goto out;
    }
    if (a.audit_log && !(audit = gs_audit_open(a.audit_log, &err))) {
        status = cli_report_error(&err);
        goto out;
    }
    if (audit && gs_audit_repaired_bytes(audit))
        fprintf(stderr, "gpusched serve: audit log: cut a torn last line of %llu bytes (a write that never "
                        "completed; its review was never answered)\n",
                (unsigned long long)gs_audit_repaired_bytes(audit));
    metrics = gs_metrics_new();
    const char *ruleset = gs_audit_ruleset(&cfg, &arena);
    if (!metrics || !ruleset) {
        gs_fail(&err, GS_ERR_NOMEM, "out of memory");
        status = cli_report_error(&err);
        goto out;
    }
    gs_webhook wh;
    memset(&wh, 0, sizeof wh);
    wh.cfg = &cfg;
    wh.has_gpu_priority_value = a.has_priority_value;
    wh.gpu_priority_value = a.priority_value;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigset_t old_mask;
    pthread_sigmask(SIG_BLOCK, &set, &old_mask);
    cli_server_malloc_tune();
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, NULL);

    gs_serve_opts so;
    memset(&so, 0, sizeof so);
    so.host = a.host;
    so.port = a.port;
    so.tls_cert = a.tls_cert;
    so.tls_key = a.tls_key;
    so.client_ca = a.client_ca;
    so.max_body = a.max_body;
    so.body_budget = a.body_budget;
    so.timeout_s = a.timeout_s;
    so.header_timeout_s = a.header_timeout_s;
    so.body_timeout_s = a.body_timeout_s;
    so.min_body_rate = a.min_body_rate;
    so.threads = a.threads;
    so.max_connections = a.max_connections;
    so.max_connections_per_ip = a.max_conn_per_ip;
    so.audit_ignore_failures = a.audit_ignore;
    so.webhook = &wh;
    so.metrics = metrics;
    so.audit = audit;
    so.ruleset = ruleset;
    so.log = log_line;
    srv = gs_server_start(&so, &err);
    if (!srv) {
        pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
        status = cli_report_error(&err);
        goto out;
    }
    if (!a.tls_cert)
        fprintf(stderr, "gpusched serve: warning: no --tls-cert/--tls-key: serving plain HTTP "
                        "(the API server only calls webhooks over HTTPS)\n");
    bool v6 = strchr(a.host, ':') != NULL;
    fprintf(stderr, "gpusched serve: listening on %s://%s%s%s:%u (max body %zu bytes, timeout %us%s%s%s)\n",
            a.tls_cert ? "https" : "http", v6 ? "[" : "", a.host, v6 ? "]" : "",
            (unsigned)gs_server_port(srv), a.max_body, a.timeout_s, audit ? ", audit log " : "",
            audit ? a.audit_log : "", a.client_ca ? ", client certificates required" : "");
    fflush(stderr);

    int sig = run_until_stopped(srv, audit, &set);
    gs_server_set_unready(srv);
    if (sig == SIGTERM && a.drain_period_s) {
        fprintf(stderr, "gpusched serve: SIGTERM: /readyz fails; serving for the drain period of %us\n",
                a.drain_period_s);
        fflush(stderr);
        drain_period(srv, audit, &set, a.drain_period_s);
    }
    fprintf(stderr, "gpusched serve: %s: draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    unsigned left = gs_server_drain(srv, a.timeout_s * 1000u);
    if (left)
        fprintf(stderr, "gpusched serve: %u requests still in flight after %us; closing them\n", left,
                a.timeout_s);
    gs_server_stop(srv);
    srv = NULL;
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    fprintf(stderr, "gpusched serve: stopped\n");
out:
    gs_server_stop(srv);
    gs_audit_close(audit);
    gs_metrics_free(metrics);
    gs_arena_free(&arena);
    gs_check_config_free(&cfg);
    return status;
}
