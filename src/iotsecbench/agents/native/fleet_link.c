/* One device's connection in one role, as events: TCP connect, TLS handshake and MQTT
 * CONNECT (the phases), then the emitter's schedule (agent.c's emit) or the receiver's. */
#define _GNU_SOURCE
#include "fleet.h"

/* -- connecting ---------------------------------------------------------------------------- */

void close_link(struct link *l, bool goodbye)
{
    if (l->fd < 0)
        return;
    if (l->tls != NULL && cfg.resumption && !l->reconnecting) {
        void *session = fleet_tls_session(l->tls); /* after the CONNACK: TLS 1.3 tickets too */
        if (session != NULL) {
            fleet_tls_session_free(l->session);
            l->session = session;
        }
    }
    if (goodbye) {
        uint8_t packet[2];
        size_t n = mqtt_disconnect(packet, sizeof packet);
        if (l->tls != NULL)
            fleet_tls_send(l->tls, packet, n);
        else
            send(l->fd, packet, n, MSG_NOSIGNAL);
    } else { /* a cut: RST, as a link that died */
        struct linger hard = {1, 0};
        setsockopt(l->fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    }
    fleet_tls_free(l->tls, goodbye);
    l->tls = NULL;
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, l->fd, NULL);
    close(l->fd);
    l->fd = -1;
    l->in_len = l->out_len = 0;
    l->generation++;
}

void start_connect(struct link *l)
{
    int64_t cpu0 = thread_cpu_ns();
    l->fd = socket(address->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0)
        fail(l, "socket: %s (the fleet needs one file descriptor per connection)",
             strerror(errno));
    int on = 1;
    if (cfg.tcp_nodelay)
        setsockopt(l->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    struct epoll_event e = {.events = EPOLLIN | EPOLLOUT, .data.ptr = l};
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, l->fd, &e);
    l->t_tcp0 = now_ns();
    l->cpu_tls = l->cpu_mqtt = 0;
    l->state = TCP_CONNECTING;
    if (connect(l->fd, address->ai_addr, address->ai_addrlen) != 0 && errno != EINPROGRESS)
        fail(l, "cannot connect to %s:%d: %s", cfg.host, cfg.port, strerror(errno));
    l->cpu_tcp = thread_cpu_ns() - cpu0;
    schedule(l, l->t_tcp0 + llround(cfg.connect_timeout_s * 1e9)); /* the set-up's deadline */
}

/* -- connect pacing: at most cfg.max_connecting set-ups in flight, the rest in a queue ------ */

static struct link **queue; /* a ring of n_links */
static size_t queue_head, queue_len;
static long connecting;

void request_connect(struct link *l)
{
    if (cfg.max_connecting <= 0) {
        start_connect(l);
        return;
    }
    if (connecting < cfg.max_connecting) {
        connecting++;
        l->paced = true;
        start_connect(l);
        return;
    }
    if (queue == NULL && (queue = calloc(n_links, sizeof *queue)) == NULL)
        fail(l, "out of memory for the connect queue");
    queue[(queue_head + queue_len++) % n_links] = l;
    l->queued_ns = now_ns();
    /* no socket until its turn: a storm's cut emitter must not publish (its timer) meanwhile */
    l->state = WAITING;
    unschedule(l);
}

/* A paced set-up has ended (CONNACK): its place goes to the next in the queue. */
static void setup_done(struct link *l)
{
    if (!l->paced)
        return;
    l->paced = false;
    connecting--;
    while (queue_len > 0 && connecting < cfg.max_connecting) {
        struct link *next = queue[queue_head];
        queue_head = (queue_head + 1) % n_links;
        queue_len--;
        connecting++;
        next->paced = true;
        start_connect(next);
    }
}

static bool recording(const struct link *l) { return !l->priming && !l->reconnecting; }

static void phase(struct link *l, const char *name, int64_t start, int64_t end, int64_t cpu,
                  const char *detail)
{
    if (recording(l))
        lrec(l, "handshake",
             "\"phase\":\"%s\",\"t_start_ns\":%" PRId64 ",\"t_end_ns\":%" PRId64
             ",\"wall_ns\":%" PRId64 ",\"cpu_ns\":%" PRId64 ",\"detail\":{%s}",
             name, start, end, end - start, cpu, detail);
}

/* One hex line: a handshake message (a = written, b = its type) or a certificate (a = its
 * position in the chain). */
static void write_hex(struct link *l, const char *type, const uint8_t *bytes, size_t len, size_t a,
                      size_t b, bool with_hex)
{
    char *hex = malloc(2 * len + 1);
    if (hex == NULL)
        return;
    hex_encode(hex, bytes, len);
    if (strcmp(type, "tls_message") == 0)
        lrec(l, type, "\"written\":%s,\"message_type\":%zu,\"bytes\":%zu,\"hex\":\"%s\"",
             a ? "true" : "false", b, len, with_hex ? hex : "");
    else
        lrec(l, type, "\"position\":%zu,\"der_hex\":\"%s\"", a, hex);
    free(hex);
}

static void write_transcript(struct link *l)
{
    struct tls_result r;
    fleet_tls_describe(l->tls, &r);
    char name[200];
    lrec(l, "tls_transcript",
         "\"t_ns\":%" PRId64 ",\"stack\":\"%s\",\"stack_version\":\"%s\",\"version\":\"%s\","
         "\"suite\":%u,\"suite_name\":%s,\"cipher_bits\":%d,\"resumed\":%s",
         now_ns(), fleet_stack_name(), fleet_stack_version(), r.version, r.suite,
         json_quote(name, sizeof name, r.suite_name), r.cipher_bits, r.resumed ? "true" : "false");
    for (size_t i = 0; i < l->transcript.count; i++) {
        const struct tls_message *m = &l->transcript.messages[i];
        write_hex(l, "tls_message", m->bytes, m->len, m->written, m->type, m->type != 0);
    }
    for (size_t i = 0; i < r.chain_count; i++) {
        write_hex(l, "tls_peer_certificate", r.chain[i], r.chain_len[i], i, 0, true);
        free(r.chain[i]);
    }
    free(r.chain);
    free(r.chain_len);
}

static void send_connect(struct link *l)
{
    uint8_t packet[1024];
    size_t n = mqtt_connect(packet, sizeof packet, l->client_id, l->username, l->password,
                            KEEP_ALIVE_S, true);
    if (n == 0)
        fail(l, "client id, username or password too long for MQTT");
    l->t_tls1 = now_ns();
    l->state = MQTT_CONNECTING;
    send_packet(l, packet, n);
}

static void handshake_step(struct link *l)
{
    char why[400];
    int64_t cpu0 = thread_cpu_ns();
    int status = fleet_tls_handshake(l->tls, why, sizeof why);
    l->cpu_tls += thread_cpu_ns() - cpu0;
    if (status == FLEET_WANT_READ || status == FLEET_WANT_WRITE) {
        watch(l, status == FLEET_WANT_WRITE);
        return;
    }
    if (status != 1)
        fail(l, "cannot connect to %s:%d: TLS: %s", cfg.host, cfg.port, why);
    int64_t t1 = now_ns();
    char detail[300];
    snprintf(detail, sizeof detail,
             "\"cpu_scope\":\"this device's handshake steps in the fleet process\","
             "\"session_offered\":%s,\"stack\":\"%s\"",
             l->session != NULL && (cfg.resumption && !l->priming) ? "true" : "false",
             fleet_stack_name());
    phase(l, "tls_handshake", l->t_tcp1, t1, l->cpu_tls, detail);
    send_connect(l);
}

static void tcp_connected(struct link *l)
{
    int error = 0;
    socklen_t size = sizeof error;
    getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &error, &size);
    if (error != 0)
        fail(l, "cannot connect to %s:%d: %s", cfg.host, cfg.port, strerror(error));
    l->t_tcp1 = now_ns();
    struct sockaddr_storage local;
    socklen_t local_len = sizeof local;
    int local_port = 0;
    if (getsockname(l->fd, (struct sockaddr *)&local, &local_len) == 0)
        local_port = ntohs(((struct sockaddr_in *)&local)->sin_port);
    char detail[80];
    snprintf(detail, sizeof detail, "\"local_port\":%d,\"queued_ns\":%" PRId64, local_port,
             l->queued_ns > 0 ? l->t_tcp0 - l->queued_ns : 0); /* waited for a connect place */
    l->queued_ns = 0;
    phase(l, "tcp_connect", l->t_tcp0, l->t_tcp1, l->cpu_tcp, detail);
    if (!cfg.tls) {
        send_connect(l);
        return;
    }
    char why[400];
    void *offer = cfg.resumption && !l->priming ? l->session : NULL;
    tls_transcript_free(&l->transcript);
    memset(&l->transcript, 0, sizeof l->transcript);
    l->transcript.marker_fd = -1;
    l->tls = fleet_tls_new(tls_context, l->fd, offer, recording(l) ? &l->transcript : NULL, why,
                           sizeof why);
    if (l->tls == NULL)
        fail(l, "TLS: %s", why);
    l->state = TLS_HANDSHAKE;
    handshake_step(l);
}

static void message_stamp(uint8_t *plaintext, long seq, int64_t t_created);

/* -- backend subscribers ------------------------------------------------------------------ */

static struct link **by_topic; /* the process's receivers, by topic prefix */

static int prefix_order(const void *a, const void *b)
{
    return strcmp((*(struct link *const *)a)->topic_prefix,
                  (*(struct link *const *)b)->topic_prefix);
}

void backends_index(void)
{
    if ((by_topic = malloc(n_devices * sizeof *by_topic)) == NULL)
        fail(NULL, "out of memory for the backend subscribers' topic index");
    for (size_t k = 0; k < n_devices; k++)
        by_topic[k] = &links[2 * k + 1];
    qsort(by_topic, n_devices, sizeof *by_topic, prefix_order);
}

/* The receiver whose topic a backend's message came on (<prefix>/data, <prefix>/ctl/end). */
static struct link *receiver_of(const struct mqtt_publish_in *m)
{
    size_t len = m->topic_len;
    if (len > 5 && memcmp(m->topic + len - 5, "/data", 5) == 0)
        len -= 5;
    else if (len > 8 && memcmp(m->topic + len - 8, "/ctl/end", 8) == 0)
        len -= 8;
    else
        return NULL;
    size_t low = 0, high = n_devices;
    while (low < high) {
        size_t mid = low + (high - low) / 2, n = strlen(by_topic[mid]->topic_prefix);
        int order = memcmp(by_topic[mid]->topic_prefix, m->topic, n < len ? n : len);
        if (order == 0)
            order = (n > len) - (n < len);
        if (order == 0)
            return by_topic[mid];
        if (order < 0)
            low = mid + 1;
        else
            high = mid;
    }
    return NULL;
}

/* Its devices' two topics each (devices first, first + stride, ...), BACKEND_BATCH devices
 * per SUBSCRIBE: exact topics, not a wildcard, so that no process receives another's. */
static void subscribe_backend(struct link *l)
{
    static char texts[2 * BACKEND_BATCH][300];
    const char *topics[2 * BACKEND_BATCH];
    int qos[2 * BACKEND_BATCH];
    uint8_t packet[2 * BACKEND_BATCH * 310];
    size_t n = 0;
    l->state = SUBSCRIBING;
    for (size_t k = l->backend_first;; k += l->backends) {
        bool last = k >= n_devices;
        if (!last) {
            const char *prefix = links[2 * k + 1].topic_prefix;
            snprintf(texts[n], sizeof texts[n], "%s/data", prefix);
            topics[n] = texts[n];
            qos[n++] = BACKEND_QOS;
            snprintf(texts[n], sizeof texts[n], "%s/ctl/end", prefix);
            topics[n] = texts[n];
            qos[n++] = BACKEND_QOS;
        }
        if (n == 2 * BACKEND_BATCH || (last && n > 0)) {
            size_t size = mqtt_subscribe(packet, sizeof packet, next_id(l), topics, qos, n);
            if (size == 0)
                fail(l, "topics too long for a SUBSCRIBE");
            send_packet(l, packet, size);
            l->subacks_pending++;
            n = 0;
        }
        if (last)
            break;
    }
    if (l->subacks_pending == 0)
        fail(l, "a backend subscriber without devices");
}

static void on_connack(struct link *l, const struct mqtt_packet *p)
{
    bool present;
    int rc;
    const char *why = NULL;
    if (p->type != MQTT_CONNACK || mqtt_parse_connack(p, &present, &rc, &why) != MQTT_OK)
        fail(l, "malformed packet from the broker: %s", why ? why : "expected CONNACK");
    if (rc != 0)
        fail(l, "broker refused the connection: CONNACK return code %d", rc);
    int64_t t = now_ns();
    if (l->priming) { /* the session to offer is taken as the connection closes */
        close_link(l, true);
        l->priming = false;
        char detail[64];
        snprintf(detail, sizeof detail, "\"wall_ns\":%" PRId64, t - l->t_tcp0);
        levent(l, "tls_priming_connection", detail);
        if (l->session == NULL)
            fail(l, "priming connection for TLS resumption got no session");
        start_connect(l);
        return;
    }
    setup_done(l);
    if (l->reconnecting) {
        struct tls_result r = {0};
        if (l->tls != NULL) {
            fleet_tls_describe(l->tls, &r);
            for (size_t i = 0; i < r.chain_count; i++)
                free(r.chain[i]);
            free(r.chain);
            free(r.chain_len);
        }
        char detail[300];
        snprintf(detail, sizeof detail,
                 "\"t_cut_ns\":%" PRId64 ",\"t_start_ns\":%" PRId64 ",\"wall_ns\":%" PRId64
                 ",\"tls_wall_ns\":%" PRId64 ",\"cpu_ns\":%" PRId64 ",\"resumed\":%s",
                 l->t_cut, l->t_tcp0, t - l->t_tcp0, l->tls ? l->t_tls1 - l->t_tcp1 : 0,
                 l->cpu_tcp + l->cpu_tls + l->cpu_mqtt, r.resumed ? "true" : "false");
        levent(l, "reconnected", detail);
        l->reconnecting = false;
        l->state = RUNNING;
        /* what was unacknowledged at the cut goes again, marked DUP */
        uint8_t packet[1 << 16];
        for (size_t i = 0; i <= MAX_INFLIGHT; i++) {
            if (l->awaiting[i] == 0 || l->awaiting_seq[i] < 0)
                continue;
            iotsb_filler(l->seed, payload + 16, (size_t)cfg.payload_bytes - 16);
            message_stamp(payload, l->awaiting_seq[i], l->awaiting_created[i]);
            size_t n = topic_publish(l, packet, sizeof packet, "data", payload,
                                     (size_t)cfg.payload_bytes, cfg.qos, l->awaiting[i], true);
            send_packet(l, packet, n);
        }
        publish_next(l);
        return;
    }
    char detail[160];
    snprintf(detail, sizeof detail,
             "\"cpu_scope\":\"this device's steps in the fleet process, connect() to CONNACK\"");
    phase(l, "mqtt_connect", l->t_tls1, t, l->cpu_tcp + l->cpu_tls + l->cpu_mqtt, detail);
    if (l->tls != NULL)
        write_transcript(l);
    if (l->role == BACKEND) {
        subscribe_backend(l);
        return;
    }
    if (l->role == RECEIVER) {
        char data[300], end[300];
        snprintf(data, sizeof data, "%s/data", l->topic_prefix);
        snprintf(end, sizeof end, "%s/ctl/end", l->topic_prefix);
        const char *topics[2] = {data, end};
        int qos[2] = {cfg.qos, 1};
        uint8_t packet[1024];
        l->state = SUBSCRIBING;
        send_packet(l, packet, mqtt_subscribe(packet, sizeof packet, next_id(l), topics, qos, 2));
        return;
    }
    l->state = RUNNING;
    l->publish_start = t;
    l->planned = lround(cfg.duration_s * cfg.rate_hz);
    if (l->planned < 1)
        l->planned = 1;
    char planned[32];
    snprintf(planned, sizeof planned, "\"messages\":%ld", l->planned);
    levent(l, "publish_start", planned);
    publish_next(l);
}

/* -- the emitter (agent.c's emit, as events) ---------------------------------------------------------------------------- */

/* The application message's header (agents/wire.py): seq (8) | t_created_ns (8), big-endian. */
static void message_stamp(uint8_t *plaintext, long seq, int64_t t_created)
{
    for (int i = 0; i < 8; i++) {
        plaintext[i] = (uint8_t)((uint64_t)seq >> (56 - 8 * i));
        plaintext[8 + i] = (uint8_t)((uint64_t)t_created >> (56 - 8 * i));
    }
}

static void message_read(const uint8_t *plaintext, uint64_t *seq, uint64_t *t_created)
{
    *seq = *t_created = 0;
    for (int i = 0; i < 8; i++) {
        *seq = *seq << 8 | plaintext[i];
        *t_created = *t_created << 8 | plaintext[8 + i];
    }
}

static int64_t period_ns(void) { return llround(1e9 / cfg.rate_hz); }

static void send_end(struct link *l)
{
    char detail[96];
    snprintf(detail, sizeof detail, "\"sent\":%ld,\"unacknowledged\":%ld", l->sent, l->unacked);
    levent(l, "publish_end", detail);
    char body[64];
    int len = snprintf(body, sizeof body, "{\"sent\": %ld}", l->sent);
    memset(l->awaiting, 0, sizeof l->awaiting);
    l->unacked = 0;
    l->end_id = next_id(l);
    uint8_t packet[512];
    send_packet(l, packet,
                topic_publish(l, packet, sizeof packet, "ctl/end", (uint8_t *)body, (size_t)len,
                              1, l->end_id, false));
    l->state = ENDING;
    schedule(l, now_ns() + llround(cfg.connect_timeout_s * 1e9));
}

static void link_done(struct link *l)
{
    struct link *receiver = l + 1; /* links alternate emitter, receiver */
    if (l->role == EMITTER && receiver->state == RUNNING && receiver->expected < 0) {
        /* its end message may be lost (a broker dropping a full queue): the receiver waits
         * for it no longer than a set-up and a drain */
        receiver->recv_drain_end =
            now_ns() + llround((cfg.connect_timeout_s + cfg.drain_s) * 1e9);
        schedule(receiver, receiver->recv_drain_end);
    }
    if (l->role == EMITTER) {
        lrec(l, "counters", "\"name\":\"messages_sent\",\"value\":%ld", l->sent);
        if (cfg.storm_at_s > 0)
            lrec(l, "counters", "\"name\":\"link_cuts\",\"value\":%ld", l->cuts);
    } else {
        for (int i = 0; i < 6; i++)
            lrec(l, "counters", "\"name\":\"%s\",\"value\":%ld", COUNTER_NAMES[i], l->counts[i]);
    }
    close_link(l, true);
    unschedule(l);
    levent(l, "agent_end", "");
    flush_link(l);
    l->state = DONE;
    active--;
}

/* Publishes every message that is due (as many as the in-flight window allows), then sets the
 * timer for the next one, the drain's end or the end message. */
void publish_next(struct link *l)
{
    if (l->state != RUNNING)
        return;
    int64_t period = period_ns(), now = now_ns();
    uint8_t packet[1 << 16];
    while (l->seq < l->planned && l->publish_start + l->seq * period <= now) {
        if (cfg.qos && l->unacked >= MAX_INFLIGHT)
            return; /* a PUBACK calls again */
        int64_t t_created = now_ns(), cpu0 = thread_cpu_ns();
        iotsb_filler(l->seed, payload + 16, (size_t)cfg.payload_bytes - 16);
        message_stamp(payload, l->seq, t_created);
        int64_t t_sealed = now_ns(), seal_cpu = thread_cpu_ns() - cpu0;
        uint16_t id = cfg.qos ? next_id(l) : 0;
        size_t n = topic_publish(l, packet, sizeof packet, "data", payload,
                                 (size_t)cfg.payload_bytes, cfg.qos, id, false);
        if (n == 0)
            fail(l, "message too large for the fleet agent's packet buffer");
        if (cfg.qos)
            for (size_t i = 0; i <= MAX_INFLIGHT; i++)
                if (l->awaiting[i] == 0) {
                    l->awaiting[i] = id;
                    l->awaiting_seq[i] = l->seq;
                    l->awaiting_created[i] = t_created;
                    l->unacked++;
                    break;
                }
        send_packet(l, packet, n);
        lrec(l, "message",
             "\"seq\":%ld,\"payload_bytes\":%ld,\"wire_bytes\":%ld,\"t_created_ns\":%" PRId64
             ",\"t_sealed_ns\":%" PRId64 ",\"t_published_ns\":%" PRId64 ",\"seal_cpu_ns\":%" PRId64,
             l->seq, cfg.payload_bytes, cfg.payload_bytes, t_created, t_sealed, now_ns(),
             seal_cpu);
        l->seq++;
        l->sent++;
        now = now_ns();
    }
    if (l->seq < l->planned) {
        schedule(l, l->publish_start + l->seq * period);
        return;
    }
    if (l->drain_end == 0)
        l->drain_end = now + llround((cfg.drain_s > 5 ? cfg.drain_s : 5) * 1e9);
    if (l->unacked > 0 && now < l->drain_end)
        schedule(l, l->drain_end);
    else
        send_end(l);
}

static void on_puback(struct link *l, uint16_t id)
{
    if (l->state == ENDING && id == l->end_id) {
        link_done(l);
        return;
    }
    for (size_t i = 0; i <= MAX_INFLIGHT; i++)
        if (id != 0 && l->awaiting[i] == id) {
            l->awaiting[i] = 0;
            l->unacked--;
        }
    if (l->state == RUNNING)
        publish_next(l);
}

/* -- the receiver ------------------------------------------------------------------------ */

static bool mark_delivered(struct link *l, uint64_t seq)
{
    if (seq >= l->delivered_cap) {
        size_t cap = l->delivered_cap ? l->delivered_cap : 64;
        while (cap <= seq)
            cap *= 2;
        if (cap > (1u << 30))
            return true;
        uint8_t *grown = realloc(l->delivered, cap);
        if (grown == NULL)
            fail(l, "out of memory");
        memset(grown + l->delivered_cap, 0, cap - l->delivered_cap);
        l->delivered = grown;
        l->delivered_cap = cap;
    }
    bool seen = l->delivered[seq];
    l->delivered[seq] = 1;
    return seen;
}

static void receiver_check_done(struct link *l)
{
    int64_t now = now_ns();
    if (l->expected >= 0 && (l->counts[DELIVERED] >= l->expected || now >= l->recv_drain_end)) {
        link_done(l);
    } else if (l->expected < 0 && l->recv_drain_end > 0 && now >= l->recv_drain_end) {
        levent(l, "end_missing", ""); /* its emitter ended; what did not come is lost */
        link_done(l);
    }
}

/* A message on receiver l's topics: counted, recorded, or the end message. */
static void receive(struct link *l, const struct mqtt_publish_in *m, int64_t t_arrived)
{
    if (topic_is(l, m, "data")) {
        l->counts[RECEIVED]++;
        if (m->payload_len < 16) {
            l->counts[MALFORMED]++;
        } else {
            uint64_t seq, created;
            message_read(m->payload, &seq, &created);
            int64_t t_delivered = now_ns();
            if (mark_delivered(l, seq)) {
                l->counts[DUPLICATES]++;
            } else {
                l->counts[DELIVERED]++;
                lrec(l, "message",
                     "\"seq\":%" PRIu64 ",\"wire_bytes\":%zu,\"t_created_ns\":%" PRIu64
                     ",\"t_arrived_ns\":%" PRId64 ",\"t_delivered_ns\":%" PRId64
                     ",\"open_cpu_ns\":0,\"dup_flag\":%s",
                     seq, m->payload_len, created, t_arrived, t_delivered,
                     m->dup ? "true" : "false");
            }
        }
    } else if (topic_is(l, m, "ctl/end")) {
        char body[64] = {0};
        memcpy(body, m->payload, m->payload_len < 63 ? m->payload_len : 63);
        const char *at = strstr(body, "\"sent\"");
        if (at == NULL || sscanf(at, "\"sent\" : %ld", &l->expected) != 1) {
            levent(l, "bad_end_message", "");
            l->expected = 0;
        }
        char detail[48];
        snprintf(detail, sizeof detail, "\"expected\":%ld", l->expected);
        levent(l, "end_received", detail);
        l->recv_drain_end = now_ns() + llround(cfg.drain_s * 1e9);
        schedule(l, l->recv_drain_end);
    }
}

/* A PUBLISH on link l: its receiver's (l itself, or by topic for a backend subscriber; none
 * once that receiver is done), acknowledged on l. */
static void on_publish(struct link *l, const struct mqtt_publish_in *m, int64_t t_arrived)
{
    struct link *receiver = l->role == RECEIVER ? l : l->role == BACKEND ? receiver_of(m) : NULL;
    if (l->role == BACKEND && receiver == NULL)
        levent(l, "unknown_topic", "");
    if (receiver != NULL && receiver->state != RUNNING)
        receiver = NULL; /* a late copy for a receiver that has ended */
    if (receiver != NULL)
        receive(receiver, m, t_arrived);
    if (m->qos == 1) {
        uint8_t ack[4];
        send_packet(l, ack, mqtt_puback(ack, sizeof ack, m->packet_id));
    }
    if (receiver != NULL)
        receiver_check_done(receiver);
}

static void on_packet(struct link *l, const struct mqtt_packet *p, int64_t t_arrived)
{
    const char *why = NULL;
    if (l->state == MQTT_CONNECTING) {
        on_connack(l, p);
        return;
    }
    if (l->state == SUBSCRIBING) {
        uint16_t acked;
        int granted[2 * BACKEND_BATCH];
        size_t n_granted;
        if (p->type != MQTT_SUBACK ||
            mqtt_parse_suback(p, &acked, granted, 2 * BACKEND_BATCH, &n_granted, &why) != MQTT_OK)
            fail(l, "malformed packet from the broker: %s", why ? why : "expected SUBACK");
        bool refused = l->role == RECEIVER && n_granted != 2;
        for (size_t i = 0; i < n_granted; i++)
            refused = refused || granted[i] == 0x80;
        if (refused)
            fail(l, "subscribe failed: the broker refused a topic");
        if (l->role == BACKEND) {
            if (--l->subacks_pending > 0)
                return;
            receivers_ready += (n_devices - l->backend_first + l->backends - 1) / l->backends;
        } else {
            receivers_ready++;
        }
        l->state = RUNNING;
        unschedule(l);
        schedule(l, now_ns() + (int64_t)KEEP_ALIVE_S * 500000000);
        receivers_setting_up--;
        return;
    }
    struct mqtt_publish_in m;
    uint16_t id;
    switch (p->type) {
    case MQTT_PUBACK:
        if (mqtt_parse_puback(p, &id, &why) != MQTT_OK)
            fail(l, "malformed packet from the broker: %s", why);
        on_puback(l, id);
        break;
    case MQTT_PUBLISH:
        if (mqtt_parse_publish(p, &m, &why) != MQTT_OK)
            fail(l, "malformed packet from the broker: %s", why);
        on_publish(l, &m, t_arrived);
        break;
    case MQTT_PINGRESP:
        if (mqtt_parse_pingresp(p, &why) != MQTT_OK)
            fail(l, "malformed packet from the broker: %s", why);
        break;
    default:
        fail(l, "malformed packet from the broker: unexpected packet type %d", p->type);
    }
}

static void readable(struct link *l)
{
    for (;;) {
        if (l->in_cap - l->in_len < 4096) {
            size_t cap = l->in_cap ? 2 * l->in_cap : 8192;
            if (cap > 2 * MAX_PACKET)
                fail(l, "malformed packet from the broker: larger than %u bytes", MAX_PACKET);
            uint8_t *grown = realloc(l->in, cap);
            if (grown == NULL)
                fail(l, "out of memory");
            l->in = grown;
            l->in_cap = cap;
        }
        ssize_t n = l->tls ? fleet_tls_recv(l->tls, l->in + l->in_len, l->in_cap - l->in_len)
                           : recv(l->fd, l->in + l->in_len, l->in_cap - l->in_len, 0);
        if (n == FLEET_WANT_READ || n == FLEET_WANT_WRITE || (n < 0 && errno == EAGAIN))
            break;
        if (n <= 0)
            fail(l, "lost the broker connection (%s)", n == 0 ? "closed by the peer" : "read error");
        l->in_len += (size_t)n;
        int64_t t_arrived = now_ns();
        unsigned generation = l->generation;
        for (;;) {
            struct mqtt_packet p;
            const char *why = NULL;
            int status = mqtt_frame(l->in, l->in_len, &p, &why);
            if (status == MQTT_MALFORMED)
                fail(l, "malformed packet from the broker: %s", why);
            if (status != MQTT_OK)
                break;
            on_packet(l, &p, t_arrived);
            if (l->generation != generation) /* done, or a priming connection closed */
                return;
            memmove(l->in, l->in + p.size, l->in_len - p.size);
            l->in_len -= p.size;
        }
    }
}

void on_event(struct link *l, uint32_t events)
{
    int64_t cpu0 = thread_cpu_ns();
    int64_t *cpu = l->state == TCP_CONNECTING ? &l->cpu_tcp
                   : l->state == MQTT_CONNECTING ? &l->cpu_mqtt
                                                 : NULL;
    switch (l->state) {
    case TCP_CONNECTING:
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            tcp_connected(l);
        break;
    case TLS_HANDSHAKE:
        handshake_step(l);
        break;
    default:
        if (events & EPOLLOUT)
            flush_out(l);
        if (l->fd >= 0 && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
            readable(l);
    }
    int64_t spent = thread_cpu_ns() - cpu0;
    if (cpu != NULL)
        *cpu += spent;
    l->cpu_ns += spent;
}

/* A link's timer: its connect, its next message, the drain's or the end's deadline, a ping. */
void on_timer(struct link *l)
{
    int64_t now = now_ns(), cpu0 = thread_cpu_ns();
    switch (l->state) {
    case WAITING:
        request_connect(l);
        break;
    case TCP_CONNECTING:
    case TLS_HANDSHAKE:
    case MQTT_CONNECTING:
    case SUBSCRIBING:
        fail(l, "connection set-up took longer than %g s (connect_timeout_s)",
             cfg.connect_timeout_s);
    case ENDING:
        link_done(l); /* the end message's PUBACK did not come: the receiver drains */
        break;
    case RUNNING:
        if (l->fd >= 0 && now - l->last_sent_ns > (int64_t)KEEP_ALIVE_S * 500000000) {
            uint8_t ping[2];
            send_packet(l, ping, mqtt_pingreq(ping, sizeof ping));
        }
        if (l->role == EMITTER) {
            publish_next(l);
        } else if (l->role == BACKEND) {
            schedule(l, now + (int64_t)KEEP_ALIVE_S * 500000000);
        } else {
            receiver_check_done(l);
            if (l->state == RUNNING)
                schedule(l, l->recv_drain_end > 0 ? l->recv_drain_end
                                                  : now + (int64_t)KEEP_ALIVE_S * 500000000);
        }
        break;
    default:
        unschedule(l);
    }
    l->cpu_ns += thread_cpu_ns() - cpu0;
}
