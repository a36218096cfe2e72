/* misc.c - vectors, hashing, interning, RNG, strict number/time parsing, files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpusched/util.h"

int gs_vec_grow_(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    void *nv = realloc(*v, nc * elem);
    if (!nv)
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

uint64_t gs_hash_mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t gs_hash_bytes(const void *p, size_t n) { return gs_hash_mix(GS_HASH_INIT, p, n); }

/* ---------------------------------------------------------------- intern */
void gs_intern_init(gs_intern *t) { memset(t, 0, sizeof *t); }

static int intern_rehash(gs_intern *t, uint32_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 0; id < t->n; id++) {
        uint64_t h = gs_hash_bytes(t->strs[id], t->lens[id]);
        uint32_t i = (uint32_t)h & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

int32_t gs_intern_find(const gs_intern *t, const char *s, size_t n)
{
    if (!t->nslots)
        return -1;
    uint64_t h = gs_hash_bytes(s, n);
    uint32_t i = (uint32_t)h & (t->nslots - 1);
    while (t->slots[i]) {
        uint32_t id = t->slots[i] - 1;
        if (t->lens[id] == n && memcmp(t->strs[id], s, n) == 0)
            return (int32_t)id;
        i = (i + 1) & (t->nslots - 1);
    }
    return -1;
}

int32_t gs_intern_id(gs_intern *t, const char *s, size_t n)
{
    int32_t found = gs_intern_find(t, s, n);
    if (found >= 0)
        return found;
    if ((t->n + 1) * 2 > t->nslots) {
        if (intern_rehash(t, t->nslots ? t->nslots * 2 : 64))
            return -1;
    }
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 32;
        char **ns = realloc(t->strs, nc * sizeof *ns);
        if (!ns)
            return -1;
        t->strs = ns;
        uint32_t *nl = realloc(t->lens, nc * sizeof *nl);
        if (!nl)
            return -1;
        t->lens = nl;
        t->cap = nc;
    }
    char *copy = malloc(n + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, n);
    copy[n] = '\0';
    uint32_t id = t->n++;
    t->strs[id] = copy;
    t->lens[id] = (uint32_t)n;
    uint64_t h = gs_hash_bytes(s, n);
    uint32_t i = (uint32_t)h & (t->nslots - 1);
    while (t->slots[i])
        i = (i + 1) & (t->nslots - 1);
    t->slots[i] = id + 1;
    return (int32_t)id;
}

void gs_intern_free(gs_intern *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->strs[i]);
    free(t->strs);
    free(t->lens);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- RNG */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void gs_rng_seed(gs_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gs_rng_next(gs_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t gs_rng_below(gs_rng *r, uint64_t n)
{
    /* Lemire's nearly divisionless method, with rejection for exact uniformity. */
    uint64_t x = gs_rng_next(r);
    unsigned __int128 m = (unsigned __int128)x * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
        uint64_t t = -n % n;
        while (l < t) {
            x = gs_rng_next(r);
            m = (unsigned __int128)x * n;
            l = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double gs_rng_double(gs_rng *r) { return (double)(gs_rng_next(r) >> 11) * 0x1.0p-53; }

/* ---------------------------------------------------------------- parsing */
int gs_parse_i64(const char *s, size_t n, int64_t *out)
{
    if (!n)
        return -1;
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
        if (n == 1)
            return -1;
    }
    uint64_t v = 0;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (lim - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

int gs_parse_rfc3339(const char *s, int64_t *out)
{
    /* YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) */
    size_t n = strlen(s);
    if (n < 20)
        return -1;
    int Y, M, D, h, m, sec;
    if (digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) || s[7] != '-' ||
        digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &m) || s[16] != ':' ||
        digits(s + 17, 2, &sec))
        return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -1;
    size_t i = 19;
    if (i < n && s[i] == '.') {
        i++;
        size_t st = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == st)
            return -1;
    }
    int64_t off = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int oh, om;
        if (n - i != 6 || digits(s + i + 1, 2, &oh) || s[i + 3] != ':' || digits(s + i + 4, 2, &om))
            return -1;
        off = (int64_t)oh * 3600 + om * 60;
        if (s[i] == '-')
            off = -off;
        i += 6;
    } else {
        return -1;
    }
    if (i != n)
        return -1;
    int64_t days = days_from_civil(Y, (unsigned)M, (unsigned)D);
    *out = days * 86400 + h * 3600 + m * 60 + sec - off;
    return 0;
}

/* Go's time.ParseDuration grammar, non-negative: a bare integer of seconds, "0", or a
 * sequence of decimal numbers (fractions allowed: "1.5h", ".5s", "1.s") each with a unit
 * ns, us (also U+00B5 or U+03BC + "s"), ms, s, m, h, plus d = 24h ("2h45m", "300ms",
 * "1m0.5s"); an optional leading '+'. Summed exactly in nanoseconds (__int128) and
 * rounded up to whole seconds; anything beyond INT64_MAX seconds is an error. */
int gs_parse_duration(const char *s, int64_t *seconds_out)
{
    if (!s || !*s)
        return -1;
    int64_t v;
    size_t n = strlen(s);
    if (gs_parse_i64(s, n, &v) == 0) {
        if (v < 0)
            return -1;
        *seconds_out = v;
        return 0;
    }
    const char *p = s;
    if (*p == '+')
        p++;
    if (!*p)
        return -1;
    if (strcmp(p, "0") == 0) {
        *seconds_out = 0;
        return 0;
    }
    const __int128 limit = (__int128)INT64_MAX * 1000000000;
    __int128 total = 0;
    while (*p) {
        __int128 whole = 0, frac = 0, scale = 1;
        bool digits = false;
        while (*p >= '0' && *p <= '9') {
            whole = whole * 10 + (*p - '0');
            if (whole > limit)
                return -1;
            digits = true;
            p++;
        }
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                if (scale < (__int128)1000000000000000000LL) { /* further digits cannot matter */
                    frac = frac * 10 + (*p - '0');
                    scale *= 10;
                }
                digits = true;
                p++;
            }
        }
        if (!digits)
            return -1;
        int64_t unit;
        if (strncmp(p, "ns", 2) == 0) {
            unit = 1;
            p += 2;
        } else if (strncmp(p, "us", 2) == 0) {
            unit = 1000;
            p += 2;
        } else if (strncmp(p, "\xC2\xB5s", 3) == 0 || strncmp(p, "\xCE\xBCs", 3) == 0) {
            unit = 1000; /* U+00B5 micro sign, U+03BC Greek mu */
            p += 3;
        } else if (strncmp(p, "ms", 2) == 0) {
            unit = 1000000;
            p += 2;
        } else if (*p == 's') {
            unit = 1000000000LL;
            p++;
        } else if (*p == 'm') {
            unit = 60 * 1000000000LL;
            p++;
        } else if (*p == 'h') {
            unit = 3600 * 1000000000LL;
            p++;
        } else if (*p == 'd') {
            unit = 86400 * 1000000000LL;
            p++;
        } else {
            return -1; /* missing or unknown unit */
        }
        if (whole > limit / unit)
            return -1;
        total += whole * unit + frac * unit / scale;
        if (total > limit)
            return -1;
    }
    __int128 secs = (total + 999999999) / 1000000000;
    if (secs > INT64_MAX)
        return -1;
    *seconds_out = (int64_t)secs;
    return 0;
}

/* ---------------------------------------------------------------- files */
char *gs_read_file(const char *path, size_t max_bytes, size_t *len_out, gs_error *err)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 64 * 1024, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        if (!is_stdin)
            fclose(f);
        gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", path);
        return NULL;
    }
    for (;;) {
        if (len == cap) {
            if (cap >= max_bytes) {
                free(buf);
                if (!is_stdin)
                    fclose(f);
                gs_error_set(err, GS_ERR_LIMIT, path, 0, 0, NULL,
                             "file larger than the limit of %zu bytes", max_bytes);
                return NULL;
            }
            size_t nc = cap * 2;
            if (nc > max_bytes)
                nc = max_bytes;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                free(buf);
                if (!is_stdin)
                    fclose(f);
                gs_fail(err, GS_ERR_NOMEM, "out of memory reading %s", path);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0) {
            if (ferror(f)) {
                free(buf);
                if (!is_stdin)
                    fclose(f);
                gs_error_set(err, GS_ERR_IO, path, 0, 0, NULL, "read error: %s", strerror(errno));
                return NULL;
            }
            break;
        }
    }
    if (!is_stdin)
        fclose(f);
    buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

size_t gs_utf8_invalid_at(const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            /* ASCII runs (most of any manifest) 16 bytes at a time */
#if defined(__SSE2__)
            if (n - i >= 16) {
                while (n - i >= 16) {
                    unsigned m = (unsigned)_mm_movemask_epi8(
                        _mm_loadu_si128((const __m128i *)(const void *)(s + i)));
                    if (m) {
                        i += (size_t)__builtin_ctz(m);
                        break;
                    }
                    i += 16;
                }
                continue; /* s[i] is looked at again */
            }
#endif
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1Fu, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0Fu, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07u, min = 0x10000;
        } else {
            return i;
        }
        if (n - i < len)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += len;
    }
    return n;
}

void gs_text_line_col(const char *text, size_t off, int *line, int *col)
{
    /* line breaks with memchr, then the characters of the last line (continuation bytes
     * are not characters) */
    int l = 1;
    const char *p = text, *end = text + off, *nl;
    while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        l++;
        p = nl + 1;
    }
    int c = 1;
    for (; p < end; p++)
        c += ((unsigned char)*p & 0xC0) != 0x80;
    *line = l;
    *col = c;
}
