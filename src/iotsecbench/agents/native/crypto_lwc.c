/* The device build's lightweight payload ciphers: see crypto_lwc.h. The functions return int
 * so that the firmware's link-time wrappers (vmcu/client/wrap_mbedtls.c) book each call's
 * instructions to a primitive family, like the stack's. */
#include "crypto_lwc.h"

#include "aes.h" /* tiny-AES-c's: AES-128 (its default), CTR among its modes */
#include "crypto.h"
#include "heap.h"
#include "lwc.h"

#include <string.h>

#define BLOCK 16
#define EAX_TAG 16
#define ASCON_TAG 16

struct light_key {
    enum light cipher;
    uint8_t key[32];
    size_t key_len;
    struct crypto_key *aes;        /* EAX: the stack's AES (forward cipher) */
    uint8_t k1[BLOCK], k2[BLOCK];  /* EAX: OMAC's subkeys */
    uint64_t rk[LWC_MAX_ROUNDS];   /* SPECK / SIMON: the round keys */
    int rounds;
    struct AES_ctx tiny;           /* tiny-AES-c: its expanded key (the IV set per message) */
};

/* x * 2 in GF(2^128) (OMAC's doubling, NIST SP 800-38B). */
static void twice(const uint8_t in[BLOCK], uint8_t out[BLOCK])
{
    uint8_t carry = in[0] >> 7;
    for (int i = 0; i < BLOCK - 1; i++)
        out[i] = (uint8_t)(in[i] << 1 | in[i + 1] >> 7);
    out[BLOCK - 1] = (uint8_t)(in[BLOCK - 1] << 1 ^ (carry ? 0x87 : 0));
}

struct light_key *light_key_new(enum light cipher, const uint8_t *key, size_t key_len)
{
    if (key_len != 16 && key_len != 32)
        return NULL;
    struct light_key *k = iotsb_tls_calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    k->cipher = cipher;
    memcpy(k->key, key, key_len);
    k->key_len = key_len;
    int ok = 1;
    switch (cipher) {
    case LIGHT_EAX: {
        uint8_t zero[BLOCK] = {0}, l[BLOCK];
        k->aes = crypto_key_new(CIPHER_CTR, key, key_len);
        ok = k->aes != NULL && crypto_aes_cbc(k->aes, true, zero, zero, l, BLOCK) == 0;
        twice(l, k->k1);
        twice(k->k1, k->k2);
        break;
    }
    case LIGHT_ASCON128V12:
        ok = key_len == 16;
        break;
    case LIGHT_TINYAES:
        ok = key_len == AES_KEYLEN;
        if (ok)
            AES_init_ctx(&k->tiny, key);
        break;
    case LIGHT_SPECK:
        ok = (k->rounds = lwc_speck_schedule(key, key_len, k->rk)) > 0;
        break;
    case LIGHT_SIMON:
        ok = (k->rounds = lwc_simon_schedule(key, key_len, k->rk)) > 0;
        break;
    default:
        break;
    }
    if (!ok) {
        light_key_free(k);
        return NULL;
    }
    return k;
}

void light_key_free(struct light_key *k)
{
    if (k == NULL)
        return;
    crypto_key_free(k->aes);
    memset(k, 0, sizeof *k);
    iotsb_tls_free(k);
}

/* OMAC^t(data) = CMAC([t]_16 || data) (EAX §3), CBC-MAC on the stack's AES in chunks. */
static int omac(struct light_key *k, uint8_t t, const uint8_t *data, size_t len,
                uint8_t out[BLOCK])
{
    uint8_t state[BLOCK] = {0}, first[BLOCK] = {0}, chunk[256];
    first[BLOCK - 1] = t;
    const uint8_t *last = first; /* the last block: complete unless data ends in a partial one */
    size_t last_len = BLOCK;
    if (len > 0) {
        size_t head = (len - 1) / BLOCK * BLOCK; /* whole blocks before the last */
        if (crypto_aes_cbc(k->aes, true, state, first, state, BLOCK) != 0)
            return -1;
        for (size_t done = 0; done < head;) {
            size_t n = head - done < sizeof chunk ? head - done : sizeof chunk;
            if (crypto_aes_cbc(k->aes, true, state, data + done, chunk, n) != 0)
                return -1;
            memcpy(state, chunk + n - BLOCK, BLOCK);
            done += n;
        }
        last = data + head;
        last_len = len - head;
    }
    uint8_t block[BLOCK] = {0};
    memcpy(block, last, last_len);
    if (last_len < BLOCK)
        block[last_len] = 0x80;
    const uint8_t *subkey = last_len == BLOCK ? k->k1 : k->k2;
    for (int i = 0; i < BLOCK; i++)
        block[i] ^= subkey[i];
    return crypto_aes_cbc(k->aes, true, state, block, out, BLOCK);
}

/* EAX's tag over nonce, aad and ciphertext; n_out: OMAC^0(nonce), the CTR start. */
static int eax_tag(struct light_key *k, const uint8_t *nonce, size_t nonce_len,
                   const uint8_t *aad, size_t aad_len, const uint8_t *c, size_t len,
                   uint8_t n_out[BLOCK], uint8_t tag[BLOCK])
{
    uint8_t h[BLOCK], c_mac[BLOCK];
    if (omac(k, 0, nonce, nonce_len, n_out) || omac(k, 1, aad, aad_len, h) ||
        omac(k, 2, c, len, c_mac))
        return -1;
    for (int i = 0; i < BLOCK; i++)
        tag[i] = n_out[i] ^ h[i] ^ c_mac[i];
    return 0;
}

static int verify(const uint8_t *a, const uint8_t *b, size_t n) /* constant time */
{
    uint8_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ |= a[i] ^ b[i];
    return differ == 0 ? 0 : -1;
}

int light_seal(struct light_key *k, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
               size_t aad_len, const uint8_t mac_key[32], const uint8_t *in, size_t len,
               uint8_t *out)
{
    switch (k->cipher) {
    case LIGHT_EAX: {
        uint8_t n[BLOCK], unused[BLOCK];
        if (omac(k, 0, nonce, nonce_len, n) || crypto_aes_ctr(k->aes, n, in, out, len))
            return -1;
        return eax_tag(k, nonce, nonce_len, aad, aad_len, out, len, unused, out + len);
    }
    case LIGHT_ASCON128V12:
        if (nonce_len != 16)
            return -1;
        lwc_ascon128v12_encrypt(k->key, nonce, aad, aad_len, in, out, len, out + len);
        return 0;
    case LIGHT_SALSA20_BLAKE2B:
        if (nonce_len != 8)
            return -1;
        lwc_salsa20_blake2b_seal(k->key, k->key_len, mac_key, 32, nonce, aad, aad_len, in, out,
                                 len);
        return 0;
    default:
        return -1;
    }
}

int light_open(struct light_key *k, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
               size_t aad_len, const uint8_t mac_key[32], const uint8_t *in, size_t len,
               uint8_t *out)
{
    switch (k->cipher) {
    case LIGHT_EAX: {
        uint8_t n[BLOCK], tag[BLOCK];
        if (eax_tag(k, nonce, nonce_len, aad, aad_len, in, len, n, tag) ||
            verify(tag, in + len, EAX_TAG)) /* checked before decrypting */
            return -1;
        return crypto_aes_ctr(k->aes, n, in, out, len);
    }
    case LIGHT_ASCON128V12:
        if (nonce_len != 16)
            return -1;
        return lwc_ascon128v12_decrypt(k->key, nonce, aad, aad_len, in, out, len, in + len);
    case LIGHT_SALSA20_BLAKE2B:
        if (nonce_len != 8)
            return -1;
        return lwc_salsa20_blake2b_open(k->key, k->key_len, mac_key, 32, nonce, aad, aad_len, in,
                                        out, len);
    default:
        return -1;
    }
}

int light_ctr(struct light_key *k, const uint8_t counter[16], const uint8_t *in, uint8_t *out,
              size_t len)
{
    if (k->cipher == LIGHT_SPECK)
        lwc_speck_ctr(k->rk, k->rounds, counter, in, out, len);
    else if (k->cipher == LIGHT_SIMON)
        lwc_simon_ctr(k->rk, k->rounds, counter, in, out, len);
    else if (k->cipher == LIGHT_TINYAES) {
        AES_ctx_set_iv(&k->tiny, counter); /* it counts the whole block up, big-endian */
        memmove(out, in, len);             /* it encrypts in place */
        AES_CTR_xcrypt_buffer(&k->tiny, out, len);
    } else
        return -1;
    return 0;
}
