/* SPECK128 and SIMON128 (lwc.h): key schedules, the block functions and CTR mode. */
#include "lwc.h"

static uint64_t load64_be(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static void store64_be(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* Key words from the big-endian key: words[0] = k0 (the low word), words[1] = l0, … */
static int key_words(const uint8_t *key, size_t len, uint64_t *words)
{
    if (len != 16 && len != 32)
        return -1;
    int m = (int)(len / 8);
    for (int i = 0; i < m; i++)
        words[i] = load64_be(key + len - 8 * (i + 1));
    return m;
}

static int speck_schedule(const uint64_t *words, int m, uint64_t *rk)
{
    int rounds = m == 2 ? 32 : 34; /* SPECK128/128, SPECK128/256 */
    uint64_t l[LWC_MAX_ROUNDS + 3];
    rk[0] = words[0];
    for (int i = 0; i < m - 1; i++)
        l[i] = words[i + 1];
    for (int i = 0; i < rounds - 1; i++) {
        l[i + m - 1] = (rk[i] + lwc_ror(l[i], 8)) ^ (uint64_t)i;
        rk[i + 1] = lwc_rol(rk[i], 3) ^ l[i + m - 1];
    }
    return rounds;
}

/* The constant sequences z2 (SIMON128/128) and z4 (SIMON128/256), bit j = z[j], period 62. */
static const char Z2[] = "10101111011100000011010010011000101000010001111110010110110011";
static const char Z4[] = "11010001111001101011011000100000010111000011001010010011101111";

static int simon_schedule(const uint64_t *words, int m, uint64_t *rk)
{
    int rounds = m == 2 ? 68 : 72;
    const char *z = m == 2 ? Z2 : Z4;
    for (int i = 0; i < m; i++)
        rk[i] = words[i];
    for (int i = m; i < rounds; i++) {
        uint64_t tmp = lwc_ror(rk[i - 1], 3);
        if (m == 4)
            tmp ^= rk[i - 3];
        tmp ^= lwc_ror(tmp, 1);
        rk[i] = ~rk[i - m] ^ tmp ^ (uint64_t)(z[(i - m) % 62] - '0') ^ 3;
    }
    return rounds;
}

int lwc_speck_schedule(const uint8_t *key, size_t len, uint64_t rk[LWC_MAX_ROUNDS])
{
    uint64_t words[4];
    int m = key_words(key, len, words);
    return m < 0 ? -1 : speck_schedule(words, m, rk);
}

int lwc_simon_schedule(const uint8_t *key, size_t len, uint64_t rk[LWC_MAX_ROUNDS])
{
    uint64_t words[4];
    int m = key_words(key, len, words);
    return m < 0 ? -1 : simon_schedule(words, m, rk);
}

int lwc_schedule(int cipher, const uint8_t *key, size_t len, uint64_t rk[LWC_MAX_ROUNDS])
{
    if (cipher == LWC_SPECK)
        return lwc_speck_schedule(key, len, rk);
    return cipher == LWC_SIMON ? lwc_simon_schedule(key, len, rk) : -1;
}

static void speck_encrypt(const uint64_t *rk, int rounds, uint64_t *x, uint64_t *y)
{
    uint64_t a = *x, b = *y;
    for (int i = 0; i < rounds; i++) {
        a = (lwc_ror(a, 8) + b) ^ rk[i];
        b = lwc_rol(b, 3) ^ a;
    }
    *x = a, *y = b;
}

static void simon_encrypt(const uint64_t *rk, int rounds, uint64_t *x, uint64_t *y)
{
    uint64_t a = *x, b = *y;
    for (int i = 0; i < rounds; i++) {
        uint64_t t = a;
        a = b ^ (lwc_rol(a, 1) & lwc_rol(a, 8)) ^ lwc_rol(a, 2) ^ rk[i];
        b = t;
    }
    *x = a, *y = b;
}

typedef void block_words(const uint64_t *rk, int rounds, uint64_t *x, uint64_t *y);

static inline void block_with(block_words *encrypt, const uint64_t *rk, int rounds,
                              const uint8_t in[16], uint8_t out[16])
{
    uint64_t x = load64_be(in), y = load64_be(in + 8);
    encrypt(rk, rounds, &x, &y);
    store64_be(out, x);
    store64_be(out + 8, y);
}

/* Inlined into each cipher's entry point, so that each holds one cipher's rounds. */
static inline void ctr_with(block_words *encrypt, const uint64_t *rk, int rounds,
                            const uint8_t initial[16], const uint8_t *in, uint8_t *out,
                            size_t len)
{
    uint64_t hi = load64_be(initial), lo = load64_be(initial + 8);
    for (size_t at = 0; at < len; at += 16) {
        uint64_t x = hi, y = lo;
        encrypt(rk, rounds, &x, &y);
        uint8_t stream[16];
        store64_be(stream, x);
        store64_be(stream + 8, y);
        size_t n = len - at < 16 ? len - at : 16;
        for (size_t i = 0; i < n; i++)
            out[at + i] = in[at + i] ^ stream[i];
        if (++lo == 0) /* the counter is the whole 128-bit block, mod 2^128 */
            hi++;
    }
}

void lwc_speck_block(const uint64_t *rk, int rounds, const uint8_t in[16], uint8_t out[16])
{
    block_with(speck_encrypt, rk, rounds, in, out);
}

void lwc_simon_block(const uint64_t *rk, int rounds, const uint8_t in[16], uint8_t out[16])
{
    block_with(simon_encrypt, rk, rounds, in, out);
}

void lwc_speck_ctr(const uint64_t *rk, int rounds, const uint8_t initial[16], const uint8_t *in,
                   uint8_t *out, size_t len)
{
    ctr_with(speck_encrypt, rk, rounds, initial, in, out, len);
}

void lwc_simon_ctr(const uint64_t *rk, int rounds, const uint8_t initial[16], const uint8_t *in,
                   uint8_t *out, size_t len)
{
    ctr_with(simon_encrypt, rk, rounds, initial, in, out, len);
}

void lwc_encrypt_block(int cipher, const uint64_t *rk, int rounds, const uint8_t in[16],
                       uint8_t out[16])
{
    (cipher == LWC_SPECK ? lwc_speck_block : lwc_simon_block)(rk, rounds, in, out);
}

void lwc_ctr(int cipher, const uint64_t *rk, int rounds, const uint8_t initial[16],
             const uint8_t *in, uint8_t *out, size_t len)
{
    (cipher == LWC_SPECK ? lwc_speck_ctr : lwc_simon_ctr)(rk, rounds, initial, in, out, len);
}
