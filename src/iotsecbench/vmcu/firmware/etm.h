/* Encrypt-then-MAC as the host schemes do it (security/schemes/etm.py): a keystream cipher,
 * then HMAC-SHA256 (mbedTLS) under the MAC key over aad || ciphertext, 32-byte tag, verified in
 * constant time before anything is decrypted. A primitive supplies its keystream. */
#ifndef VMCU_ETM_H
#define VMCU_ETM_H

#include "vmcu.h"

/* in XOR keystream(nonce): the CTR initial block, or the Salsa20 nonce. */
typedef void vm_keystream(const uint8_t *nonce, const uint8_t *in, uint8_t *out, size_t len);

int vm_etm_setkey(const struct vm_blob *mac_key); /* 0, or VM_FAILED */
/* seal(nonce, aad, plaintext) -> ciphertext || tag; open(nonce, aad, ciphertext || tag). */
int32_t vm_etm_seal(vm_keystream *stream, size_t nonce_len, const struct vm_blob *in,
                    unsigned n, uint8_t *out, uint32_t cap);
int32_t vm_etm_open(vm_keystream *stream, size_t nonce_len, const struct vm_blob *in,
                    unsigned n, uint8_t *out, uint32_t cap);
/* The "hmac" operation: (key, data) -> HMAC-SHA256, for the published vectors. */
int32_t vm_hmac(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap);

#endif
