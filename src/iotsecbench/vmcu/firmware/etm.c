/* Encrypt-then-MAC (etm.h) on mbedTLS's HMAC-SHA256: keyed once per session at setkey, reset
 * per message, as a device keeps its MAC context. */
#include <string.h>

#include "etm.h"
#include "mbedtls/md.h"

#define TAG 32
static mbedtls_md_context_t mac;
static int mac_ready;

int vm_etm_setkey(const struct vm_blob *mac_key)
{
    if (!mac_ready) {
        mbedtls_md_init(&mac);
        if (mbedtls_md_setup(&mac, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 1) != 0)
            return VM_FAILED;
        mac_ready = 1;
    }
    return mbedtls_md_hmac_starts(&mac, mac_key->data, mac_key->len) == 0 ? 0 : VM_FAILED;
}

static int tag_of(const struct vm_blob *aad, const uint8_t *ciphertext, size_t len,
                  uint8_t tag[TAG])
{
    return mbedtls_md_hmac_reset(&mac) || mbedtls_md_hmac_update(&mac, aad->data, aad->len) ||
           mbedtls_md_hmac_update(&mac, ciphertext, len) || mbedtls_md_hmac_finish(&mac, tag);
}

int32_t vm_etm_seal(vm_keystream *stream, size_t nonce_len, const struct vm_blob *in,
                    unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    size_t len = in[2].len;
    if (!mac_ready || in[0].len != nonce_len || len + TAG > cap)
        return VM_BAD_INPUT;
    stream(in[0].data, in[2].data, out, len);
    return tag_of(&in[1], out, len, out + len) ? VM_FAILED : (int32_t)(len + TAG);
}

int32_t vm_etm_open(vm_keystream *stream, size_t nonce_len, const struct vm_blob *in,
                    unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if (!mac_ready || in[0].len != nonce_len || in[2].len < TAG || in[2].len - TAG > cap)
        return VM_BAD_INPUT;
    size_t len = in[2].len - TAG;
    uint8_t tag[TAG], difference = 0;
    if (tag_of(&in[1], in[2].data, len, tag))
        return VM_FAILED;
    for (int i = 0; i < TAG; i++)
        difference |= tag[i] ^ in[2].data[len + i];
    if (difference != 0)
        return VM_REJECTED;
    stream(in[0].data, in[2].data, out, len);
    return (int32_t)len;
}

int32_t vm_hmac(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    if (cap < TAG)
        return VM_BAD_INPUT;
    return mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), in[0].data, in[0].len,
                           in[1].data, in[1].len, out)
               ? VM_FAILED
               : TAG;
}
