/* The device build's lightweight payload ciphers (docs/wire-format.md; the payload-schemes
 * study's): Ascon-128 v1.2, Salsa20 + keyed BLAKE2b, SPECK128 and SIMON128 in CTR mode on
 * iotsecbench's C (security/schemes/lwc), AES-128-CTR on tiny-AES-c (the C the host's
 * tinyaes binding runs, fetched from PyPI: vmcu/sources.py), AES-EAX composed here on the
 * stack's AES (crypto.h). scheme.c frames them like its other ciphers; only the firmware's
 * mbedtls-scheme build (IOTSB_DEVICE_SCHEMES) links crypto_lwc.c, the native agent's do not. */
#ifndef IOTSB_CRYPTO_LWC_H
#define IOTSB_CRYPTO_LWC_H

#include <stddef.h>
#include <stdint.h>

enum light {
    LIGHT_NONE,             /* the stack's cipher (crypto.h) */
    LIGHT_EAX,              /* AES-EAX (Bellare, Rogaway, Wagner 2004), 16-byte nonce and tag */
    LIGHT_ASCON128V12,      /* 16-byte nonce and tag */
    LIGHT_SALSA20_BLAKE2B,  /* nonce = seq (8), tag BLAKE2b-256(mac key; aad || c) */
    LIGHT_SPECK,            /* CTR only: scheme.c adds the HMAC */
    LIGHT_SIMON,
    LIGHT_TINYAES,          /* AES-128 only: tiny-AES-c fixes the key size when compiled */
};

/* One direction's cipher key, scheduled once (NULL: a wrong length or no memory). */
struct light_key;
struct light_key *light_key_new(enum light cipher, const uint8_t *key, size_t key_len);
void light_key_free(struct light_key *key);
/* The authenticated ciphers (EAX, Ascon, Salsa20 + BLAKE2b): out = ciphertext (len) || tag;
 * mac_key: the direction's 32-byte MAC key (BLAKE2b's; the others ignore it). Open takes
 * ciphertext (len) || tag and returns 0 with the plaintext in out, or -1 with nothing
 * decrypted when the tag does not verify. */
int light_seal(struct light_key *key, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
               size_t aad_len, const uint8_t mac_key[32], const uint8_t *in, size_t len,
               uint8_t *out);
int light_open(struct light_key *key, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad,
               size_t aad_len, const uint8_t mac_key[32], const uint8_t *in, size_t len,
               uint8_t *out);
/* SPECK / SIMON / tiny-AES-c in CTR mode from the 16-byte counter block (the whole block counts). */
int light_ctr(struct light_key *key, const uint8_t counter[16], const uint8_t *in, uint8_t *out,
              size_t len);

#endif
