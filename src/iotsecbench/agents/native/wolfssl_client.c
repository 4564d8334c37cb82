/* The wolfSSL client both native agents share (wolfssl_client.h): Debian's 5.5 (stack
 * wolfssl), or 5.9.4 built from registry source (stack wolfssl-5.9, configs/wolfssl-5.9.h). */
#include "wolfssl_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <wolfssl/wolfio.h>

static int send_cb(WOLFSSL *ssl, char *data, int len, void *context)
{
    (void)ssl;
    struct wolfssl_io *io = context;
    ssize_t n = send(io->fd, data, (size_t)len, MSG_NOSIGNAL);
    if (n < 0)
        return errno == EAGAIN ? WOLFSSL_CBIO_ERR_WANT_WRITE
               : errno == EINTR ? WOLFSSL_CBIO_ERR_ISR : WOLFSSL_CBIO_ERR_CONN_CLOSE;
    if (io->transcript != NULL)
        tls_transcript_feed(io->transcript, true, (const uint8_t *)data, (size_t)n);
    return (int)n;
}

static int recv_cb(WOLFSSL *ssl, char *data, int len, void *context)
{
    (void)ssl;
    struct wolfssl_io *io = context;
    ssize_t n = recv(io->fd, data, (size_t)len, 0);
    if (n < 0)
        return errno == EAGAIN ? WOLFSSL_CBIO_ERR_WANT_READ
               : errno == EINTR ? WOLFSSL_CBIO_ERR_ISR : WOLFSSL_CBIO_ERR_CONN_RST;
    if (n == 0)
        return WOLFSSL_CBIO_ERR_CONN_CLOSE;
    if (io->transcript != NULL)
        tls_transcript_feed(io->transcript, false, (const uint8_t *)data, (size_t)n);
    return (int)n;
}

/* The server's chain as its Certificate message carried it, copied when wolfSSL has verified
 * the leaf (WOLFSSL_ALWAYS_VERIFY_CB: the callback runs on success too; the store holds the
 * message's certificates, leaf first). Neither build keeps it for us otherwise without a
 * cost the heap figures would carry: SESSION_CERTS stores a chain of MAX_CHAIN_DEPTH
 * certificates of the largest size in every session object (83 KB in wolfSSL 5.9 with
 * ML-DSA). The copies are the agent's, not the stack's heap. A resumed session verifies
 * nothing: no chain; a connection that records no transcript keeps none. */
static int keep_chain(int preverified, WOLFSSL_X509_STORE_CTX *store)
{
    struct wolfssl_io *io = store->userCtx;
    if (io == NULL || io->transcript == NULL || io->chain != NULL || store->totalCerts <= 0 ||
        store->certs == NULL)
        return preverified;
    size_t count = (size_t)store->totalCerts;
    io->chain = calloc(count, sizeof *io->chain);
    io->chain_len = calloc(count, sizeof *io->chain_len);
    for (size_t i = 0; io->chain && io->chain_len && i < count; i++) {
        const WOLFSSL_BUFFER_INFO *cert = &store->certs[i];
        if (cert->buffer == NULL || (io->chain[i] = malloc(cert->length)) == NULL)
            break;
        memcpy(io->chain[i], cert->buffer, cert->length);
        io->chain_len[i] = cert->length;
        io->chain_count++;
    }
    return preverified; /* the verdict stays wolfSSL's */
}

void wolfssl_client_why(WOLFSSL *ssl, int result, const char *what, char *why, size_t cap)
{
    int code = ssl ? wolfSSL_get_error(ssl, result) : 0;
    char text[WOLFSSL_MAX_ERROR_SZ];
    wolfSSL_ERR_error_string_n((unsigned long)code, text, sizeof text);
    snprintf(why, cap, "wolfssl: %s: %s (%d)", what, code ? text : "failed", code);
}

WOLFSSL_CTX *wolfssl_client_context(const struct tls_options *o, char *why, size_t why_cap)
{
    bool v13 = strcmp(o->version, "1.3") == 0;
    WOLFSSL_CTX *ctx =
        wolfSSL_CTX_new(v13 ? wolfTLSv1_3_client_method() : wolfTLSv1_2_client_method());
    const char *failed = NULL;
    if (ctx == NULL)
        failed = "context";
    else if (wolfSSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != WOLFSSL_SUCCESS)
        failed = o->ca_file;
    if (failed != NULL)
        goto fail;
    wolfSSL_CTX_set_verify(ctx, WOLFSSL_VERIFY_PEER, keep_chain);
    if (o->n_suites > 0) {
        uint8_t list[128];
        size_t n = o->n_suites < 64 ? o->n_suites : 64;
        for (size_t i = 0; i < n; i++) {
            list[2 * i] = (uint8_t)(o->suites[i] >> 8);
            list[2 * i + 1] = (uint8_t)o->suites[i];
        }
        if (wolfSSL_CTX_set_cipher_list_bytes(ctx, list, (int)(2 * n)) != WOLFSSL_SUCCESS) {
            snprintf(why, why_cap, "wolfssl %s supports none of the requested suites",
                     LIBWOLFSSL_VERSION_STRING);
            wolfSSL_CTX_free(ctx);
            return NULL;
        }
    }
    if (o->client_cert != NULL) {
        if (wolfSSL_CTX_use_certificate_chain_file(ctx, o->client_cert) != WOLFSSL_SUCCESS)
            failed = o->client_cert;
        else if (wolfSSL_CTX_use_PrivateKey_file(ctx, o->client_key, WOLFSSL_FILETYPE_PEM) !=
                 WOLFSSL_SUCCESS)
            failed = o->client_key;
        if (failed != NULL)
            goto fail;
    }
    wolfSSL_CTX_SetIORecv(ctx, recv_cb);
    wolfSSL_CTX_SetIOSend(ctx, send_cb);
    return ctx;
fail:
    wolfssl_client_why(NULL, 0, failed, why, why_cap);
    if (ctx != NULL)
        wolfSSL_CTX_free(ctx);
    return NULL;
}

WOLFSSL *wolfssl_client_new(WOLFSSL_CTX *ctx, struct wolfssl_io *io, const struct tls_options *o,
                            WOLFSSL_SESSION *session, char *why, size_t why_cap)
{
    WOLFSSL *ssl = wolfSSL_new(ctx);
    if (ssl == NULL) {
        wolfssl_client_why(NULL, 0, "session", why, why_cap);
        return NULL;
    }
    wolfSSL_SetIOReadCtx(ssl, io);
    wolfSSL_SetIOWriteCtx(ssl, io);
    wolfSSL_SetCertCbCtx(ssl, io);
    /* TLS 1.3: the groups in order (the first gets the key share); TLS 1.2: the
     * supported_groups extension (wolfSSL_set_groups refuses a 1.2 connection). */
    bool v13 = strcmp(o->version, "1.3") == 0, ok = true;
    int groups[4];
    size_t n = o->n_groups < 4 ? o->n_groups : 4;
    for (size_t i = 0; i < n; i++) {
        groups[i] = o->groups[i];
        ok = ok && (v13 || wolfSSL_UseSupportedCurve(ssl, o->groups[i]) == WOLFSSL_SUCCESS);
    }
    if (!ok || (v13 && n > 0 && wolfSSL_set_groups(ssl, groups, (int)n) != WOLFSSL_SUCCESS)) {
        snprintf(why, why_cap, "wolfssl %s cannot offer the requested group(s)",
                 LIBWOLFSSL_VERSION_STRING);
        wolfSSL_free(ssl);
        return NULL;
    }
    const char *failed = NULL;
    if (wolfSSL_check_domain_name(ssl, o->server_name) != WOLFSSL_SUCCESS)
        failed = "server name";
    else if (session != NULL && wolfSSL_set_session(ssl, session) != WOLFSSL_SUCCESS)
        failed = "offering the session";
    if (failed != NULL) {
        wolfssl_client_why(ssl, 0, failed, why, why_cap);
        wolfSSL_free(ssl);
        return NULL;
    }
    return ssl;
}

void wolfssl_client_describe(WOLFSSL *ssl, struct wolfssl_io *io, struct tls_result *out)
{
    memset(out, 0, sizeof *out);
    const char *version = wolfSSL_get_version(ssl); /* "TLSv1.2", "TLSv1.3" */
    snprintf(out->version, sizeof out->version, "%s", version + (version[0] == 'T' ? 4 : 0));
    out->suite = (uint16_t)wolfSSL_get_current_cipher_suite(ssl);
    const char *name = wolfSSL_get_cipher_name(ssl);
    snprintf(out->suite_name, sizeof out->suite_name, "%s", name ? name : "");
#ifdef OPENSSL_EXTRA
    WOLFSSL_CIPHER *cipher = wolfSSL_get_current_cipher(ssl);
    out->cipher_bits = cipher ? wolfSSL_CIPHER_get_bits(cipher, NULL) : 0;
#else
    out->cipher_bits = 0; /* no OpenSSL layer: the runner reads the suite's (stacks.suite_bits) */
#endif
    out->resumed = wolfSSL_session_reused(ssl) == 1;
    out->chain = io->chain; /* handed over: the caller frees them */
    out->chain_len = io->chain_len;
    out->chain_count = io->chain_count;
    io->chain = NULL;
    io->chain_len = NULL;
    io->chain_count = 0;
}

void wolfssl_io_free(struct wolfssl_io *io)
{
    for (size_t i = 0; i < io->chain_count; i++)
        free(io->chain[i]);
    free(io->chain);
    free(io->chain_len);
    io->chain = NULL;
    io->chain_len = NULL;
    io->chain_count = 0;
}
