/* The library a build links for its cryptography, as a whole (stack_mbedtls.c,
 * stack_wolfssl.c; stack_none.c for the plain build): its name and version for the records,
 * its one-time set-up (wolfSSL's allocator hooks) and its random generator, which the payload
 * schemes' keys and IVs come from. */
#ifndef IOTSB_STACK_H
#define IOTSB_STACK_H

#include <stddef.h>
#include <stdint.h>

const char *stack_name(void);    /* "mbedtls", "wolfssl" or "none" */
const char *stack_version(void); /* "" for none */
void stack_init(void);           /* once, before anything else touches the library */
int stack_random(uint8_t *out, size_t len); /* 0, or -1 when the generator failed */

#endif
