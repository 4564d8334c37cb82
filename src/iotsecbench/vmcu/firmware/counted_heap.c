/* The counting allocator of both firmwares (the primitives' harness.c and the device client,
 * vmcu/client): picolibc's calloc with an 8-byte header holding the size, so the heap in use
 * and its peak are known at every instant. Libraries reach it through their allocation hooks
 * (mbedTLS's MBEDTLS_PLATFORM_MEMORY, wolfSSL's XMALLOC_OVERRIDE). Its instructions are part of
 * every count (an allocator is a device's cost too), so it does no more than the sizes need:
 * the shipped counted profiles (energy/profiles) were made with exactly this code. */
#include "counted_heap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 8

static size_t heap_now, heap_peak;

void *vm_calloc(size_t count, size_t size)
{
    if (size != 0 && count > (SIZE_MAX - HEADER) / size)
        return NULL;
    size_t bytes = count * size;
    uint8_t *block = calloc(1, bytes + HEADER);
    if (block == NULL)
        return NULL;
    memcpy(block, &bytes, sizeof bytes);
    heap_now += bytes;
    if (heap_now > heap_peak)
        heap_peak = heap_now;
    return block + HEADER;
}

static size_t size_of(const void *pointer)
{
    size_t bytes;
    memcpy(&bytes, (const uint8_t *)pointer - HEADER, sizeof bytes);
    return bytes;
}

void *vm_realloc(void *pointer, size_t size)
{
    uint8_t *moved = vm_calloc(1, size);
    if (moved != NULL && pointer != NULL) {
        size_t old = size_of(pointer);
        memcpy(moved, pointer, old < size ? old : size);
        vm_free(pointer);
    }
    return moved;
}

void vm_free(void *pointer)
{
    if (pointer == NULL)
        return;
    heap_now -= size_of(pointer);
    free((uint8_t *)pointer - HEADER);
}

struct vm_heap vm_heap(void) { return (struct vm_heap){heap_now, heap_peak}; }

void vm_heap_mark(void) { heap_peak = heap_now; }
