/*
 * memtamer.h - PATS admission control for threads that access persistent
 * memory (PM). Link with -lmemtamer (target/release/libmemtamer.so).
 *
 * Bracket every PM request with memtamer_begin()/memtamer_end(), or use the
 * gated copies below. At most T_S gated requests run at once across every
 * process that uses the same gate name (MEMTAMER_GATE, default "default");
 * T_S follows the request mix (PATS Eq. 1) unless MEMTAMER_GATE_POLICY says
 * otherwise. Requests smaller than the bypass size (256 B) never wait.
 * See docs/pats.md for the environment variables and the statistics.
 *
 * Every function is thread-safe. A thread is registered on its first call
 * and unregistered when it exits. If the gate cannot be opened, requests
 * pass ungated and memtamer_last_error() says why.
 */
#ifndef MEMTAMER_H
#define MEMTAMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version ("0.1.0"), a static string: which libmemtamer the
 * dynamic linker loaded. The soname is libmemtamer.so.0, and every symbol
 * carries the version libmemtamer.so.0. */
const char *memtamer_version(void);

/* Opens the gate from the environment and starts this process's collector.
 * Optional (the first request does it). Returns 0, or -1 with
 * memtamer_last_error() set. */
int memtamer_init(void);

/* Why this thread's last failing memtamer_gate_stats() failed, else why the
 * gate is disabled (NULL if neither). Valid until the next call from this
 * thread. */
const char *memtamer_last_error(void);

/* Starts a PM request of `bytes` bytes (is_write: nonzero for a write);
 * blocks while T_S requests are running. Returns 0 if admitted at once,
 * 1 if it waited, 2 if bypassed (small), 3 if it proceeded unadmitted after
 * the admission bound (MEMTAMER_GATE_MAX_WAIT_MS, default 100 ms) and -1 if
 * the gate is disabled. */
int memtamer_begin(size_t bytes, int is_write);

/* Ends the calling thread's request. Harmless without a begin. */
void memtamer_end(void);

/* Gated persistent copies: like libpmem's pmem_memcpy_persist and
 * pmem_memset_persist (copy, flush the destination's cache lines with
 * CLWB/CLFLUSHOPT/CLFLUSH, then SFENCE). Return pmemdest. */
void *memtamer_memcpy_persist(void *pmemdest, const void *src, size_t len);
void *memtamer_memset_persist(void *pmemdest, int c, size_t len);

/* Sets the system-wide limit (0: unlimited). Meant for operators; the
 * collector of the process holding the lease may change it again unless
 * MEMTAMER_GATE_POLICY=external. Returns 0 or -1. */
int memtamer_set_limit(uint32_t limit);

/* A snapshot of the gate. Set `size` to sizeof(struct memtamer_gate_stats)
 * before the call: the library fills as many fields as both sides know and
 * sets `size` to the bytes it filled, so a program built against an older or
 * newer header keeps working (new fields are only ever appended). */
struct memtamer_gate_stats {
    uint32_t size;           /* in: the caller's sizeof; out: bytes filled */
    uint32_t limit;          /* T_S; 0 = unlimited */
    uint32_t serving;        /* admitted requests in flight */
    uint32_t waiting;        /* threads waiting */
    uint32_t peak_serving;   /* most requests ever in flight at once */
    uint32_t threads;        /* registered threads */
    uint64_t admissions;     /* gated requests admitted */
    uint64_t contended;      /* of those, admitted after waiting */
    uint64_t reclaimed;      /* capacity taken back from dead threads */
    uint64_t read_bytes;     /* all threads, live and exited */
    uint64_t write_bytes;
    uint64_t bypassed;       /* requests below the bypass size */
    uint64_t wait_ns_total;  /* time spent waiting */
};

/* Fills *out. Returns 0, or -1 if the gate is disabled, out is NULL or
 * out->size is smaller than this struct's first version (80 bytes);
 * memtamer_last_error() says which. */
int memtamer_gate_stats(struct memtamer_gate_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* MEMTAMER_H */
