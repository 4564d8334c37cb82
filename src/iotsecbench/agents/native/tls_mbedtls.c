/* TLS on mbedTLS 2.28 (the ESP-IDF default stack; Debian's build speaks TLS 1.2 only). */
#include "tls.h"

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
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>

struct tls {
    struct mbedtls_io io;         /* first: the callbacks' context */
    struct mbedtls_client client; /* its configuration, per connection as on a device */
    mbedtls_ssl_context ssl;
    bool exported;             /* --keylog: the key export callback ran */
    unsigned char master_secret[48], client_random[32];
    bool offered;
};

struct tls_session {
    mbedtls_ssl_session session;
};

/* --keylog: what the NSS line needs, kept when mbedTLS derives the keys (inside the handshake:
 * two copies); written after it, outside the measured time. */
static int export_keys(void *context, const unsigned char *ms, const unsigned char *kb,
                       size_t maclen, size_t keylen, size_t ivlen,
                       const unsigned char client_random[32], const unsigned char server_random[32],
                       mbedtls_tls_prf_types prf)
{
    (void)kb, (void)maclen, (void)keylen, (void)ivlen, (void)server_random, (void)prf;
    struct tls *tls = context;
    memcpy(tls->master_secret, ms, sizeof tls->master_secret);
    memcpy(tls->client_random, client_random, sizeof tls->client_random);
    tls->exported = true;
    return 0;
}

bool tls_key_log(struct tls *tls, char *out, size_t cap)
{
    return tls->exported && tls_nss_line(out, cap, "CLIENT_RANDOM", tls->client_random, 32,
                                         tls->master_secret, 48);
}

static struct tls *fail(struct tls *tls, int code, const char *what, char *why, size_t cap)
{
    mbedtls_client_why(why, cap, code, what);
    tls_close(tls);
    return NULL;
}

struct tls *tls_connect(int fd, const struct tls_options *o, const struct tls_session *offer,
                        struct tls_transcript *t, char *why, size_t why_cap)
{
    struct tls *tls = iotsb_tls_calloc(1, sizeof *tls); /* the contexts: RAM a device needs too */
    if (tls == NULL) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    tls->io.fd = fd;
    tls->io.transcript = t;
    mbedtls_ssl_init(&tls->ssl);
    if (mbedtls_client_configure(&tls->client, o, why, why_cap) != 0) {
        tls_close(tls);
        return NULL;
    }
    mbedtls_ssl_conf_verify(&tls->client.config, mbedtls_io_count_verified, &tls->io);
    if (o->key_log)
        mbedtls_ssl_conf_export_keys_ext_cb(&tls->client.config, export_keys, tls);
    int code;
    if ((code = mbedtls_ssl_setup(&tls->ssl, &tls->client.config)) != 0)
        return fail(tls, code, "setup", why, why_cap);
    if ((code = mbedtls_ssl_set_hostname(&tls->ssl, o->server_name)) != 0)
        return fail(tls, code, "server name", why, why_cap);
    if (offer != NULL && (code = mbedtls_ssl_set_session(&tls->ssl, &offer->session)) != 0)
        return fail(tls, code, "offering the session", why, why_cap);
    tls->offered = offer != NULL;
    mbedtls_ssl_set_bio(&tls->ssl, &tls->io, mbedtls_io_send, mbedtls_io_recv, NULL);
    t->recording = true;
    do
        code = mbedtls_ssl_handshake(&tls->ssl);
    while (code == MBEDTLS_ERR_SSL_WANT_READ || code == MBEDTLS_ERR_SSL_WANT_WRITE);
    t->recording = false;
    if (code != 0) {
        mbedtls_client_handshake_why(&tls->ssl, code, why, why_cap);
        tls_close(tls);
        return NULL;
    }
    return tls;
}

void tls_describe(struct tls *tls, struct tls_result *out)
{
    mbedtls_client_describe(&tls->ssl, tls->offered, tls->io.certificates_verified, out);
}

struct tls_session *tls_session_get(struct tls *tls)
{
    struct tls_session *s = iotsb_tls_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    mbedtls_ssl_session_init(&s->session);
    if (mbedtls_ssl_get_session(&tls->ssl, &s->session) != 0) {
        tls_session_free(s);
        return NULL;
    }
    return s;
}

void tls_session_free(struct tls_session *s)
{
    if (s == NULL)
        return;
    mbedtls_ssl_session_free(&s->session);
    iotsb_tls_free(s);
}

ssize_t tls_send(struct tls *tls, const void *data, size_t len)
{
    int n = mbedtls_ssl_write(&tls->ssl, data, len);
    if (n == MBEDTLS_ERR_SSL_WANT_WRITE || n == MBEDTLS_ERR_SSL_WANT_READ)
        return TLS_WANT;
    return n > 0 ? n : -1;
}

ssize_t tls_recv(struct tls *tls, void *data, size_t cap)
{
    int n = mbedtls_ssl_read(&tls->ssl, data, cap);
    if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE)
        return TLS_WANT;
    if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || n == 0)
        return 0;
    return n < 0 ? -1 : n;
}

size_t tls_pending(struct tls *tls) { return mbedtls_ssl_get_bytes_avail(&tls->ssl); }

void tls_close(struct tls *tls)
{
    if (tls == NULL)
        return;
    mbedtls_ssl_close_notify(&tls->ssl);
    mbedtls_ssl_free(&tls->ssl);
    mbedtls_client_free(&tls->client);
    mbedtls_platform_zeroize(tls->master_secret, sizeof tls->master_secret);
    iotsb_tls_free(tls);
}
