/* The handshakes' public-key operations on mbedTLS (built from its registry source, as the
 * payload AEADs are), one family per build (VM_PK): X25519, P-256 (ECDH and ECDSA) or RSA.
 * Each operation loads its curve or uses the key set once (setkey), then does what one side of
 * a handshake does; randomness (ephemeral keys, ECDSA nonces, RSA blinding) comes from the
 * harness's deterministic generator, so counts repeat. */
#include <string.h>

#include "vmcu.h"

#define X25519 1
#define P256 2
#define RSA 3

#if VM_PK == RSA
#include "mbedtls/rsa.h"
static mbedtls_rsa_context rsa;
static int keyed;

/* setkey(n, e[, d, p, q]): a public key, or a private one with its CRT values completed. */
static int32_t setkey(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    if (n != 2 && n != 5)
        return VM_BAD_INPUT;
    if (keyed)
        mbedtls_rsa_free(&rsa);
    mbedtls_rsa_init(&rsa, MBEDTLS_RSA_PKCS_V15, 0);
    int status = n == 2
                     ? mbedtls_rsa_import_raw(&rsa, in[0].data, in[0].len, NULL, 0, NULL, 0, NULL,
                                              0, in[1].data, in[1].len)
                     : mbedtls_rsa_import_raw(&rsa, in[0].data, in[0].len, in[3].data, in[3].len,
                                              in[4].data, in[4].len, in[2].data, in[2].len,
                                              in[1].data, in[1].len);
    if (status != 0 || mbedtls_rsa_complete(&rsa) != 0)
        return VM_BAD_INPUT;
    keyed = 1;
    return 0;
}

/* public(m) -> m^e mod n: a signature verification's (or an encryption's) exponentiation. */
static int32_t public_(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(1);
    if (!keyed || in[0].len != mbedtls_rsa_get_len(&rsa) || cap < in[0].len)
        return VM_BAD_INPUT;
    return mbedtls_rsa_public(&rsa, in[0].data, out) == 0 ? (int32_t)in[0].len : VM_REJECTED;
}

/* private(c) -> c^d mod n with CRT and blinding: a signature's (or a decryption's). */
static int32_t private_(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(1);
    if (!keyed || in[0].len != mbedtls_rsa_get_len(&rsa) || cap < in[0].len)
        return VM_BAD_INPUT;
    return mbedtls_rsa_private(&rsa, vm_random_cb, NULL, in[0].data, out) == 0
               ? (int32_t)in[0].len
               : VM_REJECTED;
}

const struct vm_entry vm_ops[] = {
    {"setkey", setkey}, {"public", public_}, {"private", private_}, {0, 0},
};

#else
#include "mbedtls/ecdh.h"
#include "mbedtls/ecdsa.h"

#if VM_PK == X25519
#define CURVE MBEDTLS_ECP_DP_CURVE25519
#define SCALAR 32
#else
#define CURVE MBEDTLS_ECP_DP_SECP256R1
#define SCALAR 32
#endif

struct curve {
    mbedtls_ecp_group group;
    mbedtls_mpi d, z, r, s;
    mbedtls_ecp_point q;
};

static int open_curve(struct curve *c)
{
    mbedtls_ecp_group_init(&c->group);
    mbedtls_mpi_init(&c->d), mbedtls_mpi_init(&c->z), mbedtls_mpi_init(&c->r);
    mbedtls_mpi_init(&c->s), mbedtls_ecp_point_init(&c->q);
    return mbedtls_ecp_group_load(&c->group, CURVE);
}

static int32_t close_curve(struct curve *c, int32_t result)
{
    mbedtls_ecp_group_free(&c->group);
    mbedtls_mpi_free(&c->d), mbedtls_mpi_free(&c->z), mbedtls_mpi_free(&c->r);
    mbedtls_mpi_free(&c->s), mbedtls_ecp_point_free(&c->q);
    return result;
}

/* keygen() -> the public key of a fresh ephemeral key pair (X25519: 32 bytes little-endian;
 * P-256: 65 bytes uncompressed): one side's first step of a key agreement. */
static int32_t keygen(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(0);
    struct curve c;
    size_t len = 0;
    if (open_curve(&c) || mbedtls_ecdh_gen_public(&c.group, &c.d, &c.q, vm_random_cb, NULL) ||
        mbedtls_ecp_point_write_binary(&c.group, &c.q, MBEDTLS_ECP_PF_UNCOMPRESSED, &len, out,
                                       cap))
        return close_curve(&c, VM_FAILED);
    return close_curve(&c, (int32_t)len);
}

/* derive(private, peer public) -> the shared secret: the agreement's second step, the peer's
 * point checked first as a TLS stack does. */
static int32_t derive(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    struct curve c;
    if (open_curve(&c) || in[0].len > SCALAR + 1 || cap < SCALAR)
        return close_curve(&c, VM_BAD_INPUT);
#if VM_PK == X25519
    uint8_t k[SCALAR]; /* RFC 7748 decodeScalar25519 */
    if (in[0].len != SCALAR)
        return close_curve(&c, VM_BAD_INPUT);
    memcpy(k, in[0].data, SCALAR);
    k[0] &= 248, k[31] &= 127, k[31] |= 64;
    int status = mbedtls_mpi_read_binary_le(&c.d, k, SCALAR);
#else
    int status = mbedtls_mpi_read_binary(&c.d, in[0].data, in[0].len);
#endif
    if (status || mbedtls_ecp_point_read_binary(&c.group, &c.q, in[1].data, in[1].len) ||
        mbedtls_ecp_check_pubkey(&c.group, &c.q))
        return close_curve(&c, VM_REJECTED);
    if (mbedtls_ecdh_compute_shared(&c.group, &c.z, &c.q, &c.d, vm_random_cb, NULL))
        return close_curve(&c, VM_REJECTED);
#if VM_PK == X25519
    status = mbedtls_mpi_write_binary_le(&c.z, out, SCALAR);
#else
    status = mbedtls_mpi_write_binary(&c.z, out, SCALAR);
#endif
    return close_curve(&c, status ? VM_FAILED : SCALAR);
}

#if VM_PK == P256
/* sign(private 32, hash 32) -> r || s: a CertificateVerify's signature. */
static int32_t sign(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(2);
    struct curve c;
    if (open_curve(&c) || in[0].len != 32 || in[1].len != 32 || cap < 64 ||
        mbedtls_mpi_read_binary(&c.d, in[0].data, 32) ||
        mbedtls_ecdsa_sign(&c.group, &c.r, &c.s, &c.d, in[1].data, 32, vm_random_cb, NULL) ||
        mbedtls_mpi_write_binary(&c.r, out, 32) || mbedtls_mpi_write_binary(&c.s, out + 32, 32))
        return close_curve(&c, VM_FAILED);
    return close_curve(&c, 64);
}

/* verify(public 65, hash 32, r || s) -> 0, or VM_REJECTED: a certificate's or a peer's
 * signature checked. */
static int32_t verify(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    VM_NEED(3);
    struct curve c;
    if (open_curve(&c) || in[1].len != 32 || in[2].len != 64)
        return close_curve(&c, VM_BAD_INPUT);
    if (mbedtls_ecp_point_read_binary(&c.group, &c.q, in[0].data, in[0].len) ||
        mbedtls_mpi_read_binary(&c.r, in[2].data, 32) ||
        mbedtls_mpi_read_binary(&c.s, in[2].data + 32, 32) ||
        mbedtls_ecdsa_verify(&c.group, in[1].data, 32, &c.q, &c.r, &c.s))
        return close_curve(&c, VM_REJECTED);
    return close_curve(&c, 0);
}
#endif

const struct vm_entry vm_ops[] = {
    {"keygen", keygen},
    {"derive", derive},
#if VM_PK == P256
    {"sign", sign},
    {"verify", verify},
#endif
    {0, 0},
};
#endif
