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
 *
 * Then through a pipe (read.c parse_stream: the window of map_int.h, the JSON List items
 * streamed with drops between them), each read asking for 1 to 8 bytes (the last byte of
 * the input picks): when the pipe read succeeds, the read from memory succeeds too, with
 * the same pods and nodes at the same positions. (Errors may differ: a pipe is checked
 * as it arrives, and a List's kind is not known before its items.)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpusched/kube.h"
#include "util/map_int.h"

static void fingerprint(const gs_snapshot *s, char *out, size_t cap)
{
    size_t n = 0;
    n += (size_t)snprintf(out + n, cap - n, "%zu %zu %u|", s->pods.n, s->nodes.n, s->nskipped);
    for (size_t i = 0; i < s->pods.n && n + 100 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s@%u:%u ", s->pods.v[i].meta.name, s->pods.v[i].meta.src.line,
                              s->pods.v[i].meta.src.col);
    for (size_t i = 0; i < s->nodes.n && n + 100 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s@%u:%u ", s->nodes.v[i].meta.name,
                              s->nodes.v[i].meta.src.line, s->nodes.v[i].meta.src.col);
}

static void through_a_pipe(const uint8_t *data, size_t size)
{
    int fd[2];
    if (size == 0 || size > 60000 || pipe(fd) != 0)
        return;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd[1], data + off, size - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fd[1]);
    if (off < size) {
        close(fd[0]);
        return;
    }
    gs_read_opts opts = {.max_file_bytes = 1u << 20, .max_objects = 20000, .max_replicas = 1000};
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fd[0]);
    gs__window_chunk = 1 + data[size - 1] % 8;
    gs_snapshot s;
    gs_error err;
    gs_snapshot_init(&s);
    int rc = gs_snapshot_read_path(&s, path, &opts, &err);
    gs__window_chunk = 0;
    close(fd[0]);
    static char f1[8192], f2[8192];
    if (rc == 0)
        fingerprint(&s, f1, sizeof f1);
    gs_snapshot_free(&s);
    if (rc != 0)
        return;
    gs_snapshot_init(&s);
    int rc2 = gs_snapshot_read_buffer(&s, path, (const char *)data, size, &opts, &err);
    if (rc2 == 0)
        fingerprint(&s, f2, sizeof f2);
    gs_snapshot_free(&s);
    if (rc2 != 0 || strcmp(f1, f2) != 0) {
        fprintf(stderr, "pipe read: %s\nmemory read (rc %d): %s\n", f1, rc2, rc2 ? err.msg : f2);
        abort();
    }
}

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
    through_a_pipe(data, size);
    return 0;
}
