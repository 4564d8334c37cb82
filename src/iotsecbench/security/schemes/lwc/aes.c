/* AES-128/256 (FIPS 197) without tables, branch-free, and CTR mode (lwc.h): the key schedule's
 * S-boxes one byte at a time, the rounds' bitsliced over four blocks. */
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

/* -- the round function, bitsliced over four blocks ------------------------------------------
 * SubBytes is the costly step without tables. Its 64 S-boxes (four blocks of 16 bytes: CTR
 * mode always has several blocks to encrypt) are computed at once on bit-planes — bit j of
 * plane i is bit i of byte j — where a GF(2^8) product is 64 ANDs and about 90 XORs for all
 * 64 bytes instead of 64 separate byte products. Planes in and out are an 8x8 bit-matrix
 * transpose per 8 bytes. */

static uint64_t transpose8(uint64_t x) /* the 8x8 bit matrix, bit 8r + c <-> bit 8c + r */
{
    uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
    return x ^ t ^ (t << 28);
}

static void to_planes(const uint8_t bytes[64], uint64_t p[8])
{
    for (int i = 0; i < 8; i++)
        p[i] = 0;
    for (int g = 0; g < 8; g++) { /* byte i of a transposed group is plane i's 8 bits */
        uint64_t t = transpose8(lwc_load_le(bytes + 8 * g, 8));
        for (int i = 0; i < 8; i++)
            p[i] |= ((t >> (8 * i)) & 0xff) << (8 * g);
    }
}

static void from_planes(const uint64_t p[8], uint8_t bytes[64])
{
    for (int g = 0; g < 8; g++) {
        uint64_t t = 0;
        for (int i = 0; i < 8; i++)
            t |= ((p[i] >> (8 * g)) & 0xff) << (8 * i);
        lwc_store_le(bytes + 8 * g, transpose8(t), 8);
    }
}

/* r = a * b in GF(2^8) mod x^8 + x^4 + x^3 + x + 1, on planes (r may alias a or b). */
static void gf_mul_planes(const uint64_t a[8], const uint64_t b[8], uint64_t r[8])
{
    uint64_t p[15] = {0};
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            p[i + j] ^= a[i] & b[j];
    for (int k = 14; k >= 8; k--) /* x^8 = x^4 + x^3 + x + 1, from the top down */
        p[k - 4] ^= p[k], p[k - 5] ^= p[k], p[k - 7] ^= p[k], p[k - 8] ^= p[k];
    memcpy(r, p, 8 * sizeof p[0]);
}

static void sub_bytes_planes(uint64_t x[8])
{
    /* the same addition chain as sub_byte: x^254 = x^-1, then the affine map */
    uint64_t x2[8], x3[8], x6[8], x12[8], x15[8], t[8];
    gf_mul_planes(x, x, x2);
    gf_mul_planes(x2, x, x3);
    gf_mul_planes(x3, x3, x6);
    gf_mul_planes(x6, x6, x12);
    gf_mul_planes(x12, x3, x15);
    gf_mul_planes(x15, x15, t);  /* x^30 */
    gf_mul_planes(t, t, t);      /* x^60 */
    gf_mul_planes(t, t, t);      /* x^120 */
    gf_mul_planes(t, t, t);      /* x^240 */
    gf_mul_planes(t, x12, t);    /* x^252 */
    gf_mul_planes(t, x2, t);     /* x^254 */
    static const uint8_t c = 0x63;
    for (int i = 0; i < 8; i++)
        x[i] = t[i] ^ t[(i + 4) % 8] ^ t[(i + 5) % 8] ^ t[(i + 6) % 8] ^ t[(i + 7) % 8] ^
               (uint64_t)(0 - (uint64_t)((c >> i) & 1));
}

/* Four blocks (64 bytes, consecutive) under the same round keys. */
static void aes_encrypt4(const uint8_t *rk, int nr, const uint8_t in[64], uint8_t out[64])
{
    uint8_t s[64], t[64];
    uint64_t planes[8];
    for (int i = 0; i < 64; i++)
        s[i] = in[i] ^ rk[i % 16];
    for (int round = 1; round <= nr; round++) {
        to_planes(s, planes);
        sub_bytes_planes(planes);
        from_planes(planes, s);
        for (int b = 0; b < 64; b += 16) {
            for (int c = 0; c < 4; c++) /* ShiftRows: row r moves left by r */
                for (int r = 0; r < 4; r++)
                    t[b + 4 * c + r] = s[b + 4 * ((c + r) % 4) + r];
            if (round < nr) { /* MixColumns */
                for (int c = 0; c < 4; c++) {
                    uint8_t *col = t + b + 4 * c, a0 = col[0], a1 = col[1], a2 = col[2];
                    uint8_t a3 = col[3], all = a0 ^ a1 ^ a2 ^ a3;
                    col[0] ^= all ^ xtime(a0 ^ a1), col[1] ^= all ^ xtime(a1 ^ a2);
                    col[2] ^= all ^ xtime(a2 ^ a3), col[3] ^= all ^ xtime(a3 ^ a0);
                }
            }
            for (int i = 0; i < 16; i++)
                s[b + i] = t[b + i] ^ rk[16 * round + i];
        }
    }
    memcpy(out, s, 64);
}

void lwc_aes_encrypt(const uint8_t *rk, int nr, const uint8_t in[16], uint8_t out[16])
{
    uint8_t blocks[64] = {0};
    memcpy(blocks, in, 16);
    aes_encrypt4(rk, nr, blocks, blocks);
    memcpy(out, blocks, 16);
}

void lwc_aes_ctr(const uint8_t *rk, int nr, const uint8_t initial[16], const uint8_t *in,
                 uint8_t *out, size_t len)
{
    uint8_t counters[64], stream[64];
    memcpy(counters + 48, initial, 16); /* the block before the first: advanced below */
    for (int i = 15; i >= 0 && counters[48 + i]-- == 0; i--) /* - 1 mod 2^128 */
        ;
    for (size_t at = 0; at < len; at += 64) {
        for (int b = 0; b < 64; b += 16) { /* the next four counter values, + 1 mod 2^128 */
            memcpy(counters + b, counters + (b + 48) % 64, 16);
            for (int i = 15; i >= 0 && ++counters[b + i] == 0; i--)
                ;
        }
        aes_encrypt4(rk, nr, counters, stream);
        size_t n = len - at < 64 ? len - at : 64;
        for (size_t i = 0; i < n; i++)
            out[at + i] = in[at + i] ^ stream[i];
    }
}
