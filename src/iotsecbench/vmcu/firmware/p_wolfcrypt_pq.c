/* wolfCrypt's ML-KEM-512/768/1024 (FIPS 203), ML-DSA-44/65 (FIPS 204) and Ed25519 (RFC 8032),
 * built from its registry source (vmcu/sources.py), one per build (VM_PQ). Operations take encoded keys as a
 * device receives or stores them, so each count includes decoding, as the field's reference
 * benchmark (pqm4's crypto_kem_* and crypto_sign_*) does. */
#include <string.h>

#include "vmcu.h"
#include <wolfssl/wolfcrypt/settings.h>

#define MLKEM512 1
#define MLKEM768 2
#define MLDSA44 3
#define ED25519 4
#define MLKEM1024 5
#define MLDSA65 6

#if VM_PQ == MLKEM512 || VM_PQ == MLKEM768 || VM_PQ == MLKEM1024
#include <wolfssl/wolfcrypt/wc_mlkem.h>

#include "../../agents/native/crypto_kem.h"
#define LEVEL (VM_PQ == MLKEM512 ? 512u : VM_PQ == MLKEM768 ? 768u : 1024u)
#define TYPE                                                                                   \
    (VM_PQ == MLKEM512 ? WC_ML_KEM_512 : VM_PQ == MLKEM768 ? WC_ML_KEM_768 : WC_ML_KEM_1024)

static int32_t done(MlKemKey *key, int32_t result)
{
    wc_MlKemKey_Free(key);
    return result;
}

/* keygen(d || z, 64 bytes) -> ek || dk (FIPS 203 ML-KEM.KeyGen_internal) */
static int32_t keygen(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(1);
    MlKemKey key;
    word32 ek = 0, dk = 0;
    if (in[0].len != 64 || wc_MlKemKey_Init(&key, TYPE, NULL, INVALID_DEVID))
        return VM_BAD_INPUT;
    if (wc_MlKemKey_MakeKeyWithRandom(&key, in[0].data, 64) ||
        wc_MlKemKey_PublicKeySize(&key, &ek) || wc_MlKemKey_PrivateKeySize(&key, &dk) ||
        ek + dk > cap || wc_MlKemKey_EncodePublicKey(&key, out, ek) ||
        wc_MlKemKey_EncodePrivateKey(&key, out + ek, dk))
        return done(&key, VM_FAILED);
    return done(&key, (int32_t)(ek + dk));
}

/* encaps(ek, m 32) -> c || K (FIPS 203 ML-KEM.Encaps_internal): the device client's own
 * (agents/native/crypto_mlkem.c), so these vectors check the code its key exchange runs */
static int32_t encaps(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    size_t c = kem_ciphertext_bytes(LEVEL);
    if (in[1].len != KEM_SEED_BYTES || c + KEM_SHARED_BYTES > cap)
        return VM_BAD_INPUT;
    if (kem_encapsulate(LEVEL, in[0].data, in[0].len, in[1].data, out, out + c) != 0)
        return VM_REJECTED; /* not an encapsulation key of this level */
    return (int32_t)(c + KEM_SHARED_BYTES);
}

/* decaps(dk, c) -> K (implicit rejection: a modified c gives a pseudorandom K, not an error) */
static int32_t decaps(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    MlKemKey key;
    if (cap < 32 || wc_MlKemKey_Init(&key, TYPE, NULL, INVALID_DEVID))
        return VM_BAD_INPUT;
    if (wc_MlKemKey_DecodePrivateKey(&key, in[0].data, in[0].len) ||
        wc_MlKemKey_Decapsulate(&key, out, in[1].data, in[1].len))
        return done(&key, VM_REJECTED);
    return done(&key, 32);
}

const struct vm_entry vm_ops[] = {
    {"keygen", keygen}, {"encaps", encaps}, {"decaps", decaps}, {0, 0},
};

#elif VM_PQ == MLDSA44 || VM_PQ == MLDSA65
#include <wolfssl/wolfcrypt/wc_mldsa.h>
#define LEVEL (VM_PQ == MLDSA44 ? WC_ML_DSA_44 : WC_ML_DSA_65)

static int open_key(wc_MlDsaKey *key)
{
    return wc_MlDsaKey_Init(key, NULL, INVALID_DEVID) || wc_MlDsaKey_SetParams(key, LEVEL);
}

static int32_t done(wc_MlDsaKey *key, int32_t result)
{
    wc_MlDsaKey_Free(key);
    return result;
}

/* keygen(xi 32) -> pk || sk (FIPS 204 ML-DSA.KeyGen_internal) */
static int32_t keygen(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(1);
    wc_MlDsaKey key;
    int pk = 0, sk = 0;
    if (in[0].len != 32 || open_key(&key))
        return VM_BAD_INPUT;
    if (wc_MlDsaKey_MakeKeyFromSeed(&key, in[0].data) || wc_MlDsaKey_GetPubLen(&key, &pk) ||
        wc_MlDsaKey_GetPrivLen(&key, &sk) || (uint32_t)(pk + sk) > cap)
        return done(&key, VM_FAILED);
    word32 pk_len = (word32)pk, sk_len = (word32)sk;
    if (wc_MlDsaKey_ExportPubRaw(&key, out, &pk_len) ||
        wc_MlDsaKey_ExportPrivRaw(&key, out + pk_len, &sk_len))
        return done(&key, VM_FAILED);
    return done(&key, (int32_t)(pk_len + sk_len));
}

/* sign(sk, message, context, rnd 32) -> signature: ML-DSA.Sign as a TLS peer uses it. */
static int32_t sign(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(4);
    wc_MlDsaKey key;
    word32 len = cap;
    if (in[2].len > 255 || in[3].len != 32 || open_key(&key))
        return VM_BAD_INPUT;
    if (wc_MlDsaKey_ImportPrivRaw(&key, in[0].data, in[0].len) ||
        wc_MlDsaKey_SignCtxWithSeed(&key, in[2].data, (byte)in[2].len, out, &len, in[1].data,
                                    in[1].len, in[3].data))
        return done(&key, VM_FAILED);
    return done(&key, (int32_t)len);
}

/* sign_mu(sk, mu 64, rnd 32) -> signature: ML-DSA.Sign_internal from its message digest mu
 * (the published vectors sign M' directly; the host computes mu = H(tr || M')). */
static int32_t sign_mu(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    wc_MlDsaKey key;
    word32 len = cap;
    if (in[1].len != 64 || in[2].len != 32 || open_key(&key))
        return VM_BAD_INPUT;
    if (wc_MlDsaKey_ImportPrivRaw(&key, in[0].data, in[0].len) ||
        wc_MlDsaKey_SignMuWithSeed(&key, out, &len, in[1].data, 64, in[2].data))
        return done(&key, VM_FAILED);
    return done(&key, (int32_t)len);
}

/* verify(pk, message, context, signature) -> 0, or VM_REJECTED */
static int32_t verify(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(4);
    wc_MlDsaKey key;
    int valid = 0;
    if (in[2].len > 255 || open_key(&key))
        return VM_BAD_INPUT;
    if (wc_MlDsaKey_ImportPubRaw(&key, in[0].data, in[0].len) ||
        wc_MlDsaKey_VerifyCtx(&key, in[3].data, in[3].len, in[2].data, (byte)in[2].len,
                              in[1].data, in[1].len, &valid) ||
        !valid)
        return done(&key, VM_REJECTED);
    return done(&key, 0);
}

/* verify_mu(pk, mu 64, signature) -> 0, or VM_REJECTED: ML-DSA.Verify_internal */
static int32_t verify_mu(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    wc_MlDsaKey key;
    int valid = 0;
    if (in[1].len != 64 || open_key(&key))
        return VM_BAD_INPUT;
    if (wc_MlDsaKey_ImportPubRaw(&key, in[0].data, in[0].len) ||
        wc_MlDsaKey_VerifyMu(&key, in[2].data, in[2].len, in[1].data, 64, &valid) || !valid)
        return done(&key, VM_REJECTED);
    return done(&key, 0);
}

const struct vm_entry vm_ops[] = {
    {"keygen", keygen}, {"sign", sign},           {"verify", verify},
    {"sign_mu", sign_mu}, {"verify_mu", verify_mu}, {0, 0},
};

#else /* ED25519 */
#include <wolfssl/wolfcrypt/ed25519.h>

static int32_t done(ed25519_key *key, int32_t result)
{
    wc_ed25519_free(key);
    return result;
}

/* keygen(seed 32) -> public key 32 */
static int32_t keygen(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(1);
    ed25519_key key;
    if (in[0].len != 32 || cap < 32 || wc_ed25519_init(&key))
        return VM_BAD_INPUT;
    if (wc_ed25519_import_private_only(in[0].data, 32, &key) ||
        wc_ed25519_make_public(&key, out, 32))
        return done(&key, VM_FAILED);
    return done(&key, 32);
}

/* sign(seed 32, public 32, message) -> signature 64 */
static int32_t sign(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    ed25519_key key;
    word32 len = cap;
    if (in[0].len != 32 || in[1].len != 32 || wc_ed25519_init(&key))
        return VM_BAD_INPUT;
    if (wc_ed25519_import_private_key(in[0].data, 32, in[1].data, 32, &key) ||
        wc_ed25519_sign_msg(in[2].data, in[2].len, out, &len, &key))
        return done(&key, VM_FAILED);
    return done(&key, (int32_t)len);
}

/* verify(public 32, message, signature 64) -> 0, or VM_REJECTED */
static int32_t verify(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    ed25519_key key;
    int valid = 0;
    if (wc_ed25519_init(&key))
        return VM_BAD_INPUT;
    if (wc_ed25519_import_public(in[0].data, in[0].len, &key) ||
        wc_ed25519_verify_msg(in[2].data, in[2].len, in[1].data, in[1].len, &valid, &key) ||
        !valid)
        return done(&key, VM_REJECTED);
    return done(&key, 0);
}

const struct vm_entry vm_ops[] = {
    {"keygen", keygen}, {"sign", sign}, {"verify", verify}, {0, 0},
};
#endif
