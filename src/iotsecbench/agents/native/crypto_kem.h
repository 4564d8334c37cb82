/* ML-KEM (FIPS 203) for the device build's post-quantum key establishments (docs/wire-format.md,
 * "Key establishment": mlkem512/768/1024 and the X25519MLKEM768 hybrid): the emitter's side,
 * encapsulation to the receiver's fresh encapsulation key. Only the firmware's mbedtls-scheme
 * build (IOTSB_DEVICE_SCHEMES) links crypto_mlkem.c, on wolfCrypt's ML-KEM (wolfSSL 5.9.4, the
 * archive the primitives' harness checks against NIST's ACVP vectors: vmcu/client.py); the
 * native agents do not carry these key establishments. */
#ifndef IOTSB_CRYPTO_KEM_H
#define IOTSB_CRYPTO_KEM_H

#include <stddef.h>
#include <stdint.h>

#define KEM_SHARED_BYTES 32
#define KEM_SEED_BYTES 32 /* the message m Encaps draws (FIPS 203 Algorithm 20) */

/* FIPS 203 Table 3: encapsulation key and ciphertext bytes of ML-KEM-<level>; 0 for a level
 * that does not exist. */
size_t kem_public_bytes(unsigned level);
size_t kem_ciphertext_bytes(unsigned level);

/* ML-KEM.Encaps of ML-KEM-<level> to ek with the randomness m: ct and the shared key. 0, or -1
 * when ek is not an encapsulation key of that level (FIPS 203 §7.2: a wrong length or a
 * coefficient not reduced modulo q) or the library failed. The ledger wraps this call
 * (family mlkem), decoding the key included, as the primitives' harness counts it. */
int kem_encapsulate(unsigned level, const uint8_t *ek, size_t ek_len,
                    const uint8_t m[KEM_SEED_BYTES], uint8_t *ct, uint8_t ss[KEM_SHARED_BYTES]);

#endif
