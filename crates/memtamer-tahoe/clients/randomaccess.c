/* RandomAccess-like (HPCC GUPS flavour): a table of 2^TL 64-bit words in
 * NB blocks; each round, one task per block applies a pseudo-random
 * stream of XOR updates to its own block (depend inout on the block) from
 * a per-(round, block) seed. XOR updates of one block are serialised by
 * the dependence chain, so the final table is schedule-independent. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TL 24
#define NB 32
#define ROUNDS 8
#define UPD (1 << 18)

static uint64_t next(uint64_t x) { return (x << 1) ^ ((int64_t)x < 0 ? 7ULL : 0ULL); }

int main(void) {
  size_t n = (size_t)1 << TL, bl = n / NB;
  uint64_t *t = malloc(n * sizeof *t);
  if (!t) { fprintf(stderr, "randomaccess: out of memory\n"); return 1; }
  for (size_t k = 0; k < n; k++) t[k] = k;
#pragma omp parallel
#pragma omp single
  for (int r = 0; r < ROUNDS; r++)
    for (int b = 0; b < NB; b++) {
      uint64_t *tb = t + b * bl;
#pragma omp task depend(inout : tb[0]) firstprivate(tb, r, b)
      {
        uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(r * NB + b + 1);
        for (int u = 0; u < UPD; u++) {
          x = next(x);
          tb[x % bl] ^= x;
        }
      }
    }
  uint64_t h = 0;
  for (size_t k = 0; k < n; k++) h = h * 1099511628211ULL ^ t[k];
  printf("randomaccess checksum %016llx\n", (unsigned long long)h);
  free(t);
  return 0;
}
