/* map.c - map or read a whole input (contract in map_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpusched/util.h"
#include "util/jscan_int.h"
#include "util/map_int.h"

#define MAP_CHUNK ((size_t)1 << 20)

size_t gs__window_chunk;
size_t gs__window_last_peak;

static int too_big(const char *path, size_t max_bytes, gs_error *err)
{
    return gs_error_set(err, GS_ERR_LIMIT, path, 0, 0, NULL, "file larger than the limit of %zu bytes",
                        max_bytes);
}

/* Chunks into a growing heap buffer (pipes, terminals, FIFOs). */
static int read_stream(int fd, const char *path, size_t max_bytes, gs_mapped *m, gs_error *err)
{
    size_t cap = 0, len = 0;
    char *buf = NULL;
    for (;;) {
        if (cap - len < MAP_CHUNK) {
            size_t nc = cap ? cap * 2 : 4 * MAP_CHUNK;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                free(buf);
                return gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", path);
            }
            buf = nb;
            cap = nc;
        }
        ssize_t r = read(fd, buf + len, MAP_CHUNK);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            free(buf);
            return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "read error: %s", strerror(errno));
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (max_bytes && len > max_bytes) {
            free(buf);
            return too_big(path, max_bytes, err);
        }
    }
    if (!buf && !(buf = malloc(1)))
        return gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", path);
    buf[len] = '\0';
    m->heap = buf;
    m->data = buf;
    m->len = len;
    return 0;
}

int gs_map_input(const char *path, size_t max_bytes, gs_mapped *m, gs_error *err)
{
    memset(m, 0, sizeof *m);
    m->data = "";
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    struct stat sb;
    int rc;
    off_t at = is_stdin ? lseek(fd, 0, SEEK_CUR) : 0;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && at == 0) {
        size_t size = (size_t)sb.st_size;
        if (max_bytes && size > max_bytes) {
            rc = too_big(path, max_bytes, err);
        } else if (size == 0) {
            rc = 0;
        } else {
            void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                rc = read_stream(fd, path, max_bytes, m, err); /* a file system without mmap */
            } else {
                (void)madvise(p, size, MADV_SEQUENTIAL);
                m->map = p;
                m->map_len = size;
                m->data = p;
                m->len = size;
                rc = 0;
            }
        }
    } else {
        rc = read_stream(fd, path, max_bytes, m, err);
    }
    if (!is_stdin)
        close(fd);
    return rc;
}

int gs_map_or_window(const char *path, size_t max_bytes, gs_mapped *m, gs_window *w, gs_error *err)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    bool is_stdin = strcmp(path, "-") == 0;
    struct stat sb;
    int fd = is_stdin ? STDIN_FILENO : -1;
    if (!is_stdin) {
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
            return gs_map_input(path, max_bytes, m, err);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    }
    off_t at = is_stdin ? lseek(fd, 0, SEEK_CUR) : -1;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (at == 0 || !is_stdin)) {
        if (!is_stdin)
            close(fd);
        return gs_map_input(path, max_bytes, m, err);
    }
    memset(m, 0, sizeof *m);
    m->data = "";
    w->fd = fd;
    w->path = path;
    w->max_bytes = max_bytes;
    w->chunk = gs__window_chunk ? gs__window_chunk : MAP_CHUNK;
    w->line = 1;
    w->col = 1;
    return 1;
}

/* The end of the last whole character of s[0..n) (a sequence cut by the read waits). */
static size_t whole_chars(const char *s, size_t n)
{
    size_t i = n, k = 0;
    while (i > 0 && k < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        k++;
    }
    if (i == 0)
        return n;
    unsigned char c = (unsigned char)s[i - 1];
    size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return (need > k + 1 && need <= 4) ? i - 1 : n;
}

static void window_check(gs_window *w)
{
    size_t upto = w->eof ? w->len : whole_chars(w->buf, w->len);
    if (upto <= w->checked)
        return;
    const char *s = w->buf + w->checked;
    size_t n = upto - w->checked;
    size_t bad = gs_utf8_invalid_at(s, n);
    const char *nul = memchr(s, '\0', bad < n ? bad : n);
    if (nul)
        bad = (size_t)(nul - s);
    if (bad < n) {
        w->bad = true;
        w->bad_at = w->checked + bad;
        w->checked += bad;
        return;
    }
    w->checked = upto;
}

int gs_window_more(gs_window *w, gs_error *err)
{
    if (w->eof || w->bad)
        return 0;
    if (w->cap - w->len < w->chunk) {
        size_t nc = w->cap < 4 * w->chunk ? 4 * w->chunk : w->cap;
        while (nc - w->len < w->chunk)
            nc *= 2;
        char *nb = realloc(w->buf, nc + 1);
        if (!nb)
            return gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", w->path);
        w->buf = nb;
        w->cap = nc;
        if (nc > w->peak)
            w->peak = nc;
    }
    for (;;) {
        ssize_t r = read(w->fd, w->buf + w->len, w->chunk);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return gs_error_set(err, GS_ERR_IO, w->path, 0, 0, NULL, "read error: %s", strerror(errno));
        }
        if (r == 0)
            w->eof = true;
        w->len += (size_t)r;
        w->total += (unsigned long long)r;
        break;
    }
    w->buf[w->len] = '\0';
    if (w->max_bytes && w->total > w->max_bytes)
        return too_big(w->path, w->max_bytes, err);
    window_check(w);
    return 0;
}

int gs_window_fill(gs_window *w, size_t want, gs_error *err)
{
    while (w->len < want && !w->eof && !w->bad)
        if (gs_window_more(w, err) != 0)
            return -1;
    return 0;
}

void gs_window_drop(gs_window *w, size_t n)
{
    if (n > w->len)
        n = w->len;
    if (!n)
        return;
    gs_jcur c;
    gs_jcur_init_text(&c, w->buf, w->buf + w->len, w->line, w->col, false);
    gs_jcur_move(&c, w->buf + n);
    w->line = c.line;
    w->col = c.col;
    memmove(w->buf, w->buf + n, w->len - n);
    w->len -= n;
    w->checked = w->checked > n ? w->checked - n : 0;
    if (w->bad)
        w->bad_at -= n < w->bad_at ? n : w->bad_at;
    w->base += n;
    w->buf[w->len] = '\0';
}

void gs_window_close(gs_window *w)
{
    if (w->fd > STDIN_FILENO)
        close(w->fd);
    gs__window_last_peak = w->peak;
    free(w->buf);
    w->buf = NULL;
    w->fd = -1;
}

void gs_map_release(const gs_mapped *m, const char *upto)
{
    if (!m || !m->map || upto <= (const char *)m->map)
        return;
    long pg = sysconf(_SC_PAGESIZE);
    size_t ps = pg > 0 ? (size_t)pg : 4096;
    size_t n = (size_t)(upto - (const char *)m->map);
    if (n > m->map_len)
        n = m->map_len;
    n -= n % ps;
    if (n)
        (void)madvise(m->map, n, MADV_DONTNEED);
}

void gs_unmap_input(gs_mapped *m)
{
    if (m->map)
        munmap(m->map, m->map_len);
    free(m->heap);
    memset(m, 0, sizeof *m);
}
