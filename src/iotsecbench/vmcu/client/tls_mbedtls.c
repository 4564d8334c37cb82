/* TLS 1.2 and 1.3 on mbedTLS 3.6 (the device configuration mbedtls/device_config.h), over
 * net.c's blocking byte stream. mbedTLS 3.6 speaks TLS 1.3 through PSA Crypto, whose random
 * generator (CTR_DRBG) is seeded from the firmware's TRNG stand-in; the TLS 1.2 code draws from
 * the same generator. */
#include "device.h"

#include <stdio.h>
#include <string.h>

#include <mbedtls/build_info.h>
#include <mbedtls/psa_util.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <psa/crypto.h>

static mbedtls_ssl_config conf;
static mbedtls_ssl_context ssl;
static mbedtls_x509_crt ca, own;
static mbedtls_pk_context own_key;
static int suites[DEVICE_MAX_SUITES + 1];
static uint16_t groups[DEVICE_MAX_GROUPS + 1];

const char *tls_stack(void) { return "mbedtls"; }
const char *tls_stack_version(void) { return MBEDTLS_VERSION_STRING; }

static int send_cb(void *context, const unsigned char *data, size_t len)
{
    (void)context;
    return net_send(data, len);
}

static int recv_cb(void *context, unsigned char *data, size_t len)
{
    (void)context;
    return net_recv(data, len);
}

static void export_keys(void *context, mbedtls_ssl_key_export_type type, const unsigned char *secret,
                        size_t secret_len, const unsigned char client_random[32],
                        const unsigned char server_random[32], mbedtls_tls_prf_types prf)
{
    (void)context, (void)client_random, (void)server_random, (void)prf;
    static const char *const labels[] = {
        [MBEDTLS_SSL_KEY_EXPORT_TLS1_3_CLIENT_HANDSHAKE_TRAFFIC_SECRET] =
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        [MBEDTLS_SSL_KEY_EXPORT_TLS1_3_SERVER_HANDSHAKE_TRAFFIC_SECRET] =
            "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        [MBEDTLS_SSL_KEY_EXPORT_TLS1_3_CLIENT_APPLICATION_TRAFFIC_SECRET] =
            "CLIENT_TRAFFIC_SECRET_0",
        [MBEDTLS_SSL_KEY_EXPORT_TLS1_3_SERVER_APPLICATION_TRAFFIC_SECRET] =
            "SERVER_TRAFFIC_SECRET_0",
    };
    if ((size_t)type >= sizeof labels / sizeof labels[0] || labels[type] == NULL)
        return;
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    secret_line(labels[type], secret, secret_len);
    ledger_bucket(resume);
}

/* The device build has no error strings (MBEDTLS_ERROR_C off): the code names the error
 * (mbedTLS's include/mbedtls/*.h; vmcu/device.py names the common ones). */
static int fail(int code, const char *what, char *why, size_t cap)
{
    snprintf(why, cap, "mbedtls: %s: error -0x%04x", what, (unsigned)-code);
    return -1;
}

int tls_setup(char *why, size_t cap)
{
    psa_status_t status = psa_crypto_init();
    if (status != PSA_SUCCESS) {
        snprintf(why, cap, "mbedtls: PSA crypto init failed (%d)", (int)status);
        return -1;
    }
    mbedtls_ssl_config_init(&conf);
    mbedtls_ssl_init(&ssl);
    mbedtls_x509_crt_init(&ca);
    mbedtls_x509_crt_init(&own);
    mbedtls_pk_init(&own_key);
    int code = mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT,
                                           MBEDTLS_SSL_TRANSPORT_STREAM,
                                           MBEDTLS_SSL_PRESET_DEFAULT);
    if (code != 0)
        return fail(code, "configuration defaults", why, cap);
    mbedtls_ssl_protocol_version version = strcmp(config.tls_version, "1.3") == 0
                                               ? MBEDTLS_SSL_VERSION_TLS1_3
                                               : MBEDTLS_SSL_VERSION_TLS1_2;
    mbedtls_ssl_conf_min_tls_version(&conf, version);
    mbedtls_ssl_conf_max_tls_version(&conf, version);
    mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_rng(&conf, mbedtls_psa_get_random, MBEDTLS_PSA_RANDOM_STATE);
    /* the PEM parser wants the terminating NUL in the length */
    if ((code = mbedtls_x509_crt_parse(&ca, (const unsigned char *)config.ca_pem,
                                       config.ca_len + 1)) != 0)
        return fail(code, "the CA certificate", why, cap);
    mbedtls_ssl_conf_ca_chain(&conf, &ca, NULL);
    if (config.n_suites > 0) {
        for (size_t i = 0; i < config.n_suites; i++)
            suites[i] = config.suites[i];
        suites[config.n_suites] = 0;
        mbedtls_ssl_conf_ciphersuites(&conf, suites);
    }
    if (config.n_groups > 0) {
        memcpy(groups, config.groups, config.n_groups * sizeof groups[0]);
        groups[config.n_groups] = 0;
        mbedtls_ssl_conf_groups(&conf, groups);
    }
    if (config.client_cert_pem != NULL) {
        if ((code = mbedtls_x509_crt_parse(&own, (const unsigned char *)config.client_cert_pem,
                                           config.client_cert_len + 1)) != 0)
            return fail(code, "the client certificate", why, cap);
        if ((code = mbedtls_pk_parse_key(&own_key, (const unsigned char *)config.client_key_pem,
                                         config.client_key_len + 1, NULL, 0,
                                         mbedtls_psa_get_random, MBEDTLS_PSA_RANDOM_STATE)) != 0)
            return fail(code, "the client key", why, cap);
        if ((code = mbedtls_ssl_conf_own_cert(&conf, &own, &own_key)) != 0)
            return fail(code, "the client credentials", why, cap);
    }
    if ((code = mbedtls_ssl_setup(&ssl, &conf)) != 0)
        return fail(code, "setup", why, cap);
    if ((code = mbedtls_ssl_set_hostname(&ssl, config.server_name)) != 0)
        return fail(code, "server name", why, cap);
    mbedtls_ssl_set_bio(&ssl, NULL, send_cb, recv_cb, NULL);
    if (config.log_secrets)
        mbedtls_ssl_set_export_keys_cb(&ssl, export_keys, NULL);
    return 0;
}

int tls_handshake(char *why, size_t cap)
{
    int code = mbedtls_ssl_handshake(&ssl);
    if (code == 0)
        return 0;
    uint32_t flags = mbedtls_ssl_get_verify_result(&ssl);
    if (code == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0) {
        char text[160];
        mbedtls_x509_crt_verify_info(text, sizeof text, "", flags);
        text[strcspn(text, "\n")] = '\0';
        snprintf(why, cap, "mbedtls: the server's certificate: %s", text);
        return -1;
    }
    return fail(code, "handshake", why, cap);
}

int tls_write(const uint8_t *data, size_t len)
{
    for (size_t at = 0; at < len;) {
        int n = mbedtls_ssl_write(&ssl, data + at, len - at);
        if (n <= 0)
            return -1;
        at += (size_t)n;
    }
    return (int)len;
}

int tls_read(uint8_t *data, size_t cap)
{
    int n = mbedtls_ssl_read(&ssl, data, cap);
    return n > 0 ? n : -1;
}

void tls_negotiated(char *version, size_t cap, uint16_t *suite)
{
    snprintf(version, cap, "%s",
             mbedtls_ssl_get_version_number(&ssl) == MBEDTLS_SSL_VERSION_TLS1_3 ? "1.3" : "1.2");
    *suite = (uint16_t)mbedtls_ssl_get_ciphersuite_id_from_ssl(&ssl);
}

void tls_close(void)
{
    mbedtls_ssl_close_notify(&ssl);
    mbedtls_ssl_free(&ssl);
    mbedtls_ssl_config_free(&conf);
    mbedtls_x509_crt_free(&ca);
    mbedtls_x509_crt_free(&own);
    mbedtls_pk_free(&own_key);
}
