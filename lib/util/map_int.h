/*
 * map_int.h - whole inputs without copying them: a regular file is mapped read-only
 * (the mapping is page cache, not heap: it costs no anonymous memory and is not bounded
 * by a size limit); stdin or a pipe is read in 1 MiB chunks into a growing buffer (heap:
 * its size). Private to lib/.
 */
#ifndef GPUSCHED_MAP_INT_H
#define GPUSCHED_MAP_INT_H

#include <stddef.h>

#include "gpusched/error.h"

typedef struct gs_mapped {
    const char *data; /* len bytes; not NUL-terminated when mapped */
    size_t len;
    void *map;        /* mapping to unmap, or NULL */
    size_t map_len;
    char *heap;       /* buffer to free, or NULL */
} gs_mapped;

/* Map or read `path` ("-" = stdin). max_bytes > 0: a larger input is GS_ERR_LIMIT "file
 * larger than the limit of N bytes" (the message of gs_read_file). Errors: GS_ERR_IO,
 * GS_ERR_LIMIT, GS_ERR_NOMEM. */
int gs_map_input(const char *path, size_t max_bytes, gs_mapped *m, gs_error *err);
void gs_unmap_input(gs_mapped *m);
/* The mapped pages before `upto` leave memory (page cache keeps them; a later read of
 * them faults them back in from the file, so pointers into them stay valid). No-op for
 * heap inputs. Keeps a reader's resident size to a window over a multi-gigabyte file. */
void gs_map_release(const gs_mapped *m, const char *upto);

#endif
