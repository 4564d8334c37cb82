/* iotsb-agent: the emitter and receiver of agents/emitter.py and agents/receiver.py in C, on a
 * device TLS stack (mbedTLS or wolfSSL, chosen when it is built; none for the plain build).
 *
 *   iotsb-agent-<stack> --config FILE    (the runner's AgentConfig, JSON)
 *
 * The same contract with the runner as the Python agents (docs/design.md, measurement
 * contract): JSON-lines records of the same types on the same CLOCK_MONOTONIC, 10 Hz samples,
 * handshake phases tcp_connect / tls_handshake / mqtt_connect, "READY" on stdout when the
 * receiver has subscribed, exit 0 on success and 1 with an error record on failure. The
 * payload is the plaintext of docs/wire-format.md — seq | t_created | filler — sealed by the
 * configuration's payload scheme when it has one (scheme.c, exchange.c).
 * What the Python agents log for the energy model (operations) and the negotiated TLS
 * parameters are derived from these records by the runner (agents/native/__init__.py), with
 * the same code as for OpenSSL. */
#define _GNU_SOURCE
#include "agent.h"
#include "records.h"
#include "stack.h"
#include "sampler.h"
#include "scheme.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (strcmp(cfg.role, "emitter") != 0 && strcmp(cfg.role, "receiver") != 0 &&
        strcmp(cfg.role, "connect") != 0)
        die("role must be emitter, receiver or connect, got %s", cfg.role);
    const char *transport = text(root, "transport", true);
    cfg.tcp = strcmp(transport, "tcp") == 0;
    if (!cfg.tcp && strcmp(transport, "mqtt") != 0)
        die("transport must be mqtt or tcp, got %s", transport);
    if (cfg.tcp && strcmp(cfg.role, "emitter") != 0)
        die("over the tcp transport the native agent is the emitter (the receiver is a host)");
    const char *method = text(root, "method", false);
    cfg.echo = method != NULL && strcmp(method, "echo") == 0;
    cfg.configuration = text(root, "configuration", true);
    cfg.scheme = scheme_select(cfg.configuration); /* dies on a scheme this build lacks */
    const char *psk_file = text(root, "psk_file", false);
    if (psk_file != NULL) {
        FILE *key = fopen(psk_file, "rb");
        cfg.psk_len = key ? fread(cfg.psk, 1, sizeof cfg.psk, key) : 0;
        if (key != NULL)
            fclose(key);
        if (cfg.psk_len < 16)
            die("cannot read a pre-shared key of at least 16 bytes from %s", psk_file);
    }
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
    cfg.keylog = text(root, "keylog", false);
    const char *marker = text(root, "trace_marker", false);
    if (marker != NULL && (trace_marker_fd = open(marker, O_WRONLY | O_CLOEXEC)) < 0)
        die("cannot open the trace marker %s: %s", marker, strerror(errno));
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
    cfg.resumption = flag(profile, "resumption");
    o->ca_file = text(tls, "ca_file", true);
    if (flag(profile, "mutual")) {
        o->client_cert = text(tls, "client_cert", true);
        o->client_key = text(tls, "client_key", true);
    }
    o->server_name = SERVER_NAME;
    o->key_log = cfg.keylog != NULL;
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
    on_failure = finish;
    stack_init(); /* before anything allocates: wolfSSL counts its heap from here */
    read_config(argv[2]);
    char configuration[300];
    event("agent_start", "\"role\":\"%s\",\"configuration\":%s,\"stack\":\"%s\","
          "\"stack_version\":\"%s\",\"scheme\":\"%s\"", cfg.role,
          json_quote(configuration, sizeof configuration, cfg.configuration), stack_name(),
          stack_version(), cfg.scheme ? scheme_name() : "none");
    sampler_start();
    if (strcmp(cfg.role, "emitter") == 0)
        cfg.tcp ? emit_frames() : emit();
    else if (strcmp(cfg.role, "receiver") == 0)
        receive_messages();
    else
        connect_repeatedly();
    finish(0);
    return 0;
}
