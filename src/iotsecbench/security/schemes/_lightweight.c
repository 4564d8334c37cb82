/* Lightweight ciphers in C — our own code from the specifications (issue 19):
 *
 * - SPECK128 and SIMON128 (Beaulieu, Shors, Smith, Treatman-Clark, Weeks, Wingers: "The SIMON
 *   and SPECK Families of Lightweight Block Ciphers", 2013) in CTR mode, checked against the
 *   designers' Appendix B vectors (tests/data/vectors/simon-speck/designers_appendix_b.json)
 *   and, in CTR mode, against the pure-Python simonspeckciphers the *-purepy schemes keep;
 * - Ascon-AEAD128 as standardised in NIST SP 800-232 (2025), checked against the Ascon-AEAD128
 *   known-answer tests (tests/data/vectors/ascon/);
 * - Salsa20/20 (Bernstein 2005) and keyed BLAKE2b (RFC 7693), and the `payload-schemes`
 *   study's encrypt-then-MAC of the two in one call per seal, checked against the eSTREAM
 *   keystreams and the BLAKE2 reference KAT (tests/data/vectors/salsa20, blake2b) and against
 *   pycryptodome + hashlib byte for byte;
 * - AES-128/256 (FIPS 197) without tables: the S-box computed as the GF(2^8) inverse and the
 *   affine map, every step branch-free and without secret-indexed memory (what a core
 *   without AES instructions runs when cache timing matters), in CTR mode; checked against
 *   FIPS 197 Appendix C and NIST SP 800-38A F.5.
 *
 * Why: SPECK and SIMON exist on PyPI only in pure Python, 100-1000x slower than native code,
 * so a ranking of payload ciphers that included them measured the language; and PyPI's Ascon
 * AEADs are the v1.2 submission, not the standard.
 *
 * Byte order, as the designers print their vectors and the Python schemes map them: a 16-byte
 * block is the 128-bit big-endian integer (x || y), x the high 64-bit word; a key of m words
 * is (l[m-2] … l[0] || k[0]) big-endian, k[0] the low word.
 *
 *   schedule(cipher, key) -> round keys (bytes; cipher 0 = SPECK128, 1 = SIMON128)
 *   encrypt_block(cipher, round_keys, block16) -> block16
 *   ctr(cipher, round_keys, initial_block16, data) -> data XOR the keystream E(ctr + i)
 *   ascon_aead128_encrypt(key16, nonce16, ad, plaintext) -> ciphertext || tag (16)
 *   ascon_aead128_decrypt(key16, nonce16, ad, ciphertext_and_tag) -> plaintext, or None
 *   salsa20_xor(key16|32, nonce8, data) -> data XOR the keystream from block 0
 *   blake2b(key, data, digest_size) -> digest (key may be empty)
 *   salsa20_blake2b_seal(enc_key, mac_key, nonce8, mac_prefix, plaintext) -> c || tag (32),
 *     tag = BLAKE2b-256(mac_key; mac_prefix || c)
 *   salsa20_blake2b_open(enc_key, mac_key, nonce8, mac_prefix, c || tag) -> plaintext, or None
 *   aes_schedule(key16|32) -> round keys; aes_encrypt_block(round_keys, block16) -> block16
 *   aes_ctr(round_keys, initial_block16, data) -> data XOR AES(ctr + i), ctr mod 2^128
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { SPECK = 0, SIMON = 1 };
#define MAX_ROUNDS 72

static inline uint64_t ror(uint64_t x, unsigned r) { return x >> r | x << (64 - r); }
static inline uint64_t rol(uint64_t x, unsigned r) { return x << r | x >> (64 - r); }

static uint64_t load64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

static void store64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* Key words from the big-endian key: words[0] = k0 (the low word), words[1] = l0, … */
static int key_words(const uint8_t *key, Py_ssize_t len, uint64_t *words)
{
    if (len != 16 && len != 32)
        return -1;
    int m = (int)(len / 8);
    for (int i = 0; i < m; i++)
        words[i] = load64(key + len - 8 * (i + 1));
    return m;
}

static int speck_schedule(const uint64_t *words, int m, uint64_t *rk)
{
    int rounds = m == 2 ? 32 : 34; /* SPECK128/128, SPECK128/256 */
    uint64_t l[MAX_ROUNDS + 3];
    rk[0] = words[0];
    for (int i = 0; i < m - 1; i++)
        l[i] = words[i + 1];
    for (int i = 0; i < rounds - 1; i++) {
        l[i + m - 1] = (rk[i] + ror(l[i], 8)) ^ (uint64_t)i;
        rk[i + 1] = rol(rk[i], 3) ^ l[i + m - 1];
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
        uint64_t tmp = ror(rk[i - 1], 3);
        if (m == 4)
            tmp ^= rk[i - 3];
        tmp ^= ror(tmp, 1);
        rk[i] = ~rk[i - m] ^ tmp ^ (uint64_t)(z[(i - m) % 62] - '0') ^ 3;
    }
    return rounds;
}

static void speck_encrypt(const uint64_t *rk, int rounds, uint64_t *x, uint64_t *y)
{
    uint64_t a = *x, b = *y;
    for (int i = 0; i < rounds; i++) {
        a = (ror(a, 8) + b) ^ rk[i];
        b = rol(b, 3) ^ a;
    }
    *x = a, *y = b;
}

static void simon_encrypt(const uint64_t *rk, int rounds, uint64_t *x, uint64_t *y)
{
    uint64_t a = *x, b = *y;
    for (int i = 0; i < rounds; i++) {
        uint64_t t = a;
        a = b ^ (rol(a, 1) & rol(a, 8)) ^ rol(a, 2) ^ rk[i];
        b = t;
    }
    *x = a, *y = b;
}

/* The round keys as a bytes object: its length says the number of rounds. */
static PyObject *schedule(PyObject *self, PyObject *args)
{
    int cipher;
    Py_buffer key;
    if (!PyArg_ParseTuple(args, "iy*", &cipher, &key))
        return NULL;
    uint64_t words[4], rk[MAX_ROUNDS];
    int m = key_words(key.buf, key.len, words);
    PyBuffer_Release(&key);
    if (m < 0 || (cipher != SPECK && cipher != SIMON)) {
        PyErr_SetString(PyExc_ValueError, "a 16- or 32-byte key and cipher 0 (SPECK) or 1 (SIMON)");
        return NULL;
    }
    int rounds = cipher == SPECK ? speck_schedule(words, m, rk) : simon_schedule(words, m, rk);
    return PyBytes_FromStringAndSize((const char *)rk, (Py_ssize_t)(rounds * sizeof rk[0]));
}

typedef void (*block_fn)(const uint64_t *, int, uint64_t *, uint64_t *);

static int round_keys(int cipher, Py_buffer *keys, const uint64_t **rk, int *rounds,
                      block_fn *encrypt)
{
    if ((cipher != SPECK && cipher != SIMON) || keys->len % 8 != 0 || keys->len == 0 ||
        keys->len > (Py_ssize_t)(MAX_ROUNDS * 8)) {
        PyErr_SetString(PyExc_ValueError, "round keys from schedule() and its cipher, please");
        return -1;
    }
    *rk = keys->buf;
    *rounds = (int)(keys->len / 8);
    *encrypt = cipher == SPECK ? speck_encrypt : simon_encrypt;
    return 0;
}

static PyObject *encrypt_block(PyObject *self, PyObject *args)
{
    int cipher, rounds;
    Py_buffer keys, block;
    if (!PyArg_ParseTuple(args, "iy*y*", &cipher, &keys, &block))
        return NULL;
    const uint64_t *rk;
    block_fn encrypt;
    PyObject *result = NULL;
    if (round_keys(cipher, &keys, &rk, &rounds, &encrypt) == 0) {
        if (block.len != 16) {
            PyErr_SetString(PyExc_ValueError, "a block is 16 bytes");
        } else {
            uint64_t x = load64(block.buf), y = load64((const uint8_t *)block.buf + 8);
            encrypt(rk, rounds, &x, &y);
            uint8_t out[16];
            store64(out, x);
            store64(out + 8, y);
            result = PyBytes_FromStringAndSize((const char *)out, 16);
        }
    }
    PyBuffer_Release(&keys);
    PyBuffer_Release(&block);
    return result;
}

static PyObject *ctr(PyObject *self, PyObject *args)
{
    int cipher, rounds;
    Py_buffer keys, initial, data;
    if (!PyArg_ParseTuple(args, "iy*y*y*", &cipher, &keys, &initial, &data))
        return NULL;
    const uint64_t *rk;
    block_fn encrypt;
    PyObject *result = NULL;
    if (round_keys(cipher, &keys, &rk, &rounds, &encrypt) == 0) {
        if (initial.len != 16) {
            PyErr_SetString(PyExc_ValueError, "the initial counter block is 16 bytes");
        } else if ((result = PyBytes_FromStringAndSize(NULL, data.len)) != NULL) {
            uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
            const uint8_t *in = data.buf;
            uint64_t hi = load64(initial.buf), lo = load64((const uint8_t *)initial.buf + 8);
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t at = 0; at < data.len; at += 16) {
                uint64_t x = hi, y = lo;
                encrypt(rk, rounds, &x, &y);
                uint8_t stream[16];
                store64(stream, x);
                store64(stream + 8, y);
                Py_ssize_t n = data.len - at < 16 ? data.len - at : 16;
                for (Py_ssize_t i = 0; i < n; i++)
                    out[at + i] = in[at + i] ^ stream[i];
                if (++lo == 0) /* the counter is the whole 128-bit block, mod 2^128 */
                    hi++;
            }
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&keys);
    PyBuffer_Release(&initial);
    PyBuffer_Release(&data);
    return result;
}

/* -- Ascon-AEAD128 (NIST SP 800-232) ------------------------------------------------------ */

/* SP 800-232 reads bytes into 64-bit words little-endian (the v1.2 submission: big-endian). */
static uint64_t load_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void store_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

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
        s[0] = x0 ^ ror(x0, 19) ^ ror(x0, 28); /* the linear layer */
        s[1] = x1 ^ ror(x1, 61) ^ ror(x1, 39);
        s[2] = x2 ^ ror(x2, 1) ^ ror(x2, 6);
        s[3] = x3 ^ ror(x3, 10) ^ ror(x3, 17);
        s[4] = x4 ^ ror(x4, 7) ^ ror(x4, 41);
    }
}

#define ASCON_AEAD128_IV 0x00001000808c0001ULL /* SP 800-232 Table 14: k=128, r=128, a=12, b=8 */

/* Initialisation and associated data; the state is ready for the message. */
static void ascon_start(uint64_t s[5], const uint8_t *key, const uint8_t *nonce,
                        const uint8_t *ad, size_t ad_len)
{
    uint64_t k0 = load_le(key, 8), k1 = load_le(key + 8, 8);
    s[0] = ASCON_AEAD128_IV, s[1] = k0, s[2] = k1;
    s[3] = load_le(nonce, 8), s[4] = load_le(nonce + 8, 8);
    permutation(s, 12);
    s[3] ^= k0, s[4] ^= k1;
    if (ad_len > 0) {
        for (; ad_len >= 16; ad += 16, ad_len -= 16) {
            s[0] ^= load_le(ad, 8), s[1] ^= load_le(ad + 8, 8);
            permutation(s, 8);
        }
        if (ad_len >= 8) {
            s[0] ^= load_le(ad, 8);
            s[1] ^= load_le(ad + 8, ad_len - 8) ^ pad(ad_len - 8);
        } else {
            s[0] ^= load_le(ad, ad_len) ^ pad(ad_len);
        }
        permutation(s, 8);
    }
    s[4] ^= 0x8000000000000000ULL; /* domain separation, with or without associated data */
}

static void ascon_tag(uint64_t s[5], const uint8_t *key, uint8_t tag[16])
{
    uint64_t k0 = load_le(key, 8), k1 = load_le(key + 8, 8);
    s[2] ^= k0, s[3] ^= k1;
    permutation(s, 12);
    store_le(tag, s[3] ^ k0, 8);
    store_le(tag + 8, s[4] ^ k1, 8);
}

/* Encrypts (decrypt = false) or decrypts len bytes of in to out, both rate words at a time. */
static void ascon_crypt(uint64_t s[5], const uint8_t *in, uint8_t *out, size_t len, bool decrypt)
{
    for (; len >= 16; in += 16, out += 16, len -= 16) {
        uint64_t c0 = load_le(in, 8), c1 = load_le(in + 8, 8);
        store_le(out, s[0] ^ c0, 8), store_le(out + 8, s[1] ^ c1, 8);
        s[0] = decrypt ? c0 : s[0] ^ c0, s[1] = decrypt ? c1 : s[1] ^ c1;
        permutation(s, 8);
    }
    /* the last block, 0-15 bytes, and its padding: no permutation after it */
    uint64_t *word = len >= 8 ? &s[1] : &s[0];
    if (len >= 8) {
        uint64_t c0 = load_le(in, 8);
        store_le(out, s[0] ^ c0, 8);
        s[0] = decrypt ? c0 : s[0] ^ c0;
        in += 8, out += 8, len -= 8;
    }
    uint64_t c = load_le(in, len);
    store_le(out, *word ^ c, len);
    if (decrypt) /* the ciphertext's bytes replace the state's, the rest stays */
        *word = (*word & ~(len ? (~(uint64_t)0 >> (64 - 8 * len)) : 0)) ^ c;
    else
        *word ^= c;
    *word ^= pad(len);
}

static PyObject *ascon_aead128(PyObject *args, bool decrypt)
{
    Py_buffer key, nonce, ad, data;
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &key, &nonce, &ad, &data))
        return NULL;
    PyObject *result = NULL;
    if (key.len != 16 || nonce.len != 16) {
        PyErr_SetString(PyExc_ValueError, "Ascon-AEAD128 takes a 16-byte key and nonce");
    } else if (decrypt && data.len < 16) {
        result = Py_NewRef(Py_None); /* no room for a tag: not authentic */
    } else {
        size_t len = (size_t)data.len - (decrypt ? 16 : 0);
        result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(len + (decrypt ? 0 : 16)));
        if (result != NULL) {
            uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result), tag[16];
            uint64_t s[5];
            Py_BEGIN_ALLOW_THREADS
            ascon_start(s, key.buf, nonce.buf, ad.buf, (size_t)ad.len);
            ascon_crypt(s, data.buf, out, len, decrypt);
            ascon_tag(s, key.buf, tag);
            Py_END_ALLOW_THREADS
            if (!decrypt) {
                memcpy(out + len, tag, 16);
            } else {
                const uint8_t *sent = (const uint8_t *)data.buf + len;
                uint8_t differ = 0;
                for (int i = 0; i < 16; i++) /* constant time */
                    differ |= (uint8_t)(tag[i] ^ sent[i]);
                if (differ != 0) {
                    Py_DECREF(result);
                    result = Py_NewRef(Py_None);
                }
            }
        }
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&nonce);
    PyBuffer_Release(&ad);
    PyBuffer_Release(&data);
    return result;
}

static PyObject *ascon_aead128_encrypt(PyObject *self, PyObject *args)
{
    return ascon_aead128(args, false);
}

static PyObject *ascon_aead128_decrypt(PyObject *self, PyObject *args)
{
    return ascon_aead128(args, true);
}

/* -- Salsa20/20 and keyed BLAKE2b --------------------------------------------------------- */

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
        store_le(out + 4 * i, x[i] + in[i], 4);
}

static void salsa20(const uint8_t *key, size_t key_len, const uint8_t *nonce, const uint8_t *in,
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

struct blake2b {
    uint64_t h[8], t;
    uint8_t buffer[128];
    size_t filled, digest_size;
};

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
static void blake2b_compress(struct blake2b *b, const uint8_t block[128], bool last)
{
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++)
        m[i] = load_le(block + 8 * i, 8);
    memcpy(v, b->h, sizeof b->h);
    memcpy(v + 8, BLAKE2B_IV, sizeof BLAKE2B_IV);
    v[12] ^= b->t; /* the byte counter's high word stays 0 below 2^64 bytes */
    if (last)
        v[14] = ~v[14];
#define G(a, c, d, e, x, y)                                                                    \
    v[a] = v[a] + v[c] + x, v[e] = ror(v[e] ^ v[a], 32), v[d] = v[d] + v[e],                   \
    v[c] = ror(v[c] ^ v[d], 24), v[a] = v[a] + v[c] + y, v[e] = ror(v[e] ^ v[a], 16),          \
    v[d] = v[d] + v[e], v[c] = ror(v[c] ^ v[d], 63)
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

static void blake2b_update(struct blake2b *b, const uint8_t *data, size_t len)
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

static void blake2b_init(struct blake2b *b, const uint8_t *key, size_t key_len, size_t digest)
{
    memset(b, 0, sizeof *b);
    memcpy(b->h, BLAKE2B_IV, sizeof BLAKE2B_IV);
    b->h[0] ^= 0x01010000ULL ^ (uint64_t)key_len << 8 ^ digest; /* the parameter block */
    b->digest_size = digest;
    if (key_len > 0) { /* the key, padded to a whole block, is the first block */
        uint8_t block[128] = {0};
        memcpy(block, key, key_len);
        blake2b_update(b, block, 128);
    }
}

static void blake2b_final(struct blake2b *b, uint8_t *out)
{
    b->t += b->filled;
    memset(b->buffer + b->filled, 0, 128 - b->filled);
    blake2b_compress(b, b->buffer, true);
    uint8_t full[64];
    for (int i = 0; i < 8; i++)
        store_le(full + 8 * i, b->h[i], 8);
    memcpy(out, full, b->digest_size);
}

static PyObject *salsa20_xor(PyObject *self, PyObject *args)
{
    Py_buffer key, nonce, data;
    if (!PyArg_ParseTuple(args, "y*y*y*", &key, &nonce, &data))
        return NULL;
    PyObject *result = NULL;
    if ((key.len != 16 && key.len != 32) || nonce.len != 8)
        PyErr_SetString(PyExc_ValueError, "Salsa20 takes a 16- or 32-byte key, an 8-byte nonce");
    else if ((result = PyBytes_FromStringAndSize(NULL, data.len)) != NULL)
        salsa20(key.buf, (size_t)key.len, nonce.buf, data.buf,
                (uint8_t *)PyBytes_AS_STRING(result), (size_t)data.len);
    PyBuffer_Release(&key);
    PyBuffer_Release(&nonce);
    PyBuffer_Release(&data);
    return result;
}

static PyObject *blake2b(PyObject *self, PyObject *args)
{
    Py_buffer key, data;
    int digest;
    if (!PyArg_ParseTuple(args, "y*y*i", &key, &data, &digest))
        return NULL;
    PyObject *result = NULL;
    if (key.len > 64 || digest < 1 || digest > 64) {
        PyErr_SetString(PyExc_ValueError, "BLAKE2b takes a key of 0-64 bytes, a digest of 1-64");
    } else {
        struct blake2b b;
        uint8_t out[64];
        blake2b_init(&b, key.buf, (size_t)key.len, (size_t)digest);
        blake2b_update(&b, data.buf, (size_t)data.len);
        blake2b_final(&b, out);
        result = PyBytes_FromStringAndSize((const char *)out, digest);
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&data);
    return result;
}

#define SB_TAG 32

static PyObject *salsa20_blake2b(PyObject *args, bool open)
{
    Py_buffer enc, mac, nonce, prefix, data;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &enc, &mac, &nonce, &prefix, &data))
        return NULL;
    PyObject *result = NULL;
    if ((enc.len != 16 && enc.len != 32) || nonce.len != 8 || mac.len > 64) {
        PyErr_SetString(PyExc_ValueError, "a 16- or 32-byte key, a MAC key of at most 64 bytes "
                                          "and an 8-byte nonce, please");
    } else if (open && data.len < SB_TAG) {
        result = Py_NewRef(Py_None);
    } else {
        size_t len = (size_t)data.len - (open ? SB_TAG : 0);
        result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(len + (open ? 0 : SB_TAG)));
        if (result != NULL) {
            uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result), tag[SB_TAG];
            const uint8_t *in = data.buf, *ciphertext = open ? in : out;
            struct blake2b b;
            Py_BEGIN_ALLOW_THREADS
            if (!open)
                salsa20(enc.buf, (size_t)enc.len, nonce.buf, in, out, len);
            blake2b_init(&b, mac.buf, (size_t)mac.len, SB_TAG); /* encrypt, then MAC */
            blake2b_update(&b, prefix.buf, (size_t)prefix.len);
            blake2b_update(&b, ciphertext, len);
            blake2b_final(&b, tag);
            Py_END_ALLOW_THREADS
            if (!open) {
                memcpy(out + len, tag, SB_TAG);
            } else {
                uint8_t differ = 0;
                for (int i = 0; i < SB_TAG; i++) /* constant time, before any decryption */
                    differ |= (uint8_t)(tag[i] ^ in[len + i]);
                if (differ != 0) {
                    Py_DECREF(result);
                    result = Py_NewRef(Py_None);
                } else {
                    salsa20(enc.buf, (size_t)enc.len, nonce.buf, in, out, len);
                }
            }
        }
    }
    PyBuffer_Release(&enc);
    PyBuffer_Release(&mac);
    PyBuffer_Release(&nonce);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&data);
    return result;
}

static PyObject *salsa20_blake2b_seal(PyObject *self, PyObject *args)
{
    return salsa20_blake2b(args, false);
}

static PyObject *salsa20_blake2b_open(PyObject *self, PyObject *args)
{
    return salsa20_blake2b(args, true);
}

/* -- AES without tables (FIPS 197) ---------------------------------------------------------- */

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
static int aes_expand(const uint8_t *key, size_t key_len, uint8_t *rk)
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

static void aes_encrypt(const uint8_t *rk, int nr, const uint8_t in[16], uint8_t out[16])
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

static PyObject *aes_schedule(PyObject *self, PyObject *args)
{
    Py_buffer key;
    if (!PyArg_ParseTuple(args, "y*", &key))
        return NULL;
    PyObject *result = NULL;
    uint8_t rk[240];
    if (key.len != 16 && key.len != 32) {
        PyErr_SetString(PyExc_ValueError, "AES takes a 16- or 32-byte key here");
    } else {
        int nr = aes_expand(key.buf, (size_t)key.len, rk);
        result = PyBytes_FromStringAndSize((const char *)rk, 16 * (nr + 1));
    }
    PyBuffer_Release(&key);
    return result;
}

static int aes_rounds(const Py_buffer *rk)
{
    if (rk->len != 176 && rk->len != 240) {
        PyErr_SetString(PyExc_ValueError, "round keys from aes_schedule(), please");
        return -1;
    }
    return (int)(rk->len / 16) - 1;
}

static PyObject *aes_encrypt_block(PyObject *self, PyObject *args)
{
    Py_buffer rk, block;
    if (!PyArg_ParseTuple(args, "y*y*", &rk, &block))
        return NULL;
    PyObject *result = NULL;
    int nr = aes_rounds(&rk);
    if (nr > 0 && block.len != 16) {
        PyErr_SetString(PyExc_ValueError, "a block is 16 bytes");
    } else if (nr > 0) {
        uint8_t out[16];
        aes_encrypt(rk.buf, nr, block.buf, out);
        result = PyBytes_FromStringAndSize((const char *)out, 16);
    }
    PyBuffer_Release(&rk);
    PyBuffer_Release(&block);
    return result;
}

static PyObject *aes_ctr(PyObject *self, PyObject *args)
{
    Py_buffer rk, initial, data;
    if (!PyArg_ParseTuple(args, "y*y*y*", &rk, &initial, &data))
        return NULL;
    PyObject *result = NULL;
    int nr = aes_rounds(&rk);
    if (nr > 0 && initial.len != 16) {
        PyErr_SetString(PyExc_ValueError, "the initial counter block is 16 bytes");
    } else if (nr > 0 && (result = PyBytes_FromStringAndSize(NULL, data.len)) != NULL) {
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result), counter[16], stream[16];
        const uint8_t *in = data.buf;
        memcpy(counter, initial.buf, 16);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t at = 0; at < data.len; at += 16) {
            aes_encrypt(rk.buf, nr, counter, stream);
            Py_ssize_t n = data.len - at < 16 ? data.len - at : 16;
            for (Py_ssize_t i = 0; i < n; i++)
                out[at + i] = in[at + i] ^ stream[i];
            for (int i = 15; i >= 0 && ++counter[i] == 0; i--) /* + 1 mod 2^128, big-endian */
                ;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&rk);
    PyBuffer_Release(&initial);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"schedule", schedule, METH_VARARGS, "schedule(cipher, key) -> round keys"},
    {"encrypt_block", encrypt_block, METH_VARARGS,
     "encrypt_block(cipher, round_keys, block) -> block"},
    {"ctr", ctr, METH_VARARGS, "ctr(cipher, round_keys, initial_block, data) -> data ^ keystream"},
    {"ascon_aead128_encrypt", ascon_aead128_encrypt, METH_VARARGS,
     "ascon_aead128_encrypt(key, nonce, ad, plaintext) -> ciphertext || tag"},
    {"ascon_aead128_decrypt", ascon_aead128_decrypt, METH_VARARGS,
     "ascon_aead128_decrypt(key, nonce, ad, ciphertext || tag) -> plaintext, or None"},
    {"salsa20_xor", salsa20_xor, METH_VARARGS, "salsa20_xor(key, nonce, data) -> data ^ keystream"},
    {"blake2b", blake2b, METH_VARARGS, "blake2b(key, data, digest_size) -> digest"},
    {"salsa20_blake2b_seal", salsa20_blake2b_seal, METH_VARARGS,
     "salsa20_blake2b_seal(enc_key, mac_key, nonce, mac_prefix, plaintext) -> c || tag"},
    {"salsa20_blake2b_open", salsa20_blake2b_open, METH_VARARGS,
     "salsa20_blake2b_open(enc_key, mac_key, nonce, mac_prefix, c || tag) -> plaintext | None"},
    {"aes_schedule", aes_schedule, METH_VARARGS, "aes_schedule(key) -> round keys"},
    {"aes_encrypt_block", aes_encrypt_block, METH_VARARGS,
     "aes_encrypt_block(round_keys, block) -> block"},
    {"aes_ctr", aes_ctr, METH_VARARGS, "aes_ctr(round_keys, initial_block, data) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_lightweight",
    .m_doc = "SPECK128 and SIMON128 in CTR mode, Ascon-AEAD128, Salsa20 + BLAKE2b, table-free "
             "AES, in C (see the source's header).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__lightweight(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddIntConstant(m, "SPECK", SPECK) < 0 ||
                      PyModule_AddIntConstant(m, "SIMON", SIMON) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
