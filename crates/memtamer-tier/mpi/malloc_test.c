/* Checks the interposed allocator (malloc_hook.c) under
 * MEMTAMER_TIER_MALLOC_MIN=1M: calloc'd tier objects are zero, realloc keeps
 * the contents when it grows a heap block into a tier object, grows a tier
 * object, and shrinks one back to the heap; posix_memalign/aligned_alloc
 * honour the alignment; malloc_usable_size covers the request; small blocks
 * and blocks allocated before MPI_Init stay on the heap and free normally.
 * Prints "malloc_test ... VERIFIED"; run.sh also checks the report line's
 * malloc_objects count (6). */
#define _GNU_SOURCE
#include <malloc.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024 * 1024)
static int ok = 1;
static void check(int c, const char *what) { if (!c) { fprintf(stderr, "malloc_test: %s\n", what); ok = 0; } }
static int all(const unsigned char *p, size_t n, unsigned char v) { for (size_t i = 0; i < n; i++) if (p[i] != v) return 0; return 1; }

int main(int argc, char **argv) {
    char *early = malloc(2 * MB); /* before MPI_Init: the heap */
    memset(early, 7, 2 * MB);
    MPI_Init(&argc, &argv);
    unsigned char *z = calloc(3, MB);                               /* tier object 1 */
    check(z && all(z, 3 * MB, 0), "calloc not zero");
    char *h = malloc(4096);                                         /* heap */
    memset(h, 5, 4096);
    h = realloc(h, 2 * MB);                                         /* heap -> tier object 2 */
    check(h && all((unsigned char *)h, 4096, 5), "realloc heap->tier lost data");
    memset(h, 9, 2 * MB);
    h = realloc(h, 5 * MB);                                         /* tier -> tier object 3 */
    check(h && all((unsigned char *)h, 2 * MB, 9), "realloc tier->tier lost data");
    check(malloc_usable_size(h) >= 5 * MB, "malloc_usable_size too small");
    h = realloc(h, 1000);                                           /* tier -> heap */
    check(h && all((unsigned char *)h, 1000, 9), "realloc tier->heap lost data");
    void *a = NULL;
    check(posix_memalign(&a, 4096, 3 * MB) == 0 && ((uintptr_t)a & 4095) == 0, "posix_memalign"); /* 4 */
    void *b = aligned_alloc(256, 2 * MB);                          /* 5 */
    check(b && ((uintptr_t)b & 255) == 0, "aligned_alloc");
    void *big = NULL;
    check(posix_memalign(&big, 1 << 16, 2 * MB) == 0 && ((uintptr_t)big & 0xffff) == 0, "64K alignment (heap)");
    unsigned char *m = malloc(MB);                                  /* 6: exactly the threshold */
    memset(m, 3, MB);
    check(all(m, MB, 3), "malloc at the threshold");
    free(z); free(h); free(a); free(b); free(big); free(m); free(NULL);
    check(all((unsigned char *)early, 2 * MB, 7), "pre-Init block changed");
    free(early);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("malloc_test %s\n", ok ? "VERIFIED" : "FAILED");
    MPI_Finalize();
    return ok ? 0 : 1;
}
