/* AES-128/256 (FIPS 197) without tables, branch-free, and CTR mode (lwc.h). */
#include "lwc.h"

#include <string.h>

static uint8_t xtime(uint8_t a) { return (uint8_t)((a << 1) ^ (0x1b & -(a >> 7))); }

static uint8_t gf_mul(uint8_t a, uint8_t b) /* branch-free: every bit of b costs the same */
{
    uint8_t p = 0;
    for (int i = 0; i < 8; i++, b >>= 1) {
        p ^= (uint8_t)(-(b & 1) & a);
        a = xtime(a);
    }
    return p;
}

static uint8_t sub_byte(uint8_t x)
{
    /* x^254 = x^-1 in GF(2^8) (0 -> 0), by an addition chain of 11 products */
    uint8_t x2 = gf_mul(x, x), x3 = gf_mul(x2, x), x6 = gf_mul(x3, x3), x12 = gf_mul(x6, x6);
    uint8_t x15 = gf_mul(x12, x3), x30 = gf_mul(x15, x15), x60 = gf_mul(x30, x30);
    uint8_t x120 = gf_mul(x60, x60), x240 = gf_mul(x120, x120);
    uint8_t b = gf_mul(gf_mul(x240, x12), x2);
    uint8_t r1 = (uint8_t)(b << 1 | b >> 7), r2 = (uint8_t)(b << 2 | b >> 6);
    uint8_t r3 = (uint8_t)(b << 3 | b >> 5), r4 = (uint8_t)(b << 4 | b >> 4);
    return (uint8_t)(b ^ r1 ^ r2 ^ r3 ^ r4 ^ 0x63); /* the affine map */
}

/* FIPS 197 §5.2: Nk = 4 or 8 words, Nr = 10 or 14; rk holds 4 (Nr + 1) words, bytewise. */
int lwc_aes_expand(const uint8_t *key, size_t key_len, uint8_t rk[240])
{
    int nk = (int)(key_len / 4), nr = nk + 6, words = 4 * (nr + 1);
    memcpy(rk, key, key_len);
    uint8_t rcon = 1;
    for (int i = nk; i < words; i++) {
        uint8_t t[4];
        memcpy(t, rk + 4 * (i - 1), 4);
        if (i % nk == 0) {
            uint8_t first = t[0];
            t[0] = (uint8_t)(sub_byte(t[1]) ^ rcon), t[1] = sub_byte(t[2]);
            t[2] = sub_byte(t[3]), t[3] = sub_byte(first);
            rcon = xtime(rcon);
        } else if (nk > 6 && i % nk == 4) {
            for (int j = 0; j < 4; j++)
                t[j] = sub_byte(t[j]);
        }
        for (int j = 0; j < 4; j++)
            rk[4 * i + j] = rk[4 * (i - nk) + j] ^ t[j];
    }
    return nr;
}

void lwc_aes_encrypt(const uint8_t *rk, int nr, const uint8_t in[16], uint8_t out[16])
{
    uint8_t s[16], t[16];
    for (int i = 0; i < 16; i++)
        s[i] = in[i] ^ rk[i];
    for (int round = 1; round <= nr; round++) {
        for (int c = 0; c < 4; c++) /* SubBytes and ShiftRows: row r moves left by r */
            for (int r = 0; r < 4; r++)
                t[4 * c + r] = sub_byte(s[4 * ((c + r) % 4) + r]);
        if (round < nr) { /* MixColumns */
            for (int c = 0; c < 4; c++) {
                uint8_t *col = t + 4 * c, a0 = col[0], a1 = col[1], a2 = col[2], a3 = col[3];
                uint8_t all = a0 ^ a1 ^ a2 ^ a3;
                col[0] ^= all ^ xtime(a0 ^ a1), col[1] ^= all ^ xtime(a1 ^ a2);
                col[2] ^= all ^ xtime(a2 ^ a3), col[3] ^= all ^ xtime(a3 ^ a0);
            }
        }
        for (int i = 0; i < 16; i++)
            s[i] = t[i] ^ rk[16 * round + i];
    }
    memcpy(out, s, 16);
}

void lwc_aes_ctr(const uint8_t *rk, int nr, const uint8_t initial[16], const uint8_t *in,
                 uint8_t *out, size_t len)
{
    uint8_t counter[16], stream[16];
    memcpy(counter, initial, 16);
    for (size_t at = 0; at < len; at += 16) {
        lwc_aes_encrypt(rk, nr, counter, stream);
        size_t n = len - at < 16 ? len - at : 16;
        for (size_t i = 0; i < n; i++)
            out[at + i] = in[at + i] ^ stream[i];
        for (int i = 15; i >= 0 && ++counter[i] == 0; i--) /* + 1 mod 2^128, big-endian */
            ;
    }
}
