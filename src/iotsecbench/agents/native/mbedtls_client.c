/* The mbedTLS 2.28 client configuration, I/O callbacks and description both native agents
 * share (mbedtls_client.h). */
#include "mbedtls_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/version.h>

void mbedtls_client_why(char *why, size_t cap, int code, const char *what)
{
    char text[160];
    mbedtls_strerror(code, text, sizeof text);
    snprintf(why, cap, "mbedtls: %s: %s (-0x%04x)", what, text, (unsigned)-code);
}

int mbedtls_client_configure(struct mbedtls_client *c, const struct tls_options *o, char *why,
                             size_t why_cap)
{
    mbedtls_entropy_init(&c->entropy);
    mbedtls_ctr_drbg_init(&c->drbg);
    mbedtls_ssl_config_init(&c->config);
    mbedtls_x509_crt_init(&c->ca);
    mbedtls_x509_crt_init(&c->own);
    mbedtls_pk_init(&c->key);
    if (strcmp(o->version, "1.2") != 0) {
        snprintf(why, why_cap, "mbedtls %s speaks TLS 1.2 only", MBEDTLS_VERSION_STRING);
        return -1;
    }
    int code = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy,
                                     (const unsigned char *)"iotsb", 5);
    if (code != 0) {
        mbedtls_client_why(why, why_cap, code, "seeding the random generator");
        return -1;
    }
    if ((code = mbedtls_x509_crt_parse_file(&c->ca, o->ca_file)) != 0) {
        mbedtls_client_why(why, why_cap, code, o->ca_file);
        return -1;
    }
    code = mbedtls_ssl_config_defaults(&c->config, MBEDTLS_SSL_IS_CLIENT,
                                       MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
    if (code != 0) {
        mbedtls_client_why(why, why_cap, code, "configuration defaults");
        return -1;
    }
    mbedtls_ssl_conf_min_version(&c->config, MBEDTLS_SSL_MAJOR_VERSION_3,
                                 MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_max_version(&c->config, MBEDTLS_SSL_MAJOR_VERSION_3,
                                 MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_authmode(&c->config, MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_ca_chain(&c->config, &c->ca, NULL);
    mbedtls_ssl_conf_rng(&c->config, mbedtls_ctr_drbg_random, &c->drbg);
    if (o->n_suites > 0) {
        size_t n = o->n_suites < 63 ? o->n_suites : 63;
        for (size_t i = 0; i < n; i++)
            c->suites[i] = o->suites[i];
        c->suites[n] = 0;
        mbedtls_ssl_conf_ciphersuites(&c->config, c->suites);
    }
    for (size_t i = 0; i < o->n_groups && i < 4; i++) {
        const mbedtls_ecp_curve_info *curve = mbedtls_ecp_curve_info_from_tls_id(o->groups[i]);
        if (curve == NULL) {
            snprintf(why, why_cap, "mbedtls %s has no group 0x%04x", MBEDTLS_VERSION_STRING,
                     o->groups[i]);
            return -1;
        }
        c->curves[i] = curve->grp_id;
        c->curves[i + 1] = MBEDTLS_ECP_DP_NONE;
    }
    if (o->n_groups > 0)
        mbedtls_ssl_conf_curves(&c->config, c->curves);
    if (o->client_cert != NULL) {
        if ((code = mbedtls_x509_crt_parse_file(&c->own, o->client_cert)) != 0) {
            mbedtls_client_why(why, why_cap, code, o->client_cert);
            return -1;
        }
        if ((code = mbedtls_pk_parse_keyfile(&c->key, o->client_key, NULL)) != 0) {
            mbedtls_client_why(why, why_cap, code, o->client_key);
            return -1;
        }
        if ((code = mbedtls_ssl_conf_own_cert(&c->config, &c->own, &c->key)) != 0) {
            mbedtls_client_why(why, why_cap, code, "client certificate");
            return -1;
        }
    }
    return 0;
}

void mbedtls_client_free(struct mbedtls_client *c)
{
    mbedtls_ssl_config_free(&c->config);
    mbedtls_x509_crt_free(&c->ca);
    mbedtls_x509_crt_free(&c->own);
    mbedtls_pk_free(&c->key);
    mbedtls_ctr_drbg_free(&c->drbg);
    mbedtls_entropy_free(&c->entropy);
}

void mbedtls_client_handshake_why(const mbedtls_ssl_context *ssl, int code, char *why,
                                  size_t cap)
{
    uint32_t flags = mbedtls_ssl_get_verify_result(ssl);
    if (code == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0) {
        char text[200];
        mbedtls_x509_crt_verify_info(text, sizeof text, "", flags);
        text[strcspn(text, "\n")] = '\0';
        snprintf(why, cap, "mbedtls: the server's certificate: %s", text);
        return;
    }
    mbedtls_client_why(why, cap, code, "handshake");
}

void mbedtls_client_describe(const mbedtls_ssl_context *ssl, bool offered,
                             int certificates_verified, struct tls_result *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->version, sizeof out->version, "1.2");
    const char *name = mbedtls_ssl_get_ciphersuite(ssl);
    snprintf(out->suite_name, sizeof out->suite_name, "%s", name ? name : "");
    out->suite = (uint16_t)(name ? mbedtls_ssl_get_ciphersuite_id(name) : 0);
    const mbedtls_ssl_ciphersuite_t *info = mbedtls_ssl_ciphersuite_from_id(out->suite);
    if (info != NULL) {
        const mbedtls_cipher_info_t *cipher = mbedtls_cipher_info_from_type(info->cipher);
        out->cipher_bits = cipher ? (int)cipher->key_bitlen : 0;
    }
    out->resumed = offered && certificates_verified == 0;
}

int mbedtls_io_count_verified(void *io, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
    (void)crt, (void)depth, (void)flags; /* the verdict stays mbedTLS's own */
    ((struct mbedtls_io *)io)->certificates_verified++;
    return 0;
}

int mbedtls_io_send(void *context, const unsigned char *data, size_t len)
{
    struct mbedtls_io *io = context;
    ssize_t n = send(io->fd, data, len, MSG_NOSIGNAL);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? MBEDTLS_ERR_SSL_WANT_WRITE
                                                 : MBEDTLS_ERR_NET_SEND_FAILED;
    if (io->transcript != NULL) /* it keeps only what comes while it is recording */
        tls_transcript_feed(io->transcript, true, data, (size_t)n);
    return (int)n;
}

int mbedtls_io_recv(void *context, unsigned char *data, size_t len)
{
    struct mbedtls_io *io = context;
    ssize_t n = recv(io->fd, data, len, 0);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? MBEDTLS_ERR_SSL_WANT_READ
                                                 : MBEDTLS_ERR_NET_RECV_FAILED;
    if (n == 0)
        return MBEDTLS_ERR_NET_CONN_RESET;
    if (io->transcript != NULL)
        tls_transcript_feed(io->transcript, false, data, (size_t)n);
    return (int)n;
}
