/*
 * gpu_int.h - private helpers shared by the lib/gpu/ sources (catalog, request, inventory,
 * fit). Nothing here is part of the public contract.
 */
#ifndef GPUSCHED_GPU_INT_H
#define GPUSCHED_GPU_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/gpu.h"

/* Input bounds of one node inventory (anything larger is GS_ERR_LIMIT). */
#define GS_GPU__MAX_DEVS 64u          /* physical GPUs per node */
#define GS_GPU__MAX_MIG 448u          /* MIG instances per node (64 x 7) */
#define GS_GPU__MAX_REPLICAS 1024u    /* time-slicing / MPS replicas per device */
#define GS_GPU__MAX_MIG_PER_GPU 8u    /* no GPU holds more than 8 instances (8 memory slices) */
#define GS_GPU__NO_MIG 0xffffu        /* gs_gpu_assign.mig for a non-MIG entry */

/* Lower case; a blank compares like '-' (GFD sanitises the NVML name's blanks to '-',
 * HAMi's register keeps them: "NVIDIA-Tesla V100-PCIE-32GB"). */
static inline char gs_gpu__lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c == ' ' ? '-' : c;
}

/* Case-insensitive equality of a[0..an) and b[0..bn). */
static inline bool gs_gpu__ieq(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (gs_gpu__lower(a[i]) != gs_gpu__lower(b[i]))
            return false;
    return true;
}

/* Case-insensitive prefix test. */
static inline bool gs_gpu__iprefix(const char *s, size_t n, const char *prefix)
{
    size_t i = 0;
    for (; prefix[i]; i++)
        if (i >= n || gs_gpu__lower(s[i]) != gs_gpu__lower(prefix[i]))
            return false;
    return true;
}

/* The "model core" of a product or model string: without a leading "NVIDIA-" (or
 * "NVIDIA " / "NVIDIA_") and without the "-SHARED" and "-MIG-<profile>" suffixes GFD
 * appends. Writes the offset and length of the core within s[0..n). */
void gs_gpu__model_core(const char *s, size_t n, size_t *off, size_t *len);

/* Profile index of `name` in m->profiles, or -1. Accepts '+', '.' or nothing in place of
 * the '+' of an attribute suffix ("1g.10gb+me", "1g.10gb.me", "1g.10gbme"). */
int gs_gpu__profile_index(const gs_mig_model *m, const char *name, size_t n);

/* Like gs_gpu__profile_index, but when the exact name is unknown, the profile with the
 * same compute slices and attribute and the nearest memory size (drivers rename profiles
 * when reported memory moves: "3g.39gb" for "3g.40gb", nvidia.md 1.7). -1 if none. */
int gs_gpu__profile_resolve(const gs_mig_model *m, const char *name);

#endif
