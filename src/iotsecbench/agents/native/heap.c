#include "heap.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Each block carries its size in a header of max_align_t's size, so free knows what it
 * returns and the caller's memory stays aligned as malloc's would be. */
#define HEADER sizeof(max_align_t)

static atomic_size_t current, peak, allocations;

static void grow(size_t size)
{
    size_t now = atomic_fetch_add(&current, size) + size;
    size_t seen = atomic_load(&peak);
    while (now > seen && !atomic_compare_exchange_weak(&peak, &seen, now))
        ;
    atomic_fetch_add(&allocations, 1);
}

void *iotsb_tls_malloc(size_t size)
{
    if (size > SIZE_MAX - HEADER)
        return NULL;
    unsigned char *block = malloc(HEADER + size);
    if (block == NULL)
        return NULL;
    memcpy(block, &size, sizeof size);
    grow(size);
    return block + HEADER;
}

void *iotsb_tls_calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    void *pointer = iotsb_tls_malloc(count * size);
    if (pointer != NULL)
        memset(pointer, 0, count * size);
    return pointer;
}

void iotsb_tls_free(void *pointer)
{
    if (pointer == NULL)
        return;
    unsigned char *block = (unsigned char *)pointer - HEADER;
    size_t size;
    memcpy(&size, block, sizeof size);
    atomic_fetch_sub(&current, size);
    free(block);
}

void *iotsb_tls_realloc(void *pointer, size_t size)
{
    if (pointer == NULL)
        return iotsb_tls_malloc(size);
    size_t old;
    memcpy(&old, (unsigned char *)pointer - HEADER, sizeof old);
    void *moved = iotsb_tls_malloc(size);
    if (moved == NULL)
        return NULL;
    memcpy(moved, pointer, old < size ? old : size);
    iotsb_tls_free(pointer);
    return moved;
}

struct heap_use heap_use(void)
{
    return (struct heap_use){atomic_load(&current), atomic_load(&peak), atomic_load(&allocations)};
}

void heap_mark(void) { atomic_store(&peak, atomic_load(&current)); }
