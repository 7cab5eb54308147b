/* tx_counter: N threads increment a persistent counter in the root object
 * of a memtamer-tx pool, retrying on write conflicts. Run it twice on the
 * same pool: the count continues.
 *   tx_counter POOL THREADS INCREMENTS */
#include <memtamer_tx.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static mtx_pool *pool;
static long increments;

static void *worker(void *arg) {
    (void)arg;
    uint32_t root = mtx_root(pool);
    for (long i = 0; i < increments; i++) {
        for (;;) {
            mtx_tx *tx = mtx_tx_begin(pool);
            if (!tx) { fprintf(stderr, "begin: %s\n", mtx_last_error()); exit(1); }
            uint64_t v;
            int rc = mtx_tx_read(tx, root, 0, &v, sizeof v);
            if (rc == 0) { v++; rc = mtx_tx_write(tx, root, 0, &v, sizeof v); }
            if (rc == 0) { mtx_tx_commit(tx); break; }
            mtx_tx_abort(tx);
            if (rc != MTX_CONFLICT) { fprintf(stderr, "tx: %s\n", mtx_last_error()); exit(1); }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s POOL THREADS INCREMENTS\n", argv[0]); return 2; }
    int threads = atoi(argv[2]);
    increments = atol(argv[3]);
    pool = access(argv[1], F_OK) == 0 ? mtx_pool_open(argv[1]) : mtx_pool_create(argv[1], 8u << 20, 64);
    if (!pool) { fprintf(stderr, "pool: %s\n", mtx_last_error()); return 1; }
    pthread_t t[64];
    if (threads < 1 || threads > 64) threads = 1;
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    mtx_tx *tx = mtx_tx_begin(pool);
    uint64_t v = 0;
    if (!tx || mtx_tx_read(tx, mtx_root(pool), 0, &v, sizeof v) != 0) { fprintf(stderr, "read: %s\n", mtx_last_error()); return 1; }
    mtx_tx_commit(tx);
    printf("counter = %llu\n", (unsigned long long)v);
    mtx_pool_close(pool);
    return 0;
}
