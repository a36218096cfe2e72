/*
 * test_read_pipe.c - a pipe (`kubectl get pods -A -o json | gpusched explain -`) is read
 * through a window (map_int.h gs_window, yaml_tree.c gs_yt_parse_json_window, read.c
 * parse_stream): the same snapshot and the same errors, at the same positions, as the
 * same bytes read from memory, whatever the reads cut; a JSON List costs one item of
 * window, not the input.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpusched/kube.h"
#include "util/map_int.h"

typedef struct outcome {
    int rc;
    gs_error err;
    size_t pods, nodes, skipped;
    char names[4096]; /* "name@line:col " for every pod and node */
} outcome;

static void summarize(gs_snapshot *s, int rc, const gs_error *err, outcome *o)
{
    memset(o, 0, sizeof *o);
    o->rc = rc;
    if (rc)
        o->err = *err;
    o->pods = s->pods.n;
    o->nodes = s->nodes.n;
    o->skipped = s->nskipped;
    size_t n = 0;
    for (size_t i = 0; i < s->pods.n && n < sizeof o->names - 200; i++)
        n += (size_t)snprintf(o->names + n, sizeof o->names - n, "%s@%u:%u ", s->pods.v[i].meta.name,
                              s->pods.v[i].meta.src.line, s->pods.v[i].meta.src.col);
    for (size_t i = 0; i < s->nodes.n && n < sizeof o->names - 200; i++)
        n += (size_t)snprintf(o->names + n, sizeof o->names - n, "%s@%u:%u ", s->nodes.v[i].meta.name,
                              s->nodes.v[i].meta.src.line, s->nodes.v[i].meta.src.col);
}

static void from_memory(const char *text, size_t len, outcome *o)
{
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&s);
    int rc = gs_snapshot_read_buffer(&s, "in.json", text, len, NULL, &err);
    summarize(&s, rc, &err, o);
    gs_snapshot_free(&s);
}

/* The bytes through a pipe, each read asking for `chunk` bytes (0: 1 MiB). */
static void from_pipe(const char *text, size_t len, size_t chunk, const gs_read_opts *opts, outcome *o)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(fd[1], text + off, len - off);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(fd[1]);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fd[0]);
    gs__window_chunk = chunk;
    gs_snapshot s;
    gs_error err;
    gs_error_clear(&err);
    gs_snapshot_init(&s);
    int rc = gs_snapshot_read_path(&s, path, opts, &err);
    gs__window_chunk = 0;
    summarize(&s, rc, &err, o);
    gs_snapshot_free(&s);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
}

/* json_error: the input is not JSON after items were handed out: from memory, when its
 * tail is not a List's, libfyaml names the error; through a pipe (no tail to look at) the
 * JSON path does: "invalid JSON: ...", at a position of its own. */
static void same_as(const char *text, size_t len, bool json_error)
{
    static const size_t chunks[] = {1, 2, 3, 7, 64, 4096, 0};
    outcome a, b;
    from_memory(text, len, &a);
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        from_pipe(text, len, chunks[c], NULL, &b);
        if (json_error) {
            assert_int_equal(a.rc, -1);
            assert_int_equal(b.rc, -1);
            assert_int_equal(b.err.code, GS_ERR_PARSE);
            assert_non_null(strstr(b.err.msg, "invalid JSON: "));
            continue;
        }
        if (a.rc != b.rc || a.err.line != b.err.line || a.err.col != b.err.col ||
            strcmp(a.err.msg, b.err.msg) || strcmp(a.err.path, b.err.path) ||
            (!a.rc && (strcmp(a.names, b.names) || a.pods != b.pods || a.nodes != b.nodes ||
                       a.skipped != b.skipped)))
            print_error("chunk %zu: memory rc %d %d:%d %s [%s] {%s} / pipe rc %d %d:%d %s [%s] {%s}\n"
                        "input: %.300s\n",
                        chunks[c], a.rc, a.err.line, a.err.col, a.err.msg, a.err.path, a.names, b.rc,
                        b.err.line, b.err.col, b.err.msg, b.err.path, b.names, text);
        assert_int_equal(a.rc, b.rc);
        assert_int_equal(a.err.code, b.err.code);
        assert_int_equal(a.err.line, b.err.line);
        assert_int_equal(a.err.col, b.err.col);
        assert_string_equal(a.err.msg, b.err.msg);
        assert_string_equal(a.err.path, b.err.path);
        if (a.rc)
            continue; /* a failed read leaves what it decoded: the caller drops the snapshot */
        assert_int_equal(a.pods, b.pods);
        assert_int_equal(a.nodes, b.nodes);
        assert_int_equal(a.skipped, b.skipped);
        assert_string_equal(a.names, b.names);
    }
}

static void same(const char *text, size_t len) { same_as(text, len, false); }
static void same_str(const char *text) { same(text, strlen(text)); }
static void json_error(const char *text) { same_as(text, strlen(text), true); }

#define POD(n) "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"" n "\", " \
               "\"namespace\": \"ml\", \"managedFields\": [{\"f:x\": {}}]}, \"spec\": {\"containers\": " \
               "[{\"name\": \"c\", \"resources\": {\"requests\": {\"nvidia.com/gpu\": 1}}}]}}"

static void test_lists_through_a_pipe(void **state)
{
    (void)state;
    /* kubectl's order (kind after the items), pretty and on one line */
    same_str("{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        " POD("a") ",\n        " POD("b")
             "\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n");
    same_str("{\"apiVersion\":\"v1\",\"items\":[" POD("a") "," POD("b\\u00e9") "," POD("c")
             "],\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"\"}}");
    /* the API server's order (kind first): items without a kind are the List's */
    same_str("{\"kind\": \"PodList\", \"apiVersion\": \"v1\", \"metadata\": {}, \"items\": ["
             "{\"metadata\": {\"name\": \"a\"}}, {\"metadata\": {\"name\": \"b\"}}]}");
    /* kubectl's order, items without a kind (and after one with its own): held in the
     * window until the List's kind is known, then read again where they are */
    same_str("{\"items\": [" POD("a") ",\n  {\"metadata\": {\"name\": \"b\"}},\n  " POD("c")
             ", {\"metadata\": {\"name\": \"d\u00e9\"}, \"spec\": {\"containers\": [{\"env\": [1]}]}}],"
             " \"kind\": \"PodList\", \"metadata\": {\"kind\": \"x\"}}");
    same_str("{\"items\": [{\"metadata\": {\"name\": \"a\"}}, {\"metadata\": {\"name\": \"b\"}, \"spec\": "
             "{\"priority\": \"x\"}}], \"kind\": \"PodList\"}");
    /* CR LF line breaks, a byte-order mark, empty and blank items */
    same_str("\xEF\xBB\xBF{\r\n\"items\": [\r\n" POD("a") ",\r\n\r\n  " POD("b") "\r\n],\r\n\"kind\": \"List\"}\r\n");
    same_str("{\"items\": [  \n ], \"kind\": \"List\"}");
    same_str("{\"items\": [], \"kind\": \"List\"}");
    /* a List, then more values and YAML after it */
    same_str("{\"items\": [" POD("a") "], \"kind\": \"List\"}\n" POD("b") "\n{\"items\": [" POD("c")
             "], \"kind\": \"List\"}\n");
    same_str("{\"items\": [" POD("a") "], \"kind\": \"List\"}\n---\nkind: Pod\nmetadata:\n  name: y\n");
    /* not a List after all: its items are not objects of the snapshot */
    same_str("{\"items\": [{\"metadata\": {\"name\": \"a\"}}], \"kind\": \"Widget\"}\n"
             "{\"items\": [{\"metadata\": {\"name\": \"b\"}}], \"kind\": \"PodList\"}\n");
    same_str("{\"items\": [" POD("a") "], \"kind\": \"Pod\", \"metadata\": {\"name\": \"root\"}}");
    same_str("{\"kind\": \"Widget\", \"items\": [" POD("a") "]}");
    /* YAML and other values: read whole */
    same_str("kind: Pod\nmetadata:\n  name: y\n");
    same_str("[" POD("a") "]");
    same_str("   \n\n  ");
    same_str("");
}

static void test_errors_through_a_pipe(void **state)
{
    (void)state;
    /* a decode error in a late item, with its object path and position */
    same_str("{\"items\": [{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}},\n"
             "  {\"kind\": \"Pod\", \"metadata\": {\"name\": \"b\"}, \"spec\": {\"priority\": \"x\"}}],\n"
             " \"kind\": \"PodList\"}\n");
    same_str("{\"items\": [{\"kind\": \"Pod\"}, 3], \"kind\": \"PodList\"}");
    same_str("{\"kind\": \"PodList\", \"items\": [{\"kind\": \"Pod\"}, 3]}");
    /* broken JSON after streamed items; in the first item (libfyaml's message then) */
    same_str("{\"items\": [{\"kind\": \"Pod\"}, {\"kind\": tru}], \"kind\": \"List\"}");
    same_str("{\"items\": [{\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\",}}], \"kind\": \"List\"}");
    json_error("{\"items\": [" POD("a") ", " POD("b") "], \"kind\": \"List\"");
    json_error("{\"items\": [" POD("a") ", " POD("b") "], \"kind\": \"List\", \"metadata\": {\"x\": [}}");
    same_str("{\"items\": [" POD("a") ", " POD("b") ",], \"kind\": \"List\"}");
    same_str("{\"items\": [" POD("a") " " POD("b") "], \"kind\": \"List\"}");
    json_error("{\"items\": [" POD("a") ", \"unterminated");
    same_str("{\"items\": [" POD("a") ", {\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\t\"}}], \"kind\": \"List\"}");
    /* what libfyaml accepts and strict JSON does not (a raw tab in a string), once items
     * went by: from memory the tail is no List's, so libfyaml reads the whole value */
    json_error("{\"items\": [" POD("a") ", {\"kind\": \"Pod\", \"metadata\": {\"name\": \"a\t\"}}]}");
    /* duplicate keys in the root and in an item */
    same_str("{\"items\": [" POD("a") "], \"kind\": \"List\", \"kind\": \"List\"}");
    same_str("{\"items\": [{\"kind\": \"Pod\", \"kind\": \"Pod\"}], \"kind\": \"List\"}");
    /* invalid UTF-8 and NUL bytes, early and late (positions across dropped items) */
    same_str("{\"items\": [" POD("a") ",\n" POD("b") ",\n  {\"kind\": \"Pod\", \"x\": \"\xC3\x28\"}], \"kind\": \"List\"}");
    same_str("{\"items\": [" POD("a\xE2\x82") "], \"kind\": \"List\"}");
    same_str("{\"items\": [" POD("a") "], \"kind\": \"List\"}\n\xFF");
    same_str("{\"it\xF0\x9F\x98\x80ms\": [" POD("a") "], \"kind\": \"List\"}");
    static const char nul[] = "{\"items\": [" POD("a") ",\n" POD("b") "\n], \"kind\": \"List\"}\n";
    char buf[sizeof nul + 8];
    memcpy(buf, nul, sizeof nul);
    buf[sizeof nul - 20] = '\0';
    same(buf, sizeof nul - 1);
}

/* A List of 20,000 pods (about 5.5 MB) through a pipe: the window stays at one read and one
 * item, and the pods are all there. */
static void test_window_is_bounded(void **state)
{
    (void)state;
    size_t cap = 16u << 20, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    n += (size_t)snprintf(t + n, cap - n, "{\"apiVersion\": \"v1\", \"items\": [\n");
    for (int i = 0; i < 20000; i++)
        n += (size_t)snprintf(t + n, cap - n,
                              "%s{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p%05d\", "
                              "\"namespace\": \"ml\", \"managedFields\": [{\"manager\": \"kubelet\", \"fieldsV1\": "
                              "{\"f:status\": {\"f:conditions\": {}}}}]}, \"spec\": {\"containers\": [{\"name\": "
                              "\"c\", \"resources\": {\"requests\": {\"nvidia.com/gpu\": 1}}}]}, \"status\": "
                              "{\"phase\": \"Pending\"}}",
                              i ? ",\n" : "", i);
    n += (size_t)snprintf(t + n, cap - n, "\n], \"kind\": \"List\", \"metadata\": {}}\n");
    outcome a, b;
    from_memory(t, n, &a);
    gs__window_last_peak = 0;
    from_pipe(t, n, 64 * 1024, NULL, &b);
    assert_int_equal(a.rc, 0);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.pods, 20000);
    assert_string_equal(a.names, b.names);
    assert_true(n > (5u << 20));
    assert_true(gs__window_last_peak > 0);
    assert_true(gs__window_last_peak <= 4 * 64 * 1024);
    /* the limit still holds on a pipe */
    gs_read_opts tiny = {.max_file_bytes = 1 << 20};
    from_pipe(t, n, 0, &tiny, &b);
    assert_int_equal(b.rc, -1);
    assert_int_equal(b.err.code, GS_ERR_LIMIT);
    assert_non_null(strstr(b.err.msg, "larger than the limit"));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists_through_a_pipe),
        cmocka_unit_test(test_errors_through_a_pipe),
        cmocka_unit_test(test_window_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
