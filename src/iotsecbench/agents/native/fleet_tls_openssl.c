/* The fleet agent's TLS clients on OpenSSL (the host stack: Debian's libssl, the library the
 * Python agents' ssl module loads), non-blocking. The handshake messages come from OpenSSL's
 * message callback in the clear (TLS 1.3's encrypted ones too), as the Python agents record
 * them; the server's chain from the connection. */
#include "fleet_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fleet_tls_context {
    SSL_CTX *ctx;
    const char *server_name;
};

struct fleet_tls {
    SSL *ssl;
    struct tls_transcript *transcript;
};

static void why_openssl(char *why, size_t cap, const char *what)
{
    unsigned long code = ERR_get_error();
    char reason[256] = "no reason given";
    if (code != 0)
        ERR_error_string_n(code, reason, sizeof reason);
    snprintf(why, cap, "%s: %s", what, reason);
    ERR_clear_error();
}

/* IANA supported-group id -> OpenSSL's group name (the groups the lab's profiles use). */
static const char *group_name(uint16_t id)
{
    switch (id) {
    case 23: return "P-256";
    case 24: return "P-384";
    case 25: return "P-521";
    case 29: return "X25519";
    case 30: return "X448";
    case 256: return "ffdhe2048";
    case 257: return "ffdhe3072";
    case 258: return "ffdhe4096";
    default: return NULL;
    }
}

struct fleet_tls_context *fleet_tls_context(const struct tls_options *o, char *why,
                                            size_t why_cap)
{
    struct fleet_tls_context *c = calloc(1, sizeof *c);
    if (c == NULL || (c->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
        why_openssl(why, why_cap, "SSL_CTX_new");
        free(c);
        return NULL;
    }
    int version = strcmp(o->version, "1.3") == 0 ? TLS1_3_VERSION : TLS1_2_VERSION;
    SSL_CTX_set_min_proto_version(c->ctx, version);
    SSL_CTX_set_max_proto_version(c->ctx, version);
    /* A WANT_WRITE send is repeated from a buffer that may have moved (fleet.c's out). */
    SSL_CTX_set_mode(c->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_session_cache_mode(c->ctx, SSL_SESS_CACHE_OFF); /* each device keeps its own */
    if (SSL_CTX_load_verify_locations(c->ctx, o->ca_file, NULL) != 1) {
        why_openssl(why, why_cap, o->ca_file);
        goto fail;
    }
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if (o->client_cert != NULL &&
        (SSL_CTX_use_certificate_chain_file(c->ctx, o->client_cert) != 1 ||
         SSL_CTX_use_PrivateKey_file(c->ctx, o->client_key, SSL_FILETYPE_PEM) != 1)) {
        why_openssl(why, why_cap, o->client_cert);
        goto fail;
    }
    if (o->n_suites > 0) { /* IANA ids -> OpenSSL's names, through a scratch connection */
        SSL *scratch = SSL_new(c->ctx);
        char list12[2048] = "", list13[512] = "";
        for (size_t i = 0; scratch != NULL && i < o->n_suites; i++) {
            unsigned char id[2] = {(unsigned char)(o->suites[i] >> 8), (unsigned char)o->suites[i]};
            const SSL_CIPHER *cipher = SSL_CIPHER_find(scratch, id);
            if (cipher == NULL)
                continue;
            bool tls13 = (o->suites[i] >> 8) == 0x13;
            char *list = tls13 ? list13 : list12;
            size_t cap = tls13 ? sizeof list13 : sizeof list12;
            if (list[0] != '\0')
                strncat(list, ":", cap - strlen(list) - 1);
            strncat(list, SSL_CIPHER_get_name(cipher), cap - strlen(list) - 1);
        }
        SSL_free(scratch);
        if ((list12[0] && SSL_CTX_set_cipher_list(c->ctx, list12) != 1) ||
            (list13[0] && SSL_CTX_set_ciphersuites(c->ctx, list13) != 1)) {
            why_openssl(why, why_cap, "cipher suites");
            goto fail;
        }
    }
    if (o->n_groups > 0) {
        char list[256] = "";
        for (size_t i = 0; i < o->n_groups; i++) {
            const char *name = group_name(o->groups[i]);
            if (name == NULL) {
                snprintf(why, why_cap, "group 0x%04x: not known to the fleet agent",
                         o->groups[i]);
                goto fail;
            }
            if (list[0] != '\0')
                strncat(list, ":", sizeof list - strlen(list) - 1);
            strncat(list, name, sizeof list - strlen(list) - 1);
        }
        if (SSL_CTX_set1_groups_list(c->ctx, list) != 1) {
            why_openssl(why, why_cap, "groups");
            goto fail;
        }
    }
    c->server_name = o->server_name;
    return c;
fail:
    SSL_CTX_free(c->ctx);
    free(c);
    return NULL;
}

/* Handshake messages (content type 22) as OpenSSL hands them over, until the handshake ends. */
static void on_message(int write_p, int version, int content_type, const void *buf, size_t len,
                       SSL *ssl, void *arg)
{
    struct tls_transcript *t = arg;
    if (t == NULL || !t->recording || content_type != SSL3_RT_HANDSHAKE || len < 4)
        return;
    const uint8_t *bytes = buf;
    tls_transcript_add(t, write_p != 0, bytes[0], bytes, len);
}

struct fleet_tls *fleet_tls_new(struct fleet_tls_context *c, int fd, void *session,
                                struct tls_transcript *t, char *why, size_t why_cap)
{
    struct fleet_tls *tls = calloc(1, sizeof *tls);
    if (tls == NULL || (tls->ssl = SSL_new(c->ctx)) == NULL) {
        why_openssl(why, why_cap, "SSL_new");
        free(tls);
        return NULL;
    }
    tls->transcript = t;
    if (t != NULL) {
        t->recording = true;
        SSL_set_msg_callback(tls->ssl, on_message);
        SSL_set_msg_callback_arg(tls->ssl, t);
    }
    SSL_set_fd(tls->ssl, fd);
    SSL_set_tlsext_host_name(tls->ssl, c->server_name);
    SSL_set1_host(tls->ssl, c->server_name);
    if (session != NULL)
        SSL_set_session(tls->ssl, session);
    SSL_set_connect_state(tls->ssl);
    return tls;
}

static int want(SSL *ssl, int result)
{
    switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ: return FLEET_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return FLEET_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: return -1;
    }
}

int fleet_tls_handshake(struct fleet_tls *tls, char *why, size_t why_cap)
{
    int result = SSL_do_handshake(tls->ssl);
    if (result == 1) {
        if (tls->transcript != NULL)
            tls->transcript->recording = false;
        return 1;
    }
    int status = want(tls->ssl, result);
    if (status == FLEET_WANT_READ || status == FLEET_WANT_WRITE)
        return status;
    long verify = SSL_get_verify_result(tls->ssl);
    if (verify != X509_V_OK) {
        snprintf(why, why_cap, "certificate: %s", X509_verify_cert_error_string(verify));
        ERR_clear_error();
    } else {
        why_openssl(why, why_cap, "handshake");
    }
    return -1;
}

ssize_t fleet_tls_send(struct fleet_tls *tls, const void *data, size_t len)
{
    size_t written = 0;
    int result = SSL_write_ex(tls->ssl, data, len, &written);
    if (result == 1)
        return (ssize_t)written;
    int status = want(tls->ssl, result);
    ERR_clear_error();
    return status == 0 ? -1 : status;
}

ssize_t fleet_tls_recv(struct fleet_tls *tls, void *data, size_t cap)
{
    size_t read = 0;
    int result = SSL_read_ex(tls->ssl, data, cap, &read);
    if (result == 1)
        return (ssize_t)read;
    int status = want(tls->ssl, result);
    ERR_clear_error();
    return status;
}

size_t fleet_tls_pending(struct fleet_tls *tls) { return (size_t)SSL_pending(tls->ssl); }

void fleet_tls_describe(struct fleet_tls *tls, struct tls_result *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->version, sizeof out->version, "%s",
             SSL_version(tls->ssl) == TLS1_3_VERSION ? "1.3" : "1.2");
    const SSL_CIPHER *cipher = SSL_get_current_cipher(tls->ssl);
    if (cipher != NULL) {
        out->suite = SSL_CIPHER_get_protocol_id(cipher);
        snprintf(out->suite_name, sizeof out->suite_name, "%s", SSL_CIPHER_get_name(cipher));
        out->cipher_bits = SSL_CIPHER_get_bits(cipher, NULL);
    }
    out->resumed = SSL_session_reused(tls->ssl) == 1;
    STACK_OF(X509) *chain = SSL_get_peer_cert_chain(tls->ssl);
    int n = chain != NULL ? sk_X509_num(chain) : 0;
    if (n <= 0)
        return;
    out->chain = calloc((size_t)n, sizeof *out->chain);
    out->chain_len = calloc((size_t)n, sizeof *out->chain_len);
    if (out->chain == NULL || out->chain_len == NULL)
        return;
    for (int i = 0; i < n; i++) {
        unsigned char *der = NULL;
        int len = i2d_X509(sk_X509_value(chain, i), &der);
        if (len <= 0)
            break;
        out->chain[i] = malloc((size_t)len);
        if (out->chain[i] == NULL) {
            OPENSSL_free(der);
            break;
        }
        memcpy(out->chain[i], der, (size_t)len);
        OPENSSL_free(der);
        out->chain_len[i] = (size_t)len;
        out->chain_count++;
    }
}

void *fleet_tls_session(struct fleet_tls *tls)
{
    SSL_SESSION *session = SSL_get1_session(tls->ssl);
    if (session != NULL && !SSL_SESSION_is_resumable(session)) {
        SSL_SESSION_free(session);
        return NULL;
    }
    return session;
}

void fleet_tls_session_free(void *session) { SSL_SESSION_free(session); }

void fleet_tls_free(struct fleet_tls *tls, bool close_notify)
{
    if (tls == NULL)
        return;
    if (close_notify)
        SSL_shutdown(tls->ssl); /* best effort on a non-blocking socket */
    else /* a cut link: the device keeps its session (OpenSSL would mark it unresumable) */
        SSL_set_shutdown(tls->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(tls->ssl);
    ERR_clear_error();
    free(tls);
}

const char *fleet_stack_name(void) { return "openssl"; }
const char *fleet_stack_version(void) { return OpenSSL_version(OPENSSL_VERSION_STRING); }
