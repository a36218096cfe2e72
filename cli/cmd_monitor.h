/*
 * cmd_monitor.h - `gpusched monitor`: the live view of GPU pods, pools and devices, served
 * over HTTP from an informer cache (docs/cli/monitor.md). Registered in main.c's command
 * table; argv[0] is the command's own name ("monitor"); the return value is the exit status.
 */
#ifndef GPUSCHED_CLI_CMD_MONITOR_H
#define GPUSCHED_CLI_CMD_MONITOR_H

int gs_cmd_monitor(int argc, char **argv);
extern const char cli_monitor_usage[];

#endif
