/* mbedTLS's AEADs (built from its source, vmcu/sources.py): AES-GCM, AES-CCM and
 * ChaCha20-Poly1305, selected by VM_AEAD at compile time so each build holds one. The key is
 * set once (setkey), then each message is one library call, as a device's scheme does it. */
#include <string.h>

#include "vmcu.h"

#define GCM 1
#define CCM 2
#define CHACHAPOLY 3

#if VM_AEAD == GCM
#include "mbedtls/gcm.h"
static mbedtls_gcm_context context;
#elif VM_AEAD == CCM
#include "mbedtls/ccm.h"
static mbedtls_ccm_context context;
#else
#include "mbedtls/chachapoly.h"
static mbedtls_chachapoly_context context;
#endif
static size_t tag_len;

/* setkey(key, tag length: 1 byte) */
static int32_t setkey(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    if (in[1].len != 1 || in[1].data[0] == 0 || in[1].data[0] > 16)
        return VM_BAD_INPUT;
    tag_len = in[1].data[0];
#if VM_AEAD == GCM
    mbedtls_gcm_init(&context);
    int status = mbedtls_gcm_setkey(&context, MBEDTLS_CIPHER_ID_AES, in[0].data, in[0].len * 8);
#elif VM_AEAD == CCM
    mbedtls_ccm_init(&context);
    int status = mbedtls_ccm_setkey(&context, MBEDTLS_CIPHER_ID_AES, in[0].data, in[0].len * 8);
#else
    if (in[0].len != 32 || tag_len != 16)
        return VM_BAD_INPUT;
    mbedtls_chachapoly_init(&context);
    int status = mbedtls_chachapoly_setkey(&context, in[0].data);
#endif
    return status == 0 ? 0 : VM_BAD_INPUT;
}

/* seal(nonce, aad, plaintext) -> ciphertext || tag */
static int32_t seal(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    size_t len = in[2].len;
    if (tag_len == 0 || len + tag_len > cap)
        return VM_BAD_INPUT;
    uint8_t *tag = out + len;
#if VM_AEAD == GCM
    int status = mbedtls_gcm_crypt_and_tag(&context, MBEDTLS_GCM_ENCRYPT, len, in[0].data,
                                           in[0].len, in[1].data, in[1].len, in[2].data, out,
                                           tag_len, tag);
#elif VM_AEAD == CCM
    int status = mbedtls_ccm_encrypt_and_tag(&context, len, in[0].data, in[0].len, in[1].data,
                                             in[1].len, in[2].data, out, tag, tag_len);
#else
    if (in[0].len != 12)
        return VM_BAD_INPUT;
    int status = mbedtls_chachapoly_encrypt_and_tag(&context, len, in[0].data, in[1].data,
                                                    in[1].len, in[2].data, out, tag);
#endif
    return status == 0 ? (int32_t)(len + tag_len) : VM_BAD_INPUT;
}

/* open(nonce, aad, ciphertext || tag) -> plaintext, or VM_REJECTED */
static int32_t open_(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if (tag_len == 0 || in[2].len < tag_len || in[2].len - tag_len > cap)
        return VM_BAD_INPUT;
    size_t len = in[2].len - tag_len;
    const uint8_t *tag = in[2].data + len;
#if VM_AEAD == GCM
    int status = mbedtls_gcm_auth_decrypt(&context, len, in[0].data, in[0].len, in[1].data,
                                          in[1].len, tag, tag_len, in[2].data, out);
    int rejected = status == MBEDTLS_ERR_GCM_AUTH_FAILED;
#elif VM_AEAD == CCM
    int status = mbedtls_ccm_auth_decrypt(&context, len, in[0].data, in[0].len, in[1].data,
                                          in[1].len, in[2].data, out, tag, tag_len);
    int rejected = status == MBEDTLS_ERR_CCM_AUTH_FAILED;
#else
    if (in[0].len != 12)
        return VM_BAD_INPUT;
    int status = mbedtls_chachapoly_auth_decrypt(&context, len, in[0].data, in[1].data,
                                                 in[1].len, tag, in[2].data, out);
    int rejected = status == MBEDTLS_ERR_CHACHAPOLY_AUTH_FAILED;
#endif
    if (status != 0)
        return rejected ? VM_REJECTED : VM_BAD_INPUT;
    return (int32_t)len;
}

const struct vm_entry vm_ops[] = {{"setkey", setkey}, {"seal", seal}, {"open", open_}, {0, 0}};
