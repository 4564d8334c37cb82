/* What the native agent's payload-scheme files (agents/native/scheme.c, crypto_<stack>.c,
 * stack_<stack>.c, compiled unchanged into the mbedtls-scheme build) take from the rest of that
 * agent, here from the firmware: die (the error record and the end: device_fail), the
 * allocator (the counting one, so the scheme's memory is in the heap peaks) and the scheme's
 * name (the host passes the scheme itself, not a configuration). */
#include "device.h"

#include "../../agents/native/heap.h"

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

void *iotsb_tls_calloc(size_t count, size_t size) { return vm_calloc(count, size); }
void *iotsb_tls_malloc(size_t size) { return vm_calloc(1, size); }
void *iotsb_tls_realloc(void *pointer, size_t size) { return vm_realloc(pointer, size); }
void iotsb_tls_free(void *pointer) { vm_free(pointer); }
