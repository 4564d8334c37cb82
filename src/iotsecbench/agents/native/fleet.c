/* iotsb-fleet-<stack>: many devices in one process (docs/scale.md, "The fleet agent").
 *
 *   iotsb-fleet-<stack> --config FILE
 *
 * FILE names the process's share of a fleet: for each device the two AgentConfig files the
 * runner wrote (emitter and receiver: credentials, client id, topics, seed, output file), the
 * connect ramp and the process's own record file. Every device keeps its own TCP connection,
 * TLS session and MQTT session per role, driven by one epoll loop; each writes the records of
 * the per-device agents (agent.c) into its own files: handshake phases, messages, counters,
 * events, the TLS transcript, and a sample per second (the CPU this process spent on the
 * device, its connection's TCP counters).
 *
 * Start-up, with the runner: every receiver connects and subscribes; then "READY" on stdout;
 * the runner answers "GO <t0 ns>" on stdin (CLOCK_MONOTONIC) once every fleet process is
 * ready, and device i's emitter connects at t0 + i / ramp (at t0 without a ramp), then
 * publishes for duration_s from its CONNACK as agent.c's emit does. With "storm_at_s" every
 * emitter's connection is cut (RST) that long after t0 and reconnects at once, offering its
 * TLS session when the profile resumes: a reconnect storm (events "link_cut", "reconnected").
 *
 * A device that fails ends the process with exit 1, an error record in its file and in the
 * process's; stdin closing (the runner gone) or SIGTERM end it too: no process is left. */
#define _GNU_SOURCE
#include "fleet.h"

const char *const ROLE_NAMES[3] = {"emitter", "receiver", "backend"};
const char *const COUNTER_NAMES[6] = {"messages_received", "messages_delivered",
                                             "duplicates", "auth_failures", "malformed",
                                             "replays_rejected"};
struct fleet_config cfg;
struct link *links;
size_t n_links, n_devices, n_backends;
struct link **heap;
size_t heap_len;
struct fleet_tls_context *tls_context;
struct addrinfo *address;
int epoll_fd, receivers_setting_up, receivers_waiting;
size_t active, receivers_ready;
int64_t t0_go = -1;
volatile sig_atomic_t terminated;
uint8_t *payload; /* one device's plaintext at a time: filled per message */
FILE *process_out;

/* -- the reconnect storm ------------------------------------------------------------------ */

static void storm(void)
{
    int64_t t = now_ns();
    size_t cut = 0;
    for (size_t i = 0; i < n_links; i++) {
        struct link *l = &links[i];
        if (l->role != EMITTER || l->state != RUNNING)
            continue;
        close_link(l, false);
        l->reconnecting = true;
        l->cuts++;
        l->t_cut = t;
        levent(l, "link_cut", "");
        cut++;
    }
    for (size_t i = 0; i < n_links; i++) /* all at once (or max_connecting at a time) */
        if (links[i].reconnecting && links[i].fd < 0)
            request_connect(&links[i]);
    process_record("event", "\"t_ns\":%" PRId64 ",\"kind\":\"storm\",\"detail\":{\"cut\":%zu}",
                   t, cut);
}

/* -- configuration ---------------------------------------------------------------------------- */

static cJSON *parse_file(const char *path)
{
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return NULL;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    rewind(file);
    char *buffer = size >= 0 ? malloc((size_t)size + 1) : NULL;
    size_t n = buffer ? fread(buffer, 1, (size_t)size, file) : 0;
    fclose(file);
    if (buffer == NULL)
        return NULL;
    buffer[n] = '\0';
    cJSON *root = cJSON_Parse(buffer); /* kept for the process's life: strings point into it */
    free(buffer);
    return root;
}

static const char *text(const cJSON *o, const char *name)
{
    cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static double number(const cJSON *o, const char *name, double otherwise)
{
    cJSON *item = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(item) ? item->valuedouble : otherwise;
}

static bool flag(const cJSON *o, const char *name)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, name));
}

static void __attribute__((noreturn)) usage_error(const char *what, const char *path)
{
    process_record("error", "\"t_ns\":%" PRId64 ",\"message\":\"%s %s\"", now_ns(), what, path);
    flush_all();
    fprintf(stderr, "fleet agent: %s %s\n", what, path);
    exit(1);
}

/* The settings every device shares, from the first emitter's AgentConfig. */
static void read_shared(const cJSON *c)
{
    cfg.host = text(c, "host");
    cfg.configuration = text(c, "configuration");
    cfg.port = (int)number(c, "port", 0);
    cfg.qos = (int)number(c, "qos", 1);
    cfg.payload_bytes = (long)number(c, "payload_bytes", 256);
    cfg.rate_hz = number(c, "rate_hz", 1);
    cfg.duration_s = number(c, "duration_s", 10);
    cfg.connect_timeout_s = number(c, "connect_timeout_s", 10);
    cfg.drain_s = number(c, "drain_s", 2);
    cfg.tcp_nodelay = flag(c, "tcp_nodelay");
    if (cfg.host == NULL || cfg.configuration == NULL || cfg.payload_bytes < 16 ||
        cfg.payload_bytes > 60000 || cfg.rate_hz <= 0 || cfg.duration_s <= 0)
        usage_error("host, configuration, payload_bytes 16..60000, rate_hz > 0, duration_s > 0 in",
                    "the first device's config");
    cJSON *tls = cJSON_GetObjectItemCaseSensitive(c, "tls");
    if (!cJSON_IsObject(tls))
        return;
    cfg.tls = true;
    cJSON *profile = cJSON_GetObjectItemCaseSensitive(tls, "profile");
    struct tls_options *o = &cfg.tls_options;
    o->version = text(profile, "version");
    cfg.resumption = flag(profile, "resumption");
    o->ca_file = text(tls, "ca_file");
    if (flag(profile, "mutual")) {
        o->client_cert = text(tls, "client_cert");
        o->client_key = text(tls, "client_key");
    }
    o->server_name = "localhost";
    cJSON *id;
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(tls, "suite_ids"))
    {
        if (o->n_suites < 64 && cJSON_IsNumber(id))
            cfg.suites[o->n_suites++] = (uint16_t)id->valueint;
    }
    o->suites = cfg.suites;
    cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(tls, "group_ids"))
    {
        if (o->n_groups < 4 && cJSON_IsNumber(id))
            cfg.groups[o->n_groups++] = (uint16_t)id->valueint;
    }
    o->groups = cfg.groups;
    if (o->version == NULL || o->ca_file == NULL)
        usage_error("TLS without version or ca_file in", "the first device's config");
}

static void read_link(struct link *l, int index, enum role role, const char *path)
{
    cJSON *c = parse_file(path);
    if (c == NULL)
        usage_error("cannot read the agent config", path);
    if (n_links == 0)
        read_shared(c);
    memset(l, 0, sizeof *l);
    l->role = role;
    l->index = index;
    l->fd = -1;
    l->heap_at = SIZE_MAX;
    l->expected = -1;
    l->username = text(c, "username");
    l->password = text(c, "password");
    l->client_id = text(c, "client_id");
    l->topic_prefix = text(c, "topic_prefix");
    l->output = text(c, "output");
    l->seed = (uint64_t)number(c, "seed", 0);
    l->priming = cfg.resumption;
    if (!l->username || !l->password || !l->client_id || !l->topic_prefix || !l->output)
        usage_error("username, password, client_id, topic_prefix and output needed in", path);
    unlink(l->output); /* a rerun's records start afresh */
}

static void read_config(const char *path)
{
    cJSON *root = parse_file(path);
    if (root == NULL) {
        fprintf(stderr, "fleet agent: cannot read %s as JSON\n", path);
        exit(1);
    }
    const char *output = text(root, "output");
    if (output == NULL || (process_out = fopen(output, "w")) == NULL) {
        fprintf(stderr, "fleet agent: cannot write its records (config output)\n");
        exit(1);
    }
    cJSON *ramp = cJSON_GetObjectItemCaseSensitive(root, "ramp_hz");
    cfg.ramp_hz = cJSON_IsNumber(ramp) ? ramp->valuedouble : 0;
    cfg.storm_at_s = number(root, "storm_at_s", 0);
    cfg.max_connecting = (long)number(root, "max_connecting", 0);
    cJSON *devices = cJSON_GetObjectItemCaseSensitive(root, "devices"), *device;
    cJSON *backends = cJSON_GetObjectItemCaseSensitive(root, "backends"), *backend;
    n_devices = (size_t)cJSON_GetArraySize(devices);
    n_backends = (size_t)cJSON_GetArraySize(backends);
    if (n_devices == 0 || n_backends > n_devices)
        usage_error("no devices, or more backend subscribers than devices, in", path);
    links = calloc(2 * n_devices + n_backends, sizeof *links);
    heap = calloc(2 * n_devices + n_backends, sizeof *heap);
    if (links == NULL || heap == NULL)
        usage_error("out of memory for the devices of", path);
    cJSON_ArrayForEach(device, devices)
    {
        int index = (int)number(device, "index", -1);
        const char *emitter = text(device, "emitter"), *receiver = text(device, "receiver");
        if (index < 0 || emitter == NULL || receiver == NULL)
            usage_error("a device needs index, emitter and receiver in", path);
        read_link(&links[n_links], index, EMITTER, emitter);
        n_links++;
        read_link(&links[n_links], index, RECEIVER, receiver);
        if (n_backends > 0)
            links[n_links].state = RUNNING; /* its messages come through a backend */
        n_links++;
    }
    cJSON_ArrayForEach(backend, backends)
    {
        struct link *l = &links[n_links];
        memset(l, 0, sizeof *l);
        l->role = BACKEND;
        l->index = (int)(n_links - 2 * n_devices);
        l->fd = -1;
        l->heap_at = SIZE_MAX;
        l->backend_first = (size_t)l->index;
        l->backends = n_backends;
        l->username = text(backend, "username");
        l->password = text(backend, "password");
        l->client_id = text(backend, "client_id");
        l->output = text(backend, "output");
        if (!l->username || !l->password || !l->client_id || !l->output)
            usage_error("username, password, client_id and output needed for a backend in", path);
        unlink(l->output);
        n_links++;
    }
    if (n_backends > 0)
        backends_index();
}

/* -- main ---------------------------------------------------------------------------------- */

static void on_signal(int signum) { terminated = signum; }

/* Once a second: the process's own sample, and each device's (the CPU this process spent on
 * it, its connection's TCP counters), every file flushed. */
static void sample(void)
{
    int64_t t = now_ns();
    long rss = rss_bytes();
    size_t open_links = 0;
    for (size_t i = 0; i < n_links; i++) {
        struct link *l = &links[i];
        if (l->state == DONE || (l->state == WAITING && l->fd < 0) ||
            (l->role == RECEIVER && n_backends > 0)) /* no connection: the backend's samples */
            continue;
        struct tcp_info info;
        socklen_t size = sizeof info;
        memset(&info, 0, sizeof info);
        if (l->fd >= 0) {
            getsockopt(l->fd, IPPROTO_TCP, TCP_INFO, &info, &size);
            open_links++;
        }
        lrec(l, "sample",
             "\"t_ns\":%" PRId64 ",\"cpu_ns\":%" PRId64 ",\"rss_bytes\":%ld,"
             "\"tcp_bytes_sent\":%" PRIu64 ",\"tcp_bytes_acked\":%" PRIu64
             ",\"tcp_bytes_received\":%" PRIu64 ",\"tcp_segs_out\":%u,\"tcp_segs_in\":%u"
             ",\"tcp_retrans\":%u",
             t, l->cpu_ns, rss, (uint64_t)info.tcpi_bytes_sent, (uint64_t)info.tcpi_bytes_acked,
             (uint64_t)info.tcpi_bytes_received, info.tcpi_segs_out, info.tcpi_segs_in,
             info.tcpi_total_retrans);
        flush_link(l);
    }
    process_record("sample",
                   "\"t_ns\":%" PRId64 ",\"cpu_ns\":%" PRId64 ",\"rss_bytes\":%ld,"
                   "\"connections\":%zu,\"active\":%zu",
                   t, process_cpu_ns(), rss, open_links, active);
    fflush(process_out);
}

static void go(void)
{
    char line[64];
    ssize_t n = read(STDIN_FILENO, line, sizeof line - 1);
    if (n <= 0)
        fail(NULL, "the runner closed stdin before GO (it is gone): stopping");
    line[n] = '\0';
    long long t0;
    if (sscanf(line, "GO %lld", &t0) != 1)
        fail(NULL, "expected GO <t0 ns> on stdin, got %.20s", line);
    t0_go = t0;
    for (size_t i = 0; i < n_links; i++) {
        struct link *l = &links[i];
        if (l->role != EMITTER)
            continue;
        levent(l, "agent_start_go", "");
        schedule(l, t0 + (cfg.ramp_hz > 0 ? llround(l->index / cfg.ramp_hz * 1e9) : 0));
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 || strcmp(argv[1], "--config") != 0) {
        fprintf(stderr, "usage: %s --config FILE\n", argv[0]);
        return 2;
    }
    struct sigaction action = {.sa_handler = on_signal};
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    read_config(argv[2]);
    payload = calloc(1, (size_t)cfg.payload_bytes);
    char port[16];
    snprintf(port, sizeof port, "%d", cfg.port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    int code = getaddrinfo(cfg.host, port, &hints, &address);
    if (code != 0)
        fail(NULL, "cannot resolve %s: %s", cfg.host, gai_strerror(code));
    if (cfg.tls) {
        char why[400];
        if ((tls_context = fleet_tls_context(&cfg.tls_options, why, sizeof why)) == NULL)
            fail(NULL, "TLS: %s", why);
    }
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event in = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, STDIN_FILENO, &in);
    char start[400], configuration[300];
    snprintf(start, sizeof start,
             "\"role\":\"%%s\",\"configuration\":%s,\"stack\":\"%s\",\"stack_version\":\"%s\","
             "\"scheme\":\"none\",\"agent\":\"fleet\",\"fleet_process_devices\":%zu",
             json_quote(configuration, sizeof configuration, cfg.configuration),
             fleet_stack_name(), fleet_stack_version(), n_devices);
    for (size_t i = 0; i < n_links; i++) {
        char detail[500];
        snprintf(detail, sizeof detail, start, ROLE_NAMES[links[i].role]);
        levent(&links[i], "agent_start", detail);
        if (links[i].role == RECEIVER)
            receivers_waiting++;
    }
    process_record("event", "\"t_ns\":%" PRId64 ",\"kind\":\"fleet_start\",\"detail\":"
                   "{\"devices\":%zu,\"stack\":\"%s\"}", now_ns(), n_devices, fleet_stack_name());
    active = 2 * n_devices; /* the backend subscribers close after the last receiver */
    /* links alternate emitter, receiver; the backend subscribers, if any, follow */
    size_t next_receiver = n_backends > 0 ? 2 * n_devices : 1, step = n_backends > 0 ? 1 : 2;
    bool ready_said = false, stormed = false;
    int64_t next_sample = now_ns();
    struct epoll_event events[512];
    while (active > 0) {
        if (terminated)
            fail(NULL, "terminated by signal %d", (int)terminated);
        while (receivers_setting_up < RECEIVER_SETUPS && next_receiver < n_links) {
            receivers_setting_up++;
            start_connect(&links[next_receiver]);
            next_receiver += step;
        }
        if (!ready_said && receivers_ready == n_devices) {
            ready_said = true;
            flush_all();
            printf("READY\n");
            fflush(stdout);
        }
        int64_t now = now_ns(), wake = next_sample;
        if (heap_len > 0 && heap[0]->due_ns < wake)
            wake = heap[0]->due_ns;
        if (!stormed && t0_go >= 0 && cfg.storm_at_s > 0) {
            int64_t at = t0_go + llround(cfg.storm_at_s * 1e9);
            if (now >= at) {
                stormed = true;
                storm();
            } else if (at < wake) {
                wake = at;
            }
        }
        int timeout_ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
        int n = epoll_wait(epoll_fd, events, 512, timeout_ms);
        for (int i = 0; i < n; i++) {
            if (events[i].data.ptr == NULL) {
                if (t0_go < 0 && ready_said)
                    go();
                else if (t0_go >= 0 || !ready_said) { /* stdin closed or spoke out of turn */
                    char c;
                    if (read(STDIN_FILENO, &c, 1) <= 0)
                        fail(NULL, "the runner closed stdin (it is gone): stopping");
                }
                continue;
            }
            struct link *l = events[i].data.ptr;
            if (l->fd >= 0)
                on_event(l, events[i].events);
        }
        now = now_ns();
        while (heap_len > 0 && heap[0]->due_ns <= now) {
            struct link *l = heap[0];
            unschedule(l);
            on_timer(l);
        }
        if (now >= next_sample) {
            sample();
            next_sample = now + 1000000000;
        }
    }
    for (size_t i = 2 * n_devices; i < n_links; i++) {
        close_link(&links[i], true);
        unschedule(&links[i]);
        levent(&links[i], "agent_end", "");
        links[i].state = DONE;
    }
    sample();
    process_record("counters", "\"name\":\"peak_rss_bytes\",\"value\":%ld", rss_bytes());
    process_record("event", "\"t_ns\":%" PRId64 ",\"kind\":\"fleet_end\",\"detail\":{}", now_ns());
    flush_all();
    fclose(process_out);
    return 0;
}
