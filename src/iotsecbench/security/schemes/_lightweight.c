/* Lightweight ciphers in C — our own code from the specifications (issue 19):
 *
 * - SPECK128 and SIMON128 (Beaulieu, Shors, Smith, Treatman-Clark, Weeks, Wingers: "The SIMON
 *   and SPECK Families of Lightweight Block Ciphers", 2013) in CTR mode, checked against the
 *   designers' Appendix B vectors (tests/data/vectors/simon-speck/designers_appendix_b.json)
 *   and, in CTR mode, against the pure-Python simonspeckciphers the *-purepy schemes keep;
 * - Ascon-AEAD128 as standardised in NIST SP 800-232 (2025), checked against the Ascon-AEAD128
 *   known-answer tests (tests/data/vectors/ascon/).
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

static PyMethodDef methods[] = {
    {"schedule", schedule, METH_VARARGS, "schedule(cipher, key) -> round keys"},
    {"encrypt_block", encrypt_block, METH_VARARGS,
     "encrypt_block(cipher, round_keys, block) -> block"},
    {"ctr", ctr, METH_VARARGS, "ctr(cipher, round_keys, initial_block, data) -> data ^ keystream"},
    {"ascon_aead128_encrypt", ascon_aead128_encrypt, METH_VARARGS,
     "ascon_aead128_encrypt(key, nonce, ad, plaintext) -> ciphertext || tag"},
    {"ascon_aead128_decrypt", ascon_aead128_decrypt, METH_VARARGS,
     "ascon_aead128_decrypt(key, nonce, ad, ciphertext || tag) -> plaintext, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_lightweight",
    "SPECK128 and SIMON128 in CTR mode, Ascon-AEAD128, in C (see the source's header).", -1,
    methods,
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
