/* The Python face of our lightweight ciphers in C (lwc/, plain C99 without Python: lwc/lwc.h),
 * each checked against published vectors (issue 19):
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

#include <string.h>

#include "lwc/lwc.h"

/* -- SPECK128 / SIMON128 ----------------------------------------------------------------------- */

/* The round keys as a bytes object: its length says the number of rounds. */
static PyObject *schedule(PyObject *self, PyObject *args)
{
    int cipher;
    Py_buffer key;
    if (!PyArg_ParseTuple(args, "iy*", &cipher, &key))
        return NULL;
    uint64_t rk[LWC_MAX_ROUNDS];
    int rounds = lwc_schedule(cipher, key.buf, (size_t)key.len, rk);
    PyBuffer_Release(&key);
    if (rounds < 0) {
        PyErr_SetString(PyExc_ValueError, "a 16- or 32-byte key and cipher 0 (SPECK) or 1 (SIMON)");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)rk, (Py_ssize_t)(rounds * sizeof rk[0]));
}

static int round_keys(int cipher, const Py_buffer *keys)
{
    if ((cipher != LWC_SPECK && cipher != LWC_SIMON) || keys->len % 8 != 0 || keys->len == 0 ||
        keys->len > (Py_ssize_t)(LWC_MAX_ROUNDS * 8)) {
        PyErr_SetString(PyExc_ValueError, "round keys from schedule() and its cipher, please");
        return -1;
    }
    return (int)(keys->len / 8);
}

static PyObject *encrypt_block(PyObject *self, PyObject *args)
{
    int cipher;
    Py_buffer keys, block;
    if (!PyArg_ParseTuple(args, "iy*y*", &cipher, &keys, &block))
        return NULL;
    PyObject *result = NULL;
    int rounds = round_keys(cipher, &keys);
    if (rounds > 0 && block.len != 16) {
        PyErr_SetString(PyExc_ValueError, "a block is 16 bytes");
    } else if (rounds > 0) {
        uint8_t out[16];
        lwc_encrypt_block(cipher, keys.buf, rounds, block.buf, out);
        result = PyBytes_FromStringAndSize((const char *)out, 16);
    }
    PyBuffer_Release(&keys);
    PyBuffer_Release(&block);
    return result;
}

static PyObject *ctr(PyObject *self, PyObject *args)
{
    int cipher;
    Py_buffer keys, initial, data;
    if (!PyArg_ParseTuple(args, "iy*y*y*", &cipher, &keys, &initial, &data))
        return NULL;
    PyObject *result = NULL;
    int rounds = round_keys(cipher, &keys);
    if (rounds > 0 && initial.len != 16) {
        PyErr_SetString(PyExc_ValueError, "the initial counter block is 16 bytes");
    } else if (rounds > 0 && (result = PyBytes_FromStringAndSize(NULL, data.len)) != NULL) {
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
        Py_BEGIN_ALLOW_THREADS
        lwc_ctr(cipher, keys.buf, rounds, initial.buf, data.buf, out, (size_t)data.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&keys);
    PyBuffer_Release(&initial);
    PyBuffer_Release(&data);
    return result;
}

/* -- Ascon-AEAD128 ------------------------------------------------------------------------------- */

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
            uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
            const uint8_t *in = data.buf;
            int verdict = 0;
            Py_BEGIN_ALLOW_THREADS
            if (decrypt)
                verdict = lwc_ascon_aead128_decrypt(key.buf, nonce.buf, ad.buf, (size_t)ad.len,
                                                    in, out, len, in + len);
            else
                lwc_ascon_aead128_encrypt(key.buf, nonce.buf, ad.buf, (size_t)ad.len, in, out,
                                          len, out + len);
            Py_END_ALLOW_THREADS
            if (verdict != 0) {
                Py_DECREF(result);
                result = Py_NewRef(Py_None);
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

/* -- Salsa20 and keyed BLAKE2b --------------------------------------------------------------- */

static PyObject *salsa20_xor(PyObject *self, PyObject *args)
{
    Py_buffer key, nonce, data;
    if (!PyArg_ParseTuple(args, "y*y*y*", &key, &nonce, &data))
        return NULL;
    PyObject *result = NULL;
    if ((key.len != 16 && key.len != 32) || nonce.len != 8)
        PyErr_SetString(PyExc_ValueError, "Salsa20 takes a 16- or 32-byte key, an 8-byte nonce");
    else if ((result = PyBytes_FromStringAndSize(NULL, data.len)) != NULL)
        lwc_salsa20(key.buf, (size_t)key.len, nonce.buf, data.buf,
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
        struct lwc_blake2b b;
        uint8_t out[64];
        lwc_blake2b_init(&b, key.buf, (size_t)key.len, (size_t)digest);
        lwc_blake2b_update(&b, data.buf, (size_t)data.len);
        lwc_blake2b_final(&b, out);
        result = PyBytes_FromStringAndSize((const char *)out, digest);
    }
    PyBuffer_Release(&key);
    PyBuffer_Release(&data);
    return result;
}

static PyObject *salsa20_blake2b(PyObject *args, bool open)
{
    Py_buffer enc, mac, nonce, prefix, data;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &enc, &mac, &nonce, &prefix, &data))
        return NULL;
    PyObject *result = NULL;
    if ((enc.len != 16 && enc.len != 32) || nonce.len != 8 || mac.len > 64) {
        PyErr_SetString(PyExc_ValueError, "a 16- or 32-byte key, a MAC key of at most 64 bytes "
                                          "and an 8-byte nonce, please");
    } else if (open && data.len < LWC_SB_TAG) {
        result = Py_NewRef(Py_None);
    } else {
        size_t len = (size_t)data.len - (open ? LWC_SB_TAG : 0);
        result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(len + (open ? 0 : LWC_SB_TAG)));
        if (result != NULL) {
            uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
            int verdict = 0;
            Py_BEGIN_ALLOW_THREADS
            if (open)
                verdict = lwc_salsa20_blake2b_open(enc.buf, (size_t)enc.len, mac.buf,
                                                   (size_t)mac.len, nonce.buf, prefix.buf,
                                                   (size_t)prefix.len, data.buf, out, len);
            else
                lwc_salsa20_blake2b_seal(enc.buf, (size_t)enc.len, mac.buf, (size_t)mac.len,
                                         nonce.buf, prefix.buf, (size_t)prefix.len, data.buf,
                                         out, len);
            Py_END_ALLOW_THREADS
            if (verdict != 0) {
                Py_DECREF(result);
                result = Py_NewRef(Py_None);
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

/* -- AES without tables ------------------------------------------------------------------------ */

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
        int nr = lwc_aes_expand(key.buf, (size_t)key.len, rk);
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
        lwc_aes_encrypt(rk.buf, nr, block.buf, out);
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
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(result);
        Py_BEGIN_ALLOW_THREADS
        lwc_aes_ctr(rk.buf, nr, initial.buf, data.buf, out, (size_t)data.len);
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
    if (m != NULL && (PyModule_AddIntConstant(m, "SPECK", LWC_SPECK) < 0 ||
                      PyModule_AddIntConstant(m, "SIMON", LWC_SIMON) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
