/* An ordinary libpmemobj transaction program (no memtamer code): THREADS
 * threads each run ITERS transactions on a pool, each snapshotting and
 * rewriting 8 of its root slots and allocating a small object every 4th
 * transaction. It then reopens the pool and prints a checksum of the root
 * slots and of every object. The checksum must not depend on how the
 * flushes were executed (plain libpmem, or Ribbon under the shim).
 * usage: pmemobj_tx POOLFILE [THREADS] [ITERS] */
#include <libpmemobj.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 16
#define SLOTS 64
#define OBJ_WORDS 12

struct root { uint64_t slots[MAXT][SLOTS]; };

static PMEMobjpool *pop;
static long iters;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
  return x;
}

static void *worker(void *arg) {
  long t = (long)arg;
  PMEMoid root = pmemobj_root(pop, sizeof(struct root));
  struct root *r = pmemobj_direct(root);
  for (long i = 0; i < iters; i++) {
    int first = (int)(mix((uint64_t)(t * 1000003 + i)) % (SLOTS - 8));
    TX_BEGIN(pop) {
      pmemobj_tx_add_range(root, offsetof(struct root, slots) + (size_t)(t * SLOTS + first) * 8, 8 * 8);
      for (int j = 0; j < 8; j++) r->slots[t][first + j] = mix(r->slots[t][first + j] + (uint64_t)i);
      if (i % 4 == 0) {
        PMEMoid o = pmemobj_tx_alloc(OBJ_WORDS * 8, 1);
        uint64_t *w = pmemobj_direct(o);
        for (int j = 0; j < OBJ_WORDS; j++) w[j] = mix((uint64_t)(t << 40 | i << 8 | j));
      }
    } TX_ONABORT {
      fprintf(stderr, "transaction aborted: %s\n", pmemobj_errormsg());
      exit(1);
    } TX_END
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s POOLFILE [THREADS] [ITERS]\n", argv[0]); return 2; }
  int threads = argc > 2 ? atoi(argv[2]) : 4;
  iters = argc > 3 ? atol(argv[3]) : 2000;
  if (threads < 1 || threads > MAXT) { fprintf(stderr, "THREADS must be 1..%d\n", MAXT); return 2; }
  pop = pmemobj_create(argv[1], "memtamer-ribbon", 64u << 20, 0666);
  if (!pop) { fprintf(stderr, "pmemobj_create: %s\n", pmemobj_errormsg()); return 1; }
  pthread_t th[MAXT];
  for (long t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, (void *)t);
  for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
  pmemobj_close(pop);

  pop = pmemobj_open(argv[1], "memtamer-ribbon");
  if (!pop) { fprintf(stderr, "pmemobj_open: %s\n", pmemobj_errormsg()); return 1; }
  struct root *r = pmemobj_direct(pmemobj_root(pop, sizeof(struct root)));
  uint64_t sum = 0, objects = 0, objsum = 0;
  for (int t = 0; t < MAXT; t++)
    for (int j = 0; j < SLOTS; j++) sum = mix(sum ^ r->slots[t][j]);
  PMEMoid o;
  POBJ_FOREACH(pop, o) {
    uint64_t *w = pmemobj_direct(o), h = 0;
    if (pmemobj_type_num(o) != 1) continue;
    for (int j = 0; j < OBJ_WORDS; j++) h = mix(h ^ w[j]);
    objsum += h; /* order-independent: allocation order differs run to run */
    objects++;
  }
  pmemobj_close(pop);
  printf("checksum %016llx objects %llu objsum %016llx\n", (unsigned long long)sum,
         (unsigned long long)objects, (unsigned long long)objsum);
  return 0;
}
