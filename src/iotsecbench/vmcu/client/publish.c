/* Role "publish": the device as the lab's emitter (docs/device-client.md, "The whole run"). The
 * connection as the "connect" role makes it (main.c: SETUP .. END with its records), then the
 * messages of agents/emitter.py, byte for byte: the plaintext is seq (8 bytes, big-endian),
 * t_created_ns (8 bytes, big-endian, the lab's clock: clock.c) and agents/wire.py's filler
 * (agents/native/filler.c, compiled unchanged), in a PUBLISH on <prefix>/data at the run's QoS,
 * on an absolute schedule (start + seq x period) — the firmware sleeps until each message is
 * due (clock.c). At the end, {"sent": N} on <prefix>/ctl/end at QoS 1, as the Python emitter.
 *
 * With a payload scheme (the mbedtls-scheme build: the native agent's scheme.c on the
 * library's primitives) the emitter's side of the key exchange comes first, over MQTT as
 * agents/emitter.py runs it — subscribe to kx/receiver and kx/ready, answer the receiver's
 * (retained) hello on kx/emitter, verify its confirmation — between the marks KEY_EXCHANGE and
 * KEY_EXCHANGE_END, recorded as a key_exchange event; then every plaintext is sealed
 * (docs/wire-format.md) before its PUBLISH.
 *
 * Records (one per message, one sample per 100 ms of the lab's clock), in the harness bucket:
 *
 *   message   seq, t_created_ns, t_sealed_ns, t_published_ns (the PUBLISH written), payload
 *             and wire bytes, and the instructions the message cost from its creation to its
 *             PUBLISH written (at QoS 1: to its PUBACK read): crypto (inside the wrapped primitives), protocol (the rest of
 *             the client bucket), wait and io
 *   sample    t_ns and the cumulative counts since the ledger started: crypto, protocol,
 *             wait, io instructions, sleep_ns (WFI, on the lab's clock), the heap now and its
 *             peak since the handshake ended, and crypto per primitive family (families)
 *
 * A schedule the emulation cannot keep ends the run (device_fail) once a message is more than
 * LATE_LIMIT_NS late, with the rate achieved until then: the firmware never publishes slower
 * in silence. */
#include "device.h"

#include "../../agents/native/filler.h"
#include "../../agents/native/scheme.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_PERIOD_NS 100000000u /* 10 Hz, as the agents' sampler */
#define LATE_LIMIT_NS 2000000000u   /* behind schedule by this much: the rate cannot be kept */
#define HEADER_BYTES 16
#define PAYLOAD_MAX (64u * 1024u)
#define PACKET_OVERHEAD (5u + 2u + TOPIC_MAX + 2u) /* fixed header, topic, packet id */
#define TOPIC_MAX 96

struct counts {
    uint64_t crypto, protocol, wait, io;
    uint64_t families[FAMILIES]; /* crypto per primitive family (an accelerator's share) */
};

static struct counts counts_now(void)
{
    struct ledger_totals totals;
    ledger_totals(&totals);
    struct counts c = {0, 0, totals.buckets[BUCKET_WAIT], totals.buckets[BUCKET_IO], {0}};
    for (int f = 0; f < FAMILIES; f++) {
        c.crypto += totals.families[f];
        c.families[f] = totals.families[f];
    }
    c.protocol = totals.buckets[BUCKET_CLIENT] - c.crypto;
    return c;
}

static uint64_t slept_ns, next_sample_ns;

static void sample(uint64_t t_ns)
{
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    struct counts c = counts_now();
    struct vm_heap heap = vm_heap();
    /* crypto per primitive family, cumulative: what an accelerator prices apart (energy.model) */
    char families[FAMILIES * 40] = "";
    for (int f = 0, at = 0; f < FAMILIES; f++)
        at += snprintf(families + at, sizeof families - (size_t)at, "%s\"%s\":%llu", f ? "," : "",
                       ledger_family_name((enum family)f), (unsigned long long)c.families[f]);
    record("sample",
           "\"t_ns\":%llu,\"crypto\":%llu,\"protocol\":%llu,\"wait\":%llu,\"io\":%llu,"
           "\"sleep_ns\":%llu,\"heap_bytes\":%lu,\"heap_peak_bytes\":%lu,\"families\":{%s}",
           (unsigned long long)t_ns, (unsigned long long)c.crypto,
           (unsigned long long)c.protocol, (unsigned long long)c.wait,
           (unsigned long long)c.io, (unsigned long long)slept_ns, (unsigned long)heap.current,
           (unsigned long)heap.peak, families);
    ledger_bucket(resume);
}

/* The samples due by now, then the next one's time. */
static void samples_due(uint64_t now)
{
    while (next_sample_ns <= now) {
        sample(now);
        next_sample_ns += SAMPLE_PERIOD_NS;
        if (next_sample_ns <= now) /* woken late: one sample now, never a burst */
            next_sample_ns = now + SAMPLE_PERIOD_NS;
    }
}

/* Sleeps until due_ns, waking for every sample on the way. */
static void wait_until(uint64_t due_ns)
{
    for (uint64_t now = lab_now_ns(); now < due_ns; now = lab_now_ns()) {
        uint64_t until = next_sample_ns < due_ns ? next_sample_ns : due_ns;
        if (until > now)
            slept_ns += sleep_until(until);
        samples_due(lab_now_ns());
    }
}

static void put_be64(uint8_t *out, uint64_t value)
{
    for (int i = 7; i >= 0; i--, value >>= 8)
        out[i] = (uint8_t)value;
}

static uint16_t next_id = 1;

/* PUBLISH of payload on topic; its packet id (0 at QoS 0). */
static uint16_t publish(uint8_t *packet, size_t cap, const char *topic, const uint8_t *payload,
                        size_t len, int qos, size_t *wire)
{
    uint16_t id = qos ? next_id : 0;
    if (qos && ++next_id == 0)
        next_id = 1;
    size_t n = mqtt_publish(packet, cap, topic, payload, len, qos, id, false);
    if (n == 0)
        device_fail("message too large for the firmware's buffer", topic);
    send_bytes(packet, n, "PUBLISH");
    *wire = n;
    return id;
}

/* At QoS 1 the PUBACK of packet id (stop and wait: one message in flight). */
static void acknowledged(uint16_t id)
{
    if (id != 0) {
        uint8_t ack[16];
        struct mqtt_packet p = read_packet(ack, sizeof ack);
        uint16_t acked = 0;
        const char *why = NULL;
        if (p.type != MQTT_PUBACK || mqtt_parse_puback(&p, &acked, &why) != MQTT_OK)
            device_fail("expected a PUBACK from the broker", why);
        if (acked != id)
            device_fail("PUBACK for another packet", NULL);
    }
}

/* The next packet, PUBACKs of incoming QoS 1 messages sent; a PUBLISH on one of the key
 * exchange's topics is copied into *got (its payload, at most KX_MAX_MESSAGE bytes). */
struct kx_message {
    bool hello, ready;
    uint8_t hello_bytes[KX_MAX_MESSAGE], ready_bytes[KX_MAX_MESSAGE];
    size_t hello_len, ready_len;
    uint64_t hello_ns;
};

/* The key exchange's buffers: on the heap while it runs (an ML-KEM-1024 message is 1.6 KB, and
 * these four would hold 8 KB of the device's stack), so its heap peak shows them. */
struct kx_buffers {
    struct kx_message got;
    uint8_t reply[KX_MAX_MESSAGE];
    uint8_t packet[2 * TOPIC_MAX + KX_MAX_MESSAGE + 16]; /* SUBSCRIBE, PUBLISH kx/emitter */
    uint8_t read[KX_MAX_MESSAGE + TOPIC_MAX + 16];       /* one incoming packet */
};

static void kx_pump(struct kx_message *got, const char *prefix, uint16_t *acked,
                    uint8_t *buffer, size_t cap)
{
    struct mqtt_packet p = read_packet(buffer, cap);
    const char *why = NULL;
    if (p.type == MQTT_PUBACK) {
        if (mqtt_parse_puback(&p, acked, &why) != MQTT_OK)
            device_fail("malformed PUBACK from the broker", why);
        return;
    }
    if (p.type == MQTT_SUBACK) {
        int granted[2];
        size_t count = 0;
        if (mqtt_parse_suback(&p, acked, granted, 2, &count, &why) != MQTT_OK)
            device_fail("malformed SUBACK from the broker", why);
        return;
    }
    struct mqtt_publish_in m;
    if (p.type != MQTT_PUBLISH || mqtt_parse_publish(&p, &m, &why) != MQTT_OK)
        device_fail("unexpected packet during the key exchange", why);
    if (m.qos == 1) {
        uint8_t ack[4];
        send_bytes(ack, mqtt_puback(ack, sizeof ack, m.packet_id), "PUBACK");
    }
    size_t n = strlen(prefix);
    bool ours = m.topic_len > n && memcmp(m.topic, prefix, n) == 0;
    const char *suffix = ours ? (const char *)m.topic + n : "";
    size_t suffix_len = ours ? m.topic_len - n : 0;
    bool hello = suffix_len == 12 && memcmp(suffix, "/kx/receiver", 12) == 0;
    bool ready = suffix_len == 9 && memcmp(suffix, "/kx/ready", 9) == 0;
    if ((!hello && !ready) || m.payload_len > KX_MAX_MESSAGE)
        device_fail("unexpected message during the key exchange", NULL);
    if (hello && !got->hello) {
        got->hello = true;
        got->hello_ns = lab_now_ns();
        memcpy(got->hello_bytes, m.payload, got->hello_len = m.payload_len);
    } else if (ready && !got->ready) {
        if (!got->hello)
            device_fail("key exchange out of order", "got kx/ready, expected kx/receiver");
        got->ready = true;
        memcpy(got->ready_bytes, m.payload, got->ready_len = m.payload_len);
    }
}

/* The emitter's side of the key exchange (module comment): the direction's keys. Its stack
 * and heap peaks are counters of their own (a post-quantum exchange's memory is a question of
 * its own on a device); the stack is painted again for it (bookkeeping). */
static struct direction *key_exchange(void)
{
    char hello_topic[TOPIC_MAX], ready_topic[TOPIC_MAX], reply_topic[TOPIC_MAX];
    snprintf(hello_topic, sizeof hello_topic, "%s/kx/receiver", config.topic_prefix);
    snprintf(ready_topic, sizeof ready_topic, "%s/kx/ready", config.topic_prefix);
    snprintf(reply_topic, sizeof reply_topic, "%s/kx/emitter", config.topic_prefix);
    const char *topics[2] = {hello_topic, ready_topic};
    int qos[2] = {1, 1};
    uint16_t acked = 0, id = next_id++;

    ledger_mark("KEY_EXCHANGE");
    vm_heap_mark();
    struct kx_buffers *b = vm_calloc(1, sizeof *b);
    if (b == NULL)
        device_fail("key exchange", "no memory for its buffers");
    struct kx_message *got = &b->got;
    uint8_t *packet = b->packet;
    size_t cap = sizeof b->packet;
#define PUMP() kx_pump(got, config.topic_prefix, &acked, b->read, sizeof b->read)
    send_bytes(packet, mqtt_subscribe(packet, cap, id, topics, qos, 2), "SUBSCRIBE");
    while (acked != id)
        PUMP();
    while (!got->hello)
        PUMP();
    struct counts before = counts_now();
    const char *why = "?";
    /* a psk-* scheme's key came with the configuration (kx_emitter_answer refuses a short
     * or missing one, as the host agents do) */
    size_t reply_len = kx_emitter_answer(config.psk_len ? config.psk : NULL, config.psk_len,
                                         got->hello_bytes, got->hello_len, b->reply, &why);
    if (reply_len == 0)
        device_fail("key exchange failed", why);
    id = next_id++;
    size_t n = mqtt_publish(packet, cap, reply_topic, b->reply, reply_len, 1, id, false);
    send_bytes(packet, n, "PUBLISH kx/emitter");
    while (acked != id || !got->ready)
        PUMP();
#undef PUMP
    struct direction *e2r = NULL;
    if (!kx_emitter_confirm(got->ready_bytes, got->ready_len, &e2r, &why))
        device_fail("key exchange failed", why);
    uint64_t end_ns = lab_now_ns();
    struct counts after = counts_now();
    ledger_mark("KEY_EXCHANGE_END");
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    size_t stack_bytes = stack_high_water_bytes();
    struct vm_heap heap = vm_heap();
    record("event",
           "\"name\":\"key_exchange\",\"t_start_ns\":%llu,\"t_end_ns\":%llu,\"bytes_out\":%lu,"
           "\"bytes_in\":%lu,\"crypto\":%llu,\"protocol\":%llu,\"wait\":%llu,\"io\":%llu,"
           "\"mlkem\":%llu",
           (unsigned long long)got->hello_ns, (unsigned long long)end_ns, (unsigned long)reply_len,
           (unsigned long)(got->hello_len + got->ready_len),
           (unsigned long long)(after.crypto - before.crypto),
           (unsigned long long)(after.protocol - before.protocol),
           (unsigned long long)(after.wait - before.wait),
           (unsigned long long)(after.io - before.io),
           (unsigned long long)(after.families[FAMILY_MLKEM] - before.families[FAMILY_MLKEM]));
    if (!ledger_overflowed()) /* else records were written inside it: no figure */
        counter("key_exchange_stack_high_water_bytes", stack_bytes);
    counter("key_exchange_heap_peak_bytes", heap.peak);
    ledger_bucket(resume);
    vm_free(b);
    return e2r;
}

void role_publish(void)
{
    char topic[TOPIC_MAX], end_topic[TOPIC_MAX];
    uint32_t size = config.payload_bytes;
    if (size < HEADER_BYTES || size > PAYLOAD_MAX || config.period_ns == 0 || config.qos > 1)
        device_fail("publish: payload 16 B .. 64 KiB, a rate and QoS 0 or 1, please", NULL);
    snprintf(topic, sizeof topic, "%s/data", config.topic_prefix);
    snprintf(end_topic, sizeof end_topic, "%s/ctl/end", config.topic_prefix);

    next_sample_ns = lab_now_ns();
    samples_due(next_sample_ns);
    bool sealing = scheme_select(config.scheme);
    session_open();
    if (sealing) { /* the key exchange's own stack peak (session_open's is the handshake's) */
        enum bucket resume = ledger_bucket(BUCKET_HARNESS);
        stack_paint();
        ledger_bucket(resume);
    }
    struct direction *e2r = sealing ? key_exchange() : NULL;
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    ledger_flush(); /* the handshake's segments; from here one record per message */
    ledger_keep_segments(false);
    vm_heap_mark();
    /* the message's buffers are the application's: on the heap, in the publishing peak */
    size_t packet_cap = size + SCHEME_MAX_OVERHEAD + PACKET_OVERHEAD;
    uint8_t *plaintext = vm_calloc(1, size), *packet = vm_calloc(1, packet_cap);
    uint8_t *sealed = sealing ? vm_calloc(1, size + SCHEME_MAX_OVERHEAD) : NULL;
    if (plaintext == NULL || packet == NULL || (sealing && sealed == NULL))
        device_fail("publish: no memory for a message of this size", NULL);
    iotsb_filler(config.filler_seed, plaintext + HEADER_BYTES, size - HEADER_BYTES);
    record("event", "\"name\":\"publish_start\",\"messages\":%lu",
           (unsigned long)config.message_count);
    ledger_bucket(resume);

    uint64_t start_ns = lab_now_ns();
    uint32_t sent = 0;
    for (uint32_t seq = 0; seq < config.message_count; seq++) {
        uint64_t due = start_ns + seq * config.period_ns;
        wait_until(due);
        uint64_t late = lab_now_ns() - due;
        if (late > LATE_LIMIT_NS) {
            uint64_t span = lab_now_ns() - start_ns;
            char why[160];
            snprintf(why, sizeof why,
                     "achieved %lu.%03lu Hz of %lu.%03lu Hz asked (%lu messages in %lu ms)",
                     (unsigned long)(seq * 1000000000000ull / span / 1000),
                     (unsigned long)(seq * 1000000000000ull / span % 1000),
                     (unsigned long)(1000000000000ull / config.period_ns / 1000),
                     (unsigned long)(1000000000000ull / config.period_ns % 1000),
                     (unsigned long)seq, (unsigned long)(span / 1000000));
            device_fail("the emulation cannot keep the rate", why);
        }
        struct counts before = counts_now();
        uint64_t created = lab_now_ns();
        put_be64(plaintext, seq);
        put_be64(plaintext + 8, created);
        const uint8_t *payload = plaintext;
        size_t payload_len = size;
        uint64_t seal_instructions = 0; /* the client's, crypto and the framing */
        if (sealing) {
            struct counts seal_start = counts_now();
            payload = sealed;
            payload_len = scheme_seal(e2r, plaintext, size, sealed);
            if (payload_len == 0)
                device_fail("payload scheme", "sealing failed (out of sequence numbers?)");
            struct counts seal_end = counts_now();
            seal_instructions = seal_end.crypto + seal_end.protocol - seal_start.crypto -
                                seal_start.protocol;
        }
        uint64_t t_sealed = lab_now_ns();
        size_t wire;
        uint16_t id =
            publish(packet, packet_cap, topic, payload, payload_len, (int)config.qos, &wire);
        uint64_t published = lab_now_ns();
        acknowledged(id);
        struct counts after = counts_now();
        sent++;
        resume = ledger_bucket(BUCKET_HARNESS);
        record("message",
               "\"seq\":%lu,\"payload_bytes\":%lu,\"wire_bytes\":%lu,\"packet_bytes\":%lu,"
               "\"t_created_ns\":%llu,\"t_sealed_ns\":%llu,\"t_published_ns\":%llu,"
               "\"seal\":%llu,\"crypto\":%llu,\"protocol\":%llu,\"wait\":%llu,\"io\":%llu",
               (unsigned long)seq, (unsigned long)size, (unsigned long)payload_len,
               (unsigned long)wire, (unsigned long long)created, (unsigned long long)t_sealed,
               (unsigned long long)published,
               (unsigned long long)seal_instructions,
               (unsigned long long)(after.crypto - before.crypto),
               (unsigned long long)(after.protocol - before.protocol),
               (unsigned long long)(after.wait - before.wait),
               (unsigned long long)(after.io - before.io));
        ledger_bucket(resume);
        samples_due(lab_now_ns());
    }
    char end[40];
    int n = snprintf(end, sizeof end, "{\"sent\": %lu}", (unsigned long)sent);
    size_t wire;
    acknowledged(publish(packet, packet_cap, end_topic, (const uint8_t *)end, (size_t)n, 1, &wire));

    resume = ledger_bucket(BUCKET_HARNESS);
    samples_due(lab_now_ns());
    sample(lab_now_ns());
    struct vm_heap heap = vm_heap();
    counter("tls_heap_publishing_peak_bytes", heap.peak);
    counter("messages_sent", sent);
    record("event", "\"name\":\"publish_end\",\"sent\":%lu", (unsigned long)sent);
    ledger_keep_segments(true);
    ledger_bucket(resume);
    session_close();
}
