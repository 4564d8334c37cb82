/* The payload scheme's key exchange over MQTT, as agents/emitter.py (establish_keys) and
 * agents/receiver.py carry it: the receiver's hello retained on kx/receiver, the emitter's
 * answer on kx/emitter, the receiver's confirmation on kx/ready, all at QoS 1; each side
 * records the key_exchange phase (wall time over the span the Python agents time, thread CPU
 * of the cryptography, the stack's heap peak meanwhile). The protocol is scheme.c's. */
#define _GNU_SOURCE
#include "agent.h"
#include "heap.h"
#include "records.h"
#include "scheme.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static uint16_t publish_small(const char *suffix, const uint8_t *payload, size_t len, bool retain)
{
    uint8_t packet[KX_MAX_MESSAGE + 400];
    uint16_t id = next_packet_id();
    size_t n = topic_publish(packet, sizeof packet, suffix, payload, len, 1, id, retain);
    if (n == 0)
        die("topic too long for MQTT");
    send_all(packet, n);
    return id;
}

static void key_exchange_phase(int64_t t_start, int64_t cpu_ns, size_t bytes_out,
                               size_t bytes_in, const char *span, bool emitter)
{
    int64_t t_end = now_ns();
    char detail[400];
    snprintf(detail, sizeof detail,
             "\"agreement\":\"%s\",\"bytes_out\":%zu,\"bytes_in\":%zu,%s\"span\":\"%s\","
             "\"tls_heap_peak_bytes\":%zu",
             scheme_agreement(), bytes_out, bytes_in, emitter ? "\"messages\":3," : "", span,
             heap_use().peak);
    phase("key_exchange", t_start, t_end, cpu_ns, detail);
    heap_mark(); /* from here: what publishing needs */
}

/* -- the emitter ---------------------------------------------------------------------------- */

struct box { /* the last message on one key-exchange topic */
    const char *suffix;
    uint8_t bytes[KX_MAX_MESSAGE + 1]; /* one more: a longer message keeps a wrong length */
    size_t len;
    int64_t t_ns;
    bool full;
};

/* Takes one packet: a key-exchange message into its box, the acknowledgement *awaited
 * (SUBACK or PUBACK) clears it; false when none came within timeout_ms. */
static bool pump(struct box *boxes, size_t n_boxes, uint16_t *awaited, int timeout_ms)
{
    struct mqtt_packet p;
    if (!next_packet(&p, timeout_ms))
        return false;
    int64_t t_arrived = now_ns();
    const char *why = NULL;
    uint16_t id;
    int granted[2];
    size_t n_granted;
    struct mqtt_publish_in m;
    if (p.type == MQTT_PUBLISH && mqtt_parse_publish(&p, &m, &why) == MQTT_OK) {
        for (size_t i = 0; i < n_boxes; i++)
            if (topic_is(&m, boxes[i].suffix) && m.payload_len > 0) {
                boxes[i].len = m.payload_len < sizeof boxes[i].bytes ? m.payload_len
                                                                     : sizeof boxes[i].bytes;
                memcpy(boxes[i].bytes, m.payload, boxes[i].len);
                boxes[i].t_ns = t_arrived;
                boxes[i].full = true;
            }
        take_other(&p); /* its PUBACK */
    } else if (p.type == MQTT_PUBACK && mqtt_parse_puback(&p, &id, &why) == MQTT_OK) {
        if (id == *awaited)
            *awaited = 0;
    } else if (p.type == MQTT_SUBACK &&
               mqtt_parse_suback(&p, &id, granted, 2, &n_granted, &why) == MQTT_OK) {
        if (granted[0] == 0x80 || (n_granted > 1 && granted[1] == 0x80))
            die("subscribe failed: the broker refused a key-exchange topic");
        if (id == *awaited)
            *awaited = 0;
    } else {
        take_other(&p);
    }
    packet_done(&p);
    return true;
}

/* Pumps until done() holds; ends the agent with what it waited for after connect_timeout_s. */
#define AWAIT(condition, what)                                                                 \
    do {                                                                                       \
        int64_t deadline_ = now_ns() + llround(cfg.connect_timeout_s * 1e9);                  \
        while (!(condition)) {                                                                 \
            if (now_ns() >= deadline_)                                                         \
                die("no %s within %g s", what, cfg.connect_timeout_s);                         \
            pump(boxes, 2, &awaited, (int)((deadline_ - now_ns()) / 1000000) + 1);            \
        }                                                                                      \
    } while (0)

struct direction *emitter_key_exchange(void)
{
    struct box boxes[2] = {{.suffix = "kx/receiver"}, {.suffix = "kx/ready"}};
    char hello_topic[300], ready_topic[300];
    snprintf(hello_topic, sizeof hello_topic, "%s/kx/receiver", cfg.topic_prefix);
    snprintf(ready_topic, sizeof ready_topic, "%s/kx/ready", cfg.topic_prefix);
    const char *topics[2] = {hello_topic, ready_topic};
    int qos[2] = {1, 1};
    uint8_t packet[1024];
    uint16_t awaited = next_packet_id();
    send_all(packet, mqtt_subscribe(packet, sizeof packet, awaited, topics, qos, 2));
    AWAIT(awaited == 0, "SUBACK from the broker");
    AWAIT(boxes[0].full, "kx/receiver message");
    if (boxes[1].full)
        die("key exchange out of order: got kx/ready, expected kx/receiver");
    int64_t t_start = boxes[0].t_ns, cpu0 = thread_cpu_ns();
    heap_mark();
    uint8_t reply[KX_MAX_MESSAGE];
    const char *why = "?";
    size_t reply_len = kx_emitter_answer(cfg.psk, cfg.psk_len, boxes[0].bytes, boxes[0].len,
                                         reply, &why);
    if (reply_len == 0)
        die("key exchange failed: %s", why);
    int64_t cpu_ns = thread_cpu_ns() - cpu0;
    awaited = publish_small("kx/emitter", reply, reply_len, false);
    AWAIT(awaited == 0, "PUBACK of the key-exchange message");
    AWAIT(boxes[1].full, "kx/ready message");
    cpu0 = thread_cpu_ns();
    struct direction *e2r = NULL;
    if (!kx_emitter_confirm(boxes[1].bytes, boxes[1].len, &e2r, &why))
        die("key exchange failed: %s", why);
    cpu_ns += thread_cpu_ns() - cpu0;
    key_exchange_phase(t_start, cpu_ns, reply_len, boxes[0].len + boxes[1].len,
                       "receiver hello received -> key confirmation verified", true);
    return e2r;
}

/* The same exchange as frames on the tcp transport's one connection: H in, K out, R in. */
struct direction *emitter_key_exchange_frames(struct direction **r2e)
{
    uint8_t hello[KX_MAX_MESSAGE + 1], ready[KX_MAX_MESSAGE + 1], reply[KX_MAX_MESSAGE];
    int64_t t_start;
    size_t hello_len = expect_frame('H', "the receiver's key-exchange hello", hello,
                                    sizeof hello, &t_start);
    int64_t cpu0 = thread_cpu_ns();
    heap_mark();
    const char *why = "?";
    size_t reply_len = kx_emitter_answer(cfg.psk, cfg.psk_len, hello, hello_len, reply, &why);
    if (reply_len == 0)
        die("key exchange failed: %s", why);
    int64_t cpu_ns = thread_cpu_ns() - cpu0;
    send_frame('K', reply, reply_len);
    int64_t t_ready;
    size_t ready_len = expect_frame('R', "the receiver's key confirmation", ready, sizeof ready,
                                    &t_ready);
    cpu0 = thread_cpu_ns();
    struct direction *e2r = NULL;
    if (!kx_emitter_confirm(ready, ready_len, &e2r, &why))
        die("key exchange failed: %s", why);
    cpu_ns += thread_cpu_ns() - cpu0;
    key_exchange_phase(t_start, cpu_ns, reply_len, hello_len + ready_len,
                       "receiver hello received -> key confirmation verified", true);
    *r2e = kx_emitter_reverse();
    return e2r;
}

/* -- the receiver --------------------------------------------------------------------------- */

void receiver_key_exchange_start(void)
{
    scheme_log_keys(cfg.keylog != NULL);
    int64_t t_ns = now_ns();
    uint8_t hello[KX_MAX_MESSAGE];
    size_t len = kx_receiver_hello(cfg.psk, cfg.psk_len, hello);
    if (len == 0)
        die("key exchange failed: no hello (key generation, or a psk-* scheme without a "
            "pre-shared key of at least 16 bytes)");
    publish_small("kx/receiver", hello, len, true); /* retained: a later emitter finds it */
    event("kx_hello_published", "\"bytes\":%zu,\"keygen_at_ns\":%" PRId64, len, t_ns);
}

struct direction *receiver_key_exchange(const struct mqtt_publish_in *m)
{
    int64_t t_start = now_ns(), cpu0 = thread_cpu_ns();
    heap_mark();
    uint8_t ready[KX_MAX_MESSAGE];
    const char *why = "?";
    struct direction *e2r = NULL;
    size_t len = kx_receiver_answer(m->payload, m->payload_len, ready, &e2r, &why);
    if (len == 0) {
        char quoted[200];
        event("kx_rejected", "\"error\":%s", json_quote(quoted, sizeof quoted, why));
        return NULL;
    }
    int64_t cpu_ns = thread_cpu_ns() - cpu0;
    publish_small("kx/ready", ready, len, false);
    key_exchange_phase(t_start, cpu_ns, len, m->payload_len,
                       "emitter key received -> key confirmation published", false);
    /* the receiver logs the session's keys, as the Python receiver does */
    if (cfg.keylog != NULL && append_secret_lines(cfg.keylog, scheme_key_log()) != 0)
        die("--keylog: cannot append to %s: %s", cfg.keylog, strerror(errno));
    return e2r;
}

void receiver_key_exchange_end(void)
{
    publish_small("kx/receiver", NULL, 0, true); /* an external broker keeps nothing of ours */
}
