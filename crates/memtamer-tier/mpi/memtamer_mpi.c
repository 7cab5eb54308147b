/* PMPI interposer of memtamer-tier (Unimem, thesis §3.5 / Fig. 3.7).
 *
 * Every blocking MPI call ends a phase: the wrapper tells the tier runtime
 * (mt_tier_phase_boundary) and then calls the PMPI entry point. Non-blocking
 * starts (MPI_Isend/Irecv) are merged into the following phase, as in the
 * thesis; their completion (MPI_Wait*) is a boundary. Fortran programs call
 * the mpi_*_ symbols, which Open MPI's Fortran layer would otherwise route
 * straight to PMPI_*, so they are wrapped too (pmpi_*_ are weak: a C-only
 * program without the Fortran MPI library still loads).
 *
 * MPI_Init splits the node's DRAM budget (MEMTAMER_NODE_DRAM, bytes with
 * K/M/G) among the ranks of the node (MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED) unless MEMTAMER_DRAM_BUDGET sets this rank's share.
 * A budget of 0 or one larger than the machine aborts the job with a message
 * naming the variable (nothing has been allocated yet, so nothing is lost).
 * MPI_Finalize prints one report line per rank on stderr. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../include/memtamer_tier.h"

/* malloc_hook.c: large-allocation interposition (MEMTAMER_TIER_MALLOC_MIN). */
void mt_malloc_start(void);
void mt_malloc_stop(void);
void mt_malloc_report(char *buf, size_t len);

static int mt_on = 0;
/* MEMTAMER_TIER_ITER_EVERY=K: a program with no mt_tier_iteration() in its
 * main loop (hpcc) gets one every K phase boundaries, so Unimem profiles,
 * decides and moves its (interposed-malloc) objects anyway. 0: off. */
static unsigned long iter_every, since_iter;
/* Set while a Fortran wrapper runs: MPICH's Fortran layer calls the C MPI_*
 * (not PMPI_*), so the C wrapper must not count the same call again. */
static __thread int mt_in_fortran = 0;

/* Bytes with an optional K/M/G suffix; 0 for garbage. */
size_t mt_parse_bytes(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return 0;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; break;
    case 'm': case 'M': v *= 1024.0 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
    }
    return (size_t)v;
}

static void mt_start(void) {
    MPI_Comm node;
    int local = 1, lrank = 0, wrank = 0;
    size_t budget = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    int have_masks = 0;
    unsigned char *masks = NULL;
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        PMPI_Comm_size(node, &local);
        PMPI_Comm_rank(node, &lrank);
        /* Every rank's CPU mask, so the copy rule counts only the ranks that
         * compete for this rank's CPUs (an all-zero mask means unknown). */
        cpu_set_t mine;
        CPU_ZERO(&mine);
        if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);
        masks = calloc((size_t)(local > 0 ? local : 1), sizeof mine);
        if (masks && PMPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, masks, (int)sizeof mine, MPI_BYTE, node) == MPI_SUCCESS)
            have_masks = 1;
        PMPI_Comm_free(&node);
    }
    int wsize = 1;
    PMPI_Comm_size(MPI_COMM_WORLD, &wsize);
    mt_tier_set_rank(wrank, wsize);
    mt_tier_set_node_ranks(local);
    if (have_masks && mt_tier_set_node_affinity(masks, local, (int)sizeof(cpu_set_t), lrank) != 0)
        fprintf(stderr, "memtamer[%d]: %s\n", wrank, mt_tier_last_error());
    free(masks);
    const char *nd = getenv("MEMTAMER_NODE_DRAM");
    if (!getenv("MEMTAMER_DRAM_BUDGET") && nd) {
        size_t b = mt_parse_bytes(nd);
        budget = local > 0 ? b / (size_t)local : b;
        if (budget == 0) {
            fprintf(stderr, "memtamer[%d]: MEMTAMER_NODE_DRAM=%s gives a DRAM budget of 0 B for each of %d local ranks; aborting\n", wrank, nd, local);
            PMPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    if (mt_tier_init(budget) != 0) {
        fprintf(stderr, "memtamer[%d]: %s; aborting\n", wrank, mt_tier_last_error());
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
    const char *ie = getenv("MEMTAMER_TIER_ITER_EVERY");
    iter_every = ie ? strtoul(ie, NULL, 10) : 0;
    mt_on = 1;
    mt_malloc_start();
}


static void mt_phase(void) {
    if (!mt_on || mt_in_fortran) return;
    mt_tier_phase_boundary();
    if (iter_every && ++since_iter >= iter_every) {
        since_iter = 0;
        mt_tier_iteration();
    }
}

/* The call begun by mt_phase() has returned: a recorded profile
 * (MEMTAMER_TIER_PROFILE_OUT) keeps its time apart from the computation. */
static void mt_phase_call_done(void) {
    if (!mt_on || mt_in_fortran) return;
    mt_tier_phase_call_done();
}

/* Stops the malloc interposition and prints this rank's report line. */
static void mt_report(int rank) {
    char line[2048], extra[96]; /* the report is ~900 bytes with its per-direction, allocation and copies_exposed tokens */
    mt_malloc_stop();
    mt_malloc_report(extra, sizeof extra);
    if (mt_tier_finish(line, sizeof line) >= 0) fprintf(stderr, "memtamer[%d]: %s%s\n", rank, line, extra);
}

static void mt_prepare_env(void) {
    /* Open MPI's single-copy path (CMA, process_vm_readv) reads user buffers
     * in the kernel, where a sampled (PROT_NONE) or write-protected page gives
     * EFAULT instead of a fault we can handle: use copy-in/copy-out. */
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
    /* The same for MPICH over UCX: only the copy-in/copy-out shared-memory
     * transports. CMA and TCP hand our pages to the kernel (EFAULT), and
     * KNEM/XPMEM let peers map them. Single node only: a network transport
     * registers or sends user pages directly (see docs/unimem.md). */
    setenv("UCX_TLS", "self,posix,sysv", 0);
}

int MPI_Init(int *argc, char ***argv) {
    mt_prepare_env();
    int r = PMPI_Init(argc, argv);
    if (r == MPI_SUCCESS) mt_start();
    return r;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    mt_prepare_env();
    int r = PMPI_Init_thread(argc, argv, required, provided);
    if (r == MPI_SUCCESS) mt_start();
    return r;
}

int MPI_Finalize(void) {
    if (mt_on) {
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        mt_report(rank);
        mt_on = 0;
    }
    return PMPI_Finalize();
}

#define PHASE(call) do { mt_phase(); int mt_r_ = call; mt_phase_call_done(); return mt_r_; } while (0)

int MPI_Barrier(MPI_Comm c) { PHASE(PMPI_Barrier(c)); }
int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) { PHASE(PMPI_Bcast(b, n, t, root, c)); }
int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c) { PHASE(PMPI_Reduce(s, r, n, t, o, root, c)); }
int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c) { PHASE(PMPI_Allreduce(s, r, n, t, o, c)); }
int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c) { PHASE(PMPI_Alltoall(s, sn, st, r, rn, rt, c)); }
int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c) { PHASE(PMPI_Allgather(s, sn, st, r, rn, rt, c)); }
int MPI_Send(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) { PHASE(PMPI_Send(b, n, t, d, tag, c)); }
int MPI_Recv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st) { PHASE(PMPI_Recv(b, n, t, s, tag, c, st)); }
int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype st, int d, int stag, void *rb, int rn, MPI_Datatype rt, int s, int rtag, MPI_Comm c, MPI_Status *status) {
    PHASE(PMPI_Sendrecv(sb, sn, st, d, stag, rb, rn, rt, s, rtag, c, status));
}
int MPI_Wait(MPI_Request *q, MPI_Status *s) { PHASE(PMPI_Wait(q, s)); }
int MPI_Waitall(int n, MPI_Request *q, MPI_Status *s) { PHASE(PMPI_Waitall(n, q, s)); }

/* Fortran bindings: all arguments by reference; pass them through. */
#define FWRAP(name, pname, params, args)                      \
    extern void pname params __attribute__((weak));           \
    void name params {                                        \
        mt_phase();                                           \
        mt_in_fortran++;                                      \
        if (pname) pname args;                                \
        mt_in_fortran--;                                      \
        mt_phase_call_done();                                 \
    }
FWRAP(mpi_barrier_, pmpi_barrier_, (void *c, void *e), (c, e))
FWRAP(mpi_bcast_, pmpi_bcast_, (void *b, void *n, void *t, void *r, void *c, void *e), (b, n, t, r, c, e))
FWRAP(mpi_reduce_, pmpi_reduce_, (void *s, void *r, void *n, void *t, void *o, void *root, void *c, void *e), (s, r, n, t, o, root, c, e))
FWRAP(mpi_allreduce_, pmpi_allreduce_, (void *s, void *r, void *n, void *t, void *o, void *c, void *e), (s, r, n, t, o, c, e))
FWRAP(mpi_alltoall_, pmpi_alltoall_, (void *s, void *sn, void *st, void *r, void *rn, void *rt, void *c, void *e), (s, sn, st, r, rn, rt, c, e))
FWRAP(mpi_send_, pmpi_send_, (void *b, void *n, void *t, void *d, void *tag, void *c, void *e), (b, n, t, d, tag, c, e))
FWRAP(mpi_recv_, pmpi_recv_, (void *b, void *n, void *t, void *s, void *tag, void *c, void *st, void *e), (b, n, t, s, tag, c, st, e))
FWRAP(mpi_wait_, pmpi_wait_, (void *q, void *s, void *e), (q, s, e))
FWRAP(mpi_waitall_, pmpi_waitall_, (void *n, void *q, void *s, void *e), (n, q, s, e))
FWRAP(mpi_sendrecv_, pmpi_sendrecv_,
      (void *sb, void *sn, void *st, void *d, void *stag, void *rb, void *rn, void *rt, void *s, void *rtag, void *c, void *status, void *e),
      (sb, sn, st, d, stag, rb, rn, rt, s, rtag, c, status, e))

extern void pmpi_init_(void *e) __attribute__((weak));
extern void pmpi_finalize_(void *e) __attribute__((weak));
void mpi_init_(int *e) {
    mt_prepare_env();
    if (pmpi_init_) pmpi_init_(e);
    if (*e == MPI_SUCCESS) mt_start();
}
void mpi_finalize_(int *e) {
    if (mt_on) {
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        mt_report(rank);
        mt_on = 0;
    }
    if (pmpi_finalize_) pmpi_finalize_(e);
}

/* Fortran: call mt_tier_iteration() at the top of the main loop. */
void mt_tier_iteration_(void) { mt_tier_iteration(); }
