/* The fleet agent's TLS clients on wolfSSL (Debian's 5.5: TLS 1.2 and 1.3), non-blocking. One
 * context per process (the CA loaded once, the offer), one WOLFSSL per connection through the
 * I/O callbacks the per-device agent uses (wolfssl_client.c), which keep the handshake's
 * records for the transcript; the server's chain is copied as it is verified (TLS 1.3's
 * Certificate message is encrypted), for the devices that record a transcript only. */
#include "fleet_tls.h"
#include "wolfssl_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fleet_tls_context {
    WOLFSSL_CTX *ctx;
    struct tls_options options; /* the groups and server name each connection offers */
};

struct fleet_tls {
    struct wolfssl_io io; /* first: the I/O callbacks' and keep_chain's context */
    WOLFSSL *ssl;
};

struct fleet_tls_context *fleet_tls_context(const struct tls_options *o, char *why,
                                            size_t why_cap)
{
    struct fleet_tls_context *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    wolfSSL_Init(); /* once per process: the context is */
    if ((c->ctx = wolfssl_client_context(o, why, why_cap)) == NULL) {
        free(c);
        return NULL;
    }
    c->options = *o;
    return c;
}

struct fleet_tls *fleet_tls_new(struct fleet_tls_context *c, int fd, void *session,
                                struct tls_transcript *t, char *why, size_t why_cap)
{
    struct fleet_tls *tls = calloc(1, sizeof *tls);
    if (tls == NULL) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    tls->io.fd = fd;
    tls->io.transcript = t;
    tls->ssl = wolfssl_client_new(c->ctx, &tls->io, &c->options, session, why, why_cap);
    if (tls->ssl == NULL) {
        free(tls);
        return NULL;
    }
    if (t != NULL)
        t->recording = true;
    return tls;
}

static int want(WOLFSSL *ssl, int result)
{
    switch (wolfSSL_get_error(ssl, result)) {
    case WOLFSSL_ERROR_WANT_READ: return FLEET_WANT_READ;
    case WOLFSSL_ERROR_WANT_WRITE: return FLEET_WANT_WRITE;
    case WOLFSSL_ERROR_ZERO_RETURN:
    case SOCKET_PEER_CLOSED_E: return 0;
    default: return -1;
    }
}

int fleet_tls_handshake(struct fleet_tls *tls, char *why, size_t why_cap)
{
    int result = wolfSSL_connect(tls->ssl);
    int status = result == WOLFSSL_SUCCESS ? 1 : want(tls->ssl, result);
    if (status == FLEET_WANT_READ || status == FLEET_WANT_WRITE)
        return status;
    if (tls->io.transcript != NULL)
        tls->io.transcript->recording = false;
    if (status == 1)
        return 1;
    wolfssl_client_why(tls->ssl, result, "handshake", why, why_cap);
    return -1;
}

ssize_t fleet_tls_send(struct fleet_tls *tls, const void *data, size_t len)
{
    int n = wolfSSL_write(tls->ssl, data, (int)len);
    if (n > 0)
        return n;
    int status = want(tls->ssl, n);
    return status == 0 ? -1 : status;
}

ssize_t fleet_tls_recv(struct fleet_tls *tls, void *data, size_t cap)
{
    int n = wolfSSL_read(tls->ssl, data, (int)(cap > 1 << 30 ? 1 << 30 : cap));
    return n > 0 ? n : want(tls->ssl, n);
}

size_t fleet_tls_pending(struct fleet_tls *tls) { return (size_t)wolfSSL_pending(tls->ssl); }

void fleet_tls_describe(struct fleet_tls *tls, struct tls_result *out)
{
    wolfssl_client_describe(tls->ssl, &tls->io, out);
}

void *fleet_tls_session(struct fleet_tls *tls) { return wolfSSL_get1_session(tls->ssl); }

void fleet_tls_session_free(void *session)
{
    if (session != NULL)
        wolfSSL_SESSION_free(session);
}

void fleet_tls_free(struct fleet_tls *tls, bool close_notify)
{
    if (tls == NULL)
        return;
    if (close_notify)
        wolfSSL_shutdown(tls->ssl); /* best effort on a non-blocking socket */
    wolfSSL_free(tls->ssl);
    wolfssl_io_free(&tls->io);
    free(tls);
}

const char *fleet_stack_name(void) { return "wolfssl"; }
const char *fleet_stack_version(void) { return LIBWOLFSSL_VERSION_STRING; }
