/* SPECK128, SIMON128 or the table-free AES in CTR mode with HMAC-SHA256 (our C, ../../security/
 * schemes/lwc/; the MAC from mbedTLS): the speck128-*, simon128-* and aes*-ctr-hmac-tablefree
 * schemes. VM_BLOCK selects the cipher at compile time, so each build holds one cipher's code. */
#include <string.h>

#include "etm.h"
#include "lwc.h"

#define SPECK 1
#define SIMON 2
#define TABLEFREE_AES 3

static uint64_t round_keys[LWC_MAX_ROUNDS];
static uint8_t aes_keys[240];
static int rounds = -1;

static int schedule(const struct vm_blob *key)
{
#if VM_BLOCK == TABLEFREE_AES
    return rounds = key->len == 16 || key->len == 32 ? lwc_aes_expand(key->data, key->len, aes_keys)
                                                     : -1;
#else
    return rounds = (VM_BLOCK == SPECK ? lwc_speck_schedule : lwc_simon_schedule)(
               key->data, key->len, round_keys);
#endif
}

static void keystream(const uint8_t *initial, const uint8_t *in, uint8_t *out, size_t len)
{
#if VM_BLOCK == TABLEFREE_AES
    lwc_aes_ctr(aes_keys, rounds, initial, in, out, len);
#else
    (VM_BLOCK == SPECK ? lwc_speck_ctr : lwc_simon_ctr)(round_keys, rounds, initial, in, out, len);
#endif
}

/* setkey(enc_key, mac_key) */
static int32_t setkey(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    if (schedule(&in[0]) < 0)
        return VM_BAD_INPUT;
    return vm_etm_setkey(&in[1]);
}

static int32_t seal(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    return rounds < 0 ? VM_BAD_INPUT : vm_etm_seal(keystream, 16, in, n, out, cap);
}

static int32_t open_(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    return rounds < 0 ? VM_BAD_INPUT : vm_etm_open(keystream, 16, in, n, out, cap);
}

/* block(key, 16 bytes): one block encryption, for the published vectors. */
static int32_t block(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    if (in[1].len != 16 || schedule(&in[0]) < 0)
        return VM_BAD_INPUT;
#if VM_BLOCK == TABLEFREE_AES
    lwc_aes_encrypt(aes_keys, rounds, in[1].data, out);
#else
    (VM_BLOCK == SPECK ? lwc_speck_block : lwc_simon_block)(round_keys, rounds, in[1].data, out);
#endif
    return 16;
}

/* ctr(initial block 16, data) -> data XOR keystream: the cipher alone, without the MAC (the
 * energy model prices the two apart). */
static int32_t ctr(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    if (!(rounds >= 0) || in[0].len != 16 || in[1].len > cap)
        return VM_BAD_INPUT;
    keystream(in[0].data, in[1].data, out, in[1].len);
    return (int32_t)in[1].len;
}

const struct vm_entry vm_ops[] = {
    {"setkey", setkey}, {"seal", seal},   {"open", open_},   {"ctr", ctr},
    {"block", block},   {"hmac", vm_hmac},
    {0, 0},
};
