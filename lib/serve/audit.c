/*
 * audit.c - the webhook's audit log: one JSON line per decision, durable before the
 * response leaves (contract in serve.h).
 *
 * Durability with group commit: a line is appended with one write(2) on an O_APPEND
 * descriptor (atomic with respect to other appenders on a local file system), then the
 * caller needs an fdatasync that started after its write. Syncing once per line would
 * cap the webhook at the disk's sync rate, so concurrent callers share syncs:
 *
 *   written  = sequence number of the last line written
 *   synced   = every line up to this number is on disk
 *   syncing  = one caller (the leader) is inside fdatasync for lines up to `target`
 *
 * A caller writes its line under the mutex and takes seq = ++written (gs_audit_append).
 * Then, while synced < seq (gs_audit_sync): if nobody is syncing it becomes the leader,
 * sets target = written, drops the mutex, fdatasyncs, retakes it, sets synced = target
 * and wakes everyone; otherwise it waits. Lines written while a sync runs are covered by
 * the next one, so N concurrent callers cost about two syncs, not N. The server appends
 * from its workers and syncs from one thread of its own, so workers never wait for the
 * disk (server.c).
 *
 * A failed fdatasync is sticky (`broken`): after it the kernel may have dropped the
 * dirty pages and cleared the error, so a later successful sync proves nothing about the
 * lost lines. Every later call fails until gs_audit_reopen() opens the file afresh (the
 * server does so by itself, every second, while the log fails: gs_audit_recover).
 *
 * Whole lines only: each line goes out in one write(2). A short write (the disk filled
 * up in the middle) is cut off again with ftruncate to the size before the write, so the
 * next line does not glue onto half a line; if even that fails the log is marked broken
 * and the torn tail is cut when it is reopened. Opening (and reopening) cuts a torn last
 * line left by a crash (kill -9 or power loss in the middle of a write): such a line was
 * never synced, so its answer never left.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/serve.h"
#include "serve/serve_int.h"

struct gs_audit {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;
    char *path;
    uint64_t size;         /* bytes in the file after our last write */
    uint64_t repaired;     /* bytes of torn last lines cut off */
    uint64_t written;
    uint64_t synced;
    bool syncing;
    bool broken;           /* a sync failed: refuse new lines until reopened */
    int broken_errno;
    uint64_t failed_from;  /* lines (failed_from, failed_upto] were lost to a failed sync */
    uint64_t failed_upto;
};

/* With the mutex held: a sync covering lines up to `upto` failed. */
static void mark_failed(gs_audit *a, uint64_t upto, int e)
{
    a->broken = true;
    a->broken_errno = e;
    a->failed_from = a->synced;
    a->failed_upto = upto;
}

static bool in_failed(const gs_audit *a, uint64_t seq)
{
    return seq > a->failed_from && seq <= a->failed_upto;
}

/* Cut a torn last line: everything after the last newline. Returns the new size, or -1
 * with errno. */
static int64_t cut_torn_tail(int fd, uint64_t size, uint64_t *cut)
{
    *cut = 0;
    if (size == 0)
        return 0;
    char buf[4096];
    uint64_t end = size;
    while (end > 0) {
        size_t n = end < sizeof buf ? (size_t)end : sizeof buf;
        ssize_t got = pread(fd, buf, n, (off_t)(end - n));
        if (got != (ssize_t)n)
            return -1;
        for (size_t i = n; i > 0; i--) {
            if (buf[i - 1] == '\n') {
                uint64_t keep = end - n + i;
                if (keep == size)
                    return (int64_t)size;
                if (ftruncate(fd, (off_t)keep) != 0)
                    return -1;
                *cut = size - keep;
                return (int64_t)keep;
            }
        }
        end -= n;
    }
    if (ftruncate(fd, 0) != 0) /* one torn line and nothing else */
        return -1;
    *cut = size;
    return 0;
}

/* Open the log for appending: a regular file only (O_NONBLOCK: a FIFO at the path must
 * not block the caller, the signal thread), with a torn last line cut off. */
static int open_log(const char *path, uint64_t *size, uint64_t *cut, gs_error *err)
{
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0640);
    if (fd < 0)
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open the audit log: %s",
                            strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open the audit log: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open the audit log: not a regular file");
    }
    int64_t keep = cut_torn_tail(fd, (uint64_t)st.st_size, cut);
    if (keep < 0) {
        int e = errno;
        close(fd);
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL,
                            "cannot cut the torn last line of the audit log: %s", strerror(e));
    }
    *size = (uint64_t)keep;
    return fd;
}

gs_audit *gs_audit_open(const char *path, gs_error *err)
{
    if (!path || !path[0]) {
        gs_fail(err, GS_ERR_USAGE, "audit log path is empty");
        return NULL;
    }
    gs_audit *a = calloc(1, sizeof *a);
    char *p = strdup(path);
    if (!a || !p) {
        free(a);
        free(p);
        gs_fail(err, GS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    uint64_t cut = 0;
    a->fd = open_log(path, &a->size, &cut, err);
    a->repaired = cut;
    if (a->fd < 0) {
        free(a);
        free(p);
        return NULL;
    }
    a->path = p;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    return a;
}

int gs_audit_reopen(gs_audit *a, gs_error *err)
{
    uint64_t size = 0, cut = 0;
    int fd = open_log(a->path, &size, &cut, err);
    if (fd < 0)
        return -1;
    pthread_mutex_lock(&a->mu);
    a->size = size;
    a->repaired += cut;
    while (a->syncing) /* the leader syncs the old descriptor without the mutex */
        pthread_cond_wait(&a->cv, &a->mu);
    int old = a->fd;
    /* lines written to the old file that no sync covered yet: their writers wait for
     * this mutex; sync them here, or mark them failed */
    if (a->synced < a->written && !a->broken && fdatasync(old) != 0)
        mark_failed(a, a->written, errno);
    a->fd = fd;
    a->synced = a->written; /* every old line is now synced or inside the failed range */
    a->broken = false;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    close(old);
    return 0;
}

uint64_t gs_audit_repaired_bytes(const gs_audit *a)
{
    if (!a)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&a->mu);
    uint64_t n = a->repaired;
    pthread_mutex_unlock((pthread_mutex_t *)&a->mu);
    return n;
}

int gs_audit_recover(gs_audit *a, uint64_t min_free, gs_error *err)
{
    if (gs_audit_reopen(a, err) != 0)
        return -1;
    pthread_mutex_lock(&a->mu);
    int fd = a->fd;
    int rc = 0;
    struct statvfs vfs;
    if (fdatasync(fd) != 0) {
        rc = gs_error_set(err, GS_ERR_IO, a->path, 0, 0, NULL, "cannot sync the audit log: %s",
                          strerror(errno));
        mark_failed(a, a->written, errno);
    } else if (fstatvfs(fd, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < min_free) {
        rc = gs_error_set(err, GS_ERR_IO, a->path, 0, 0, NULL,
                          "the audit log's file system has %llu bytes free, below %llu",
                          (unsigned long long)vfs.f_bavail * vfs.f_frsize, (unsigned long long)min_free);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

void gs_audit_close(gs_audit *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    while (a->syncing)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    if (a->synced < a->written && !a->broken)
        fdatasync(a->fd);
    close(a->fd);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a->path);
    free(a);
}

int gs_audit_append(gs_audit *a, const char *line, size_t len, uint64_t *seq_out, gs_error *err)
{
    pthread_mutex_lock(&a->mu);
    if (a->broken) {
        int e = a->broken_errno;
        pthread_mutex_unlock(&a->mu);
        return gs_error_set(err, GS_ERR_IO, a->path, 0, 0, NULL,
                            "audit log failed earlier (%s); waiting for it to be reopened",
                            strerror(e));
    }
    ssize_t n;
    do
        n = write(a->fd, line, len); /* one call: a line is whole or absent */
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)len) {
        int e = n < 0 ? errno : ENOSPC;
        /* a short write left part of the line: cut it so the next line starts clean;
         * if that fails, refuse lines until a reopen cuts the torn tail */
        if (n > 0 && ftruncate(a->fd, (off_t)a->size) != 0) {
            a->broken = true;
            a->broken_errno = e;
            a->failed_from = a->failed_upto = a->written;
        }
        pthread_mutex_unlock(&a->mu);
        return gs_error_set(err, GS_ERR_IO, a->path, 0, 0, NULL, "cannot write the audit log: %s%s",
                            strerror(e), n > 0 ? " (the part written was cut off)" : "");
    }
    a->size += (uint64_t)n;
    *seq_out = ++a->written;
    pthread_mutex_unlock(&a->mu);
    return 0;
}

int gs_audit_sync(gs_audit *a, uint64_t seq, gs_error *err)
{
    pthread_mutex_lock(&a->mu);
    while (a->synced < seq && !in_failed(a, seq)) {
        if (a->syncing) {
            pthread_cond_wait(&a->cv, &a->mu);
            continue;
        }
        a->syncing = true;
        uint64_t target = a->written;
        int fd = a->fd;
        pthread_mutex_unlock(&a->mu);
        int src = fdatasync(fd);
        int e = errno;
        pthread_mutex_lock(&a->mu);
        a->syncing = false;
        if (src == 0) {
            if (target > a->synced)
                a->synced = target;
        } else {
            mark_failed(a, target, e);
        }
        pthread_cond_broadcast(&a->cv);
    }
    int rc = 0;
    if (in_failed(a, seq))
        rc = gs_error_set(err, GS_ERR_IO, a->path, 0, 0, NULL, "cannot sync the audit log: %s",
                          strerror(a->broken_errno));
    pthread_mutex_unlock(&a->mu);
    return rc;
}

int gs_audit_write(gs_audit *a, const char *line, size_t len, gs_error *err)
{
    uint64_t seq;
    if (gs_audit_append(a, line, len, &seq, err) != 0)
        return -1;
    return gs_audit_sync(a, seq, err);
}

const char *gs_audit_ruleset(const gs_check_config *cfg, gs_arena *arena)
{
    uint32_t n = 0;
    const gs_rule_info *rules = gs_rules(&n);
    gs_strbuf sb = GS_STRBUF_INIT;
    for (uint32_t i = 0; rules && i < n; i++) {
        if (cfg && i < 64 && cfg->disabled[i])
            continue;
        if (sb.len)
            gs_strbuf_putc(&sb, ',');
        gs_strbuf_puts(&sb, rules[i].id);
    }
    const char *s = sb.oom ? NULL : gs_arena_strdup(arena, gs_strbuf_cstr(&sb));
    gs_strbuf_free(&sb);
    return s;
}

/* Length of the valid UTF-8 sequence at s[0..n) (1-4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) || (c == 0xF0 && s[1] < 0x90) ||
        (c == 0xF4 && s[1] > 0x8F))
        return 0; /* overlong, surrogate, beyond U+10FFFF */
    return len;
}

void gs_serve_utf8_repair(const char *s, size_t n, gs_strbuf *out)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(u + i, n - i);
        if (k) {
            gs_strbuf_add(out, s + i, k);
            i += k;
        } else {
            gs_strbuf_puts(out, "\xEF\xBF\xBD"); /* U+FFFD */
            i++;
        }
    }
}

/* A JSON string that is valid UTF-8 whatever s holds. */
static void json_str_utf8(gs_strbuf *sb, const char *s)
{
    gs_strbuf tmp = GS_STRBUF_INIT;
    gs_serve_utf8_repair(s, strlen(s), &tmp);
    gs_strbuf_json_str(sb, tmp.oom ? "" : gs_strbuf_cstr(&tmp));
    gs_strbuf_free(&tmp);
}

static void kv_str(gs_strbuf *sb, const char *key, const char *val)
{
    gs_strbuf_printf(sb, ",\"%s\":", key);
    if (val)
        json_str_utf8(sb, val);
    else
        gs_strbuf_puts(sb, "null");
}

void gs_audit_format(const gs_review *rv, int64_t unix_ms, const char *ruleset, const char *caller,
                     uint64_t latency_us, gs_strbuf *line)
{
    time_t secs = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    gs_strbuf_printf(line, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(unix_ms % 1000));
    const gs_admission *rq = &rv->req;
    kv_str(line, "uid", rq->uid);
    kv_str(line, "claimedUser", rq->username);
    kv_str(line, "caller", caller);
    kv_str(line, "endpoint", gs_review_endpoint_name(rv->endpoint));
    kv_str(line, "operation", rq->operation);
    gs_strbuf_puts(line, ",\"object\":{\"group\":");
    json_str_utf8(line, rq->group ? rq->group : "");
    kv_str(line, "version", rq->version);
    kv_str(line, "kind", rq->kind);
    kv_str(line, "namespace", rq->namespace_);
    kv_str(line, "name", rq->name);
    gs_strbuf_puts(line, "}");
    gs_strbuf_puts(line, rq->dry_run ? ",\"dryRun\":true" : ",\"dryRun\":false");
    gs_strbuf_puts(line, rv->allowed ? ",\"verdict\":\"allowed\"" : ",\"verdict\":\"denied\"");
    gs_strbuf_printf(line, ",\"code\":%d", rv->allowed ? 200 : (int)rv->status_code);
    gs_strbuf_puts(line, ",\"rules\":[");
    for (uint32_t i = 0; i < rv->nfindings; i++) {
        const gs_review_finding *f = &rv->findings[i];
        gs_strbuf_puts(line, i ? ",{\"id\":" : "{\"id\":");
        json_str_utf8(line, f->rule_id ? f->rule_id : "");
        kv_str(line, "severity", gs_severity_name(f->severity));
        gs_strbuf_puts(line, f->suppressed ? ",\"suppressed\":true" : ",\"suppressed\":false");
        kv_str(line, "message", f->message);
        gs_strbuf_putc(line, '}');
    }
    gs_strbuf_puts(line, "],\"warnings\":[");
    for (uint32_t i = 0; i < rv->nwarnings; i++) {
        if (i)
            gs_strbuf_putc(line, ',');
        json_str_utf8(line, rv->warnings[i] ? rv->warnings[i] : "");
    }
    gs_strbuf_putc(line, ']');
    kv_str(line, "message", rv->allowed ? NULL : rv->message);
    /* the patch is our own compact JSON array: embed it as a value */
    gs_strbuf_puts(line, ",\"patch\":");
    if (rv->patch && rv->patch_len)
        gs_strbuf_add(line, rv->patch, rv->patch_len);
    else
        gs_strbuf_puts(line, "null");
    kv_str(line, "skipped", rv->skipped);
    kv_str(line, "objectError", rv->object_error);
    kv_str(line, "ruleset", ruleset);
    gs_strbuf_printf(line, ",\"latencyUs\":%llu}\n", (unsigned long long)latency_us);
}
