/* Payload schemes in C (docs/wire-format.md, byte for byte with security/schemes and
 * security/key_establishment.py): the framing of each cipher, the receiver's replay window,
 * the key exchange's three messages and its HKDF-SHA256 key schedule. The primitives are the
 * build's stack's (crypto.h); nothing here touches the network (exchange.c carries the
 * messages over MQTT). Builds without a payload scheme link scheme_none.c instead. */
#ifndef IOTSB_SCHEME_H
#define IOTSB_SCHEME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHEME_MAX_OVERHEAD 96  /* largest expansion of a message: CBC-HMAC's 10+16+16+32 */
/* The largest public value R or E: a P-256 point (65 bytes); in the device build ML-KEM-1024's
 * encapsulation key and ciphertext (1,568 each; the block-sizes study's ffdhe2048 value, RSA-2048
 * modulus and OAEP ciphertext are 256, the X25519MLKEM768 hybrid's R 1,216). */
#ifdef IOTSB_DEVICE_SCHEMES
#define KX_MAX_PUBLIC 1568
#else
#define KX_MAX_PUBLIC 65
#endif
#define KX_MAX_MESSAGE (1 + 16 + KX_MAX_PUBLIC) /* the emitter's: version, nonce, E */

struct direction; /* one direction's keys, sequence counter and replay window */

enum open_result {
    OPEN_OK = 0,
    OPEN_MALFORMED,  /* too short for the header and tag, not whole blocks, bad padding */
    OPEN_AUTH,       /* another version or scheme id, or the tag / MAC does not verify */
    OPEN_DUPLICATE,  /* the replay window has seen this sequence number */
    OPEN_TOO_OLD,    /* older than the replay window */
};

/* The scheme of a configuration name ("ecdh-p256-aes128-gcm", "tls1.2+psk-chacha20-poly1305"):
 * true with the scheme selected, false for a configuration without one (plain MQTT, TLS
 * alone); a payload scheme this build does not implement ends the agent (die). */
bool scheme_select(const char *configuration);
const char *scheme_name(void);
const char *scheme_agreement(void); /* "psk", "ecdh-p256", "x25519"; the device build's
                                       "ffdhe2048", "dh-sha256", "rsa-oaep", "mlkem768" … */

/* The key exchange (key_establishment.py's state machines). psk: the pre-shared key (>= 16
 * bytes) or NULL. Each returns the message's length, or 0 with *why set (a message of the
 * wrong size or version, an invalid public value, a key confirmation that does not verify). */
size_t kx_receiver_hello(const uint8_t *psk, size_t psk_len, uint8_t *out);
size_t kx_receiver_answer(const uint8_t *message, size_t len, uint8_t *ready,
                          struct direction **e2r, const char **why);
size_t kx_emitter_answer(const uint8_t *psk, size_t psk_len, const uint8_t *hello, size_t len,
                         uint8_t *reply, const char **why);
bool kx_emitter_confirm(const uint8_t *ready, size_t len, struct direction **e2r,
                        const char **why);
/* After kx_emitter_confirm: the receiver-to-emitter keys (the tcp transport's echoes). */
struct direction *kx_emitter_reverse(void);

/* The scheme's cipher on one direction: seal returns the message's length (0: out of
 * sequence numbers or a library failure), open the verdict with the plaintext in out. */
/* --keylog: with scheme_log_keys(true), each derived session's keys are kept as the two
 * IOTSB_SESSION_KEYS lines of docs/wire-format.md, which scheme_key_log returns ("" when
 * none). Secrets: for the key log only. */
void scheme_log_keys(bool on);
const char *scheme_key_log(void);

size_t scheme_seal(struct direction *d, const uint8_t *plaintext, size_t len, uint8_t *out);
enum open_result scheme_open(struct direction *d, const uint8_t *message, size_t len,
                             uint8_t *out, size_t *out_len);

#endif
