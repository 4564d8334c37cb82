/* wolfSSL 5.9.4 for the native agent's stack `wolfssl-5.9` (agents/native/libraries.py builds
 * it from the crates.io crate wolfssl-sys 5.3.0, pinned in iotsecbench/sources.py; its
 * headers read this file as user_settings.h under WOLFSSL_USER_SETTINGS; docs/native-agents.md
 * lists the settings).
 *
 * What it is: a TLS 1.2/1.3 *client* built the way wolfSSL's own embedded profile
 * (examples/configs/user_settings_embedded.h, its defaults) builds one for a microcontroller —
 * portable C (no assembly), the single-precision (SP) maths in its small form, big buffers on
 * the heap instead of the stack (WOLFSSL_SMALL_STACK), no fixed-point ECC cache, no OpenSSL
 * compatibility layer — so the heap a handshake needs is close to the dynamic RAM a device
 * would need for it (Debian's desktop build keeps caches and stack buffers that hide or
 * inflate it: docs/native-agents.md). With it, what the lab's profiles ask (docs/tls.md,
 * docs/post-quantum.md):
 *
 *   the suites, groups and certificates of Debian's wolfSSL 5.5 as the agent uses them (ECDHE,
 *   DHE and static RSA suites with AES-GCM/CCM/CBC and ChaCha20-Poly1305; X25519, X448,
 *   P-256/384/521, FFDHE-2048/3072; RSA, ECDSA and Ed25519 certificates); ML-KEM-512/768/1024
 *   alone and in the hybrids X25519MLKEM768, SecP256r1MLKEM768 and SecP384r1MLKEM1024 (the IANA
 *   code points OpenSSL 3.5 uses); ML-DSA-44/65/87 certificates (FIPS 204 final OIDs); session
 *   IDs and tickets; the secret callbacks (--keylog); the payload schemes' primitives. */
#ifndef IOTSB_WOLFSSL_HOST_SETTINGS_H
#define IOTSB_WOLFSSL_HOST_SETTINGS_H

/* Platform: Linux (configure's header probes), files for the certificates, pthreads for the
 * session cache's lock, /dev/urandom. */
#define HAVE_SYS_TIME_H
#define HAVE_ERRNO_H
#define WOLFSSL_IGNORE_FILE_WARN
#define WC_NO_ASYNC_THREADING
#define NO_WOLFSSL_SERVER /* the agent is a client */

/* The embedded profile's build: portable C, small code, buffers on the heap */
#define WOLFSSL_NO_ASM
#define WOLFSSL_SMALL_STACK
#define TFM_TIMING_RESISTANT
#define ECC_TIMING_RESISTANT
#define WC_RSA_BLINDING

/* Protocol */
#define WOLFSSL_TLS13
#define NO_OLD_TLS /* no SSL 3.0, TLS 1.0 or 1.1 */
#define HAVE_TLS_EXTENSIONS
#define HAVE_SUPPORTED_CURVES
#define HAVE_EXTENDED_MASTER /* configure's defaults: what a TLS 1.2 ClientHello carries */
#define HAVE_ENCRYPT_THEN_MAC
#define HAVE_SNI
#define HAVE_SESSION_TICKET
#define MICRO_SESSION_CACHE /* one cached session, as the embedded profile advises a client of
                               one server (resumption needs the cache's API; the default 33
                               sessions would hold a ticket per connection on the heap) */
#define HAVE_SECRET_CALLBACK     /* wolfSSL_set_(tls13_)secret_cb: the key log */
#define WOLFSSL_ALWAYS_VERIFY_CB /* the agent copies the server's chain in its verify callback
                                    (not SESSION_CERTS: 83 KB of chain in every session) */
#define WOLFSSL_SET_CIPHER_BYTES /* wolfSSL_CTX_set_cipher_list_bytes: the offer in IANA numbers */
#define WOLFSSL_STATIC_RSA /* the cipher-suites study's AES256-GCM-SHA384 (RSA key transport) */
#define HAVE_HKDF

/* Public key: SP maths (small; 32-bit digits in C, sp_c32.c, as on a 32-bit microcontroller)
 * for the sizes it has, sp_int for the rest */
#define WOLFSSL_SP_MATH_ALL
#define WOLFSSL_SP_SMALL
#define WOLFSSL_HAVE_SP_RSA
#define WOLFSSL_HAVE_SP_DH
#define WOLFSSL_HAVE_SP_ECC
#define WOLFSSL_SP_384
#define WOLFSSL_SP_521
#define SP_INT_BITS 4096
#define WC_RSA_PSS /* TLS 1.3 signs with RSA-PSS */
#define WOLFSSL_PSS_LONG_SALT
#define HAVE_ECC
#define ECC_USER_CURVES
#define HAVE_ECC384
#define HAVE_ECC521
#define ECC_SHAMIR
#define HAVE_CURVE25519
#define HAVE_ED25519
#define HAVE_CURVE448
#define HAVE_ED448
#define HAVE_FFDHE_2048
#define HAVE_FFDHE_3072
#define WOLFSSL_HAVE_MLKEM /* FIPS 203: ML-KEM-512, -768 and -1024 */
#define WOLFSSL_WC_MLKEM
#define WOLFSSL_MLKEM_SMALL /* the embedded profile: loops, not unrolled code */
#define WOLFSSL_MLKEM_NO_LARGE_CODE
#define WOLFSSL_MLKEM_DYNAMIC_KEYS
#define WOLFSSL_PQC_HYBRIDS /* X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024 */
/* ML-KEM alone as a TLS group (MLKEM768 = 0x0201) stays on: WOLFSSL_TLS_NO_MLKEM_STANDALONE
 * (configure's default) would leave only the hybrids. */
#define WOLFSSL_HAVE_MLDSA /* FIPS 204 final, with its X.509 OIDs: ML-DSA-44, -65, -87 */
#define WOLFSSL_WC_MLDSA
#define WOLFSSL_MLDSA_SMALL /* the embedded profile */

/* Symmetric and hashes */
#define HAVE_AESGCM
#define GCM_TABLE_4BIT
#define HAVE_AESCCM
#define HAVE_AES_CBC
#define HAVE_AES_DECRYPT
#define WOLFSSL_AES_COUNTER
#define WOLFSSL_AES_DIRECT
#define HAVE_CHACHA
#define HAVE_POLY1305
#define HAVE_ONE_TIME_AUTH
#define WOLFSSL_SHA224
#define WOLFSSL_SHA384
#define WOLFSSL_SHA512
#define WOLFSSL_SHA3
#define WOLFSSL_SHAKE128
#define WOLFSSL_SHAKE256
#define HAVE_HASHDRBG

/* Certificates */
#define WOLFSSL_ASN_TEMPLATE
#define WOLFSSL_CERT_EXT

/* Off: what no profile uses */
#define NO_DSA
#define NO_RC4
#define NO_MD4
#define NO_DES3
#define NO_DES3_TLS_SUITES
#define NO_PSK
#define NO_PWDBASED

#endif
