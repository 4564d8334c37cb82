/* Builds without payload schemes (plain, TLS alone): publish.c and frames.c ask for a scheme
 * only when the host named one, and the host runs those on the mbedtls-scheme build
 * (vmcu/client.py). */
#include "device.h"

#include "../../agents/native/scheme.h"

bool scheme_select(const char *configuration)
{
    if (configuration[0] != '\0')
        device_fail("this build has no payload schemes", configuration);
    return false;
}

size_t kx_emitter_answer(const uint8_t *psk, size_t psk_len, const uint8_t *hello, size_t len,
                         uint8_t *reply, const char **why)
{
    *why = "no payload schemes in this build";
    return 0;
}

bool kx_emitter_confirm(const uint8_t *ready, size_t len, struct direction **e2r,
                        const char **why)
{
    *why = "no payload schemes in this build";
    return false;
}

size_t scheme_seal(struct direction *d, const uint8_t *plaintext, size_t len, uint8_t *out)
{
    return 0;
}

struct direction *kx_emitter_reverse(void) { return NULL; }

enum open_result scheme_open(struct direction *d, const uint8_t *message, size_t len,
                             uint8_t *out, size_t *out_len)
{
    return OPEN_AUTH;
}
