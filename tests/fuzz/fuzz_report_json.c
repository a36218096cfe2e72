/*
 * fuzz_report_json.c - libFuzzer target for the reader of `gpusched simulate` JSON reports
 * (gs_report_read_json, what `simulate merge` reads from the shards).
 *
 * Every input is read as one shard. Rejected inputs must fail with an input error code
 * (parse, invalid, limit). Accepted ones must go through every writer (JSON, the CSV files,
 * HTML), and the JSON written must read back and write again to the same bytes; merging
 * must either succeed or report missing or duplicate runs as invalid input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_code(const gs_error *err)
{
    if (err->code != GS_ERR_PARSE && err->code != GS_ERR_INVALID && err->code != GS_ERR_LIMIT)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20)
        return 0;
    gs_sim_report rep;
    gs_sim_report_init(&rep);
    gs_error err;
    gs_error_clear(&err);
    if (gs_report_read_json(&rep, "fuzz.json", (const char *)data, size, &err) != 0) {
        check_code(&err);
        gs_sim_report_free(&rep);
        return 0;
    }
    gs_strbuf j1 = GS_STRBUF_INIT, other = GS_STRBUF_INIT;
    gs_report_json(&rep, &j1);
    for (int w = 0; w < 3; w++)
        gs_report_csv(&rep, (gs_fgd_csv)w, &other);
    gs_report_csv_fail(&rep, &other);
    gs_report_csv_pending(&rep, &other);
    gs_report_html(&rep, "fuzz", &other);
    if (j1.oom || other.oom)
        abort();

    gs_sim_report back;
    gs_sim_report_init(&back);
    if (gs_report_read_json(&back, "again.json", j1.buf, j1.len, &err) != 0)
        abort(); /* what we write must read back */
    gs_strbuf j2 = GS_STRBUF_INIT;
    gs_report_json(&back, &j2);
    if (j1.len != j2.len || memcmp(j1.buf, j2.buf, j1.len) != 0)
        abort();
    if (gs_report_merge_finish(&back, &err) != 0 && err.code != GS_ERR_INVALID)
        abort();

    gs_strbuf_free(&j1);
    gs_strbuf_free(&j2);
    gs_strbuf_free(&other);
    gs_sim_report_free(&back);
    gs_sim_report_free(&rep);
    return 0;
}
