/* memtamer-tier: two-tier data objects for MPI programs (Unimem, thesis ch. 3).
 * Link with -lmemtamer_mpi (which also interposes MPI through PMPI). */
#ifndef MEMTAMER_TIER_H
#define MEMTAMER_TIER_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* DRAM budget of this process in bytes; 0 = from MEMTAMER_DRAM_BUDGET. 0 ok, -1 error. */
int mt_tier_init(size_t dram_budget);
/* A named object, in the slow tier until Unimem promotes it (or in DRAM at
 * birth, if earlier objects of this name were accessed: mt_tier_malloc_site). NULL on error. */
void *mt_tier_malloc(size_t size, const char *name);
/* mt_tier_malloc with an explicit allocation identity (0: none) for
 * allocation-time placement: an object whose identity earlier objects showed
 * to be accessed is born in DRAM while the DRAM the plan leaves free allows
 * (MEMTAMER_ALLOC_PLACE=0 turns it off). mt_tier_malloc's identity is the
 * name; the interposer passes its call site and size class. NULL on error. */
void *mt_tier_malloc_site(size_t size, const char *name, unsigned long long site);
/* 0 ok; -1 for a pointer mt_tier_malloc never returned (see mt_tier_last_error). */
int mt_tier_free(void *ptr);
const char *mt_tier_last_error(void);
/* This process's MPI_COMM_WORLD rank and size (the interposer's MPI_Init
 * calls it): names its status file rank<R>.json in MEMTAMER_TIER_STATUS_DIR. */
void mt_tier_set_rank(int rank, int size);
/* Ranks on this node (the interposer's MPI_COMM_TYPE_SHARED size; call
 * before mt_tier_init): with as many ranks as the CPUs this process may use,
 * or more, the copy helper has no CPU of its own and Unimem charges every
 * copy in full (MEMTAMER_COPIES_EXPOSED=auto|1|0 overrides). */
void mt_tier_set_node_ranks(int ranks);
/* The affinity masks of the node's ranks (the interposer gathers them in
 * MPI_Init; call before mt_tier_init): `ranks` masks of `mask_bytes` bytes
 * each (cpu_set_t layout) in node-rank order, `me` this rank's index. Only
 * the ranks whose masks meet this one's then count against the CPUs of
 * their union, so ranks bound to disjoint sets with a CPU to spare keep the
 * copy overlap. 0 ok; -1 for bad arguments or an empty own mask (the
 * node-wide count stays; see mt_tier_last_error). */
int mt_tier_set_node_affinity(const unsigned char *masks, int ranks, int mask_bytes, int me);
/* Call at the top of every main-loop iteration (thesis unimem_start). */
void mt_tier_iteration(void);
/* A phase boundary; the MPI wrappers call it for you. */
void mt_tier_phase_boundary(void);
/* The MPI call after the last boundary has returned (the wrappers call it):
 * a recorded profile (MEMTAMER_TIER_PROFILE_OUT) keeps the call's time apart. */
void mt_tier_phase_call_done(void);
/* Stop, wait for moves, write a one-line report of "key value" tokens
 * (moves, failed, bytes_moved, copy_ms, ...; then per direction: promoted,
 * promoted_bytes, promote_ms, promote_gbs, evicted, evicted_bytes, evict_ms,
 * evict_gbs, a GB/s value "-" without a sample). New tokens are only ever
 * added, under new names. Returns the report's length (it is cut to len-1
 * bytes in buf), or -1 when no runtime is running (mt_tier_last_error says
 * so). The same numbers, per rank, are in the status file
 * (MEMTAMER_TIER_STATUS_DIR: "to_dram", "to_slow"; memtamer tier status). */
int mt_tier_finish(char *buf, size_t len);
/* End the runtime, as pmemobj_close ends a pool: wait for the move in
 * flight, drop queued moves, free every object still allocated (memory,
 * slow-tier file, fault-table slot). EVERY POINTER mt_tier_malloc RETURNED
 * IS INVALID AFTERWARDS. *live_objects (if not NULL) gets the number of
 * objects that were still allocated (0 if all were freed), also on error.
 * 0 ok (also with no runtime running), -1 error (see mt_tier_last_error;
 * the objects are freed all the same). A later mt_tier_init/malloc starts a
 * fresh runtime. Call mt_tier_finish first for the run's report. */
int mt_tier_shutdown(size_t *live_objects);
/* 1 while the calling thread is inside a mt_tier_* call (the interposed
 * malloc's recursion guard; never allocates). */
int mt_tier_in_runtime(void);
#ifdef __cplusplus
}
#endif
#endif
