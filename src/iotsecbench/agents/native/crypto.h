/* The primitives the payload schemes take from the build's stack (crypto_mbedtls.c on mbedTLS
 * 2.28, crypto_wolfssl.c on wolfCrypt 5.5): the AEADs, AES in CTR and CBC, HMAC-SHA256 and the
 * two elliptic-curve key agreements — what a device's firmware would call. The framing, the
 * key schedule and the replay window around them are scheme.c's, one for both stacks. */
#ifndef IOTSB_CRYPTO_H
#define IOTSB_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cipher_kind { CIPHER_GCM, CIPHER_CCM, CIPHER_CHACHAPOLY, CIPHER_CTR, CIPHER_CBC };

struct crypto_part { /* one piece of a message a MAC covers */
    const uint8_t *bytes;
    size_t len;
};

/* One direction's cipher key, scheduled once (NULL: the library refused it). */
struct crypto_key;
struct crypto_key *crypto_key_new(enum cipher_kind kind, const uint8_t *key, size_t key_len);
void crypto_key_free(struct crypto_key *key);

/* AEADs (GCM, CCM, ChaCha20-Poly1305): out receives len bytes of ciphertext (or plaintext),
 * tag tag_len bytes. Open returns 0, or -1 when the tag does not verify (out is then wiped). */
int crypto_aead_seal(struct crypto_key *key, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out, uint8_t *tag, size_t tag_len);
int crypto_aead_open(struct crypto_key *key, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out, const uint8_t *tag, size_t tag_len);
/* AES-CTR from the 16-byte counter block (the whole block counts, big-endian: SP 800-38A). */
int crypto_aes_ctr(struct crypto_key *key, const uint8_t counter[16], const uint8_t *in,
                   uint8_t *out, size_t len);
/* AES-CBC over whole blocks (padding is the caller's). */
int crypto_aes_cbc(struct crypto_key *key, bool encrypt, const uint8_t iv[16], const uint8_t *in,
                   uint8_t *out, size_t len);
int crypto_hmac_sha256(const uint8_t *key, size_t key_len, const struct crypto_part *parts,
                       size_t count, uint8_t out[32]);

/* Ephemeral key agreement: a fresh key pair, its public value as docs/wire-format.md lays it
 * out (P-256: SEC1 uncompressed, 65 bytes; X25519: RFC 7748, 32; ffdhe2048: g^x mod p, 256
 * bytes big-endian), then the shared secret into out (P-256: x coordinate; X25519: the
 * function's output; 32 bytes — ffdhe2048: g^xy mod p left-padded to 256 bytes). derive
 * returns -1 for a peer value that is not a valid public key (off the curve, compressed, low
 * order: all-zero; ffdhe2048: outside [2, p-2] or the prime-order subgroup). */
enum agreement {
    AGREE_P256,
    AGREE_X25519,
#ifdef IOTSB_DEVICE_SCHEMES
    AGREE_FFDHE2048, /* the block-sizes study's finite-field DH: the device build's only */
#endif
};
struct crypto_dh;
struct crypto_dh *crypto_dh_new(enum agreement agreement, uint8_t *public_out,
                                size_t *public_len);
int crypto_dh_derive(struct crypto_dh *dh, const uint8_t *peer, size_t peer_len, uint8_t *out);
void crypto_dh_free(struct crypto_dh *dh);

#ifdef IOTSB_DEVICE_SCHEMES
#define FFDHE2048_BYTES 256               /* its p: public values and g^xy mod p */
#define CRYPTO_MAX_SECRET FFDHE2048_BYTES /* the largest shared secret */
#define RSA_MODULUS_BYTES 256             /* rsa-oaep: the receiver's fresh RSA-2048 modulus */
/* SHA-256 of in (dh-sha256's Z = SHA-256(g^xy mod p)). */
int crypto_sha256(const uint8_t *in, size_t len, uint8_t out[32]);
/* RSA-OAEP key transport's emitter side (the block-sizes study's): in encrypted to the
 * receiver's modulus (e = 65537) with OAEP, SHA-256 and MGF1-SHA-256, empty label. -1 for a
 * modulus that is not an odd 2048-bit number, or a library failure. */
int crypto_rsa_oaep_encrypt(const uint8_t modulus[RSA_MODULUS_BYTES], const uint8_t *in,
                            size_t len, uint8_t out[RSA_MODULUS_BYTES]);
#endif

#endif
