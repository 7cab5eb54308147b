/* Strassen (one level) over N x N matrices split into 2 x 2 quadrants, each
 * quadrant stored as Q x Q tiles of T x T doubles. The 10 quadrant sums/
 * differences and the 7 products M1..M7 and the 4 output combinations are
 * tile tasks with depend clauses (add/sub tasks: in 2 tiles, out 1; product
 * tasks: in 2 tiles, inout 1 accumulator tile, so the k order is fixed by the
 * dependence chain and the result does not depend on the schedule). Integer-
 * valued inputs keep every intermediate exact, so the checksum must equal the
 * classical product's, which is also printed. */
#include <stdio.h>
#include <stdlib.h>

#define Q 4    /* tiles per quadrant side */
#define T 96   /* tile side */
#define QN (Q * T)
#define TILE ((size_t)T * T)
#define QUAD ((size_t)Q * Q * TILE)

typedef double *quad; /* Q*Q tiles, tile (i,j) at offset (i*Q+j)*TILE */
static double *tile(quad q, int i, int j) { return q + (size_t)(i * Q + j) * TILE; }

static void tadd(const double *a, const double *b, double *c, double s) {
  for (size_t k = 0; k < TILE; k++) c[k] = a[k] + s * b[k];
}
static void tmul(const double *a, const double *b, double *c) {
  for (int i = 0; i < T; i++)
    for (int k = 0; k < T; k++) {
      double x = a[i * T + k];
      for (int j = 0; j < T; j++) c[i * T + j] += x * b[k * T + j];
    }
}

/* c = a + s*b, tile-wise tasks. */
static void qadd(quad a, quad b, quad c, double s) {
  for (int i = 0; i < Q; i++)
    for (int j = 0; j < Q; j++) {
      double *x = tile(a, i, j), *y = tile(b, i, j), *z = tile(c, i, j);
#pragma omp task depend(in : x[0], y[0]) depend(out : z[0]) firstprivate(x, y, z, s)
      tadd(x, y, z, s);
    }
}
/* c = a * b (c zeroed first), tile-product tasks chained on c's tiles. */
static void qmul(quad a, quad b, quad c) {
  for (int i = 0; i < Q; i++)
    for (int j = 0; j < Q; j++) {
      double *z = tile(c, i, j);
#pragma omp task depend(out : z[0]) firstprivate(z)
      for (size_t k = 0; k < TILE; k++) z[k] = 0;
      for (int k = 0; k < Q; k++) {
        double *x = tile(a, i, k), *y = tile(b, k, j);
#pragma omp task depend(in : x[0], y[0]) depend(inout : z[0]) firstprivate(x, y, z)
        tmul(x, y, z);
      }
    }
}

int main(void) {
  quad buf = malloc(sizeof(double) * QUAD * 32);
  if (!buf) { fprintf(stderr, "strassen: out of memory\n"); return 1; }
  quad A[4], B[4], C[4], M[7], S[10], R[4];
  int n = 0;
  for (int i = 0; i < 4; i++) A[i] = buf + QUAD * n++;
  for (int i = 0; i < 4; i++) B[i] = buf + QUAD * n++;
  for (int i = 0; i < 4; i++) C[i] = buf + QUAD * n++;
  for (int i = 0; i < 7; i++) M[i] = buf + QUAD * n++;
  for (int i = 0; i < 10; i++) S[i] = buf + QUAD * n++;
  quad tmp = buf + QUAD * n++;
  for (int i = 0; i < 1; i++) R[i] = buf + QUAD * n++; /* classical check quadrant */
  for (int q = 0; q < 4; q++)
    for (size_t k = 0; k < QUAD; k++) {
      A[q][k] = (double)((k * 3 + q) % 5) - 2.0;
      B[q][k] = (double)((k * 7 + 2 * q) % 5) - 2.0;
    }
#pragma omp parallel
#pragma omp single
  {
    qadd(A[0], A[3], S[0], 1); qadd(B[0], B[3], S[1], 1);  /* M1 = (A11+A22)(B11+B22) */
    qadd(A[2], A[3], S[2], 1);                             /* M2 = (A21+A22) B11 */
    qadd(B[1], B[3], S[3], -1);                            /* M3 = A11 (B12-B22) */
    qadd(B[2], B[0], S[4], -1);                            /* M4 = A22 (B21-B11) */
    qadd(A[0], A[1], S[5], 1);                             /* M5 = (A11+A12) B22 */
    qadd(A[2], A[0], S[6], -1); qadd(B[0], B[1], S[7], 1); /* M6 = (A21-A11)(B11+B12) */
    qadd(A[1], A[3], S[8], -1); qadd(B[2], B[3], S[9], 1); /* M7 = (A12-A22)(B21+B22) */
    qmul(S[0], S[1], M[0]); qmul(S[2], B[0], M[1]); qmul(A[0], S[3], M[2]);
    qmul(A[3], S[4], M[3]); qmul(S[5], B[3], M[4]); qmul(S[6], S[7], M[5]);
    qmul(S[8], S[9], M[6]);
    qadd(M[0], M[3], tmp, 1); qadd(tmp, M[4], C[0], -1); qadd(C[0], M[6], C[0], 1); /* C11 */
    qadd(M[2], M[4], C[1], 1);                                                      /* C12 */
    qadd(M[1], M[3], C[2], 1);                                                      /* C21 */
    qadd(M[0], M[1], C[3], -1); qadd(C[3], M[2], C[3], 1); qadd(C[3], M[5], C[3], 1); /* C22 */
    /* Classical C11 = A11 B11 + A12 B21 for the check. */
    qmul(A[0], B[0], R[0]); qmul(A[1], B[2], tmp); qadd(R[0], tmp, R[0], 1);
  }
  double s = 0, w = 0, d = 0;
  for (int q = 0; q < 4; q++)
    for (size_t k = 0; k < QUAD; k++) { s += C[q][k]; w += C[q][k] * (double)((k + q) % 89); }
  for (size_t k = 0; k < QUAD; k++) d += C[0][k] - R[0][k] < 0 ? R[0][k] - C[0][k] : C[0][k] - R[0][k];
  printf("strassen checksum %.10e %.10e c11-vs-classical %.1e\n", s, w, d);
  free(buf);
  return d == 0 ? 0 : 2;
}
