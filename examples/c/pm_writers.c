/*
 * pm_writers: N threads copy 4 KiB blocks into a PM file through
 * libmemtamer's gated persistent copy, then the data is checked and the
 * gate's statistics printed. Exits 1 if any block is damaged or more than
 * T_S requests ever ran at once.
 *
 *   cc -O2 -pthread -I crates/memtamer-capi/include examples/c/pm_writers.c \
 *      -L target/release -lmemtamer -Wl,-rpath,$PWD/target/release -o pm_writers
 *   MEMTAMER_GATE=demo MEMTAMER_GATE_POLICY=pats ./pm_writers /dev/shm/pm-file 6 2000
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memtamer.h"

#define BLOCK 4096

static char *pm;
static long blocks_per_thread;

static void fill(char *buf, long block) {
    for (int i = 0; i < BLOCK; i++)
        buf[i] = (char)(block * 31 + i);
}

static void *writer(void *arg) {
    long id = (long)arg;
    char buf[BLOCK];
    for (long b = 0; b < blocks_per_thread; b++) {
        long block = id * blocks_per_thread + b;
        fill(buf, block);
        memtamer_memcpy_persist(pm + block * BLOCK, buf, BLOCK);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PM_FILE THREADS BLOCKS_PER_THREAD\n", argv[0]);
        return 2;
    }
    long threads = atol(argv[2]);
    blocks_per_thread = atol(argv[3]);
    if (threads < 1 || threads > 64 || blocks_per_thread < 1) {
        fprintf(stderr, "THREADS must be 1..64 and BLOCKS_PER_THREAD >= 1\n");
        return 2;
    }
    if (memtamer_init() != 0) {
        fprintf(stderr, "memtamer: %s\n", memtamer_last_error());
        return 1;
    }
    size_t len = (size_t)threads * blocks_per_thread * BLOCK;
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
        perror(argv[1]);
        return 1;
    }
    pm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (pm == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pthread_t tids[64];
    for (long t = 0; t < threads; t++)
        pthread_create(&tids[t], NULL, writer, (void *)t);
    for (long t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);

    long damaged = 0;
    char want[BLOCK];
    for (long block = 0; block < threads * blocks_per_thread; block++) {
        fill(want, block);
        if (memcmp(pm + block * BLOCK, want, BLOCK) != 0)
            damaged++;
    }
    struct memtamer_gate_stats s = { .size = sizeof s };
    if (memtamer_gate_stats(&s) != 0) {
        fprintf(stderr, "memtamer_gate_stats failed\n");
        return 1;
    }
    printf("limit %u peak %u admitted %llu contended %llu written %llu damaged %ld\n",
           s.limit, s.peak_serving, (unsigned long long)s.admissions,
           (unsigned long long)s.contended, (unsigned long long)s.write_bytes, damaged);
    munmap(pm, len);
    close(fd);
    unlink(argv[1]);
    return damaged == 0 && (s.limit == 0 || s.peak_serving <= s.limit) ? 0 : 1;
}
