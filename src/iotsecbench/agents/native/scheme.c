/* Payload schemes in C: see scheme.h. The layouts, labels and rejection rules are those of
 * docs/wire-format.md; the tests open what this seals with the Python schemes and the other
 * way round (tests/integration/test_native_schemes.py). */
#include "scheme.h"

#include "agent.h"
#include "crypto.h"
#include "crypto_kem.h" /* ML-KEM and crypto_lwc.h's ciphers are linked only in the device */
#include "crypto_lwc.h" /* build (IOTSB_DEVICE_SCHEMES) */
#include "heap.h"
#include "stack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_VERSION 1
#define SEQ_BYTES 8
#define SESSION_ID_BYTES 8
#define SESSION_NONCE_BYTES 16
#define CONFIRM_BYTES 32
#define PSK_NONCE_BYTES 16
#define PSK_MIN_BYTES 16
#define WINDOW 64 /* RFC 4303 §3.4.3 */

enum layout { AEAD, CTR_HMAC, CBC_HMAC, CBC_NO_MAC };

struct cipher {
    const char *name;
    uint8_t id;             /* scheme_id on the wire */
    enum layout layout;
    enum cipher_kind kind;
    size_t key_bytes, prefix_bytes, tag_bytes;
    size_t nonce_bytes; /* AEAD: 0 prefix || seq; 16 prefix || seq in 12 bytes; 8 seq alone */
    enum light light;   /* LIGHT_NONE: the stack's cipher (kind), else crypto_lwc.c's */
};

/* The ciphers of docs/wire-format.md a device stack provides (security/tls/stacks.py lists
 * the same names for the runner's refusals). */
static const struct cipher CIPHERS[] = {
    {"aes128-cbc", 1, CBC_NO_MAC, CIPHER_CBC, 16, 4, 0, 0, LIGHT_NONE},
    {"aes128-gcm", 2, AEAD, CIPHER_GCM, 16, 4, 16, 0, LIGHT_NONE},
    {"aes256-gcm", 3, AEAD, CIPHER_GCM, 32, 4, 16, 0, LIGHT_NONE},
    {"aes128-ccm8", 4, AEAD, CIPHER_CCM, 16, 3, 8, 0, LIGHT_NONE},
    {"aes256-ccm8", 5, AEAD, CIPHER_CCM, 32, 3, 8, 0, LIGHT_NONE},
    {"aes128-ctr-hmac", 8, CTR_HMAC, CIPHER_CTR, 16, 4, 32, 0, LIGHT_NONE},
    {"aes256-ctr-hmac", 9, CTR_HMAC, CIPHER_CTR, 32, 4, 32, 0, LIGHT_NONE},
    {"aes128-cbc-hmac", 10, CBC_HMAC, CIPHER_CBC, 16, 4, 32, 0, LIGHT_NONE},
    {"aes256-cbc-hmac", 11, CBC_HMAC, CIPHER_CBC, 32, 4, 32, 0, LIGHT_NONE},
    {"chacha20-poly1305", 13, AEAD, CIPHER_CHACHAPOLY, 32, 4, 16, 0, LIGHT_NONE},
#ifdef IOTSB_DEVICE_SCHEMES
    /* The device's lightweight ciphers (crypto_lwc.h; vmcu.client.LIGHTWEIGHT_CIPHERS lists the
     * same names). Salsa20 + BLAKE2b frames as an AEAD whose nonce is seq and tag 32 bytes. */
    {"aes128-eax", 6, AEAD, CIPHER_CTR, 16, 4, 16, 16, LIGHT_EAX},
    {"aes256-eax", 7, AEAD, CIPHER_CTR, 32, 4, 16, 16, LIGHT_EAX},
    {"tinyaes128-ctr-hmac", 12, CTR_HMAC, CIPHER_CTR, 16, 4, 32, 0, LIGHT_TINYAES},
    {"salsa20-128-blake2b", 16, AEAD, CIPHER_CTR, 16, 4, 32, SEQ_BYTES, LIGHT_SALSA20_BLAKE2B},
    {"salsa20-256-blake2b", 17, AEAD, CIPHER_CTR, 32, 4, 32, SEQ_BYTES, LIGHT_SALSA20_BLAKE2B},
    {"ascon128v12", 18, AEAD, CIPHER_CTR, 16, 4, 16, 16, LIGHT_ASCON128V12},
    {"speck128-128-ctr-hmac", 20, CTR_HMAC, CIPHER_CTR, 16, 4, 32, 0, LIGHT_SPECK},
    {"speck128-256-ctr-hmac", 21, CTR_HMAC, CIPHER_CTR, 32, 4, 32, 0, LIGHT_SPECK},
    {"simon128-128-ctr-hmac", 22, CTR_HMAC, CIPHER_CTR, 16, 4, 32, 0, LIGHT_SIMON},
    {"simon128-256-ctr-hmac", 23, CTR_HMAC, CIPHER_CTR, 32, 4, 32, 0, LIGHT_SIMON},
#endif
};

/* How Z comes about (docs/wire-format.md, "Key establishment"): a pre-shared key; an
 * ephemeral Diffie-Hellman — (EC)DH on P-256 or X25519, and in the device build the block-sizes
 * study's finite-field DH in RFC 7919's ffdhe2048 (Z = g^xy mod p, or its SHA-256: hashed);
 * and, device build only and only its emitter's side (the receiver is the host), an ML-KEM
 * encapsulation, both of these (the X25519MLKEM768 hybrid: R = ek || X25519 key, E = ciphertext
 * || X25519 key, Z = K || X25519 output, in that order), or RSA-OAEP key transport (R the
 * receiver's fresh RSA-2048 modulus, E the emitter's random 32-byte key K encrypted to it,
 * Z = K). vmcu.client's BLOCK_SIZES_KEY_ESTABLISHMENTS and MLKEM_KEY_ESTABLISHMENTS list the
 * device-only names. */
enum dh { DH_NONE, DH_P256, DH_X25519, DH_FFDHE2048 };
static const struct {
    const char *name;
    bool psk;
    enum dh dh;    /* DH_NONE for none */
    bool hashed;   /* Z is the SHA-256 of the DH result (dh-sha256) */
    bool rsa_oaep; /* Z transported to R's RSA modulus */
    unsigned kem;  /* ML-KEM's level (512, 768, 1024), 0 for none */
} AGREEMENTS[] = {
    {"psk", .psk = true},
    {"ecdh-p256", .dh = DH_P256},
    {"x25519", .dh = DH_X25519},
#ifdef IOTSB_DEVICE_SCHEMES
    {"ffdhe2048", .dh = DH_FFDHE2048},
    {"dh-sha256", .dh = DH_FFDHE2048, .hashed = true},
    {"rsa-oaep", .rsa_oaep = true},
    {"mlkem512", .kem = 512},
    {"mlkem768", .kem = 768},
    {"mlkem1024", .kem = 1024},
    {"x25519mlkem768", .dh = DH_X25519, .kem = 768},
#endif
};
#define RSA_TRANSPORTED_BYTES 32 /* K: security/agreements.py RSA_TRANSPORTED_KEY_BYTES */
/* Z's largest: a PSK's 64 bytes; in the device build the ffdhe2048 result before dh-sha256
 * hashes it (256), more than ML-KEM's K and an X25519 output (64) */
#ifdef IOTSB_DEVICE_SCHEMES
#define Z_MAX CRYPTO_MAX_SECRET
_Static_assert(KEM_SHARED_BYTES + 32 <= Z_MAX, "the X25519MLKEM768 hybrid's Z fits");
#else
#define Z_MAX 64
#endif

struct direction {
    const char *label; /* "e2r", "r2e" */
    struct crypto_key *key;
    struct light_key *light; /* in place of key for a lightweight cipher */
    uint8_t mac_key[32], prefix[4], session_id[SESSION_ID_BYTES];
    uint64_t next_seq;
    bool sequence_spent; /* 2^64 messages sealed */
    bool seen_any;       /* replay window: highest and the bitmap below it */
    uint64_t highest, bitmap;
};

static struct {
    char name[128];
    const struct cipher *cipher;
    size_t agreement; /* index into AGREEMENTS */
    struct direction directions[2]; /* e2r, r2e */
    /* the exchange in progress */
    const uint8_t *psk;
    size_t psk_len;
    struct crypto_dh *dh;
    uint8_t transported[RSA_TRANSPORTED_BYTES]; /* rsa-oaep: the emitter's K until Z takes it */
    uint8_t hello[KX_MAX_MESSAGE], reply[KX_MAX_MESSAGE], confirm_key[32];
    size_t hello_len, reply_len;
    bool log_keys;
    char key_log[2 * 400]; /* two IOTSB_SESSION_KEYS lines */
} s;

#define AGREEMENT (AGREEMENTS[s.agreement])

/* A DH public value's bytes (docs/wire-format.md: P-256 SEC1 uncompressed, X25519 RFC 7748,
 * ffdhe2048 g^x mod p big-endian), and its shared secret's. */
static size_t dh_bytes(enum dh dh)
{
    switch (dh) {
    case DH_P256:
        return 65;
    case DH_X25519:
        return 32;
#ifdef IOTSB_DEVICE_SCHEMES
    case DH_FFDHE2048:
        return FFDHE2048_BYTES;
#endif
    default:
        return 0;
    }
}

static size_t dh_secret_bytes(enum dh dh) { return dh == DH_FFDHE2048 ? dh_bytes(dh) : 32; }

/* A fresh DH key pair, its public value into out. */
static struct crypto_dh *dh_new(uint8_t *out)
{
    size_t len;
    switch (AGREEMENT.dh) {
    case DH_P256:
        return crypto_dh_new(AGREE_P256, out, &len);
    case DH_X25519:
        return crypto_dh_new(AGREE_X25519, out, &len);
#ifdef IOTSB_DEVICE_SCHEMES
    case DH_FFDHE2048:
        return crypto_dh_new(AGREE_FFDHE2048, out, &len);
#endif
    default:
        return NULL;
    }
}

#ifndef IOTSB_DEVICE_SCHEMES /* no ML-KEM in the native agents' builds: every level is none */
size_t kem_public_bytes(unsigned level) { return level * 0; }
size_t kem_ciphertext_bytes(unsigned level) { return level * 0; }
#endif

/* The receiver's contribution R (receiver) or the emitter's E in bytes (docs/wire-format.md):
 * a PSK nonce; RSA-OAEP's modulus or its ciphertext, as long; or ML-KEM's encapsulation key or
 * ciphertext followed by the DH public value (either may be none). */
static size_t contribution_bytes(bool receiver)
{
    if (AGREEMENT.psk)
        return PSK_NONCE_BYTES;
#ifdef IOTSB_DEVICE_SCHEMES
    if (AGREEMENT.rsa_oaep)
        return RSA_MODULUS_BYTES;
#endif
    unsigned kem = AGREEMENT.kem;
    return (receiver ? kem_public_bytes(kem) : kem_ciphertext_bytes(kem)) + dh_bytes(AGREEMENT.dh);
}

static size_t receiver_bytes(void) { return contribution_bytes(true); }
static size_t emitter_bytes(void) { return contribution_bytes(false); }

void scheme_log_keys(bool on) { s.log_keys = on; }
const char *scheme_key_log(void) { return s.key_log; }

static void hex(char *out, const uint8_t *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", bytes[i]);
    out[2 * n] = '\0';
}

/* One direction's IOTSB_SESSION_KEYS line, appended to s.key_log (enc: its cipher key). */
static void log_direction(const struct direction *d, const uint8_t *enc)
{
    char id[2 * SESSION_ID_BYTES + 1], key[65], mac[65], prefix[9];
    hex(id, d->session_id, SESSION_ID_BYTES);
    hex(key, enc, s.cipher->key_bytes);
    hex(mac, d->mac_key, sizeof d->mac_key);
    hex(prefix, d->prefix, s.cipher->prefix_bytes);
    size_t at = strlen(s.key_log);
    snprintf(s.key_log + at, sizeof s.key_log - at,
             "IOTSB_SESSION_KEYS %s %s enc=%s mac=%s nonce_prefix=%s scheme=%s\n", id, d->label,
             key, mac, prefix, s.name);
    memset(key, 0, sizeof key);
}

bool scheme_select(const char *configuration)
{
    const char *name = configuration_scheme(configuration);
    if (name == NULL)
        return false;
    for (size_t a = 0; a < sizeof AGREEMENTS / sizeof AGREEMENTS[0]; a++) {
        size_t n = strlen(AGREEMENTS[a].name);
        if (strncmp(name, AGREEMENTS[a].name, n) != 0 || name[n] != '-')
            continue;
        for (size_t c = 0; c < sizeof CIPHERS / sizeof CIPHERS[0]; c++)
            if (strcmp(name + n + 1, CIPHERS[c].name) == 0 && strlen(name) < sizeof s.name) {
                strcpy(s.name, name);
                s.cipher = &CIPHERS[c];
                s.agreement = a;
                return true;
            }
    }
    die("the native agent does not implement the payload scheme %s", name);
}

const char *scheme_name(void) { return s.name; }
const char *scheme_agreement(void) { return AGREEMENTS[s.agreement].name; }

/* -- key schedule ------------------------------------------------------------------------ */

/* RFC 5869 HKDF-SHA256, extract then expand, length <= 255 * 32. */
static int hkdf(const uint8_t *secret, size_t secret_len, const uint8_t *salt, size_t salt_len,
                const char *info, uint8_t *out, size_t length)
{
    uint8_t prk[32], block[32];
    struct crypto_part extract = {secret, secret_len};
    if (crypto_hmac_sha256(salt, salt_len, &extract, 1, prk) != 0)
        return -1;
    size_t done = 0;
    for (uint8_t i = 1; done < length; i++) {
        struct crypto_part parts[3] = {
            {block, i == 1 ? 0 : 32}, {(const uint8_t *)info, strlen(info)}, {&i, 1}};
        if (crypto_hmac_sha256(prk, 32, parts, 3, block) != 0)
            return -1;
        size_t n = length - done < 32 ? length - done : 32;
        memcpy(out + done, block, n);
        done += n;
    }
    memset(prk, 0, sizeof prk);
    memset(block, 0, sizeof block);
    return 0;
}

/* -- the cipher: the stack's (crypto.h) or, in the device build, a lightweight one -------- */

static int key_new(struct direction *d, const uint8_t *key)
{
#ifdef IOTSB_DEVICE_SCHEMES
    if (s.cipher->light != LIGHT_NONE)
        return (d->light = light_key_new(s.cipher->light, key, s.cipher->key_bytes)) ? 0 : -1;
#endif
    return (d->key = crypto_key_new(s.cipher->kind, key, s.cipher->key_bytes)) ? 0 : -1;
}

/* out = c (len) || tag */
static int aead_seal(struct direction *d, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad_bytes, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out)
{
#ifdef IOTSB_DEVICE_SCHEMES
    if (s.cipher->light != LIGHT_NONE)
        return light_seal(d->light, nonce, nonce_len, aad_bytes, aad_len, d->mac_key, in, len,
                          out);
#endif
    return crypto_aead_seal(d->key, nonce, nonce_len, aad_bytes, aad_len, in, len, out,
                            out + len, s.cipher->tag_bytes);
}

/* in = c (len) || tag */
static int aead_open(struct direction *d, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad_bytes, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out)
{
#ifdef IOTSB_DEVICE_SCHEMES
    if (s.cipher->light != LIGHT_NONE)
        return light_open(d->light, nonce, nonce_len, aad_bytes, aad_len, d->mac_key, in, len,
                          out);
#endif
    return crypto_aead_open(d->key, nonce, nonce_len, aad_bytes, aad_len, in, len, out,
                            in + len, s.cipher->tag_bytes);
}

static int ctr(struct direction *d, const uint8_t counter[16], const uint8_t *in, uint8_t *out,
               size_t len)
{
#ifdef IOTSB_DEVICE_SCHEMES
    if (s.cipher->light != LIGHT_NONE)
        return light_ctr(d->light, counter, in, out, len);
#endif
    return crypto_aes_ctr(d->key, counter, in, out, len);
}

/* Every key of the session from Z and the HKDF salt (docs/wire-format.md, "Key
 * establishment"): the session id, per direction the cipher key, MAC key and nonce prefix, and
 * the confirmation key. */
static int derive_keys(const uint8_t *z, size_t z_len, const uint8_t *salt, size_t salt_len)
{
    uint8_t key[32];
    char info[200];
#define DERIVE(direction, purpose, out, length)                                                \
    (snprintf(info, sizeof info, "iotsb/v1/%s/%s/%s", s.name, direction, purpose),             \
     hkdf(z, z_len, salt, salt_len, info, out, length))
    uint8_t session_id[SESSION_ID_BYTES];
    if (DERIVE("session", "id", session_id, sizeof session_id))
        return -1;
    memset(s.key_log, 0, sizeof s.key_log);
    for (int i = 0; i < 2; i++) {
        struct direction *d = &s.directions[i];
        crypto_key_free(d->key);
#ifdef IOTSB_DEVICE_SCHEMES
        light_key_free(d->light);
#endif
        memset(d, 0, sizeof *d);
        d->label = i == 0 ? "e2r" : "r2e";
        memcpy(d->session_id, session_id, sizeof session_id);
        if (DERIVE(d->label, "enc", key, s.cipher->key_bytes) ||
            DERIVE(d->label, "mac", d->mac_key, sizeof d->mac_key) ||
            DERIVE(d->label, "nonce", d->prefix, s.cipher->prefix_bytes))
            return -1;
        if (s.log_keys)
            log_direction(d, key);
        int made = key_new(d, key);
        memset(key, 0, sizeof key);
        if (made != 0)
            return -1;
    }
    return DERIVE("r2e", "confirm", s.confirm_key, sizeof s.confirm_key);
#undef DERIVE
}

/* The session's keys from Z and the two contributions: salt = E || R || session nonce. */
static int derive_session(const uint8_t *z, size_t z_len, const uint8_t *emitter_public,
                          const uint8_t *receiver_public, const uint8_t *session_nonce)
{
    size_t e_len = emitter_bytes(), r_len = receiver_bytes();
    size_t salt_len = e_len + r_len + SESSION_NONCE_BYTES;
    /* on the heap: an ML-KEM-1024 salt is 3 KB, more than a device's stack should hold */
    uint8_t *salt = iotsb_tls_malloc(salt_len);
    if (salt == NULL)
        return -1;
    memcpy(salt, emitter_public, e_len);
    memcpy(salt + e_len, receiver_public, r_len);
    memcpy(salt + e_len + r_len, session_nonce, SESSION_NONCE_BYTES);
    int rc = derive_keys(z, z_len, salt, salt_len);
    memset(salt, 0, salt_len);
    iotsb_tls_free(salt);
    return rc;
}

/* Z but its ML-KEM part, with the peer's public value (z holds Z_MAX bytes): the PSK, the
 * ECDH / X25519 / ffdhe2048 result (dh-sha256: its SHA-256), or rsa-oaep's transported K (the
 * emitter chose it: contribute). An ML-KEM or RSA-OAEP receiver is the host's:
 * kx_receiver_hello refuses them. */
static int shared_secret(const uint8_t *peer, uint8_t *z, size_t *z_len)
{
    if (AGREEMENT.psk) {
        memcpy(z, s.psk, s.psk_len);
        *z_len = s.psk_len;
        return 0;
    }
#ifdef IOTSB_DEVICE_SCHEMES
    if (AGREEMENT.rsa_oaep) {
        memcpy(z, s.transported, sizeof s.transported);
        memset(s.transported, 0, sizeof s.transported);
        *z_len = sizeof s.transported;
        return 0;
    }
#endif
    *z_len = dh_secret_bytes(AGREEMENT.dh);
    if (s.dh == NULL || crypto_dh_derive(s.dh, peer, dh_bytes(AGREEMENT.dh), z))
        return -1; /* the key stays: a valid message may still come, as in Python */
    crypto_dh_free(s.dh); /* the ephemeral key is no longer needed (forward secrecy) */
    s.dh = NULL;
#ifdef IOTSB_DEVICE_SCHEMES
    if (AGREEMENT.hashed) { /* the study's derivation: SHA-256 of g^xy mod p */
        uint8_t digest[32];
        int rc = crypto_sha256(z, *z_len, digest);
        memcpy(z, digest, sizeof digest);
        memset(digest, 0, sizeof digest);
        *z_len = sizeof digest;
        return rc;
    }
#endif
    return 0;
}

/* R or E but its ML-KEM part: a fresh (EC)DH key pair (its public value into out), or a PSK
 * nonce; rsa-oaep's E (the emitter's only: the hello's modulus is in s.hello by then) is a fresh
 * K encrypted to the receiver's modulus. */
static int contribute(uint8_t *out)
{
    if (AGREEMENT.psk)
        return stack_random(out, PSK_NONCE_BYTES);
#ifdef IOTSB_DEVICE_SCHEMES
    if (AGREEMENT.rsa_oaep) {
        if (s.hello_len != 1 + RSA_MODULUS_BYTES ||
            stack_random(s.transported, sizeof s.transported) != 0)
            return -1;
        return crypto_rsa_oaep_encrypt(s.hello + 1, s.transported, RSA_TRANSPORTED_BYTES, out);
    }
#endif
    s.dh = dh_new(out);
    return s.dh ? 0 : -1;
}

enum agreed { AGREED = 0, AGREE_FAILED, AGREE_INVALID_PEER };

/* The emitter's E and Z for the receiver's R: the ML-KEM part first (the ciphertext to R's
 * encapsulation key, Z's shared key), then the (EC)DH part, the PSK or RSA-OAEP's K. */
static enum agreed emitter_agree(const uint8_t *receiver, uint8_t *emitter, uint8_t *z,
                                 size_t *z_len)
{
    size_t kem_r = kem_public_bytes(AGREEMENT.kem), kem_e = kem_ciphertext_bytes(AGREEMENT.kem);
    size_t kem_z = 0;
#ifdef IOTSB_DEVICE_SCHEMES
    if (AGREEMENT.kem != 0) {
        uint8_t m[KEM_SEED_BYTES];
        if (stack_random(m, sizeof m) != 0)
            return AGREE_FAILED;
        int rc = kem_encapsulate(AGREEMENT.kem, receiver, kem_r, m, emitter, z);
        memset(m, 0, sizeof m);
        if (rc != 0)
            return AGREE_INVALID_PEER;
        kem_z = KEM_SHARED_BYTES;
        if (AGREEMENT.dh == DH_NONE) {
            *z_len = kem_z;
            return AGREED;
        }
    }
#endif
    if (contribute(emitter + kem_e) != 0) /* rsa-oaep: the receiver's modulus is refused here */
        return AGREEMENT.rsa_oaep ? AGREE_INVALID_PEER : AGREE_FAILED;
    if (shared_secret(receiver + kem_r, z + kem_z, z_len) != 0)
        return AGREE_INVALID_PEER;
    *z_len += kem_z;
    return AGREED;
}

static bool psk_ok(const uint8_t *psk, size_t psk_len)
{
    if (!AGREEMENT.psk)
        return true;
    s.psk = psk;
    s.psk_len = psk_len;
    return psk != NULL && psk_len >= PSK_MIN_BYTES && psk_len <= 64;
}

static int confirmation(uint8_t tag[CONFIRM_BYTES])
{
    struct crypto_part transcript[2] = {{s.hello, s.hello_len}, {s.reply, s.reply_len}};
    return crypto_hmac_sha256(s.confirm_key, sizeof s.confirm_key, transcript, 2, tag);
}

static bool equal(const uint8_t *a, const uint8_t *b, size_t n) /* constant time */
{
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

size_t kx_receiver_hello(const uint8_t *psk, size_t psk_len, uint8_t *out)
{
    if (AGREEMENT.kem != 0 || AGREEMENT.rsa_oaep || !psk_ok(psk, psk_len) ||
        contribute(s.hello + 1) != 0)
        return 0; /* no ML-KEM or RSA-OAEP receiver in C (it would make an RSA key per session):
                     the device is the emitter */
    s.hello[0] = WIRE_VERSION;
    s.hello_len = 1 + receiver_bytes();
    memcpy(out, s.hello, s.hello_len);
    return s.hello_len;
}

size_t kx_receiver_answer(const uint8_t *message, size_t len, uint8_t *ready,
                          struct direction **e2r, const char **why)
{
    size_t public_bytes = emitter_bytes(); /* = receiver_bytes(): no ML-KEM or RSA receiver */
    if (s.hello_len == 0 || s.reply_len != 0)
        return *why = "unexpected emitter message", 0;
    if (len != 1 + SESSION_NONCE_BYTES + public_bytes || message[0] != WIRE_VERSION)
        return *why = "emitter message of the wrong size or version", 0;
    const uint8_t *emitter_public = message + 1 + SESSION_NONCE_BYTES;
    if (equal(emitter_public, s.hello + 1, public_bytes))
        return *why = "emitter public key equals the receiver's (reflection)", 0;
    uint8_t z[Z_MAX];
    size_t z_len;
    if (shared_secret(emitter_public, z, &z_len) != 0)
        return *why = "emitter public key is invalid", 0;
    int rc = derive_session(z, z_len, emitter_public, s.hello + 1, message + 1);
    memset(z, 0, sizeof z);
    memcpy(s.reply, message, len);
    s.reply_len = len;
    ready[0] = WIRE_VERSION;
    if (rc != 0 || confirmation(ready + 1) != 0)
        return *why = "key derivation failed", 0;
    *e2r = &s.directions[0];
    return 1 + CONFIRM_BYTES;
}

size_t kx_emitter_answer(const uint8_t *psk, size_t psk_len, const uint8_t *hello, size_t len,
                         uint8_t *reply, const char **why)
{
    if (!psk_ok(psk, psk_len))
        return *why = "a psk-* scheme needs a pre-shared key of at least 16 bytes", 0;
    if (len != 1 + receiver_bytes() || hello[0] != WIRE_VERSION)
        return *why = "receiver hello of the wrong size or version", 0;
    memcpy(s.hello, hello, len);
    s.hello_len = len;
    s.reply[0] = WIRE_VERSION;
    uint8_t *nonce = s.reply + 1, *emitter_public = s.reply + 1 + SESSION_NONCE_BYTES;
    uint8_t z[Z_MAX];
    size_t z_len;
    enum agreed agreed = emitter_agree(hello + 1, emitter_public, z, &z_len);
    if (agreed != AGREED) {
        memset(z, 0, sizeof z);
        return *why = agreed == AGREE_FAILED ? "key generation failed"
                                             : "receiver public key is invalid",
               0;
    }
    int rc = stack_random(nonce, SESSION_NONCE_BYTES);
    if (rc == 0)
        rc = derive_session(z, z_len, emitter_public, hello + 1, nonce);
    memset(z, 0, sizeof z);
    if (rc != 0)
        return *why = "key derivation failed", 0;
    s.reply_len = 1 + SESSION_NONCE_BYTES + emitter_bytes();
    memcpy(reply, s.reply, s.reply_len);
    return s.reply_len;
}

bool kx_emitter_confirm(const uint8_t *ready, size_t len, struct direction **e2r,
                        const char **why)
{
    uint8_t tag[CONFIRM_BYTES];
    if (s.reply_len == 0)
        return *why = "unexpected key confirmation", false;
    if (len != 1 + CONFIRM_BYTES || ready[0] != WIRE_VERSION)
        return *why = "key confirmation of the wrong size or version", false;
    if (confirmation(tag) != 0 || !equal(tag, ready + 1, CONFIRM_BYTES))
        return *why = "key confirmation does not verify", false;
    *e2r = &s.directions[0]; /* released only now: the receiver derived the same keys */
    return true;
}

struct direction *kx_emitter_reverse(void) { return &s.directions[1]; }

/* -- framing ------------------------------------------------------------------------------ */

static size_t header_bytes(void) { return s.cipher->layout == CBC_NO_MAC ? 2 : 2 + SEQ_BYTES; }

/* aad = header || session_id || direction (the last two not sent) */
static size_t aad(const struct direction *d, const uint8_t *header, uint8_t *out)
{
    size_t n = header_bytes();
    memcpy(out, header, n);
    memcpy(out + n, d->session_id, SESSION_ID_BYTES);
    memcpy(out + n + SESSION_ID_BYTES, d->label, 3);
    return n + SESSION_ID_BYTES + 3;
}

/* nonce_prefix || seq (AEAD nonce; the CTR block adds four zero bytes), seq in the bytes the
 * cipher's nonce leaves (big-endian: zeros first), or seq alone (nonce_bytes SEQ_BYTES). */
static size_t counter_nonce(const struct direction *d, const uint8_t *seq, uint8_t *out)
{
    size_t prefix = s.cipher->prefix_bytes, n = s.cipher->nonce_bytes;
    if (n == SEQ_BYTES) {
        memcpy(out, seq, SEQ_BYTES);
        return SEQ_BYTES;
    }
    if (n == 0)
        n = prefix + SEQ_BYTES;
    memcpy(out, d->prefix, prefix);
    memset(out + prefix, 0, n - prefix - SEQ_BYTES);
    memcpy(out + n - SEQ_BYTES, seq, SEQ_BYTES);
    return n;
}

static int mac(const struct direction *d, const uint8_t *aad_bytes, size_t aad_len,
               const uint8_t *body, size_t body_len, uint8_t out[32])
{
    struct crypto_part parts[2] = {{aad_bytes, aad_len}, {body, body_len}};
    return crypto_hmac_sha256(d->mac_key, sizeof d->mac_key, parts, 2, out);
}

size_t scheme_seal(struct direction *d, const uint8_t *plaintext, size_t len, uint8_t *out)
{
    const struct cipher *c = s.cipher;
    out[0] = WIRE_VERSION;
    out[1] = c->id;
    if (c->layout != CBC_NO_MAC) {
        if (d->sequence_spent)
            return 0; /* 2^64 messages: a new key exchange is needed, never a reused nonce */
        for (int i = 0; i < SEQ_BYTES; i++)
            out[2 + i] = (uint8_t)(d->next_seq >> (56 - 8 * i));
        d->sequence_spent = ++d->next_seq == 0; /* burnt before encrypting */
    }
    size_t h = header_bytes();
    uint8_t additional[2 + SEQ_BYTES + SESSION_ID_BYTES + 3], nonce[16] = {0};
    size_t aad_len = aad(d, out, additional);
    switch (c->layout) {
    case AEAD: {
        size_t nonce_len = counter_nonce(d, out + 2, nonce);
        if (aead_seal(d, nonce, nonce_len, additional, aad_len, plaintext, len, out + h) != 0)
            return 0;
        return h + len + c->tag_bytes;
    }
    case CTR_HMAC:
        counter_nonce(d, out + 2, nonce); /* || 0 (4): the rest of the block */
        if (ctr(d, nonce, plaintext, out + h, len) != 0 ||
            mac(d, additional, aad_len, out + h, len, out + h + len) != 0)
            return 0;
        return h + len + 32;
    default: { /* CBC: random IV, PKCS#7 padding, then (CBC_HMAC) the MAC over IV || c */
        uint8_t *iv = out + h, *body = iv + 16;
        size_t pad = 16 - len % 16, padded = len + pad;
        if (stack_random(iv, 16) != 0)
            return 0;
        memcpy(body, plaintext, len);
        memset(body + len, (int)pad, pad);
        if (crypto_aes_cbc(d->key, true, iv, body, body, padded) != 0)
            return 0;
        if (c->layout == CBC_NO_MAC)
            return h + 16 + padded;
        if (mac(d, additional, aad_len, iv, 16 + padded, body + padded) != 0)
            return 0;
        return h + 16 + padded + 32;
    }
    }
}

static enum open_result window_check(const struct direction *d, uint64_t seq)
{
    if (!d->seen_any || seq > d->highest)
        return OPEN_OK;
    uint64_t offset = d->highest - seq;
    if (offset >= WINDOW)
        return OPEN_TOO_OLD;
    return (d->bitmap >> offset) & 1 ? OPEN_DUPLICATE : OPEN_OK;
}

static void window_accept(struct direction *d, uint64_t seq)
{
    if (!d->seen_any) {
        d->seen_any = true;
        d->highest = seq;
        d->bitmap = 1;
    } else if (seq > d->highest) {
        uint64_t shift = seq - d->highest;
        d->bitmap = shift < WINDOW ? d->bitmap << shift | 1 : 1;
        d->highest = seq;
    } else {
        d->bitmap |= (uint64_t)1 << (d->highest - seq);
    }
}

enum open_result scheme_open(struct direction *d, const uint8_t *message, size_t len,
                             uint8_t *out, size_t *out_len)
{
    const struct cipher *c = s.cipher;
    size_t h = header_bytes();
    size_t explicit = c->layout == CBC_HMAC || c->layout == CBC_NO_MAC ? 16 : 0;
    size_t min_body = c->layout == AEAD ? c->tag_bytes
                      : c->layout == CTR_HMAC ? 32
                      : c->layout == CBC_HMAC ? 16 + 32 : 16;
    if (len < h + explicit + min_body)
        return OPEN_MALFORMED;
    if (message[0] != WIRE_VERSION || message[1] != c->id)
        return OPEN_AUTH; /* not made by this scheme with these keys */
    uint64_t seq = 0;
    if (c->layout != CBC_NO_MAC) {
        for (int i = 0; i < SEQ_BYTES; i++)
            seq = seq << 8 | message[2 + i];
        enum open_result replay = window_check(d, seq);
        if (replay != OPEN_OK)
            return replay; /* cheap rejection before any cryptography */
    }
    uint8_t additional[2 + SEQ_BYTES + SESSION_ID_BYTES + 3], nonce[16] = {0}, tag[32];
    size_t aad_len = aad(d, message, additional);
    const uint8_t *body = message + h + explicit;
    size_t body_len = len - h - explicit;
    switch (c->layout) {
    case AEAD: {
        size_t n = body_len - c->tag_bytes, nonce_len = counter_nonce(d, message + 2, nonce);
        if (aead_open(d, nonce, nonce_len, additional, aad_len, body, n, out) != 0)
            return OPEN_AUTH;
        *out_len = n;
        break;
    }
    case CTR_HMAC: {
        size_t n = body_len - 32;
        if (mac(d, additional, aad_len, body, n, tag) != 0 || !equal(tag, body + n, 32))
            return OPEN_AUTH; /* checked before decrypting */
        counter_nonce(d, message + 2, nonce);
        if (ctr(d, nonce, body, out, n) != 0)
            return OPEN_MALFORMED;
        *out_len = n;
        break;
    }
    default: {
        size_t n = c->layout == CBC_HMAC ? body_len - 32 : body_len;
        if (n % 16 != 0)
            return OPEN_MALFORMED;
        const uint8_t *iv = message + h;
        if (c->layout == CBC_HMAC &&
            (mac(d, additional, aad_len, iv, 16 + n, tag) != 0 || !equal(tag, body + n, 32)))
            return OPEN_AUTH; /* before the padding is looked at: no padding oracle */
        if (crypto_aes_cbc(d->key, false, iv, body, out, n) != 0)
            return OPEN_MALFORMED;
        uint8_t pad = out[n - 1];
        bool padded = pad >= 1 && pad <= 16;
        for (size_t i = 0; padded && i < pad; i++)
            padded = out[n - 1 - i] == pad;
        if (!padded)
            return OPEN_MALFORMED;
        *out_len = n - pad;
    }
    }
    if (c->layout != CBC_NO_MAC)
        window_accept(d, seq); /* only after the tag verified */
    return OPEN_OK;
}
