/* tx_bad_input: hostile calls on the memtamer-tx C ABI, each checked for
 * its status code and that the transaction is left as the header says.
 * Prints "tx_bad_input: ok" and exits 0, or names the failed check.
 *   tx_bad_input POOL   (a path that does not exist yet) */
#include <memtamer_tx.h>
#include <stdio.h>
#include <string.h>

static int failed;
#define CHECK(cond, what)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            const char *e = mtx_last_error();                                  \
            fprintf(stderr, "tx_bad_input: %s (last error: %s)\n", what,     \
                    e ? e : "none");                                           \
            failed = 1;                                                        \
        }                                                                      \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s POOL\n", argv[0]); return 2; }
    mtx_pool *pool = mtx_pool_create(argv[1], 8u << 20, 64);
    if (!pool) { fprintf(stderr, "pool: %s\n", mtx_last_error()); return 1; }
    uint32_t root = mtx_root(pool);
    char got[13] = {0};

    /* freeing the root: -1, nothing freed, the transaction still open */
    mtx_tx *tx = mtx_tx_begin(pool);
    CHECK(tx != NULL, "begin");
    CHECK(mtx_tx_write(tx, root, 0, "before", 6) == 0, "write before");
    CHECK(mtx_tx_free(tx, root) == -1, "mtx_tx_free(root) returns -1");
    const char *e = mtx_last_error();
    CHECK(e && strstr(e, "root") && !strstr(e, "abort"), "the message names the root, no abort");
    CHECK(mtx_tx_write(tx, root, 6, "+after", 6) == 0, "the transaction is still usable");
    CHECK(mtx_tx_commit(tx) == 0, "commit after the refused free");

    /* the refused free, then the usual error path: abort, begin again */
    tx = mtx_tx_begin(pool);
    CHECK(tx != NULL, "a new transaction begins after the commit");
    CHECK(mtx_tx_write(tx, root, 0, "XXXXXX", 6) == 0, "write to be aborted");
    if (mtx_tx_free(tx, root) != 0) mtx_tx_abort(tx);
    tx = mtx_tx_begin(pool);
    CHECK(tx != NULL, "begin after the abort (no nested transaction left)");
    CHECK(mtx_tx_read(tx, root, 0, got, 12) == 0, "read back");
    CHECK(memcmp(got, "before+after", 12) == 0, "the commit kept both writes, the abort none");

    /* other refusals in the same open transaction */
    uint32_t id = 0;
    CHECK(mtx_tx_free(tx, UINT32_MAX) == -1, "free of an unknown id");
    CHECK(mtx_tx_alloc(tx, 0, &id) == -1, "alloc of 0 bytes");
    CHECK(mtx_tx_alloc(tx, 64, NULL) == -1, "alloc with a NULL id");
    CHECK(mtx_tx_read(tx, root, SIZE_MAX, got, 2) == -1, "read at an offset that wraps");
    CHECK(mtx_tx_alloc(tx, 64, &id) == 0 && id != 0, "alloc after the refusals");
    CHECK(mtx_tx_free(tx, id) == 0, "free of the new object");
    CHECK(mtx_tx_free(tx, id) == -1, "second free of it");
    CHECK(mtx_tx_commit(tx) == 0, "commit");
    CHECK(mtx_tx_free(NULL, root) == -1, "free with a NULL transaction");
    CHECK(mtx_tx_begin(NULL) == NULL, "begin on a NULL pool");

    mtx_pool_close(pool);
    if (failed) return 1;
    printf("tx_bad_input: ok\n");
    return 0;
}
