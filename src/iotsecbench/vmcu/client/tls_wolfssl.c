/* TLS 1.2 and 1.3 on wolfSSL 5.9 (the device configuration wolfssl/user_settings.h; with
 * IOTSB_DEVICE_PQ also ML-KEM key shares and ML-DSA certificates), over net.c's blocking byte
 * stream: wolfSSL reads exactly what it needs (GetInputData without WOLFSSL_TLS_READ_AHEAD), so
 * it never sees a partial read. */
#include "device.h"

#include <stdio.h>
#include <string.h>

#include <wolfssl/wolfcrypt/settings.h>
#include <wolfssl/ssl.h>
#include <wolfssl/version.h>

static WOLFSSL_CTX *ctx;
static WOLFSSL *ssl;

const char *tls_stack(void) { return "wolfssl"; }
const char *tls_stack_version(void) { return LIBWOLFSSL_VERSION_STRING; }

/* USER_TICKS: no clock on this device (sessions are not cached, dates are not checked). */
unsigned int LowResTimer(void) { return 0; }

static int send_cb(WOLFSSL *s, char *data, int len, void *context)
{
    (void)s, (void)context;
    return net_send((const uint8_t *)data, (size_t)len);
}

static int recv_cb(WOLFSSL *s, char *data, int len, void *context)
{
    (void)s, (void)context;
    return net_recv((uint8_t *)data, (size_t)len);
}

static int secret_cb(WOLFSSL *s, int id, const unsigned char *secret, int len, void *context)
{
    (void)s, (void)context;
    static const char *const labels[] = {
        [CLIENT_HANDSHAKE_TRAFFIC_SECRET] = "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        [SERVER_HANDSHAKE_TRAFFIC_SECRET] = "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        [CLIENT_TRAFFIC_SECRET] = "CLIENT_TRAFFIC_SECRET_0",
        [SERVER_TRAFFIC_SECRET] = "SERVER_TRAFFIC_SECRET_0",
    };
    if (id < 0 || (size_t)id >= sizeof labels / sizeof labels[0] || labels[id] == NULL)
        return 0;
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    secret_line(labels[id], secret, (size_t)len);
    ledger_bucket(resume);
    return 0;
}

static int fail(const char *what, char *why, size_t cap)
{
    int code = ssl ? wolfSSL_get_error(ssl, 0) : 0;
    snprintf(why, cap, "wolfssl: %s failed (error %d)", what, code);
    return -1;
}

int tls_setup(char *why, size_t cap)
{
    bool v13 = strcmp(config.tls_version, "1.3") == 0;
    if (wolfSSL_Init() != WOLFSSL_SUCCESS)
        return fail("initialisation", why, cap);
    ctx = wolfSSL_CTX_new(v13 ? wolfTLSv1_3_client_method() : wolfTLSv1_2_client_method());
    if (ctx == NULL)
        return fail("context", why, cap);
    if (wolfSSL_CTX_load_verify_buffer(ctx, (const unsigned char *)config.ca_pem,
                                       (long)config.ca_len, WOLFSSL_FILETYPE_PEM) !=
        WOLFSSL_SUCCESS)
        return fail("loading the CA certificate", why, cap);
    wolfSSL_CTX_set_verify(ctx, WOLFSSL_VERIFY_PEER, NULL);
    if (config.n_suites > 0) {
        uint8_t list[2 * DEVICE_MAX_SUITES];
        for (size_t i = 0; i < config.n_suites; i++) {
            list[2 * i] = (uint8_t)(config.suites[i] >> 8);
            list[2 * i + 1] = (uint8_t)config.suites[i];
        }
        if (wolfSSL_CTX_set_cipher_list_bytes(ctx, list, (int)(2 * config.n_suites)) !=
            WOLFSSL_SUCCESS) {
            snprintf(why, cap, "wolfssl: supports none of the requested suites");
            return -1;
        }
    }
    if (config.client_cert_pem != NULL) {
        if (wolfSSL_CTX_use_certificate_chain_buffer(ctx,
                                                     (const unsigned char *)config.client_cert_pem,
                                                     (long)config.client_cert_len) != WOLFSSL_SUCCESS)
            return fail("loading the client certificate", why, cap);
        if (wolfSSL_CTX_use_PrivateKey_buffer(ctx, (const unsigned char *)config.client_key_pem,
                                              (long)config.client_key_len,
                                              WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS)
            return fail("loading the client key", why, cap);
    }
    wolfSSL_CTX_SetIORecv(ctx, recv_cb);
    wolfSSL_CTX_SetIOSend(ctx, send_cb);
    ssl = wolfSSL_new(ctx);
    if (ssl == NULL)
        return fail("session", why, cap);
    /* TLS 1.3: the groups in order, the first with the key share; TLS 1.2: the supported
     * groups extension (wolfSSL_set_groups refuses a 1.2 connection). */
    int list[DEVICE_MAX_GROUPS];
    for (size_t i = 0; i < config.n_groups; i++) {
        list[i] = config.groups[i];
        if (!v13 && wolfSSL_UseSupportedCurve(ssl, config.groups[i]) != WOLFSSL_SUCCESS)
            return fail("offering the group", why, cap);
    }
    if (v13 && config.n_groups > 0 &&
        wolfSSL_set_groups(ssl, list, (int)config.n_groups) != WOLFSSL_SUCCESS) {
        snprintf(why, cap, "wolfssl: cannot offer the requested group(s)");
        return -1;
    }
    if (wolfSSL_check_domain_name(ssl, config.server_name) != WOLFSSL_SUCCESS)
        return fail("server name", why, cap);
    if (v13 && config.log_secrets && wolfSSL_set_tls13_secret_cb(ssl, secret_cb, NULL) !=
                                         WOLFSSL_SUCCESS)
        return fail("secret callback", why, cap);
    return 0;
}

int tls_handshake(char *why, size_t cap)
{
    if (wolfSSL_connect(ssl) == WOLFSSL_SUCCESS)
        return 0;
    return fail("handshake", why, cap);
}

int tls_write(const uint8_t *data, size_t len)
{
    int n = wolfSSL_write(ssl, data, (int)len);
    return n == (int)len ? n : -1;
}

int tls_read(uint8_t *data, size_t cap)
{
    int n = wolfSSL_read(ssl, data, (int)cap);
    return n > 0 ? n : -1;
}

void tls_negotiated(char *version, size_t cap, uint16_t *suite)
{
    const char *name = wolfSSL_get_version(ssl); /* "TLSv1.2", "TLSv1.3" */
    snprintf(version, cap, "%s", name + (name[0] == 'T' ? 4 : 0));
    *suite = (uint16_t)wolfSSL_get_current_cipher_suite(ssl);
}

void tls_close(void)
{
    if (ssl != NULL) {
        wolfSSL_shutdown(ssl);
        wolfSSL_free(ssl);
    }
    if (ctx != NULL)
        wolfSSL_CTX_free(ctx);
    ssl = NULL, ctx = NULL;
}
