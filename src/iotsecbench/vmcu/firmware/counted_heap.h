/* The counting allocator (counted_heap.c). */
#ifndef VMCU_COUNTED_HEAP_H
#define VMCU_COUNTED_HEAP_H

#include <stddef.h>

void *vm_calloc(size_t count, size_t size);
void *vm_realloc(void *pointer, size_t size);
void vm_free(void *pointer);

struct vm_heap {
    size_t current;     /* bytes allocated now */
    size_t peak;        /* the most allocated at once since the last vm_heap_mark */
};
struct vm_heap vm_heap(void);
void vm_heap_mark(void); /* a new peak window: peak = current */

#endif
