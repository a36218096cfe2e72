/*
 * fuzz_extender_proto.c - libFuzzer target for the extender protocol codec (extender.h,
 * "protocol"): arbitrary bytes decoded as each request type (ExtenderArgs,
 * ExtenderBindingArgs, ExtenderPreemptionArgs), each decoded request encoded again and
 * decoded a second time, and the answers built from it encoded.
 *
 * Limits are set low (64 nodes, 16 victims per node) so one input cannot take long.
 * Errors are expected and ignored; crashes, leaks, hangs and sanitizer reports are the
 * findings. Invariants checked: a decoded ExtenderArgs or ExtenderPreemptionArgs has a
 * pod; the candidate names never exceed the limit; binding fields are never empty;
 * every victim has a UID; a re-encoded request decodes again to the same names, counts
 * and UIDs; every encoding is valid UTF-8 (gs_utf8_invalid_at).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/extender.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const gs_ext_limits lim = {.max_body = 1u << 20, .max_nodes = 64, .max_victims = 16};

static void check_utf8(const gs_strbuf *sb)
{
    if (sb->oom)
        return;
    if (gs_utf8_invalid_at(gs_strbuf_cstr(sb), sb->len) != sb->len)
        abort();
}

static void args_one(const char *body, size_t size)
{
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_ext_args x, y;
    gs_error err;
    if (gs_ext_args_decode(body, size, &lim, &a, &x, &err) != 0) {
        gs_arena_free(&a);
        return;
    }
    if (!x.pod || !x.pod_json || x.nnode_names > lim.max_nodes || x.nnodes > lim.max_nodes)
        abort();
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_ext_args_encode(&x, &sb);
    check_utf8(&sb);
    if (!sb.oom) {
        if (gs_ext_args_decode(sb.buf, sb.len, &lim, &a, &y, &err) != 0)
            abort();
        if (y.cache_mode != x.cache_mode || y.has_nodes != x.has_nodes || y.nnode_names != x.nnode_names ||
            y.nnodes != x.nnodes || strcmp(y.pod->meta.uid, x.pod->meta.uid) != 0)
            abort();
        for (uint32_t i = 0; i < x.nnode_names; i++)
            if (strcmp(x.node_names[i], y.node_names[i]) != 0)
                abort();
        gs_ext_args_free(&y);
    }
    /* answers over the candidates: every other node passes, the rest fail */
    uint32_t n = x.nnode_names;
    const char **pass = calloc(n + 1, sizeof *pass);
    gs_ext_node_msg *failed = calloc(n + 1, sizeof *failed);
    gs_ext_host_priority *pri = calloc(n + 1, sizeof *pri);
    if (pass && failed && pri) {
        uint32_t np = 0, nf = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (i & 1)
                failed[nf++] = (gs_ext_node_msg){x.node_names[i], x.pod->meta.name};
            else
                pass[np++] = x.node_names[i];
            pri[i] = (gs_ext_host_priority){x.node_names[i], (int64_t)i * 7 - 20};
        }
        gs_ext_filter_result fr = {.cache_mode = x.cache_mode, .nodes = pass, .nnodes = np, .failed = failed,
                                   .nfailed = nf, .unresolvable = failed, .nunresolvable = nf / 2,
                                   .error = x.pod->meta.namespace_};
        gs_strbuf_reset(&sb);
        gs_ext_filter_result_encode(&fr, &sb);
        check_utf8(&sb);
        gs_strbuf_reset(&sb);
        gs_ext_priorities_encode(pri, n, &sb);
        check_utf8(&sb);
    }
    free(pass);
    free(failed);
    free(pri);
    gs_strbuf_free(&sb);
    gs_ext_args_free(&x);
    gs_arena_free(&a);
}

static void binding_one(const char *body, size_t size)
{
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_ext_binding_args b, c;
    gs_error err;
    if (gs_ext_binding_args_decode(body, size, &lim, &a, &b, &err) == 0) {
        if (!b.pod_name[0] || !b.pod_namespace[0] || !b.pod_uid[0] || !b.node[0])
            abort();
        gs_strbuf sb = GS_STRBUF_INIT;
        gs_ext_binding_args_encode(&b, &sb);
        check_utf8(&sb);
        if (!sb.oom) {
            if (gs_ext_binding_args_decode(sb.buf, sb.len, &lim, &a, &c, &err) != 0)
                abort();
            if (strcmp(b.pod_uid, c.pod_uid) || strcmp(b.node, c.node) || strcmp(b.pod_name, c.pod_name) ||
                strcmp(b.pod_namespace, c.pod_namespace))
                abort();
        }
        gs_strbuf_reset(&sb);
        gs_ext_binding_result_encode(b.node, &sb);
        check_utf8(&sb);
        gs_strbuf_free(&sb);
    }
    gs_arena_free(&a);
}

static void same_victims(const gs_ext_victims *x, uint32_t nx, const gs_ext_victims *y, uint32_t ny)
{
    if (nx != ny)
        abort();
    for (uint32_t i = 0; i < nx; i++) {
        if (strcmp(x[i].node, y[i].node) || x[i].npods != y[i].npods ||
            x[i].num_pdb_violations != y[i].num_pdb_violations)
            abort();
        for (uint32_t j = 0; j < x[i].npods; j++)
            if (strcmp(x[i].pods[j].uid, y[i].pods[j].uid) || !x[i].pods[j].uid[0])
                abort();
    }
}

static void preempt_one(const char *body, size_t size)
{
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_ext_preemption_args p, q;
    gs_error err;
    if (gs_ext_preemption_args_decode(body, size, &lim, &a, &p, &err) != 0) {
        gs_arena_free(&a);
        return;
    }
    if (!p.pod || p.nvictims > lim.max_nodes || p.nmeta_victims > lim.max_nodes)
        abort();
    gs_strbuf sb = GS_STRBUF_INIT;
    gs_ext_preemption_args_encode(&p, &sb);
    check_utf8(&sb);
    if (!sb.oom) {
        if (gs_ext_preemption_args_decode(sb.buf, sb.len, &lim, &a, &q, &err) != 0)
            abort();
        if (q.has_victims != p.has_victims || q.has_meta_victims != p.has_meta_victims)
            abort();
        same_victims(p.victims, p.nvictims, q.victims, q.nvictims);
        same_victims(p.meta_victims, p.nmeta_victims, q.meta_victims, q.nmeta_victims);
        gs_ext_preemption_args_free(&q);
    }
    gs_strbuf_reset(&sb);
    gs_ext_preemption_result_encode(p.has_victims ? p.victims : p.meta_victims,
                                    p.has_victims ? p.nvictims : p.nmeta_victims, &sb);
    check_utf8(&sb);
    gs_strbuf_free(&sb);
    gs_ext_preemption_args_free(&p);
    gs_arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > lim.max_body)
        return 0;
    const char *body = (const char *)data;
    args_one(body, size);
    binding_one(body, size);
    preempt_one(body, size);
    return 0;
}
