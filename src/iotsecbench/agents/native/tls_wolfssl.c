/* TLS on wolfSSL: Debian's 5.5 (stack wolfssl), or 5.9.4 built from registry source (stack
 * wolfssl-5.9, configs/wolfssl-5.9.h: ML-KEM groups, ML-DSA certificates, the secret
 * callbacks, no OpenSSL compatibility layer). Both speak TLS 1.2 and 1.3. */
#define _DEFAULT_SOURCE /* explicit_bzero */
#include "tls.h"

#include "heap.h"
#include "wolfssl_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tls {
    struct wolfssl_io io; /* first: the I/O callbacks' and keep_chain's context */
    WOLFSSL_CTX *ctx;
    WOLFSSL *ssl;
    char *key_log; /* --keylog on a build with the secret callbacks: NSS lines (secrets!), in
                      the agent's own memory, not the stack's counted heap */
    size_t key_log_len;
};

#define KEY_LOG_CAP 2048

static struct tls *fail(struct tls *tls, const char *what, char *why, size_t cap)
{
    wolfssl_client_why(tls->ssl, 0, what, why, cap);
    tls_close(tls);
    return NULL;
}

#ifdef HAVE_SECRET_CALLBACK
/* The secret callbacks run inside the handshake (so --keylog costs a few copies there, as it
 * does for OpenSSL's): each secret becomes an NSS key log line with the client random. */
static void keep_secret(struct tls *tls, const char *label, const uint8_t *secret, size_t len)
{
    uint8_t client_random[32];
    if (tls->key_log == NULL || wolfSSL_get_client_random(tls->ssl, client_random, 32) != 32)
        return;
    char *end = tls->key_log + tls->key_log_len;
    if (tls_nss_line(end, KEY_LOG_CAP - tls->key_log_len, label, client_random, 32, secret, len))
        tls->key_log_len += strlen(end);
}

/* TLS 1.2: the master secret when it is derived (a resumed session derives none). */
static int tls12_secret(WOLFSSL *ssl, void *secret, int len, void *context)
{
    (void)ssl;
    keep_secret(context, "CLIENT_RANDOM", secret, (size_t)len);
    return 0;
}

/* TLS 1.3: the traffic and exporter secrets, under the labels OpenSSL and NSS write. */
static int tls13_secret(WOLFSSL *ssl, int id, const unsigned char *secret, int len, void *context)
{
    static const char *const labels[] = {
        [CLIENT_EARLY_TRAFFIC_SECRET] = "CLIENT_EARLY_TRAFFIC_SECRET",
        [CLIENT_HANDSHAKE_TRAFFIC_SECRET] = "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        [SERVER_HANDSHAKE_TRAFFIC_SECRET] = "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        [CLIENT_TRAFFIC_SECRET] = "CLIENT_TRAFFIC_SECRET_0",
        [SERVER_TRAFFIC_SECRET] = "SERVER_TRAFFIC_SECRET_0",
        [EARLY_EXPORTER_SECRET] = "EARLY_EXPORTER_SECRET",
        [EXPORTER_SECRET] = "EXPORTER_SECRET",
    };
    (void)ssl;
    if (id >= 0 && (size_t)id < sizeof labels / sizeof *labels && labels[id] != NULL)
        keep_secret(context, labels[id], secret, (size_t)len);
    return 0;
}

bool tls_key_log(struct tls *tls, char *out, size_t cap)
{
    if (tls->key_log == NULL || tls->key_log_len == 0 || tls->key_log_len >= cap)
        return false;
    memcpy(out, tls->key_log, tls->key_log_len + 1);
    return true;
}
#else
/* TLS 1.2 only: Debian's wolfSSL 5.5 is built without the TLS 1.3 secret callback
 * (HAVE_SECRET_CALLBACK), so its TLS 1.3 traffic secrets cannot be logged (the runner
 * refuses --keylog for that combination before anything starts). */
bool tls_key_log(struct tls *tls, char *out, size_t cap)
{
    unsigned char client_random[32], master_secret[48];
    WOLFSSL_SESSION *session = wolfSSL_get_session(tls->ssl);
    bool ok = strcmp(wolfSSL_get_version(tls->ssl), "TLSv1.2") == 0 && session != NULL &&
              wolfSSL_get_client_random(tls->ssl, client_random, 32) == 32 &&
              wolfSSL_SESSION_get_master_key(session, master_secret, 48) == 48 &&
              tls_nss_line(out, cap, "CLIENT_RANDOM", client_random, 32, master_secret, 48);
    memset(master_secret, 0, sizeof master_secret);
    return ok;
}
#endif

/* wolfSSL's own session object stands for the opaque type */
struct tls_session *tls_session_get(struct tls *tls)
{
    return (struct tls_session *)wolfSSL_get1_session(tls->ssl);
}

void tls_session_free(struct tls_session *session)
{
    if (session != NULL)
        wolfSSL_SESSION_free((WOLFSSL_SESSION *)session);
}

struct tls *tls_connect(int fd, const struct tls_options *o, const struct tls_session *offer,
                        struct tls_transcript *t, char *why, size_t why_cap)
{
    struct tls *tls = iotsb_tls_calloc(1, sizeof *tls);
    if (tls == NULL) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    tls->io.fd = fd;
    tls->io.transcript = t;
    if ((tls->ctx = wolfssl_client_context(o, why, why_cap)) == NULL ||
        (tls->ssl = wolfssl_client_new(tls->ctx, &tls->io, o, (WOLFSSL_SESSION *)offer, why,
                                       why_cap)) == NULL) {
        tls_close(tls);
        return NULL;
    }
#ifdef HAVE_SECRET_CALLBACK
    if (o->key_log) {
        if ((tls->key_log = calloc(1, KEY_LOG_CAP)) == NULL ||
            wolfSSL_set_secret_cb(tls->ssl, tls12_secret, tls) != WOLFSSL_SUCCESS ||
            wolfSSL_set_tls13_secret_cb(tls->ssl, tls13_secret, tls) != WOLFSSL_SUCCESS)
            return fail(tls, "secret callbacks", why, why_cap);
    }
#endif
    t->recording = true;
    int code = wolfSSL_connect(tls->ssl);
    t->recording = false;
    if (code != WOLFSSL_SUCCESS)
        return fail(tls, "handshake", why, why_cap);
    return tls;
}

void tls_describe(struct tls *tls, struct tls_result *out)
{
    wolfssl_client_describe(tls->ssl, &tls->io, out);
}

ssize_t tls_send(struct tls *tls, const void *data, size_t len)
{
    int n = wolfSSL_write(tls->ssl, data, (int)len);
    if (n > 0)
        return n;
    int error = wolfSSL_get_error(tls->ssl, n);
    return error == WOLFSSL_ERROR_WANT_WRITE || error == WOLFSSL_ERROR_WANT_READ ? TLS_WANT : -1;
}

ssize_t tls_recv(struct tls *tls, void *data, size_t cap)
{
    int n = wolfSSL_read(tls->ssl, data, (int)(cap > 1 << 30 ? 1 << 30 : cap));
    if (n > 0)
        return n;
    int error = wolfSSL_get_error(tls->ssl, n);
    if (error == WOLFSSL_ERROR_WANT_READ || error == WOLFSSL_ERROR_WANT_WRITE)
        return TLS_WANT;
    return error == WOLFSSL_ERROR_ZERO_RETURN || error == SOCKET_PEER_CLOSED_E ? 0 : -1;
}

size_t tls_pending(struct tls *tls) { return (size_t)wolfSSL_pending(tls->ssl); }

void tls_close(struct tls *tls)
{
    if (tls == NULL)
        return;
    if (tls->ssl != NULL) {
        wolfSSL_shutdown(tls->ssl);
        wolfSSL_free(tls->ssl);
    }
    if (tls->ctx != NULL)
        wolfSSL_CTX_free(tls->ctx);
    if (tls->key_log != NULL) {
        explicit_bzero(tls->key_log, KEY_LOG_CAP);
        free(tls->key_log);
    }
    wolfssl_io_free(&tls->io);
    iotsb_tls_free(tls);
}
