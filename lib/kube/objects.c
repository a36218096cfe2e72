/* objects.c - small accessors over decoded objects (sorted maps, resource lists). */
#include <string.h>

#include "gpusched/kube.h"

const char *gs_labels_get(const gs_labels *l, const char *key)
{
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->items[mid].key, key);
        if (c == 0)
            return l->items[mid].val;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const gs_quantity *gs_reslist_get(const gs_reslist *l, const char *name)
{
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->items[mid].name, name);
        if (c == 0)
            return &l->items[mid].q;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *gs_effect_name(gs_effect e)
{
    switch (e) {
    case GS_EFFECT_NO_SCHEDULE: return "NoSchedule";
    case GS_EFFECT_PREFER_NO_SCHEDULE: return "PreferNoSchedule";
    case GS_EFFECT_NO_EXECUTE: return "NoExecute";
    case GS_EFFECT_INVALID: return "<invalid>";
    case GS_EFFECT_ANY: break;
    }
    return "";
}

int gs_src_cmp(const gs_src *a, const gs_src *b)
{
    int r = strcmp(a->file ? a->file : "", b->file ? b->file : "");
    if (r)
        return r;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return 0;
}
