/* The payload schemes' primitives on mbedTLS (crypto.h): the native agent's Debian 2.28, and
 * the device client's 3.6 (its mbedtls-scheme build), to which IOTSB_DEVICE_SCHEMES adds the
 * block-sizes study's key transports — RFC 7919 ffdhe2048 on mbedTLS's DHM, and RSA-OAEP. */
#include "crypto.h"

#include "heap.h"

#include <string.h>

#include <mbedtls/aes.h>
#include <mbedtls/ccm.h>
#include <mbedtls/chachapoly.h>
#include <mbedtls/ecdh.h>
#include <mbedtls/gcm.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>
#ifdef IOTSB_DEVICE_SCHEMES
#include <mbedtls/dhm.h>
#include <mbedtls/rsa.h>
#include <mbedtls/sha256.h>
#endif

int stack_random_callback(void *context, unsigned char *out, size_t len); /* stack_mbedtls.c */

struct crypto_key {
    enum cipher_kind kind;
    union {
        mbedtls_gcm_context gcm;
        mbedtls_ccm_context ccm;
        mbedtls_chachapoly_context chachapoly;
        struct {
            mbedtls_aes_context encrypt, decrypt;
        } aes;
    } u;
};

struct crypto_key *crypto_key_new(enum cipher_kind kind, const uint8_t *key, size_t key_len)
{
    struct crypto_key *k = iotsb_tls_calloc(1, sizeof *k);
    if (k == NULL)
        return NULL;
    k->kind = kind;
    unsigned bits = (unsigned)key_len * 8;
    int rc;
    switch (kind) {
    case CIPHER_GCM:
        mbedtls_gcm_init(&k->u.gcm);
        rc = mbedtls_gcm_setkey(&k->u.gcm, MBEDTLS_CIPHER_ID_AES, key, bits);
        break;
    case CIPHER_CCM:
        mbedtls_ccm_init(&k->u.ccm);
        rc = mbedtls_ccm_setkey(&k->u.ccm, MBEDTLS_CIPHER_ID_AES, key, bits);
        break;
    case CIPHER_CHACHAPOLY:
        mbedtls_chachapoly_init(&k->u.chachapoly);
        rc = key_len == 32 ? mbedtls_chachapoly_setkey(&k->u.chachapoly, key) : -1;
        break;
    default:
        mbedtls_aes_init(&k->u.aes.encrypt);
        mbedtls_aes_init(&k->u.aes.decrypt);
        rc = mbedtls_aes_setkey_enc(&k->u.aes.encrypt, key, bits);
        if (rc == 0 && kind == CIPHER_CBC)
            rc = mbedtls_aes_setkey_dec(&k->u.aes.decrypt, key, bits);
    }
    if (rc != 0) {
        crypto_key_free(k);
        return NULL;
    }
    return k;
}

void crypto_key_free(struct crypto_key *k)
{
    if (k == NULL)
        return;
    switch (k->kind) {
    case CIPHER_GCM: mbedtls_gcm_free(&k->u.gcm); break;
    case CIPHER_CCM: mbedtls_ccm_free(&k->u.ccm); break;
    case CIPHER_CHACHAPOLY: mbedtls_chachapoly_free(&k->u.chachapoly); break;
    default:
        mbedtls_aes_free(&k->u.aes.encrypt);
        mbedtls_aes_free(&k->u.aes.decrypt);
    }
    iotsb_tls_free(k);
}

int crypto_aead_seal(struct crypto_key *k, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out, uint8_t *tag, size_t tag_len)
{
    switch (k->kind) {
    case CIPHER_GCM:
        return mbedtls_gcm_crypt_and_tag(&k->u.gcm, MBEDTLS_GCM_ENCRYPT, len, nonce, nonce_len,
                                         aad, aad_len, in, out, tag_len, tag) ? -1 : 0;
    case CIPHER_CCM:
        return mbedtls_ccm_encrypt_and_tag(&k->u.ccm, len, nonce, nonce_len, aad, aad_len, in,
                                           out, tag, tag_len) ? -1 : 0;
    case CIPHER_CHACHAPOLY:
        return nonce_len == 12 && tag_len == 16 &&
                       mbedtls_chachapoly_encrypt_and_tag(&k->u.chachapoly, len, nonce, aad,
                                                          aad_len, in, out, tag) == 0
                   ? 0 : -1;
    default:
        return -1;
    }
}

int crypto_aead_open(struct crypto_key *k, const uint8_t *nonce, size_t nonce_len,
                     const uint8_t *aad, size_t aad_len, const uint8_t *in, size_t len,
                     uint8_t *out, const uint8_t *tag, size_t tag_len)
{
    int rc = -1;
    switch (k->kind) {
    case CIPHER_GCM:
        rc = mbedtls_gcm_auth_decrypt(&k->u.gcm, len, nonce, nonce_len, aad, aad_len, tag,
                                      tag_len, in, out);
        break;
    case CIPHER_CCM:
        rc = mbedtls_ccm_auth_decrypt(&k->u.ccm, len, nonce, nonce_len, aad, aad_len, in, out,
                                      tag, tag_len);
        break;
    case CIPHER_CHACHAPOLY:
        if (nonce_len == 12 && tag_len == 16)
            rc = mbedtls_chachapoly_auth_decrypt(&k->u.chachapoly, len, nonce, aad, aad_len, tag,
                                                 in, out);
        break;
    default:
        break;
    }
    if (rc != 0) {
        mbedtls_platform_zeroize(out, len);
        return -1;
    }
    return 0;
}

int crypto_aes_ctr(struct crypto_key *k, const uint8_t counter[16], const uint8_t *in,
                   uint8_t *out, size_t len)
{
    unsigned char block[16], stream[16];
    size_t offset = 0;
    memcpy(block, counter, 16);
    return mbedtls_aes_crypt_ctr(&k->u.aes.encrypt, len, &offset, block, stream, in, out) ? -1 : 0;
}

int crypto_aes_cbc(struct crypto_key *k, bool encrypt, const uint8_t iv[16], const uint8_t *in,
                   uint8_t *out, size_t len)
{
    unsigned char chain[16];
    memcpy(chain, iv, 16);
    if (encrypt)
        return mbedtls_aes_crypt_cbc(&k->u.aes.encrypt, MBEDTLS_AES_ENCRYPT, len, chain, in, out)
                   ? -1 : 0;
    return mbedtls_aes_crypt_cbc(&k->u.aes.decrypt, MBEDTLS_AES_DECRYPT, len, chain, in, out)
               ? -1 : 0;
}

int crypto_hmac_sha256(const uint8_t *key, size_t key_len, const struct crypto_part *parts,
                       size_t count, uint8_t out[32])
{
    mbedtls_md_context_t md;
    mbedtls_md_init(&md);
    int rc = mbedtls_md_setup(&md, mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), 1);
    if (rc == 0)
        rc = mbedtls_md_hmac_starts(&md, key, key_len);
    for (size_t i = 0; rc == 0 && i < count; i++)
        rc = mbedtls_md_hmac_update(&md, parts[i].bytes, parts[i].len);
    if (rc == 0)
        rc = mbedtls_md_hmac_finish(&md, out);
    mbedtls_md_free(&md);
    return rc ? -1 : 0;
}

struct crypto_dh {
    enum agreement agreement;
    mbedtls_ecp_group group;
    mbedtls_mpi secret;
    mbedtls_ecp_point public;
#ifdef IOTSB_DEVICE_SCHEMES
    mbedtls_dhm_context dhm; /* ffdhe2048 */
#endif
};

void crypto_dh_free(struct crypto_dh *dh)
{
    if (dh == NULL)
        return;
    mbedtls_ecp_group_free(&dh->group);
    mbedtls_mpi_free(&dh->secret);
    mbedtls_ecp_point_free(&dh->public);
#ifdef IOTSB_DEVICE_SCHEMES
    if (dh->agreement == AGREE_FFDHE2048)
        mbedtls_dhm_free(&dh->dhm);
#endif
    iotsb_tls_free(dh);
}

#ifdef IOTSB_DEVICE_SCHEMES
static const unsigned char FFDHE2048_P[] = MBEDTLS_DHM_RFC7919_FFDHE2048_P_BIN;
static const unsigned char FFDHE2048_G[] = MBEDTLS_DHM_RFC7919_FFDHE2048_G_BIN;
#define FFDH_BYTES sizeof FFDHE2048_P
/* The private exponent's size: 2 x the group's 112-bit strength (SP 800-56A rev. 3
 * §5.6.1.1.4), what OpenSSL draws for the named group and so the host's agents (224-225
 * bits); mbedTLS's TLS would draw one as long as p. */
#define FFDH_PRIVATE_BYTES 28

static int ffdh_new(struct crypto_dh *dh, uint8_t *public_out, size_t *public_len)
{
    mbedtls_mpi p, g;
    mbedtls_mpi_init(&p);
    mbedtls_mpi_init(&g);
    mbedtls_dhm_init(&dh->dhm);
    int rc = mbedtls_mpi_read_binary(&p, FFDHE2048_P, sizeof FFDHE2048_P);
    rc = rc ? rc : mbedtls_mpi_read_binary(&g, FFDHE2048_G, sizeof FFDHE2048_G);
    rc = rc ? rc : mbedtls_dhm_set_group(&dh->dhm, &p, &g);
    /* g^x mod p, left-padded to the group's 256 bytes */
    rc = rc ? rc : mbedtls_dhm_make_public(&dh->dhm, FFDH_PRIVATE_BYTES, public_out, FFDH_BYTES,
                                           stack_random_callback, NULL);
    mbedtls_mpi_free(&p);
    mbedtls_mpi_free(&g);
    *public_len = FFDH_BYTES;
    return rc ? -1 : 0;
}

/* SP 800-56A §5.6.2.3.1 full validation of the peer's value, as the host's agents do
 * (security/agreements.py, validate_ffdh_public): 2 <= y <= p - 2, and y^q = 1 mod p with
 * q = (p - 1) / 2, the prime-order subgroup (mbedTLS's DHM checks the range only). Then the
 * shared secret g^xy mod p (mbedTLS blinds the exponentiation), left-padded to 256 bytes. */
static int ffdh_derive(struct crypto_dh *dh, const uint8_t *peer, size_t peer_len, uint8_t *out)
{
    if (peer_len != FFDH_BYTES)
        return -1;
    mbedtls_mpi p, q, y, power;
    mbedtls_mpi_init(&p);
    mbedtls_mpi_init(&q);
    mbedtls_mpi_init(&y);
    mbedtls_mpi_init(&power);
    int rc = mbedtls_mpi_read_binary(&p, FFDHE2048_P, sizeof FFDHE2048_P);
    rc = rc ? rc : mbedtls_mpi_read_binary(&y, peer, peer_len);
    rc = rc ? rc : mbedtls_mpi_sub_int(&q, &p, 1);
    if (rc == 0 && (mbedtls_mpi_cmp_int(&y, 2) < 0 || mbedtls_mpi_cmp_mpi(&y, &q) >= 0))
        rc = -1; /* outside [2, p - 2] */
    rc = rc ? rc : mbedtls_mpi_shift_r(&q, 1);
    rc = rc ? rc : mbedtls_mpi_exp_mod(&power, &y, &q, &p, NULL);
    if (rc == 0 && mbedtls_mpi_cmp_int(&power, 1) != 0)
        rc = -1; /* outside the prime-order subgroup */
    size_t written = 0;
    rc = rc ? rc : mbedtls_dhm_read_public(&dh->dhm, peer, peer_len);
    rc = rc ? rc : mbedtls_dhm_calc_secret(&dh->dhm, out, FFDH_BYTES, &written,
                                           stack_random_callback, NULL);
    if (rc == 0 && written < FFDH_BYTES) { /* mbedTLS drops leading zero bytes (TLS's form) */
        memmove(out + FFDH_BYTES - written, out, written);
        memset(out, 0, FFDH_BYTES - written);
    }
    mbedtls_mpi_free(&p);
    mbedtls_mpi_free(&q);
    mbedtls_mpi_free(&y);
    mbedtls_mpi_free(&power);
    return rc ? -1 : 0;
}

int crypto_sha256(const uint8_t *in, size_t len, uint8_t out[32])
{
    return mbedtls_sha256(in, len, out, 0) ? -1 : 0;
}

int crypto_rsa_oaep_encrypt(const uint8_t modulus[RSA_MODULUS_BYTES], const uint8_t *in,
                            size_t len, uint8_t out[RSA_MODULUS_BYTES])
{
    /* the host's check (security/agreements.py RsaOaepAgreement): an odd 2048-bit modulus */
    if (!(modulus[0] & 0x80) || !(modulus[RSA_MODULUS_BYTES - 1] & 1))
        return -1;
    static const unsigned char exponent[] = {0x01, 0x00, 0x01}; /* 65537 */
    mbedtls_rsa_context rsa;
    mbedtls_rsa_init(&rsa);
    int rc = mbedtls_rsa_set_padding(&rsa, MBEDTLS_RSA_PKCS_V21, MBEDTLS_MD_SHA256);
    rc = rc ? rc : mbedtls_rsa_import_raw(&rsa, modulus, RSA_MODULUS_BYTES, NULL, 0, NULL, 0,
                                          NULL, 0, exponent, sizeof exponent);
    rc = rc ? rc : mbedtls_rsa_complete(&rsa);
    rc = rc ? rc : mbedtls_rsa_check_pubkey(&rsa);
    rc = rc ? rc : mbedtls_rsa_rsaes_oaep_encrypt(&rsa, stack_random_callback, NULL, NULL, 0,
                                                  len, in, out);
    mbedtls_rsa_free(&rsa);
    return rc ? -1 : 0;
}
#endif

struct crypto_dh *crypto_dh_new(enum agreement agreement, uint8_t *public_out, size_t *public_len)
{
    struct crypto_dh *dh = iotsb_tls_calloc(1, sizeof *dh);
    if (dh == NULL)
        return NULL;
    dh->agreement = agreement;
#ifdef IOTSB_DEVICE_SCHEMES
    if (agreement == AGREE_FFDHE2048) {
        if (ffdh_new(dh, public_out, public_len) != 0) {
            crypto_dh_free(dh);
            return NULL;
        }
        return dh;
    }
#endif
    mbedtls_ecp_group_init(&dh->group);
    mbedtls_mpi_init(&dh->secret);
    mbedtls_ecp_point_init(&dh->public);
    size_t size = agreement == AGREE_P256 ? 65 : 32;
    /* X25519: mbedTLS writes and reads the u coordinate little-endian (RFC 7748). */
    if (mbedtls_ecp_group_load(&dh->group, agreement == AGREE_P256 ? MBEDTLS_ECP_DP_SECP256R1
                                                                   : MBEDTLS_ECP_DP_CURVE25519) ||
        mbedtls_ecdh_gen_public(&dh->group, &dh->secret, &dh->public, stack_random_callback,
                                NULL) ||
        mbedtls_ecp_point_write_binary(&dh->group, &dh->public, MBEDTLS_ECP_PF_UNCOMPRESSED,
                                       public_len, public_out, size) ||
        *public_len != size) {
        crypto_dh_free(dh);
        return NULL;
    }
    return dh;
}

int crypto_dh_derive(struct crypto_dh *dh, const uint8_t *peer, size_t peer_len, uint8_t *out)
{
#ifdef IOTSB_DEVICE_SCHEMES
    if (dh->agreement == AGREE_FFDHE2048)
        return ffdh_derive(dh, peer, peer_len, out);
#endif
    size_t size = dh->agreement == AGREE_P256 ? 65 : 32;
    if (peer_len != size || (dh->agreement == AGREE_P256 && peer[0] != 0x04))
        return -1;
    mbedtls_ecp_point point;
    mbedtls_mpi shared;
    mbedtls_ecp_point_init(&point);
    mbedtls_mpi_init(&shared);
    /* read_binary + check_pubkey: on the curve, not the point at infinity (P-256); the
     * X25519 u coordinate below 2^255 with its top bit masked as RFC 7748 asks. */
    int rc = mbedtls_ecp_point_read_binary(&dh->group, &point, peer, peer_len);
    if (rc == 0)
        rc = mbedtls_ecp_check_pubkey(&dh->group, &point);
    if (rc == 0)
        rc = mbedtls_ecdh_compute_shared(&dh->group, &shared, &point, &dh->secret,
                                         stack_random_callback, NULL);
    if (rc == 0)
        rc = dh->agreement == AGREE_P256 ? mbedtls_mpi_write_binary(&shared, out, 32)
                                         : mbedtls_mpi_write_binary_le(&shared, out, 32);
    mbedtls_ecp_point_free(&point);
    mbedtls_mpi_free(&shared);
    uint8_t any = 0;
    for (size_t i = 0; rc == 0 && i < 32; i++)
        any |= out[i];
    return rc == 0 && any ? 0 : -1; /* an all-zero X25519 result: a low-order peer (§6.1) */
}
