/*
 * lp.c - two small solvers the MIG planner needs: a dense two-phase simplex (the LP
 * relaxation that gives the planner its certified lower bound) and Dinic's max flow (the
 * fixed-config comparison of the waste report).
 *
 * Simplex: the problem min c.x, A x (<=|>=|=) b, x >= 0 is brought to equalities with
 * slack, surplus and artificial columns after making b >= 0. Phase 1 minimises the sum of
 * artificials from the all-slack/artificial basis; phase 2 minimises c from the basis
 * phase 1 left, never letting an artificial column re-enter. Bland's rule (lowest index
 * enters, ties in the ratio test to the lowest basic index) rules out cycling, so the
 * iteration limit only guards against numerical trouble. Sizes are a few hundred rows
 * and columns at most, so a dense tableau is simplest and fast enough.
 */
#include <math.h>
#include <string.h>

#include "mig_int.h"

#define EPS 1e-9
#define MAX_ITER 200000

typedef struct tableau {
    uint32_t m, ncol; /* rows, columns without the RHS */
    double *t;        /* (m + 1) x (ncol + 1); row m is the objective (reduced costs) */
    uint32_t *basis;
} tableau;

#define T(tb, i, j) ((tb)->t[(size_t)(i) * ((tb)->ncol + 1) + (j)])

static void pivot(tableau *tb, uint32_t r, uint32_t c)
{
    uint32_t w = tb->ncol + 1;
    double *pr = &tb->t[(size_t)r * w];
    double inv = 1.0 / pr[c];
    for (uint32_t j = 0; j < w; j++)
        pr[j] *= inv;
    pr[c] = 1.0;
    for (uint32_t i = 0; i <= tb->m; i++) {
        if (i == r)
            continue;
        double *row = &tb->t[(size_t)i * w];
        double f = row[c];
        if (f == 0.0)
            continue;
        for (uint32_t j = 0; j < w; j++)
            row[j] -= f * pr[j];
        row[c] = 0.0;
    }
    tb->basis[r] = c;
}

/* Set the objective row to the reduced costs of `cost` for the current basis. */
static void set_objective(tableau *tb, const double *cost)
{
    uint32_t w = tb->ncol + 1;
    double *obj = &tb->t[(size_t)tb->m * w];
    for (uint32_t j = 0; j < tb->ncol; j++)
        obj[j] = cost[j];
    obj[tb->ncol] = 0.0;
    for (uint32_t i = 0; i < tb->m; i++) {
        double cb = cost[tb->basis[i]];
        if (cb == 0.0)
            continue;
        const double *row = &tb->t[(size_t)i * w];
        for (uint32_t j = 0; j <= tb->ncol; j++)
            obj[j] -= cb * row[j];
    }
}

/* Optimise from a feasible basis. Columns >= allowed are never entered. 0 optimal,
 * 2 unbounded, -1 iteration limit. */
static int run(tableau *tb, uint32_t allowed)
{
    uint32_t w = tb->ncol + 1;
    for (uint32_t it = 0; it < MAX_ITER; it++) {
        const double *obj = &tb->t[(size_t)tb->m * w];
        uint32_t c = UINT32_MAX;
        for (uint32_t j = 0; j < allowed; j++)
            if (obj[j] < -EPS) {
                c = j;
                break;
            }
        if (c == UINT32_MAX)
            return 0;
        uint32_t r = UINT32_MAX;
        double best = 0.0;
        for (uint32_t i = 0; i < tb->m; i++) {
            double a = T(tb, i, c);
            if (a <= EPS)
                continue;
            double ratio = T(tb, i, tb->ncol) / a;
            if (r == UINT32_MAX || ratio < best - EPS ||
                (ratio <= best + EPS && tb->basis[i] < tb->basis[r])) {
                r = i;
                best = ratio;
            }
        }
        if (r == UINT32_MAX)
            return 2;
        pivot(tb, r, c);
    }
    return -1;
}

int gs_mig__lp_solve(uint32_t rows, uint32_t cols, const double *A, const double *b,
                     const uint8_t *sense, const double *c, double *x, double *obj)
{
    /* column layout: structural | one slack or surplus per non-EQ row | artificials */
    uint32_t nslack = 0, nart = 0;
    for (uint32_t i = 0; i < rows; i++) {
        uint8_t s = sense[i];
        if (b[i] < 0)
            s = s == GS_LP_LE ? GS_LP_GE : s == GS_LP_GE ? GS_LP_LE : GS_LP_EQ;
        if (s != GS_LP_EQ)
            nslack++;
        if (s != GS_LP_LE)
            nart++;
    }
    tableau tb;
    tb.m = rows;
    tb.ncol = cols + nslack + nart;
    size_t cells = (size_t)(rows + 1) * (tb.ncol + 1);
    if (cells > ((size_t)1 << 27))
        return -1;
    tb.t = calloc(cells, sizeof *tb.t);
    tb.basis = calloc(rows ? rows : 1, sizeof *tb.basis);
    double *cost = calloc(tb.ncol ? tb.ncol : 1, sizeof *cost);
    if (!tb.t || !tb.basis || !cost) {
        free(tb.t);
        free(tb.basis);
        free(cost);
        return -1;
    }
    uint32_t si = cols, ai = cols + nslack;
    for (uint32_t i = 0; i < rows; i++) {
        double sign = b[i] < 0 ? -1.0 : 1.0;
        uint8_t s = sense[i];
        if (sign < 0)
            s = s == GS_LP_LE ? GS_LP_GE : s == GS_LP_GE ? GS_LP_LE : GS_LP_EQ;
        for (uint32_t j = 0; j < cols; j++)
            T(&tb, i, j) = sign * A[(size_t)i * cols + j];
        T(&tb, i, tb.ncol) = sign * b[i];
        if (s == GS_LP_LE) {
            T(&tb, i, si) = 1.0;
            tb.basis[i] = si++;
        } else {
            if (s == GS_LP_GE)
                T(&tb, i, si++) = -1.0;
            T(&tb, i, ai) = 1.0;
            tb.basis[i] = ai++;
        }
    }
    int rc = 0;
    /* phase 1 */
    if (nart) {
        for (uint32_t j = cols + nslack; j < tb.ncol; j++)
            cost[j] = 1.0;
        set_objective(&tb, cost);
        rc = run(&tb, tb.ncol);
        if (rc != 0) {
            rc = -1;
            goto out;
        }
        if (-T(&tb, tb.m, tb.ncol) > 1e-7) {
            rc = 1;
            goto out;
        }
        /* drive artificials still basic (at zero) out where a real column can replace them */
        for (uint32_t i = 0; i < rows; i++) {
            if (tb.basis[i] < cols + nslack)
                continue;
            for (uint32_t j = 0; j < cols + nslack; j++) {
                if (fabs(T(&tb, i, j)) > 1e-7) {
                    pivot(&tb, i, j);
                    break;
                }
            }
        }
        memset(cost, 0, sizeof *cost * tb.ncol);
    }
    /* phase 2 */
    for (uint32_t j = 0; j < cols; j++)
        cost[j] = c[j];
    set_objective(&tb, cost);
    rc = run(&tb, cols + nslack);
    if (rc != 0)
        goto out;
    for (uint32_t j = 0; j < cols; j++)
        x[j] = 0.0;
    for (uint32_t i = 0; i < rows; i++)
        if (tb.basis[i] < cols)
            x[tb.basis[i]] = T(&tb, i, tb.ncol);
    double v = 0.0;
    for (uint32_t j = 0; j < cols; j++)
        v += c[j] * x[j];
    *obj = v;
out:
    free(tb.t);
    free(tb.basis);
    free(cost);
    return rc;
}

/* ---------------------------------------------------------------- max flow (Dinic) */
int gs_mig__flow_init(gs_mig_flow *f, uint32_t n)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    f->head = malloc(sizeof *f->head * (n ? n : 1));
    f->level = malloc(sizeof *f->level * (n ? n : 1));
    f->iter = malloc(sizeof *f->iter * (n ? n : 1));
    f->queue = malloc(sizeof *f->queue * (n ? n : 1));
    if (!f->head || !f->level || !f->iter || !f->queue) {
        gs_mig__flow_free(f);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        f->head[i] = UINT32_MAX;
    return 0;
}

int64_t gs_mig__flow_edge(gs_mig_flow *f, uint32_t from, uint32_t to, int64_t cap)
{
    if (gs_vec_reserve(f->e, f->e.n + 2) != 0)
        return -1;
    uint32_t i = (uint32_t)f->e.n;
    f->e.v[i] = (gs_mig_flow_edge){to, f->head[from], cap};
    f->head[from] = i;
    f->e.v[i + 1] = (gs_mig_flow_edge){from, f->head[to], 0};
    f->head[to] = i + 1;
    f->e.n += 2;
    return i;
}

static bool bfs(gs_mig_flow *f, uint32_t s, uint32_t t)
{
    for (uint32_t i = 0; i < f->n; i++)
        f->level[i] = UINT32_MAX;
    uint32_t qh = 0, qt = 0;
    f->level[s] = 0;
    f->queue[qt++] = s;
    while (qh < qt) {
        uint32_t u = f->queue[qh++];
        for (uint32_t e = f->head[u]; e != UINT32_MAX; e = f->e.v[e].next) {
            const gs_mig_flow_edge *ed = &f->e.v[e];
            if (ed->cap > 0 && f->level[ed->to] == UINT32_MAX) {
                f->level[ed->to] = f->level[u] + 1;
                f->queue[qt++] = ed->to;
            }
        }
    }
    return f->level[t] != UINT32_MAX;
}

/* Iterative blocking-flow search: one augmenting path per call along level edges. */
static int64_t augment(gs_mig_flow *f, uint32_t s, uint32_t t)
{
    /* path of edges, at most n long */
    uint32_t *path = f->queue; /* reuse: bfs is done */
    uint32_t depth = 0, u = s;
    for (;;) {
        if (u == t) {
            int64_t push = INT64_MAX;
            for (uint32_t k = 0; k < depth; k++)
                if (f->e.v[path[k]].cap < push)
                    push = f->e.v[path[k]].cap;
            for (uint32_t k = 0; k < depth; k++) {
                f->e.v[path[k]].cap -= push;
                f->e.v[path[k] ^ 1u].cap += push;
            }
            return push;
        }
        uint32_t e = f->iter[u];
        while (e != UINT32_MAX) {
            const gs_mig_flow_edge *ed = &f->e.v[e];
            if (ed->cap > 0 && f->level[ed->to] == f->level[u] + 1)
                break;
            e = ed->next;
        }
        f->iter[u] = e;
        if (e == UINT32_MAX) {
            /* dead end: retreat */
            if (depth == 0)
                return 0;
            f->level[u] = UINT32_MAX;
            uint32_t back = path[--depth];
            u = f->e.v[back ^ 1u].to;
            f->iter[u] = f->e.v[f->iter[u]].next;
            continue;
        }
        path[depth++] = e;
        u = f->e.v[e].to;
    }
}

int64_t gs_mig__flow_run(gs_mig_flow *f, uint32_t s, uint32_t t)
{
    int64_t total = 0;
    while (bfs(f, s, t)) {
        for (uint32_t i = 0; i < f->n; i++)
            f->iter[i] = f->head[i];
        int64_t pushed;
        while ((pushed = augment(f, s, t)) > 0)
            total += pushed;
    }
    return total;
}

void gs_mig__flow_free(gs_mig_flow *f)
{
    free(f->head);
    free(f->level);
    free(f->iter);
    free(f->queue);
    gs_vec_free(f->e);
    memset(f, 0, sizeof *f);
}
