/* memtamer_tx.h: C API of memtamer-tx (ArchTM logless copy-on-write
 * persistent-memory transactions). Link with -lmemtamer_tx
 * (target/release/libmemtamer_tx.so or .a).
 *
 * Status codes: 0 success, -1 error (mtx_last_error() says why),
 * MTX_CONFLICT (-2) write conflict: call mtx_tx_abort and run the
 * transaction again. Objects are named by 32-bit ids; 0 is none.
 * A -1 from mtx_tx_read, _write, _alloc or _free does not end the
 * transaction: that call changed nothing, and the handle is still the
 * caller's to end with mtx_tx_commit (keeping the operations that
 * succeeded) or mtx_tx_abort (dropping them).
 * One transaction per thread at a time; a pool must outlive its
 * transactions. Set PMEM_IS_PMEM_FORCE=1 to use cache-line flushes on a
 * file that is not DAX (as with libpmem); otherwise msync is used. */
#ifndef MEMTAMER_TX_H
#define MEMTAMER_TX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MTX_CONFLICT (-2)

typedef struct Pool mtx_pool;
typedef struct MtxTx mtx_tx;

const char *mtx_last_error(void);

mtx_pool *mtx_pool_create(const char *path, uint64_t size, uint32_t root_size);
mtx_pool *mtx_pool_open(const char *path);
void mtx_pool_close(mtx_pool *pool);
/* Incremental checkpoint of the lookup table (close takes one too): the next
 * open recovers from it instead of scanning the whole pool. 0, or -1. */
int mtx_pool_checkpoint(const mtx_pool *pool);
/* The root object's id; 0 (never an id) for a NULL pool, with mtx_last_error. */
uint32_t mtx_root(const mtx_pool *pool);

mtx_tx *mtx_tx_begin(const mtx_pool *pool);
int mtx_tx_read(mtx_tx *tx, uint32_t id, size_t off, void *out, size_t len);
int mtx_tx_write(mtx_tx *tx, uint32_t id, size_t off, const void *data, size_t len);
/* size in 1..=2^31-1; a NULL id is refused (-1) before anything is allocated. */
int mtx_tx_alloc(mtx_tx *tx, size_t size, uint32_t *id);
/* Frees id at commit. The root object (mtx_root) cannot be freed: -1,
 * nothing freed, the transaction still open (as for any -1 above). */
int mtx_tx_free(mtx_tx *tx, uint32_t id);
int mtx_tx_commit(mtx_tx *tx);
void mtx_tx_abort(mtx_tx *tx);

#ifdef __cplusplus
}
#endif
#endif
