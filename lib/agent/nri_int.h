/* nri_int.h - the NRI plugin's pieces for tests and the fuzz target (nri.h). */
#ifndef GS_AGENT_NRI_INT_H
#define GS_AGENT_NRI_INT_H

#include "agent/ttrpc_int.h"
#include "gpusched/nri.h"

/* gs_nri_start without the thread (gs_nri_stop frees it). */
int gs_nri_open(const gs_nri_opts *opts, gs_nri **out, gs_error *err);
/* The plugin service: Configure, Synchronize, CreateContainer, Shutdown, StateChange. */
void gs_nri_handle(void *nri, const gs_ttrpc_request *req, gs_ttrpc_reply *rep);

#endif
