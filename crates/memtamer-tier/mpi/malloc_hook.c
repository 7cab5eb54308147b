/* Large-allocation interposition of memtamer-tier (issue 20 item 1: "explicit
 * mt_tier_malloc API plus optional interposition of large malloc").
 *
 * With MEMTAMER_TIER_MALLOC_MIN=<bytes> (K/M/G suffix) set, malloc, calloc,
 * realloc, posix_memalign, aligned_alloc and memalign of blocks of at least
 * that size become tier objects (named "malloc#<n>:<size>", n the call
 * order), so a program that never calls mt_tier_* (hpcc) has its arrays
 * placed and moved by Unimem. Everything else goes to the real allocator
 * (dlsym RTLD_NEXT):
 *   - smaller blocks, and everything before MPI_Init / after MPI_Finalize;
 *   - threads other than the one that called MPI_Init (the runtime's own
 *     sampler and migration threads among them);
 *   - any allocation made while the runtime itself runs on this thread
 *     (mt_tier_in_runtime(), the Rust side's thread-local guard): the
 *     runtime's buffers never become tier objects, so there is no recursion;
 *   - alignments above a page (tier objects are page-aligned mappings).
 * free/realloc/malloc_usable_size look the pointer up in a table of the
 * objects made here; a pointer the table does not know goes to the real
 * allocator, so mt_tier_free never sees a heap pointer. realloc of a tier
 * object allocates the new block, copies, and frees the old one. If the
 * runtime refuses an object (no space in the slow-tier directory, say) the
 * block comes from the real allocator instead: nothing fails that would not
 * fail without the interposer.
 *
 * With MEMTAMER_TIER_MMAP_MIN=<bytes> set (its own opt-in: MPI libraries
 * map memory too), mmap/mmap64 of a private anonymous read-write mapping of
 * at least that size, with no address hint, becomes a tier object
 * ("mmap#<n>:<size>"), under the same rules as malloc (after MPI_Init, the
 * MPI_Init thread, not inside the runtime). Shared, file-backed, fixed,
 * stack, huge-page and non-read-write mappings go to the kernel. munmap of
 * the whole object frees it; munmap of part of one, or of a range that
 * overlaps one, fails with EINVAL and changes nothing (a tier object is one
 * registry entry and cannot lose pages). mremap of one with MREMAP_MAYMOVE
 * allocates a new object, copies and frees the old one; without it, only
 * the same page-rounded size succeeds (growing in place: ENOMEM). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../include/memtamer_tier.h"

size_t mt_parse_bytes(const char *s);

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static size_t (*real_usable)(void *);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);

/* dlsym may allocate (its error buffer): serve that from a static arena. */
static char boot[16384] __attribute__((aligned(64)));
static size_t boot_used;
static int resolving;

static void *boot_alloc(size_t n) {
    n = (n + 63) & ~(size_t)63;
    if (boot_used + n > sizeof boot) return NULL;
    void *p = boot + boot_used;
    boot_used += n;
    return p;
}
static int is_boot(void *p) { return (char *)p >= boot && (char *)p < boot + sizeof boot; }

static void resolve(void) {
    if (real_malloc || resolving) return;
    resolving = 1;
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = dlsym(RTLD_NEXT, "memalign");
    real_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_munmap = dlsym(RTLD_NEXT, "munmap");
    real_mremap = dlsym(RTLD_NEXT, "mremap");
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    resolving = 0;
}

/* Interposition state: set by the MPI_Init/MPI_Finalize wrappers. */
static size_t min_size;              /* 0: malloc interposition off */
static size_t mmap_min;              /* 0: mmap interposition off */
static unsigned long mmap_objects;
static size_t mmap_bytes;
static volatile int active;
static pthread_t owner;
static unsigned long seq, objects, live;
static size_t bytes_total;

/* Open-addressing table of live tier objects (pointer -> size). */
#define SLOTS 16384
/* kind: how the object was made, so free() never takes an mmap'd one. */
enum { K_MALLOC = 0, K_MMAP = 1 };
static struct { uintptr_t p; size_t n; int kind; } tab[SLOTS];
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
#define TOMB ((uintptr_t)1)

static size_t slot_of(uintptr_t p) { return (size_t)((p >> 12) * 0x9E3779B97F4A7C15ull >> 50) % SLOTS; }

static int tab_put(void *ptr, size_t n, int kind) {
    uintptr_t p = (uintptr_t)ptr;
    pthread_mutex_lock(&tab_lock);
    for (size_t i = 0, s = slot_of(p); i < SLOTS; i++, s = (s + 1) % SLOTS)
        if (tab[s].p == 0 || tab[s].p == TOMB) {
            tab[s].p = p; tab[s].n = n; tab[s].kind = kind; live++;
            pthread_mutex_unlock(&tab_lock);
            return 0;
        }
    pthread_mutex_unlock(&tab_lock);
    return -1;
}

/* Size of a tier object of `kind` (0: not one); remove it if `take`. */
static size_t tab_get_kind(void *ptr, int kind, int take) {
    uintptr_t p = (uintptr_t)ptr;
    size_t n = 0;
    if (!live) return 0;
    pthread_mutex_lock(&tab_lock);
    for (size_t i = 0, s = slot_of(p); i < SLOTS && tab[s].p; i++, s = (s + 1) % SLOTS)
        if (tab[s].p == p) {
            if (tab[s].kind != kind) break;
            n = tab[s].n;
            if (take) { tab[s].p = TOMB; live--; }
            break;
        }
    pthread_mutex_unlock(&tab_lock);
    return n;
}

static size_t tab_get(void *ptr, int take) { return tab_get_kind(ptr, K_MALLOC, take); }

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* Whether [p, p + len) overlaps an mmap'd tier object (a linear scan, made
 * only while such objects live). */
static int overlaps_mmap_object(uintptr_t p, size_t len) {
    int hit = 0;
    if (!mmap_objects || !live) return 0;
    pthread_mutex_lock(&tab_lock);
    for (size_t s = 0; s < SLOTS && !hit; s++)
        if (tab[s].p > TOMB && tab[s].kind == K_MMAP && tab[s].p < p + len && p < tab[s].p + page_round(tab[s].n)) hit = 1;
    pthread_mutex_unlock(&tab_lock);
    return hit;
}

static int wanted(size_t n, size_t align) {
    return active && min_size && n >= min_size && align <= 4096 && pthread_equal(pthread_self(), owner) &&
           !mt_tier_in_runtime();
}

/* The allocation identity of a block (allocation-time placement, the Rust
 * side's alloc_place.rs): the caller's return address and the size class
 * (floor(log2 n)). Names number the calls, so they cannot be the identity.
 * Blocks from realloc (which calls malloc here), mmap64 and mremap carry
 * the site of that wrapper, not of the program's call. 0: none. */
static uint64_t site_of(void *ra, size_t n) {
    unsigned cls = n ? 63u - (unsigned)__builtin_clzll((unsigned long long)n) : 0;
    return ((uint64_t)(uintptr_t)ra << 6) ^ cls;
}

static void *tier_obj(size_t n, int kind, void *ra) {
    char name[64];
    snprintf(name, sizeof name, "%s#%lu:%zu", kind == K_MMAP ? "mmap" : "malloc", seq++, n);
    void *p = mt_tier_malloc_site(n, name, site_of(ra, n));
    if (!p) return NULL;
    if (tab_put(p, n, kind) != 0) { mt_tier_free(p); return NULL; }
    if (kind == K_MMAP) { mmap_objects++; mmap_bytes += n; }
    else { objects++; bytes_total += n; }
    return p;
}

/* A macro, so that the return address is the public wrapper's caller. */
#define tier_alloc(n) tier_obj((n), K_MALLOC, __builtin_return_address(0))

void mt_malloc_start(void) {
    const char *s = getenv("MEMTAMER_TIER_MALLOC_MIN");
    resolve();
    const char *m = getenv("MEMTAMER_TIER_MMAP_MIN");
    min_size = s ? mt_parse_bytes(s) : 0;
    mmap_min = m ? mt_parse_bytes(m) : 0;
    owner = pthread_self();
    active = min_size > 0 || mmap_min > 0;
}

void mt_malloc_stop(void) { active = 0; }

/* " malloc_objects N malloc_bytes B" and " mmap_objects N mmap_bytes B"
 * for the report line (each only when its interposition is on). */
void mt_malloc_report(char *buf, size_t len) {
    int n = 0;
    if (len) buf[0] = 0;
    if (min_size) n = snprintf(buf, len, " malloc_objects %lu malloc_bytes %zu", objects, bytes_total);
    if (mmap_min && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " mmap_objects %lu mmap_bytes %zu", mmap_objects, mmap_bytes);
}

void *malloc(size_t n) {
    if (!real_malloc) { resolve(); if (!real_malloc) return boot_alloc(n); }
    if (wanted(n, 0)) { void *p = tier_alloc(n); if (p) return p; }
    return real_malloc(n);
}

void free(void *p) {
    if (!p || is_boot(p)) return;
    if (tab_get(p, 1)) { mt_tier_free(p); return; }
    if (!real_free) resolve();
    real_free(p);
}

void *calloc(size_t k, size_t n) {
    if (!real_calloc) {
        resolve();
        if (!real_calloc) { void *p = boot_alloc(k * n); if (p) memset(p, 0, k * n); return p; }
    }
    if (n && k > SIZE_MAX / n) { errno = ENOMEM; return NULL; }
    if (wanted(k * n, 0)) {
        void *p = tier_alloc(k * n);
        if (p) { memset(p, 0, k * n); return p; }
    }
    return real_calloc(k, n);
}

void *realloc(void *old, size_t n) {
    if (!real_realloc) resolve();
    if (!old) return malloc(n);
    size_t had = is_boot(old) ? (size_t)(boot + sizeof boot - (char *)old) : tab_get(old, 0);
    if (!had && !wanted(n, 0)) return real_realloc(old, n);
    if (n == 0) { free(old); return NULL; }
    if (had && !is_boot(old) && n <= had && n >= min_size) return old; /* shrinking in place */
    if (!had) had = real_usable(old);
    void *p = malloc(n);
    if (!p) return NULL;
    memcpy(p, old, had < n ? had : n);
    free(old);
    return p;
}

int posix_memalign(void **out, size_t align, size_t n) {
    if (!real_posix_memalign) resolve();
    if (wanted(n, align) && align && (align & (align - 1)) == 0 && align % sizeof(void *) == 0) {
        void *p = tier_alloc(n);
        if (p) { *out = p; return 0; }
    }
    return real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n) {
    if (!real_aligned_alloc) resolve();
    if (wanted(n, align)) { void *p = tier_alloc(n); if (p) return p; }
    return real_aligned_alloc(align, n);
}

void *memalign(size_t align, size_t n) {
    if (!real_memalign) resolve();
    if (wanted(n, align)) { void *p = tier_alloc(n); if (p) return p; }
    return real_memalign(align, n);
}

size_t malloc_usable_size(void *p) {
    size_t n = p ? tab_get(p, 0) : 0;
    if (n) return n;
    if (!p || is_boot(p)) return 0;
    if (!real_usable) resolve();
    return real_usable(p);
}

static int mmap_wanted(void *addr, size_t len, int prot, int flags, int fd) {
    const int refused = MAP_SHARED | MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_GROWSDOWN | MAP_STACK | MAP_HUGETLB;
    return active && mmap_min && len >= mmap_min && !addr && fd == -1 && prot == (PROT_READ | PROT_WRITE) &&
           (flags & (MAP_PRIVATE | MAP_ANONYMOUS)) == (MAP_PRIVATE | MAP_ANONYMOUS) && !(flags & refused) &&
           pthread_equal(pthread_self(), owner) && !mt_tier_in_runtime();
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (!real_mmap) {
        resolve();
        if (!real_mmap) return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    }
    if (mmap_wanted(addr, len, prot, flags, fd)) { void *p = tier_obj(len, K_MMAP, __builtin_return_address(0)); if (p) return p; }
    return real_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) { return mmap(addr, len, prot, flags, fd, off); }

int munmap(void *p, size_t len) {
    if (!real_munmap) {
        resolve();
        if (!real_munmap) return (int)syscall(SYS_munmap, p, len);
    }
    if (!mt_tier_in_runtime() && mmap_objects) {
        size_t n = tab_get_kind(p, K_MMAP, 0);
        if (n && page_round(len) == page_round(n)) {
            tab_get_kind(p, K_MMAP, 1);
            return mt_tier_free(p) == 0 ? 0 : (errno = EINVAL, -1);
        }
        if (n || overlaps_mmap_object((uintptr_t)p, page_round(len))) { errno = EINVAL; return -1; }
    }
    return real_munmap(p, len);
}

void *mremap(void *old, size_t olen, size_t nlen, int flags, ...) {
    void *na = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        na = va_arg(ap, void *);
        va_end(ap);
    }
    if (!real_mremap) resolve();
    size_t n = mt_tier_in_runtime() ? 0 : tab_get_kind(old, K_MMAP, 0);
    if (!n) {
        if (!mt_tier_in_runtime() && overlaps_mmap_object((uintptr_t)old, page_round(olen))) { errno = EINVAL; return MAP_FAILED; }
        return real_mremap(old, olen, nlen, flags, na);
    }
    if (page_round(nlen) == page_round(n) && !(flags & MREMAP_FIXED)) return old;
    if (!(flags & MREMAP_MAYMOVE)) { errno = ENOMEM; return MAP_FAILED; }
    if (flags & ~MREMAP_MAYMOVE) { errno = EINVAL; return MAP_FAILED; } /* FIXED, DONTUNMAP: not for tier objects */
    void *p = tier_obj(nlen, K_MMAP, __builtin_return_address(0));
    if (!p) { errno = ENOMEM; return MAP_FAILED; }
    memcpy(p, old, n < nlen ? n : nlen);
    tab_get_kind(old, K_MMAP, 1);
    mt_tier_free(old);
    return p;
}
