/* Ribbon's C ABI end to end: bad input gives error codes, then THREADS
 * threads insert key/value pairs (ribbon_alloc VALUE then KEY, one flush
 * over both, one fence), check them, free them. Exit 0 only if all holds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "memtamer_ribbon.h"

#define KEYLEN 24
#define VALUELEN 100

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); __sync_fetch_and_add(&failures, 1); } } while (0)

static long inserts;

static void *worker(void *arg) {
  long id = (long)arg;
  for (long i = 0; i < inserts; i++) {
    char *v = ribbon_alloc(VALUELEN, RIBBON_VALUE);
    char *k = ribbon_alloc(KEYLEN, RIBBON_KEY);
    CHECK(v && k, "alloc failed: %s", ribbon_last_error());
    if (!v || !k) return NULL;
    CHECK(((uintptr_t)v & 63) == 0, "value not line aligned");
    CHECK(k == v + VALUELEN, "key not right after its value");
    memset(v, (int)(id + i), VALUELEN);
    memset(k, (int)(id * 3 + i), KEYLEN);
    CHECK(ribbon_flush(v, VALUELEN + KEYLEN) == RIBBON_OK, "flush: %s", ribbon_last_error());
    CHECK(ribbon_fence() == RIBBON_OK, "fence: %s", ribbon_last_error());
    CHECK(v[VALUELEN - 1] == (char)(id + i) && k[0] == (char)(id * 3 + i), "data changed");
    CHECK(ribbon_free(k) == RIBBON_OK && ribbon_free(v) == RIBBON_OK, "free: %s", ribbon_last_error());
  }
  return NULL;
}

/* A thread that fences without ever flushing: just a store fence. */
static void *fence_only(void *arg) {
  (void)arg;
  CHECK(ribbon_fence() == RIBBON_OK, "fence from a thread that never flushed: %s", ribbon_last_error());
  return NULL;
}

/* Overflow: 1-entry queues (rounded up to 2), one flusher, the hand-off
 * forced: many unfenced flushes must block (or be drained by the caller),
 * never fail or be dropped. */
#define OVERFLOW_LINES 20000
static void overflow(void) {
  static char lines[OVERFLOW_LINES][64] __attribute__((aligned(64)));
  setenv("MEMTAMER_RIBBON_FLUSHERS", "1", 1);
  setenv("MEMTAMER_RIBBON_HANDOFF", "always", 1);
  CHECK(ribbon_start(1, 1) == RIBBON_OK, "start(1, 1): %s", ribbon_last_error());
  unsetenv("MEMTAMER_RIBBON_HANDOFF");
  for (int i = 0; i < OVERFLOW_LINES; i++) {
    lines[i][0] = (char)i;
    CHECK(ribbon_flush(lines[i], 64) == RIBBON_OK, "flush into a full queue: %s", ribbon_last_error());
  }
  CHECK(ribbon_fence() == RIBBON_OK, "fence after overflow: %s", ribbon_last_error());
  CHECK(ribbon_stop() == RIBBON_OK, "stop after overflow: %s", ribbon_last_error());
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  inserts = argc > 2 ? atol(argv[2]) : 10000;
  char buf[256];

  CHECK(ribbon_fence() == RIBBON_ENOTSTARTED, "fence before start must say not started");
  CHECK(ribbon_flush(buf, sizeof buf) == RIBBON_ENOTSTARTED, "flush before start must say not started");
  CHECK(ribbon_start(0, 64) == RIBBON_EINVAL, "numAppT 0 must be EINVAL");
  CHECK(ribbon_start(4, 0) == RIBBON_EINVAL, "eleFQueue 0 must be EINVAL");
  CHECK(ribbon_start(1 << 30, 64) == RIBBON_EINVAL, "absurd numAppT must be EINVAL");
  CHECK(ribbon_start(4, 1 << 30) == RIBBON_EINVAL, "absurd eleFQueue must be EINVAL");
  CHECK(strstr(ribbon_last_error(), "eleFQueue = 1073741824") != NULL, "error names the value: %s", ribbon_last_error());
  CHECK(ribbon_start(-3, 64) == RIBBON_EINVAL, "negative numAppT must be EINVAL");
  CHECK(strstr(ribbon_last_error(), "numAppT = -3") != NULL, "error names the value: %s", ribbon_last_error());
  CHECK(ribbon_alloc(0, RIBBON_VALUE) == NULL, "alloc 0 must fail");
  CHECK(ribbon_alloc(16, 42) == NULL, "alloc type 42 must fail");
  CHECK(ribbon_free(buf) == RIBBON_EINVAL, "freeing a stack buffer must be EINVAL");

  CHECK(ribbon_start(threads, 256) == RIBBON_OK, "start: %s", ribbon_last_error());
  CHECK(ribbon_start(threads, 256) == RIBBON_EALREADY, "second start must be EALREADY");
  CHECK(ribbon_flush((void *)UINTPTR_MAX, 64) == RIBBON_EINVAL, "wrapping range must be EINVAL");
  CHECK(ribbon_flush(NULL, 64) == RIBBON_EINVAL, "a NULL range must be EINVAL (it was queued and the flusher faulted)");
  CHECK(strstr(ribbon_last_error(), "NULL page") != NULL, "error names the NULL page: %s", ribbon_last_error());
  pthread_t f;
  pthread_create(&f, NULL, fence_only, NULL);
  pthread_join(f, NULL);

  pthread_t t[64];
  if (threads > 64) threads = 64;
  for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  printf("ribbon C ABI: %d threads x %ld inserts, flushers now %d\n", threads, inserts, ribbon_flushers());
  CHECK(ribbon_stop() == RIBBON_OK, "stop: %s", ribbon_last_error());
  CHECK(ribbon_stop() == RIBBON_ENOTSTARTED, "second stop must be ENOTSTARTED");
  overflow();
  printf("overflow: %d unfenced flushes into 2-entry queues, all accepted\n", OVERFLOW_LINES);
  if (failures) { fprintf(stderr, "%d failures\n", failures); return 1; }
  puts("ok");
  return 0;
}
