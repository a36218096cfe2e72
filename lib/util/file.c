/*
 * file.c - gs_write_file_atomic: replace a file whole or not at all.
 *
 * The data goes into a temporary file in the target's directory, which is fsynced, renamed
 * over the target, and the directory fsynced. The temporary is never opened by a name
 * someone else could have planted (a symlink or a file at FILE.tmp.<pid> is not followed):
 *  - first choice, O_TMPFILE: an unnamed file in the directory, given a name (linkat, which
 *    never follows or replaces what is at the new name) only once its data is synced, a
 *    moment before the rename; a kill -9 while writing leaves nothing behind;
 *  - where the file system or kernel has no O_TMPFILE (or /proc is not mounted): a new file
 *    FILE.tmp.<random> created with O_CREAT|O_EXCL|O_NOFOLLOW, unlinked on every failure.
 * The file gets mode 0666 less the umask, like any file the process creates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/util.h"

#define TMP_TRIES 64

/* path + ".tmp." + 12 characters no other process can predict cheaply. */
static void tmp_name(char *out, size_t cap, const char *path, unsigned attempt)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t seed[4] = {(uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30), (uint64_t)getpid(),
                        (uint64_t)attempt, (uint64_t)(uintptr_t)out};
    gs_rng r;
    gs_rng_seed(&r, gs_hash_bytes(seed, sizeof seed));
    char sfx[13];
    for (int i = 0; i < 12; i++)
        sfx[i] = digits[gs_rng_below(&r, sizeof digits - 1)];
    sfx[12] = '\0';
    snprintf(out, cap, "%s.tmp.%s", path, sfx);
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

static int write_fd(int fd, const char *data, size_t len)
{
    int rc = write_all(fd, data, len);
    while (rc == 0 && fsync(fd) != 0) {
        if (errno != EINTR)
            rc = -1;
    }
    return rc;
}

/* Unnamed temporary in dir, written and synced, then linked at a fresh name in tmp.
 * 1: done; 0: not available here (use a named temporary); -1: writing failed (errno). */
static int via_tmpfile(const char *dir, const char *path, char *tmp, size_t cap, const char *data,
                       size_t len)
{
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return 0;
    if (write_fd(fd, data, len) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (unsigned t = 0; t < TMP_TRIES; t++) {
        tmp_name(tmp, cap, path, t);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
            close(fd);
            return 1;
        }
        if (errno != EEXIST)
            break;
    }
    close(fd);
#else
    (void)dir, (void)path, (void)tmp, (void)cap, (void)data, (void)len;
#endif
    return 0;
}

/* Named temporary created exclusively. 1: done; -1: failed (errno), nothing left behind. */
static int via_named(const char *path, char *tmp, size_t cap, const char *data, size_t len)
{
    int fd = -1;
    for (unsigned t = 0; t < TMP_TRIES && fd < 0; t++) {
        tmp_name(tmp, cap, path, t + TMP_TRIES);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    if (fd < 0)
        return -1;
    int rc = write_fd(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 1;
}

int gs_write_file_atomic(const char *path, const char *data, size_t len, gs_error *err)
{
    if (strcmp(path, "-") == 0) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            return gs_error_set(err, GS_ERR_IO, "-", 0, 0, NULL, "write to stdout failed");
        return 0;
    }
    size_t pl = strlen(path);
    if (pl == 0)
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot create: empty file name");
    size_t cap = pl + 32;
    char *tmp = malloc(cap);
    char *dir = malloc(pl + 2);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        return gs_fail(err, GS_ERR_NOMEM, "out of memory");
    }
    const char *slash = strrchr(path, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == path)
        strcpy(dir, "/");
    else
        memcpy(dir, path, (size_t)(slash - path)), dir[slash - path] = '\0';

    int rc = via_tmpfile(dir, path, tmp, cap, data, len);
    if (rc == 0)
        rc = via_named(path, tmp, cap, data, len);
    if (rc < 0) {
        int e = errno;
        free(tmp);
        free(dir);
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot write: %s", strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        free(dir);
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot replace: %s", strerror(e));
    }
    free(tmp);
    /* the rename itself is durable once the directory is synced (file systems that cannot
     * sync a directory say EINVAL: nothing more to do there) */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = 0;
    if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL))
        e = errno;
    if (dfd >= 0)
        close(dfd);
    free(dir);
    if (e)
        return gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "written, but syncing its directory failed: %s",
                            strerror(e));
    return 0;
}
