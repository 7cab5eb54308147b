/* Synthetic task with a known hot/cold page split, for checking the OMPT
 * tool's page sampler (docs/notebook/tahoe.md "Per-page hotness"): NB blocks of BLK
 * bytes in one array, one task type `work` per block and round
 * (depend(inout) on the block, so each block's tasks run in order). A task
 * makes ROUNDS passes over the first HOT_PCT% of its block's pages and, in
 * pass r, over the r-th tenth of the rest: every hot page is visited ROUNDS
 * times, every cold page once. Prints a checksum independent of the
 * schedule. Optional argv[1]: "layout" prints the ground truth instead
 * (block bytes, hot bytes, visits per hot and per cold page). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NB 16
#define BLK (4u << 20)
#define HOT_PCT 10
#define ROUNDS 10
#define ITERS 4
#define PAGE 4096u

static void pass(double *x, size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; i++) {
    double v = x[i];
    v = v * 0.999 + 1e-3;
    v = v * 0.999 + 1e-3;
    v = v * 0.999 + 1e-3;
    v = v * 0.999 + 1e-3;
    x[i] = v;
  }
}

static void work(double *b) {
  size_t n = BLK / sizeof(double);
  size_t hot = (size_t)(BLK / PAGE * HOT_PCT / 100) * (PAGE / sizeof(double));
  size_t cold = n - hot;
  for (int r = 0; r < ROUNDS; r++) {
    pass(b, 0, hot);
    pass(b, hot + cold * r / ROUNDS, hot + cold * (r + 1) / ROUNDS);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "layout") == 0) {
    printf("%u %u %d 1\n", BLK, BLK / PAGE * HOT_PCT / 100 * PAGE, ROUNDS);
    return 0;
  }
  double *a = aligned_alloc(PAGE, (size_t)NB * BLK);
  if (!a) { fprintf(stderr, "hotcold: out of memory\n"); return 1; }
  size_t n = (size_t)NB * BLK / sizeof(double);
  for (size_t i = 0; i < n; i++) a[i] = (double)(i % 1000) * 1e-3;
#pragma omp parallel
#pragma omp single
  for (int it = 0; it < ITERS; it++)
    for (int b = 0; b < NB; b++) {
      double *blk = a + (size_t)b * (BLK / sizeof(double));
#pragma omp task depend(inout: blk[0]) firstprivate(blk)
      work(blk);
    }
  double s = 0;
  for (size_t i = 0; i < n; i++) s += a[i];
  printf("hotcold checksum %.12e\n", s);
  free(a);
  return 0;
}
