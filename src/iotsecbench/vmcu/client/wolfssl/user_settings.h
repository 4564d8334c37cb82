/* wolfSSL 5.9 configured as a device's TLS client would ship it (WOLFSSL_USER_SETTINGS of the
 * device client firmware, docs/device-client.md): TLS 1.2 and TLS 1.3 as a client only, ECDHE
 * with RSA and ECDSA P-256 certificates (and RSA key transport), X25519 and P-256 key shares,
 * AES-GCM and ChaCha20-Poly1305, X.509 chains verified against one CA; with
 * IOTSB_DEVICE_PQ also ML-KEM (FIPS 203: ML-KEM-768 alone and the X25519MLKEM768 hybrid) and
 * ML-DSA (FIPS 204) certificates. The public-key arithmetic is wolfSSL's single-precision
 * math in portable C with its small-code options (WOLFSSL_SP_SMALL), as embedded builds choose
 * it; no assembly on either target, so both count the same C. What a device has no use for is
 * off: the server side, DTLS, session caches and tickets (no resumption), a file system,
 * sockets (the firmware's own I/O callbacks), threads, a clock (no validity dates are checked:
 * the device has no real-time clock), error strings, the legacy hashes and ciphers. Every
 * allocation goes through the firmware's counting allocator; the seed comes from the
 * firmware's seeded stand-in for a hardware TRNG, behind wolfSSL's own Hash_DRBG. */
#ifndef IOTSB_WOLFSSL_DEVICE_SETTINGS_H
#define IOTSB_WOLFSSL_DEVICE_SETTINGS_H

#include <stddef.h>

/* Platform: bare metal, no operating system. */
#define SINGLE_THREADED
#define NO_FILESYSTEM
#define NO_WRITEV
#define NO_MAIN_DRIVER
#define NO_DEV_RANDOM
#define WOLFSSL_NO_SOCK
#define WOLFSSL_USER_IO /* the firmware's UART callbacks */
#define WOLFSSL_IGNORE_FILE_WARN
#define NO_ERROR_STRINGS
#define NO_ASN_TIME /* no real-time clock: certificate dates are not checked */
#define USER_TICKS
unsigned int LowResTimer(void);
#define WOLFSSL_USER_CURRTIME
#define XTIME(t) (0)
#define HAVE_SECRET_CALLBACK /* the TLS 1.3 secrets the host decrypts the transcript with */

/* Memory from the firmware's counting allocator (../../firmware/counted_heap.c). */
void *vm_calloc(size_t, size_t); /* unnamed: wolfSSL defines macros of common names */
void vm_free(void *);
void *vm_realloc(void *, size_t);
#define XMALLOC_OVERRIDE
#define XMALLOC(size, heap, type) vm_calloc(1, (size))
#define XFREE(pointer, heap, type) vm_free(pointer)
#define XREALLOC(pointer, size, heap, type) vm_realloc((pointer), (size))

/* Randomness: Hash_DRBG seeded from the firmware's TRNG stand-in. */
#define HAVE_HASHDRBG
int device_seed(unsigned char *output, unsigned int size);
#define CUSTOM_RAND_GENERATE_SEED device_seed

/* TLS: a client of versions 1.2 and 1.3. */
#define NO_WOLFSSL_SERVER
#define WOLFSSL_TLS13
#define HAVE_TLS_EXTENSIONS
#define HAVE_SUPPORTED_CURVES
#define HAVE_SNI
#define HAVE_EXTENDED_MASTER
#define HAVE_ENCRYPT_THEN_MAC
#define NO_OLD_TLS
#define NO_SESSION_CACHE
#define NO_PSK
#define WOLFSSL_SET_CIPHER_BYTES /* the suites to offer, by IANA id */
#define WOLFSSL_SMALL_STACK

/* Public key: SP math (portable C, small code), ECDHE and the certificates' signatures. */
#define WOLFSSL_SP_MATH_ALL
#define WOLFSSL_SP_SMALL
#define WOLFSSL_HAVE_SP_RSA
#define WOLFSSL_HAVE_SP_ECC
#define WOLFSSL_SP_4096
#define SP_INT_BITS 4096
#define TFM_TIMING_RESISTANT
#define ECC_TIMING_RESISTANT
#define WC_RSA_BLINDING
#define WC_RSA_PSS
#define HAVE_ECC
#define HAVE_CURVE25519
#define NO_DH
#define NO_DSA

/* Symmetric: the suites' record protection and the hashes. */
#define HAVE_AESGCM
#define GCM_TABLE_4BIT /* GHASH with 4-bit tables, ./configure's default and mbedTLS's method */
#define HAVE_CHACHA
#define HAVE_POLY1305
#define HAVE_HKDF
#define WOLFSSL_SHA384
#define WOLFSSL_SHA512
#define NO_DES3
#define NO_RC4
#define NO_MD4
#define NO_MD5
#define NO_SHA
#define NO_PWDBASED
#define WOLFSSL_AES_DIRECT
#define NO_AES_CBC

#ifdef IOTSB_DEVICE_PQ
/* Post-quantum: ML-KEM key shares, ML-DSA certificates (verification only: the client does not
 * sign), in wolfCrypt's portable C. */
#define WOLFSSL_HAVE_MLKEM
#define WOLFSSL_WC_MLKEM
#define WOLFSSL_PQC_HYBRIDS
#define WOLFSSL_SHA3
#define WOLFSSL_SHAKE128
#define WOLFSSL_SHAKE256
#define HAVE_DILITHIUM
#define WOLFSSL_WC_DILITHIUM
#define WOLFSSL_DILITHIUM_VERIFY_ONLY
#define WOLFSSL_NO_ML_DSA_87
#endif

#endif
