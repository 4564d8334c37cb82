/* Lightweight ciphers in plain C99 — our own code from the specifications (issue 19) — with no
 * dependency on Python or the host: the same files build the host's extension (_lightweight.c
 * wraps them) and the virtual microcontroller firmware (src/iotsecbench/vmcu/firmware/).
 *
 * - SPECK128 and SIMON128 (Beaulieu, Shors, Smith, Treatman-Clark, Weeks, Wingers: "The SIMON
 *   and SPECK Families of Lightweight Block Ciphers", 2013), CTR mode: speck_simon.c;
 * - Ascon-AEAD128, NIST SP 800-232 (2025), and Ascon-128 v1.2 (the final-round submission):
 *   ascon.c;
 * - Salsa20/20 (Bernstein 2005), keyed BLAKE2b (RFC 7693) and the `payload-schemes` study's
 *   encrypt-then-MAC of the two: salsa20_blake2b.c;
 * - AES-128/256 (FIPS 197) without tables, branch-free, CTR mode: aes.c.
 *
 * Where each is checked against published vectors: the header of ../_lightweight.c. */
#ifndef IOTSB_LWC_H
#define IOTSB_LWC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint64_t lwc_ror(uint64_t x, unsigned r) { return x >> r | x << (64 - r); }
static inline uint64_t lwc_rol(uint64_t x, unsigned r) { return x << r | x >> (64 - r); }

/* n (0-8) bytes as a little-endian word, and back: SP 800-232, Salsa20 and BLAKE2b read bytes
 * little-endian (the Ascon v1.2 submission: big-endian). */
static inline uint64_t lwc_load_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline void lwc_store_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* -- SPECK128 / SIMON128 (speck_simon.c) ----------------------------------------------------- */
enum { LWC_SPECK = 0, LWC_SIMON = 1 };
#define LWC_MAX_ROUNDS 72
/* A 16- or 32-byte big-endian key (l[m-2] … l[0] || k[0]) to round keys; the number of rounds,
 * or -1 for another length or cipher. */
int lwc_schedule(int cipher, const uint8_t *key, size_t len, uint64_t rk[LWC_MAX_ROUNDS]);
/* One block, (x || y) big-endian, x the high word. */
void lwc_encrypt_block(int cipher, const uint64_t *rk, int rounds, const uint8_t in[16],
                       uint8_t out[16]);
/* in XOR E(counter + i), the 128-bit big-endian counter from initial, mod 2^128. */
void lwc_ctr(int cipher, const uint64_t *rk, int rounds, const uint8_t initial[16],
             const uint8_t *in, uint8_t *out, size_t len);
/* The same for one cipher each, so that a build holding one cipher links only its code (the
 * virtual-MCU firmware, whose sizes are per cipher). */
int lwc_speck_schedule(const uint8_t *key, size_t len, uint64_t rk[LWC_MAX_ROUNDS]);
int lwc_simon_schedule(const uint8_t *key, size_t len, uint64_t rk[LWC_MAX_ROUNDS]);
void lwc_speck_block(const uint64_t *rk, int rounds, const uint8_t in[16], uint8_t out[16]);
void lwc_simon_block(const uint64_t *rk, int rounds, const uint8_t in[16], uint8_t out[16]);
void lwc_speck_ctr(const uint64_t *rk, int rounds, const uint8_t initial[16], const uint8_t *in,
                   uint8_t *out, size_t len);
void lwc_simon_ctr(const uint64_t *rk, int rounds, const uint8_t initial[16], const uint8_t *in,
                   uint8_t *out, size_t len);

/* -- Ascon-AEAD128 (ascon.c) ------------------------------------------------------------------ */
/* out = ciphertext (len bytes); tag 16 bytes. */
void lwc_ascon_aead128_encrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                               size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                               uint8_t tag[16]);
/* 0 and the plaintext in out when tag verifies (constant time), else -1 (out is then garbage
 * the caller must drop). */
int lwc_ascon_aead128_decrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                              size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                              const uint8_t tag[16]);

/* Ascon-128 v1.2, the NIST LWC final-round submission (the payload-schemes study's Ascon;
 * it does not interoperate with SP 800-232's): the same interface. */
void lwc_ascon128v12_encrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                             size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                             uint8_t tag[16]);
int lwc_ascon128v12_decrypt(const uint8_t key[16], const uint8_t nonce[16], const uint8_t *ad,
                            size_t ad_len, const uint8_t *in, uint8_t *out, size_t len,
                            const uint8_t tag[16]);

/* -- Salsa20 and keyed BLAKE2b (salsa20_blake2b.c) -------------------------------------------- */
void lwc_salsa20(const uint8_t *key, size_t key_len, const uint8_t nonce[8], const uint8_t *in,
                 uint8_t *out, size_t len); /* from block 0; key 16 or 32 bytes */
struct lwc_blake2b {
    uint64_t h[8], t;
    uint8_t buffer[128];
    size_t filled, digest_size;
};
void lwc_blake2b_init(struct lwc_blake2b *b, const uint8_t *key, size_t key_len, size_t digest);
void lwc_blake2b_update(struct lwc_blake2b *b, const uint8_t *data, size_t len);
void lwc_blake2b_final(struct lwc_blake2b *b, uint8_t *out);
#define LWC_SB_TAG 32
/* out = Salsa20(in) || BLAKE2b-256(mac_key; prefix || ciphertext): len + 32 bytes. */
void lwc_salsa20_blake2b_seal(const uint8_t *enc, size_t enc_len, const uint8_t *mac,
                              size_t mac_len, const uint8_t nonce[8], const uint8_t *prefix,
                              size_t prefix_len, const uint8_t *in, uint8_t *out, size_t len);
/* in = ciphertext || tag (len + 32 bytes): 0 and the plaintext in out, or -1 with nothing
 * decrypted when the tag does not verify (checked first, in constant time). */
int lwc_salsa20_blake2b_open(const uint8_t *enc, size_t enc_len, const uint8_t *mac,
                             size_t mac_len, const uint8_t nonce[8], const uint8_t *prefix,
                             size_t prefix_len, const uint8_t *in, uint8_t *out, size_t len);

/* -- AES without tables (aes.c) ---------------------------------------------------------------- */
/* 16 or 32 key bytes to 4 (Nr + 1) round-key words, bytewise (rk: 240 bytes); Nr. */
int lwc_aes_expand(const uint8_t *key, size_t key_len, uint8_t rk[240]);
void lwc_aes_encrypt(const uint8_t *rk, int nr, const uint8_t in[16], uint8_t out[16]);
void lwc_aes_ctr(const uint8_t *rk, int nr, const uint8_t initial[16], const uint8_t *in,
                 uint8_t *out, size_t len);

#endif
