/*
 * fuzz_yaml_tree.c - libFuzzer target for the shared YAML/JSON tree builder
 * (lib/util/yaml_tree.c), the reader under manifests, check configurations and MIG inputs.
 *
 * The first byte picks the options: bit 0 several documents, bit 1 NUL-terminated copies,
 * bit 2 a callback per document (scratch arena), bit 3 skip the values of "env" keys,
 * bit 4 small bounds (depth 8, 200 nodes, 64-byte scalars), bit 5 the input split in two
 * texts parsed one after the other (the second at an offset). The rest is the input.
 *
 * Invariants (abort on violation): a failure carries a parse, invalid, limit or memory
 * code and the file name; every node of a built tree has a position (line, col >= 1) and a
 * known type; a mapping has 2*len children whose keys are scalars and distinct; a sequence
 * len children; a null scalar is plain; copies are NUL-terminated; depth and bounds hold.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/yaml_tree_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fz {
    gs_yt_opts o;
    uint32_t docs;
} fz;

static void check_node(const fz *f, const gs_yn *n, uint32_t depth)
{
    if (!n || n->line < 1 || n->col < 1 || depth > f->o.max_depth + 1)
        abort();
    if (n->type == GS_YN_SCALAR) {
        if (n->null && !n->plain)
            abort();
        if (n->len > (f->o.max_scalar ? f->o.max_scalar : UINT32_MAX / 2))
            abort();
        if (n->len && !n->u.text)
            abort();
        if (f->o.copy_text && n->u.text[n->len] != '\0')
            abort();
        return;
    }
    if (n->type != GS_YN_MAP && n->type != GS_YN_SEQ)
        abort();
    uint32_t count = 0;
    for (const gs_yn *c = n->u.first; c; c = c->next) {
        if (n->type == GS_YN_MAP && count % 2 == 0) {
            if (c->type != GS_YN_SCALAR || !c->next)
                abort();
            if (n->len <= 64) /* distinct keys (quadratic: small mappings only) */
                for (const gs_yn *d = c->next->next; d; d = d->next->next)
                    if (d->len == c->len && !memcmp(d->u.text, c->u.text, c->len))
                        abort();
        }
        check_node(f, c, depth + 1);
        count++;
    }
    if (count != (n->type == GS_YN_MAP ? 2 * n->len : n->len))
        abort();
}

static int on_doc(void *ctx, const gs_yn *root)
{
    fz *f = ctx;
    if (root->type == GS_YN_SCALAR && root->null)
        abort();
    check_node(f, root, 1);
    f->docs++;
    return 0;
}

static bool skip_env(void *ctx, const gs_yn *key)
{
    (void)ctx;
    return key->type == GS_YN_SCALAR && key->len == 3 && !memcmp(key->u.text, "env", 3);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    uint8_t flags = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    fz f;
    memset(&f, 0, sizeof f);
    f.o.file = "fuzz.yaml";
    f.o.what = "fuzz input";
    f.o.multi = flags & 1;
    f.o.copy_text = flags & 2;
    if (flags & 4) {
        f.o.multi = true;
        f.o.on_doc = on_doc;
        f.o.ctx = &f;
    }
    if (flags & 8)
        f.o.skip = skip_env;
    if (flags & 16) {
        f.o.max_depth = 8;
        f.o.max_nodes = 200;
        f.o.max_scalar = 64;
    } else {
        f.o.max_depth = GS_YT_MAX_DEPTH;
    }
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_error err;
    gs_error_clear(&err);
    int rc;
    gs_yt *t = gs_yt_new(&f.o, &a, &err);
    if (!t) {
        rc = -1;
    } else if (flags & 32) {
        size_t half = len / 2;
        rc = gs_yt_parse(t, text, half, 0, 0);
        if (rc == 0)
            rc = gs_yt_parse(t, text + half, len - half, 3, 5);
    } else {
        rc = gs_yt_parse(t, text, len, 0, 0);
    }
    if (rc != 0) {
        if (err.code != GS_ERR_PARSE && err.code != GS_ERR_INVALID && err.code != GS_ERR_LIMIT &&
            err.code != GS_ERR_NOMEM)
            abort();
        if (strcmp(err.file, "fuzz.yaml") != 0)
            abort();
    } else {
        uint32_t n = 0;
        for (const gs_yn *r = gs_yt_root(t); r; r = r->next, n++)
            check_node(&f, r, 1);
        if (f.o.on_doc ? (n != 0 || f.docs != gs_yt_docs(t)) : n != gs_yt_docs(t))
            abort();
        if (!f.o.multi && n > 1)
            abort();
    }
    gs_yt_free(t);
    gs_arena_free(&a);
    return 0;
}
