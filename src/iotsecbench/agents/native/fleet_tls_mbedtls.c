/* The fleet agent's TLS clients on mbedTLS 2.28 (Debian's: TLS 1.2 only), non-blocking. One
 * configuration per process (the CA parsed once, one random generator), one SSL context per
 * connection. The handshake crosses the wire through our own send and receive callbacks,
 * which keep its messages (transcript.c splits the records); TLS 1.2's Certificate message is
 * in the clear, so the chain is in them. A connection that offered a session and verified no
 * certificate was resumed (2.28 has no call that says so), as in tls_mbedtls.c. */
#include "fleet_tls.h"
#include "heap.h"
#include "mbedtls_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>

struct fleet_tls_context {
    struct mbedtls_client client;
    const char *server_name;
};

struct fleet_tls {
    struct mbedtls_io io; /* first: the callbacks' context */
    mbedtls_ssl_context ssl;
    bool offered;
};

struct fleet_tls_context *fleet_tls_context(const struct tls_options *o, char *why,
                                            size_t why_cap)
{
    struct fleet_tls_context *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    if (mbedtls_client_configure(&c->client, o, why, why_cap) != 0) {
        mbedtls_client_free(&c->client);
        free(c);
        return NULL;
    }
    c->server_name = o->server_name;
    return c;
}

struct fleet_tls *fleet_tls_new(struct fleet_tls_context *c, int fd, void *session,
                                struct tls_transcript *t, char *why, size_t why_cap)
{
    struct fleet_tls *tls = iotsb_tls_calloc(1, sizeof *tls);
    if (tls == NULL) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    tls->io.fd = fd;
    tls->io.transcript = t;
    mbedtls_ssl_init(&tls->ssl);
    int code = mbedtls_ssl_setup(&tls->ssl, &c->client.config);
    if (code == 0)
        code = mbedtls_ssl_set_hostname(&tls->ssl, c->server_name);
    if (code == 0 && session != NULL)
        code = mbedtls_ssl_set_session(&tls->ssl, session);
    if (code != 0) {
        mbedtls_client_why(why, why_cap, code, "setup");
        fleet_tls_free(tls, false);
        return NULL;
    }
    tls->offered = session != NULL;
    mbedtls_ssl_set_verify(&tls->ssl, mbedtls_io_count_verified, &tls->io);
    mbedtls_ssl_set_bio(&tls->ssl, &tls->io, mbedtls_io_send, mbedtls_io_recv, NULL);
    if (t != NULL)
        t->recording = true;
    return tls;
}

int fleet_tls_handshake(struct fleet_tls *tls, char *why, size_t why_cap)
{
    int code = mbedtls_ssl_handshake(&tls->ssl);
    if (code == MBEDTLS_ERR_SSL_WANT_READ)
        return FLEET_WANT_READ;
    if (code == MBEDTLS_ERR_SSL_WANT_WRITE)
        return FLEET_WANT_WRITE;
    if (tls->io.transcript != NULL)
        tls->io.transcript->recording = false;
    if (code == 0)
        return 1;
    mbedtls_client_handshake_why(&tls->ssl, code, why, why_cap);
    return -1;
}

ssize_t fleet_tls_send(struct fleet_tls *tls, const void *data, size_t len)
{
    int n = mbedtls_ssl_write(&tls->ssl, data, len);
    if (n == MBEDTLS_ERR_SSL_WANT_WRITE)
        return FLEET_WANT_WRITE;
    if (n == MBEDTLS_ERR_SSL_WANT_READ)
        return FLEET_WANT_READ;
    return n > 0 ? n : -1;
}

ssize_t fleet_tls_recv(struct fleet_tls *tls, void *data, size_t cap)
{
    int n = mbedtls_ssl_read(&tls->ssl, data, cap);
    if (n == MBEDTLS_ERR_SSL_WANT_READ)
        return FLEET_WANT_READ;
    if (n == MBEDTLS_ERR_SSL_WANT_WRITE)
        return FLEET_WANT_WRITE;
    if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || n == 0)
        return 0;
    return n < 0 ? -1 : n;
}

size_t fleet_tls_pending(struct fleet_tls *tls) { return mbedtls_ssl_get_bytes_avail(&tls->ssl); }

void fleet_tls_describe(struct fleet_tls *tls, struct tls_result *out)
{
    mbedtls_client_describe(&tls->ssl, tls->offered, tls->io.certificates_verified, out);
}

void *fleet_tls_session(struct fleet_tls *tls)
{
    mbedtls_ssl_session *session = iotsb_tls_calloc(1, sizeof *session);
    if (session == NULL)
        return NULL;
    mbedtls_ssl_session_init(session);
    if (mbedtls_ssl_get_session(&tls->ssl, session) != 0) {
        fleet_tls_session_free(session);
        return NULL;
    }
    return session;
}

void fleet_tls_session_free(void *session)
{
    if (session == NULL)
        return;
    mbedtls_ssl_session_free(session);
    iotsb_tls_free(session);
}

void fleet_tls_free(struct fleet_tls *tls, bool close_notify)
{
    if (tls == NULL)
        return;
    if (close_notify)
        mbedtls_ssl_close_notify(&tls->ssl); /* best effort on a non-blocking socket */
    mbedtls_ssl_free(&tls->ssl);
    iotsb_tls_free(tls);
}

const char *fleet_stack_name(void) { return "mbedtls"; }
const char *fleet_stack_version(void) { return MBEDTLS_VERSION_STRING; }
