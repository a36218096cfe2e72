/*
 * fault_shim.c - LD_PRELOAD library for tests/serve/hostile-test.py: injects audit log
 * failures into a running `gpusched serve`. Built by tests/CMakeLists.txt, never linked
 * into gpusched.
 *
 * The file named by GS_FAULT_CTL says what to break, read at every call:
 *   "fdatasync"  fdatasync() fails with EIO
 *   "short"      write() to a regular file writes half the bytes, then reports that
 *                (a disk that filled up in the middle of a line)
 *   anything else, or no file: no fault
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int mode(void)
{
    const char *ctl = getenv("GS_FAULT_CTL");
    if (!ctl)
        return 0;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, ctl, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[16] = {0};
    ssize_t n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    if (n <= 0)
        return 0;
    if (!strncmp(buf, "fdatasync", 9))
        return 1;
    if (!strncmp(buf, "short", 5))
        return 2;
    return 0;
}

int fdatasync(int fd)
{
    if (mode() == 1) {
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fdatasync, fd);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    struct stat st;
    if (n > 1 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && mode() == 2)
        return syscall(SYS_write, fd, buf, n / 2);
    return syscall(SYS_write, fd, buf, n);
}
