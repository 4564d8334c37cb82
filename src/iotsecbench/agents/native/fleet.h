/* What the parts of the fleet agent share (fleet.c: configuration, the loop, main;
 * fleet_io.c: records, timers, sending; fleet_link.c: one device's connection in a role). */
#ifndef IOTSB_FLEET_H
#define IOTSB_FLEET_H

#include "filler.h"
#include "fleet_tls.h"
#include "mqtt.h"
#include "records.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/tcp.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEEP_ALIVE_S 60
#define MAX_INFLIGHT 20
#define MAX_PACKET (1u << 20)
#define RECORDS_FLUSH_BYTES 16384
#define RECEIVER_SETUPS 64 /* receivers connecting at once: the lab's back end, not measured */
#define BACKEND_BATCH 50    /* devices per SUBSCRIBE of a backend subscriber (two topics each) */
/* A backend subscribes at QoS 0: the broker's copy to the lab's back end, on loopback, carries
 * no acknowledgements, so mosquitto's per-client in-flight window (max_inflight_messages)
 * and queue (max_queued_messages), sized for one device's receiver, do not throttle and
 * drop hundreds of devices' messages on one connection. The devices publish at their QoS. */
#define BACKEND_QOS 0

/* BACKEND: with "backends" in the config, a few subscriber connections receive every device's
 * topics for the process's receivers, which then have no connection of their own: each
 * message is still counted in its device's receiver records, by its topic. */
enum role { EMITTER, RECEIVER, BACKEND };
extern const char *const ROLE_NAMES[3];
enum state { WAITING, TCP_CONNECTING, TLS_HANDSHAKE, MQTT_CONNECTING, SUBSCRIBING, RUNNING,
             ENDING, DONE };
enum { RECEIVED, DELIVERED, DUPLICATES, AUTH_FAILURES, MALFORMED, REPLAYS };
extern const char *const COUNTER_NAMES[6];

struct link { /* one device's connection in one role */
    enum role role;
    enum state state;
    int index, fd;
    const char *username, *password, *client_id, *topic_prefix, *output;
    uint64_t seed;
    struct fleet_tls *tls;
    bool paced;        /* its set-up holds one of cfg.max_connecting places */
    int64_t queued_ns; /* when it joined the connect queue (0: it did not wait) */
    size_t backend_first, backends, subacks_pending; /* a backend's devices: first, stride */
    void *session; /* the last connection's TLS session, offered by the next */
    struct tls_transcript transcript;
    bool priming, reconnecting; /* a resumption profile's first connection; after a cut */
    uint8_t *in, *out;
    size_t in_len, in_cap, out_len, out_cap;
    char *rec; /* records not yet appended to the output file */
    size_t rec_len, rec_cap;
    int64_t due_ns; /* the link's timer; heap position below */
    size_t heap_at;
    unsigned generation; /* one more per closed connection: bytes read belong to one */
    int64_t t_tcp0, t_tcp1, t_tls1, t_cut, cpu_tcp, cpu_tls, cpu_mqtt, cpu_ns, last_sent_ns;
    uint16_t next_id, end_id;
    /* emitter */
    long seq, planned, sent, unacked, cuts;
    int64_t publish_start, drain_end, end_deadline;
    uint16_t awaiting[MAX_INFLIGHT + 1];
    long awaiting_seq[MAX_INFLIGHT + 1];
    int64_t awaiting_created[MAX_INFLIGHT + 1];
    /* receiver */
    long expected, counts[6];
    uint8_t *delivered;
    size_t delivered_cap;
    int64_t recv_drain_end;
};

struct fleet_config {
    const char *host, *configuration;
    int port, qos;
    long payload_bytes;
    double rate_hz, duration_s, connect_timeout_s, drain_s, ramp_hz, storm_at_s;
    bool tcp_nodelay, tls, resumption;
    long max_connecting; /* set-ups in flight at once (0: unbounded); the rest queue */
    struct tls_options tls_options;
    uint16_t suites[64], groups[4];
};
extern struct fleet_config cfg;

extern struct link *links;
extern size_t n_links, n_devices, n_backends;
extern struct link **heap;
extern size_t heap_len;
extern struct fleet_tls_context *tls_context;
extern struct addrinfo *address;
extern int epoll_fd, receivers_setting_up, receivers_waiting;
extern size_t active, receivers_ready;
extern int64_t t0_go;
extern volatile sig_atomic_t terminated;
extern uint8_t *payload; /* one device's plaintext at a time: filled per message */
extern FILE *process_out;

/* fleet_io.c */
void process_record(const char *type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void flush_link(struct link *l);
void lrec(struct link *l, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void levent(struct link *l, const char *kind, const char *detail);
void flush_all(void);
void __attribute__((noreturn, format(printf, 2, 3))) fail(struct link *l, const char *fmt, ...);
void schedule(struct link *l, int64_t due);
void unschedule(struct link *l);
void watch(struct link *l, bool writable);
void flush_out(struct link *l);
void send_packet(struct link *l, const uint8_t *bytes, size_t len);
size_t topic_publish(struct link *l, uint8_t *out, size_t cap, const char *suffix,
                     const uint8_t *body, size_t len, int qos, uint16_t id, bool dup);
bool topic_is(const struct link *l, const struct mqtt_publish_in *m, const char *suffix);
uint16_t next_id(struct link *l);

/* fleet_link.c */
void close_link(struct link *l, bool goodbye);
void start_connect(struct link *l);
void request_connect(struct link *l); /* start_connect, or queue it under cfg.max_connecting */
void backends_index(void);            /* the receivers by topic, for the backends' messages */
void publish_next(struct link *l);
void on_event(struct link *l, uint32_t events); /* epoll said the link's socket is ready */
void on_timer(struct link *l);                  /* the link's timer is due */

#endif
