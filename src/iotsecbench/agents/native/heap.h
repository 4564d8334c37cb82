/* The TLS stack's heap, counted through its allocator hooks: wolfSSL_SetAllocators, and for
 * mbedTLS (Debian builds it without MBEDTLS_PLATFORM_MEMORY, so mbedtls_platform_set_calloc_free
 * does not exist) its static archives linked with calloc/free renamed to iotsb_tls_calloc/
 * iotsb_tls_free (objcopy --redefine-sym, agents/native/__init__.py): the same hook, at link
 * time. Only the stack's own allocations pass through here. */
#ifndef IOTSB_HEAP_H
#define IOTSB_HEAP_H

#include <stddef.h>

void *iotsb_tls_calloc(size_t count, size_t size);
void *iotsb_tls_malloc(size_t size);
void *iotsb_tls_realloc(void *pointer, size_t size);
void iotsb_tls_free(void *pointer);

struct heap_use {
    size_t current;     /* bytes allocated now */
    size_t peak;        /* most bytes allocated at once since the last heap_mark */
    size_t allocations; /* allocations since the start */
};

struct heap_use heap_use(void);
void heap_mark(void); /* start a new peak window: peak = current */

#endif
