/* iotsb-agent: the emitter and receiver of agents/emitter.py and agents/receiver.py in C, on a
 * device TLS stack (mbedTLS or wolfSSL, chosen when it is built; none for the plain build).
 *
 *   iotsb-agent-<stack> --config FILE    (the runner's AgentConfig, JSON)
 *
 * The same contract with the runner as the Python agents (docs/design.md, measurement
 * contract): JSON-lines records of the same types on the same CLOCK_MONOTONIC, 10 Hz samples,
 * handshake phases tcp_connect / tls_handshake / mqtt_connect, "READY" on stdout when the
 * receiver has subscribed, exit 0 on success and 1 with an error record on failure. The
 * payload is the plaintext of docs/wire-format.md (scheme "none"): seq | t_created | filler.
 * What the Python agents log for the energy model (operations) and the negotiated TLS
 * parameters are derived from these records by the runner (agents/native/__init__.py), with
 * the same code as for OpenSSL. */
#define _GNU_SOURCE
#include "filler.h"
#include "heap.h"
#include "mqtt.h"
#include "records.h"
#include "sampler.h"
#include "tls.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <linux/tcp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define KEEP_ALIVE_S 60
#define MAX_INFLIGHT 20          /* QoS 1 messages awaiting PUBACK: paho's default */
#define MAX_PACKET (16u << 20)   /* larger packets from the broker are refused as malformed */
#define SERVER_NAME "localhost"  /* the name the lab's server certificate carries */

struct config {
    const char *role, *configuration, *host, *username, *password, *client_id, *topic_prefix, *output, *fault;
    int port, qos;
    long payload_bytes;
    double rate_hz, duration_s, connect_timeout_s, drain_s;
    uint64_t seed;
    bool tcp_nodelay, saturating, tls;
    struct tls_options tls_options;
    uint16_t suites[64], groups[4];
};

struct connection {
    int fd;
    struct tls *tls;
    struct tls_transcript transcript;
    uint8_t *in;
    size_t in_len, in_cap;
    int64_t last_sent_ns;
    uint16_t next_id;
};

static struct config cfg;
static struct connection conn = {.fd = -1};
static volatile sig_atomic_t terminated;

/* -- failure ------------------------------------------------------------------------------- */

static void finish(int status);

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
    char message[512], quoted[1100];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    fprintf(stderr, "%s: %s\n", cfg.role ? cfg.role : "agent", message);
    record("error", "\"t_ns\":%" PRId64 ",\"message\":%s", now_ns(),
           json_quote(quoted, sizeof quoted, message));
    finish(1);
    exit(1);
}

static void event(const char *kind, const char *detail_fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void event(const char *kind, const char *detail_fmt, ...)
{
    char detail[512];
    va_list args;
    va_start(args, detail_fmt);
    vsnprintf(detail, sizeof detail, detail_fmt, args);
    va_end(args);
    record("event", "\"t_ns\":%" PRId64 ",\"kind\":\"%s\",\"detail\":{%s}", now_ns(), kind, detail);
}

static void counter(const char *name, long long value)
{
    record("counters", "\"name\":\"%s\",\"value\":%lld", name, value);
}

/* -- configuration -------------------------------------------------------------------------- */

static cJSON *member(const cJSON *object, const char *name, bool required)
{
    cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    if (required && (item == NULL || cJSON_IsNull(item)))
        die("the agent config has no %s", name);
    return cJSON_IsNull(item) ? NULL : item;
}

static const char *text(const cJSON *object, const char *name, bool required)
{
    cJSON *item = member(object, name, required);
    if (item != NULL && !cJSON_IsString(item))
        die("the agent config's %s must be a string", name);
    return item ? item->valuestring : NULL;
}

static double number(const cJSON *object, const char *name)
{
    cJSON *item = member(object, name, true);
    if (!cJSON_IsNumber(item))
        die("the agent config's %s must be a number", name);
    return item->valuedouble;
}

static bool flag(const cJSON *object, const char *name)
{
    cJSON *item = member(object, name, false);
    return item != NULL && cJSON_IsTrue(item);
}

static void read_config(const char *path)
{
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        fprintf(stderr, "agent: cannot read %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    rewind(file);
    char *buffer = size >= 0 ? malloc((size_t)size + 1) : NULL;
    size_t n = buffer ? fread(buffer, 1, (size_t)size, file) : 0;
    fclose(file);
    if (buffer == NULL) {
        fprintf(stderr, "agent: cannot read %s\n", path);
        exit(1);
    }
    buffer[n] = '\0';
    cJSON *root = cJSON_Parse(buffer); /* kept for the process's life: strings point into it */
    free(buffer);
    if (root == NULL) {
        fprintf(stderr, "agent: %s is not JSON\n", path);
        exit(1);
    }
    cfg.output = text(root, "output", true);
    if (records_open(cfg.output) != 0) {
        fprintf(stderr, "agent: cannot write %s: %s\n", cfg.output, strerror(errno));
        exit(1);
    }
    cfg.role = text(root, "role", true);
    if (strcmp(cfg.role, "emitter") != 0 && strcmp(cfg.role, "receiver") != 0)
        die("role must be emitter or receiver, got %s", cfg.role);
    if (strcmp(text(root, "transport", true), "mqtt") != 0)
        die("the native agent speaks the mqtt transport only");
    /* The runner admits only scheme "none" here: plain MQTT or TLS alone. */
    cfg.configuration = text(root, "configuration", true);
    cfg.host = text(root, "host", true);
    cfg.port = (int)number(root, "port");
    cfg.username = text(root, "username", true);
    cfg.password = text(root, "password", true);
    cfg.client_id = text(root, "client_id", true);
    cfg.topic_prefix = text(root, "topic_prefix", true);
    cfg.payload_bytes = (long)number(root, "payload_bytes");
    cfg.rate_hz = number(root, "rate_hz");
    cfg.duration_s = number(root, "duration_s");
    cfg.qos = (int)number(root, "qos");
    cfg.connect_timeout_s = number(root, "connect_timeout_s");
    cfg.drain_s = number(root, "drain_s");
    cfg.seed = (uint64_t)number(root, "seed");
    cfg.tcp_nodelay = flag(root, "tcp_nodelay");
    cfg.saturating = flag(root, "saturating");
    cfg.fault = text(root, "fault", false);
    if (cfg.payload_bytes < 16 || cfg.payload_bytes > (1 << 24) || cfg.rate_hz <= 0 ||
        cfg.duration_s <= 0 || cfg.qos < 0 || cfg.qos > 1)
        die("payload_bytes 16..16 MiB, rate_hz > 0, duration_s > 0 and qos 0 or 1, please");
    cJSON *tls = member(root, "tls", false);
    if (tls == NULL)
        return;
    cfg.tls = true;
    cJSON *profile = member(tls, "profile", true);
    struct tls_options *o = &cfg.tls_options;
    o->version = text(profile, "version", true);
    o->ca_file = text(tls, "ca_file", true);
    if (flag(profile, "mutual")) {
        o->client_cert = text(tls, "client_cert", true);
        o->client_key = text(tls, "client_key", true);
    }
    o->server_name = SERVER_NAME;
    cJSON *ids = member(tls, "suite_ids", false), *id;
    cJSON_ArrayForEach(id, ids)
    {
        if (o->n_suites < sizeof cfg.suites / sizeof cfg.suites[0] && cJSON_IsNumber(id))
            cfg.suites[o->n_suites++] = (uint16_t)id->valueint;
    }
    o->suites = cfg.suites;
    cJSON *groups = member(tls, "group_ids", false), *group;
    cJSON_ArrayForEach(group, groups)
    {
        if (o->n_groups < sizeof cfg.groups / sizeof cfg.groups[0] && cJSON_IsNumber(group))
            cfg.groups[o->n_groups++] = (uint16_t)group->valueint;
    }
    o->groups = cfg.groups;
}

/* -- the connection ------------------------------------------------------------------------- */

/* Waits until the socket is readable (POLLIN) or writable (POLLOUT): false on timeout. */
static bool wait_socket(short events, int timeout_ms)
{
    if (terminated)
        die("terminated by signal %d", (int)terminated);
    struct pollfd waiting = {conn.fd, events, 0};
    return poll(&waiting, 1, timeout_ms) > 0;
}

static void send_all(const uint8_t *bytes, size_t len)
{
    int64_t deadline = now_ns() + llround(cfg.connect_timeout_s * 1e9);
    for (size_t at = 0; at < len;) {
        ssize_t n = conn.tls ? tls_send(conn.tls, bytes + at, len - at)
                             : send(conn.fd, bytes + at, len - at, MSG_NOSIGNAL);
        if (n > 0) {
            at += (size_t)n;
            continue;
        }
        bool again = conn.tls ? n == TLS_WANT : n < 0 && (errno == EAGAIN || errno == EINTR);
        if (!again)
            die("lost the broker connection while sending");
        if (now_ns() > deadline)
            die("the broker took nothing for %g s (send timeout)", cfg.connect_timeout_s);
        wait_socket(POLLOUT | POLLIN, 100);
    }
    conn.last_sent_ns = now_ns();
}

/* Reads what has arrived within timeout_ms: 1 when bytes came, 0 if none did. */
static int receive(int timeout_ms)
{
    if (terminated)
        die("terminated by signal %d", (int)terminated);
    if ((conn.tls == NULL || tls_pending(conn.tls) == 0) && !wait_socket(POLLIN, timeout_ms))
        return 0;
    if (conn.in_cap - conn.in_len < 65536) {
        size_t cap = conn.in_cap ? 2 * conn.in_cap : 1 << 17;
        if (cap > 2 * MAX_PACKET)
            die("malformed packet from the broker: larger than %u bytes", MAX_PACKET);
        uint8_t *grown = realloc(conn.in, cap);
        if (grown == NULL)
            die("out of memory");
        conn.in = grown;
        conn.in_cap = cap;
    }
    ssize_t n = conn.tls ? tls_recv(conn.tls, conn.in + conn.in_len, conn.in_cap - conn.in_len)
                         : recv(conn.fd, conn.in + conn.in_len, conn.in_cap - conn.in_len, 0);
    bool again = conn.tls ? n == TLS_WANT : n < 0 && (errno == EAGAIN || errno == EINTR);
    if (again) /* e.g. a TLS 1.3 session ticket: bytes came, none for us */
        return 0;
    if (n <= 0)
        die("lost the broker connection (%s)", n == 0 ? "closed by the broker" : "read error");
    conn.in_len += (size_t)n;
    return 1;
}

/* The next whole packet, waiting up to timeout_ms: 1 with *p set (consume it with
 * packet_done), 0 when none came in time. A malformed packet ends the agent. */
static int next_packet(struct mqtt_packet *p, int timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        const char *why = NULL;
        int status = mqtt_frame(conn.in, conn.in_len, p, &why);
        if (status == MQTT_MALFORMED)
            die("malformed packet from the broker: %s", why);
        if (status == MQTT_OK)
            return 1;
        int64_t left_ms = (deadline - now_ns()) / 1000000;
        if (left_ms < 0 || !receive((int)left_ms))
            if (now_ns() >= deadline)
                return 0;
    }
}

static void packet_done(const struct mqtt_packet *p)
{
    memmove(conn.in, conn.in + p->size, conn.in_len - p->size);
    conn.in_len -= p->size;
}

static uint16_t next_packet_id(void)
{
    conn.next_id = (uint16_t)(conn.next_id % 65535 + 1);
    return conn.next_id;
}

static void keep_alive(void)
{
    if (now_ns() - conn.last_sent_ns > (int64_t)KEEP_ALIVE_S * 500000000) {
        uint8_t ping[2];
        send_all(ping, mqtt_pingreq(ping, sizeof ping));
    }
}

static void phase(const char *name, int64_t start, int64_t end, int64_t cpu, const char *detail)
{
    record("handshake",
           "\"phase\":\"%s\",\"t_start_ns\":%" PRId64 ",\"t_end_ns\":%" PRId64
           ",\"wall_ns\":%" PRId64 ",\"cpu_ns\":%" PRId64 ",\"detail\":{%s}",
           name, start, end, end - start, cpu, detail);
}

static struct tcp_info tcp_counters(void)
{
    struct tcp_info info;
    socklen_t size = sizeof info;
    memset(&info, 0, sizeof info);
    getsockopt(conn.fd, IPPROTO_TCP, TCP_INFO, &info, &size);
    return info;
}

static void write_transcript(void)
{
    struct tls_result r;
    tls_describe(conn.tls, &r);
    char name[200];
    record("tls_transcript", "\"t_ns\":%" PRId64 ",\"stack\":\"%s\",\"stack_version\":\"%s\","
           "\"version\":\"%s\",\"suite\":%u,\"suite_name\":%s,\"cipher_bits\":%d,\"resumed\":%s",
           now_ns(), tls_stack(), tls_stack_version(),
           r.version, r.suite, json_quote(name, sizeof name, r.suite_name), r.cipher_bits,
           r.resumed ? "true" : "false");
    /* The messages and the chain are long: one line each, hex, after the summary line. */
    for (size_t i = 0; i < conn.transcript.count; i++) {
        const struct tls_message *m = &conn.transcript.messages[i];
        char *hex = malloc(2 * m->len + 1);
        if (hex == NULL)
            break;
        for (size_t k = 0; k < m->len; k++)
            sprintf(hex + 2 * k, "%02x", m->bytes[k]);
        hex[2 * m->len] = '\0';
        record("tls_message", "\"written\":%s,\"message_type\":%u,\"bytes\":%zu,\"hex\":\"%s\"",
               m->written ? "true" : "false", m->type, m->len, m->type ? hex : "");
        free(hex);
    }
    for (size_t i = 0; i < r.chain_count; i++) {
        char *hex = malloc(2 * r.chain_len[i] + 1);
        if (hex != NULL) {
            for (size_t k = 0; k < r.chain_len[i]; k++)
                sprintf(hex + 2 * k, "%02x", r.chain[i][k]);
            hex[2 * r.chain_len[i]] = '\0';
            record("tls_peer_certificate", "\"position\":%zu,\"der_hex\":\"%s\"", i, hex);
            free(hex);
        }
        free(r.chain[i]);
    }
    free(r.chain);
    free(r.chain_len);
    transcript_free(&conn.transcript);
}

/* TCP connect, TLS handshake, MQTT CONNECT → CONNACK, each a handshake phase. */
static void connect_broker(void)
{
    char port[16];
    snprintf(port, sizeof port, "%d", cfg.port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *address;
    int code = getaddrinfo(cfg.host, port, &hints, &address);
    if (code != 0)
        die("cannot resolve %s: %s", cfg.host, gai_strerror(code));
    int64_t process_start = process_cpu_ns();
    conn.fd = socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (conn.fd < 0)
        die("socket: %s", strerror(errno));
    int on = 1;
    if (cfg.tcp_nodelay)
        setsockopt(conn.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    struct timeval timeout = {(time_t)cfg.connect_timeout_s, 0};
    setsockopt(conn.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(conn.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    int64_t t0 = now_ns(), cpu0 = thread_cpu_ns();
    if (connect(conn.fd, address->ai_addr, address->ai_addrlen) != 0)
        die("cannot connect to %s:%d: %s", cfg.host, cfg.port, strerror(errno));
    phase("tcp_connect", t0, now_ns(), thread_cpu_ns() - cpu0, "");
    freeaddrinfo(address);
    sampler_set_socket(conn.fd);
    int64_t ready = now_ns();
    if (cfg.tls) {
        char why[400];
        struct tcp_info before = tcp_counters();
        int64_t process0 = process_cpu_ns();
        heap_mark();
        t0 = now_ns(), cpu0 = thread_cpu_ns();
        conn.tls = tls_connect(conn.fd, &cfg.tls_options, &conn.transcript, why, sizeof why);
        int64_t t1 = now_ns(), cpu1 = thread_cpu_ns();
        if (conn.tls == NULL)
            die("cannot connect to %s:%d: TLS: %s", cfg.host, cfg.port, why);
        struct tcp_info after = tcp_counters();
        struct heap_use heap = heap_use();
        char detail[600];
        snprintf(detail, sizeof detail,
                 "\"process_cpu_ns\":%" PRId64 ",\"tcp_bytes_sent\":%" PRIu64
                 ",\"tcp_bytes_received\":%" PRIu64 ",\"tcp_segments_out\":%u"
                 ",\"tcp_segments_in\":%u,\"tcp_retransmissions\":%u,"
                 "\"cpu_scope\":\"thread (the handshake runs in the connecting thread)\","
                 "\"session_offered\":false,\"stack\":\"%s\",\"tls_heap_peak_bytes\":%zu",
                 process_cpu_ns() - process0,
                 (uint64_t)(after.tcpi_bytes_sent - before.tcpi_bytes_sent),
                 (uint64_t)(after.tcpi_bytes_received - before.tcpi_bytes_received),
                 after.tcpi_segs_out - before.tcpi_segs_out,
                 after.tcpi_segs_in - before.tcpi_segs_in,
                 after.tcpi_total_retrans - before.tcpi_total_retrans, tls_stack(), heap.peak);
        phase("tls_handshake", t0, t1, cpu1 - cpu0, detail);
        counter("tls_heap_handshake_peak_bytes", (long long)heap.peak);
        ready = now_ns();
    }
    fcntl(conn.fd, F_SETFL, fcntl(conn.fd, F_GETFL) | O_NONBLOCK);
    uint8_t packet[1024];
    size_t n = mqtt_connect(packet, sizeof packet, cfg.client_id, cfg.username, cfg.password,
                            KEEP_ALIVE_S, true);
    if (n == 0)
        die("client id, username or password too long for MQTT");
    send_all(packet, n);
    struct mqtt_packet p;
    if (!next_packet(&p, (int)(cfg.connect_timeout_s * 1000)))
        die("no CONNACK within %g s", cfg.connect_timeout_s);
    int64_t t_connack = now_ns();
    bool present;
    int rc;
    const char *why = NULL;
    if (p.type != MQTT_CONNACK || mqtt_parse_connack(&p, &present, &rc, &why) != MQTT_OK)
        die("malformed packet from the broker: %s", why ? why : "expected CONNACK");
    packet_done(&p);
    if (rc != 0)
        die("broker refused the connection: CONNACK return code %d", rc);
    phase("mqtt_connect", ready, t_connack, process_cpu_ns() - process_start,
          "\"cpu_scope\":\"process, whole connect() to CONNACK\"");
    if (conn.tls != NULL) {
        write_transcript();
        heap_mark(); /* from here: what publishing needs */
    }
}

static void disconnect_broker(void)
{
    if (conn.fd < 0)
        return;
    uint8_t packet[2];
    size_t n = mqtt_disconnect(packet, sizeof packet);
    if (conn.tls != NULL)
        tls_send(conn.tls, packet, n); /* best effort: the run's data is already recorded */
    else
        send(conn.fd, packet, n, MSG_NOSIGNAL);
    sampler_set_socket(-1);
    if (conn.tls != NULL) {
        struct heap_use heap = heap_use();
        counter("tls_heap_steady_bytes", (long long)heap.current);
        counter("tls_heap_publishing_peak_bytes", (long long)heap.peak);
        counter("tls_heap_allocations", (long long)heap.allocations);
        tls_close(conn.tls);
        conn.tls = NULL;
    }
    close(conn.fd);
    conn.fd = -1;
}

/* VmHWM, not getrusage's ru_maxrss: that one keeps the peak of the process before execve
 * (the Python runner that forked us). */
static long long peak_rss_bytes(void)
{
    long long kib = 0;
    char line[256];
    FILE *status = fopen("/proc/self/status", "r");
    while (status != NULL && fgets(line, sizeof line, status) != NULL)
        if (sscanf(line, "VmHWM: %lld kB", &kib) == 1)
            break;
    if (status != NULL)
        fclose(status);
    return kib * 1024;
}

static void finish(int status)
{
    static bool finishing;
    if (finishing)
        return;
    finishing = true;
    if (status != 0 && conn.fd >= 0) { /* no goodbye on failure: just close */
        sampler_set_socket(-1);
        close(conn.fd);
        conn.fd = -1;
    }
    disconnect_broker();
    sampler_stop();
    counter("peak_rss_bytes", peak_rss_bytes());
    event("agent_end", "");
    records_close();
}

/* -- the emitter ------------------------------------------------------------------------------ */

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

static void take_acks(int timeout_ms)
{
    struct mqtt_packet p;
    while (next_packet(&p, timeout_ms)) {
        const char *why = NULL;
        uint16_t id;
        if (p.type == MQTT_PUBACK) {
            if (mqtt_parse_puback(&p, &id, &why) != MQTT_OK)
                die("malformed packet from the broker: %s", why);
            for (size_t i = 0; i <= MAX_INFLIGHT; i++)
                if (id != 0 && awaiting[i] == id) {
                    awaiting[i] = 0;
                    unacknowledged--;
                }
        } else if (p.type == MQTT_PINGRESP) {
            if (mqtt_parse_pingresp(&p, &why) != MQTT_OK)
                die("malformed packet from the broker: %s", why);
        } else {
            die("malformed packet from the broker: unexpected packet type %d", p.type);
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

static void emit(void)
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
    double elapsed_s = (double)(now_ns() - start) / 1e9;
    event("publish_end", "\"sent\":%ld,\"unacknowledged\":%ld,\"achieved_rate_hz\":%.3f", sent,
          unacknowledged, elapsed_s > 0 ? (double)sent / elapsed_s : 0.0);
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

static void receive_messages(void)
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
        } else if (p.type == MQTT_PINGRESP) {
            if (mqtt_parse_pingresp(&p, &why) != MQTT_OK)
                die("malformed packet from the broker: %s", why);
        } else {
            die("malformed packet from the broker: unexpected packet type %d", p.type);
        }
        packet_done(&p);
    }
    static const char *names[6] = {"messages_received", "messages_delivered", "duplicates",
                                   "auth_failures", "malformed", "replays_rejected"};
    for (int i = 0; i < 6; i++)
        counter(names[i], counts[i]);
}

/* -- main --------------------------------------------------------------------------------------- */

static void on_signal(int signum) { terminated = signum; }

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--config") != 0) {
        fprintf(stderr, "usage: %s --config FILE\n", argv[0]);
        return 2;
    }
    struct sigaction action = {.sa_handler = on_signal}; /* no SA_RESTART: waits see EINTR */
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    read_config(argv[2]);
    char configuration[300];
    event("agent_start", "\"role\":\"%s\",\"configuration\":%s,\"stack\":\"%s\","
          "\"stack_version\":\"%s\"", cfg.role,
          json_quote(configuration, sizeof configuration, cfg.configuration), tls_stack(),
          tls_stack_version());
    sampler_start();
    if (strcmp(cfg.role, "emitter") == 0)
        emit();
    else
        receive_messages();
    finish(0);
    return 0;
}
