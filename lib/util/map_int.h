/*
 * map_int.h - inputs without copying them: a regular file is mapped read-only (the
 * mapping is page cache, not heap: it costs no anonymous memory and is not bounded by a
 * size limit); stdin or a pipe is either read whole in 1 MiB chunks into a growing buffer
 * (heap: its size), or, for readers that can stream it, opened as a gs_window: a sliding
 * heap window over the stream that holds only the bytes not yet consumed. Private to lib/.
 */
#ifndef GPUSCHED_MAP_INT_H
#define GPUSCHED_MAP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* ---------------------------------------------------------------- windows */
/* A window over a stream (pipe, FIFO, terminal): buf[0..len) are the bytes read and not
 * yet dropped; buf[0] sits at stream offset `base`, at 1-based (line, col) (columns count
 * characters; positions advance as bytes are dropped, so they stay exact). Bytes are
 * checked as they arrive (gs_window_fill): well-formed UTF-8 and no NUL byte, as
 * gs_yt_check_text checks a whole input; `checked` is the length of buf already checked
 * (a character split by a read is checked once complete). The buffer grows to what the
 * reader keeps at once (one List item plus a read) and is reused after each drop. */
typedef struct gs_window {
    int fd;
    const char *path;
    size_t max_bytes;   /* > 0: a longer stream is GS_ERR_LIMIT, as gs_map_input says it */
    char *buf;
    size_t cap, len, checked;
    unsigned long long base; /* stream offset of buf[0] */
    unsigned long long total;
    uint32_t line, col;      /* of buf[0] */
    bool eof;
    bool bad;                /* the check failed: bad_at is the offending byte (of buf) */
    size_t bad_at;
    size_t peak;             /* the largest capacity reached (for benchmarks and tests) */
    size_t chunk;            /* bytes asked of each read: gs__window_chunk or 1 MiB */
    size_t mark;             /* set by gs_yt_parse_json_window: the offset in buf of the
                                List item being handed out */
} gs_window;

/* Tests only: the read size of the next windows (0: 1 MiB), so that reads cut the input
 * anywhere; and the largest buffer of the last window closed (bounded memory). */
extern size_t gs__window_chunk;
extern size_t gs__window_last_peak;

/* Open `path` ("-" = stdin) for gs_map_input, or as a window: 1 when it is a stream and w
 * was set up (m is then empty), 0 when m holds the input (a regular file, mapped or
 * read), -1 with err set. */
int gs_map_or_window(const char *path, size_t max_bytes, gs_mapped *m, gs_window *w, gs_error *err);
/* Read until buf holds at least `want` bytes or the stream ends (w->eof). The bytes read
 * are checked (UTF-8, NUL); a failed check stops reading (w->bad, w->bad_at) and returns 0
 * (the caller names the error where it reaches it). -1 with err set: read error, limit,
 * out of memory. */
int gs_window_fill(gs_window *w, size_t want, gs_error *err);
/* Read more (at least one read, or EOF). Same returns as gs_window_fill. */
int gs_window_more(gs_window *w, gs_error *err);
/* Forget buf[0..n): positions advance over them, the rest moves to buf[0]. */
void gs_window_drop(gs_window *w, size_t n);
/* Close the stream (unless stdin) and free the buffer. */
void gs_window_close(gs_window *w);

#endif
