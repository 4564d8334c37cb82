/* wolfCrypt's settings (wolfSSL 5.9.4, built from its registry source: vmcu/sources.py), read
 * by its headers under WOLFSSL_USER_SETTINGS, as a microcontroller build would have them: the
 * crypto alone, no file system,
 * threads, clock or operating system; ML-KEM, ML-DSA and Ed25519 in portable C (no assembly
 * for either target, so both count the same C); every allocation through the harness's
 * counting allocator and every random byte from its deterministic generator. */
#ifndef IOTSB_WOLFSSL_VMCU_SETTINGS_H
#define IOTSB_WOLFSSL_VMCU_SETTINGS_H

#include <stddef.h>

#define WOLFCRYPT_ONLY
#define SINGLE_THREADED
#define NO_FILESYSTEM
#define NO_WRITEV
#define NO_MAIN_DRIVER
#define NO_DEV_RANDOM
#define WOLFSSL_NO_SOCK
#define NO_ASN_TIME
#define WOLFSSL_IGNORE_FILE_WARN
#define NO_ERROR_STRINGS
#define WOLFSSL_SMALL_STACK_CACHE_OFF
#define TFM_TIMING_RESISTANT
#define ECC_TIMING_RESISTANT
#define WC_RSA_BLINDING

/* What is not counted here: off. */
#define NO_RSA
#define NO_DH
#define NO_DSA
#define NO_DES3
#define NO_MD4
#define NO_MD5
#define NO_SHA
#define NO_RC4
#define NO_PWDBASED
#define NO_HMAC
#define NO_AES
#define NO_OLD_TLS
#define NO_PSK
#define NO_ASN
#define NO_CODING
#define NO_CERTS
#define WOLFSSL_NO_PEM

/* ML-KEM (FIPS 203), ML-DSA (FIPS 204), Ed25519 and the hashes they need. */
#define WOLFSSL_HAVE_MLKEM
#define WOLFSSL_WC_MLKEM
#define WOLFSSL_WC_ML_KEM_512
#define WOLFSSL_WC_ML_KEM_768
#define WOLFSSL_WC_ML_KEM_1024
#define HAVE_DILITHIUM
#define WOLFSSL_WC_DILITHIUM
#define WOLFSSL_DILITHIUM_NO_ASN1
#define WOLFSSL_NO_ML_DSA_87 /* ML-DSA-44 and -65: what the handshakes and schemes use */
#define HAVE_ED25519
#define WOLFSSL_SHA3
#define WOLFSSL_SHAKE128
#define WOLFSSL_SHAKE256
#define WOLFSSL_SHA512
#define WOLFSSL_NO_HASH_RAW

/* Randomness from the harness (vmcu.h: vm_random). */
int vm_random_block(unsigned char *, unsigned int);
#define CUSTOM_RAND_GENERATE_BLOCK vm_random_block

/* Memory from the harness's counting allocator. */
void *vm_calloc(size_t, size_t); /* unnamed: wolfSSL defines macros of common names */
void vm_free(void *);
void *vm_realloc(void *, size_t);
#define XMALLOC_OVERRIDE
#define XMALLOC(size, heap, type) vm_calloc(1, (size))
#define XFREE(pointer, heap, type) vm_free(pointer)
#define XREALLOC(pointer, size, heap, type) vm_realloc((pointer), (size))

#endif
