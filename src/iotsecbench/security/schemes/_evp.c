/*
 * iotsecbench.security.schemes._evp: OpenSSL EVP AEADs with the wire framing in one C call.
 *
 * Why this exists: measured through pyca, a framed AES-128-GCM seal of 4 KiB cost ~1.5x
 * `openssl speed` -- not because of the cipher, but because the Python framing around it
 * (sequence number, header, nonce, AAD, prepending the header to the ciphertext) cost about
 * as much as encrypting 2 KiB. A benchmark meant to rank algorithms must not rank framing
 * code, so the counter-nonce AEADs that OpenSSL implements (AES-GCM, AES-CCM, ChaCha20-
 * Poly1305) seal and open here: one Python call per message, the key schedule done once per
 * key, the ciphertext written straight behind the header, nothing copied twice.
 *
 * Two types:
 *   Aead(cipher_name, key, tag_len)   pyca-compatible encrypt/decrypt(nonce, data, aad);
 *                                      the published test vectors run through these
 *   Framing(aead, version, scheme_id, nonce_prefix, nonce_len, aad_suffix, first_seq,
 *           exhausted, label)
 *                                      seal(plaintext) -> version|id|seq(8)|ct|tag and
 *                                      open(message) -> OpenedMessage(plaintext, seq), the
 *                                      byte layout of docs/wire-format.md, with the header
 *                                      checks and the RFC 4303 replay window of base.py
 *   configure(...)                     the Python classes to raise and return (base.py's),
 *                                      set once by evp.py
 *
 * The GIL is held for the whole call: a call is a few microseconds, and holding it makes a
 * call atomic with respect to the Python objects it reads (a bytearray plaintext cannot
 * change half-way). Aead.decrypt raises cryptography's InvalidTag on a tag failure, exactly
 * what the pyca backend raises; Framing.open raises base.py's AuthenticationError with that
 * InvalidTag as its cause, as base.py's own mapping does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define HEADER_BYTES 10 /* version(1) | scheme_id(1) | seq(8) */
#define SEQ_BYTES 8
#define MAX_NONCE 16
#define MAX_AAD_SUFFIX 64
#define MAX_TAG 16

static PyObject *InvalidTag; /* cryptography.exceptions.InvalidTag */
/* base.py's classes, set by configure(): the C path raises and returns exactly what the
 * Python path does, so callers cannot tell the two apart. */
static PyObject *NonceExhaustedError, *AuthenticationError, *MalformedMessageError,
    *ReplayError, *OpenedMessage;

/* ---- Aead ------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    EVP_CIPHER_CTX *enc;
    EVP_CIPHER_CTX *dec;
    int ccm;      /* CCM needs the lengths up front and verifies in Update */
    int tag_len;
    int enc_iv_len; /* the IV length each context is set to: changed only when it differs */
    int dec_iv_len;
    /* CCM fixes its length-field size (15 - IV length) in the key setup, so a new IV length
     * means keying again: the key is kept for that (cleansed on dealloc). */
    unsigned char key[32];
    int key_len;
} AeadObject;

static PyTypeObject AeadType;

static void set_openssl_error(const char *what) {
    PyErr_Format(PyExc_RuntimeError, "OpenSSL: %s failed", what);
}

static int init_context(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, int encrypt, int ccm,
                        int tag_len, const unsigned char *key) {
    if (!EVP_CipherInit_ex(ctx, cipher, NULL, NULL, NULL, encrypt)) return 0;
    /* CCM fixes the tag length before the key; GCM and ChaCha20-Poly1305 take it per call. */
    if (ccm && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, tag_len, NULL)) return 0;
    return EVP_CipherInit_ex(ctx, NULL, NULL, key, NULL, encrypt);
}

static int Aead_init(AeadObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"cipher", "key", "tag_len", NULL};
    const char *name;
    Py_buffer key;
    int tag_len;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sy*i", kwlist, &name, &key, &tag_len))
        return -1;
    int result = -1;
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(NULL, name, NULL);
    if (cipher == NULL) {
        PyErr_Format(PyExc_ValueError, "OpenSSL has no cipher %s", name);
        goto done;
    }
    if (!(EVP_CIPHER_get_flags(cipher) & EVP_CIPH_FLAG_AEAD_CIPHER)) {
        PyErr_Format(PyExc_ValueError, "%s is not an AEAD", name);
        goto done;
    }
    if (key.len != EVP_CIPHER_get_key_length(cipher)) {
        PyErr_Format(PyExc_ValueError, "%s needs a %d-byte key, got %zd", name,
                     EVP_CIPHER_get_key_length(cipher), key.len);
        goto done;
    }
    if (tag_len < 4 || tag_len > MAX_TAG) {
        PyErr_Format(PyExc_ValueError, "tag length %d is not in 4..16", tag_len);
        goto done;
    }
    if (self->enc == NULL) self->enc = EVP_CIPHER_CTX_new();
    if (self->dec == NULL) self->dec = EVP_CIPHER_CTX_new();
    if (self->enc == NULL || self->dec == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    self->ccm = EVP_CIPHER_get_mode(cipher) == EVP_CIPH_CCM_MODE;
    self->tag_len = tag_len;
    if (!init_context(self->enc, cipher, 1, self->ccm, tag_len, key.buf) ||
        !init_context(self->dec, cipher, 0, self->ccm, tag_len, key.buf)) {
        set_openssl_error("key setup");
        goto done;
    }
    /* CCM's key setup fixes its length field from a default that is not the IV length the
     * cipher reports: 0 makes the first call set its IV length and key again. */
    self->enc_iv_len = self->dec_iv_len = self->ccm ? 0 : EVP_CIPHER_get_iv_length(cipher);
    if ((size_t)key.len > sizeof self->key) {
        PyErr_SetString(PyExc_ValueError, "keys longer than 32 bytes are not supported");
        goto done;
    }
    memcpy(self->key, key.buf, (size_t)key.len);
    self->key_len = (int)key.len;
    result = 0;
done:
    EVP_CIPHER_free(cipher);
    PyBuffer_Release(&key);
    return result;
}

static void Aead_dealloc(AeadObject *self) {
    OPENSSL_cleanse(self->key, sizeof self->key);
    EVP_CIPHER_CTX_free(self->enc); /* frees and cleanses the key schedule */
    EVP_CIPHER_CTX_free(self->dec);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int set_iv_length(AeadObject *self, EVP_CIPHER_CTX *ctx, int *current,
                         Py_ssize_t iv_len) {
    if (iv_len == *current) return 1;
    if (iv_len < 1 || iv_len > MAX_NONCE) {
        PyErr_Format(PyExc_ValueError, "nonce of %zd bytes is not supported", iv_len);
        return 0;
    }
    if (!EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)iv_len, NULL)) {
        PyErr_Format(PyExc_ValueError, "nonce of %zd bytes is not valid for this cipher",
                     iv_len);
        return 0;
    }
    if (self->ccm &&
        !EVP_CipherInit_ex(ctx, NULL, NULL, self->key, NULL, EVP_CIPHER_CTX_is_encrypting(ctx))) {
        set_openssl_error("CCM key setup for a new nonce length");
        return 0;
    }
    *current = (int)iv_len;
    return 1;
}

static int lengths_fit(Py_ssize_t aad_len, Py_ssize_t data_len) {
    if (aad_len > INT_MAX || data_len > INT_MAX - MAX_TAG - HEADER_BYTES) {
        PyErr_SetString(PyExc_OverflowError, "data and associated data must be under 2 GiB");
        return 0;
    }
    return 1;
}

/* out receives n bytes of ciphertext, then the tag. Python error set on failure. */
static int aead_encrypt(AeadObject *self, const unsigned char *iv, Py_ssize_t iv_len,
                        const unsigned char *aad, Py_ssize_t aad_len,
                        const unsigned char *in, Py_ssize_t n, unsigned char *out) {
    EVP_CIPHER_CTX *ctx = self->enc;
    int len = 0, final_len = 0;
    static const unsigned char empty[1] = {0};
    if (!set_iv_length(self, ctx, &self->enc_iv_len, iv_len)) return 0;
    if (!EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv)) goto fail;
    if (self->ccm && !EVP_EncryptUpdate(ctx, NULL, &len, NULL, (int)n)) goto fail;
    if (aad_len && !EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len)) goto fail;
    len = 0; /* some ciphers report the AAD as output length: count only the data */
    /* CCM computes its tag in the (one) data update, so it needs the call even for n = 0. */
    if ((n || self->ccm) && !EVP_EncryptUpdate(ctx, out, &len, n ? in : empty, (int)n))
        goto fail;
    if (!EVP_EncryptFinal_ex(ctx, out + len, &final_len)) goto fail;
    if (len + final_len != n) goto fail;
    if (!EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, self->tag_len, out + n)) goto fail;
    return 1;
fail:
    set_openssl_error("encryption");
    return 0;
}

/* in = ciphertext || tag (n bytes in all); out receives n - tag_len bytes. Returns 1 on
 * success, 0 with InvalidTag set when the tag does not verify (out is wiped). */
static int aead_decrypt(AeadObject *self, const unsigned char *iv, Py_ssize_t iv_len,
                        const unsigned char *aad, Py_ssize_t aad_len,
                        const unsigned char *in, Py_ssize_t n, unsigned char *out) {
    EVP_CIPHER_CTX *ctx = self->dec;
    int len = 0, final_len = 0, ok;
    Py_ssize_t body = n - self->tag_len;
    static unsigned char empty[1];
    if (body < 0) {
        PyErr_SetNone(InvalidTag);
        return 0;
    }
    if (!set_iv_length(self, ctx, &self->dec_iv_len, iv_len)) return 0;
    /* The expected tag is copied into the context here (const in practice). */
    if (self->ccm &&
        !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, self->tag_len, (void *)(in + body)))
        goto fail;
    if (!EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, iv)) goto fail;
    if (self->ccm && !EVP_DecryptUpdate(ctx, NULL, &len, NULL, (int)body)) goto fail;
    if (aad_len && !EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len)) goto fail;
    len = 0; /* some ciphers report the AAD as output length: count only the data */
    if (self->ccm) {
        /* CCM verifies inside the data update; there is no Final. */
        ok = EVP_DecryptUpdate(ctx, body ? out : empty, &len, body ? in : empty, (int)body) > 0;
    } else {
        if (body && !EVP_DecryptUpdate(ctx, out, &len, in, (int)body)) goto fail;
        if (!EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, self->tag_len,
                                 (void *)(in + body)))
            goto fail;
        ok = EVP_DecryptFinal_ex(ctx, out + len, &final_len) > 0;
    }
    if (!ok) {
        OPENSSL_cleanse(out, (size_t)body); /* never hand out unauthenticated plaintext */
        PyErr_SetNone(InvalidTag);
        return 0;
    }
    return 1;
fail:
    set_openssl_error("decryption");
    return 0;
}

/* encrypt/decrypt(nonce, data, aad): parse the buffers once, for both directions. */
static PyObject *aead_call(AeadObject *self, PyObject *const *args, Py_ssize_t nargs,
                           int encrypting) {
    Py_buffer nonce = {0}, data = {0}, aad = {0};
    PyObject *out = NULL;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s(nonce, data, aad)", encrypting ? "encrypt" : "decrypt");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &nonce, PyBUF_SIMPLE) < 0) goto done;
    if (PyObject_GetBuffer(args[1], &data, PyBUF_SIMPLE) < 0) goto done;
    if (args[2] != Py_None && PyObject_GetBuffer(args[2], &aad, PyBUF_SIMPLE) < 0) goto done;
    if (!lengths_fit(aad.len, data.len)) goto done;
    if (!encrypting && data.len < self->tag_len) {
        PyErr_SetNone(InvalidTag);
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, data.len + (encrypting ? 1 : -1) * self->tag_len);
    if (out == NULL) goto done;
    unsigned char *result = (unsigned char *)PyBytes_AS_STRING(out);
    int ok = encrypting ? aead_encrypt(self, nonce.buf, nonce.len, aad.buf, aad.len, data.buf,
                                       data.len, result)
                        : aead_decrypt(self, nonce.buf, nonce.len, aad.buf, aad.len, data.buf,
                                       data.len, result);
    if (!ok) Py_CLEAR(out);
done:
    if (nonce.obj) PyBuffer_Release(&nonce);
    if (data.obj) PyBuffer_Release(&data);
    if (aad.obj) PyBuffer_Release(&aad);
    return out;
}

static PyObject *Aead_encrypt(AeadObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return aead_call(self, args, nargs, 1);
}

static PyObject *Aead_decrypt(AeadObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return aead_call(self, args, nargs, 0);
}

static PyMethodDef Aead_methods[] = {
    {"encrypt", (PyCFunction)(void (*)(void))Aead_encrypt, METH_FASTCALL,
     "encrypt(nonce, data, aad) -> ciphertext || tag"},
    {"decrypt", (PyCFunction)(void (*)(void))Aead_decrypt, METH_FASTCALL,
     "decrypt(nonce, data, aad) -> plaintext; raises InvalidTag"},
    {NULL},
};

static PyTypeObject AeadType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "iotsecbench.security.schemes._evp.Aead",
    .tp_basicsize = sizeof(AeadObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An OpenSSL EVP AEAD under one key: pyca-style encrypt/decrypt.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Aead_init,
    .tp_dealloc = (destructor)Aead_dealloc,
    .tp_methods = Aead_methods,
};

/* ---- Framing ---------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    AeadObject *aead;
    unsigned char version, scheme_id;
    unsigned char nonce_prefix[MAX_NONCE];
    int prefix_len, nonce_len;
    unsigned char aad_suffix[MAX_AAD_SUFFIX];
    int suffix_len;
    uint64_t next_seq;
    int exhausted; /* the counter passed 2**64 - 1: sealing again would reuse a nonce */
    /* the receiver's replay window (RFC 4303 section 3.4.3, 64 entries): bit i of bitmap
     * says whether highest - i was accepted */
    int has_highest;
    uint64_t highest, bitmap;
    PyObject *label;
} FramingObject;

static void store_be64(unsigned char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (unsigned char)v;
}

static uint64_t load_be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

static int Framing_init(FramingObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"aead",       "version",    "scheme_id", "nonce_prefix",
                             "nonce_len",  "aad_suffix", "first_seq", "exhausted",
                             "label",      NULL};
    PyObject *aead, *label;
    unsigned char version, scheme_id;
    Py_buffer prefix, suffix;
    int nonce_len, exhausted;
    unsigned long long first_seq;
    if (OpenedMessage == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_evp.configure() has not been called");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!bby*iy*KpU", kwlist, &AeadType, &aead,
                                     &version, &scheme_id, &prefix, &nonce_len, &suffix,
                                     &first_seq, &exhausted, &label))
        return -1;
    int result = -1;
    if (prefix.len < 0 || nonce_len > MAX_NONCE || nonce_len - prefix.len < SEQ_BYTES) {
        PyErr_SetString(PyExc_ValueError, "the nonce has no room for a 64-bit counter");
        goto done;
    }
    if (suffix.len > MAX_AAD_SUFFIX) {
        PyErr_SetString(PyExc_ValueError, "AAD suffix too long");
        goto done;
    }
    Py_INCREF(aead);
    Py_XSETREF(self->aead, (AeadObject *)aead);
    Py_INCREF(label);
    Py_XSETREF(self->label, label);
    self->version = version;
    self->scheme_id = scheme_id;
    memcpy(self->nonce_prefix, prefix.buf, (size_t)prefix.len);
    self->prefix_len = (int)prefix.len;
    self->nonce_len = nonce_len;
    memcpy(self->aad_suffix, suffix.buf, (size_t)suffix.len);
    self->suffix_len = (int)suffix.len;
    self->next_seq = (uint64_t)first_seq;
    self->exhausted = exhausted;
    self->has_highest = 0;
    self->highest = self->bitmap = 0;
    result = 0;
done:
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&suffix);
    return result;
}

static void Framing_dealloc(FramingObject *self) {
    OPENSSL_cleanse(self->nonce_prefix, sizeof self->nonce_prefix);
    Py_XDECREF(self->aead);
    Py_XDECREF(self->label);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* nonce = prefix || zeros || seq (big-endian); aad = header || suffix */
static void frame_inputs(FramingObject *self, const unsigned char *header, uint64_t seq,
                         unsigned char *nonce, unsigned char *aad) {
    memcpy(nonce, self->nonce_prefix, (size_t)self->prefix_len);
    memset(nonce + self->prefix_len, 0, (size_t)(self->nonce_len - self->prefix_len));
    store_be64(nonce + self->nonce_len - SEQ_BYTES, seq);
    memcpy(aad, header, HEADER_BYTES);
    memcpy(aad + HEADER_BYTES, self->aad_suffix, (size_t)self->suffix_len);
}

static PyObject *Framing_seal(FramingObject *self, PyObject *plaintext) {
    Py_buffer in;
    unsigned char nonce[MAX_NONCE], aad[HEADER_BYTES + MAX_AAD_SUFFIX];
    PyObject *out = NULL;
    if (PyObject_GetBuffer(plaintext, &in, PyBUF_SIMPLE) < 0) return NULL;
    if (self->exhausted) {
        PyErr_Format(NonceExhaustedError,
                     "%U: sequence counter exhausted after 2**64 messages; refusing to reuse "
                     "a nonce (start a new key exchange)",
                     self->label);
        goto done;
    }
    if (!lengths_fit(0, in.len)) goto done;
    uint64_t seq = self->next_seq;
    /* Advance before encrypting: even if the cipher step fails, this seq is burnt. */
    if (seq == UINT64_MAX)
        self->exhausted = 1;
    else
        self->next_seq = seq + 1;
    out = PyBytes_FromStringAndSize(NULL, HEADER_BYTES + in.len + self->aead->tag_len);
    if (out == NULL) goto done;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    p[0] = self->version;
    p[1] = self->scheme_id;
    store_be64(p + 2, seq);
    frame_inputs(self, p, seq, nonce, aad);
    if (!aead_encrypt(self->aead, nonce, self->nonce_len, aad, HEADER_BYTES + self->suffix_len,
                      in.buf, in.len, p + HEADER_BYTES))
        Py_CLEAR(out);
done:
    PyBuffer_Release(&in);
    return out;
}

static void raise_replay(FramingObject *self, uint64_t seq, const char *reason) {
    /* The texts of base.py's ReplayWindow.check, word for word. */
    PyObject *message =
        strcmp(reason, "too-old") == 0
            ? PyUnicode_FromFormat("sequence %llu is older than the replay window "
                                   "(highest %llu)",
                                   (unsigned long long)seq, (unsigned long long)self->highest)
            : PyUnicode_FromFormat("sequence %llu was already accepted",
                                   (unsigned long long)seq);
    PyObject *args = message ? PyTuple_Pack(1, message) : NULL;
    PyObject *kwargs = args ? Py_BuildValue("{ss}", "reason", reason) : NULL;
    PyObject *error = kwargs ? PyObject_Call(ReplayError, args, kwargs) : NULL;
    if (error != NULL) PyErr_SetObject(ReplayError, error);
    Py_XDECREF(error);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(message);
}

/* Raise ReplayError and return 0 when seq must be refused; change nothing. */
static int window_check(FramingObject *self, uint64_t seq) {
    if (!self->has_highest || seq > self->highest) return 1;
    uint64_t offset = self->highest - seq;
    if (offset >= 64) {
        raise_replay(self, seq, "too-old");
        return 0;
    }
    if ((self->bitmap >> offset) & 1) {
        raise_replay(self, seq, "duplicate");
        return 0;
    }
    return 1;
}

/* Only after authentication, so a forged message never moves the window. */
static void window_accept(FramingObject *self, uint64_t seq) {
    if (!self->has_highest) {
        self->has_highest = 1;
        self->highest = seq;
        self->bitmap = 1;
    } else if (seq > self->highest) {
        uint64_t shift = seq - self->highest;
        self->bitmap = shift < 64 ? (self->bitmap << shift) | 1 : 1;
        self->highest = seq;
    } else {
        self->bitmap |= (uint64_t)1 << (self->highest - seq);
    }
}

/* The InvalidTag just raised becomes AuthenticationError("<scheme>: authentication failed")
 * with InvalidTag as its cause, as base.py's mapping does. */
static void raise_authentication_failure(FramingObject *self) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    PyErr_Format(AuthenticationError, "%U: authentication failed", self->label);
    if (value != NULL) {
        PyObject *type2, *value2, *traceback2;
        PyErr_Fetch(&type2, &value2, &traceback2);
        PyErr_NormalizeException(&type2, &value2, &traceback2);
        if (traceback != NULL) PyException_SetTraceback(value, traceback);
        PyException_SetCause(value2, value); /* steals the reference to value */
        Py_INCREF(value);
        PyException_SetContext(value2, value);
        PyErr_Restore(type2, value2, traceback2);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
}

/* The whole receive path of base.py's Opener for counter-nonce AEADs: length, version and
 * scheme id, the replay window (checked before any cryptography), authentication and
 * decryption, then the window moves. */
static PyObject *Framing_open(FramingObject *self, PyObject *message) {
    Py_buffer in;
    unsigned char nonce[MAX_NONCE], aad[HEADER_BYTES + MAX_AAD_SUFFIX];
    PyObject *plaintext = NULL, *result = NULL;
    if (PyObject_GetBuffer(message, &in, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyErr_Format(MalformedMessageError, "%U: message is not bytes", self->label);
        return NULL;
    }
    const unsigned char *p = in.buf;
    Py_ssize_t minimum = HEADER_BYTES + self->aead->tag_len;
    if (in.len < minimum) {
        PyErr_Format(MalformedMessageError,
                     "%U: message of %zd bytes is shorter than the minimum %zd", self->label,
                     in.len, minimum);
        goto done;
    }
    /* Another version or scheme id: not made by this scheme's sealer with these keys, the
     * same verdict as a wrong key (docs/reliability.md #13). */
    if (p[0] != self->version) {
        PyErr_Format(AuthenticationError, "%U: wire version %d is not %d", self->label, p[0],
                     self->version);
        goto done;
    }
    if (p[1] != self->scheme_id) {
        PyErr_Format(AuthenticationError, "%U: scheme id %d is not %d", self->label, p[1],
                     self->scheme_id);
        goto done;
    }
    Py_ssize_t body = in.len - HEADER_BYTES;
    if (!lengths_fit(0, body)) goto done;
    uint64_t seq = load_be64(p + 2);
    if (!window_check(self, seq)) goto done;
    frame_inputs(self, p, seq, nonce, aad);
    plaintext = PyBytes_FromStringAndSize(NULL, body - self->aead->tag_len);
    if (plaintext == NULL) goto done;
    if (!aead_decrypt(self->aead, nonce, self->nonce_len, aad, HEADER_BYTES + self->suffix_len,
                      p + HEADER_BYTES, body, (unsigned char *)PyBytes_AS_STRING(plaintext))) {
        if (PyErr_ExceptionMatches(InvalidTag)) raise_authentication_failure(self);
        goto done;
    }
    window_accept(self, seq);
    /* OpenedMessage(plaintext, seq) as tuple.__new__(OpenedMessage, (plaintext, seq)): the
     * named tuple's own __new__ is a Python function, ~0.1 us per message. */
    PyObject *seq_object = PyLong_FromUnsignedLongLong(seq);
    PyObject *fields = seq_object ? PyTuple_Pack(2, plaintext, seq_object) : NULL;
    PyObject *args = fields ? PyTuple_Pack(1, fields) : NULL;
    if (args != NULL) result = PyTuple_Type.tp_new((PyTypeObject *)OpenedMessage, args, NULL);
    Py_XDECREF(args);
    Py_XDECREF(fields);
    Py_XDECREF(seq_object);
done:
    Py_XDECREF(plaintext);
    PyBuffer_Release(&in);
    return result;
}

static PyObject *Framing_get_window(FramingObject *self, void *closure) {
    if (!self->has_highest) Py_RETURN_NONE;
    return Py_BuildValue("(KK)", (unsigned long long)self->highest,
                         (unsigned long long)self->bitmap);
}

static PyObject *Framing_get_next_seq(FramingObject *self, void *closure) {
    if (self->exhausted) {
        /* 2**64: what the Python sealer reports once every sequence number is used */
        PyObject *max = PyLong_FromUnsignedLongLong(UINT64_MAX), *one = PyLong_FromLong(1);
        PyObject *result = (max && one) ? PyNumber_Add(max, one) : NULL;
        Py_XDECREF(max);
        Py_XDECREF(one);
        return result;
    }
    return PyLong_FromUnsignedLongLong(self->next_seq);
}

static PyMethodDef Framing_methods[] = {
    {"seal", (PyCFunction)Framing_seal, METH_O,
     "seal(plaintext) -> version | scheme_id | seq | ciphertext | tag"},
    {"open", (PyCFunction)Framing_open, METH_O,
     "open(message) -> OpenedMessage; raises AuthenticationError, MalformedMessageError or "
     "ReplayError"},
    {NULL},
};

static PyGetSetDef Framing_getset[] = {
    {"next_seq", (getter)Framing_get_next_seq, NULL, "sequence number of the next seal", NULL},
    {"window", (getter)Framing_get_window, NULL,
     "the replay window as (highest, bitmap), or None before the first accepted message", NULL},
    {NULL},
};

static PyTypeObject FramingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "iotsecbench.security.schemes._evp.Framing",
    .tp_basicsize = sizeof(FramingObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Wire framing of one direction over an Aead (counter nonces, header as AAD).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Framing_init,
    .tp_dealloc = (destructor)Framing_dealloc,
    .tp_methods = Framing_methods,
    .tp_getset = Framing_getset,
};

/* ---- module ----------------------------------------------------------------------------- */

static PyObject *openssl_version(PyObject *module, PyObject *unused) {
    return PyUnicode_FromString(OpenSSL_version(OPENSSL_VERSION));
}

static PyObject *configure(PyObject *module, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"nonce_exhausted", "authentication", "malformed", "replay",
                             "opened", NULL};
    PyObject *classes[5];
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!O!O!", kwlist, &PyType_Type,
                                     &classes[0], &PyType_Type, &classes[1], &PyType_Type,
                                     &classes[2], &PyType_Type, &classes[3], &PyType_Type,
                                     &classes[4]))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)classes[4], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "opened must be a tuple subclass (a NamedTuple)");
        return NULL;
    }
    PyObject **slots[5] = {&NonceExhaustedError, &AuthenticationError, &MalformedMessageError,
                           &ReplayError, &OpenedMessage};
    for (int i = 0; i < 5; i++) {
        Py_INCREF(classes[i]);
        Py_XSETREF(*slots[i], classes[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "configure(nonce_exhausted, authentication, malformed, replay, opened): base.py's classes"},
    {"openssl_version", openssl_version, METH_NOARGS,
     "Version text of the libcrypto this extension runs (not the one it was built against)."},
    {NULL},
};

static struct PyModuleDef evp_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_evp",
    .m_doc = "OpenSSL EVP AEADs with iotsecbench's wire framing in C (see the source's header).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__evp(void) {
    PyObject *exceptions = PyImport_ImportModule("cryptography.exceptions");
    if (exceptions == NULL) return NULL;
    InvalidTag = PyObject_GetAttrString(exceptions, "InvalidTag");
    Py_DECREF(exceptions);
    if (InvalidTag == NULL) return NULL;
    if (PyType_Ready(&AeadType) < 0 || PyType_Ready(&FramingType) < 0) return NULL;
    PyObject *module = PyModule_Create(&evp_module);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "Aead", (PyObject *)&AeadType) < 0 ||
        PyModule_AddObjectRef(module, "Framing", (PyObject *)&FramingType) < 0 ||
        PyModule_AddObjectRef(module, "InvalidTag", InvalidTag) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
