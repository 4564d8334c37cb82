/* The broker connection: TCP, the TLS handshake on the build's stack, MQTT CONNECT, each a
 * handshake phase; non-blocking sends and receives after the handshake; the goodbye. */
#define _GNU_SOURCE
#include "agent.h"
#include "heap.h"
#include "records.h"
#include "stack.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/tcp.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Waits until the socket is readable (POLLIN) or writable (POLLOUT): false on timeout. */
static bool wait_socket(short events, int timeout_ms)
{
    if (terminated)
        die("terminated by signal %d", (int)terminated);
    struct pollfd waiting = {conn.fd, events, 0};
    return poll(&waiting, 1, timeout_ms) > 0;
}

/* Who is at the other end, for the messages that end the agent. */
static const char *peer(void) { return cfg.tcp ? "receiver" : "broker"; }

void send_all(const uint8_t *bytes, size_t len)
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
            die("lost the %s connection while sending", peer());
        if (now_ns() > deadline)
            die("the %s took nothing for %g s (send timeout)", peer(), cfg.connect_timeout_s);
        wait_socket(POLLOUT | POLLIN, 100);
    }
    conn.last_sent_ns = now_ns();
}

/* Reads what has arrived within timeout_ms into conn.in: 1 when bytes came, 0 if none did. */
int receive(int timeout_ms)
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
        die("lost the %s connection (%s)", peer(), n == 0 ? "closed by the peer" : "read error");
    conn.in_len += (size_t)n;
    return 1;
}

/* The next whole packet, waiting up to timeout_ms: 1 with *p set (consume it with
 * packet_done), 0 when none came in time. A malformed packet ends the agent. */
int next_packet(struct mqtt_packet *p, int timeout_ms)
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

void packet_done(const struct mqtt_packet *p)
{
    memmove(conn.in, conn.in + p->size, conn.in_len - p->size);
    conn.in_len -= p->size;
}

uint16_t next_packet_id(void)
{
    conn.next_id = (uint16_t)(conn.next_id % 65535 + 1);
    return conn.next_id;
}

void take_other(const struct mqtt_packet *p)
{
    const char *why = NULL;
    struct mqtt_publish_in m;
    uint16_t id;
    int status;
    switch (p->type) {
    case MQTT_PINGRESP:
        status = mqtt_parse_pingresp(p, &why);
        break;
    case MQTT_PUBACK: /* of a publish nobody waits for (the receiver's key-exchange messages) */
        status = mqtt_parse_puback(p, &id, &why);
        break;
    case MQTT_PUBLISH: /* e.g. the cleared hello reaching an emitter still subscribed to it */
        status = mqtt_parse_publish(p, &m, &why);
        if (status == MQTT_OK && m.qos == 1) {
            uint8_t ack[4];
            send_all(ack, mqtt_puback(ack, sizeof ack, m.packet_id));
        }
        break;
    default:
        die("malformed packet from the broker: unexpected packet type %d", p->type);
    }
    if (status != MQTT_OK)
        die("malformed packet from the broker: %s", why);
}

bool topic_is(const struct mqtt_publish_in *m, const char *suffix)
{
    size_t prefix = strlen(cfg.topic_prefix), n = strlen(suffix);
    return m->topic_len == prefix + 1 + n && memcmp(m->topic, cfg.topic_prefix, prefix) == 0 &&
           m->topic[prefix] == '/' && memcmp(m->topic + prefix + 1, suffix, n) == 0;
}

size_t topic_publish(uint8_t *out, size_t cap, const char *suffix, const uint8_t *payload,
                     size_t len, int qos, uint16_t id, bool retain)
{
    char topic[300];
    snprintf(topic, sizeof topic, "%s/%s", cfg.topic_prefix, suffix);
    return mqtt_publish(out, cap, topic, payload, len, qos, id, retain);
}

void keep_alive(void)
{
    if (now_ns() - conn.last_sent_ns > (int64_t)KEEP_ALIVE_S * 500000000) {
        uint8_t ping[2];
        send_all(ping, mqtt_pingreq(ping, sizeof ping));
    }
}

static bool priming; /* the priming connection of a resumption profile: no phases, no counters */

void phase(const char *name, int64_t start, int64_t end, int64_t cpu, const char *detail)
{
    if (priming)
        return;
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

void write_transcript(void)
{
    if (priming) {
        tls_transcript_free(&conn.transcript);
        return;
    }
    struct tls_result r;
    tls_describe(conn.tls, &r);
    char name[200];
    record("tls_transcript", "\"t_ns\":%" PRId64 ",\"stack\":\"%s\",\"stack_version\":\"%s\","
           "\"version\":\"%s\",\"suite\":%u,\"suite_name\":%s,\"cipher_bits\":%d,\"resumed\":%s",
           now_ns(), stack_name(), stack_version(),
           r.version, r.suite, json_quote(name, sizeof name, r.suite_name), r.cipher_bits,
           r.resumed ? "true" : "false");
    /* The messages and the chain are long: one line each, hex, after the summary line. */
    for (size_t i = 0; i < conn.transcript.count; i++) {
        const struct tls_message *m = &conn.transcript.messages[i];
        char *hex = malloc(2 * m->len + 1);
        if (hex == NULL)
            break;
        hex_encode(hex, m->bytes, m->len);
        record("tls_message", "\"written\":%s,\"message_type\":%u,\"bytes\":%zu,\"hex\":\"%s\"",
               m->written ? "true" : "false", m->type, m->len, m->type ? hex : "");
        free(hex);
    }
    for (size_t i = 0; i < r.chain_count; i++) {
        char *hex = malloc(2 * r.chain_len[i] + 1);
        if (hex != NULL) {
            hex_encode(hex, r.chain[i], r.chain_len[i]);
            record("tls_peer_certificate", "\"position\":%zu,\"der_hex\":\"%s\"", i, hex);
            free(hex);
        }
        free(r.chain[i]);
    }
    free(r.chain);
    free(r.chain_len);
    tls_transcript_free(&conn.transcript);
}

/* A resumption profile measures a *resumed* handshake: first a full connection (connect →
 * CONNACK → disconnect, recorded as a tls_priming_connection event, not as phases), whose
 * session the measured connection offers — as the Python agents do (agents/session.py). */
static void prime_session(void)
{
    int64_t t0 = now_ns();
    priming = true;
    connect_broker();
    disconnect_broker();
    priming = false;
    if (conn.session == NULL)
        die("priming connection for TLS resumption got no session");
    event("tls_priming_connection", "\"wall_ns\":%" PRId64, now_ns() - t0);
}

/* The transport under MQTT — TCP connect and, with TLS, the handshake (each a phase) — and
 * the whole connection of the tcp transport (tcp.c); returns when it was ready. */
int64_t open_connection(void)
{
    char port[16];
    snprintf(port, sizeof port, "%d", cfg.port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *address;
    int code = getaddrinfo(cfg.host, port, &hints, &address);
    if (code != 0)
        die("cannot resolve %s: %s", cfg.host, gai_strerror(code));
    conn.fd = socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (conn.fd < 0)
        die("socket: %s", strerror(errno));
    int on = 1;
    if (cfg.tcp_nodelay)
        setsockopt(conn.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    struct timeval timeout = {(time_t)cfg.connect_timeout_s, 0};
    setsockopt(conn.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(conn.fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    trace_mark("iotsb grp TCP_CONNECT");
    int64_t t0 = now_ns(), cpu0 = thread_cpu_ns();
    if (connect(conn.fd, address->ai_addr, address->ai_addrlen) != 0)
        die("cannot connect to %s:%d: %s", cfg.host, cfg.port, strerror(errno));
    int64_t t_connected = now_ns(), cpu_connected = thread_cpu_ns();
    struct sockaddr_storage local;
    socklen_t local_len = sizeof local;
    int local_port = 0; /* finds the connection's retransmissions in a trace (bench --trace) */
    if (getsockname(conn.fd, (struct sockaddr *)&local, &local_len) == 0)
        local_port = ntohs(local.ss_family == AF_INET6
                               ? ((struct sockaddr_in6 *)&local)->sin6_port
                               : ((struct sockaddr_in *)&local)->sin_port);
    char tcp_detail[32];
    snprintf(tcp_detail, sizeof tcp_detail, "\"local_port\":%d", local_port);
    phase("tcp_connect", t0, t_connected, cpu_connected - cpu0, tcp_detail);
    freeaddrinfo(address);
    sampler_set_socket(conn.fd);
    int64_t ready = now_ns();
    if (cfg.tls) {
        char why[400];
        struct tcp_info before = tcp_counters();
        int64_t process0 = process_cpu_ns();
        heap_mark();
        conn.transcript.marker_fd = trace_marking ? trace_marker_fd : -1;
        trace_mark("iotsb grp CLIENT_HELLO");
        t0 = now_ns(), cpu0 = thread_cpu_ns();
        const struct tls_session *offer = cfg.resumption ? conn.session : NULL;
        conn.tls = tls_connect(conn.fd, &cfg.tls_options, offer, &conn.transcript, why,
                               sizeof why);
        int64_t t1 = now_ns(), cpu1 = thread_cpu_ns();
        trace_mark("iotsb grp MQTT_CONNECT");
        if (conn.tls == NULL)
            die("cannot connect to %s:%d: TLS: %s", cfg.host, cfg.port, why);
        if (cfg.keylog != NULL) { /* after the measured handshake */
            char line[2048]; /* TLS 1.3: five lines */
            if (!tls_key_log(conn.tls, line, sizeof line))
                die("--keylog: %s %s cannot export this connection's secrets", stack_name(),
                    stack_version());
            if (append_secret_lines(cfg.keylog, line) != 0)
                die("--keylog: cannot append to %s: %s", cfg.keylog, strerror(errno));
            memset(line, 0, sizeof line);
        }
        struct tcp_info after = tcp_counters();
        struct heap_use heap = heap_use();
        char detail[600];
        snprintf(detail, sizeof detail,
                 "\"process_cpu_ns\":%" PRId64 ",\"tcp_bytes_sent\":%" PRIu64
                 ",\"tcp_bytes_received\":%" PRIu64 ",\"tcp_segments_out\":%u"
                 ",\"tcp_segments_in\":%u,\"tcp_retransmissions\":%u,"
                 "\"cpu_scope\":\"thread (the handshake runs in the connecting thread)\","
                 "\"session_offered\":%s,\"stack\":\"%s\",\"tls_heap_peak_bytes\":%zu",
                 process_cpu_ns() - process0,
                 (uint64_t)(after.tcpi_bytes_sent - before.tcpi_bytes_sent),
                 (uint64_t)(after.tcpi_bytes_received - before.tcpi_bytes_received),
                 after.tcpi_segs_out - before.tcpi_segs_out,
                 after.tcpi_segs_in - before.tcpi_segs_in,
                 after.tcpi_total_retrans - before.tcpi_total_retrans,
                 offer != NULL ? "true" : "false", stack_name(), heap.peak);
        phase("tls_handshake", t0, t1, cpu1 - cpu0, detail);
        if (!priming)
            counter("tls_heap_handshake_peak_bytes", (long long)heap.peak);
        ready = now_ns();
    }
    fcntl(conn.fd, F_SETFL, fcntl(conn.fd, F_GETFL) | O_NONBLOCK);
    return ready;
}

/* TCP connect, TLS handshake, MQTT CONNECT → CONNACK, each a handshake phase. */
void connect_broker(void)
{
    if (cfg.tls && cfg.resumption && conn.session == NULL && !priming)
        prime_session();
    int64_t process_start = process_cpu_ns();
    int64_t ready = open_connection();
    int64_t thread_ready = thread_cpu_ns();
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
    trace_mark("iotsb end");
    bool present;
    int rc;
    const char *why = NULL;
    if (p.type != MQTT_CONNACK || mqtt_parse_connack(&p, &present, &rc, &why) != MQTT_OK)
        die("malformed packet from the broker: %s", why ? why : "expected CONNACK");
    packet_done(&p);
    if (rc != 0)
        die("broker refused the connection: CONNACK return code %d", rc);
    char detail[160];
    snprintf(detail, sizeof detail,
             "\"cpu_scope\":\"process, whole connect() to CONNACK\",\"thread_cpu_ns\":%" PRId64,
             thread_cpu_ns() - thread_ready);
    phase("mqtt_connect", ready, t_connack, process_cpu_ns() - process_start, detail);
    if (conn.tls != NULL) {
        write_transcript();
        heap_mark(); /* from here: what publishing needs */
    }
}

void disconnect_broker(void)
{
    if (conn.fd < 0)
        return;
    uint8_t packet[2];
    size_t n = mqtt_disconnect(packet, sizeof packet);
    if (conn.tls != NULL)
        tls_send(conn.tls, packet, n); /* best effort: the run's data is already recorded */
    else
        send(conn.fd, packet, n, MSG_NOSIGNAL);
    close_connection();
}

void close_connection(void)
{
    if (conn.fd < 0)
        return;
    sampler_set_socket(-1);
    if (conn.tls != NULL && cfg.resumption) { /* after the CONNACK read: TLS 1.3 tickets too */
        tls_session_free(conn.session);
        conn.session = tls_session_get(conn.tls);
    }
    if ((conn.tls != NULL || cfg.scheme) && !priming) {
        struct heap_use heap = heap_use();
        counter("tls_heap_steady_bytes", (long long)heap.current);
        counter("tls_heap_publishing_peak_bytes", (long long)heap.peak);
        counter("tls_heap_allocations", (long long)heap.allocations);
    }
    if (conn.tls != NULL) {
        tls_close(conn.tls);
        conn.tls = NULL;
    }
    close(conn.fd);
    conn.fd = -1;
    conn.in_len = 0; /* a connection's unread bytes are not the next one's */
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

void finish(int status)
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
