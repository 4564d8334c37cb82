/* The contract between the virtual-MCU harness (harness.c) and one primitive's operations
 * (p_*.c): the host sends requests (an operation and its input blobs), the harness runs each
 * operation once between two reads of the instruction counter and answers with the output, the
 * instructions, the stack high-water mark and the heap peak (docs/virtual-mcu.md). */
#ifndef VMCU_H
#define VMCU_H

#include <stddef.h>
#include <stdint.h>

struct vm_blob {
    const uint8_t *data;
    uint32_t len;
};

/* Runs on inputs in[0..n): the output's length in out (at most cap bytes), or a negative
 * status (VM_REJECTED: the input was refused, e.g. a tag that does not verify). */
typedef int32_t vm_op(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap);
#define VM_BAD_INPUT (-1) /* wrong number or size of inputs: a host bug */
#define VM_REJECTED (-2)  /* the primitive refused the input (a tag, a signature, a point) */
#define VM_FAILED (-3)    /* the library reported an error */

struct vm_entry {
    const char *name;
    vm_op *run;
};
/* The primitive's operations (its p_*.c), ended by { 0, 0 }. Operations keep state between
 * requests in static memory: "setkey" once, then "seal" per message, as a device does. */
extern const struct vm_entry vm_ops[];

/* Counted allocation (the heap peak of each request) for libraries that allocate. */
#include "counted_heap.h"
/* Deterministic randomness, seeded by the request's "seed" operation: counts repeat exactly. */
void vm_random(uint8_t *out, size_t len);
int vm_random_cb(void *context, unsigned char *out, size_t len); /* mbedTLS's f_rng */
int vm_random_block(unsigned char *out, unsigned int len);        /* wolfCrypt's */

/* An operation's first line: refuse any other number of inputs. */
#define VM_NEED(count)                                                                         \
    do {                                                                                       \
        if (n != (count))                                                                      \
            return VM_BAD_INPUT;                                                               \
    } while (0)

#endif
