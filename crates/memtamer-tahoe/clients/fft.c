/* 2D FFT of an N x N complex matrix as tasks: row FFTs on blocks of RB rows
 * (depend inout on the block), a blocked transpose into a second matrix
 * (depend in: source row block, inout: destination row block), and row
 * FFTs again. Each row's FFT is computed by one task in a fixed order, so
 * the result is schedule-independent. Prints a checksum and checks
 * Parseval's identity: sum |X|^2 = N*N * sum |x|^2. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define LOGN 10
#define N (1 << LOGN)
#define RB 32 /* rows per block */
#define NBLK (N / RB)

static void fft_row(double complex *x) {
  for (unsigned i = 1, j = 0; i < N; i++) { /* bit reversal */
    unsigned bit = N >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) { double complex t = x[i]; x[i] = x[j]; x[j] = t; }
  }
  for (int len = 2; len <= N; len <<= 1) {
    double complex wl = cexp(-2.0 * M_PI * I / len);
    for (int i = 0; i < N; i += len) {
      double complex w = 1;
      for (int k = 0; k < len / 2; k++) {
        double complex u = x[i + k], v = x[i + k + len / 2] * w;
        x[i + k] = u + v; x[i + k + len / 2] = u - v;
        w *= wl;
      }
    }
  }
}

static void rows(double complex *m, int b) {
  for (int r = b * RB; r < (b + 1) * RB; r++) fft_row(m + (size_t)r * N);
}

static void transpose(const double complex *a, double complex *t, int bi, int bj) {
  for (int r = bi * RB; r < (bi + 1) * RB; r++)
    for (int c = bj * RB; c < (bj + 1) * RB; c++) t[(size_t)c * N + r] = a[(size_t)r * N + c];
}

int main(void) {
  double complex *a = malloc(sizeof *a * N * N), *t = malloc(sizeof *t * N * N);
  if (!a || !t) { fprintf(stderr, "fft: out of memory\n"); return 1; }
  double e_in = 0;
  for (size_t k = 0; k < (size_t)N * N; k++) {
    a[k] = (double)((k * 13) % 17) / 17.0 - 0.5 + I * ((double)((k * 5) % 11) / 11.0 - 0.5);
    e_in += creal(a[k] * conj(a[k]));
  }
#pragma omp parallel
#pragma omp single
  {
    for (int b = 0; b < NBLK; b++) {
      double complex *ab = a + (size_t)b * RB * N;
#pragma omp task depend(inout : ab[0]) firstprivate(b)
      rows(a, b);
    }
    for (int bi = 0; bi < NBLK; bi++)
      for (int bj = 0; bj < NBLK; bj++) {
        double complex *src = a + (size_t)bi * RB * N, *dst = t + (size_t)bj * RB * N;
#pragma omp task depend(in : src[0]) depend(inout : dst[0]) firstprivate(bi, bj)
        transpose(a, t, bi, bj);
      }
    for (int b = 0; b < NBLK; b++) {
      double complex *tb = t + (size_t)b * RB * N;
#pragma omp task depend(inout : tb[0]) firstprivate(b)
      rows(t, b);
    }
  }
  double e_out = 0, w = 0;
  for (size_t k = 0; k < (size_t)N * N; k++) {
    e_out += creal(t[k] * conj(t[k]));
    w += creal(t[k]) * (double)(k % 31) - cimag(t[k]) * (double)(k % 7);
  }
  double rel = fabs(e_out / ((double)N * N) - e_in) / e_in;
  printf("fft checksum %.10e %.10e parseval-rel-err %.1e\n", e_out, w, rel);
  free(a); free(t);
  return rel < 1e-9 ? 0 : 2;
}
