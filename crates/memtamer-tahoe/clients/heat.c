/* Heat (Jacobi) on an N x N grid stored as NB x NB contiguous blocks of
 * BS x BS doubles; one task per block per sweep with depend clauses on the
 * block and its four neighbours (thesis Fig. 4.1). Prints a checksum that
 * is independent of the task schedule (Jacobi: old -> new buffers). */
#include <stdio.h>
#include <stdlib.h>

#define NB 8
#define BS 256
#define ITERS 30

static double *blk(double *g, int i, int j) { return g + ((size_t)(i * NB + j)) * BS * BS; }

static void sweep(double *src, double *dst, int bi, int bj) {
  double *c = blk(src, bi, bj), *o = blk(dst, bi, bj);
  for (int i = 0; i < BS; i++)
    for (int j = 0; j < BS; j++) {
      int gi = bi * BS + i, gj = bj * BS + j;
      if (gi == 0 || gj == 0 || gi == NB * BS - 1 || gj == NB * BS - 1) {
        o[i * BS + j] = c[i * BS + j];
        continue;
      }
      double up = i > 0 ? c[(i - 1) * BS + j] : blk(src, bi - 1, bj)[(BS - 1) * BS + j];
      double dn = i < BS - 1 ? c[(i + 1) * BS + j] : blk(src, bi + 1, bj)[j];
      double lf = j > 0 ? c[i * BS + j - 1] : blk(src, bi, bj - 1)[i * BS + BS - 1];
      double rt = j < BS - 1 ? c[i * BS + j + 1] : blk(src, bi, bj + 1)[i * BS];
      o[i * BS + j] = 0.25 * (up + dn + lf + rt);
    }
}

int main(void) {
  size_t n = (size_t)NB * NB * BS * BS;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  if (!a || !b) { fprintf(stderr, "heat: out of memory\n"); return 1; }
  for (int bi = 0; bi < NB; bi++)
    for (int bj = 0; bj < NB; bj++)
      for (int k = 0; k < BS * BS; k++) {
        int gi = bi * BS + k / BS;
        blk(a, bi, bj)[k] = blk(b, bi, bj)[k] = (gi == 0) ? 100.0 : 0.0;
      }
#pragma omp parallel
#pragma omp single
  for (int it = 0; it < ITERS; it++) {
    double *s = (it % 2) ? b : a, *d = (it % 2) ? a : b;
    for (int bi = 0; bi < NB; bi++)
      for (int bj = 0; bj < NB; bj++) {
        double *c = blk(s, bi, bj);
        double *u = blk(s, bi > 0 ? bi - 1 : bi, bj), *dn = blk(s, bi < NB - 1 ? bi + 1 : bi, bj);
        double *l = blk(s, bi, bj > 0 ? bj - 1 : bj), *r = blk(s, bi, bj < NB - 1 ? bj + 1 : bj);
        double *o = blk(d, bi, bj);
#ifdef MT_DEPEND_SECTIONS /* whole blocks as array sections: the tool's exact extents */
#pragma omp task depend(in : c[0:BS * BS], u[0:BS * BS], dn[0:BS * BS], l[0:BS * BS], r[0:BS * BS]) depend(out : o[0:BS * BS]) firstprivate(s, d, bi, bj)
#else
#pragma omp task depend(in : c[0], u[0], dn[0], l[0], r[0]) depend(out : o[0]) firstprivate(s, d, bi, bj)
#endif
        sweep(s, d, bi, bj);
      }
  }
  double *fin = (ITERS % 2) ? b : a, sum = 0, wsum = 0;
  for (size_t k = 0; k < n; k++) { sum += fin[k]; wsum += fin[k] * (double)(k % 97); }
  printf("heat checksum %.10e %.10e\n", sum, wsum);
  free(a); free(b);
  return 0;
}
