/*
 * fuzz_read.c - libFuzzer target for the snapshot reader: arbitrary bytes through
 * gs_snapshot_read_buffer(), gs_snapshot_finish() and gs_snapshot_free().
 *
 * Limits are lowered so that one input cannot expand into millions of pods (the
 * expansion itself is linear and covered by the unit tests); everything else runs with
 * the defaults. Errors are expected and ignored; crashes, leaks and sanitizer reports
 * are the findings.
 *
 * Each input is read twice: alone, and with keep_going between two fixed files (a
 * skipped kind, a kind with a pod template, a DaemonSet, a node, a pod), so a failing
 * input exercises the roll-back of everything it added, and the second fixed file the
 * kind counts and duplicate warnings after it.
 */
#include <stddef.h>
#include <stdint.h>

#include "gpusched/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gs_read_opts opts = {.max_file_bytes = 1u << 20, .max_objects = 20000, .max_replicas = 1000};
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    if (gs_snapshot_read_buffer(&s, "fuzz.yaml", (const char *)data, size, &opts, &err) == 0)
        gs_snapshot_finish(&s, &err);
    gs_snapshot_free(&s);

    static const char around[] =
        "kind: ConfigMap\n---\napiVersion: x.io/v1\nkind: T\nspec: {template: {spec: {containers: []}}}\n"
        "---\nkind: DaemonSet\nmetadata: {name: ds}\nspec: {template: {spec: {containers: [{name: c}]}}}\n"
        "---\nkind: Node\nmetadata: {name: n}\n---\nkind: Pod\nmetadata: {name: p}\n";
    opts.keep_going = true;
    gs_snapshot_init(&s);
    if (gs_snapshot_read_buffer(&s, "a.yaml", around, sizeof around - 1, &opts, &err) == 0 &&
        gs_snapshot_read_buffer(&s, "fuzz.yaml", (const char *)data, size, &opts, &err) == 0 &&
        gs_snapshot_read_buffer(&s, "b.yaml", around, sizeof around - 1, &opts, &err) == 0)
        gs_snapshot_finish(&s, &err);
    gs_snapshot_free(&s);
    return 0;
}
