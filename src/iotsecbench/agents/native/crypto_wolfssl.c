/* The payload schemes' primitives on wolfCrypt, inside the wolfSSL the build links: Debian's
 * 5.5, or 5.9.4 built from registry source (crypto.h). */
#define _DEFAULT_SOURCE /* explicit_bzero */
#include "crypto.h"

#include "heap.h"

#include <string.h>

#include "wolfssl_options.h"
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/hmac.h>
#include <wolfssl/wolfcrypt/random.h>

WC_RNG *stack_rng(void); /* stack_wolfssl.c */

struct crypto_key {
    enum cipher_kind kind;
    Aes encrypt, decrypt;
    uint8_t chacha_key[32]; /* wolfCrypt's ChaCha20-Poly1305 takes the raw key per call */
};

struct crypto_key *crypto_key_new(enum cipher_kind kind, const uint8_t *key, size_t key_len)
{
    struct crypto_key *k = iotsb_tls_calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    k->kind = kind;
    int rc = wc_AesInit(&k->encrypt, NULL, INVALID_DEVID);
    if (rc == 0)
        rc = wc_AesInit(&k->decrypt, NULL, INVALID_DEVID);
    switch (kind) {
    case CIPHER_GCM:
        rc = rc ? rc : wc_AesGcmSetKey(&k->encrypt, key, (word32)key_len);
        break;
    case CIPHER_CCM:
        rc = rc ? rc : wc_AesCcmSetKey(&k->encrypt, key, (word32)key_len);
        break;
    case CIPHER_CHACHAPOLY:
        if (key_len != sizeof k->chacha_key)
            rc = -1;
        else
            memcpy(k->chacha_key, key, key_len);
        break;
    case CIPHER_CTR: /* CTR runs the forward cipher in both directions */
        rc = rc ? rc : wc_AesSetKey(&k->encrypt, key, (word32)key_len, NULL, AES_ENCRYPTION);
        break;
    case CIPHER_CBC:
        rc = rc ? rc : wc_AesSetKey(&k->encrypt, key, (word32)key_len, NULL, AES_ENCRYPTION);
        rc = rc ? rc : wc_AesSetKey(&k->decrypt, key, (word32)key_len, NULL, AES_DECRYPTION);
        break;
    }
    if (rc != 0) {
        crypto_key_free(k);
        return NULL;
    }
    return k;
}

void crypto_key_free(struct crypto_key *k)
{
    if (k == NULL)
        return;
    wc_AesFree(&k->encrypt);
    wc_AesFree(&k->decrypt);
    explicit_bzero(k, sizeof *k);
    iotsb_tls_free(k);
}

int crypto_aead_seal(struct crypto_key *k, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out, uint8_t *tag, size_t tag_len)
{
    int rc = -1;
    switch (k->kind) {
    case CIPHER_GCM:
        rc = wc_AesGcmEncrypt(&k->encrypt, out, in, (word32)len, nonce, (word32)nonce_len, tag,
                              (word32)tag_len, aad, (word32)aad_len);
        break;
    case CIPHER_CCM:
        rc = wc_AesCcmEncrypt(&k->encrypt, out, in, (word32)len, nonce, (word32)nonce_len, tag,
                              (word32)tag_len, aad, (word32)aad_len);
        break;
    case CIPHER_CHACHAPOLY:
        if (nonce_len == CHACHA20_POLY1305_AEAD_IV_SIZE && tag_len == 16)
            rc = wc_ChaCha20Poly1305_Encrypt(k->chacha_key, nonce, aad, (word32)aad_len, in,
                                             (word32)len, out, tag);
        break;
    default:
        break;
    }
    return rc == 0 ? 0 : -1;
}

int crypto_aead_open(struct crypto_key *k, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out, const uint8_t *tag, size_t tag_len)
{
    int rc = -1;
    switch (k->kind) {
    case CIPHER_GCM:
        rc = wc_AesGcmDecrypt(&k->encrypt, out, in, (word32)len, nonce, (word32)nonce_len, tag,
                              (word32)tag_len, aad, (word32)aad_len);
        break;
    case CIPHER_CCM:
        rc = wc_AesCcmDecrypt(&k->encrypt, out, in, (word32)len, nonce, (word32)nonce_len, tag,
                              (word32)tag_len, aad, (word32)aad_len);
        break;
    case CIPHER_CHACHAPOLY:
        if (nonce_len == CHACHA20_POLY1305_AEAD_IV_SIZE && tag_len == 16)
            rc = wc_ChaCha20Poly1305_Decrypt(k->chacha_key, nonce, aad, (word32)aad_len, in,
                                             (word32)len, tag, out);
        break;
    default:
        break;
    }
    if (rc != 0) {
        explicit_bzero(out, len);
        return -1;
    }
    return 0;
}

int crypto_aes_ctr(struct crypto_key *k, const uint8_t counter[16], const uint8_t *in,
                   uint8_t *out, size_t len)
{
    /* A new message starts a new counter: wolfCrypt keeps the counter in the key (reg) and
     * the unused keystream of the last call (left), both reset here. */
    if (wc_AesSetIV(&k->encrypt, counter) != 0)
        return -1;
    k->encrypt.left = 0;
    return wc_AesCtrEncrypt(&k->encrypt, out, in, (word32)len) == 0 ? 0 : -1;
}

int crypto_aes_cbc(struct crypto_key *k, bool encrypt, const uint8_t iv[16], const uint8_t *in,
                   uint8_t *out, size_t len)
{
    Aes *aes = encrypt ? &k->encrypt : &k->decrypt;
    if (wc_AesSetIV(aes, iv) != 0)
        return -1;
    int rc = encrypt ? wc_AesCbcEncrypt(aes, out, in, (word32)len)
                     : wc_AesCbcDecrypt(aes, out, in, (word32)len);
    return rc == 0 ? 0 : -1;
}

int crypto_hmac_sha256(const uint8_t *key, size_t key_len, const struct crypto_part *parts,
                       size_t count, uint8_t out[32])
{
    Hmac hmac;
    int rc = wc_HmacInit(&hmac, NULL, INVALID_DEVID);
    if (rc == 0)
        rc = wc_HmacSetKey(&hmac, WC_SHA256, key, (word32)key_len);
    for (size_t i = 0; rc == 0 && i < count; i++)
        rc = wc_HmacUpdate(&hmac, parts[i].bytes, (word32)parts[i].len);
    if (rc == 0)
        rc = wc_HmacFinal(&hmac, out);
    wc_HmacFree(&hmac);
    return rc == 0 ? 0 : -1;
}

struct crypto_dh {
    enum agreement agreement;
    ecc_key ecc;
    curve25519_key x25519;
};

void crypto_dh_free(struct crypto_dh *dh)
{
    if (dh == NULL)
        return;
    if (dh->agreement == AGREE_P256)
        wc_ecc_free(&dh->ecc);
    else
        wc_curve25519_free(&dh->x25519);
    iotsb_tls_free(dh);
}

struct crypto_dh *crypto_dh_new(enum agreement agreement, uint8_t *public_out, size_t *public_len)
{
    WC_RNG *rng = stack_rng();
    struct crypto_dh *dh = rng ? iotsb_tls_calloc(1, sizeof *dh) : NULL;
    if (dh == NULL)
        return NULL;
    dh->agreement = agreement;
    word32 len = agreement == AGREE_P256 ? 65 : 32;
    int rc;
    if (agreement == AGREE_P256) {
        rc = wc_ecc_init(&dh->ecc);
        rc = rc ? rc : wc_ecc_make_key_ex(rng, 32, &dh->ecc, ECC_SECP256R1);
        rc = rc ? rc : wc_ecc_set_rng(&dh->ecc, rng); /* blinding (ECC_TIMING_RESISTANT) */
        rc = rc ? rc : wc_ecc_export_x963(&dh->ecc, public_out, &len);
    } else {
        rc = wc_curve25519_init(&dh->x25519);
        rc = rc ? rc : wc_curve25519_make_key(rng, 32, &dh->x25519);
        rc = rc ? rc : wc_curve25519_export_public_ex(&dh->x25519, public_out, &len,
                                                      EC25519_LITTLE_ENDIAN);
    }
    *public_len = len;
    if (rc != 0 || len != (agreement == AGREE_P256 ? 65u : 32u)) {
        crypto_dh_free(dh);
        return NULL;
    }
    return dh;
}

int crypto_dh_derive(struct crypto_dh *dh, const uint8_t *peer, size_t peer_len, uint8_t *out)
{
    word32 len = 32;
    int rc;
    if (dh->agreement == AGREE_P256) {
        if (peer_len != 65 || peer[0] != 0x04)
            return -1;
        ecc_key point;
        rc = wc_ecc_init(&point);
        /* import + check_key: on the curve, not the point at infinity, of the group's order */
        rc = rc ? rc : wc_ecc_import_x963_ex(peer, (word32)peer_len, &point, ECC_SECP256R1);
        rc = rc ? rc : wc_ecc_check_key(&point);
        rc = rc ? rc : wc_ecc_shared_secret(&dh->ecc, &point, out, &len);
        wc_ecc_free(&point);
    } else {
        if (peer_len != 32)
            return -1;
        curve25519_key point;
        rc = wc_curve25519_init(&point);
        rc = rc ? rc : wc_curve25519_import_public_ex(peer, 32, &point, EC25519_LITTLE_ENDIAN);
        rc = rc ? rc : wc_curve25519_shared_secret_ex(&dh->x25519, &point, out, &len,
                                                      EC25519_LITTLE_ENDIAN);
        wc_curve25519_free(&point);
    }
    uint8_t any = 0;
    for (size_t i = 0; rc == 0 && i < 32; i++)
        any |= out[i];
    return rc == 0 && len == 32 && any ? 0 : -1; /* all-zero X25519: a low-order peer */
}
