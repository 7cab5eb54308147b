/* CG-like: conjugate gradient on a banded SPD matrix (2D 5-point Laplacian
 * + shift), vectors split into NB blocks; tasks per block for the matvec
 * (depend in: p blocks i-1, i, i+1; out: q block), the partial dot
 * products (out: one slot per block) and the axpy updates (inout). The
 * partial sums are reduced in block order by the master, so the result is
 * schedule-independent. */
#include <stdio.h>
#include <stdlib.h>

#define G 768            /* grid side: n = G*G unknowns */
#define NB 16            /* vector blocks (rows of the grid per block: G/NB) */
#define ITERS 60

static const int RB = G / NB; /* grid rows per block */

static void matvec(const double *p, double *q, int b) {
  for (int r = b * RB; r < (b + 1) * RB; r++)
    for (int c = 0; c < G; c++) {
      size_t k = (size_t)r * G + c;
      double v = 4.5 * p[k];
      if (r > 0) v -= p[k - G];
      if (r < G - 1) v -= p[k + G];
      if (c > 0) v -= p[k - 1];
      if (c < G - 1) v -= p[k + 1];
      q[k] = v;
    }
}

static double dot(const double *x, const double *y, int b) {
  double s = 0;
  for (size_t k = (size_t)b * RB * G; k < (size_t)(b + 1) * RB * G; k++) s += x[k] * y[k];
  return s;
}

int main(void) {
  size_t n = (size_t)G * G, bl = (size_t)RB * G;
  double *x = calloc(n, 8), *r = malloc(n * 8), *p = malloc(n * 8), *q = malloc(n * 8);
  double part[NB], part2[NB];
  if (!x || !r || !p || !q) { fprintf(stderr, "cg: out of memory\n"); return 1; }
  for (size_t k = 0; k < n; k++) r[k] = p[k] = 1.0 + (double)(k % 7) / 7.0;
  double rr = 0;
  for (int b = 0; b < NB; b++) rr += dot(r, r, b);
#pragma omp parallel
#pragma omp single
  for (int it = 0; it < ITERS; it++) {
    for (int b = 0; b < NB; b++) {
      double *pb = p + b * bl, *pl = p + (b > 0 ? b - 1 : b) * bl, *pr = p + (b < NB - 1 ? b + 1 : b) * bl;
      double *qb = q + b * bl, *slot = &part[b];
#pragma omp task depend(in : pb[0], pl[0], pr[0]) depend(out : qb[0]) firstprivate(b)
      matvec(p, q, b);
#pragma omp task depend(in : pb[0], qb[0]) depend(out : slot[0]) firstprivate(b, slot)
      *slot = dot(p, q, b);
    }
#pragma omp taskwait
    double pq = 0;
    for (int b = 0; b < NB; b++) pq += part[b];
    double alpha = rr / pq;
    for (int b = 0; b < NB; b++) {
      double *xb = x + b * bl, *rb = r + b * bl, *pb = p + b * bl, *qb = q + b * bl, *slot = &part2[b];
#pragma omp task depend(inout : xb[0], rb[0]) depend(in : pb[0], qb[0]) depend(out : slot[0]) firstprivate(xb, rb, pb, qb, slot, alpha)
      {
        double s = 0;
        for (size_t k = 0; k < bl; k++) { xb[k] += alpha * pb[k]; rb[k] -= alpha * qb[k]; s += rb[k] * rb[k]; }
        *slot = s;
      }
    }
#pragma omp taskwait
    double rr2 = 0;
    for (int b = 0; b < NB; b++) rr2 += part2[b];
    double beta = rr2 / rr;
    rr = rr2;
    for (int b = 0; b < NB; b++) {
      double *pb = p + b * bl, *rb = r + b * bl;
#pragma omp task depend(inout : pb[0]) depend(in : rb[0]) firstprivate(pb, rb, beta)
      for (size_t k = 0; k < bl; k++) pb[k] = rb[k] + beta * pb[k];
    }
#pragma omp taskwait
  }
  double s = 0;
  for (size_t k = 0; k < n; k++) s += x[k] * (double)(1 + k % 5);
  printf("cg checksum residual %.10e x %.10e\n", rr, s);
  free(x); free(r); free(p); free(q);
  return 0;
}
