/*
 * fuzz_watch.c - libFuzzer target for the watch stream's parsers (lib/live/watch.c): the
 * event line parser, the line splitter and a list page's resourceVersion scan.
 *
 * The first byte picks what the rest is: bit 0 = 0 one event line; 1 a stream, fed to
 * the line splitter (max_line 64 + the second byte) in pieces whose sizes come from the
 * third byte, each line then parsed as an event.
 *
 * Invariants (abort on violation):
 *  - event: success gives a known type, an object span inside the line that starts with
 *    '{' and ends with '}', NUL-terminated resourceVersion/reason/message within their
 *    arrays, initial_events_end only on a BOOKMARK, a code only on an ERROR; failure gives
 *    GS_ERR_PARSE or GS_ERR_NOMEM with a message, a column inside the line (+1), and a
 *    zeroed event; parsing is deterministic (twice, the same answer);
 *  - splitter: the lines delivered are exactly a reference split (segments between '\n',
 *    one '\r' before the '\n' dropped, blank ones skipped, a segment longer than max_line
 *    fails there and nothing after it is delivered), whatever the piece sizes;
 *  - list rv: success gives a NUL-terminated string shorter than the buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/live.h"
#include "live/live_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_event(const char *line, size_t len)
{
    gs_live_watch_event ev, ev2;
    gs_error err, err2;
    gs_error_clear(&err);
    gs_error_clear(&err2);
    int rc = gs_live_watch_event_parse(line, len, &ev, &err);
    int rc2 = gs_live_watch_event_parse(line, len, &ev2, &err2);
    if (rc != rc2)
        abort();
    if (rc == 0) {
        if (ev.type < GS_LIVE_WATCH_ADDED || ev.type > GS_LIVE_WATCH_ERROR)
            abort();
        if (!ev.object || ev.object < line || ev.object_len < 2 || ev.object + ev.object_len > line + len)
            abort();
        if (ev.object[0] != '{' || ev.object[ev.object_len - 1] != '}')
            abort();
        if (!memchr(ev.resource_version, '\0', sizeof ev.resource_version) ||
            !memchr(ev.reason, '\0', sizeof ev.reason) || !memchr(ev.message, '\0', sizeof ev.message))
            abort();
        if (ev.initial_events_end && ev.type != GS_LIVE_WATCH_BOOKMARK)
            abort();
        if (ev.type != GS_LIVE_WATCH_ERROR && (ev.code || ev.reason[0] || ev.message[0]))
            abort();
        if (ev.type != ev2.type || ev.object != ev2.object || ev.object_len != ev2.object_len ||
            strcmp(ev.resource_version, ev2.resource_version) || ev.code != ev2.code)
            abort();
    } else {
        if ((err.code != GS_ERR_PARSE && err.code != GS_ERR_NOMEM) || !err.msg[0])
            abort();
        if (err.col < 1 || (size_t)err.col > len + 1)
            abort();
        if (ev.type || ev.object || ev.object_len || ev.resource_version[0])
            abort();
        if (strcmp(err.msg, err2.msg))
            abort();
    }
}

typedef struct lines_got {
    const char *ref;  /* the input, for the reference split */
    size_t ref_len, pos;
    size_t max;
    size_t count;
} lines_got;

/* The reference: the next non-blank segment at or after g->pos, or why there is none. */
static bool blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return false;
    return true;
}

static int on_line(void *ctx, const char *line, size_t len, gs_error *err)
{
    (void)err;
    lines_got *g = ctx;
    /* find the reference's next non-blank segment */
    for (;;) {
        if (g->pos > g->ref_len)
            abort(); /* delivered more than there is */
        const char *s = g->ref + g->pos;
        const char *nl = memchr(s, '\n', g->ref_len - g->pos);
        size_t seg = nl ? (size_t)(nl - s) : g->ref_len - g->pos;
        if (seg > g->max)
            abort(); /* should have failed */
        g->pos += seg + 1;
        size_t n = seg;
        if (n && s[n - 1] == '\r')
            n--;
        if (blank(s, n))
            continue;
        if (n != len || memcmp(s, line, len))
            abort();
        break;
    }
    g->count++;
    check_event(line, len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    unsigned mode = data[0] & 1;
    if (mode == 0) {
        const char *text = (const char *)data + 1;
        size_t len = size - 1;
        check_event(text, len);
        char rv[GS_LIVE_RV_MAX];
        if (gs_live_list_rv(text, len, rv, sizeof rv) == 0 && !memchr(rv, '\0', sizeof rv))
            abort();
        return 0;
    }
    size_t max = 64 + data[1];
    unsigned step = data[2] ? data[2] : 1;
    const char *text = (const char *)data + 3;
    size_t len = size - 3;
    gs_live_lines l;
    gs_live_lines_init(&l, max);
    lines_got g = {.ref = text, .ref_len = len, .max = max};
    gs_error err;
    gs_error_clear(&err);
    int rc = 0;
    for (size_t off = 0; off < len && !rc;) {
        size_t n = step < len - off ? step : len - off;
        rc = gs_live_lines_feed(&l, text + off, n, on_line, &g, &err);
        off += n;
        step = step * 7 % 61 + 1; /* pieces of changing sizes */
    }
    if (!rc)
        rc = gs_live_lines_finish(&l, on_line, &g, &err);
    /* the reference: fails iff some segment is longer than max */
    bool too_long = false;
    for (size_t p = 0; p <= len;) {
        const char *nl = memchr(text + p, '\n', len - p);
        size_t seg = nl ? (size_t)(nl - (text + p)) : len - p;
        if (seg > max)
            too_long = true;
        p += seg + 1;
    }
    if (too_long != (rc != 0) || (rc && err.code != GS_ERR_LIMIT) || (rc && !l.failed))
        abort();
    if (g.count != l.lines)
        abort();
    if (!rc) { /* every non-blank segment was delivered */
        lines_got rest = g;
        for (size_t p = rest.pos; p < len;) {
            const char *nl = memchr(text + p, '\n', len - p);
            size_t seg = nl ? (size_t)(nl - (text + p)) : len - p;
            size_t n = seg && text[p + seg - 1] == '\r' ? seg - 1 : seg;
            if (!blank(text + p, n))
                abort();
            p += seg + 1;
        }
    }
    gs_live_lines_free(&l);
    return 0;
}
