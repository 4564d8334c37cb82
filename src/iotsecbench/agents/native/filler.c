/* MT19937 (Matsumoto & Nishimura 1998, the reference mt19937ar.c's algorithm) as CPython's
 * _randommodule.c uses it; see filler.h. */
#include "filler.h"

#define MT_N 624
#define MT_M 397

struct mt {
    uint32_t state[MT_N];
    int index;
};

static void init_genrand(struct mt *mt, uint32_t s)
{
    mt->state[0] = s;
    for (int i = 1; i < MT_N; i++)
        mt->state[i] = 1812433253U * (mt->state[i - 1] ^ (mt->state[i - 1] >> 30)) + (uint32_t)i;
    mt->index = MT_N;
}

static void init_by_array(struct mt *mt, const uint32_t *key, size_t length)
{
    init_genrand(mt, 19650218U);
    size_t i = 1, j = 0;
    for (size_t k = MT_N > length ? MT_N : length; k; k--) {
        mt->state[i] = (mt->state[i] ^ ((mt->state[i - 1] ^ (mt->state[i - 1] >> 30)) * 1664525U))
                       + key[j] + (uint32_t)j;
        if (++i >= MT_N) {
            mt->state[0] = mt->state[MT_N - 1];
            i = 1;
        }
        if (++j >= length)
            j = 0;
    }
    for (size_t k = MT_N - 1; k; k--) {
        mt->state[i] = (mt->state[i] ^ ((mt->state[i - 1] ^ (mt->state[i - 1] >> 30)) * 1566083941U))
                       - (uint32_t)i;
        if (++i >= MT_N) {
            mt->state[0] = mt->state[MT_N - 1];
            i = 1;
        }
    }
    mt->state[0] = 0x80000000U; /* non-zero initial state */
}

static uint32_t genrand(struct mt *mt)
{
    static const uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
    uint32_t y;
    if (mt->index >= MT_N) {
        int k;
        for (k = 0; k < MT_N - MT_M; k++) {
            y = (mt->state[k] & 0x80000000U) | (mt->state[k + 1] & 0x7fffffffU);
            mt->state[k] = mt->state[k + MT_M] ^ (y >> 1) ^ mag01[y & 1U];
        }
        for (; k < MT_N - 1; k++) {
            y = (mt->state[k] & 0x80000000U) | (mt->state[k + 1] & 0x7fffffffU);
            mt->state[k] = mt->state[k + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1U];
        }
        y = (mt->state[MT_N - 1] & 0x80000000U) | (mt->state[0] & 0x7fffffffU);
        mt->state[MT_N - 1] = mt->state[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1U];
        mt->index = 0;
    }
    y = mt->state[mt->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

void iotsb_filler(uint64_t seed, uint8_t *out, size_t n)
{
    struct mt mt;
    /* CPython: the key is the seed's 32-bit words, least significant first; 0 is one word. */
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    init_by_array(&mt, key, key[1] ? 2 : 1);
    /* getrandbits(8 n): 32-bit outputs, least significant word first, each little-endian;
     * the last, partial word keeps its top bits (r >> (32 - bits)). */
    size_t done = 0;
    while (done < n) {
        uint32_t r = genrand(&mt);
        size_t left = n - done;
        if (left < 4)
            r >>= 32 - 8 * left;
        for (size_t b = 0; b < 4 && done < n; b++, done++)
            out[done] = (uint8_t)(r >> (8 * b));
    }
}
