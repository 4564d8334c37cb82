/* wolfSSL as a whole (Debian's 5.5, or 5.9.4 built from registry source): its heap is counted
 * from the start (wolfSSL_SetAllocators before anything allocates), and one WC_RNG serves the
 * payload schemes. The build names the stack (IOTSB_STACK_NAME) when it is not Debian's. */
#include "stack.h"

#include "heap.h"

#include "wolfssl_options.h"
#include <wolfssl/ssl.h>
#include <wolfssl/version.h>
#include <wolfssl/wolfcrypt/random.h>

static WC_RNG rng;
static int seeded;

#ifndef IOTSB_STACK_NAME
#define IOTSB_STACK_NAME "wolfssl"
#endif

const char *stack_name(void) { return IOTSB_STACK_NAME; }
const char *stack_version(void) { return LIBWOLFSSL_VERSION_STRING; }

void stack_init(void)
{
    wolfSSL_SetAllocators(iotsb_tls_malloc, iotsb_tls_free, iotsb_tls_realloc);
    wolfSSL_Init();
}

WC_RNG *stack_rng(void)
{
    if (!seeded) {
        if (wc_InitRng(&rng) != 0)
            return NULL;
        seeded = 1;
    }
    return &rng;
}

int stack_random(uint8_t *out, size_t len)
{
    WC_RNG *generator = stack_rng();
    return generator != NULL && wc_RNG_GenerateBlock(generator, out, (word32)len) == 0 ? 0 : -1;
}
