/* map.c - map or read a whole input (contract in map_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/map_int.h"

#define MAP_CHUNK ((size_t)1 << 20)

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
