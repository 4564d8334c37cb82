/* What the parts of the native agent share (state.c: configuration and connection state,
 * failure; connection.c: the broker connection and its phases; exchange.c: the payload
 * scheme's key exchange; roles.c: the emitter and receiver; agent.c: reading the
 * configuration, main). */
#ifndef IOTSB_AGENT_H
#define IOTSB_AGENT_H

#include "mqtt.h"
#include "tls.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KEEP_ALIVE_S 60
#define MAX_INFLIGHT 20          /* QoS 1 messages awaiting PUBACK: paho's default */
#define MAX_PACKET (16u << 20)   /* larger packets from the broker are refused as malformed */
#define SERVER_NAME "localhost"  /* the name the lab's server certificate carries */

struct config {
    const char *role, *configuration, *host, *username, *password, *client_id, *topic_prefix, *output, *fault;
    const char *keylog;      /* --keylog: the 0600 file TLS secrets and session keys go to */
    bool tcp, echo;          /* the tcp transport (tcp.c); its echo method */
    int port, qos;
    long payload_bytes;
    double rate_hz, duration_s, connect_timeout_s, drain_s;
    uint64_t seed;
    bool tcp_nodelay, saturating, tls;
    bool scheme;             /* a payload scheme (scheme.c) protects the messages */
    bool resumption;         /* the TLS profile measures a resumed handshake (connect_broker) */
    uint8_t psk[64];         /* psk-* schemes: the run's pre-shared key (psk_file) */
    size_t psk_len;
    struct tls_options tls_options;
    uint16_t suites[64], groups[4];
};

struct connection {
    int fd;
    struct tls *tls;
    struct tls_transcript transcript;
    struct tls_session *session; /* resumption: the last connection's, offered by the next */
    uint8_t *in;
    size_t in_len, in_cap;
    int64_t last_sent_ns;
    uint16_t next_id;
};

extern struct config cfg;
extern struct connection conn;
extern volatile sig_atomic_t terminated; /* the signal that asked us to stop, or 0 */
extern void (*on_failure)(int status);   /* what die() calls before exit(1): main's finish */

/* state.c */
void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...);
void event(const char *kind, const char *detail_fmt, ...) __attribute__((format(printf, 2, 3)));
void counter(const char *name, long long value);
/* The payload scheme a configuration name carries ("tls1.2+x25519-aes128-gcm" ->
 * "x25519-aes128-gcm"), or NULL for a transport alone (security/configuration.py's grammar). */
const char *configuration_scheme(const char *configuration);

/* connection.c */
void connect_broker(void);     /* TCP connect, TLS handshake, CONNECT -> CONNACK: the phases */
void send_all(const uint8_t *bytes, size_t len);
int next_packet(struct mqtt_packet *p, int timeout_ms); /* 1 with *p, 0 on timeout */
void packet_done(const struct mqtt_packet *p);
uint16_t next_packet_id(void);
void keep_alive(void);         /* PINGREQ after half the keep-alive without sending */
/* A packet the caller does not consume: PINGRESP, a PUBACK nobody waits for, a PUBLISH on a
 * topic the role does not read (acknowledged, dropped); anything else ends the agent. */
void take_other(const struct mqtt_packet *p);
bool topic_is(const struct mqtt_publish_in *m, const char *suffix); /* <topic_prefix>/suffix */
size_t topic_publish(uint8_t *out, size_t cap, const char *suffix, const uint8_t *payload,
                     size_t len, int qos, uint16_t id, bool retain);
void phase(const char *name, int64_t start, int64_t end, int64_t cpu, const char *detail);
void disconnect_broker(void);  /* DISCONNECT, then close_connection */
void close_connection(void);   /* heap counters, TLS close_notify, close */
int64_t open_connection(void); /* TCP connect, TLS handshake (phases): the time it was ready */
void write_transcript(void);   /* the TLS handshake as recorded (records), then forgotten */
int receive(int timeout_ms);   /* what arrived within timeout_ms into conn.in: 1, or 0 */
void finish(int status);       /* DISCONNECT (on success), last sample, counters, close */

/* exchange.c: the payload scheme's key exchange over MQTT */
struct direction;
struct direction *emitter_key_exchange(void);  /* the e2r keys, confirmed */
void receiver_key_exchange_start(void);        /* hello, retained */
struct direction *receiver_key_exchange(const struct mqtt_publish_in *m); /* NULL: refused */
/* ... and over the tcp transport's frames (the emitter's side): e2r, and *r2e for echoes */
struct direction *emitter_key_exchange_frames(struct direction **r2e);
void receiver_key_exchange_end(void);          /* clear the retained hello */

/* roles.c */
long planned_messages(void); /* messages of a fixed-rate run, -1 when saturating */
/* The application message's header (agents/wire.py): seq (8) | t_created_ns (8), big-endian,
 * then the filler; message_read needs 16 bytes. */
void message_stamp(uint8_t *plaintext, long seq, int64_t t_created);
void message_read(const uint8_t *plaintext, uint64_t *seq, uint64_t *t_created);
void record_sent(long seq, size_t wire_bytes, int64_t t_created, int64_t t_sealed,
                 int64_t t_published, int64_t seal_cpu); /* the emitter's "message" record */
void fault_at(long seq); /* the test hook of agents/config.py (crash-after=N, hang-after=N) */
void emit(void);
void receive_messages(void);
void connect_repeatedly(void); /* role "connect": one connection per line on stdin */

/* tcp.c: the emitter of the tcp transport, and its frames (docs/wire-format.md) */
void emit_frames(void);
void send_frame(char kind, const uint8_t *body, size_t len);
/* The next frame's body, which must be of kind (else the agent ends naming what): copied to
 * out (at most cap bytes), its length returned; *t_arrived when it was whole. */
size_t expect_frame(char kind, const char *what, uint8_t *out, size_t cap, int64_t *t_arrived);

#endif
