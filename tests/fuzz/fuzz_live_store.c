/*
 * fuzz_live_store.c - libFuzzer target for the live object store (lib/live/store.c): the
 * pruning copy of an object's JSON, list pages, deletes and the snapshot read of what the
 * store kept.
 *
 * The first byte picks the operation on the rest: bits 0-1 = 0 put as a Pod, 1 put as a
 * Node, 2 a Pod list page, 3 put then delete. Every input is then put a second time
 * (no change) and the store read into a snapshot.
 *
 * Invariants (abort on violation): a failure carries a known code and a message; a second
 * put of the same text changes nothing; pruning is idempotent (a kept text put again is
 * kept byte for byte) and no kept text holds a managedFields member; after a delete the
 * store holds no Pod; a snapshot that fails says why with an input error code (the reader,
 * not the store, refuses duplicate keys and wrong types).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/live.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const gs_error *e)
{
    if (e->code <= GS_OK || e->code >= GS_CODE_COUNT_ || !e->msg[0])
        abort();
}

typedef struct seen {
    size_t n;
    gs_live_kind k;
} seen;

/* Pruning is idempotent: the kept text put into a fresh store is kept unchanged. */
static int each(void *ctx, const char *key, const char *obj, size_t len)
{
    seen *s = ctx;
    s->n++;
    if (!key[0])
        abort();
    if (memmem(obj, len, "\"managedFields\":", 16))
        abort();
    gs_error err;
    gs_live_store *again = gs_live_store_new(&err);
    if (!again)
        return 0;
    if (gs_live_store_put(again, s->k, obj, len, &err) != 0) {
        if (err.code != GS_ERR_NOMEM)
            abort();
    } else {
        gs_strbuf out = GS_STRBUF_INIT;
        if (gs_live_store_get(again, s->k, key, &out) != 0 || out.len != len || memcmp(out.buf, obj, len))
            abort();
        gs_strbuf_free(&out);
    }
    gs_live_store_free(again);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int op = data[0] & 3;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    gs_error err;
    gs_error_clear(&err);
    gs_live_store *st = gs_live_store_new(&err);
    if (!st)
        return 0;
    gs_live_kind k = op == 1 ? GS_LIVE_NODE : GS_LIVE_POD;
    int rc = op == 2 ? gs_live_store_put_list(st, k, text, len, &err) : gs_live_store_put(st, k, text, len, &err);
    if (rc)
        check_err(&err);
    uint64_t v = gs_live_store_version(st);
    gs_error_clear(&err);
    int rc2 = op == 2 ? gs_live_store_put_list(st, k, text, len, &err) : gs_live_store_put(st, k, text, len, &err);
    if (rc2 != rc && op != 2)
        abort();
    if (!rc && op != 2 && gs_live_store_version(st) != v)
        abort();
    if (op == 3 && !rc) {
        if (gs_live_store_delete(st, k, text, len, &err))
            abort();
        gs_live_store_stats sts;
        gs_live_store_stats_get(st, k, &sts);
        if (sts.objects)
            abort();
    }
    seen s = {0, k};
    gs_live_store_each(st, k, each, &s);
    gs_snapshot snap;
    gs_snapshot_init(&snap);
    gs_error_clear(&err);
    if (gs_live_store_snapshot(st, GS_LIVE_KIND_BIT(k), &snap, "fuzz", NULL, &err) != 0) {
        /* the store checks the grammar, the reader the rest (duplicate keys, types) */
        check_err(&err);
        if (err.code != GS_ERR_PARSE && err.code != GS_ERR_INVALID && err.code != GS_ERR_LIMIT &&
            err.code != GS_ERR_NOMEM)
            abort();
    }
    gs_snapshot_free(&snap);
    gs_live_store_free(st);
    return 0;
}
