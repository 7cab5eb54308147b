/*
 * memtamer_ribbon.h: Ribbon's C ABI (thesis ch. 6, Table 6.2).
 * Link with -lmemtamer_ribbon (target/release/libmemtamer_ribbon.so or .a).
 *
 * Application threads enqueue flushes into private queues; flusher
 * threads execute them (clwb + sfence); ribbon_fence() blocks until the
 * caller's queue drained. No refusal loses data: a flush refused with an
 * error code was executed on the calling thread before returning.
 *
 * Environment (read by ribbon_start):
 *   MEMTAMER_RIBBON_FLUSHERS  "auto" (four-point search, default) or a count
 *                             (0 = application threads flush themselves)
 *   MEMTAMER_RIBBON_P1        flushers that saturate write bandwidth (default 4)
 *   MEMTAMER_RIBBON_KEY_BYTES room a value reserves for its key (default 24;
 *                             read by the first ribbon_alloc, which fails,
 *                             as every later one, if it is not a byte count)
 *   MEMTAMER_RIBBON_PIN       1 (default): pin each flusher to a CPU the
 *                             application leaves idle; 0: leave them unpinned
 */
#ifndef MEMTAMER_RIBBON_H
#define MEMTAMER_RIBBON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RIBBON_OK           0  /* success */
#define RIBBON_EINVAL      -1  /* argument out of range */
#define RIBBON_ENOTSTARTED -2  /* not started: the request ran on this thread */
#define RIBBON_EALREADY    -3  /* ribbon_start while started */
#define RIBBON_ENOMEM      -4  /* out of memory */
#define RIBBON_ESYS        -5  /* the OS refused (thread creation) */

#define RIBBON_KEY   0
#define RIBBON_VALUE 1

/* Creates queues (numAppT of eleFQueue entries; more threads flush inline),
 * flusher and control threads. 1 <= numAppT <= 4096, 1 <= eleFQueue <= 2^20. */
int ribbon_start(int numAppT, int eleFQueue);
/* Enqueues a flush of addr..addr+len on the caller's queue. The range must
 * stay mapped until the caller's next ribbon_fence. A range that wraps, is
 * over 1 TiB or starts in the first page (NULL) is refused with
 * RIBBON_EINVAL and nothing is flushed; len 0 is a no-op. */
int ribbon_flush(const void *addr, size_t len);
/* Blocks until every flush the caller enqueued before is durable. */
int ribbon_fence(void);
/* Cache-line-aligned allocation; a RIBBON_VALUE reserves room for the
 * RIBBON_KEY this thread allocates next, right after the value. NULL on error. */
void *ribbon_alloc(size_t len, int type);
/* Frees a ribbon_alloc pointer (a value's block is reused once its key is
 * freed too); NULL is a no-op; a foreign pointer or double free: RIBBON_EINVAL. */
int ribbon_free(void *addr);
/* Drains every queue, stops all threads. */
int ribbon_stop(void);
/* Flusher threads now (0 = application threads flush), or RIBBON_ENOTSTARTED. */
int ribbon_flushers(void);
/* The calling thread's last error as text, or NULL. */
const char *ribbon_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
