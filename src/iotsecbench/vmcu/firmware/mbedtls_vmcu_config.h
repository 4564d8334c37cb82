/* mbedTLS 2.28 configured as a microcontroller build would be (MBEDTLS_CONFIG_FILE): only the
 * primitives the virtual-MCU benchmark counts, AES tables in flash (MBEDTLS_AES_ROM_TABLES, as
 * RAM-poor devices build it), no file system, clock or entropy source, and every allocation
 * through the harness's counting allocator. MBEDTLS_HAVE_ASM stays on: mbedTLS's own assembly
 * multiplier for the Cortex-M4 (UMAAL) is what a device build uses; RISC-V has none, so RV32
 * runs the portable C. */
#ifndef IOTSB_MBEDTLS_VMCU_CONFIG_H
#define IOTSB_MBEDTLS_VMCU_CONFIG_H

#include <stddef.h>

#define MBEDTLS_HAVE_ASM
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
void *vm_calloc(size_t count, size_t size);
void vm_free(void *pointer);
#define MBEDTLS_PLATFORM_CALLOC_MACRO vm_calloc
#define MBEDTLS_PLATFORM_FREE_MACRO vm_free

/* Symmetric: the payload schemes' ciphers and MACs. */
#define MBEDTLS_AES_C
#define MBEDTLS_AES_ROM_TABLES
#define MBEDTLS_CIPHER_C
#define MBEDTLS_CIPHER_MODE_CTR
#define MBEDTLS_GCM_C
#define MBEDTLS_CCM_C
#define MBEDTLS_CHACHA20_C
#define MBEDTLS_POLY1305_C
#define MBEDTLS_CHACHAPOLY_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_MD_C

/* Public key: the handshakes' key agreements and signatures. */
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED
#define MBEDTLS_ECP_NIST_OPTIM
#define MBEDTLS_ECP_NO_INTERNAL_RNG /* every call passes the harness's generator */
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PKCS1_V21
#define MBEDTLS_OID_C
#define MBEDTLS_GENPRIME

#include "mbedtls/check_config.h"
#endif
