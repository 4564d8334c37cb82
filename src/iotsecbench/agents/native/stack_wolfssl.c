/* wolfSSL 5.5 as a whole: its heap is counted from the start (wolfSSL_SetAllocators before
 * anything allocates), and one WC_RNG serves the payload schemes. */
#include "stack.h"

#include "heap.h"

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/version.h>
#include <wolfssl/wolfcrypt/random.h>

static WC_RNG rng;
static int seeded;

const char *stack_name(void) { return "wolfssl"; }
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
