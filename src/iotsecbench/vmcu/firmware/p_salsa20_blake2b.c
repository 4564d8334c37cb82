/* Salsa20/20 + keyed BLAKE2b-256, the payload-schemes study's encrypt-then-MAC, one call per
 * message (our C, ../../security/schemes/lwc/salsa20_blake2b.c). */
#include <string.h>

#include "lwc.h"
#include "vmcu.h"

static uint8_t enc_key[32], mac_key[64];
static size_t enc_len, mac_len;

static int32_t setkey(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    if ((in[0].len != 16 && in[0].len != 32) || in[1].len == 0 || in[1].len > 64)
        return VM_BAD_INPUT;
    memcpy(enc_key, in[0].data, enc_len = in[0].len);
    memcpy(mac_key, in[1].data, mac_len = in[1].len);
    return 0;
}

/* seal(nonce 8, aad, plaintext) -> ciphertext || BLAKE2b-256(mac_key; aad || ciphertext) */
static int32_t seal(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if (enc_len == 0 || in[0].len != 8 || in[2].len + LWC_SB_TAG > cap)
        return VM_BAD_INPUT;
    lwc_salsa20_blake2b_seal(enc_key, enc_len, mac_key, mac_len, in[0].data, in[1].data,
                             in[1].len, in[2].data, out, in[2].len);
    return (int32_t)(in[2].len + LWC_SB_TAG);
}

static int32_t open_(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if (enc_len == 0 || in[0].len != 8 || in[2].len < LWC_SB_TAG || in[2].len - LWC_SB_TAG > cap)
        return VM_BAD_INPUT;
    size_t len = in[2].len - LWC_SB_TAG;
    if (lwc_salsa20_blake2b_open(enc_key, enc_len, mac_key, mac_len, in[0].data, in[1].data,
                                 in[1].len, in[2].data, out, len) != 0)
        return VM_REJECTED;
    return (int32_t)len;
}

/* salsa20(key, nonce 8, data) and blake2b(key, data, digest length 1 byte): the vectors. */
static int32_t salsa20(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if ((in[0].len != 16 && in[0].len != 32) || in[1].len != 8 || in[2].len > cap)
        return VM_BAD_INPUT;
    lwc_salsa20(in[0].data, in[0].len, in[1].data, in[2].data, out, in[2].len);
    return (int32_t)in[2].len;
}

static int32_t blake2b(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if (in[0].len > 64 || in[2].len != 1 || in[2].data[0] == 0 || in[2].data[0] > 64)
        return VM_BAD_INPUT;
    struct lwc_blake2b state;
    lwc_blake2b_init(&state, in[0].data, in[0].len, in[2].data[0]);
    lwc_blake2b_update(&state, in[1].data, in[1].len);
    lwc_blake2b_final(&state, out);
    return in[2].data[0];
}

const struct vm_entry vm_ops[] = {
    {"setkey", setkey}, {"seal", seal}, {"open", open_}, {"salsa20", salsa20},
    {"blake2b", blake2b}, {0, 0},
};
