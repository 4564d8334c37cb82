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
 * out (P-256: SEC1 uncompressed, 65 bytes; X25519: RFC 7748, 32), then the shared secret
 * (P-256: x coordinate; X25519: the function's output), 32 bytes. derive returns -1 for a peer
 * value that is not a valid public key (off the curve, compressed, low order: all-zero). */
enum agreement { AGREE_P256, AGREE_X25519 };
struct crypto_dh;
struct crypto_dh *crypto_dh_new(enum agreement agreement, uint8_t *public_out,
                                size_t *public_len);
int crypto_dh_derive(struct crypto_dh *dh, const uint8_t *peer, size_t peer_len,
                     uint8_t out[32]);
void crypto_dh_free(struct crypto_dh *dh);

#endif
