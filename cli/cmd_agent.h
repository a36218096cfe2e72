/*
 * cmd_agent.h - `gpusched agent`: the node agent (docs/cli/agent.md).
 */
#ifndef GPUSCHED_CMD_AGENT_H
#define GPUSCHED_CMD_AGENT_H

extern const char cli_agent_usage[];
int gs_cmd_agent(int argc, char **argv);

#endif
