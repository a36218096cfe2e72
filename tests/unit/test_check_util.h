/*
 * test_check_util.h - helpers shared by the tests of lib/check (test_check_*.c): read
 * inline YAML into a snapshot, run the checker, look findings up by rule and object.
 * Header-only (static functions) so each test executable stays one file plus this.
 */
#ifndef GPUSCHED_TEST_CHECK_UTIL_H
#define GPUSCHED_TEST_CHECK_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpusched/check.h"

typedef struct checked {
    gs_snapshot snap;
    gs_check_result res;
} checked;

/* Read text (as file "in.yaml"), finish, check with cfg (NULL = defaults). */
static inline void check_text_cfg(checked *c, const char *text, const gs_check_config *cfg)
{
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&c->snap);
    int rc = gs_snapshot_read_buffer(&c->snap, "in.yaml", text, strlen(text), NULL, &err);
    if (rc == 0)
        rc = gs_snapshot_finish(&c->snap, &err);
    gs_check_config dflt;
    gs_check_config_defaults(&dflt);
    if (rc == 0)
        rc = gs_check_run(&c->snap, cfg ? cfg : &dflt, &c->res, &err);
    gs_check_config_free(&dflt);
    if (rc != 0) {
        char buf[1024];
        gs_error_format(&err, buf, sizeof buf);
        print_error("unexpected error: %s\n", buf);
    }
    assert_int_equal(rc, 0);
}

static inline void check_text(checked *c, const char *text)
{
    check_text_cfg(c, text, NULL);
}

static inline void checked_free(checked *c)
{
    gs_check_result_free(&c->res);
    gs_snapshot_free(&c->snap);
}

/* Findings of rule `id` (on object `name`, or any object when name is NULL). */
static inline uint32_t count_rule(const checked *c, const char *id, const char *name)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->res.nfindings; i++) {
        const gs_finding *f = &c->res.findings[i];
        if (!strcmp(f->rule->id, id) && (!name || !strcmp(f->name, name)))
            n++;
    }
    return n;
}

static inline const gs_finding *find_rule(const checked *c, const char *id, const char *name)
{
    for (uint32_t i = 0; i < c->res.nfindings; i++) {
        const gs_finding *f = &c->res.findings[i];
        if (!strcmp(f->rule->id, id) && (!name || !strcmp(f->name, name)))
            return f;
    }
    return NULL;
}

/* Print every finding (debugging a failed test). */
static inline void dump(const checked *c)
{
    for (uint32_t i = 0; i < c->res.nfindings; i++) {
        const gs_finding *f = &c->res.findings[i];
        print_message("  %s:%u:%u %s %s %s/%s: %s%s\n", f->src.file, f->src.line, f->src.col, f->rule->id,
                      gs_severity_name(f->severity), f->kind, f->name, f->message, f->suppressed ? " (suppressed)" : "");
    }
}

#define assert_rule(c, id, name, n)                                                                   \
    do {                                                                                              \
        if (count_rule((c), (id), (name)) != (uint32_t)(n))                                           \
            dump(c);                                                                                  \
        assert_int_equal(count_rule((c), (id), (name)), (n));                                         \
    } while (0)

/* Nodes used by many tests: a tainted 8x A100 node. */
#define NODE_A100_TAINTED                                                                             \
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: a100\n  labels:\n"                                \
    "    node.kubernetes.io/instance-type: p4d\n"                                                      \
    "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"                                               \
    "    nvidia.com/cuda.driver-version.full: 550.1\n"                                                  \
    "spec:\n  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"                   \
    "status:\n  allocatable: {cpu: \"96\", memory: 1Ti, pods: \"110\", nvidia.com/gpu: \"8\"}\n"

#define TOLERATE_GPU "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"

#endif
