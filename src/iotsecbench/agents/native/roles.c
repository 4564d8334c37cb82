/* The two roles of agents/emitter.py and agents/receiver.py: publish on an absolute schedule
 * (or as fast as the broker takes it), and receive, check and record every message. */
#define _GNU_SOURCE
#include "agent.h"
#include "filler.h"
#include "records.h"
#include "scheme.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
            take_other(&p);
        }
        packet_done(&p);
        timeout_ms = 0;
    }
}

void fault_at(long seq)
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

/* -- the application message (agents/wire.py), both transports' emitters ---------------------- */

long planned_messages(void)
{
    if (cfg.saturating)
        return -1; /* as many as fit in duration_s */
    long planned = lround(cfg.duration_s * cfg.rate_hz);
    return planned > 0 ? planned : 1;
}

void message_stamp(uint8_t *plaintext, long seq, int64_t t_created)
{
    for (int i = 0; i < 8; i++) {
        plaintext[i] = (uint8_t)((uint64_t)seq >> (56 - 8 * i));
        plaintext[8 + i] = (uint8_t)((uint64_t)t_created >> (56 - 8 * i));
    }
}

void message_read(const uint8_t *plaintext, uint64_t *seq, uint64_t *t_created)
{
    *seq = *t_created = 0;
    for (int i = 0; i < 8; i++) {
        *seq = *seq << 8 | plaintext[i];
        *t_created = *t_created << 8 | plaintext[8 + i];
    }
}

void record_sent(long seq, size_t wire_bytes, int64_t t_created, int64_t t_sealed,
                 int64_t t_published, int64_t seal_cpu)
{
    record("message",
           "\"seq\":%ld,\"payload_bytes\":%ld,\"wire_bytes\":%zu,\"t_created_ns\":%" PRId64
           ",\"t_sealed_ns\":%" PRId64 ",\"t_published_ns\":%" PRId64 ",\"seal_cpu_ns\":%" PRId64,
           seq, cfg.payload_bytes, wire_bytes, t_created, t_sealed, t_published, seal_cpu);
}

void emit(void)
{
    connect_broker();
    struct direction *e2r = cfg.scheme ? emitter_key_exchange() : NULL;
    long planned = planned_messages();
    size_t plaintext_len = (size_t)cfg.payload_bytes;
    size_t packet_cap = plaintext_len + SCHEME_MAX_OVERHEAD + 512;
    uint8_t *plaintext = malloc(plaintext_len), *packet = malloc(packet_cap);
    uint8_t *sealed = cfg.scheme ? malloc(plaintext_len + SCHEME_MAX_OVERHEAD) : plaintext;
    if (plaintext == NULL || packet == NULL || sealed == NULL)
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
        message_stamp(plaintext, seq, t_created);
        size_t wire_bytes = e2r ? scheme_seal(e2r, plaintext, plaintext_len, sealed)
                                : plaintext_len;
        if (wire_bytes == 0)
            die("sealing message %ld failed", seq);
        int64_t seal_cpu = thread_cpu_ns() - cpu0, t_sealed = now_ns();
        uint16_t id = cfg.qos ? next_packet_id() : 0;
        size_t n = topic_publish(packet, packet_cap, "data", sealed, wire_bytes, cfg.qos, id,
                                 false);
        if (n == 0)
            die("topic too long for MQTT");
        if (cfg.qos)
            await_ack(id);
        send_all(packet, n);
        record_sent(seq, wire_bytes, t_created, t_sealed, now_ns(), seal_cpu);
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
    send_all(packet, topic_publish(packet, packet_cap, "ctl/end", (uint8_t *)end, (size_t)len, 1,
                                   id, false));
    int64_t end_deadline = now_ns() + llround(cfg.connect_timeout_s * 1e9);
    while (awaited(id) && now_ns() < end_deadline)
        take_acks(100);
    counter("messages_sent", sent);
    if (sealed != plaintext)
        free(sealed);
    free(plaintext);
    free(packet);
}

/* -- the receiver ----------------------------------------------------------------------------- */

static uint8_t *delivered; /* one byte per sequence number seen */
static size_t delivered_cap;
static long counts[6]; /* as COUNTERS in agents/receiver.py */
enum { RECEIVED, DELIVERED, DUPLICATES, AUTH_FAILURES, MALFORMED, REPLAYS };
static const char *const NAMES[6] = {"messages_received", "messages_delivered", "duplicates",
                                     "auth_failures", "malformed", "replays_rejected"};

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

static struct direction *e2r; /* the session's keys, once the exchange is done */
static uint8_t *opened;        /* the plaintext of the message being opened */
static size_t opened_cap;

static void reject(int counter_index, const char *reason, int64_t t_arrived, size_t bytes)
{
    counts[counter_index]++;
    event("rejected", "\"reason\":\"%s\",\"t_arrived_ns\":%" PRId64 ",\"bytes\":%zu", reason,
          t_arrived, bytes);
}

static void on_data(const struct mqtt_publish_in *m, int64_t t_arrived)
{
    counts[RECEIVED]++;
    int64_t cpu0 = thread_cpu_ns();
    const uint8_t *plaintext = m->payload;
    size_t plaintext_len = m->payload_len;
    if (cfg.scheme) {
        if (e2r == NULL) {
            reject(MALFORMED, "no session key yet", t_arrived, m->payload_len);
            return;
        }
        if (opened_cap < m->payload_len) {
            free(opened);
            opened_cap = m->payload_len;
            if ((opened = malloc(opened_cap)) == NULL)
                die("out of memory");
        }
        int refused = -1;
        switch (scheme_open(e2r, m->payload, m->payload_len, opened, &plaintext_len)) {
        case OPEN_OK:
            plaintext = opened;
            break;
        case OPEN_AUTH:
            refused = AUTH_FAILURES;
            break;
        case OPEN_MALFORMED:
            refused = MALFORMED;
            break;
        default: /* a sequence number seen or too old: a QoS 1 redelivery, or an attack */
            refused = m->dup ? DUPLICATES : REPLAYS;
        }
        if (refused >= 0) {
            reject(refused, NAMES[refused], t_arrived, m->payload_len);
            return;
        }
    }
    if (plaintext_len < 16) {
        reject(MALFORMED, "malformed", t_arrived, m->payload_len);
        return;
    }
    uint64_t seq, created;
    message_read(plaintext, &seq, &created);
    int64_t open_cpu = thread_cpu_ns() - cpu0, t_delivered = now_ns();
    if (mark_delivered(seq)) {
        /* Schemes without replay protection pass repeats through; the application still
         * must not deliver a message twice. */
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

void receive_messages(void)
{
    connect_broker();
    char data[300], end[300], key[300];
    snprintf(data, sizeof data, "%s/data", cfg.topic_prefix);
    snprintf(end, sizeof end, "%s/ctl/end", cfg.topic_prefix);
    snprintf(key, sizeof key, "%s/kx/emitter", cfg.topic_prefix);
    const char *topics[3] = {data, end, key};
    int qos[3] = {cfg.qos, 1, 1}, granted[3];
    size_t n_topics = cfg.scheme ? 3 : 2;
    uint8_t packet[1024];
    uint16_t id = next_packet_id();
    send_all(packet, mqtt_subscribe(packet, sizeof packet, id, topics, qos, n_topics));
    struct mqtt_packet p;
    if (!next_packet(&p, (int)(cfg.connect_timeout_s * 1000)))
        die("no SUBACK from the broker");
    uint16_t acked;
    size_t n_granted;
    const char *why = NULL;
    if (p.type != MQTT_SUBACK ||
        mqtt_parse_suback(&p, &acked, granted, 3, &n_granted, &why) != MQTT_OK)
        die("malformed packet from the broker: %s", why ? why : "expected SUBACK");
    packet_done(&p);
    bool refused = acked != id || n_granted != n_topics;
    for (size_t i = 0; i < n_granted; i++)
        refused |= granted[i] == 0x80;
    if (refused)
        die("subscribe failed: the broker refused a topic");
    if (cfg.scheme)
        receiver_key_exchange_start();
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
            } else if (cfg.scheme && topic_is(&m, "kx/emitter")) {
                struct direction *keys = receiver_key_exchange(&m);
                e2r = keys ? keys : e2r;
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
            take_other(&p);
        }
        packet_done(&p);
    }
    if (cfg.scheme)
        receiver_key_exchange_end();
    for (int i = 0; i < 6; i++)
        counter(NAMES[i], counts[i]);
}

/* -- connections only (bench handshake --stack) ------------------------------------------- */

/* Thread CPU time of one trace-marker write (ns, the median of five batches of n / 5): what
 * each marker adds to a traced connection, which bench handshake --trace subtracts. The
 * caller has tracing on, so a write costs what it costs during a traced connection. */
static long long marker_cost_ns(long n)
{
    enum { BATCHES = 5 };
    long per_batch = n / BATCHES > 0 ? n / BATCHES : 1;
    double costs[BATCHES];
    trace_marking = 1;
    for (int b = 0; b < BATCHES; b++) {
        int64_t start = thread_cpu_ns();
        for (long i = 0; i < per_batch; i++)
            trace_mark("iotsb calibration");
        costs[b] = (double)(thread_cpu_ns() - start) / (double)per_batch;
    }
    trace_marking = 0;
    for (int i = 1; i < BATCHES; i++) /* insertion sort of five */
        for (int j = i; j > 0 && costs[j] < costs[j - 1]; j--) {
            double swap = costs[j];
            costs[j] = costs[j - 1];
            costs[j - 1] = swap;
        }
    return llround(costs[BATCHES / 2]);
}

/* One whole connection — TCP, TLS, CONNECT -> CONNACK, DISCONNECT — per line on stdin, its
 * records flushed before "DONE" answers; so a benchmark interleaves a warm, long-lived client
 * with others, as it does the Python one. "go": a connection; "trace": one with the iotst
 * markers (agent config trace_marker); "calibrate N": answers "COST <ns per marker>". */
void connect_repeatedly(void)
{
    char line[64];
    printf("READY\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) != NULL) {
        long writes;
        if (sscanf(line, "calibrate %ld", &writes) == 1) {
            printf("COST %lld\n", trace_marker_fd >= 0 ? marker_cost_ns(writes) : -1LL);
            fflush(stdout);
            continue;
        }
        trace_marking = strncmp(line, "trace", 5) == 0;
        connect_broker();
        trace_marking = 0;
        disconnect_broker();
        records_flush();
        printf("DONE\n");
        fflush(stdout);
    }
}
