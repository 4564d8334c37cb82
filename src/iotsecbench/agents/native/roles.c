/* The two roles of agents/emitter.py and agents/receiver.py: publish on an absolute schedule
 * (or as fast as the broker takes it), and receive, check and record every message. */
#define _GNU_SOURCE
#include "agent.h"
#include "filler.h"
#include "records.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t topic_publish(uint8_t *out, size_t cap, const char *suffix, const uint8_t *payload,
                            size_t len, int qos, uint16_t id)
{
    char topic[300];
    snprintf(topic, sizeof topic, "%s/%s", cfg.topic_prefix, suffix);
    return mqtt_publish(out, cap, topic, payload, len, qos, id, false);
}

static uint16_t awaiting[MAX_INFLIGHT + 1]; /* QoS 1 packet ids not yet acknowledged; 0 = free */
static long unacknowledged;

static void await_ack(uint16_t id)
{
    for (size_t i = 0; i <= MAX_INFLIGHT; i++)
        if (awaiting[i] == 0) {
            awaiting[i] = id;
            unacknowledged++;
            return;
        }
}

static bool awaited(uint16_t id)
{
    for (size_t i = 0; i <= MAX_INFLIGHT; i++)
        if (awaiting[i] == id)
            return true;
    return false;
}

static void acknowledge(uint16_t id)
{
    for (size_t i = 0; i <= MAX_INFLIGHT; i++)
        if (id != 0 && awaiting[i] == id) {
            awaiting[i] = 0;
            unacknowledged--;
        }
}

static void take_acks(int timeout_ms)
{
    struct mqtt_packet p;
    while (next_packet(&p, timeout_ms)) {
        const char *why = NULL;
        uint16_t id;
        if (p.type == MQTT_PUBACK) {
            if (mqtt_parse_puback(&p, &id, &why) != MQTT_OK)
                die("malformed packet from the broker: %s", why);
            acknowledge(id);
        } else {
            take_pingresp(&p);
        }
        packet_done(&p);
        timeout_ms = 0;
    }
}

static void fault_at(long seq)
{
    if (cfg.fault == NULL)
        return;
    long at;
    if (sscanf(cfg.fault, "crash-after=%ld", &at) == 1 && at == seq) {
        records_flush();
        _exit(17);
    }
    if (sscanf(cfg.fault, "hang-after=%ld", &at) == 1 && at == seq) {
        records_flush();
        raise(SIGSTOP);
    }
}

void emit(void)
{
    connect_broker();
    long planned = cfg.saturating ? -1 : lround(cfg.duration_s * cfg.rate_hz);
    if (planned == 0)
        planned = 1;
    size_t plaintext_len = (size_t)cfg.payload_bytes;
    uint8_t *plaintext = malloc(plaintext_len), *packet = malloc(plaintext_len + 512);
    if (plaintext == NULL || packet == NULL)
        die("out of memory");
    iotsb_filler(cfg.seed, plaintext + 16, plaintext_len - 16);
    int64_t period = llround(1e9 / cfg.rate_hz), start = now_ns();
    int64_t stop = start + llround(cfg.duration_s * 1e9);
    event("publish_start", "\"messages\":%ld", planned);
    long sent = 0;
    for (long seq = 0; planned < 0 ? now_ns() < stop : seq < planned; seq++) {
        fault_at(seq);
        if (!cfg.saturating) {
            int64_t due = start + seq * period;
            while (now_ns() < due)
                take_acks((int)((due - now_ns() + 999999) / 1000000));
        }
        while (cfg.qos && unacknowledged >= MAX_INFLIGHT)
            take_acks((int)(cfg.connect_timeout_s * 1000));
        keep_alive();
        int64_t t_created = now_ns(), cpu0 = thread_cpu_ns();
        for (int i = 0; i < 8; i++) {
            plaintext[i] = (uint8_t)((uint64_t)seq >> (56 - 8 * i));
            plaintext[8 + i] = (uint8_t)((uint64_t)t_created >> (56 - 8 * i));
        }
        int64_t seal_cpu = thread_cpu_ns() - cpu0, t_sealed = now_ns();
        uint16_t id = cfg.qos ? next_packet_id() : 0;
        size_t n = topic_publish(packet, plaintext_len + 512, "data", plaintext, plaintext_len,
                                 cfg.qos, id);
        if (n == 0)
            die("topic too long for MQTT");
        if (cfg.qos)
            await_ack(id);
        send_all(packet, n);
        int64_t t_published = now_ns();
        record("message",
               "\"seq\":%ld,\"payload_bytes\":%ld,\"wire_bytes\":%zu,\"t_created_ns\":%" PRId64
               ",\"t_sealed_ns\":%" PRId64 ",\"t_published_ns\":%" PRId64 ",\"seal_cpu_ns\":%" PRId64,
               seq, cfg.payload_bytes, plaintext_len, t_created, t_sealed, t_published, seal_cpu);
        sent++;
        if (cfg.saturating)
            take_acks(0);
    }
    int64_t drain_end = now_ns() + llround((cfg.drain_s > 5 ? cfg.drain_s : 5) * 1e9);
    while (unacknowledged > 0 && now_ns() < drain_end)
        take_acks((int)((drain_end - now_ns()) / 1000000) + 1);
    /* As agents/emitter.py; the achieved rate is the runner's (runs.achieved_rate_hz). */
    event("publish_end", "\"sent\":%ld,\"unacknowledged\":%ld", sent, unacknowledged);
    char end[64];
    int len = snprintf(end, sizeof end, "{\"sent\": %ld}", sent);
    memset(awaiting, 0, sizeof awaiting); /* what is still unacknowledged is counted above */
    unacknowledged = 0;
    uint16_t id = next_packet_id();
    await_ack(id);
    send_all(packet, topic_publish(packet, plaintext_len + 512, "ctl/end", (uint8_t *)end,
                                   (size_t)len, 1, id));
    int64_t end_deadline = now_ns() + llround(cfg.connect_timeout_s * 1e9);
    while (awaited(id) && now_ns() < end_deadline)
        take_acks(100);
    counter("messages_sent", sent);
    free(plaintext);
    free(packet);
}

/* -- the receiver ----------------------------------------------------------------------------- */

static uint8_t *delivered; /* one byte per sequence number seen */
static size_t delivered_cap;
static long counts[6]; /* as COUNTERS in agents/receiver.py */
enum { RECEIVED, DELIVERED, DUPLICATES, AUTH_FAILURES, MALFORMED, REPLAYS };

static bool mark_delivered(uint64_t seq)
{
    if (seq >= delivered_cap) {
        size_t cap = delivered_cap ? delivered_cap : 4096;
        while (cap <= seq)
            cap *= 2;
        if (cap > (1u << 30))
            return true; /* an absurd sequence number: treat as seen, never deliver it */
        uint8_t *grown = realloc(delivered, cap);
        if (grown == NULL)
            die("out of memory");
        memset(grown + delivered_cap, 0, cap - delivered_cap);
        delivered = grown;
        delivered_cap = cap;
    }
    bool seen = delivered[seq];
    delivered[seq] = 1;
    return seen;
}

static void on_data(const struct mqtt_publish_in *m, int64_t t_arrived)
{
    counts[RECEIVED]++;
    int64_t cpu0 = thread_cpu_ns();
    if (m->payload_len < 16) {
        counts[MALFORMED]++;
        event("rejected", "\"reason\":\"malformed\",\"t_arrived_ns\":%" PRId64 ",\"bytes\":%zu",
              t_arrived, m->payload_len);
        return;
    }
    uint64_t seq = 0, created = 0;
    for (int i = 0; i < 8; i++) {
        seq = seq << 8 | m->payload[i];
        created = created << 8 | m->payload[8 + i];
    }
    int64_t open_cpu = thread_cpu_ns() - cpu0, t_delivered = now_ns();
    if (mark_delivered(seq)) {
        counts[DUPLICATES]++;
        return;
    }
    counts[DELIVERED]++;
    record("message",
           "\"seq\":%" PRIu64 ",\"wire_bytes\":%zu,\"t_created_ns\":%" PRIu64
           ",\"t_arrived_ns\":%" PRId64 ",\"t_delivered_ns\":%" PRId64
           ",\"open_cpu_ns\":%" PRId64 ",\"dup_flag\":%s",
           seq, m->payload_len, created, t_arrived, t_delivered, open_cpu,
           m->dup ? "true" : "false");
}

static bool topic_is(const struct mqtt_publish_in *m, const char *suffix)
{
    size_t prefix = strlen(cfg.topic_prefix), n = strlen(suffix);
    return m->topic_len == prefix + 1 + n && memcmp(m->topic, cfg.topic_prefix, prefix) == 0 &&
           m->topic[prefix] == '/' && memcmp(m->topic + prefix + 1, suffix, n) == 0;
}

void receive_messages(void)
{
    connect_broker();
    char data[300], end[300];
    snprintf(data, sizeof data, "%s/data", cfg.topic_prefix);
    snprintf(end, sizeof end, "%s/ctl/end", cfg.topic_prefix);
    const char *topics[2] = {data, end};
    int qos[2] = {cfg.qos, 1}, granted[2];
    uint8_t packet[1024];
    uint16_t id = next_packet_id();
    send_all(packet, mqtt_subscribe(packet, sizeof packet, id, topics, qos, 2));
    struct mqtt_packet p;
    if (!next_packet(&p, (int)(cfg.connect_timeout_s * 1000)))
        die("no SUBACK from the broker");
    uint16_t acked;
    size_t n_granted;
    const char *why = NULL;
    if (p.type != MQTT_SUBACK ||
        mqtt_parse_suback(&p, &acked, granted, 2, &n_granted, &why) != MQTT_OK)
        die("malformed packet from the broker: %s", why ? why : "expected SUBACK");
    packet_done(&p);
    if (acked != id || n_granted != 2 || granted[0] == 0x80 || granted[1] == 0x80)
        die("subscribe failed: the broker refused a topic");
    printf("READY\n");
    fflush(stdout);
    long expected = -1;
    int64_t drain_end = 0;
    for (;;) {
        if (expected >= 0 && (counts[DELIVERED] >= expected || now_ns() >= drain_end))
            break;
        keep_alive();
        if (!next_packet(&p, 200))
            continue;
        int64_t t_arrived = now_ns();
        struct mqtt_publish_in m;
        if (p.type == MQTT_PUBLISH) {
            if (mqtt_parse_publish(&p, &m, &why) != MQTT_OK)
                die("malformed packet from the broker: %s", why);
            if (topic_is(&m, "data")) {
                on_data(&m, t_arrived);
            } else if (topic_is(&m, "ctl/end")) {
                char body[64] = {0};
                memcpy(body, m.payload, m.payload_len < 63 ? m.payload_len : 63);
                const char *at = strstr(body, "\"sent\"");
                if (at == NULL || sscanf(at, "\"sent\" : %ld", &expected) != 1) {
                    event("bad_end_message", "");
                    expected = 0;
                }
                event("end_received", "\"expected\":%ld", expected);
                drain_end = now_ns() + llround(cfg.drain_s * 1e9);
            }
            if (m.qos == 1) {
                uint8_t ack[4];
                send_all(ack, mqtt_puback(ack, sizeof ack, m.packet_id));
            }
        } else {
            take_pingresp(&p);
        }
        packet_done(&p);
    }
    static const char *names[6] = {"messages_received", "messages_delivered", "duplicates",
                                   "auth_failures", "malformed", "replays_rejected"};
    for (int i = 0; i < 6; i++)
        counter(names[i], counts[i]);
}

/* -- connections only (bench handshake --stack) ------------------------------------------- */

/* One whole connection — TCP, TLS, CONNECT -> CONNACK, DISCONNECT — per line on stdin, its
 * records flushed before "DONE" answers; so a benchmark interleaves a warm, long-lived client
 * with others, as it does the Python one. */
void connect_repeatedly(void)
{
    char line[64];
    printf("READY\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) != NULL) {
        connect_broker();
        disconnect_broker();
        records_flush();
        printf("DONE\n");
        fflush(stdout);
    }
}
