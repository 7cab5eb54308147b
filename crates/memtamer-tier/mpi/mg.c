/* MG-like MPI kernel on mt_tier_malloc objects: V-cycle multigrid for
 * (-Laplace_h + s I) u = f on a 3-D cell-centred grid (NPB MG's pattern:
 * smoothing, residual, restriction and prolongation on a hierarchy of grids,
 * halo exchange by point-to-point MPI). The grid is split in z-slabs over
 * the ranks; every level has its own u, f and r objects (mt_tier_malloc), so
 * the phases of a V-cycle touch different objects and Unimem has a real
 * choice to make: the fine level's three arrays do not fit the DRAM budget
 * together with the rest.
 *
 * Level l has spacing h = 2^l, m_l = m / 2^l cells in x and y and
 * nz_l = nz / 2^l planes per rank; the operator is the 7-point
 * (6 u - sum of neighbours) / h^2 + s u with zero Dirichlet ghosts.
 * Smoother: weighted Jacobi in two sweeps (r = f - A u; u += w r / diag),
 * so no point depends on the order of the loop and the result does not
 * depend on timing or on where an object lives. Restriction: mean of the 8
 * children; prolongation: piecewise constant.
 *
 * f = A u* for a known u*, so the check is both the residual reduction
 * (||r|| / ||r0|| < 1e-9) and the error max|u - u*| < 1e-8. The printed
 * checksum (sum of u, %a) must be bit-identical with and without the
 * interposer and with Unimem on or off (mpi/run.sh compares them).
 *
 * usage: mg [m] [planes_per_rank] [cycles]
 *   m and planes_per_rank powers of two (default 64 16 30). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef MT_NO_TIER
/* mt_mg_plain: the same kernel without memtamer at all (no interposer, no
 * runtime); the reference for the bit-identical checksum. */
#define mt_tier_malloc(n, name) malloc(n)
#define mt_tier_free(p) (free(p), 0)
#define mt_tier_iteration() ((void)0)
#define mt_tier_last_error() "malloc failed"
#else
#include "../include/memtamer_tier.h"
#endif

#define MAXLEV 12
static const double SHIFT = 0.5, OMEGA = 0.8;

typedef struct {
    long m, nz;     /* cells in x and y; planes on this rank */
    double h2inv;   /* 1 / h^2 */
    double *u, *f, *r; /* (nz + 2) x (m + 2) x (m + 2), ghosts included */
} Level;

static int rank, size, up, down;

static double *obj(size_t n, const char *kind, int l) {
    char name[32];
    snprintf(name, sizeof name, "%s%d", kind, l);
    double *p = mt_tier_malloc(n * sizeof(double), name);
    if (!p) { fprintf(stderr, "mt_tier_malloc(%s): %s\n", name, mt_tier_last_error()); MPI_Abort(MPI_COMM_WORLD, 2); }
    for (size_t i = 0; i < n; i++) p[i] = 0.0;
    return p;
}

#define IDX(L, k, j, i) (((k) * ((L)->m + 2) + (j)) * ((L)->m + 2) + (i))

/* Ghost planes of v from the z-neighbours (zero at the global boundary). */
static void halo(const Level *L, double *v) {
    long plane = (L->m + 2) * (L->m + 2);
    MPI_Sendrecv(v + L->nz * plane, (int)plane, MPI_DOUBLE, up, 1, v, (int)plane, MPI_DOUBLE, down, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(v + plane, (int)plane, MPI_DOUBLE, down, 2, v + (L->nz + 1) * plane, (int)plane, MPI_DOUBLE, up, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static double apply(const Level *L, const double *v, long k, long j, long i) {
    double c = v[IDX(L, k, j, i)];
    double nb = v[IDX(L, k, j, i - 1)] + v[IDX(L, k, j, i + 1)] + v[IDX(L, k, j - 1, i)] +
                v[IDX(L, k, j + 1, i)] + v[IDX(L, k - 1, j, i)] + v[IDX(L, k + 1, j, i)];
    return (6.0 * c - nb) * L->h2inv + SHIFT * c;
}

/* r = f - A u (u's halo exchanged first); returns the local sum of r^2. */
static double residual(const Level *L) {
    halo(L, L->u);
    double s = 0;
    for (long k = 1; k <= L->nz; k++)
        for (long j = 1; j <= L->m; j++)
            for (long i = 1; i <= L->m; i++) {
                long x = IDX(L, k, j, i);
                L->r[x] = L->f[x] - apply(L, L->u, k, j, i);
                s += L->r[x] * L->r[x];
            }
    return s;
}

static void smooth(const Level *L, int sweeps) {
    double w = OMEGA / (6.0 * L->h2inv + SHIFT);
    for (int s = 0; s < sweeps; s++) {
        residual(L);
        for (long k = 1; k <= L->nz; k++)
            for (long j = 1; j <= L->m; j++)
                for (long i = 1; i <= L->m; i++) L->u[IDX(L, k, j, i)] += w * L->r[IDX(L, k, j, i)];
    }
}

/* Coarse f = mean of the fine residual's 8 children; coarse u = 0. */
static void restrict_to(const Level *F, Level *C) {
    for (long k = 1; k <= C->nz; k++)
        for (long j = 1; j <= C->m; j++)
            for (long i = 1; i <= C->m; i++) {
                double s = 0;
                for (int dk = 0; dk < 2; dk++)
                    for (int dj = 0; dj < 2; dj++)
                        for (int di = 0; di < 2; di++) s += F->r[IDX(F, 2 * k - 1 - dk, 2 * j - 1 - dj, 2 * i - 1 - di)];
                C->f[IDX(C, k, j, i)] = s / 8.0;
                C->u[IDX(C, k, j, i)] = 0.0;
            }
}

/* Fine u += coarse u, piecewise constant. */
static void prolong_add(const Level *C, Level *F) {
    for (long k = 1; k <= F->nz; k++)
        for (long j = 1; j <= F->m; j++)
            for (long i = 1; i <= F->m; i++) F->u[IDX(F, k, j, i)] += C->u[IDX(C, (k + 1) / 2, (j + 1) / 2, (i + 1) / 2)];
}

static void vcycle(Level *lv, int nlev) {
    for (int l = 0; l + 1 < nlev; l++) {
        smooth(&lv[l], 3);
        residual(&lv[l]);
        restrict_to(&lv[l], &lv[l + 1]);
    }
    smooth(&lv[nlev - 1], 30); /* the coarsest grid: smoothing is the solve */
    for (int l = nlev - 2; l >= 0; l--) {
        prolong_add(&lv[l + 1], &lv[l]);
        smooth(&lv[l], 3);
    }
}

/* The known solution at global cell (gz, y, x) of the fine grid. */
static double exact(long gz, long y, long x) { return sin(0.37 * gz + 0.11 * y) * cos(0.23 * x) + 0.001 * ((gz * 31 + y * 17 + x * 7) % 13); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long m = argc > 1 ? atol(argv[1]) : 64, nz = argc > 2 ? atol(argv[2]) : 16;
    int cycles = argc > 3 ? atoi(argv[3]) : 30;
    if (m < 2 || nz < 1 || (m & (m - 1)) || (nz & (nz - 1)) || cycles < 1) {
        if (!rank) fprintf(stderr, "mg: m and planes_per_rank must be powers of two (m >= 2), cycles >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    Level lv[MAXLEV];
    int nlev = 0;
    for (long mm = m, zz = nz, h = 1; nlev < MAXLEV; mm /= 2, zz /= 2, h *= 2) {
        size_t n = (size_t)(zz + 2) * (mm + 2) * (mm + 2);
        lv[nlev] = (Level){mm, zz, 1.0 / (double)(h * h), obj(n, "u", nlev), obj(n, "f", nlev), obj(n, "r", nlev)};
        nlev++;
        if (mm < 4 || zz < 2) break;
    }
    Level *F = &lv[0];
    /* f = A u*: put u* in u (with its halo), apply A, then u = 0. */
    for (long k = 1; k <= nz; k++)
        for (long j = 1; j <= m; j++)
            for (long i = 1; i <= m; i++) F->u[IDX(F, k, j, i)] = exact(rank * nz + k - 1, j, i);
    halo(F, F->u);
    for (long k = 1; k <= nz; k++)
        for (long j = 1; j <= m; j++)
            for (long i = 1; i <= m; i++) F->f[IDX(F, k, j, i)] = apply(F, F->u, k, j, i);
    for (long k = 1; k <= nz; k++)
        for (long j = 1; j <= m; j++)
            for (long i = 1; i <= m; i++) F->u[IDX(F, k, j, i)] = 0.0;
    double rr_local = residual(F), rr0;
    MPI_Allreduce(&rr_local, &rr0, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), rr = rr0;
    for (int c = 0; c < cycles; c++) {
        mt_tier_iteration();
        vcycle(lv, nlev);
        rr_local = residual(F);
        MPI_Allreduce(&rr_local, &rr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    double t = MPI_Wtime() - t0;
    double err_local = 0, sum_local = 0, err, sum;
    for (long k = 1; k <= nz; k++)
        for (long j = 1; j <= m; j++)
            for (long i = 1; i <= m; i++) {
                double v = F->u[IDX(F, k, j, i)];
                err_local = fmax(err_local, fabs(v - exact(rank * nz + k - 1, j, i)));
                sum_local += v;
            }
    MPI_Allreduce(&err_local, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&sum_local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double rel = sqrt(rr / rr0);
    int ok = rel < 1e-9 && err < 1e-8;
    if (!rank)
        printf("mg ranks %d grid %ldx%ldx%ld levels %d cycles %d time %.3f s rel_residual %.3e max_err %.3e checksum %a %s\n",
               size, m, m, nz * size, nlev, cycles, t, rel, err, sum, ok ? "VERIFIED" : "FAILED");
    /* Freed after MPI_Finalize, so the final status document (written there,
     * MEMTAMER_TIER_STATUS_DIR) still lists every object with its tier. */
    MPI_Finalize();
    for (int l = 0; l < nlev; l++) {
        double *p[] = {lv[l].u, lv[l].f, lv[l].r};
        for (int q = 0; q < 3; q++)
            if (mt_tier_free(p[q]) != 0) { fprintf(stderr, "mt_tier_free: %s\n", mt_tier_last_error()); ok = 0; }
    }
    return ok ? 0 : 1;
}
