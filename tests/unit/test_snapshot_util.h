/* test_snapshot_util.h - helpers of the unit tests that build a snapshot from YAML text
 * (include after <cmocka.h>). */
#ifndef GPUSCHED_TEST_SNAPSHOT_UTIL_H
#define GPUSCHED_TEST_SNAPSHOT_UTIL_H

#include <stdint.h>
#include <string.h>

#include "gpusched/kube.h"

/* Read and finish a snapshot from YAML text, failing the test on any error. */
static inline void load(gs_snapshot *s, const char *yaml)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(s);
    if (gs_snapshot_read_buffer(s, "t.yaml", yaml, strlen(yaml), NULL, &err) ||
        gs_snapshot_finish(s, &err))
        fail_msg("read: %s", err.msg);
}

/* Snapshot index of the pod named `name` (the test fails when there is none). */
static inline uint32_t pod_index(const gs_snapshot *s, const char *name)
{
    for (uint32_t i = 0; i < s->pods.n; i++)
        if (strcmp(s->pods.v[i].meta.name, name) == 0)
            return i;
    fail_msg("no pod %s", name);
    return 0;
}

#endif
