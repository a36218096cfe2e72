/*
 * fuzz_cel.c - libFuzzer target for the CEL subset of DRA device selectors.
 *
 * Any bytes are compiled as an expression; a program that compiles is evaluated (as a value
 * and as a selector) against a fixed NVIDIA GPU device, once with the default cost budget
 * and once with a tiny one. Invariants: no crash; every error carries a known code, a
 * non-empty message and a position inside the expression (line >= 1, 1 <= col <= len + 1,
 * line <= number of lines); evaluation is deterministic; a program never costs more than
 * its budget plus one step.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/cel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const gs_error *err, const char *s, size_t len)
{
    if (err->code <= GS_OK || err->code >= GS_CODE_COUNT_ || err->msg[0] == '\0')
        abort();
    if (err->code == GS_ERR_LIMIT && len > GS_CEL_MAX_LEN)
        return;
    int lines = 1;
    for (size_t k = 0; k < len; k++)
        if (s[k] == '\n')
            lines++;
    if (err->line < 1 || err->line > lines || err->col < 1 || (size_t)err->col > len + 1)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const gs_cel_attr attrs[] = {
        {"gpu.nvidia.com", "type", GS_CEL_ATTR_STRING, 0, false, "gpu"},
        {"gpu.nvidia.com", "productName", GS_CEL_ATTR_STRING, 0, false, "NVIDIA H100 80GB HBM3"},
        {"gpu.nvidia.com", "cudaComputeCapability", GS_CEL_ATTR_VERSION, 0, false, "9.0.0"},
        {"gpu.nvidia.com", "driverVersion", GS_CEL_ATTR_VERSION, 0, false, "550.54.15-rc.1+x"},
        {"gpu.nvidia.com", "index", GS_CEL_ATTR_INT, 0, false, NULL},
        {"gpu.nvidia.com", "migCapable", GS_CEL_ATTR_BOOL, 0, true, NULL},
        {"resource.kubernetes.io", "pcieRoot", GS_CEL_ATTR_STRING, 0, false, "pci0000:00"},
    };
    gs_cel_capacity caps[2] = {{"gpu.nvidia.com", "memory", {0, GS_QF_BINARY_SI}},
                               {"gpu.nvidia.com", "multiprocessors", {0, GS_QF_DECIMAL_SI}}};
    caps[0].value = gs_quantity_from_int(80LL << 30, GS_QF_BINARY_SI);
    caps[1].value = gs_quantity_from_int(132, GS_QF_DECIMAL_SI);
    gs_cel_device dev = {.driver = "gpu.nvidia.com", .attrs = attrs,
                         .n_attrs = sizeof attrs / sizeof attrs[0], .caps = caps, .n_caps = 2};

    const char *s = (const char *)data;
    gs_cel_program *p = NULL;
    gs_error err;
    gs_error_clear(&err);
    if (gs_cel_compile(s, size, &p, &err) != 0) {
        if (p)
            abort();
        check_err(&err, s, size);
        return 0;
    }
    if (!p || gs_cel_node_count(p) == 0 || gs_cel_node_count(p) > GS_CEL_MAX_NODES)
        abort();
    gs_cel_result r1, r2;
    gs_error e1, e2;
    int rc1 = gs_cel_eval(p, &dev, &r1, &e1);
    int rc2 = gs_cel_eval(p, &dev, &r2, &e2);
    if (rc1 != rc2)
        abort();
    if (rc1 != 0) {
        check_err(&e1, s, size);
        if (strcmp(e1.msg, e2.msg) != 0 || e1.col != e2.col)
            abort();
    } else if (r1.type != r2.type || r1.b != r2.b || r1.i != r2.i || r1.cost != r2.cost ||
               r1.cost > GS_CEL_COST_LIMIT + 1) {
        abort();
    }
    bool m;
    if (gs_cel_select(p, &dev, &m, &err) != 0)
        check_err(&err, s, size);
    else if (rc1 != 0 || r1.type != GS_CEL_BOOL || m != r1.b)
        abort();
    gs_cel_set_cost_limit(p, 3);
    if (gs_cel_eval(p, &dev, &r2, &e2) != 0)
        check_err(&e2, s, size);
    else if (r2.cost > 4)
        abort();
    gs_cel_free(p);
    return 0;
}
