/*
 * fuzz_live_write.c - libFuzzer target for the parsers and builders of the write layer
 * (lib/live/write*.c). The first byte picks what the rest is:
 *   0: an Event answer (gs_live_event_parse);
 *   1: a Lease answer (gs_live_lease_parse) and the update body built from it
 *      (gs_live_lease_update_body);
 *   2: a MicroTime (gs_live_microtime_parse, then written and read again);
 *   3: NUL-separated strings (name, namespace, reason, action, note, regarding name, uid)
 *      for gs_live_event_body, gs_live_binding_body and gs_live_path.
 * Invariants (abort on violation): a failure carries a known code and a message; a parsed
 * Event has a name; an update body is JSON whose spec is the record written, and reads back
 * as a Lease with it; a MicroTime written reads back to itself; every body built is JSON the
 * library's reader accepts, an Event body reads back with its name and a note of at most
 * 1024 bytes; a path holds no byte that needs escaping.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/live_write.h"
#include "util/json_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const gs_error *e)
{
    if (e->code <= GS_OK || e->code >= GS_CODE_COUNT_ || !e->msg[0])
        abort();
}

static void must_be_json(const char *s, size_t n, gs_arena *a, gs_jv *out)
{
    gs_error err;
    if (gs_json_parse("built", 1, s, n, NULL, a, out, &err) || out->t != GS_JOBJ)
        abort();
}

static void fuzz_event(const char *text, size_t len)
{
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_event_info ev;
    gs_error err;
    gs_error_clear(&err);
    if (gs_live_event_parse(text, len, &a, &ev, &err) == 0) {
        if (!ev.name)
            abort();
    } else {
        check_err(&err);
    }
    gs_arena_free(&a);
}

static void fuzz_lease(const char *text, size_t len)
{
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_live_lease l;
    gs_error err;
    gs_error_clear(&err);
    bool is_lease = gs_live_lease_parse(text, len, &a, &l, &err) == 0;
    if (is_lease) {
        if (!l.name || !l.holder)
            abort();
    } else {
        check_err(&err);
    }
    gs_live_lease_record rec = {"cand\"\n\xff", 15, 1764627593000001LL, 1764627594000002LL, 7};
    gs_strbuf b = GS_STRBUF_INIT;
    gs_error_clear(&err);
    if (gs_live_lease_update_body(&b, text, len, &rec, &err) == 0) {
        gs_jv root;
        must_be_json(b.buf, b.len, &a, &root);
        const gs_jv *spec = gs_json_get(&root, "spec");
        const gs_jv *h = gs_json_get(spec, "holderIdentity");
        if (!h || h->t != GS_JSTR || strcmp(h->s, "cand\"\n\xef\xbf\xbd"))
            abort();
        if (is_lease) {
            gs_live_lease l2;
            if (gs_live_lease_parse(b.buf, b.len, &a, &l2, &err) || l2.transitions != 7 ||
                l2.renew_us != rec.renew_us || strcmp(l2.name, l.name))
                abort();
        }
    } else {
        check_err(&err);
    }
    gs_strbuf_free(&b);
    gs_arena_free(&a);
}

static void fuzz_time(const char *text, size_t len)
{
    char s[64];
    if (len >= sizeof s)
        return;
    memcpy(s, text, len);
    s[len] = '\0';
    int64_t us, back;
    if (gs_live_microtime_parse(s, &us))
        return;
    char t[32];
    gs_live_microtime(t, us);
    if (t[0] == '0' && t[1] == '0' && t[2] == '0' && t[3] == '0')
        return; /* year 0 or before: clamped */
    if (!strncmp(t, "9999-12-31T23:59:59.999999Z", 27) && us > 253402300799999999LL)
        return; /* past year 9999: clamped */
    if (gs_live_microtime_parse(t, &back) || back != us || strlen(t) != 27)
        abort();
}

static void fuzz_bodies(const char *text, size_t len)
{
    const char *f[7] = {"", "", "", "", "", "", ""};
    size_t nf = 0, start = 0;
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, text, len);
    copy[len] = '\0';
    for (size_t i = 0; i <= len && nf < 7; i++)
        if (i == len || copy[i] == '\0') {
            f[nf++] = copy + start;
            start = i + 1;
        }
    gs_arena a;
    gs_arena_init(&a, 0);
    gs_strbuf b = GS_STRBUF_INIT;
    gs_error err;
    gs_jv root;
    gs_live_objref reg = {"v1", "Pod", f[1], f[5], f[6], NULL, NULL};
    gs_live_event ev = {&reg, nf > 6 ? &reg : NULL, (gs_live_event_type)(len & 1), f[2], f[3], f[4]};
    gs_error_clear(&err);
    if (gs_live_event_body(&b, &ev, f[0], f[1], "c", "i", (int64_t)len * 1000003, (int32_t)(len % 4), 5, &err) == 0) {
        must_be_json(b.buf, b.len, &a, &root);
        gs_live_event_info info;
        if (gs_live_event_parse(b.buf, b.len, &a, &info, &err) || !info.name || (info.note && strlen(info.note) > 1024))
            abort();
    } else {
        check_err(&err);
    }
    gs_error_clear(&err);
    const char *ann[] = {f[3], f[4], NULL};
    if (gs_live_binding_body(&b, f[1], f[0], f[6], f[5], ann, &err) == 0)
        must_be_json(b.buf, b.len, &a, &root);
    else
        check_err(&err);
    gs_strbuf_reset(&b);
    gs_error_clear(&err);
    if (gs_live_path(&b, f[2], "v1", "pods", f[1], f[0], nf > 3 ? "binding" : NULL, &err) == 0) {
        for (size_t i = 0; i < b.len; i++) {
            unsigned char ch = (unsigned char)b.buf[i];
            if (ch <= ' ' || ch >= 0x7f || ch == '?' || ch == '#' || ch == '"')
                abort();
        }
    } else {
        check_err(&err);
    }
    gs_strbuf_free(&b);
    gs_arena_free(&a);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    switch (data[0] & 3) {
    case 0:
        fuzz_event(text, len);
        break;
    case 1:
        fuzz_lease(text, len);
        break;
    case 2:
        fuzz_time(text, len);
        break;
    default:
        fuzz_bodies(text, len);
        break;
    }
    return 0;
}
