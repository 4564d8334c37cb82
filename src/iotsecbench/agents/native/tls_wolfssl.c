/* TLS on wolfSSL: Debian's 5.5 (stack wolfssl), or 5.9.4 built from registry source (stack
 * wolfssl-5.9, configs/wolfssl-5.9.h: ML-KEM groups, ML-DSA certificates, the secret
 * callbacks, no OpenSSL compatibility layer). Both speak TLS 1.2 and 1.3. */
#define _DEFAULT_SOURCE /* explicit_bzero */
#include "tls.h"

#include "heap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wolfssl_options.h"
#include <wolfssl/ssl.h>
#include <wolfssl/wolfio.h>

struct tls {
    int fd;
    struct tls_transcript *transcript;
    WOLFSSL_CTX *ctx;
    WOLFSSL *ssl;
    char *key_log; /* --keylog on a build with the secret callbacks: NSS lines (secrets!), in
                      the agent's own memory, not the stack's counted heap */
    size_t key_log_len;
    uint8_t **chain; /* the server's certificates as received, leaf first (agent memory) */
    size_t *chain_len;
    size_t chain_count;
};

#define KEY_LOG_CAP 2048

static int send_cb(WOLFSSL *ssl, char *data, int len, void *context)
{
    (void)ssl;
    struct tls *tls = context;
    ssize_t n = send(tls->fd, data, (size_t)len, MSG_NOSIGNAL);
    if (n < 0)
        return errno == EAGAIN ? WOLFSSL_CBIO_ERR_WANT_WRITE
               : errno == EINTR ? WOLFSSL_CBIO_ERR_ISR : WOLFSSL_CBIO_ERR_CONN_CLOSE;
    tls_transcript_feed(tls->transcript, true, (const uint8_t *)data, (size_t)n);
    return (int)n;
}

static int recv_cb(WOLFSSL *ssl, char *data, int len, void *context)
{
    (void)ssl;
    struct tls *tls = context;
    ssize_t n = recv(tls->fd, data, (size_t)len, 0);
    if (n < 0)
        return errno == EAGAIN ? WOLFSSL_CBIO_ERR_WANT_READ
               : errno == EINTR ? WOLFSSL_CBIO_ERR_ISR : WOLFSSL_CBIO_ERR_CONN_RST;
    if (n == 0)
        return WOLFSSL_CBIO_ERR_CONN_CLOSE;
    tls_transcript_feed(tls->transcript, false, (const uint8_t *)data, (size_t)n);
    return (int)n;
}

/* The server's chain as its Certificate message carried it, copied when wolfSSL has verified
 * the leaf (WOLFSSL_ALWAYS_VERIFY_CB: the callback runs on success too; the store holds the
 * message's certificates, leaf first). Neither build keeps it for us otherwise without a
 * cost the heap figures would carry: SESSION_CERTS stores a chain of MAX_CHAIN_DEPTH
 * certificates of the largest size in every session object (83 KB in wolfSSL 5.9 with
 * ML-DSA). The copies are the agent's, not the stack's heap. A resumed session verifies
 * nothing: no chain. */
static int keep_chain(int preverified, WOLFSSL_X509_STORE_CTX *store)
{
    struct tls *tls = store->userCtx;
    if (tls == NULL || tls->chain != NULL || store->totalCerts <= 0 || store->certs == NULL)
        return preverified;
    size_t count = (size_t)store->totalCerts;
    tls->chain = calloc(count, sizeof *tls->chain);
    tls->chain_len = calloc(count, sizeof *tls->chain_len);
    for (size_t i = 0; tls->chain && tls->chain_len && i < count; i++) {
        const WOLFSSL_BUFFER_INFO *cert = &store->certs[i];
        if (cert->buffer == NULL || (tls->chain[i] = malloc(cert->length)) == NULL)
            break;
        memcpy(tls->chain[i], cert->buffer, cert->length);
        tls->chain_len[i] = cert->length;
        tls->chain_count++;
    }
    return preverified; /* the verdict stays wolfSSL's */
}

static struct tls *fail(struct tls *tls, const char *what, char *why, size_t cap)
{
    int code = tls->ssl ? wolfSSL_get_error(tls->ssl, 0) : 0;
    char text[WOLFSSL_MAX_ERROR_SZ];
    wolfSSL_ERR_error_string_n((unsigned long)code, text, sizeof text);
    snprintf(why, cap, "wolfssl: %s: %s (%d)", what, code ? text : "failed", code);
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
    tls->fd = fd;
    tls->transcript = t;
    bool v13 = strcmp(o->version, "1.3") == 0;
    tls->ctx = wolfSSL_CTX_new(v13 ? wolfTLSv1_3_client_method() : wolfTLSv1_2_client_method());
    if (tls->ctx == NULL)
        return fail(tls, "context", why, why_cap);
    if (wolfSSL_CTX_load_verify_locations(tls->ctx, o->ca_file, NULL) != WOLFSSL_SUCCESS)
        return fail(tls, o->ca_file, why, why_cap);
    wolfSSL_CTX_set_verify(tls->ctx, WOLFSSL_VERIFY_PEER, keep_chain);
    if (o->n_suites > 0) {
        uint8_t list[128];
        size_t n = o->n_suites < 64 ? o->n_suites : 64;
        for (size_t i = 0; i < n; i++) {
            list[2 * i] = (uint8_t)(o->suites[i] >> 8);
            list[2 * i + 1] = (uint8_t)o->suites[i];
        }
        if (wolfSSL_CTX_set_cipher_list_bytes(tls->ctx, list, (int)(2 * n)) != WOLFSSL_SUCCESS) {
            snprintf(why, why_cap, "wolfssl %s supports none of the requested suites",
                     LIBWOLFSSL_VERSION_STRING);
            tls_close(tls);
            return NULL;
        }
    }
    if (o->client_cert != NULL) {
        if (wolfSSL_CTX_use_certificate_chain_file(tls->ctx, o->client_cert) != WOLFSSL_SUCCESS)
            return fail(tls, o->client_cert, why, why_cap);
        if (wolfSSL_CTX_use_PrivateKey_file(tls->ctx, o->client_key, WOLFSSL_FILETYPE_PEM) !=
            WOLFSSL_SUCCESS)
            return fail(tls, o->client_key, why, why_cap);
    }
    wolfSSL_CTX_SetIORecv(tls->ctx, recv_cb);
    wolfSSL_CTX_SetIOSend(tls->ctx, send_cb);
    tls->ssl = wolfSSL_new(tls->ctx);
    if (tls->ssl == NULL)
        return fail(tls, "session", why, why_cap);
    wolfSSL_SetIOReadCtx(tls->ssl, tls);
    wolfSSL_SetIOWriteCtx(tls->ssl, tls);
    wolfSSL_SetCertCbCtx(tls->ssl, tls);
    /* TLS 1.3: the groups in order (the first gets the key share); TLS 1.2: the
     * supported_groups extension (wolfSSL_set_groups refuses a 1.2 connection). */
    bool ok = true;
    int groups[4];
    size_t n = o->n_groups < 4 ? o->n_groups : 4;
    for (size_t i = 0; i < n; i++) {
        groups[i] = o->groups[i];
        ok = ok && (v13 || wolfSSL_UseSupportedCurve(tls->ssl, o->groups[i]) == WOLFSSL_SUCCESS);
    }
    if (!ok || (v13 && n > 0 && wolfSSL_set_groups(tls->ssl, groups, (int)n) != WOLFSSL_SUCCESS)) {
        snprintf(why, why_cap, "wolfssl %s cannot offer the requested group(s)",
                 LIBWOLFSSL_VERSION_STRING);
        tls_close(tls);
        return NULL;
    }
    if (wolfSSL_check_domain_name(tls->ssl, o->server_name) != WOLFSSL_SUCCESS)
        return fail(tls, "server name", why, why_cap);
#ifdef HAVE_SECRET_CALLBACK
    if (o->key_log) {
        if ((tls->key_log = calloc(1, KEY_LOG_CAP)) == NULL ||
            wolfSSL_set_secret_cb(tls->ssl, tls12_secret, tls) != WOLFSSL_SUCCESS ||
            wolfSSL_set_tls13_secret_cb(tls->ssl, tls13_secret, tls) != WOLFSSL_SUCCESS)
            return fail(tls, "secret callbacks", why, why_cap);
    }
#endif
    if (offer != NULL &&
        wolfSSL_set_session(tls->ssl, (WOLFSSL_SESSION *)offer) != WOLFSSL_SUCCESS)
        return fail(tls, "offering the session", why, why_cap);
    t->recording = true;
    int code = wolfSSL_connect(tls->ssl);
    t->recording = false;
    if (code != WOLFSSL_SUCCESS)
        return fail(tls, "handshake", why, why_cap);
    return tls;
}

void tls_describe(struct tls *tls, struct tls_result *out)
{
    memset(out, 0, sizeof *out);
    const char *version = wolfSSL_get_version(tls->ssl); /* "TLSv1.2", "TLSv1.3" */
    snprintf(out->version, sizeof out->version, "%s", version + (version[0] == 'T' ? 4 : 0));
    out->suite = (uint16_t)wolfSSL_get_current_cipher_suite(tls->ssl);
    const char *name = wolfSSL_get_cipher_name(tls->ssl);
    snprintf(out->suite_name, sizeof out->suite_name, "%s", name ? name : "");
#ifdef OPENSSL_EXTRA
    WOLFSSL_CIPHER *cipher = wolfSSL_get_current_cipher(tls->ssl);
    out->cipher_bits = cipher ? wolfSSL_CIPHER_get_bits(cipher, NULL) : 0;
#else
    out->cipher_bits = 0; /* no OpenSSL layer: the runner reads the suite's (stacks.suite_bits) */
#endif
    out->resumed = wolfSSL_session_reused(tls->ssl) == 1;
    out->chain = tls->chain; /* handed over: the caller frees them */
    out->chain_len = tls->chain_len;
    out->chain_count = tls->chain_count;
    tls->chain = NULL;
    tls->chain_len = NULL;
    tls->chain_count = 0;
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
    for (size_t i = 0; i < tls->chain_count; i++)
        free(tls->chain[i]);
    free(tls->chain);
    free(tls->chain_len);
    iotsb_tls_free(tls);
}
