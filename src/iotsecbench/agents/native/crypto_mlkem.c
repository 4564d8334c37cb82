/* ML-KEM encapsulation on wolfCrypt (crypto_kem.h). Compiled with the primitives' harness's
 * wolfCrypt settings (vmcu/firmware/user_settings.h) and linked against that very archive, both
 * into the device client's scheme build and into the harness's mlkem* builds, whose "encaps"
 * is this function: the code a device run counts is the code test_virtual_mcu.py checks
 * against NIST's ACVP vectors on both targets (and bench crypto --target counts). The key
 * object lives on the stack, as a device's code would hold it: its size is part of the key
 * exchange's stack peak. */
#include "crypto_kem.h"

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/wc_mlkem.h>

static int kem_type(unsigned level)
{
    return level == 512 ? WC_ML_KEM_512 : level == 768 ? WC_ML_KEM_768
           : level == 1024 ? WC_ML_KEM_1024 : -1;
}

size_t kem_public_bytes(unsigned level)
{
    return level == 512 ? WC_ML_KEM_512_PUBLIC_KEY_SIZE
           : level == 768 ? WC_ML_KEM_768_PUBLIC_KEY_SIZE
           : level == 1024 ? WC_ML_KEM_1024_PUBLIC_KEY_SIZE : 0;
}

size_t kem_ciphertext_bytes(unsigned level)
{
    return level == 512 ? WC_ML_KEM_512_CIPHER_TEXT_SIZE
           : level == 768 ? WC_ML_KEM_768_CIPHER_TEXT_SIZE
           : level == 1024 ? WC_ML_KEM_1024_CIPHER_TEXT_SIZE : 0;
}

int kem_encapsulate(unsigned level, const uint8_t *ek, size_t ek_len,
                    const uint8_t m[KEM_SEED_BYTES], uint8_t *ct, uint8_t ss[KEM_SHARED_BYTES])
{
    MlKemKey key;
    if (kem_type(level) < 0 || wc_MlKemKey_Init(&key, kem_type(level), NULL, INVALID_DEVID))
        return -1;
    /* DecodePublicKey checks the length and that every coefficient is below q (§7.2) */
    int rc = wc_MlKemKey_DecodePublicKey(&key, ek, (word32)ek_len) ||
             wc_MlKemKey_EncapsulateWithRandom(&key, ct, ss, m, KEM_SEED_BYTES);
    wc_MlKemKey_Free(&key);
    return rc ? -1 : 0;
}
