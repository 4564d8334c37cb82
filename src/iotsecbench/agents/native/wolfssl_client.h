/* What both wolfSSL clients share, the per-device agent's (tls_wolfssl.c) and the fleet
 * agent's (fleet_tls_wolfssl.c): the context of a profile's offer, a connection's offer, its
 * I/O through our own callbacks (which keep the handshake's records), the server's chain as
 * received, and what a finished handshake negotiated. */
#ifndef IOTSB_WOLFSSL_CLIENT_H
#define IOTSB_WOLFSSL_CLIENT_H

#include "tls.h"

#include "wolfssl_options.h"
#include <wolfssl/ssl.h>

/* A connection's I/O context (the first member of each client's own struct): the socket, the
 * transcript its records feed (NULL: none), and the chain keep_chain copied. */
struct wolfssl_io {
    int fd;
    struct tls_transcript *transcript;
    uint8_t **chain; /* the server's certificates as received, leaf first (agent memory) */
    size_t *chain_len;
    size_t chain_count;
};

/* A client context for the options (TLS 1.2 or 1.3, the CA and the chain's copy, the suites,
 * the client certificate when mutual, our I/O callbacks): NULL with why set on failure. */
WOLFSSL_CTX *wolfssl_client_context(const struct tls_options *o, char *why, size_t why_cap);
/* A connection of ctx over io: the groups in order, the server name checked, session offered
 * (NULL: none). NULL with why set on failure. */
WOLFSSL *wolfssl_client_new(WOLFSSL_CTX *ctx, struct wolfssl_io *io, const struct tls_options *o,
                            WOLFSSL_SESSION *session, char *why, size_t why_cap);
/* "wolfssl: <what>: <wolfSSL's text> (code)" in why; ssl may be NULL. */
void wolfssl_client_why(WOLFSSL *ssl, int result, const char *what, char *why, size_t cap);
/* Version, suite, bits, resumed; io's chain handed over to out (the caller frees it). */
void wolfssl_client_describe(WOLFSSL *ssl, struct wolfssl_io *io, struct tls_result *out);
void wolfssl_io_free(struct wolfssl_io *io); /* the chain not handed over */

#endif
