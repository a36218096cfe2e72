/* arena.c - bump allocator for things that die together. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/util.h"

struct gs_arena_block {
    gs_arena_block *next;
    size_t size; /* usable bytes in data[] */
    size_t used;
    _Alignas(16) unsigned char data[];
};

void gs_arena_init(gs_arena *a, size_t block_size)
{
    a->head = NULL;
    a->block_size = block_size ? block_size : 64 * 1024;
    a->used_total = 0;
}

void *gs_arena_alloc(gs_arena *a, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    gs_arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t bs = a->block_size;
        if (size > bs / 4) {
            /* big allocation: its own block, linked behind the head so the head stays usable */
            gs_arena_block *big = malloc(sizeof *big + size);
            if (!big)
                return NULL;
            big->size = size;
            big->used = size;
            if (b) {
                big->next = b->next;
                b->next = big;
            } else {
                big->next = NULL;
                a->head = big;
            }
            a->used_total += size;
            memset(big->data, 0, size);
            return big->data;
        }
        b = malloc(sizeof *b + bs);
        if (!b)
            return NULL;
        b->size = bs;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    a->used_total += size;
    memset(p, 0, size);
    return p;
}

void *gs_arena_memdup(gs_arena *a, const void *p, size_t size)
{
    void *d = gs_arena_alloc(a, size);
    if (d && size)
        memcpy(d, p, size);
    return d;
}

char *gs_arena_strndup(gs_arena *a, const char *s, size_t n)
{
    char *d = gs_arena_alloc(a, n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *gs_arena_strdup(gs_arena *a, const char *s)
{
    return s ? gs_arena_strndup(a, s, strlen(s)) : NULL;
}

char *gs_arena_printf(gs_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *d = gs_arena_alloc(a, (size_t)n + 1);
    if (!d)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

void gs_arena_reset(gs_arena *a)
{
    gs_arena_block *keep = NULL;
    gs_arena_block *b = a->head;
    while (b) {
        gs_arena_block *next = b->next;
        if (!keep && b->size == a->block_size) {
            keep = b;
        } else {
            free(b);
        }
        b = next;
    }
    if (keep) {
        keep->used = 0;
        keep->next = NULL;
    }
    a->head = keep;
    a->used_total = 0;
}

void gs_arena_free(gs_arena *a)
{
    gs_arena_block *b = a->head;
    while (b) {
        gs_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_total = 0;
}
