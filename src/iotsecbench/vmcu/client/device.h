/* The device client firmware (docs/device-client.md): the MQTT client of a microcontroller,
 * bare metal on a virtual MCU under QEMU -icount, speaking MQTT 3.1.1 over the board's UART,
 * in the clear or through TLS 1.2 / 1.3 on the device build of mbedTLS or wolfSSL.
 *
 *   main.c      start-up, the role (one connection: "connect"), the records at the end,
 *               and device_fail, the error record that ends the firmware
 *   config.c    the host's configuration, read by semihosting (vmcu/client.py writes it)
 *   ledger.c    the instruction ledger: every instruction the client runs lands in one
 *               segment (started by an I/O event or a mark) and one bucket (the client's own,
 *               network wait, UART I/O, or the firmware's bookkeeping, which is not counted)
 *   net.c       the byte stream over the UART to the host's bridge (runner/device.py)
 *   record.c    JSON lines in the agents' vocabulary, written to a host file by semihosting
 *   board.c     the UART of each board; the counters come from ../firmware/counter.h
 *   heap.c      the stack paint and the TRNG stand-in (the counting allocator behind both
 *               stacks is ../firmware/counted_heap.c, the primitives' harness's own)
 *   publish.c   the "publish" role: the device as the lab's emitter (messages, 10 Hz samples)
 *   frames.c    the "tcp" role: the emitter of the tcp transport, frames straight to the
 *               receiver (the block-sizes study: one way or echoed, at a rate or saturating)
 *   emitter.c   what both emitter roles share: counts, samples, schedule, message records
 *   clock.c     the lab's clock (the host's CLOCK_MONOTONIC through semihosting, offset by a
 *               sync with the bridge) and the sleep on the board's virtual timer
 *   tls_*.c     the TLS client on each stack (tls_none.c: plain MQTT), behind tls.h below
 *   wrap_*.c    the stacks' primitives wrapped at link time (-Wl,--wrap): their instructions
 *               per family (public key, SHA-2, AES, ChaCha20-Poly1305, ML-KEM, ML-DSA)
 *
 * The roles are table entries in main.c. */
#ifndef IOTSB_DEVICE_H
#define IOTSB_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* -- the host's configuration (config.c) -------------------------------------------------- */
#define DEVICE_MAX_SUITES 16
#define DEVICE_MAX_GROUPS 4

struct device_config {
    const char *role;         /* "connect" or "publish" */
    const char *tls_version;  /* "1.2", "1.3", or "" for plain MQTT */
    uint16_t suites[DEVICE_MAX_SUITES]; /* IANA ids to offer; none: the stack's default */
    size_t n_suites;
    uint16_t groups[DEVICE_MAX_GROUPS]; /* IANA supported-group ids, the first gets the share */
    size_t n_groups;
    const char *ca_pem;       /* the CA the server's chain must lead to */
    size_t ca_len;            /* without the terminating NUL */
    const char *client_cert_pem, *client_key_pem; /* mutual TLS, else NULL */
    size_t client_cert_len, client_key_len;
    const char *server_name;  /* checked against the server's certificate */
    const char *client_id, *username, *password;
    const char *topic_prefix;
    uint8_t seed[32];         /* the TRNG stand-in's seed: same seed, same instructions */
    uint32_t keep_alive_s;
    bool log_secrets;         /* TLS 1.3: the traffic secrets to the host (transcript) */
    /* the "publish" role (publish.c): the run's messages, as agents/emitter.py sends them */
    uint32_t message_count;
    uint64_t period_ns;       /* between scheduled messages, on the lab's clock */
    uint32_t qos;             /* 0 or 1 */
    uint32_t payload_bytes;   /* plaintext: seq, t_created_ns, filler (agents/wire.py) */
    uint64_t filler_seed;     /* agents/wire.py make_filler's seed */
    const char *scheme;       /* a payload scheme's name (docs/wire-format.md), or "" */
    const uint8_t *psk;       /* a psk-* scheme's pre-shared key (the runner's, per run) */
    size_t psk_len;           /* 0: none */
    /* the "tcp" role (frames.c): the tcp transport's emitter, as agents/tcp.py sends */
    bool echo;                /* method echo: every block comes back, is opened and checked */
    bool saturating;          /* the next block as soon as the last is written (or echoed) */
    uint64_t duration_ns;     /* saturating: for this long on the lab's clock */
};

extern struct device_config config;
/* 0, or -1 with why set (the file is missing or malformed). */
int config_load(const char *path, char *why, size_t cap);

/* -- the instruction ledger (ledger.c) ---------------------------------------------------- */
enum bucket {
    BUCKET_CLIENT,  /* the client's own instructions: TLS, MQTT, application */
    BUCKET_WAIT,    /* polling the UART for bytes that have not arrived: network wait */
    BUCKET_IO,      /* moving bytes through the UART: the emulated link's driver */
    BUCKET_HARNESS, /* the firmware's bookkeeping (records, secrets, stack paint): not counted */
    BUCKETS
};
enum family { FAMILY_PK, FAMILY_SHA2, FAMILY_AES, FAMILY_CHACHA, FAMILY_MLKEM, FAMILY_MLDSA,
              FAMILY_LWC, FAMILIES };

void ledger_start(void);
/* Ends the segment running now and starts one named by its first event: a mark ("CLIENT_HELLO"),
 * or bytes read ('r') or written ('w') through net.c. */
void ledger_mark(const char *name);
void ledger_io_event(char direction, uint32_t bytes);
/* Where the instructions from now on go; returns the bucket they went to until now. */
enum bucket ledger_bucket(enum bucket next);
/* Around a wrapped primitive (wrap_*.c); nested calls count for the outermost. */
void ledger_primitive_enter(void);
void ledger_primitive_leave(enum family family);
/* Everything booked since ledger_start, the running segment included (publish.c's samples and
 * per-message counts). */
struct ledger_totals {
    uint64_t buckets[BUCKETS];
    uint64_t families[FAMILIES];
};
void ledger_totals(struct ledger_totals *out);
const char *ledger_family_name(enum family family); /* "pk", "aes" … (the records' names) */
/* Whether ended segments are kept for count_segment records (the handshake's) or only added
 * to the totals (the publish loop, which writes one record per message instead). */
void ledger_keep_segments(bool keep);
/* The client instructions of the segment that ended last (main.c's calibration). */
uint64_t ledger_ended_client(void);
/* Writes the ended segments' records (outside the handshake: see ledger.c); whether the buffer
 * ever filled and had to be written inside it. */
void ledger_flush(void);
bool ledger_overflowed(void);

/* -- the byte stream (net.c) --------------------------------------------------------------- */
/* Writes len bytes as one frame: the bridge sends each frame with one send() on its TCP
 * connection, as a device's network stack sends one buffer (docs/device-client.md). */
int net_send(const uint8_t *data, size_t len);
/* Blocks until exactly len bytes came: the stack asks for what it needs, so its work does not
 * depend on how the bytes were split on the way (the count is network-invariant). */
int net_recv(uint8_t *data, size_t len);
uint64_t net_bytes_sent(void), net_bytes_received(void);

/* -- records (record.c): one JSON line each, in the agents' record vocabulary --------------- */
int records_open(const char *path);
/* Appends one line: the JSON object whose members (without braces) follow "type". */
void record(const char *type, const char *members_fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *json_quote(char *out, size_t cap, const char *text); /* a JSON string literal */
/* One line per segment begun (device-progress.txt): where a firmware was if it never ends. */
void progress(unsigned index, char event, const char *mark, uint32_t bytes);
void records_close(void);
/* The error record and the end of the firmware: exits with status 1. */
void device_fail(const char *fmt_what, const char *detail) __attribute__((noreturn));
/* TLS 1.3 secrets for the host's transcript, to a file of their own (never the records). */
void secret_line(const char *label, const uint8_t *secret, size_t len);

/* -- the board (board.c) -------------------------------------------------------------------- */
void board_start(void); /* the counter and the UART */
bool uart_readable(void);
uint8_t uart_read(void);
void uart_write(uint8_t byte);
uint32_t counter_now(void);

/* -- the lab's clock and sleep (clock.c) --------------------------------------------------- */
/* Before anything is counted: the bridge sends its clock, the firmware answers with its own
 * reading, the bridge sends the offset between them (runner/device.py). 0, or -1 with why. */
int clock_sync(char *why, size_t cap);
/* The lab's clock (CLOCK_MONOTONIC ns of the host), read by semihosting (the harness's). */
uint64_t lab_now_ns(void);
/* Sleeps on the board's virtual timer until the lab's clock reaches deadline_ns (WFI: under
 * -icount virtual time follows real time while the core sleeps). The time slept is booked
 * to no bucket; it is returned for the samples. */
uint64_t sleep_until(uint64_t deadline_ns);
/* One WFI sleep of about ns on the board's timer (board.c). */
void board_sleep_ns(uint64_t ns);

/* -- what the emitter roles share (emitter.c) ------------------------------------------------ */
struct counts { /* the ledger's totals as the records split them */
    uint64_t crypto, protocol, wait, io;
    uint64_t families[FAMILIES]; /* crypto per primitive family (an accelerator's share) */
};
struct counts counts_now(void);
uint64_t client_between(struct counts from, struct counts to); /* crypto + protocol */
void samples_start(void);          /* the first sample now, then one per 100 ms of lab clock */
void samples_due(uint64_t now_ns); /* the samples due by now */
/* A fixed-rate run: sleeps until message seq is due (start_ns + seq x period), sampling on
 * the way; ends the run naming the rate achieved once a message is 2 s late. */
void keep_schedule(uint32_t seq, uint64_t start_ns);
uint64_t get_be64(const uint8_t *in); /* big-endian, as agents/wire.py's header */
struct sent_message {
    uint32_t seq, payload_bytes, wire_bytes, packet_bytes;
    uint64_t created, sealed, published; /* the lab's clock */
    uint64_t seal;                        /* the scheme's seal, client instructions */
    struct counts before, after;          /* around the whole message */
};
/* A message begun: its counts before and its creation time on the lab's clock, the plaintext
 * stamped with seq and that time (agents/wire.py's header). */
void message_start(struct sent_message *m, uint32_t seq, uint32_t size, uint8_t *plaintext);
/* The plaintext sealed by the payload scheme into out (ends the run when it cannot be): its
 * length; the seal's client instructions into m->seal. */
struct direction;
size_t message_seal(struct sent_message *m, struct direction *e2r, const uint8_t *plaintext,
                    uint8_t *out);
void record_message(const struct sent_message *m);
/* The key exchange's event and its memory's counters (key_exchange_stack_high_water_bytes,
 * key_exchange_heap_peak_bytes: the caller painted the stack and marked the heap before it);
 * the stack high-water mark it read before writing anything. */
size_t record_key_exchange(uint64_t t_start, uint64_t t_end, size_t bytes_out, size_t bytes_in,
                           struct counts before, struct counts after);
/* After the last message: the final sample, the heap peak, messages_sent, publish_end. */
void emitter_end(uint32_t sent);

/* -- the roles' MQTT (main.c) ---------------------------------------------------------------- */
#include "../../agents/native/mqtt.h"
void send_bytes(const uint8_t *bytes, size_t len, const char *what);
struct mqtt_packet read_packet(uint8_t *buffer, size_t cap);
void counter(const char *name, uint64_t value);
/* The connection up to CONNACK with its records (SETUP .. END), and its close. */
void session_open(void);
void session_close(void);
void role_publish(void);
void role_tcp(void); /* frames.c */

/* -- memory and randomness (heap.c; the counting allocator: ../firmware/counted_heap.c) ------ */
#include "../firmware/counted_heap.h"
void stack_paint(void);             /* fill the free stack with a pattern (bookkeeping) */
size_t stack_high_water_bytes(void); /* the deepest stack use since stack_paint */
int device_seed(unsigned char *out, unsigned int len); /* the TRNG stand-in (bookkeeping) */

/* -- TLS (tls_mbedtls.c, tls_wolfssl.c, tls_none.c) ---------------------------------------- */
const char *tls_stack(void);         /* "mbedtls", "wolfssl" or "none" */
const char *tls_stack_version(void);
/* Prepares the stack (context, CA, credentials): the setup a device does once. 0 or -1. */
int tls_setup(char *why, size_t cap);
int tls_handshake(char *why, size_t cap);
int tls_write(const uint8_t *data, size_t len); /* len or -1 */
int tls_read(uint8_t *data, size_t cap);        /* > 0, or -1 (closed or an error) */
/* What was negotiated, as the stack says: TLS version ("1.2") and IANA suite id. */
void tls_negotiated(char *version, size_t cap, uint16_t *suite);
void tls_close(void);

#endif
