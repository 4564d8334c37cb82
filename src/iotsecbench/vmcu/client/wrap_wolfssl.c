/* wolfSSL 5.9's primitives as the TLS and certificate code reach them (wrap.h): the public-key
 * operations (ECC, X25519, RSA), SHA-256/384/512 (with HMAC, HKDF, the TLS 1.2 PRF and the
 * Hash_DRBG built on them), AES-GCM, ChaCha20-Poly1305, and, in the post-quantum build, ML-KEM
 * and ML-DSA. One WRAP per line: the build reads them. */
#include "wrap.h"

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/wolfcrypt/aes.h>
#include <wolfssl/wolfcrypt/chacha.h>
#include <wolfssl/wolfcrypt/chacha20_poly1305.h>
#include <wolfssl/wolfcrypt/curve25519.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/hash.h>
#include <wolfssl/wolfcrypt/hmac.h>
#include <wolfssl/wolfcrypt/kdf.h>
#include <wolfssl/wolfcrypt/poly1305.h>
#include <wolfssl/wolfcrypt/rsa.h>
#include <wolfssl/wolfcrypt/sha256.h>
#include <wolfssl/wolfcrypt/sha512.h>
#ifdef IOTSB_DEVICE_PQ
#include <wolfssl/wolfcrypt/wc_mldsa.h>
#include <wolfssl/wolfcrypt/wc_mlkem.h>
#endif

/* clang-format off */
WRAP(FAMILY_PK, wc_ecc_make_key_ex, (WC_RNG *rng, int keysize, ecc_key *key, int curve_id), (rng, keysize, key, curve_id))
WRAP(FAMILY_PK, wc_ecc_shared_secret, (ecc_key *private_key, ecc_key *public_key, byte *out, word32 *outlen), (private_key, public_key, out, outlen))
WRAP(FAMILY_PK, wc_ecc_verify_hash, (const byte *sig, word32 siglen, const byte *hash, word32 hashlen, int *res, ecc_key *key), (sig, siglen, hash, hashlen, res, key))
WRAP(FAMILY_PK, wc_ecc_sign_hash, (const byte *in, word32 inlen, byte *out, word32 *outlen, WC_RNG *rng, ecc_key *key), (in, inlen, out, outlen, rng, key))
WRAP(FAMILY_PK, wc_ecc_import_x963_ex, (const byte *in, word32 inLen, ecc_key *key, int curve_id), (in, inLen, key, curve_id))
WRAP(FAMILY_PK, wc_ecc_check_key, (ecc_key *key), (key))
WRAP(FAMILY_PK, wc_curve25519_make_key, (WC_RNG *rng, int keysize, curve25519_key *key), (rng, keysize, key))
WRAP(FAMILY_PK, wc_curve25519_shared_secret_ex, (curve25519_key *private_key, curve25519_key *public_key, byte *out, word32 *outlen, int endian), (private_key, public_key, out, outlen, endian))
WRAP(FAMILY_PK, wc_curve25519_check_public, (const byte *pub, word32 pubSz, int endian), (pub, pubSz, endian))
WRAP(FAMILY_PK, wc_RsaSSL_VerifyInline, (byte *in, word32 inLen, byte **out, RsaKey *key), (in, inLen, out, key))
WRAP(FAMILY_PK, wc_RsaPSS_VerifyInline, (byte *in, word32 inLen, byte **out, enum wc_HashType hash, int mgf, RsaKey *key), (in, inLen, out, hash, mgf, key))
WRAP(FAMILY_PK, wc_RsaPSS_VerifyInline_ex, (byte *in, word32 inLen, byte **out, enum wc_HashType hash, int mgf, int saltLen, RsaKey *key), (in, inLen, out, hash, mgf, saltLen, key))
WRAP(FAMILY_PK, wc_RsaPublicEncrypt, (const byte *in, word32 inLen, byte *out, word32 outLen, RsaKey *key, WC_RNG *rng), (in, inLen, out, outLen, key, rng))
WRAP(FAMILY_PK, wc_RsaSSL_Sign, (const byte *in, word32 inLen, byte *out, word32 outLen, RsaKey *key, WC_RNG *rng), (in, inLen, out, outLen, key, rng))
WRAP(FAMILY_PK, wc_RsaPSS_Sign, (const byte *in, word32 inLen, byte *out, word32 outLen, enum wc_HashType hash, int mgf, RsaKey *key, WC_RNG *rng), (in, inLen, out, outLen, hash, mgf, key, rng))
WRAP(FAMILY_PK, wc_RsaFunction, (const byte *in, word32 inLen, byte *out, word32 *outLen, int type, RsaKey *key, WC_RNG *rng), (in, inLen, out, outLen, type, key, rng))
WRAP(FAMILY_SHA2, wc_InitSha256_ex, (wc_Sha256 *sha, void *heap, int devId), (sha, heap, devId))
WRAP(FAMILY_SHA2, wc_Sha256Update, (wc_Sha256 *sha, const byte *data, word32 len), (sha, data, len))
WRAP(FAMILY_SHA2, wc_Sha256Final, (wc_Sha256 *sha256, byte *hash), (sha256, hash))
WRAP(FAMILY_SHA2, wc_Sha256GetHash, (wc_Sha256 *sha256, byte *hash), (sha256, hash))
WRAP(FAMILY_SHA2, wc_Sha256Copy, (wc_Sha256 *src, wc_Sha256 *dst), (src, dst))
WRAP(FAMILY_SHA2, wc_InitSha384_ex, (wc_Sha384 *sha, void *heap, int devId), (sha, heap, devId))
WRAP(FAMILY_SHA2, wc_Sha384Update, (wc_Sha384 *sha, const byte *data, word32 len), (sha, data, len))
WRAP(FAMILY_SHA2, wc_Sha384Final, (wc_Sha384 *sha384, byte *hash), (sha384, hash))
WRAP(FAMILY_SHA2, wc_Sha384GetHash, (wc_Sha384 *sha384, byte *hash), (sha384, hash))
WRAP(FAMILY_SHA2, wc_Sha384Copy, (wc_Sha384 *src, wc_Sha384 *dst), (src, dst))
WRAP(FAMILY_SHA2, wc_InitSha512_ex, (wc_Sha512 *sha, void *heap, int devId), (sha, heap, devId))
WRAP(FAMILY_SHA2, wc_Sha512Update, (wc_Sha512 *sha, const byte *data, word32 len), (sha, data, len))
WRAP(FAMILY_SHA2, wc_Sha512Final, (wc_Sha512 *sha512, byte *hash), (sha512, hash))
WRAP(FAMILY_SHA2, wc_HmacSetKey, (Hmac *hmac, int type, const byte *key, word32 length), (hmac, type, key, length))
WRAP(FAMILY_SHA2, wc_HmacUpdate, (Hmac *hmac, const byte *msg, word32 length), (hmac, msg, length))
WRAP(FAMILY_SHA2, wc_HmacFinal, (Hmac *hmac, byte *hash), (hmac, hash))
WRAP(FAMILY_SHA2, wc_Tls13_HKDF_Extract_ex, (byte *prk, const byte *salt, word32 saltLen, byte *ikm, word32 ikmLen, int digest, void *heap, int devId), (prk, salt, saltLen, ikm, ikmLen, digest, heap, devId))
WRAP(FAMILY_SHA2, wc_Tls13_HKDF_Expand_Label_ex, (byte *okm, word32 okmLen, const byte *prk, word32 prkLen, const byte *protocol, word32 protocolLen, const byte *label, word32 labelLen, const byte *info, word32 infoLen, int digest, void *heap, int devId), (okm, okmLen, prk, prkLen, protocol, protocolLen, label, labelLen, info, infoLen, digest, heap, devId))
WRAP(FAMILY_SHA2, wc_PRF_TLS, (byte *digest, word32 digLen, const byte *secret, word32 secLen, const byte *label, word32 labLen, const byte *seed, word32 seedLen, int useAtLeastSha256, int hash_type, void *heap, int devId), (digest, digLen, secret, secLen, label, labLen, seed, seedLen, useAtLeastSha256, hash_type, heap, devId))
WRAP(FAMILY_SHA2, wc_HashInit, (wc_HashAlg *hash, enum wc_HashType type), (hash, type))
WRAP(FAMILY_SHA2, wc_HashUpdate, (wc_HashAlg *hash, enum wc_HashType type, const byte *data, word32 dataSz), (hash, type, data, dataSz))
WRAP(FAMILY_SHA2, wc_HashFinal, (wc_HashAlg *hash, enum wc_HashType type, byte *out), (hash, type, out))
WRAP(FAMILY_SHA2, wc_Hash, (enum wc_HashType hash_type, const byte *data, word32 data_len, byte *hash, word32 hash_len), (hash_type, data, data_len, hash, hash_len))
WRAP(FAMILY_AES, wc_AesGcmSetKey, (Aes *aes, const byte *key, word32 len), (aes, key, len))
WRAP(FAMILY_AES, wc_AesGcmEncrypt, (Aes *aes, byte *out, const byte *in, word32 sz, const byte *iv, word32 ivSz, byte *authTag, word32 authTagSz, const byte *authIn, word32 authInSz), (aes, out, in, sz, iv, ivSz, authTag, authTagSz, authIn, authInSz))
WRAP(FAMILY_AES, wc_AesGcmDecrypt, (Aes *aes, byte *out, const byte *in, word32 sz, const byte *iv, word32 ivSz, const byte *authTag, word32 authTagSz, const byte *authIn, word32 authInSz), (aes, out, in, sz, iv, ivSz, authTag, authTagSz, authIn, authInSz))
WRAP(FAMILY_CHACHA, wc_Chacha_SetKey, (ChaCha *ctx, const byte *key, word32 keySz), (ctx, key, keySz))
WRAP(FAMILY_CHACHA, wc_Chacha_SetIV, (ChaCha *ctx, const byte *inIv, word32 counter), (ctx, inIv, counter))
WRAP(FAMILY_CHACHA, wc_Chacha_Process, (ChaCha *ctx, byte *cipher, const byte *plain, word32 msglen), (ctx, cipher, plain, msglen))
WRAP(FAMILY_CHACHA, wc_Poly1305SetKey, (Poly1305 *poly1305, const byte *key, word32 kySz), (poly1305, key, kySz))
WRAP(FAMILY_CHACHA, wc_Poly1305Update, (Poly1305 *poly1305, const byte *m, word32 bytes), (poly1305, m, bytes))
WRAP(FAMILY_CHACHA, wc_Poly1305Final, (Poly1305 *poly1305, byte *tag), (poly1305, tag))
WRAP(FAMILY_CHACHA, wc_ChaCha20Poly1305_Encrypt_ex, (ChaCha *chacha, Poly1305 *poly, byte *out, const byte *in, word32 sz, const byte *nonce, byte *tag, const byte *aad, word32 aadSz), (chacha, poly, out, in, sz, nonce, tag, aad, aadSz))
WRAP(FAMILY_CHACHA, wc_ChaCha20Poly1305_Decrypt_ex, (ChaCha *chacha, Poly1305 *poly, byte *out, const byte *in, word32 sz, const byte *nonce, const byte *tag, const byte *aad, word32 aadSz), (chacha, poly, out, in, sz, nonce, tag, aad, aadSz))
#ifdef IOTSB_DEVICE_PQ
WRAP(FAMILY_MLKEM, wc_MlKemKey_MakeKey, (MlKemKey *key, WC_RNG *rng), (key, rng))
WRAP(FAMILY_MLKEM, wc_MlKemKey_Encapsulate, (MlKemKey *key, unsigned char *ct, unsigned char *ss, WC_RNG *rng), (key, ct, ss, rng))
WRAP(FAMILY_MLKEM, wc_MlKemKey_Decapsulate, (MlKemKey *key, unsigned char *ss, const unsigned char *ct, word32 len), (key, ss, ct, len))
WRAP(FAMILY_MLKEM, wc_MlKemKey_DecodePublicKey, (MlKemKey *key, const unsigned char *in, word32 len), (key, in, len))
WRAP(FAMILY_MLKEM, wc_MlKemKey_EncodePublicKey, (MlKemKey *key, unsigned char *out, word32 len), (key, out, len))
WRAP(FAMILY_MLDSA, wc_MlDsaKey_VerifyCtx, (wc_MlDsaKey *key, const byte *sig, word32 sigLen, const byte *ctx, byte ctxLen, const byte *msg, word32 msgLen, int *res), (key, sig, sigLen, ctx, ctxLen, msg, msgLen, res))
WRAP(FAMILY_MLDSA, wc_MlDsaKey_PublicKeyDecode, (wc_MlDsaKey *key, const byte *input, word32 inSz, word32 *inOutIdx), (key, input, inSz, inOutIdx))
WRAP(FAMILY_MLDSA, wc_MlDsaKey_ImportPubRaw, (wc_MlDsaKey *key, const byte *in, word32 inLen), (key, in, inLen))
#endif
/* clang-format on */
