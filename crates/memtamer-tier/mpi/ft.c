/* FT-like MPI kernel on mt_tier_malloc objects: the all-to-all transpose
 * pattern of NPB FT. Each rank owns n/p rows of an n x n matrix u0; every
 * iteration transposes u0 into u1 through MPI_Alltoall (pack into `sendbuf`,
 * exchange into `recvbuf`, unpack), scales u1 by a per-column twiddle and
 * transposes back dividing by it. Twiddles are powers of two, so the round
 * trip is exact: u0 must equal its initial values bit for bit.
 * usage: ft [n] [iterations]   (n divisible by the number of ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../include/memtamer_tier.h"

static double *obj(size_t n, const char *name) {
    double *p = mt_tier_malloc(n * sizeof(double), name);
    if (!p) { fprintf(stderr, "mt_tier_malloc(%s): %s\n", name, mt_tier_last_error()); MPI_Abort(MPI_COMM_WORLD, 2); }
    return p;
}

static double init(long r, long c) { return (double)((r * 7919 + c * 104729) % 1000003); }

/* dst (my rows of the transpose) = transpose of src's distributed rows. */
static void transpose(const double *src, double *dst, double *sb, double *rb, long n, long rows, int size) {
    long blk = rows * rows;
    for (int d = 0; d < size; d++)
        for (long i = 0; i < rows; i++)
            for (long j = 0; j < rows; j++) sb[d * blk + j * rows + i] = src[i * n + d * rows + j];
    MPI_Alltoall(sb, (int)blk, MPI_DOUBLE, rb, (int)blk, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int s = 0; s < size; s++)
        for (long j = 0; j < rows; j++)
            for (long i = 0; i < rows; i++) dst[j * n + s * rows + i] = rb[s * blk + j * rows + i];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 1 ? atol(argv[1]) : 1024;
    int iters = argc > 2 ? atoi(argv[2]) : 20;
    if (n % size) { if (!rank) fprintf(stderr, "n %% ranks != 0\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    long rows = n / size, cnt = rows * n;
    double *u0 = obj(cnt, "u0"), *u1 = obj(cnt, "u1"), *sb = obj(cnt, "sendbuf"), *rb = obj(cnt, "recvbuf");
    double *tw = obj(n, "twiddle");
    for (long i = 0; i < rows; i++)
        for (long c = 0; c < n; c++) u0[i * n + c] = init(rank * rows + i, c);
    for (long c = 0; c < n; c++) tw[c] = (double)(1L << (c % 8));
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        mt_tier_iteration();
        transpose(u0, u1, sb, rb, n, rows, size);
        for (long i = 0; i < rows; i++)
            for (long c = 0; c < n; c++) u1[i * n + c] *= tw[c];
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < rows; i++)
            for (long c = 0; c < n; c++) u1[i * n + c] /= tw[c];
        transpose(u1, u0, sb, rb, n, rows, size);
    }
    double t = MPI_Wtime() - t0;
    long bad = 0, all;
    for (long i = 0; i < rows; i++)
        for (long c = 0; c < n; c++) bad += u0[i * n + c] != init(rank * rows + i, c);
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (!rank) printf("ft ranks %d n %ld iters %d time %.3f s mismatches %ld %s\n", size, n, iters, t, all, all ? "FAILED" : "VERIFIED");
    mt_tier_free(u0); mt_tier_free(u1); mt_tier_free(sb); mt_tier_free(rb); mt_tier_free(tw);
    MPI_Finalize();
    return all ? 1 : 0;
}
