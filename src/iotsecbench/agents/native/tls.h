/* One TLS client on the device stack the agent was built with (tls_mbedtls.c, tls_wolfssl.c;
 * tls_none.c for the plain build). The handshake's messages are kept as they crossed the
 * wire, for the Python side to read the negotiated group, signature and certificates with
 * the same parser as OpenSSL's transcripts (security/tls/observe.py). What TLS 1.3 protects
 * (everything after the ServerHello) is kept as its record sizes only: wolfSSL's message
 * callback hands over records, not decrypted messages, so the server's chain comes from the
 * stack (its verify callback) and its CertificateVerify algorithm is not known. */
#ifndef IOTSB_TLS_H
#define IOTSB_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tls_options {
    const char *version;     /* "1.2" or "1.3": minimum = maximum */
    const uint16_t *suites;  /* IANA cipher suite ids, count n_suites; 0: the stack's default */
    size_t n_suites;
    const uint16_t *groups;  /* IANA supported-group ids to offer, count n_groups; 0: default */
    size_t n_groups;
    const char *ca_file;
    const char *client_cert; /* NULL unless mutual */
    const char *client_key;
    const char *server_name; /* checked against the server's certificate */
    bool key_log;            /* keep what tls_key_log needs (--keylog) */
};

struct tls_message {
    bool written;    /* sent by us (else received) */
    uint8_t type;    /* handshake message type; 0 = an encrypted record of the handshake */
    uint8_t *bytes;  /* type | length(3) | body as on the wire */
    size_t len;
};

struct tls_transcript {
    struct tls_message *messages;
    size_t count, cap;
    bool recording;  /* until the handshake ends */
    uint8_t *pending[2]; /* per direction: bytes of records not yet complete */
    size_t pending_len[2];
    uint8_t *handshake[2]; /* per direction: handshake bytes not yet a whole message */
    size_t handshake_len[2];
    bool encrypted[2]; /* the direction's records are protected from here on */
    int marker_fd;     /* >= 0: write "iotsb msg w|r TYPE" there per message (bench --trace) */
};

struct tls_result {
    char version[8];      /* "1.2", "1.3" */
    uint16_t suite;       /* IANA id of the negotiated suite */
    char suite_name[96];  /* the stack's own name for it */
    int cipher_bits;      /* secret bits of the bulk cipher; 0: the stack cannot say */
    bool resumed;
    uint8_t **chain;      /* the server's certificates as received (DER), leaf first */
    size_t *chain_len;
    size_t chain_count;
};

struct tls;
struct tls_session; /* a session to resume: the stack's own, in its (counted) heap */

/* Handshakes over the connected socket fd, offering session (NULL: a full handshake); NULL
 * with why set on failure. */
struct tls *tls_connect(int fd, const struct tls_options *options,
                        const struct tls_session *offer, struct tls_transcript *t, char *why,
                        size_t why_cap);
/* The connection's session for a later tls_connect to offer (NULL: none to give). Taken
 * just before closing, so TLS 1.3 tickets that came with the application data are in it. */
struct tls_session *tls_session_get(struct tls *tls);
void tls_session_free(struct tls_session *session);
void tls_describe(struct tls *tls, struct tls_result *out);
/* --keylog: the connection's secrets as NSS key log lines ("CLIENT_RANDOM <client random>
 * <master secret>\n" in TLS 1.2; the traffic secrets' lines in TLS 1.3, on a stack with the
 * secret callbacks) in out; false when the stack cannot give them. Secrets! */
bool tls_key_log(struct tls *tls, char *out, size_t cap);
/* After the handshake the socket is non-blocking: send and receive return what they moved
 * (> 0), TLS_WANT when the socket must become writable/readable first, 0 (receive: closed)
 * or -1 (an error). A TLS_WANT send is repeated with the same bytes. */
#define TLS_WANT (-2)
ssize_t tls_send(struct tls *tls, const void *data, size_t len);
ssize_t tls_recv(struct tls *tls, void *data, size_t cap);
size_t tls_pending(struct tls *tls); /* decrypted bytes waiting (poll does not see them) */
void tls_close(struct tls *tls);     /* close_notify, then free everything */

/* transcript.c: records and messages as they cross the wire */
void tls_transcript_feed(struct tls_transcript *t, bool written, const uint8_t *bytes, size_t len);
void tls_transcript_add(struct tls_transcript *t, bool written, uint8_t type, const uint8_t *bytes,
                    size_t len);
void tls_transcript_free(struct tls_transcript *t);
bool tls_nss_line(char *out, size_t cap, const char *label, const uint8_t *a, size_t a_len,
                  const uint8_t *b, size_t b_len);

#endif
