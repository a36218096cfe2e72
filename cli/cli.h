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
/* fprintf(stderr, ...) with the formatted text passed through gs_strbuf_text_lines (for
 * diagnostics that quote input: file names, object names, values). */
void cli_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
