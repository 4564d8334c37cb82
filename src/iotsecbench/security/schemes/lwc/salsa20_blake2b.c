/* Salsa20/20 and keyed BLAKE2b, and their encrypt-then-MAC (lwc.h). */
#include "lwc.h"

#include <string.h>

static inline uint32_t rol32(uint32_t x, unsigned r) { return x << r | x >> (32 - r); }

static uint32_t load32_le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One 64-byte keystream block for block counter n (Salsa20 specification, §4-§9). */
static void salsa20_block(const uint8_t *key, size_t key_len, const uint8_t *nonce, uint64_t n,
                          uint8_t out[64])
{
    static const char sigma[] = "expand 32-byte k", tau[] = "expand 16-byte k";
    const char *c = key_len == 32 ? sigma : tau;
    const uint8_t *k2 = key_len == 32 ? key + 16 : key;
    uint32_t x[16], in[16] = {
        load32_le((const uint8_t *)c), load32_le(key), load32_le(key + 4), load32_le(key + 8),
        load32_le(key + 12), load32_le((const uint8_t *)c + 4), load32_le(nonce),
        load32_le(nonce + 4), (uint32_t)n, (uint32_t)(n >> 32), load32_le((const uint8_t *)c + 8),
        load32_le(k2), load32_le(k2 + 4), load32_le(k2 + 8), load32_le(k2 + 12),
        load32_le((const uint8_t *)c + 12)};
    memcpy(x, in, sizeof x);
#define QR(a, b, c, d)                                                                         \
    x[b] ^= rol32(x[a] + x[d], 7), x[c] ^= rol32(x[b] + x[a], 9),                              \
        x[d] ^= rol32(x[c] + x[b], 13), x[a] ^= rol32(x[d] + x[c], 18)
    for (int i = 0; i < 10; i++) { /* 20 rounds: column then row, ten times */
        QR(0, 4, 8, 12), QR(5, 9, 13, 1), QR(10, 14, 2, 6), QR(15, 3, 7, 11);
        QR(0, 1, 2, 3), QR(5, 6, 7, 4), QR(10, 11, 8, 9), QR(15, 12, 13, 14);
    }
#undef QR
    for (int i = 0; i < 16; i++)
        lwc_store_le(out + 4 * i, x[i] + in[i], 4);
}

void lwc_salsa20(const uint8_t *key, size_t key_len, const uint8_t nonce[8], const uint8_t *in,
                    uint8_t *out, size_t len)
{
    uint8_t block[64];
    for (uint64_t n = 0; len > 0; n++) {
        salsa20_block(key, key_len, nonce, n, block);
        size_t m = len < 64 ? len : 64;
        for (size_t i = 0; i < m; i++)
            out[i] = in[i] ^ block[i];
        in += m, out += m, len -= m;
    }
}

static const uint64_t BLAKE2B_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const uint8_t BLAKE2B_SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

/* RFC 7693 §3.2: F, the compression of one 128-byte block; last: the final block. */
static void blake2b_compress(struct lwc_blake2b *b, const uint8_t block[128], bool last)
{
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++)
        m[i] = lwc_load_le(block + 8 * i, 8);
    memcpy(v, b->h, sizeof b->h);
    memcpy(v + 8, BLAKE2B_IV, sizeof BLAKE2B_IV);
    v[12] ^= b->t; /* the byte counter's high word stays 0 below 2^64 bytes */
    if (last)
        v[14] = ~v[14];
#define G(a, c, d, e, x, y)                                                                    \
    v[a] = v[a] + v[c] + x, v[e] = lwc_ror(v[e] ^ v[a], 32), v[d] = v[d] + v[e],                   \
    v[c] = lwc_ror(v[c] ^ v[d], 24), v[a] = v[a] + v[c] + y, v[e] = lwc_ror(v[e] ^ v[a], 16),          \
    v[d] = v[d] + v[e], v[c] = lwc_ror(v[c] ^ v[d], 63)
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = BLAKE2B_SIGMA[r];
        G(0, 4, 8, 12, m[s[0]], m[s[1]]), G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        G(2, 6, 10, 14, m[s[4]], m[s[5]]), G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        G(0, 5, 10, 15, m[s[8]], m[s[9]]), G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        G(2, 7, 8, 13, m[s[12]], m[s[13]]), G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
#undef G
    for (int i = 0; i < 8; i++)
        b->h[i] ^= v[i] ^ v[i + 8];
}

void lwc_blake2b_update(struct lwc_blake2b *b, const uint8_t *data, size_t len)
{
    while (len > 0) {
        if (b->filled == 128) { /* compress a full buffer only once more input follows */
            b->t += 128;
            blake2b_compress(b, b->buffer, false);
            b->filled = 0;
        }
        size_t n = 128 - b->filled < len ? 128 - b->filled : len;
        memcpy(b->buffer + b->filled, data, n);
        b->filled += n, data += n, len -= n;
    }
}

void lwc_blake2b_init(struct lwc_blake2b *b, const uint8_t *key, size_t key_len, size_t digest)
{
    memset(b, 0, sizeof *b);
    memcpy(b->h, BLAKE2B_IV, sizeof BLAKE2B_IV);
    b->h[0] ^= 0x01010000ULL ^ (uint64_t)key_len << 8 ^ digest; /* the parameter block */
    b->digest_size = digest;
    if (key_len > 0) { /* the key, padded to a whole block, is the first block */
        uint8_t block[128] = {0};
        memcpy(block, key, key_len);
        lwc_blake2b_update(b, block, 128);
    }
}

void lwc_blake2b_final(struct lwc_blake2b *b, uint8_t *out)
{
    b->t += b->filled;
    memset(b->buffer + b->filled, 0, 128 - b->filled);
    blake2b_compress(b, b->buffer, true);
    uint8_t full[64];
    for (int i = 0; i < 8; i++)
        lwc_store_le(full + 8 * i, b->h[i], 8);
    memcpy(out, full, b->digest_size);
}

void lwc_salsa20_blake2b_seal(const uint8_t *enc, size_t enc_len, const uint8_t *mac,
                              size_t mac_len, const uint8_t nonce[8], const uint8_t *prefix,
                              size_t prefix_len, const uint8_t *in, uint8_t *out, size_t len)
{
    struct lwc_blake2b b;
    lwc_salsa20(enc, enc_len, nonce, in, out, len); /* encrypt, then MAC */
    lwc_blake2b_init(&b, mac, mac_len, LWC_SB_TAG);
    lwc_blake2b_update(&b, prefix, prefix_len);
    lwc_blake2b_update(&b, out, len);
    lwc_blake2b_final(&b, out + len);
}

int lwc_salsa20_blake2b_open(const uint8_t *enc, size_t enc_len, const uint8_t *mac,
                             size_t mac_len, const uint8_t nonce[8], const uint8_t *prefix,
                             size_t prefix_len, const uint8_t *in, uint8_t *out, size_t len)
{
    struct lwc_blake2b b;
    uint8_t tag[LWC_SB_TAG], differ = 0;
    lwc_blake2b_init(&b, mac, mac_len, LWC_SB_TAG);
    lwc_blake2b_update(&b, prefix, prefix_len);
    lwc_blake2b_update(&b, in, len);
    lwc_blake2b_final(&b, tag);
    for (int i = 0; i < LWC_SB_TAG; i++) /* constant time, before any decryption */
        differ |= (uint8_t)(tag[i] ^ in[len + i]);
    if (differ != 0)
        return -1;
    lwc_salsa20(enc, enc_len, nonce, in, out, len);
    return 0;
}
