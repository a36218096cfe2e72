/*
 * cmd_check.h - `gpusched check`: the GPU configuration rules as a CI gate
 * (docs/cli/check.md). The command table in main.c refers to these two names.
 */
#ifndef GPUSCHED_CLI_CMD_CHECK_H
#define GPUSCHED_CLI_CMD_CHECK_H

/* Run the command: argv[0] is "check", the options and inputs follow. Returns the exit
 * status: 0 clean, 1 findings at or above --fail-on, 2 usage or input error,
 * 3 internal error. */
int gs_cmd_check(int argc, char **argv);

/* Help text printed by `gpusched check --help` and `gpusched help check`. */
extern const char cli_check_usage[];

#endif
