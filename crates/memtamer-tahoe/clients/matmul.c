/* Blocked matrix multiply C = A * B with NB x NB blocks of BS x BS doubles,
 * one task per (i, j, k) block product: depend(in: A[i][k], B[k][j])
 * depend(inout: C[i][j]). The inout chain on C[i][j] fixes the k order,
 * so the floating-point result does not depend on the schedule. */
#include <stdio.h>
#include <stdlib.h>

#define NB 8
#define BS 160

static double *blk(double *m, int i, int j) { return m + ((size_t)(i * NB + j)) * BS * BS; }

static void gemm(const double *a, const double *b, double *c) {
  for (int i = 0; i < BS; i++)
    for (int k = 0; k < BS; k++) {
      double x = a[i * BS + k];
      for (int j = 0; j < BS; j++) c[i * BS + j] += x * b[k * BS + j];
    }
}

int main(void) {
  size_t n = (size_t)NB * NB * BS * BS;
  double *A = malloc(n * sizeof *A), *B = malloc(n * sizeof *B), *C = calloc(n, sizeof *C);
  if (!A || !B || !C) { fprintf(stderr, "matmul: out of memory\n"); return 1; }
  for (size_t k = 0; k < n; k++) {
    A[k] = (double)((k * 7) % 13) / 13.0 - 0.5;
    B[k] = (double)((k * 11) % 17) / 17.0 - 0.5;
  }
#pragma omp parallel
#pragma omp single
  for (int i = 0; i < NB; i++)
    for (int j = 0; j < NB; j++)
      for (int k = 0; k < NB; k++) {
        double *a = blk(A, i, k), *b = blk(B, k, j), *c = blk(C, i, j);
#pragma omp task depend(in : a[0], b[0]) depend(inout : c[0]) firstprivate(a, b, c)
        gemm(a, b, c);
      }
  double s = 0, w = 0;
  for (size_t k = 0; k < n; k++) { s += C[k]; w += C[k] * (double)(k % 101); }
  printf("matmul checksum %.10e %.10e\n", s, w);
  free(A); free(B); free(C);
  return 0;
}
