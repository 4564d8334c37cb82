/* mbedTLS 3.6's primitives as the TLS, PSA and X.509 code reach them (wrap.h): the public-key
 * operations (ECP, ECDH, ECDSA, RSA and the bignum exponentiation under RSA), SHA-256/384
 * (with HMAC, HKDF, the TLS 1.2 PRF and the entropy pool built on them), AES (GCM, and the
 * CTR_DRBG's block cipher; the one-shot GCM calls hold their GHASH, which the TLS records
 * reach through PSA and the payload schemes directly) and ChaCha20-Poly1305; in the payload
 * schemes' build also AES-CTR/CBC as the schemes call them (their blocks are inside aes.c,
 * where a call is not redirected), the lightweight ciphers of crypto_lwc.c (family lwc;
 * EAX's AES included), ML-KEM's encapsulation (crypto_mlkem.c on wolfCrypt: family mlkem,
 * decoding the receiver's key included) and the block-sizes study's key transports (DHM's key
 * pair and shared secret, RSA-OAEP; the subgroup check's exponentiation is mbedtls_mpi_exp_mod).
 * One WRAP per line: the build reads them. */
#include "wrap.h"

#include <mbedtls/bignum.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/ecdh.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>
#include <mbedtls/gcm.h>
#include <mbedtls/aes.h>
#include <mbedtls/rsa.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>
#ifdef IOTSB_DEVICE_SCHEMES
#include "../../agents/native/crypto_kem.h"
#include "../../agents/native/crypto_lwc.h"
#include <mbedtls/dhm.h>
#endif

/* clang-format off */
WRAP(FAMILY_PK, mbedtls_ecp_mul, (mbedtls_ecp_group *grp, mbedtls_ecp_point *R, const mbedtls_mpi *m, const mbedtls_ecp_point *P, mbedtls_f_rng_t *f_rng, void *p_rng), (grp, R, m, P, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_ecp_mul_restartable, (mbedtls_ecp_group *grp, mbedtls_ecp_point *R, const mbedtls_mpi *m, const mbedtls_ecp_point *P, mbedtls_f_rng_t *f_rng, void *p_rng, mbedtls_ecp_restart_ctx *rs_ctx), (grp, R, m, P, f_rng, p_rng, rs_ctx))
WRAP(FAMILY_PK, mbedtls_ecp_muladd_restartable, (mbedtls_ecp_group *grp, mbedtls_ecp_point *R, const mbedtls_mpi *m, const mbedtls_ecp_point *P, const mbedtls_mpi *n, const mbedtls_ecp_point *Q, mbedtls_ecp_restart_ctx *rs_ctx), (grp, R, m, P, n, Q, rs_ctx))
WRAP(FAMILY_PK, mbedtls_ecp_check_pubkey, (const mbedtls_ecp_group *grp, const mbedtls_ecp_point *pt), (grp, pt))
WRAP(FAMILY_PK, mbedtls_ecp_gen_privkey, (const mbedtls_ecp_group *grp, mbedtls_mpi *d, mbedtls_f_rng_t *f_rng, void *p_rng), (grp, d, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_ecdh_calc_secret, (mbedtls_ecdh_context *ctx, size_t *olen, unsigned char *buf, size_t blen, mbedtls_f_rng_t *f_rng, void *p_rng), (ctx, olen, buf, blen, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_ecdh_gen_public, (mbedtls_ecp_group *grp, mbedtls_mpi *d, mbedtls_ecp_point *Q, mbedtls_f_rng_t *f_rng, void *p_rng), (grp, d, Q, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_ecdh_compute_shared, (mbedtls_ecp_group *grp, mbedtls_mpi *z, const mbedtls_ecp_point *Q, const mbedtls_mpi *d, mbedtls_f_rng_t *f_rng, void *p_rng), (grp, z, Q, d, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_ecdsa_verify, (mbedtls_ecp_group *grp, const unsigned char *buf, size_t blen, const mbedtls_ecp_point *Q, const mbedtls_mpi *r, const mbedtls_mpi *s), (grp, buf, blen, Q, r, s))
WRAP(FAMILY_PK, mbedtls_ecdsa_verify_restartable, (mbedtls_ecp_group *grp, const unsigned char *buf, size_t blen, const mbedtls_ecp_point *Q, const mbedtls_mpi *r, const mbedtls_mpi *s, mbedtls_ecdsa_restart_ctx *rs_ctx), (grp, buf, blen, Q, r, s, rs_ctx))
WRAP(FAMILY_PK, mbedtls_ecdsa_sign, (mbedtls_ecp_group *grp, mbedtls_mpi *r, mbedtls_mpi *s, const mbedtls_mpi *d, const unsigned char *buf, size_t blen, mbedtls_f_rng_t *f_rng, void *p_rng), (grp, r, s, d, buf, blen, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_rsa_pkcs1_verify, (mbedtls_rsa_context *ctx, mbedtls_md_type_t md_alg, unsigned int hashlen, const unsigned char *hash, const unsigned char *sig), (ctx, md_alg, hashlen, hash, sig))
WRAP(FAMILY_PK, mbedtls_rsa_rsassa_pss_verify_ext, (mbedtls_rsa_context *ctx, mbedtls_md_type_t md_alg, unsigned int hashlen, const unsigned char *hash, mbedtls_md_type_t mgf1_hash_id, int expected_salt_len, const unsigned char *sig), (ctx, md_alg, hashlen, hash, mgf1_hash_id, expected_salt_len, sig))
WRAP(FAMILY_PK, mbedtls_rsa_pkcs1_encrypt, (mbedtls_rsa_context *ctx, mbedtls_f_rng_t *f_rng, void *p_rng, size_t ilen, const unsigned char *input, unsigned char *output), (ctx, f_rng, p_rng, ilen, input, output))
WRAP(FAMILY_PK, mbedtls_rsa_pkcs1_sign, (mbedtls_rsa_context *ctx, mbedtls_f_rng_t *f_rng, void *p_rng, mbedtls_md_type_t md_alg, unsigned int hashlen, const unsigned char *hash, unsigned char *sig), (ctx, f_rng, p_rng, md_alg, hashlen, hash, sig))
WRAP(FAMILY_PK, mbedtls_rsa_rsassa_pss_sign, (mbedtls_rsa_context *ctx, mbedtls_f_rng_t *f_rng, void *p_rng, mbedtls_md_type_t md_alg, unsigned int hashlen, const unsigned char *hash, unsigned char *sig), (ctx, f_rng, p_rng, md_alg, hashlen, hash, sig))
WRAP(FAMILY_PK, mbedtls_mpi_exp_mod, (mbedtls_mpi *X, const mbedtls_mpi *A, const mbedtls_mpi *E, const mbedtls_mpi *N, mbedtls_mpi *prec_RR), (X, A, E, N, prec_RR))
WRAP(FAMILY_SHA2, mbedtls_sha256_starts, (mbedtls_sha256_context *ctx, int is224), (ctx, is224))
WRAP(FAMILY_SHA2, mbedtls_sha256_update, (mbedtls_sha256_context *ctx, const unsigned char *input, size_t ilen), (ctx, input, ilen))
WRAP(FAMILY_SHA2, mbedtls_sha256_finish, (mbedtls_sha256_context *ctx, unsigned char *output), (ctx, output))
WRAP(FAMILY_SHA2, mbedtls_sha256, (const unsigned char *input, size_t ilen, unsigned char *output, int is224), (input, ilen, output, is224))
WRAP(FAMILY_SHA2, mbedtls_sha512_starts, (mbedtls_sha512_context *ctx, int is384), (ctx, is384))
WRAP(FAMILY_SHA2, mbedtls_sha512_update, (mbedtls_sha512_context *ctx, const unsigned char *input, size_t ilen), (ctx, input, ilen))
WRAP(FAMILY_SHA2, mbedtls_sha512_finish, (mbedtls_sha512_context *ctx, unsigned char *output), (ctx, output))
WRAP(FAMILY_SHA2, mbedtls_sha512, (const unsigned char *input, size_t ilen, unsigned char *output, int is384), (input, ilen, output, is384))
WRAP(FAMILY_AES, mbedtls_aes_setkey_enc, (mbedtls_aes_context *ctx, const unsigned char *key, unsigned int keybits), (ctx, key, keybits))
WRAP(FAMILY_AES, mbedtls_aes_crypt_ecb, (mbedtls_aes_context *ctx, int mode, const unsigned char input[16], unsigned char output[16]), (ctx, mode, input, output))
WRAP(FAMILY_AES, mbedtls_gcm_setkey, (mbedtls_gcm_context *ctx, mbedtls_cipher_id_t cipher, const unsigned char *key, unsigned int keybits), (ctx, cipher, key, keybits))
WRAP(FAMILY_AES, mbedtls_gcm_starts, (mbedtls_gcm_context *ctx, int mode, const unsigned char *iv, size_t iv_len), (ctx, mode, iv, iv_len))
WRAP(FAMILY_AES, mbedtls_gcm_update_ad, (mbedtls_gcm_context *ctx, const unsigned char *add, size_t add_len), (ctx, add, add_len))
WRAP(FAMILY_AES, mbedtls_gcm_update, (mbedtls_gcm_context *ctx, const unsigned char *input, size_t input_length, unsigned char *output, size_t output_size, size_t *output_length), (ctx, input, input_length, output, output_size, output_length))
WRAP(FAMILY_AES, mbedtls_gcm_finish, (mbedtls_gcm_context *ctx, unsigned char *output, size_t output_size, size_t *output_length, unsigned char *tag, size_t tag_len), (ctx, output, output_size, output_length, tag, tag_len))
WRAP(FAMILY_AES, mbedtls_gcm_crypt_and_tag, (mbedtls_gcm_context *ctx, int mode, size_t length, const unsigned char *iv, size_t iv_len, const unsigned char *add, size_t add_len, const unsigned char *input, unsigned char *output, size_t tag_len, unsigned char *tag), (ctx, mode, length, iv, iv_len, add, add_len, input, output, tag_len, tag))
WRAP(FAMILY_AES, mbedtls_gcm_auth_decrypt, (mbedtls_gcm_context *ctx, size_t length, const unsigned char *iv, size_t iv_len, const unsigned char *add, size_t add_len, const unsigned char *tag, size_t tag_len, const unsigned char *input, unsigned char *output), (ctx, length, iv, iv_len, add, add_len, tag, tag_len, input, output))
WRAP(FAMILY_CHACHA, mbedtls_chachapoly_setkey, (mbedtls_chachapoly_context *ctx, const unsigned char key[32]), (ctx, key))
WRAP(FAMILY_CHACHA, mbedtls_chachapoly_starts, (mbedtls_chachapoly_context *ctx, const unsigned char nonce[12], mbedtls_chachapoly_mode_t mode), (ctx, nonce, mode))
WRAP(FAMILY_CHACHA, mbedtls_chachapoly_update_aad, (mbedtls_chachapoly_context *ctx, const unsigned char *aad, size_t aad_len), (ctx, aad, aad_len))
WRAP(FAMILY_CHACHA, mbedtls_chachapoly_update, (mbedtls_chachapoly_context *ctx, size_t len, const unsigned char *input, unsigned char *output), (ctx, len, input, output))
WRAP(FAMILY_CHACHA, mbedtls_chachapoly_finish, (mbedtls_chachapoly_context *ctx, unsigned char mac[16]), (ctx, mac))
#ifdef IOTSB_DEVICE_SCHEMES
WRAP(FAMILY_AES, mbedtls_aes_crypt_ctr, (mbedtls_aes_context *ctx, size_t length, size_t *nc_off, unsigned char nonce_counter[16], unsigned char stream_block[16], const unsigned char *input, unsigned char *output), (ctx, length, nc_off, nonce_counter, stream_block, input, output))
WRAP(FAMILY_AES, mbedtls_aes_crypt_cbc, (mbedtls_aes_context *ctx, int mode, size_t length, unsigned char iv[16], const unsigned char *input, unsigned char *output), (ctx, mode, length, iv, input, output))
WRAP(FAMILY_MLKEM, kem_encapsulate, (unsigned level, const uint8_t *ek, size_t ek_len, const uint8_t m[KEM_SEED_BYTES], uint8_t *ct, uint8_t ss[KEM_SHARED_BYTES]), (level, ek, ek_len, m, ct, ss))
WRAP(FAMILY_LWC, light_seal, (struct light_key *key, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len, const uint8_t mac_key[32], const uint8_t *in, size_t len, uint8_t *out), (key, nonce, nonce_len, aad, aad_len, mac_key, in, len, out))
WRAP(FAMILY_LWC, light_open, (struct light_key *key, const uint8_t *nonce, size_t nonce_len, const uint8_t *aad, size_t aad_len, const uint8_t mac_key[32], const uint8_t *in, size_t len, uint8_t *out), (key, nonce, nonce_len, aad, aad_len, mac_key, in, len, out))
WRAP(FAMILY_LWC, light_ctr, (struct light_key *key, const uint8_t counter[16], const uint8_t *in, uint8_t *out, size_t len), (key, counter, in, out, len))
WRAP(FAMILY_PK, mbedtls_dhm_make_public, (mbedtls_dhm_context *ctx, int x_size, unsigned char *output, size_t olen, mbedtls_f_rng_t *f_rng, void *p_rng), (ctx, x_size, output, olen, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_dhm_calc_secret, (mbedtls_dhm_context *ctx, unsigned char *output, size_t output_size, size_t *olen, mbedtls_f_rng_t *f_rng, void *p_rng), (ctx, output, output_size, olen, f_rng, p_rng))
WRAP(FAMILY_PK, mbedtls_rsa_rsaes_oaep_encrypt, (mbedtls_rsa_context *ctx, mbedtls_f_rng_t *f_rng, void *p_rng, const unsigned char *label, size_t label_len, size_t ilen, const unsigned char *input, unsigned char *output), (ctx, f_rng, p_rng, label, label_len, ilen, input, output))
#endif
/* clang-format on */
