/* Ascon-AEAD128 (NIST SP 800-232), or with VM_ASCON_V12 Ascon-128 v1.2 (the final-round
 * submission: the payload-schemes study's and the device client's ascon128v12), our C
 * (../../security/schemes/lwc/ascon.c): the same interface. */
#include <string.h>

#include "lwc.h"
#include "vmcu.h"

#ifdef VM_ASCON_V12
#define ASCON_ENCRYPT lwc_ascon128v12_encrypt
#define ASCON_DECRYPT lwc_ascon128v12_decrypt
#else
#define ASCON_ENCRYPT lwc_ascon_aead128_encrypt
#define ASCON_DECRYPT lwc_ascon_aead128_decrypt
#endif

static uint8_t key[16];
static int keyed;

static int32_t setkey(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(1);
    if (in[0].len != 16)
        return VM_BAD_INPUT;
    memcpy(key, in[0].data, 16);
    keyed = 1;
    return 0;
}

/* seal(nonce 16, aad, plaintext) -> ciphertext || tag 16 */
static int32_t seal(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if (!keyed || in[0].len != 16 || in[2].len + 16 > cap)
        return VM_BAD_INPUT;
    ASCON_ENCRYPT(key, in[0].data, in[1].data, in[1].len, in[2].data, out, in[2].len,
                              out + in[2].len);
    return (int32_t)(in[2].len + 16);
}

static int32_t open_(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    if (!keyed || in[0].len != 16 || in[2].len < 16 || in[2].len - 16 > cap)
        return VM_BAD_INPUT;
    size_t len = in[2].len - 16;
    if (ASCON_DECRYPT(key, in[0].data, in[1].data, in[1].len, in[2].data, out, len,
                                  in[2].data + len) != 0)
        return VM_REJECTED;
    return (int32_t)len;
}

const struct vm_entry vm_ops[] = {{"setkey", setkey}, {"seal", seal}, {"open", open_}, {0, 0}};
