/* mbedTLS 2.28 as a whole: its CTR_DRBG (seeded from its entropy collector) serves the payload
 * schemes; the TLS client keeps its own, as an ESP-IDF application's TLS session does. */
#include "stack.h"

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/version.h>

static mbedtls_entropy_context entropy;
static mbedtls_ctr_drbg_context drbg;
static int seeded;

const char *stack_name(void) { return "mbedtls"; }
const char *stack_version(void) { return MBEDTLS_VERSION_STRING; }
void stack_init(void) {}

int stack_random(uint8_t *out, size_t len)
{
    if (!seeded) {
        mbedtls_entropy_init(&entropy);
        mbedtls_ctr_drbg_init(&drbg);
        static const unsigned char who[] = "iotsb payload scheme";
        if (mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, who, sizeof who - 1))
            return -1;
        seeded = 1;
    }
    /* One request is at most MBEDTLS_CTR_DRBG_MAX_REQUEST (1024) bytes. */
    for (size_t at = 0; at < len; at += MBEDTLS_CTR_DRBG_MAX_REQUEST) {
        size_t n = len - at < MBEDTLS_CTR_DRBG_MAX_REQUEST ? len - at : MBEDTLS_CTR_DRBG_MAX_REQUEST;
        if (mbedtls_ctr_drbg_random(&drbg, out + at, n) != 0)
            return -1;
    }
    return 0;
}

/* For the key agreements (crypto_mbedtls.c): mbedTLS takes the generator as a callback. */
int stack_random_callback(void *context, unsigned char *out, size_t len)
{
    (void)context;
    return stack_random(out, len) == 0 ? 0 : MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED;
}
