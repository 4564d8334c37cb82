/* AES-CTR (mbedTLS, tables in flash) with HMAC-SHA256: the aes*-ctr-hmac schemes. */
#include <string.h>

#include "etm.h"
#include "mbedtls/aes.h"

static mbedtls_aes_context aes;
static int keyed;

static void keystream(const uint8_t *initial, const uint8_t *in, uint8_t *out, size_t len)
{
    uint8_t counter[16], block[16];
    size_t offset = 0;
    memcpy(counter, initial, 16);
    mbedtls_aes_crypt_ctr(&aes, len, &offset, counter, block, in, out);
}

static int32_t setkey(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    mbedtls_aes_init(&aes);
    if (mbedtls_aes_setkey_enc(&aes, in[0].data, in[0].len * 8) != 0)
        return VM_BAD_INPUT;
    keyed = 1;
    return vm_etm_setkey(&in[1]);
}

static int32_t seal(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    return keyed ? vm_etm_seal(keystream, 16, in, n, out, cap) : VM_BAD_INPUT;
}

static int32_t open_(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    return keyed ? vm_etm_open(keystream, 16, in, n, out, cap) : VM_BAD_INPUT;
}

/* ctr(initial block 16, data) -> data XOR keystream: the cipher alone, without the MAC (the
 * energy model prices the two apart). */
static int32_t ctr(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    if (!(keyed) || in[0].len != 16 || in[1].len > cap)
        return VM_BAD_INPUT;
    keystream(in[0].data, in[1].data, out, in[1].len);
    return (int32_t)in[1].len;
}

const struct vm_entry vm_ops[] = {
    {"setkey", setkey}, {"seal", seal}, {"open", open_}, {"ctr", ctr}, {"hmac", vm_hmac},
    {0, 0},
};
