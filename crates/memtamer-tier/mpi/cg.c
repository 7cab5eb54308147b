/* CG-like MPI kernel on mt_tier_malloc objects (thesis Fig. 3.1's loop).
 * Solves (L + s I) x = b for the 2-D 5-point Laplacian L on an nx x ny grid
 * split in y-slabs over the ranks, b = A*1, so the exact solution is all
 * ones; checks max|x - 1| and the true residual at the end.
 * Built with -DMT_PLAIN_MALLOC (mt_cg_malloc) it uses plain malloc/free.
 * usage: cg [nx] [rows_per_rank] [iterations]
 * MT_CG_KILL_RANK=R: rank R SIGKILLs itself right after the second
 * iteration's mt_tier_iteration(), while the moves the first iteration's
 * decision queued are being copied (run.sh's rank-death check). */
#include <math.h>
#include <signal.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "../include/memtamer_tier.h"

#ifdef MT_PLAIN_MALLOC
/* mt_cg_malloc: plain malloc/free; with MEMTAMER_TIER_MALLOC_MIN set the
 * interposer turns the large arrays into tier objects (malloc_hook.c). */
#define mt_tier_malloc(n, name) malloc(n)
#define FREE(p) (free(p), 0)
#else
#define FREE(p) mt_tier_free(p)
#endif

static void *xmalloc(size_t n, const char *name) {
    void *p = mt_tier_malloc(n, name);
    if (!p) { fprintf(stderr, "mt_tier_malloc(%s): %s\n", name, mt_tier_last_error()); MPI_Abort(MPI_COMM_WORLD, 2); }
    return p;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long nx = argc > 1 ? atol(argv[1]) : 512, ny = argc > 2 ? atol(argv[2]) : 512;
    int iters = argc > 3 ? atoi(argv[3]) : 40;
    const double shift = 0.5;
    long n = nx * ny, ext = n + 2 * nx; /* local rows; vectors with ghost rows */
    int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, down = rank > 0 ? rank - 1 : MPI_PROC_NULL;

    long *rowptr = xmalloc((n + 1) * sizeof(long), "rowptr");
    int *col = xmalloc(5 * n * sizeof(int), "colidx");
    double *a = xmalloc(5 * n * sizeof(double), "a");
    double *x = xmalloc(n * sizeof(double), "x"), *r = xmalloc(n * sizeof(double), "r");
    double *p = xmalloc(ext * sizeof(double), "p"), *q = xmalloc(n * sizeof(double), "q");
    double *b = xmalloc(n * sizeof(double), "b");
    long k = 0;
    for (long i = 0; i < n; i++) {
        long gy = i / nx, gx = i % nx; /* local row gy; column index into p (ghost offset nx) */
        rowptr[i] = k;
        a[k] = 4.0 + shift; col[k++] = (int)(i + nx);
        if (gx > 0) { a[k] = -1; col[k++] = (int)(i + nx - 1); }
        if (gx + 1 < nx) { a[k] = -1; col[k++] = (int)(i + nx + 1); }
        if (gy > 0 || down != MPI_PROC_NULL) { a[k] = -1; col[k++] = (int)(i); }
        if (gy + 1 < ny || up != MPI_PROC_NULL) { a[k] = -1; col[k++] = (int)(i + 2 * nx); }
    }
    rowptr[n] = k;
    /* b = A * ones: row sums. */
    for (long i = 0; i < n; i++) {
        double s = 0;
        for (long j = rowptr[i]; j < rowptr[i + 1]; j++) s += a[j];
        b[i] = s; x[i] = 0; r[i] = s; p[i + nx] = s;
    }
    for (long i = 0; i < nx; i++) { p[i] = 0; p[n + nx + i] = 0; }
    double rr = 0, rr_local = 0;
    for (long i = 0; i < n; i++) rr_local += r[i] * r[i];
    MPI_Allreduce(&rr_local, &rr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double rr0 = rr, t0 = MPI_Wtime();
    const char *kill_env = getenv("MT_CG_KILL_RANK");
    int kill_rank = kill_env ? atoi(kill_env) : -1;
    for (int it = 0; it < iters; it++) {
        mt_tier_iteration();
        if (it == 1 && rank == kill_rank) raise(SIGKILL);
        /* halo exchange: my last row up, my first row down */
        MPI_Sendrecv(p + n, (int)nx, MPI_DOUBLE, up, 1, p, (int)nx, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(p + nx, (int)nx, MPI_DOUBLE, down, 2, p + n + nx, (int)nx, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double pq_local = 0, pq;
        for (long i = 0; i < n; i++) {
            double s = 0;
            for (long j = rowptr[i]; j < rowptr[i + 1]; j++) s += a[j] * p[col[j]];
            q[i] = s;
            pq_local += p[i + nx] * s;
        }
        MPI_Allreduce(&pq_local, &pq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double alpha = rr / pq, rr_new_local = 0, rr_new;
        for (long i = 0; i < n; i++) {
            x[i] += alpha * p[i + nx];
            r[i] -= alpha * q[i];
            rr_new_local += r[i] * r[i];
        }
        MPI_Allreduce(&rr_new_local, &rr_new, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double beta = rr_new / rr;
        rr = rr_new;
        for (long i = 0; i < n; i++) p[i + nx] = r[i] + beta * p[i + nx];
    }
    double t = MPI_Wtime() - t0;
    /* Verify: true residual with x (reuse p as ghosted x), and max|x-1|. */
    for (long i = 0; i < n; i++) p[i + nx] = x[i];
    MPI_Sendrecv(p + n, (int)nx, MPI_DOUBLE, up, 3, p, (int)nx, MPI_DOUBLE, down, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(p + nx, (int)nx, MPI_DOUBLE, down, 4, p + n + nx, (int)nx, MPI_DOUBLE, up, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double res_local = 0, err_local = 0, res, err;
    for (long i = 0; i < n; i++) {
        double s = 0;
        for (long j = rowptr[i]; j < rowptr[i + 1]; j++) s += a[j] * p[col[j]];
        res_local += (b[i] - s) * (b[i] - s);
        err_local = fmax(err_local, fabs(x[i] - 1.0));
    }
    MPI_Allreduce(&res_local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&err_local, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int ok = sqrt(res / rr0) < 1e-8 && err < 1e-8;
    if (rank == 0)
        printf("cg ranks %d grid %ldx%ld iters %d time %.3f s rel_residual %.3e max_err %.3e %s\n", size, nx, ny * size, iters, t, sqrt(res / rr0), err, ok ? "VERIFIED" : "FAILED");
    void *objs[] = {rowptr, col, a, x, r, p, q, b};
    for (int i = 0; i < 8; i++)
        if (FREE(objs[i]) != 0) { fprintf(stderr, "free: %s\n", mt_tier_last_error()); ok = 0; }
    int bogus = 0;
    if (mt_tier_free(&bogus) == 0) { fprintf(stderr, "freeing a stack address was accepted\n"); ok = 0; }
    MPI_Finalize();
    return ok ? 0 : 1;
}
