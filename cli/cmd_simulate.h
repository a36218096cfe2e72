/*
 * cmd_simulate.h - `gpusched simulate`: replay a workload on a cluster with the engine,
 * or run the FGD paper's experiment, for several policies and seeds in parallel; what-if
 * overrides; text, JSON, CSV and HTML reports; shards and `simulate merge`
 * (docs/cli/simulate.md). Register in the command table of main.c as
 *   {"simulate", gs_cmd_simulate,
 *    "replay a workload on a cluster or run the FGD experiment; what-if and reports",
 *    cli_simulate_usage}
 * argv[0] is the command's own name ("simulate"); the return value is the exit status.
 */
#ifndef GPUSCHED_CLI_CMD_SIMULATE_H
#define GPUSCHED_CLI_CMD_SIMULATE_H

int gs_cmd_simulate(int argc, char **argv);
extern const char cli_simulate_usage[];

#endif
