/* What both mbedTLS clients share, the per-device agent's (tls_mbedtls.c) and the fleet
 * agent's (fleet_tls_mbedtls.c): the client configuration of a profile's offer, and what a
 * finished handshake negotiated. */
#ifndef IOTSB_MBEDTLS_CLIENT_H
#define IOTSB_MBEDTLS_CLIENT_H

#include "tls.h"

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

/* A connection's I/O, the first member of both clients' connection structs and the context of
 * the callbacks below (as wolfssl_client.h's wolfssl_io): the socket, the transcript its
 * handshake messages are fed to (NULL, or not recording: none), and how many certificates
 * mbedTLS verified (none on a resumed session: how 2.28 tells it was resumed). */
struct mbedtls_io {
    int fd;
    struct tls_transcript *transcript;
    int certificates_verified;
};

/* mbedtls_ssl_set_bio's send and receive over io->fd, non-blocking (WANT_WRITE/WANT_READ),
 * feeding the transcript; mbedtls_ssl_set_verify's counter (the verdict stays mbedTLS's). */
int mbedtls_io_send(void *io, const unsigned char *data, size_t len);
int mbedtls_io_recv(void *io, unsigned char *data, size_t len);
int mbedtls_io_count_verified(void *io, mbedtls_x509_crt *crt, int depth, uint32_t *flags);

struct mbedtls_client {
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    mbedtls_ssl_config config;
    mbedtls_x509_crt ca, own;
    mbedtls_pk_context key;
    int suites[64];
    mbedtls_ecp_group_id curves[5];
};

/* Initialises c and configures it for the options (TLS 1.2, the CA, the suites and groups,
 * the client certificate when mutual): 0, or -1 with why set. Free with mbedtls_client_free
 * either way. */
int mbedtls_client_configure(struct mbedtls_client *c, const struct tls_options *o, char *why,
                             size_t why_cap);
void mbedtls_client_free(struct mbedtls_client *c);
/* "mbedtls: <what>: <mbedTLS's text> (-0xNNNN)" in why. */
void mbedtls_client_why(char *why, size_t cap, int code, const char *what);
/* The handshake's verdict as a reason: the certificate's flags when it failed on them. */
void mbedtls_client_handshake_why(const mbedtls_ssl_context *ssl, int code, char *why,
                                  size_t cap);
/* Version, suite, its bits; resumed when a session was offered and no certificate verified
 * (2.28 has no call that says a session was resumed). No chain: TLS 1.2's Certificate
 * message is in the clear, in the transcript. */
void mbedtls_client_describe(const mbedtls_ssl_context *ssl, bool offered,
                             int certificates_verified, struct tls_result *out);

#endif
