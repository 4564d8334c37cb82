/* mbedTLS 3.6 configured as a device's TLS client would ship it (MBEDTLS_CONFIG_FILE of the
 * device client firmware, docs/device-client.md): TLS 1.2 and TLS 1.3 as a client only, the
 * ECDHE key exchanges with RSA and ECDSA P-256 certificates (and RSA key transport, which
 * older brokers still offer), X25519 and P-256 key shares, AES-GCM and ChaCha20-Poly1305,
 * X.509 chains verified against one CA. What a device has no use for is off: the server side,
 * renegotiation, DTLS, session tickets (no resumption), a file system, sockets, a clock (so no
 * validity dates are checked: the device has no real-time clock), and the legacy hashes and
 * ciphers. Every allocation goes through the firmware's counting allocator; the entropy
 * source is the firmware's seeded stand-in for a hardware TRNG (MBEDTLS_ENTROPY_HARDWARE_ALT),
 * behind mbedTLS's own CTR_DRBG. AES tables in flash and mbedTLS's multiply-accumulate
 * assembly (UMAAL on the Cortex-M4; RV32 has none) as in the primitives' builds. */
#ifndef IOTSB_MBEDTLS_DEVICE_CONFIG_H
#define IOTSB_MBEDTLS_DEVICE_CONFIG_H

#include <stddef.h>

/* Platform: bare metal, counted heap, seeded entropy. */
#define MBEDTLS_HAVE_ASM
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
void *vm_calloc(size_t count, size_t size); /* ../../firmware/counted_heap.c */
void vm_free(void *pointer);
#define MBEDTLS_PLATFORM_CALLOC_MACRO vm_calloc
#define MBEDTLS_PLATFORM_FREE_MACRO vm_free
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_ENTROPY_HARDWARE_ALT
#define MBEDTLS_ENTROPY_C
#define MBEDTLS_CTR_DRBG_C
#define MBEDTLS_PSA_CRYPTO_C
#define MBEDTLS_PSA_KEY_SLOT_COUNT 8 /* a handshake holds a few keys at once */
#define MBEDTLS_USE_PSA_CRYPTO

/* Symmetric: the suites' record protection and the hashes. */
#define MBEDTLS_AES_C
#define MBEDTLS_AES_ROM_TABLES
#define MBEDTLS_GCM_C
#define MBEDTLS_CHACHA20_C
#define MBEDTLS_POLY1305_C
#define MBEDTLS_CHACHAPOLY_C
#define MBEDTLS_CIPHER_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA224_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA384_C
#define MBEDTLS_SHA512_C
#define MBEDTLS_HKDF_C

/* Public key: ECDHE and the certificates' signatures. */
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED
#define MBEDTLS_ECP_NIST_OPTIM
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PKCS1_V21
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C
#define MBEDTLS_OID_C
#define MBEDTLS_BASE64_C
#define MBEDTLS_PEM_PARSE_C /* the CA and the client credentials arrive as PEM */

/* X.509: the server's chain against one CA. */
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
#define MBEDTLS_X509_RSASSA_PSS_SUPPORT

/* TLS: a client of versions 1.2 and 1.3. */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_SSL_PROTO_TLS1_3
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL_ENABLED
#define MBEDTLS_SSL_TLS1_3_COMPATIBILITY_MODE
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_RSA_ENABLED
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#define MBEDTLS_SSL_ENCRYPT_THEN_MAC
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE /* mbedTLS 3.6 requires it for TLS 1.3 */
#define MBEDTLS_SSL_IN_CONTENT_LEN 16384 /* a server may send records of 16 KiB */
#define MBEDTLS_SSL_OUT_CONTENT_LEN 4096 /* the client's own records are small */

/* The payload schemes' build (mbedtls-scheme: IOTSB_DEVICE_SCHEMES), the native agent's
 * scheme.c on this library: the block modes docs/wire-format.md's ciphers use besides GCM, and
 * the block-sizes study's finite-field DH (RFC 7919 ffdhe2048; the TLS build stays without
 * DHE). RSA-OAEP is MBEDTLS_PKCS1_V21, above. */
#ifdef IOTSB_DEVICE_SCHEMES
#define MBEDTLS_CCM_C
#define MBEDTLS_CIPHER_MODE_CBC
#define MBEDTLS_CIPHER_MODE_CTR
#define MBEDTLS_DHM_C
#endif

#endif
