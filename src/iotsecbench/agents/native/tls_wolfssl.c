/* TLS on wolfSSL 5.5 (Debian's build: TLS 1.2 and 1.3). */
#include "tls.h"

#include "heap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfio.h>

struct tls {
    int fd;
    struct tls_transcript *transcript;
    WOLFSSL_CTX *ctx;
    WOLFSSL *ssl;
};

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

static struct tls *fail(struct tls *tls, const char *what, char *why, size_t cap)
{
    int code = tls->ssl ? wolfSSL_get_error(tls->ssl, 0) : 0;
    char text[WOLFSSL_MAX_ERROR_SZ];
    wolfSSL_ERR_error_string_n((unsigned long)code, text, sizeof text);
    snprintf(why, cap, "wolfssl: %s: %s (%d)", what, code ? text : "failed", code);
    tls_close(tls);
    return NULL;
}

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
    wolfSSL_CTX_set_verify(tls->ctx, WOLFSSL_VERIFY_PEER, NULL);
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
    WOLFSSL_CIPHER *cipher = wolfSSL_get_current_cipher(tls->ssl);
    out->cipher_bits = cipher ? wolfSSL_CIPHER_get_bits(cipher, NULL) : 0;
    out->resumed = wolfSSL_session_reused(tls->ssl) == 1;
    WOLFSSL_X509_CHAIN *chain = wolfSSL_get_peer_chain(tls->ssl);
    int count = chain ? wolfSSL_get_chain_count(chain) : 0;
    if (count > 0) {
        out->chain = calloc((size_t)count, sizeof *out->chain);
        out->chain_len = calloc((size_t)count, sizeof *out->chain_len);
        for (int i = 0; out->chain && out->chain_len && i < count; i++) {
            int len = wolfSSL_get_chain_length(chain, i);
            unsigned char *der = wolfSSL_get_chain_cert(chain, i);
            if (der == NULL || len <= 0 || (out->chain[i] = malloc((size_t)len)) == NULL)
                break;
            memcpy(out->chain[i], der, (size_t)len);
            out->chain_len[i] = (size_t)len;
            out->chain_count++;
        }
    }
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
    iotsb_tls_free(tls);
}
