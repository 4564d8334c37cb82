/* Ascon-AEAD128, NIST SP 800-232, and Ascon-128 v1.2, the NIST LWC final-round submission
 * (lwc.h): one permutation, the two AEADs. */
#include "lwc.h"

static uint64_t pad(size_t n) { return (uint64_t)0x01 << (8 * n); } /* 1 then zeros, after n bytes */

static void permutation(uint64_t s[5], int rounds)
{
    for (int r = 12 - rounds; r < 12; r++) {
        s[2] ^= (uint64_t)(0xf0 - r * 0x10 + r); /* c_r = 0xf0, 0xe1, …, 0x4b */
        uint64_t x0 = s[0], x1 = s[1], x2 = s[2], x3 = s[3], x4 = s[4];
        x0 ^= x4, x4 ^= x3, x2 ^= x1; /* the 5-bit S-box, bitsliced */
        uint64_t t0 = ~x0 & x1, t1 = ~x1 & x2, t2 = ~x2 & x3, t3 = ~x3 & x4, t4 = ~x4 & x0;
        x0 ^= t1, x1 ^= t2, x2 ^= t3, x3 ^= t4, x4 ^= t0;
        x1 ^= x0, x0 ^= x4, x3 ^= x2, x2 = ~x2;
        s[0] = x0 ^ lwc_ror(x0, 19) ^ lwc_ror(x0, 28); /* the linear layer */
        s[1] = x1 ^ lwc_ror(x1, 61) ^ lwc_ror(x1, 39);
        s[2] = x2 ^ lwc_ror(x2, 1) ^ lwc_ror(x2, 6);
        s[3] = x3 ^ lwc_ror(x3, 10) ^ lwc_ror(x3, 17);
        s[4] = x4 ^ lwc_ror(x4, 7) ^ lwc_ror(x4, 41);
    }
}

#define ASCON_AEAD128_IV 0x00001000808c0001ULL /* SP 800-232 Table 14: k=128, r=128, a=12, b=8 */

/* Initialisation and associated data; the state is ready for the message. */
static void ascon_start(uint64_t s[5], const uint8_t *key, const uint8_t *nonce,
                        const uint8_t *ad, size_t ad_len)
{
    uint64_t k0 = lwc_load_le(key, 8), k1 = lwc_load_le(key + 8, 8);
    s[0] = ASCON_AEAD128_IV, s[1] = k0, s[2] = k1;
    s[3] = lwc_load_le(nonce, 8), s[4] = lwc_load_le(nonce + 8, 8);
    permutation(s, 12);
    s[3] ^= k0, s[4] ^= k1;
    if (ad_len > 0) {
        for (; ad_len >= 16; ad += 16, ad_len -= 16) {
            s[0] ^= lwc_load_le(ad, 8), s[1] ^= lwc_load_le(ad + 8, 8);
            permutation(s, 8);
        }
        if (ad_len >= 8) {
            s[0] ^= lwc_load_le(ad, 8);
            s[1] ^= lwc_load_le(ad + 8, ad_len - 8) ^ pad(ad_len - 8);
        } else {
            s[0] ^= lwc_load_le(ad, ad_len) ^ pad(ad_len);
        }
        permutation(s, 8);
    }
    s[4] ^= 0x8000000000000000ULL; /* domain separation, with or without associated data */
}

static void ascon_tag(uint64_t s[5], const uint8_t *key, uint8_t tag[16])
{
    uint64_t k0 = lwc_load_le(key, 8), k1 = lwc_load_le(key + 8, 8);
    s[2] ^= k0, s[3] ^= k1;
    permutation(s, 12);
    lwc_store_le(tag, s[3] ^ k0, 8);
    lwc_store_le(tag + 8, s[4] ^ k1, 8);
}

/* Encrypts (decrypt = false) or decrypts len bytes of in to out, both rate words at a time. */
static void ascon_crypt(uint64_t s[5], const uint8_t *in, uint8_t *out, size_t len, bool decrypt)
{
    for (; len >= 16; in += 16, out += 16, len -= 16) {
        uint64_t c0 = lwc_load_le(in, 8), c1 = lwc_load_le(in + 8, 8);
        lwc_store_le(out, s[0] ^ c0, 8), lwc_store_le(out + 8, s[1] ^ c1, 8);
        s[0] = decrypt ? c0 : s[0] ^ c0, s[1] = decrypt ? c1 : s[1] ^ c1;
        permutation(s, 8);
    }
    /* the last block, 0-15 bytes, and its padding: no permutation after it */
    uint64_t *word = len >= 8 ? &s[1] : &s[0];
    if (len >= 8) {
        uint64_t c0 = lwc_load_le(in, 8);
        lwc_store_le(out, s[0] ^ c0, 8);
        s[0] = decrypt ? c0 : s[0] ^ c0;
        in += 8, out += 8, len -= 8;
    }
    uint64_t c = lwc_load_le(in, len);
    lwc_store_le(out, *word ^ c, len);
    if (decrypt) /* the ciphertext's bytes replace the state's, the rest stays */
        *word = (*word & ~(len ? (~(uint64_t)0 >> (64 - 8 * len)) : 0)) ^ c;
    else
        *word ^= c;
    *word ^= pad(len);
}



/* -- Ascon-128 v1.2 (Dobraunig, Eichlseder, Mendel, Schläffer, 2021 submission, §2.4) ---------
 * What differs from SP 800-232: a 64-bit rate, 6 rounds between blocks, big-endian words, the
 * padding bit at the top of the word, domain separation in the lowest bit, the key added to
 * words 1-2 before finalisation. The device firmware's `ascon128v12` (agents/native/
 * crypto_lwc.c); the host's are fast-ascon and the designers' pyascon (the tests compare). */
#define ASCON128_IV 0x80400c0600000000ULL /* k=128, r=64, a=12, b=6 */

static uint64_t load_be(const uint8_t *p, size_t n) /* n (0-8) bytes at the top of a word */
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (56 - 8 * i);
    return v;
}

static void store_be(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint64_t pad_be(size_t n) { return 0x80ULL << (56 - 8 * n); } /* after n (0-7) bytes */

static void v12_start(uint64_t s[5], const uint8_t *key, const uint8_t *nonce,
                      const uint8_t *ad, size_t ad_len)
{
    uint64_t k0 = load_be(key, 8), k1 = load_be(key + 8, 8);
    s[0] = ASCON128_IV, s[1] = k0, s[2] = k1;
    s[3] = load_be(nonce, 8), s[4] = load_be(nonce + 8, 8);
    permutation(s, 12);
    s[3] ^= k0, s[4] ^= k1;
    if (ad_len > 0) {
        for (; ad_len >= 8; ad += 8, ad_len -= 8) {
            s[0] ^= load_be(ad, 8);
            permutation(s, 6);
        }
        s[0] ^= load_be(ad, ad_len) ^ pad_be(ad_len);
        permutation(s, 6);
    }
    s[4] ^= 1; /* domain separation */
}

static void v12_crypt(uint64_t s[5], const uint8_t *in, uint8_t *out, size_t len, bool decrypt)
{
    for (; len >= 8; in += 8, out += 8, len -= 8) {
        uint64_t c = load_be(in, 8);
        store_be(out, s[0] ^ c, 8);
        s[0] = decrypt ? c : s[0] ^ c;
        permutation(s, 6);
    }
    uint64_t c = load_be(in, len); /* the last 0-7 bytes and the padding */
    store_be(out, s[0] ^ c, len);
    if (decrypt) /* the ciphertext's bytes replace the state's, the rest stays */
        s[0] = (s[0] & ~(uint64_t)0 >> (8 * len)) ^ c;
    else
        s[0] ^= c;
    s[0] ^= pad_be(len);
}

static void v12_tag(uint64_t s[5], const uint8_t *key, uint8_t tag[16])
{
    uint64_t k0 = load_be(key, 8), k1 = load_be(key + 8, 8);
    s[1] ^= k0, s[2] ^= k1;
    permutation(s, 12);
    store_be(tag, s[3] ^ k0, 8);
    store_be(tag + 8, s[4] ^ k1, 8);
}

/* -- the two AEADs over their three steps -------------------------------------------------- */
struct variant {
    void (*start)(uint64_t s[5], const uint8_t *key, const uint8_t *nonce, const uint8_t *ad,
                  size_t ad_len);
    void (*crypt)(uint64_t s[5], const uint8_t *in, uint8_t *out, size_t len, bool decrypt);
    void (*tag)(uint64_t s[5], const uint8_t *key, uint8_t tag[16]);
};
static const struct variant AEAD128 = {ascon_start, ascon_crypt, ascon_tag};
static const struct variant V12 = {v12_start, v12_crypt, v12_tag};

static void seal(const struct variant *v, const uint8_t *key, const uint8_t *nonce,
                 const uint8_t *ad, size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                 uint8_t tag[16])
{
    uint64_t s[5];
    v->start(s, key, nonce, ad, ad_len);
    v->crypt(s, in, out, len, false);
    v->tag(s, key, tag);
}

/* 0 and the plaintext when the tag verifies (compared in constant time), else -1 */
static int open_(const struct variant *v, const uint8_t *key, const uint8_t *nonce,
                 const uint8_t *ad, size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                 const uint8_t tag[16])
{
    uint64_t s[5];
    uint8_t expected[16], differ = 0;
    v->start(s, key, nonce, ad, ad_len);
    v->crypt(s, in, out, len, true);
    v->tag(s, key, expected);
    for (int i = 0; i < 16; i++)
        differ |= (uint8_t)(expected[i] ^ tag[i]);
    return differ == 0 ? 0 : -1;
}

void lwc_ascon_aead128_encrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                               size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                               uint8_t tag[16])
{
    seal(&AEAD128, key, nonce, ad, ad_len, in, out, len, tag);
}

int lwc_ascon_aead128_decrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                              size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                              const uint8_t tag[16])
{
    return open_(&AEAD128, key, nonce, ad, ad_len, in, out, len, tag);
}

void lwc_ascon128v12_encrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                             size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                             uint8_t tag[16])
{
    seal(&V12, key, nonce, ad, ad_len, in, out, len, tag);
}

int lwc_ascon128v12_decrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                            size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                            const uint8_t tag[16])
{
    return open_(&V12, key, nonce, ad, ad_len, in, out, len, tag);
}
