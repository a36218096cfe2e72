/*
 * args.h - the one command-line option parser of the gpusched CLI.
 *
 * Every command describes its options in a table of cli_opt and pulls them one at a time
 * with cli_args_next(). Accepted forms (GNU style, no permutation surprises):
 *   --name           a flag
 *   --name=VALUE     an option with a value
 *   --name VALUE     the same, value in the next argument
 *   -x               a flag with a one-letter alias
 *   -x VALUE, -xVALUE
 *   --               everything after it is positional
 *   -                positional (stdin)
 * Options and positionals may be mixed in any order. Numbers are parsed with
 * gs_parse_i64 (strict: no spaces, no trailing junk) through cli_parse_int().
 *
 * Ownership: cli_args borrows argv and the option table; values handed out point into argv.
 * Errors are GS_ERR_USAGE in a gs_error (never printed here); messages do not name the
 * command: cli_usage_error() adds it.
 */
#ifndef GPUSCHED_CLI_ARGS_H
#define GPUSCHED_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/error.h"

typedef struct cli_opt {
    const char *long_name; /* "output" for --output */
    char short_name;       /* 'o' for -o, or 0 */
    bool takes_value;
    int id;                /* returned by cli_args_next; must be >= 0 */
} cli_opt;

/* cli_args_next() results that are not option ids. */
#define CLI_ARG_END (-1)        /* no more arguments */
#define CLI_ARG_POSITIONAL (-2) /* *value is a positional argument */
#define CLI_ARG_ERROR (-3)      /* err filled (GS_ERR_USAGE) */

typedef struct cli_args {
    int argc;
    char **argv;
    int next;               /* index of the next argument to look at */
    bool positional_only;   /* after "--" */
    const cli_opt *opts;
    size_t nopts;
} cli_args;

/* Start parsing argv[first..argc). */
void cli_args_init(cli_args *a, int argc, char **argv, int first, const cli_opt *opts,
                   size_t nopts);
/* Next option id (>= 0, *value set for options that take one, else NULL),
 * CLI_ARG_POSITIONAL (*value = the argument), CLI_ARG_END or CLI_ARG_ERROR. */
int cli_args_next(cli_args *a, const char **value, gs_error *err);

/* Strict integer in [min, max]; `what` names the option in the message ("--seed"). */
int cli_parse_int(const char *what, const char *s, int64_t min, int64_t max, int64_t *out,
                  gs_error *err);
/* --listen: "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (every address: 0.0.0.0) into host
 * (host_cap bytes) and *port; `example` is shown for an IPv6 address without brackets
 * ("[::1]:8443"). GS_ERR_USAGE otherwise. */
int cli_parse_listen(const char *s, char *host, size_t host_cap, uint16_t *port, const char *example,
                     gs_error *err);
/* Index of s in the NULL-terminated list `choices`, or -1 with a usage error listing them. */
int cli_parse_choice(const char *what, const char *s, const char *const *choices, gs_error *err);

#endif
