/*
 * cli.h - the gpusched command: the command table and what commands share.
 *
 * main.c holds the one table of commands {name, fn, summary, usage} and dispatches to
 * them; each command lives in its own file cmd_<name>.c and exports `cmd_<name>` and
 * its help text `cli_<name>_usage` (printed by `gpusched <name> -h` and
 * `gpusched help <name>`, and copied into docs/cli/<name>.md).
 *
 * Conventions every command follows (docs/cli/gpusched.md):
 *  - primary output on stdout, built completely in a gs_strbuf first and written at once
 *    (or to --output-file atomically), so an error leaves stdout empty;
 *  - diagnostics on stderr, errors as "gpusched: " + gs_error_format();
 *  - exit status: CLI_EXIT_OK, CLI_EXIT_FOUND (the command found what it reports on:
 *    pods not placed, pending GPU pods, hygiene problems), CLI_EXIT_USAGE (usage and input
 *    errors, gs_code_exit_status), CLI_EXIT_INTERNAL.
 */
#ifndef GPUSCHED_CLI_H
#define GPUSCHED_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "gpusched/error.h"
#include "gpusched/kube.h"
#include "gpusched/util.h"

#define CLI_PROGRAM "gpusched"
#define CLI_VERSION "0.1.0" /* keep in step with project(VERSION) in CMakeLists.txt */

#define CLI_EXIT_OK 0
#define CLI_EXIT_FOUND 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_INTERNAL 3

/* A command gets its own name in argv[0] and its arguments after it; it returns the
 * process exit status. */
typedef int (*cli_command_fn)(int argc, char **argv);

typedef struct cli_command {
    const char *name;
    cli_command_fn fn;
    const char *summary; /* one line for the command list */
    const char *usage;   /* full help text, ends with a newline; NULL: the command prints
                            it itself for "COMMAND --help" */
} cli_command;

/* ---------------------------------------------------------------- commands */
int cmd_schedule(int argc, char **argv);
int cmd_explain(int argc, char **argv);
extern const char cli_schedule_usage[];
extern const char cli_explain_usage[];

/* ---------------------------------------------------------------- shared helpers (main.c) */
/* Print "gpusched: <formatted error>" on stderr; returns gs_code_exit_status(err->code). */
int cli_report_error(const gs_error *err);
/* A usage error of `command`: the message, then a pointer to its --help; returns 2. */
int cli_usage_error(const char *command, const gs_error *err);
/* Print a command's help text on stdout; returns 0. */
int cli_print_usage(const char *usage);
/* The long-running servers (serve, monitor, extender) call this before their threads
 * start: bounds the C library's per-thread malloc arenas (glibc: M_ARENA_MAX 2). */
void cli_server_malloc_tune(void);
/* The daemons (monitor, extender, agent), before any thread starts: SIGTERM, SIGINT and,
 * with hup, SIGHUP into *set and blocked (every thread inherits the mask; the main thread
 * takes them with sigwaitinfo/sigtimedwait), SIGPIPE ignored, cli_server_malloc_tune. */
void cli_daemon_signals(sigset_t *set, bool hup);

/* Read every input path (file, directory or "-") into s and finish it, then print the
 * reader's notes (cli_print_read_notes). s must be initialised by the caller and freed by
 * the caller, also on failure. */
int cli_read_snapshot(gs_snapshot *s, const char *const *paths, size_t npaths, bool verbose,
                      gs_error *err);
/* The same with read options (check reads with keep_going). */
int cli_read_inputs(gs_snapshot *s, const char *const *paths, size_t npaths, const gs_read_opts *opts,
                    bool verbose, gs_error *err);
/* On stderr: the reader's warnings (objects given twice), a note counting the objects of
 * kinds it does not expand that carry pod templates, and with verbose "skipped N objects
 * of unknown kinds: ...". */
void cli_print_read_notes(const gs_snapshot *s, bool verbose);
/* ExtendedResourceToleration for this run: `flag` 1 (--extended-resource-toleration or the
 * configuration said on), 0 (said off), -1 (said nothing: on when the input shows a GKE
 * cluster, with a note on stderr naming the node it was inferred from). */
bool cli_ert(const gs_snapshot *s, int flag);
/* Write the finished output: to output_file atomically when non-NULL, else to stdout
 * (write errors on stdout are caught when main flushes at exit). GS_ERR_NOMEM when the
 * buffer ran out of memory while it was built. */
int cli_write_output(const gs_strbuf *sb, const char *output_file, gs_error *err);
/* The same for human text: the document goes through gs_strbuf_text_lines first (no
 * control character, invalid UTF-8 or workflow command from the input reaches a terminal
 * or CI log). Text formatters also escape each value with gs_strbuf_text, so a newline in
 * a name cannot forge a line. */
int cli_write_text_output(const gs_strbuf *sb, const char *output_file, gs_error *err);
/* ---------------------------------------------------------------- live clusters (live_input.c)
 *
 * schedule, explain, check and simulate read a live cluster, like kubectl, when no input
 * files are given or when --kubeconfig/--context is given (docs/cli/gpusched.md#live-clusters).
 * Each puts CLI_LIVE_OPTS in its option table and hands those ids to cli_live_parse_opt. */
#define CLI_OPT_KUBECONFIG 1000
#define CLI_OPT_CONTEXT 1001
#define CLI_OPT_NAMESPACE 1002
#define CLI_OPT_ALL_NAMESPACES 1003
#define CLI_OPT_REQUEST_TIMEOUT 1004
#define CLI_LIVE_OPTS                                                                       \
    {"kubeconfig", 0, true, CLI_OPT_KUBECONFIG}, {"context", 0, true, CLI_OPT_CONTEXT},     \
        {"namespace", 'n', true, CLI_OPT_NAMESPACE},                                        \
        {"all-namespaces", 'A', false, CLI_OPT_ALL_NAMESPACES},                             \
        {"request-timeout", 0, true, CLI_OPT_REQUEST_TIMEOUT}

/* The help lines of the live options; ns_help: what -n does for the command (lines of
 * "                           ..." continued with \n). */
#define CLI_LIVE_USAGE(ns_help)                                                             \
    "Cluster (read through the API server when no files are given, as kubectl):\n"        \
    "      --kubeconfig FILE    the kubeconfig file (default: $KUBECONFIG, ~/.kube/config,\n" \
    "                           else the service account of the pod it runs in)\n"       \
    "      --context NAME       the kubeconfig context (default: its current-context)\n"  \
    "  -n, --namespace NS       " ns_help                                                  \
    "  -A, --all-namespaces     every namespace (the default)\n"                          \
    "      --request-timeout D  limit of each request (\"30s\", \"2m\"; default 60s; 0: none)\n"

typedef struct cli_live {
    const char *kubeconfig;   /* --kubeconfig FILE: that file only */
    const char *context;      /* --context NAME */
    const char *namespace_;   /* -n NS: report and act on NS's namespaced objects only; NULL: all */
    bool all_namespaces;      /* -A (the default, said explicitly) */
    bool has_timeout;
    int64_t timeout_s;        /* --request-timeout; 0: no limit */
    bool verbose;             /* a line on stderr before and after the read */
    bool quiet;               /* no line at all, not even on a terminal */
    bool used;                /* set by the read: the input was a live cluster */
    char source[320];         /* set by the read: "context NAME" or "in-cluster" */
} cli_live;

/* One of the CLI_LIVE_OPTS ids (with its value) into o: 1 handled, 0 not one of them,
 * -1 with a usage error. */
int cli_live_parse_opt(cli_live *o, int id, const char *value, gs_error *err);
/* The cluster's credentials as kubectl resolves them (--kubeconfig, --context, in-cluster),
 * with o->source set ("context NAME" or "in-cluster"); NULL with err. For the daemons
 * (monitor, extender) and the one-shot read alike. */
struct gs_live_config *cli_live_config_load(cli_live *o, gs_error *err);
/* After parsing: -n with -A, input files with --kubeconfig/--context (usage errors), and
 * with no input files at all, whether a cluster can be found (--kubeconfig, $KUBECONFIG,
 * ~/.kube/config, in-cluster): else the usage error "no input (give `what`, or ...)". */
int cli_live_validate(const cli_live *o, size_t ninputs, const char *what, gs_error *err);
/* Whether the read goes to the cluster: no input files. */
bool cli_live_wanted(const cli_live *o, size_t ninputs);
/* Read the cluster into s (the kinds of a snapshot, every namespace, objects without
 * positions, src.file o->source), not finished. Errors carry the API server's Status
 * message or the transport error (exit 2); nothing is read into s then. */
int cli_live_read(cli_live *o, gs_snapshot *s, const gs_read_opts *ro, gs_error *err);
/* The same objects into several snapshots (simulate's variants): one read of the cluster,
 * kept in *store for cli_live_store_snapshot, freed with gs_live_store_free. */
struct gs_live_store;
int cli_live_fetch(cli_live *o, struct gs_live_store **store, gs_error *err);
int cli_live_store_snapshot(const cli_live *o, struct gs_live_store *store, gs_snapshot *s,
                            const gs_read_opts *ro, gs_error *err);
/* Files when paths are given, else the cluster; then gs_snapshot_finish and the reader's
 * notes, as cli_read_inputs. */
int cli_read_cluster(cli_live *o, gs_snapshot *s, const char *const *paths, size_t npaths,
                     const gs_read_opts *ro, bool verbose, gs_error *err);
/* The daemons' API clients (monitor, extender). --request-timeout in milliseconds: dflt
 * when not given, a week for 0 (no limit). */
long cli_live_timeout_ms(const cli_live *o, long dflt);
/* A client of cfg with user agent "gpusched-COMPONENT/VERSION", each request bounded by
 * timeout_ms (0: none; connecting by the same, when under 10 s), max_retries and
 * retry_deadline_ms as gs_live_client_opts. NULL with err. */
struct gs_live_client *cli_live_client(struct gs_live_config *cfg, const char *component, long timeout_ms,
                                       int max_retries, long retry_deadline_ms, gs_error *err);
/* Every kind of `kinds` (GS_LIVE_KIND_BIT mask) listed once with limit=1, in kind order:
 * an unreachable server, refused credentials or a forbidden list fail here with the
 * server's words, before a daemon starts its threads. */
int cli_live_probe(struct gs_live_config *cfg, const char *component, uint32_t kinds, long timeout_ms,
                   gs_error *err);
/* -n: whether an object of namespace ns is reported ("" cluster-scoped: always). */
bool cli_live_ns_match(const cli_live *o, const char *ns);

/* fprintf(stderr, ...) with the formatted text passed through gs_strbuf_text_lines (for
 * diagnostics that quote input: file names, object names, values). */
void cli_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
