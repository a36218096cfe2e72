/*
 * cmd_mig.h - `gpusched mig`: the MIG catalog, mig-parted file validation and the MIG
 * planner (docs/cli/mig.md). Register in the command table of main.c as
 *   {"mig", gs_cmd_mig, "MIG profiles, mig-parted validation and the MIG planner",
 *    cli_mig_usage}
 * argv[0] is the command's own name ("mig"); the return value is the exit status.
 */
#ifndef GPUSCHED_CLI_CMD_MIG_H
#define GPUSCHED_CLI_CMD_MIG_H

int gs_cmd_mig(int argc, char **argv);
extern const char cli_mig_usage[];

#endif
