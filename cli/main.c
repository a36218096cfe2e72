/*
 * main.c - the gpusched command: the one command table, dispatch, global options, and the
 * helpers every command shares (error reporting, reading inputs, writing output).
 *
 * Dispatch: `gpusched [--version | --help | -h] <command> [args]`. The command table is
 * the only place that knows the commands; `gpusched help [command]` and the command list
 * in the usage are generated from it. After the command returns, stdout is flushed and
 * checked, so a full disk or a closed pipe is an error (exit 2) and never a silent
 * truncation.
 */
#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_check.h"
#include "cmd_mig.h"
#include "cmd_monitor.h"
#include "cmd_extender.h"
#include "cmd_agent.h"
#include "cmd_serve.h"
#include "cmd_simulate.h"

static int cmd_help(int argc, char **argv);

static const char help_usage[] =
    "usage: gpusched help [COMMAND]\n"
    "\n"
    "Show the list of commands, or the help of one command (the same text as\n"
    "'gpusched COMMAND --help').\n";

static const cli_command commands[] = {
    {"schedule", cmd_schedule, "place pending pods on the nodes of a cluster snapshot",
     cli_schedule_usage},
    {"explain", cmd_explain,
     "why GPU pods are pending, the smallest fixes, GPU node hygiene and allocation",
     cli_explain_usage},
    {"simulate", gs_cmd_simulate,
     "replay a trace under several policies: pending time, allocation, fragmentation",
     cli_simulate_usage},
    {"check", gs_cmd_check, "CI gate: refuse GPU misconfigurations in manifests (text, JSON, SARIF, JUnit)",
     cli_check_usage},
    {"mig", gs_cmd_mig, "MIG profile catalog, layout validation and planning from batch shapes",
     cli_mig_usage},
    {"serve", gs_cmd_serve, "the admission webhook: the check rules at the API server (HTTPS)",
     cli_serve_usage},
    {"monitor", gs_cmd_monitor,
     "live GPU metrics of a cluster: pending GPU pods, occupancy, hygiene, idle GPUs",
     cli_monitor_usage},
    {"extender", gs_cmd_extender,
     "kube-scheduler HTTP extender: fractional GPUs and MIG placed on devices, recorded on pods",
     cli_extender_usage},
    {"agent", gs_cmd_agent,
     "the node agent: NVML, a kubelet device plugin with health, GFD labels, DCGM metrics",
     cli_agent_usage},
    {"help", cmd_help, "show the help of a command", help_usage},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void main_usage(FILE *out)
{
    fputs("usage: gpusched [--version] [--help] COMMAND [ARGS]\n"
          "\n"
          "Schedule pods on Kubernetes GPU nodes offline, with kube-scheduler's semantics.\n"
          "\n"
          "Commands:\n",
          out);
    size_t w = 0;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strlen(commands[i].name) > w)
            w = strlen(commands[i].name);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-*s  %s\n", (int)w, commands[i].name, commands[i].summary);
    fputs("\n"
          "Run 'gpusched help COMMAND' or 'gpusched COMMAND --help' for the options of a "
          "command.\n"
          "\n"
          "Exit status: 0 success, 1 the command found problems (pods not placed, pending\n"
          "GPU pods), 2 usage or input error, 3 internal error.\n",
          out);
}

static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2 || argv[1][0] == '-') {
        if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
            return cli_print_usage(help_usage);
        gs_error err;
        gs_fail(&err, GS_ERR_USAGE, "expected at most one command name");
        return cli_usage_error("help", &err);
    }
    const cli_command *cmd = find_command(argv[1]);
    if (!cmd) {
        cli_eprintf("gpusched: error: unknown command '%s' (see 'gpusched --help')\n", argv[1]);
        return CLI_EXIT_USAGE;
    }
    if (!cmd->usage) { /* the command prints its own help */
        char *hargv[] = {(char *)cmd->name, "--help", NULL};
        return cmd->fn(2, hargv);
    }
    return cli_print_usage(cmd->usage);
}

/* ---------------------------------------------------------------- shared helpers */
void cli_eprintf(const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *text = small;
    if ((size_t)n >= sizeof small) {
        text = malloc((size_t)n + 1);
        if (!text) {
            text = small; /* the first 1023 bytes */
            n = (int)sizeof small - 1;
        } else {
            va_start(ap, fmt);
            vsnprintf(text, (size_t)n + 1, fmt, ap);
            va_end(ap);
        }
    }
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_text_lines(&sb, text, (size_t)n);
    fputs(sb.oom ? "gpusched: out of memory\n" : gs_strbuf_cstr(&sb), stderr);
    gs_strbuf_free(&sb);
    if (text != small)
        free(text);
}

int cli_report_error(const gs_error *err)
{
    char buf[GS_ERR_FILE_MAX + GS_ERR_PATH_MAX + GS_ERR_MSG_MAX + 64];
    gs_error_format(err, buf, sizeof buf);
    /* the message quotes file names and values from the input: one line, escaped */
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_strbuf_text(&sb, buf);
    fprintf(stderr, "gpusched: %s\n", sb.oom ? "error (out of memory while formatting it)" : gs_strbuf_cstr(&sb));
    gs_strbuf_free(&sb);
    return gs_code_exit_status(err->code);
}

int cli_usage_error(const char *command, const gs_error *err)
{
    gs_error e = *err;
    if (!e.path[0] && !e.file[0])
        gs_error_prefix_path(&e, command); /* "error: schedule: unknown option ..." */
    cli_report_error(&e);
    fprintf(stderr, "see 'gpusched %s --help'\n", command);
    return CLI_EXIT_USAGE;
}

void cli_server_malloc_tune(void)
{
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
    /* glibc gives every thread that allocates at once an arena of its own (up to 8 per
     * core), each keeping its freed memory: with 16 HTTP workers that was ten arenas of
     * about 8 MiB resident each, most of the server's RSS (docs/performance.md). The
     * servers' allocations are short (a request's arena) and the shared state is read
     * under its own locks, so two arenas do not serialize the work that matters. */
    mallopt(M_ARENA_MAX, 2);
#endif
}

void cli_daemon_signals(sigset_t *set, bool hup)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    if (hup)
        sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
    cli_server_malloc_tune();
}

int cli_print_usage(const char *usage)
{
    fputs(usage, stdout);
    return CLI_EXIT_OK;
}

void cli_print_read_notes(const gs_snapshot *s, bool verbose)
{
    /* file names, object names, kinds and messages come from the input: escaped */
    gs_strbuf sb = GS_STRBUF_INIT;
    for (size_t i = 0; i < s->warnings.n; i++) {
        const gs_read_issue *w = &s->warnings.v[i];
        gs_strbuf_puts(&sb, "gpusched: warning: ");
        gs_strbuf_text(&sb, w->src.file);
        if (w->src.line) { /* a live cluster's objects have no position */
            gs_strbuf_printf(&sb, ":%u", w->src.line);
            if (w->src.col)
                gs_strbuf_printf(&sb, ":%u", w->src.col);
        }
        gs_strbuf_puts(&sb, ": ");
        gs_strbuf_text(&sb, w->object);
        gs_strbuf_puts(&sb, w->object[0] ? ": " : "");
        gs_strbuf_text(&sb, w->message);
        gs_strbuf_putc(&sb, '\n');
    }
    if (s->ntemplated > 0) {
        gs_strbuf_printf(&sb, "gpusched: note: %u object%s of kinds the reader does not expand carr%s pod templates "
                              "(their pods are neither checked nor scheduled):",
                         s->ntemplated, s->ntemplated == 1 ? "" : "s", s->ntemplated == 1 ? "ies" : "y");
        for (size_t i = 0; i < s->templated.n; i++) {
            gs_strbuf_puts(&sb, i ? ", " : " ");
            gs_strbuf_text(&sb, s->templated.v[i].kind);
            gs_strbuf_printf(&sb, " (%u)", s->templated.v[i].count);
        }
        gs_strbuf_putc(&sb, '\n');
    }
    if (verbose && s->nskipped > 0) {
        gs_strbuf_printf(&sb, "skipped %u object%s of unknown kinds:", s->nskipped, s->nskipped == 1 ? "" : "s");
        for (size_t i = 0; i < s->skipped.n; i++) {
            gs_strbuf_puts(&sb, i ? ", " : " ");
            gs_strbuf_text(&sb, s->skipped.v[i].kind);
            gs_strbuf_printf(&sb, " (%u)", s->skipped.v[i].count);
        }
        gs_strbuf_putc(&sb, '\n');
    }
    fputs(sb.oom ? "gpusched: warning: out of memory formatting the reader's notes\n" : gs_strbuf_cstr(&sb), stderr);
    gs_strbuf_free(&sb);
}

bool cli_ert(const gs_snapshot *s, int flag)
{
    if (flag >= 0)
        return flag != 0;
    const gs_node *n = gs_ert_implied_by(s);
    if (!n)
        return false;
    cli_eprintf(
            "gpusched: note: node %s is a GKE node: ExtendedResourceToleration assumed on (GKE runs it: pods "
            "asking for nvidia.com/gpu get a toleration for GKE's nvidia.com/gpu=present:NoSchedule taint); "
            "--no-extended-resource-toleration turns it off\n",
            n->meta.name);
    return true;
}

int cli_read_inputs(gs_snapshot *s, const char *const *paths, size_t npaths, const gs_read_opts *opts,
                    bool verbose, gs_error *err)
{
    for (size_t i = 0; i < npaths; i++)
        if (gs_snapshot_read_path(s, paths[i], opts, err) != 0)
            return -1;
    if (gs_snapshot_finish(s, err) != 0)
        return -1;
    cli_print_read_notes(s, verbose);
    return 0;
}

int cli_read_snapshot(gs_snapshot *s, const char *const *paths, size_t npaths, bool verbose,
                      gs_error *err)
{
    return cli_read_inputs(s, paths, npaths, NULL, verbose, err);
}

int cli_write_text_output(const gs_strbuf *sb, const char *output_file, gs_error *err)
{
    if (sb->oom)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory while formatting the output");
    gs_strbuf safe = GS_STRBUF_INIT;
    gs_strbuf_text_lines(&safe, gs_strbuf_cstr(sb), sb->len);
    int rc = cli_write_output(&safe, output_file, err);
    gs_strbuf_free(&safe);
    return rc;
}

int cli_write_output(const gs_strbuf *sb, const char *output_file, gs_error *err)
{
    if (sb->oom)
        return gs_fail(err, GS_ERR_NOMEM, "out of memory while formatting the output");
    const char *data = gs_strbuf_cstr(sb);
    if (output_file)
        return gs_write_file_atomic(output_file, data, sb->len, err);
    if (sb->len && fwrite(data, 1, sb->len, stdout) != sb->len)
        return gs_error_set(err, GS_ERR_IO, "-", 0, 0, NULL, "cannot write standard output: %s",
                            strerror(errno));
    return 0;
}

/* ---------------------------------------------------------------- main */
static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "--version") == 0) {
        printf("%s %s\n", CLI_PROGRAM, CLI_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        main_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (first[0] == '-') {
        cli_eprintf("gpusched: error: unknown option '%s' (see 'gpusched --help')\n", first);
        return CLI_EXIT_USAGE;
    }
    const cli_command *cmd = find_command(first);
    if (!cmd) {
        cli_eprintf("gpusched: error: unknown command '%s' (see 'gpusched --help')\n", first);
        return CLI_EXIT_USAGE;
    }
    return cmd->fn(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    int status = dispatch(argc, argv);
    /* Output may still sit in stdio's buffer: a failed flush (ENOSPC, EIO, EPIPE with
     * SIGPIPE ignored) means the output is incomplete, which must not exit 0. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        fprintf(stderr, "gpusched: error: cannot write standard output: %s\n", strerror(e));
        if (status == CLI_EXIT_OK || status == CLI_EXIT_FOUND)
            status = CLI_EXIT_USAGE;
    }
    return status;
}
