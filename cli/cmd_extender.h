/*
 * cmd_extender.h - `gpusched extender`: kube-scheduler's HTTP extender (docs/cli/extender.md).
 */
#ifndef GPUSCHED_CMD_EXTENDER_H
#define GPUSCHED_CMD_EXTENDER_H

extern const char cli_extender_usage[];
int gs_cmd_extender(int argc, char **argv);

#endif
