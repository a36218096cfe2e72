/*
 * quantity.c - Kubernetes resource quantities (apimachinery resource.Quantity): parsing,
 * canonical formatting, rounding accessors and exact arithmetic.
 *
 * Values are held as a signed 128-bit count of nano-units. Parsing never allocates and
 * runs in time linear in the input, whatever its length or exponent; see the essays
 * above scan_quantity() and gs_quantity_parse() for the grammar and the arithmetic.
 */
#include "gpusched/quantity.h"

#include <string.h>

#include "gpusched/util.h"

typedef __int128 i128;
typedef unsigned __int128 u128;

#define I128_MAX ((i128)(((u128)1 << 127) - 1))
#define NANOS_PER_UNIT 1000000000u
#define NANOS_PER_MILLI 1000000u
/* BinarySI magnitudes are capped at 2^63-1 units, i.e. this many nanos. */
#define BINARY_CAP_NANOS ((u128)INT64_MAX * NANOS_PER_UNIT)

static const char msg_format_wrong[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
static const char msg_suffix[] = "unable to parse quantity's suffix";
static const char msg_numeric[] = "unable to parse quantity's numeric value";
static const char msg_too_large[] =
    "quantity too large: its magnitude must stay below 1.7e29 (signed 128-bit nano-units)";

/* ---------------------------------------------------------------- scanning */

/* The pieces of "[sign] int-digits [. frac-digits] suffix" as they appear in the input. */
typedef struct quantity_text {
    bool negative;
    const char *int_digits; /* digits before '.', leading zeros included */
    size_t n_int;
    const char *frac_digits; /* digits after '.' */
    size_t n_frac;
    const char *suffix;
    size_t n_suffix;
} quantity_text;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_suffix_letter(char c)
{
    switch (c) {
    case 'e': case 'E': case 'i': case 'n': case 'u': case 'm':
    case 'k': case 'K': case 'M': case 'G': case 'T': case 'P':
        return true;
    default:
        return false;
    }
}

/*
 * Scanner, mirroring upstream's hand-written one (not its regular expression):
 *   optional '+'/'-'; a run of digits; optionally '.' and a run of digits; a run of the
 *   letters eEinumkKMGTP; optionally one '+'/'-'; a run of digits; end of input.
 * Every run may be empty, so "+", "-", ".", "-." and "e3" scan (as zero mantissas); a
 * second '.', a space or any other letter is a format error. Whether the scanned suffix
 * means anything is decided later (interpret_suffix), which is why "1K" or "--1" are
 * suffix errors and not format errors.
 */
static bool scan_quantity(const char *s, size_t len, quantity_text *t)
{
    size_t pos = 0;
    memset(t, 0, sizeof *t);
    if (pos < len && (s[pos] == '+' || s[pos] == '-')) {
        t->negative = s[pos] == '-';
        pos++;
    }
    t->int_digits = s + pos;
    while (pos < len && is_digit(s[pos]))
        pos++;
    t->n_int = (size_t)(s + pos - t->int_digits);
    t->frac_digits = s + pos;
    if (pos < len && s[pos] == '.') {
        pos++;
        t->frac_digits = s + pos;
        while (pos < len && is_digit(s[pos]))
            pos++;
        t->n_frac = (size_t)(s + pos - t->frac_digits);
    }
    t->suffix = s + pos;
    while (pos < len && is_suffix_letter(s[pos]))
        pos++;
    if (pos < len && (s[pos] == '+' || s[pos] == '-'))
        pos++;
    while (pos < len && is_digit(s[pos]))
        pos++;
    t->n_suffix = (size_t)(s + pos - t->suffix);
    return pos == len;
}

/* What a suffix means: value = mantissa * base^exponent, printed back in format fmt. */
typedef struct suffix_meaning {
    int base; /* 10 or 2 */
    int32_t exponent;
    gs_qformat fmt;
} suffix_meaning;

/*
 * Decimal SI suffixes first (so a lone "E" is exa), then binary SI, then a decimal
 * exponent: 'e' or 'E' followed by what Go's strconv.ParseInt(s, 10, 64) accepts. Like
 * upstream, the int64 exponent is then narrowed to int32 by two's-complement truncation
 * (Go's int32() conversion), so "1e4294967296" is 1.
 */
static bool interpret_suffix(const char *s, size_t n, suffix_meaning *m)
{
    m->base = 10;
    m->fmt = GS_QF_DECIMAL_SI;
    m->exponent = 0;
    if (n == 0)
        return true;
    if (n == 1) {
        switch (s[0]) {
        case 'n': m->exponent = -9; return true;
        case 'u': m->exponent = -6; return true;
        case 'm': m->exponent = -3; return true;
        case 'k': m->exponent = 3; return true;
        case 'M': m->exponent = 6; return true;
        case 'G': m->exponent = 9; return true;
        case 'T': m->exponent = 12; return true;
        case 'P': m->exponent = 15; return true;
        case 'E': m->exponent = 18; return true;
        default: return false;
        }
    }
    if (n == 2 && s[1] == 'i') {
        static const char binary_letters[] = "KMGTPE";
        const char *hit = memchr(binary_letters, s[0], 6);
        if (hit) {
            m->base = 2;
            m->fmt = GS_QF_BINARY_SI;
            m->exponent = (int32_t)(10 * (hit - binary_letters + 1));
            return true;
        }
    }
    if (s[0] == 'e' || s[0] == 'E') {
        int64_t parsed;
        if (gs_parse_i64(s + 1, n - 1, &parsed))
            return false;
        uint32_t low = (uint32_t)(uint64_t)parsed;
        m->exponent = low > (uint32_t)INT32_MAX ? (int32_t)((int64_t)low - 4294967296LL)
                                                : (int32_t)low;
        m->fmt = GS_QF_DECIMAL_EXP;
        return true;
    }
    return false;
}

/* ---------------------------------------------------------------- exact arithmetic */

/* Digit i of the mantissa digit string D = int_digits ++ frac_digits (the '.' removed). */
static unsigned digit_at(const quantity_text *t, size_t i)
{
    char c = i < t->n_int ? t->int_digits[i] : t->frac_digits[i - t->n_int];
    return (unsigned)(c - '0');
}

/*
 * floor(0.D * 10^point) where 0.D is the digit string read as a fraction: the integer
 * formed by the first `point` digits of D, padded with zeros when point > |D|. Fails
 * (returns false) as soon as the value exceeds `limit`. Leading zeros cost one step each;
 * once the accumulator is non-zero at most 39 steps fit below any 128-bit limit, so huge
 * exponents are cheap.
 */
static bool shifted_integer(const quantity_text *t, int64_t point, u128 limit, u128 *out)
{
    int64_t ndigits = (int64_t)(t->n_int + t->n_frac);
    int64_t real = point < 0 ? 0 : (point < ndigits ? point : ndigits);
    u128 acc = 0;
    for (int64_t i = 0; i < real; i++) {
        unsigned d = digit_at(t, (size_t)i);
        if (acc > (limit - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    for (int64_t i = ndigits; acc != 0 && i < point; i++) {
        if (acc > limit / 10)
            return false;
        acc *= 10;
    }
    *out = acc;
    return true;
}

/* Whether any digit of D at index >= from is non-zero (the part below the point). */
static bool fraction_nonzero(const quantity_text *t, int64_t from)
{
    size_t ndigits = t->n_int + t->n_frac;
    for (size_t i = from < 0 ? 0 : (size_t)from; i < ndigits; i++)
        if (digit_at(t, i) != 0)
            return true;
    return false;
}

/*
 * ceil(F * 2^e) for the fraction F = 0.d[from] d[from+1] ... d[last], e <= 60.
 * Long multiplication from the last digit up: each step computes d * 2^e + carry, keeps
 * the low decimal digit (we only need to know whether any is non-zero) and carries the
 * rest. The carry never exceeds 2^e (induction: (9 * 2^e + 2^e) / 10 = 2^e), so every
 * step fits in 64 bits. The final carry is the integer part of F * 2^e.
 */
static uint64_t fraction_times_pow2_ceil(const quantity_text *t, int64_t from, int32_t e)
{
    size_t ndigits = t->n_int + t->n_frac;
    size_t first = from < 0 ? 0 : (size_t)from;
    uint64_t pow2 = (uint64_t)1 << e, carry = 0;
    bool remainder = false;
    for (size_t i = ndigits; i > first; i--) {
        uint64_t x = digit_at(t, i - 1) * pow2 + carry;
        remainder |= (x % 10) != 0;
        carry = x / 10;
    }
    return carry + (remainder ? 1 : 0);
}

/*
 * gs_quantity_parse: what upstream does, without big numbers.
 *
 * The mantissa digits D (int ++ frac, the point after n_int digits) and the suffix give
 *   decimal: |v| * 10^9 = 0.D * 10^(n_int + 9 + exponent)
 *   binary:  |v| * 10^9 = 0.D * 10^(n_int + 9) * 2^exponent       (exponent 10..60)
 * Upstream rounds the exact value up (away from zero) to whole nanos, then caps BinarySI
 * magnitudes at 2^63-1 units and switches BinarySI magnitudes strictly between 0 and 1 to
 * DecimalSI. So:
 *   decimal: nanos = integer part (shifted_integer) + 1 if any digit below the point;
 *   binary:  nanos = A * 2^e + ceil(B * 2^e) with A, B the integer and fraction parts of
 *            0.D * 10^(n_int+9), compared against the cap before anything can overflow.
 * Decimal magnitudes above INT128_MAX nanos fail with GS_ERR_LIMIT (upstream would keep
 * going with big numbers).
 *
 * One upstream error survives from its slow path: when the mantissa has no digit at all
 * and the value would need the big-decimal path (a decimal exponent below -9, or Pi/Ei),
 * upstream fails to parse the empty number: "e-10" and "Pi" are errors while "e3", "Ki"
 * and "-" are zero.
 *
 * On failure *out is left untouched.
 */
int gs_quantity_parse(const char *s, size_t len, gs_quantity *out, gs_error *err)
{
    quantity_text t;
    suffix_meaning m;
    if (!s || len == 0 || !scan_quantity(s, len, &t))
        return gs_fail(err, GS_ERR_INVALID, "%s", msg_format_wrong);
    if (!interpret_suffix(t.suffix, t.n_suffix, &m))
        return gs_fail(err, GS_ERR_INVALID, "%s", msg_suffix);

    bool has_digit = t.n_int + t.n_frac > 0;
    if (!has_digit && ((m.base == 10 && m.exponent < -9) || (m.base == 2 && m.exponent >= 50)))
        return gs_fail(err, GS_ERR_INVALID, "%s", msg_numeric);

    gs_qformat fmt = m.fmt;
    u128 magnitude = 0;
    if (m.base == 10) {
        int64_t point = (int64_t)t.n_int + 9 + m.exponent;
        u128 whole;
        if (!shifted_integer(&t, point, (u128)I128_MAX, &whole))
            return gs_fail(err, GS_ERR_LIMIT, "%s", msg_too_large);
        if (fraction_nonzero(&t, point)) {
            if (whole == (u128)I128_MAX)
                return gs_fail(err, GS_ERR_LIMIT, "%s", msg_too_large);
            whole++;
        }
        magnitude = whole;
    } else {
        int64_t point = (int64_t)t.n_int + 9;
        u128 whole;
        if (!shifted_integer(&t, point, BINARY_CAP_NANOS, &whole) ||
            whole > (BINARY_CAP_NANOS >> m.exponent)) {
            magnitude = BINARY_CAP_NANOS;
        } else {
            magnitude = (whole << m.exponent) + fraction_times_pow2_ceil(&t, point, m.exponent);
            if (magnitude > BINARY_CAP_NANOS)
                magnitude = BINARY_CAP_NANOS;
        }
        if (magnitude > 0 && magnitude < NANOS_PER_UNIT)
            fmt = GS_QF_DECIMAL_SI;
    }
    out->nanos = t.negative ? -(i128)magnitude : (i128)magnitude;
    out->fmt = fmt;
    return 0;
}

gs_quantity gs_quantity_from_int(int64_t v, gs_qformat fmt)
{
    gs_quantity q = {(i128)v * NANOS_PER_UNIT, fmt};
    return q;
}

gs_quantity gs_quantity_from_milli(int64_t m, gs_qformat fmt)
{
    gs_quantity q = {(i128)m * NANOS_PER_MILLI, fmt};
    return q;
}

/* ---------------------------------------------------------------- formatting */

static u128 magnitude_of(i128 v) { return v < 0 ? -(u128)v : (u128)v; }

/* Decimal digits of v at p (no NUL); returns the count. */
static size_t put_u128(char *p, u128 v)
{
    char rev[40];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + (unsigned)(v % 10));
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        p[i] = rev[n - 1 - i];
    return n;
}

/*
 * Canonical form (upstream CanonicalizeBytes after a recompute):
 *  - zero is "0"; a '-' only for negative values;
 *  - BinarySI with |v| >= 1024 and an integer value: m * 1024^k, k as large as keeps m an
 *    integer (k <= 6: Ki..Ei); otherwise BinarySI prints DecimalSI-style;
 *  - DecimalSI / DecimalExponent: strip all factors of ten from the nanos, then lower the
 *    exponent to a multiple of three (multiplying the mantissa back). DecimalSI takes the
 *    suffix for that exponent; above 18 (exa) it stays at "E" with a longer mantissa where
 *    upstream would drop the suffix and print a wrong number. DecimalExponent writes
 *    "e<exp>" unless the exponent is 0.
 * The output is at most 1 + 39 + 4 bytes. Writes min(len, cap-1) bytes plus a NUL and
 * returns the number of bytes written (excluding the NUL).
 */
size_t gs_quantity_format(const gs_quantity *q, char *buf, size_t cap)
{
    char tmp[GS_QUANTITY_STR_MAX];
    size_t n = 0;
    u128 mag = magnitude_of(q->nanos);
    gs_qformat fmt = q->fmt;
    if (fmt != GS_QF_DECIMAL_SI && fmt != GS_QF_BINARY_SI && fmt != GS_QF_DECIMAL_EXP)
        fmt = GS_QF_DECIMAL_EXP;

    if (mag == 0) {
        tmp[n++] = '0';
    } else {
        if (q->nanos < 0)
            tmp[n++] = '-';
        if (fmt == GS_QF_BINARY_SI &&
            (mag < (u128)1024 * NANOS_PER_UNIT || mag % NANOS_PER_UNIT != 0))
            fmt = GS_QF_DECIMAL_SI;
        if (fmt == GS_QF_BINARY_SI) {
            static const char *const binary_suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
            u128 units = mag / NANOS_PER_UNIT;
            int k = 0;
            while (k < 6 && units % 1024 == 0) {
                units /= 1024;
                k++;
            }
            n += put_u128(tmp + n, units);
            size_t sl = strlen(binary_suffix[k]);
            memcpy(tmp + n, binary_suffix[k], sl);
            n += sl;
        } else {
            int exponent = -9;
            while (mag % 10 == 0) {
                mag /= 10;
                exponent++;
            }
            int lower = ((exponent % 3) + 3) % 3;
            for (; lower > 0; lower--, exponent--)
                mag *= 10;
            if (fmt == GS_QF_DECIMAL_SI) {
                static const char *const decimal_suffix[] = {"n", "u", "m", "", "k",
                                                            "M", "G", "T", "P", "E"};
                for (; exponent > 18; exponent--)
                    mag *= 10;
                n += put_u128(tmp + n, mag);
                const char *sfx = decimal_suffix[exponent / 3 + 3];
                size_t sl = strlen(sfx);
                memcpy(tmp + n, sfx, sl);
                n += sl;
            } else {
                n += put_u128(tmp + n, mag);
                if (exponent != 0) {
                    tmp[n++] = 'e';
                    if (exponent < 0) {
                        tmp[n++] = '-';
                        exponent = -exponent;
                    }
                    n += put_u128(tmp + n, (u128)exponent);
                }
            }
        }
    }
    if (cap == 0)
        return 0;
    if (n > cap - 1)
        n = cap - 1;
    memcpy(buf, tmp, n);
    buf[n] = '\0';
    return n;
}

/* ---------------------------------------------------------------- accessors */

/* ceil(|v| / unit) with v's sign, saturated to int64. */
static int64_t rounded_away_saturated(i128 v, u128 unit)
{
    u128 mag = magnitude_of(v);
    u128 r = mag / unit + (mag % unit != 0 ? 1 : 0);
    if (v >= 0)
        return r > (u128)INT64_MAX ? INT64_MAX : (int64_t)r;
    if (r >= (u128)INT64_MAX + 1)
        return INT64_MIN;
    return -(int64_t)r;
}

int64_t gs_quantity_value(const gs_quantity *q)
{
    return rounded_away_saturated(q->nanos, NANOS_PER_UNIT);
}

int64_t gs_quantity_milli(const gs_quantity *q)
{
    return rounded_away_saturated(q->nanos, NANOS_PER_MILLI);
}

int gs_quantity_cmp(const gs_quantity *a, const gs_quantity *b)
{
    return (a->nanos > b->nanos) - (a->nanos < b->nanos);
}

bool gs_quantity_is_zero(const gs_quantity *q) { return q->nanos == 0; }

/* Upstream's integer check for extended resources: MilliValue() % 1000 == 0, where the
 * milli-value is rounded up away from zero (so 1.9999999 counts as an integer). Done in
 * 128 bits so values beyond int64 are judged by their real milli-value. */
bool gs_quantity_is_integer(const gs_quantity *q)
{
    u128 mag = magnitude_of(q->nanos);
    u128 milli = mag / NANOS_PER_MILLI + (mag % NANOS_PER_MILLI != 0 ? 1 : 0);
    return milli % 1000 == 0;
}

/* Sums saturate at +-INT128_MAX nanos (+-1.7e29 units), far beyond any real cluster. */
gs_quantity gs_quantity_add(gs_quantity a, gs_quantity b)
{
    if (b.nanos > 0 && a.nanos > I128_MAX - b.nanos)
        a.nanos = I128_MAX;
    else if (b.nanos < 0 && a.nanos < -I128_MAX - b.nanos)
        a.nanos = -I128_MAX;
    else
        a.nanos += b.nanos;
    return a;
}

gs_quantity gs_quantity_sub(gs_quantity a, gs_quantity b)
{
    if (b.nanos < 0 && a.nanos > I128_MAX + b.nanos)
        a.nanos = I128_MAX;
    else if (b.nanos > 0 && a.nanos < -I128_MAX + b.nanos)
        a.nanos = -I128_MAX;
    else
        a.nanos -= b.nanos;
    return a;
}
