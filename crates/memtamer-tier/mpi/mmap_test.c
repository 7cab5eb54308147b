/* Checks mmap interposition (malloc_hook.c) under MEMTAMER_TIER_MMAP_MIN=1M:
 * large private anonymous read-write mappings become tier objects (3 of
 * them: two mmaps and the new block of one mremap), zero-filled, placed and
 * moved by Unimem while the loop runs, their data intact; a partial munmap
 * of one is refused (EINVAL) and leaves it whole; mremap without
 * MREMAP_MAYMOVE cannot grow one (ENOMEM), with it the data moves to a new
 * object; munmap of the whole object frees it (mincore then says unmapped).
 * Small, shared and read-only mappings go to the kernel.
 * Prints "mmap_test ... VERIFIED"; run.sh also checks the report line's
 * mmap_objects count (3) and that objects moved. */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "../include/memtamer_tier.h"

#define MB ((size_t)1024 * 1024)
static int ok = 1;
static void check(int c, const char *what) { if (!c) { fprintf(stderr, "mmap_test: %s\n", what); ok = 0; } }
static void *anon(size_t n, int prot, int flags) { return mmap(NULL, n, prot, flags | MAP_ANONYMOUS, -1, 0); }
static int zero(const unsigned char *p, size_t n) { for (size_t i = 0; i < n; i++) if (p[i]) return 0; return 1; }
static unsigned char pat(size_t i, int s) { return (unsigned char)(i * 131 + s); }
static int has(const unsigned char *p, size_t n, int s) { for (size_t i = 0; i < n; i++) if (p[i] != pat(i, s)) return 0; return 1; }
static void put(unsigned char *p, size_t n, int s) { for (size_t i = 0; i < n; i++) p[i] = pat(i, s); }
static int mapped(void *p) { unsigned char v; return mincore(p, 4096, &v) == 0; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    unsigned char *a = anon(4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE);  /* tier object 1 */
    unsigned char *b = anon(3 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE);  /* tier object 2 */
    check(a != MAP_FAILED && b != MAP_FAILED, "mmap failed");
    check(zero(a, 4 * MB) && zero(b, 3 * MB), "anonymous mapping not zero");
    unsigned char *small = anon(64 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    unsigned char *shared = anon(2 * MB, PROT_READ | PROT_WRITE, MAP_SHARED);
    unsigned char *ro = anon(2 * MB, PROT_READ, MAP_PRIVATE);
    check(small != MAP_FAILED && shared != MAP_FAILED && ro != MAP_FAILED, "kernel mappings failed");
    check(zero(ro, 2 * MB), "read-only mapping not zero");
    put(a, 4 * MB, 1);
    put(b, 3 * MB, 2);
    double sum = 0, all;
    for (int it = 0; it < 8; it++) {
        mt_tier_iteration();
        for (int k = 0; k < 100; k++)
            for (size_t i = 0; i < 4 * MB; i += 64) sum += a[i];
        MPI_Barrier(MPI_COMM_WORLD);
        for (size_t i = 0; i < 3 * MB; i += 64) b[i] = pat(i, 2);
        MPI_Allreduce(&sum, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    check(has(a, 4 * MB, 1) && has(b, 3 * MB, 2), "data changed across moves");
    errno = 0;
    check(munmap(a + 4096, 4096) == -1 && errno == EINVAL, "partial munmap of a tier object not refused");
    check(mapped(a + 4096) && has(a, 4 * MB, 1), "partial munmap changed the object");
    errno = 0;
    check(mremap(b, 3 * MB, 8 * MB, 0) == MAP_FAILED && errno == ENOMEM, "mremap in place grew a tier object");
    unsigned char *b2 = mremap(b, 3 * MB, 6 * MB, MREMAP_MAYMOVE);          /* tier object 3 */
    check(b2 != MAP_FAILED && has(b2, 3 * MB, 2) && zero(b2 + 3 * MB, 3 * MB), "mremap lost data");
    check(munmap(a, 4 * MB) == 0 && !mapped(a), "munmap of a tier object");
    check(munmap(b2, 6 * MB) == 0 && !mapped(b2), "munmap of the remapped object");
    check(munmap(small, 64 * 1024) == 0 && munmap(shared, 2 * MB) == 0 && munmap(ro, 2 * MB) == 0, "munmap of kernel mappings");
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("mmap_test %s\n", ok ? "VERIFIED" : "FAILED");
    MPI_Finalize();
    return ok ? 0 : 1;
}
