/* What the native agent's payload-scheme files (agents/native/scheme.c, crypto_<stack>.c,
 * stack_<stack>.c, compiled unchanged into the mbedtls-scheme build) take from the rest of that
 * agent, here from the firmware: die (the error record and the end: device_fail), the
 * allocator (the counting one, so the scheme's memory is in the heap peaks), the scheme's name
 * (the host passes the scheme itself, not a configuration) and ML-KEM's random blocks. */
#include "device.h"

#include "../../agents/native/heap.h"
#include "../../agents/native/stack.h"

#include <stdarg.h>
#include <stdio.h>

void (*on_failure)(int status); /* agent.h's: nothing to finish here */

void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...);
void die(const char *fmt, ...)
{
    char why[200];
    va_list arguments;
    va_start(arguments, fmt);
    vsnprintf(why, sizeof why, fmt, arguments);
    va_end(arguments);
    device_fail("payload scheme", why);
}

const char *configuration_scheme(const char *configuration);
const char *configuration_scheme(const char *configuration)
{
    return configuration[0] != '\0' ? configuration : NULL;
}

/* The ML-KEM archive's random.c (the harness's wolfCrypt, crypto_mlkem.c) takes its blocks from
 * the harness's generator (CUSTOM_RAND_GENERATE_BLOCK); here that is the schemes' own generator
 * (mbedTLS's CTR_DRBG on the TRNG stand-in). Encapsulation's m comes from it through scheme.c,
 * so nothing else asks today. */
int vm_random_block(unsigned char *out, unsigned int len);
int vm_random_block(unsigned char *out, unsigned int len)
{
    return stack_random(out, len) == 0 ? 0 : -1;
}

void *iotsb_tls_calloc(size_t count, size_t size) { return vm_calloc(count, size); }
void *iotsb_tls_malloc(size_t size) { return vm_calloc(1, size); }
void *iotsb_tls_realloc(void *pointer, size_t size) { return vm_realloc(pointer, size); }
void iotsb_tls_free(void *pointer) { vm_free(pointer); }
