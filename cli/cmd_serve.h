/*
 * cmd_serve.h - `gpusched serve`: the admission webhook server (docs/cli/serve.md).
 * Register in the command table of main.c as
 *   {"serve", gs_cmd_serve, "admission webhook: validate GPU workloads, add GPU tolerations",
 *    cli_serve_usage}
 * argv[0] is the command's own name ("serve"); the return value is the exit status.
 */
#ifndef GPUSCHED_CLI_CMD_SERVE_H
#define GPUSCHED_CLI_CMD_SERVE_H

int gs_cmd_serve(int argc, char **argv);
extern const char cli_serve_usage[];

#endif
